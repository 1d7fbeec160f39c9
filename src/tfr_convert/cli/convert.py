"""`tfr-convert`: one command per converter; each parses its own options into the
converter and hands the shared ones to the run."""

from __future__ import annotations

import dataclasses

import click

from .. import __version__
from ..converters import VARIANTS
from .options import (
    DEDUPE,
    MAX_PIXELS,
    common_options,
    on_error_option,
    published_dataset_options,
    source_of,
    split_options,
)
from .running import run_conversion
from .translate import Group
from .types import Color, Delimiter, LocalOrRemotePath, Size2D


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tfr-convert")
def convert() -> None:
    """Convert MNIST, CIFAR, image folders and annotated images (boxes) to sharded TFRecord
    (or ArrayRecord) datasets."""


@convert.command()
@published_dataset_options(
    list(VARIANTS["mnist"]),
    "[default: EMNIST's one variant in SRC; else detected from checksums, else mnist]",
)
def mnist(src, download, variant, image_format, layout, mirror, cache_dir, **common) -> None:
    """MNIST-family idx files (MNIST, Fashion-MNIST, KMNIST) in the directory SRC, or
    EMNIST: NIST's gzip.zip, or a folder of the files extracted from it."""
    image_format = _layout_format(layout, image_format)
    if download and (variant or "").startswith("emnist/"):
        raise click.UsageError(
            "--download knows no published checksum for EMNIST: fetch gzip.zip from "
            "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip and give it as SRC"
        )
    source = source_of(src, download, variant, "mnist", mirror, cache_dir)

    def converter():
        from ..converters.emnist import EmnistConverter, looks_like_emnist
        from ..converters.mnist import MnistConverter

        path = source()
        if (variant or "").startswith("emnist/") or (variant is None and looks_like_emnist(path)):
            return EmnistConverter(path, variant, image_format, layout)
        return MnistConverter(path, variant, image_format, layout)

    run_conversion(converter, **common)


def _layout_format(layout: str, image_format: str | None) -> str:
    if layout == "tfds" and image_format == "raw":
        raise click.UsageError("--layout tfds stores PNG images, as TFDS's catalog does: drop --image-format raw")
    return image_format or ("png" if layout == "tfds" else "raw")


@convert.command()
@published_dataset_options(list(VARIANTS["cifar"]), "[default: detected from the files]")
@click.option(
    "--binary",
    is_flag=True,
    help="With --download: fetch the binary version (what TFDS downloads) instead of the python pickles.",
)
def cifar(src, download, variant, binary, image_format, layout, mirror, cache_dir, **common) -> None:
    """CIFAR-10/100, python pickles or the binary version: SRC is the extracted folder or
    the downloaded .tar.gz.

    Pickles are loaded through an allowlist (plain data and numeric arrays only),
    never with pickle.load.
    """
    from ..converters.cifar import CifarConverter

    image_format = _layout_format(layout, image_format)
    if binary and not download:
        raise click.UsageError("--binary chooses what --download fetches; SRC's format is detected: drop --binary")
    # the binary archives are listed as datasets of their own, cached beside the pickles
    suffix = "-binary" if binary else ""
    source = source_of(src, download, variant and variant + suffix, "cifar10" + suffix, mirror, cache_dir)
    run_conversion(lambda: CifarConverter(source(), variant, image_format, layout), **common)


@convert.command()
@click.argument("image_dir", type=LocalOrRemotePath(exists=True, file_okay=False))
@click.option(
    "--labels", "labels_csv", type=LocalOrRemotePath(exists=True, dir_okay=False), help="CSV of paths and columns."
)
@click.option("--delimiter", type=Delimiter(), help="The CSV's separator: , ; tab | [default: detected].")
@click.option("--path-column", help="CSV column with image paths [default: detected].")
@click.option("--label-column", help="CSV column holding the class: it becomes a ClassLabel with names.")
@click.option(
    "--headerless-labels",
    is_flag=True,
    help="The CSV has no header and one value per image, in sorted file order (the face/age tutorial's age.csv).",
)
@split_options("Keep label proportions in every split.")
@click.option("--split-column", help="CSV column naming each row's split.")
@click.option("--group-column", help="CSV column whose rows must share a split (a patient, a video, a source image).")
@DEDUPE
@click.option(
    "--image-format",
    type=click.Choice(["keep", "png", "jpeg", "raw"]),
    help="keep: original bytes; raw: uint8 pixels [default: keep, or png with --resize/--grayscale].",
)
@click.option(
    "--keep-exact",
    is_flag=True,
    help="keep: store every image's bytes as they are, even those TensorFlow cannot decode upright "
    "(webp, tiff, EXIF-rotated), which are otherwise re-encoded; they are listed.",
)
@click.option("--quality", type=click.IntRange(1, 100), default=95, show_default=True, help="JPEG quality.")
@click.option("--resize", type=Size2D(), help="Resize every image to WxH.")
@click.option(
    "--fit",
    type=click.Choice(["stretch", "crop", "pad"]),
    default="stretch",
    show_default=True,
    help="With --resize: stretch to WxH, crop to cover it, or pad to fit inside it (with --background).",
)
@click.option(
    "--color",
    type=click.Choice(["rgb", "grayscale"]),
    help="Make every image 3-channel RGB or 1-channel grayscale [default: as the source].",
)
@click.option("--grayscale", is_flag=True, help="Same as --color grayscale.")
@click.option("--gray-method", type=click.Choice(["luma", "mean"]), default="luma", show_default=True)
@click.option("--background", type=Color(), default="white", show_default=True, help="Colour behind transparency.")
@MAX_PIXELS
@on_error_option("skip: leave out bad images and rows, and list them.")
@common_options
def images(
    image_dir,
    labels_csv,
    delimiter,
    path_column,
    label_column,
    headerless_labels,
    split,
    stratify,
    split_column,
    group_column,
    dedupe,
    image_format,
    keep_exact,
    quality,
    resize,
    fit,
    color,
    grayscale,
    gray_method,
    background,
    max_pixels,
    on_error,
    **common,
) -> None:
    """A folder of images, labelled by a CSV (--labels) or by class sub-folders."""
    from ..converters.images import ImagesConverter, ImagesOptions
    from ..converters.imaging import DecodePolicy

    if grayscale and color == "rgb":
        raise click.UsageError("--grayscale is --color grayscale: give one of them")
    grayscale = grayscale or color == "grayscale"
    if fit != "stretch" and not resize:
        raise click.UsageError("--fit needs --resize WxH")
    policy = DecodePolicy(max_pixels, background, grayscale, gray_method, resize, rgb=color == "rgb", fit=fit)
    options = ImagesOptions(
        labels_csv=labels_csv,
        delimiter=delimiter,
        path_column=path_column,
        label_column=label_column,
        headerless_labels=headerless_labels,
        split=split,
        stratify=stratify,
        split_column=split_column,
        group_column=group_column,
        dedupe=dedupe,
        image_format=image_format or ("png" if resize or color or grayscale else "keep"),
        keep_exact=keep_exact,
        quality=quality,
        policy=policy,
    )
    usage_error_if(options.problem())

    def make_converter():  # a remote IMAGE_DIR / CSV is read in place, through fsspec
        from ..engine import default_workers  # the engine runs the listing's parts
        from ..workers import forked_parts

        return ImagesConverter(
            image_dir,
            options,
            out=common["out"],
            seed=common["seed"],
            on_error=on_error,
            in_parts=forked_parts(common["workers"] or default_workers()),
        )

    run_conversion(make_converter, on_error=on_error, **common)


@convert.command()
@click.argument("image_dir", type=LocalOrRemotePath(exists=True, file_okay=False))
@click.option(
    "--annotations",
    required=True,
    type=LocalOrRemotePath(exists=True),
    help="The boxes: a CSV, a COCO .json, or a folder of VOC .xml or YOLO .txt files.",
)
@click.option(
    "--annotation-format",
    type=click.Choice(["auto", "csv", "voc", "coco", "yolo"]),
    default="auto",
    show_default=True,
    help="auto: from PATH (.csv, .json, a folder of .xml or of .txt).",
)
@click.option(
    "--classes",
    "classes_file",
    type=LocalOrRemotePath(exists=True, dir_okay=False),
    help="Class names, one per line (label 1 first): a box of any other class is an error.",
)
@split_options("Keep the proportions of each image's main class in every split.")
@click.option(
    "--image-format",
    type=click.Choice(["keep", "jpeg", "png"]),
    help="keep: JPEG/PNG bytes as they are [default: keep, or jpeg with --resize/--grayscale].",
)
@click.option("--quality", type=click.IntRange(1, 100), default=95, show_default=True, help="JPEG quality.")
@click.option("--resize", type=Size2D(), help="Resize every image to WxH (stretched: normalized boxes stay right).")
@click.option("--grayscale", is_flag=True, help="Store 1-channel grayscale images.")
@MAX_PIXELS
@click.option("--skip-empty", is_flag=True, help="Leave out images without boxes (kept as negatives by default).")
@DEDUPE
@on_error_option("skip: leave out images with a bad annotation or file, and list them.")
@common_options
def detection(
    image_dir,
    annotations,
    annotation_format,
    classes_file,
    split,
    stratify,
    image_format,
    quality,
    resize,
    grayscale,
    max_pixels,
    skip_empty,
    dedupe,
    on_error,
    **common,
) -> None:
    """IMAGE_DIR's images with bounding boxes (CSV, Pascal VOC, COCO or YOLO annotations),
    in the TensorFlow Object Detection API's layout, with label_map.pbtxt."""
    from ..converters.detection import DetectionConverter, DetectionOptions
    from ..converters.imaging import DecodePolicy

    policy = DecodePolicy(max_pixels, grayscale=grayscale, resize=resize)
    options = DetectionOptions(
        annotations=annotations,
        annotation_format=annotation_format,
        classes_file=classes_file,
        split=split,
        stratify=stratify,
        image_format=image_format or ("jpeg" if resize or grayscale else "keep"),
        quality=quality,
        policy=policy,
        skip_empty=skip_empty,
        dedupe=dedupe,
    )
    usage_error_if(options.problem())

    def make_converter():  # remote annotations are read from local copies; images in place
        from .. import fs

        staged = dataclasses.replace(options, annotations=fs.stage(annotations), classes_file=fs.stage(classes_file))
        return DetectionConverter(image_dir, staged, out=common["out"], seed=common["seed"], on_error=on_error)

    run_conversion(make_converter, on_error=on_error, **common)


def usage_error_if(problem: str | None) -> None:
    """A converter's options found impossible together (its options class says why): exit 2."""
    if problem is not None:
        raise click.UsageError(problem)
