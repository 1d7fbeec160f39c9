"""`tfr-convert images`: a folder of images, labelled by a CSV or by class sub-folders."""

from __future__ import annotations

import click

from .. import options as opt
from ..running import run_conversion, source_context
from ..types import Color, LocalOrRemotePath

CONVERTERS = ("tfr_convert.converters.images:ImagesConverter",)


@click.command()
@click.argument("image_dir", type=LocalOrRemotePath(exists=True, file_okay=False))
@opt.labels_csv_options("images")
@click.option(
    "--headerless-labels",
    is_flag=True,
    help="The CSV has no header and one value per image, in sorted file order (the face/age tutorial's age.csv).",
)
@opt.split_options("Keep label proportions in every split.")
@click.option("--split-column", help="CSV column naming each row's split.")
@click.option("--group-column", help="CSV column whose rows must share a split (a patient, a video, a source image).")
@opt.DEDUPE
@opt.image_format_option(
    ["keep", "png", "jpeg", "raw"],
    "keep: original bytes; raw: uint8 pixels [default: keep, or png with --resize/--grayscale].",
)
@click.option(
    "--keep-exact",
    is_flag=True,
    help="keep: store every image's bytes as they are, even those TensorFlow cannot decode upright "
    "(webp, tiff, EXIF-rotated), which are otherwise re-encoded; they are listed.",
)
@opt.QUALITY
@opt.CHROMA
@opt.resize_option("Resize every image to WxH.")
@opt.fit_option("with --background")
@click.option(
    "--color",
    type=click.Choice(["rgb", "grayscale"]),
    help="Make every image 3-channel RGB or 1-channel grayscale [default: as the source].",
)
@click.option("--grayscale", is_flag=True, help="Same as --color grayscale.")
@click.option("--gray-method", type=click.Choice(["luma", "mean"]), default="luma", show_default=True)
@click.option("--background", type=Color(), default="white", show_default=True, help="Colour behind transparency.")
@opt.MAX_PIXELS
@opt.CHECK
@opt.LAYOUT
@opt.on_error_option("skip: leave out bad images and rows, and list them.")
@opt.common_options
def command(
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
    chroma,
    resize,
    fit,
    color,
    grayscale,
    gray_method,
    background,
    max_pixels,
    check,
    layout,
    on_error,
    **common,
) -> None:
    """A folder of images, labelled by a CSV (--labels) or by class sub-folders."""
    from ...converters.images import ImagesConverter, ImagesOptions
    from ...pictures.imaging import DecodePolicy

    if grayscale and color == "rgb":
        raise click.UsageError("--grayscale is --color grayscale: give one of them")
    grayscale = grayscale or color == "grayscale"
    if fit != "stretch" and not resize:
        raise click.UsageError("--fit needs --resize WxH")
    policy = DecodePolicy(
        max_pixels,
        background,
        grayscale,
        gray_method,
        resize,
        rgb=color == "rgb",
        fit=fit,
        structural=check == "structure",
    )
    options = opt.options_of(
        ImagesOptions, image_format=image_format or ("png" if resize or color or grayscale else "keep"), policy=policy
    )
    opt.usage_error_if(options.problem())

    def make_converter():  # a remote IMAGE_DIR / CSV is read in place, through fsspec
        from ...engine.run_options import default_workers  # the engine runs the listing's parts
        from ...engine.workers import forked_filler

        parts = forked_filler(common["workers"] or default_workers())
        return ImagesConverter(image_dir, options, source_context(common, on_error, parts))

    run_conversion(make_converter, on_error=on_error, nested=layout == "tfds", **common)
