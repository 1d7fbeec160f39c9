"""`tfr-convert cifar`: CIFAR-10/100, the python pickles or the binary version."""

from __future__ import annotations

import click

from .. import options as opt
from ..running import run_conversion, source_context

CONVERTERS = ("tfr_convert.converters.published.cifar:CifarConverter",)

#: --variant, as the converter names them (cifar_files.VARIANTS, to which
#: tests/test_cli.py holds these): listed here, so that parsing the command line
#: imports neither the converter nor numpy
VARIANTS = ("cifar10", "cifar100")


@click.command()
@opt.published_dataset_options(list(VARIANTS), "[default: detected from the files]")
@click.option(
    "--binary",
    is_flag=True,
    help="With --download: fetch the binary version (what TFDS downloads) instead of the python pickles.",
)
def command(src, download, variant, binary, image_format, layout, mirror, cache_dir, **common) -> None:
    """CIFAR-10/100, python pickles or the binary version: SRC is the extracted folder or
    the downloaded .tar.gz.

    Pickles are loaded through an allowlist (plain data and numeric arrays only),
    never with pickle.load.
    """
    from ...converters.base import PublishedOptions
    from ...converters.published.cifar import CifarConverter

    options = PublishedOptions(variant, image_format, layout)
    opt.usage_error_if(options.problem())
    if binary and not download:
        raise click.UsageError("--binary chooses what --download fetches; SRC's format is detected: drop --binary")
    # the binary archives are listed as datasets of their own, cached beside the pickles
    suffix = "-binary" if binary else ""
    source = opt.source_of(src, download, variant and variant + suffix, "cifar10" + suffix, mirror, cache_dir)
    run_conversion(lambda: CifarConverter(source(), options, source_context(common)), nested=layout == "tfds", **common)
