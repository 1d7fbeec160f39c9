"""`tfr-convert mnist`: the MNIST family's idx files, and EMNIST's."""

from __future__ import annotations

import os

import click

from .. import options as opt
from ..running import run_conversion, source_context

CONVERTERS = (
    "tfr_convert.converters.published.mnist:MnistConverter",
    "tfr_convert.converters.published.emnist:EmnistConverter",
)

#: --variant, as the converters name them (mnist's and emnist's VARIANTS, to which
#: tests/test_cli.py holds these): listed here, so that parsing the command line
#: imports neither the converters nor numpy
VARIANTS = (
    "mnist",
    "fashion_mnist",
    "kmnist",
    "emnist/byclass",
    "emnist/bymerge",
    "emnist/balanced",
    "emnist/letters",
    "emnist/digits",
    "emnist/mnist",
)


@click.command()
@opt.published_dataset_options(
    list(VARIANTS),
    "[default: EMNIST's one variant in SRC; else detected from checksums, else mnist]",
)
def command(src, download, variant, image_format, layout, mirror, cache_dir, **common) -> None:
    """MNIST-family idx files (MNIST, Fashion-MNIST, KMNIST) in the directory SRC, or
    EMNIST: NIST's gzip.zip, or a folder of the files extracted from it."""
    from ...converters.base import PublishedOptions

    options = PublishedOptions(variant, image_format, layout)
    opt.usage_error_if(options.problem())
    if download and (variant or "").startswith("emnist/"):
        raise click.UsageError(
            "--download knows no published checksum for EMNIST: fetch gzip.zip from "
            "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip and give it as SRC"
        )
    source = opt.source_of(src, download, variant, "mnist", mirror, cache_dir)

    def converter():
        from ...converters.published.idx import may_be_emnist, start_images

        path = source()
        emnist = (variant or "").startswith("emnist/")
        # inflating the images is the longest step: it starts before numpy is imported
        images = None if emnist or not os.path.isdir(path) else start_images(path)
        if emnist or (variant is None and may_be_emnist(path)):  # (else EMNIST's reader is not imported)
            from ...converters.published.emnist import EmnistConverter, looks_like_emnist

            if emnist or looks_like_emnist(path):
                if images:
                    images.arrays.finish_loading()
                return EmnistConverter(path, options, source_context(common))
        from ...converters.published.mnist import MnistConverter

        return MnistConverter(images or path, options, source_context(common))

    run_conversion(converter, nested=layout == "tfds", **common)
