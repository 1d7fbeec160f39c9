"""`tfr-convert segmentation`: images with semantic segmentation masks."""

from __future__ import annotations

import dataclasses

import click

from .. import options as opt
from ..running import run_conversion, source_context
from ..types import LocalOrRemotePath, Split

CONVERTERS = ("tfr_convert.converters.annotations.segmentation:SegmentationConverter",)


@click.command()
@click.argument("image_dir", type=LocalOrRemotePath(exists=True, file_okay=False))
@click.option(
    "--masks",
    required=True,
    type=LocalOrRemotePath(exists=True, file_okay=False),
    help="The masks: a.png for IMAGE_DIR's a.jpg (same relative path and stem), palette, grayscale or RGB PNGs.",
)
@opt.classes_option("one per line (class 0 first): a mask value past them is an error.")
@click.option(
    "--palette",
    "palette_file",
    type=LocalOrRemotePath(exists=True, dir_okay=False),
    help="RGB-coded masks: 'R G B name' a line, class 0 first.",
)
@click.option(
    "--ignore-index",
    type=click.IntRange(0, 255),
    default=255,
    show_default=True,
    help="A mask value that is no class (VOC's object borders), allowed past --classes.",
)
@click.option(
    "--missing-masks",
    type=click.Choice(["error", "skip"]),
    default="error",
    show_default=True,
    help="An image without a mask: an error, or left out and listed.",
)
@opt.LAYOUT
@click.option("--split", "split", type=Split(), help="e.g. train=0.8,validation=0.1,test=0.1 [default: all train].")
@opt.resize_option("Resize images to WxH (JPEG) and masks with nearest neighbour.")
@opt.QUALITY
@opt.CHROMA
@opt.MAX_PIXELS
@opt.on_error_option("skip: leave out images whose mask or file is bad, and list them.")
@opt.common_options
def command(
    image_dir,
    masks,
    classes_file,
    palette_file,
    ignore_index,
    missing_masks,
    layout,
    split,
    resize,
    quality,
    chroma,
    max_pixels,
    on_error,
    **common,
) -> None:
    """IMAGE_DIR's images with their segmentation masks from MASK_DIR, as TFDS's
    oxford_iiit_pet stores them: image, segmentation_mask (a PNG of class indices), file_name."""
    from ...converters.annotations.segmentation import SegmentationConverter, SegmentationOptions
    from ...pictures.imaging import DecodePolicy

    options = opt.options_of(SegmentationOptions, missing=missing_masks, policy=DecodePolicy(max_pixels, resize=resize))
    opt.usage_error_if(options.problem())

    def make_converter():
        from ...storage import fs

        staged = dataclasses.replace(
            options, classes_file=fs.local_copy(classes_file), palette_file=fs.local_copy(palette_file)
        )
        return SegmentationConverter(image_dir, staged, source_context(common, on_error))

    run_conversion(make_converter, on_error=on_error, nested=layout == "tfds", **common)
