"""`tfr-convert detection`: images with bounding boxes (CSV, Pascal VOC, COCO, YOLO)."""

from __future__ import annotations

import dataclasses

import click

from .. import options as opt
from ..running import run_conversion, source_context
from ..types import LocalOrRemotePath, SplitOrPath

CONVERTERS = ("tfr_convert.converters.annotations.detection:DetectionConverter",)


@click.command()
@click.argument("image_dir", type=LocalOrRemotePath(exists=True, file_okay=False))
@click.option(
    "--annotations",
    required=True,
    multiple=True,
    type=SplitOrPath(exists=True),
    metavar="[SPLIT=]PATH",
    help="The boxes: a CSV or a COCO .json (or a folder of them, one a split), or a folder of VOC .xml or YOLO "
    ".txt files; SPLIT=PATH, repeated, gives each split its own (train=..., val=...).",
)
@click.option(
    "--annotation-format",
    type=click.Choice(["auto", "csv", "voc", "coco", "yolo"]),
    default="auto",
    show_default=True,
    help="auto: from PATH (.csv, .json, a folder of .xml or of .txt).",
)
@opt.classes_option("one per line (label 1 first): a box of any other class is an error.")
@click.option(
    "--voc-origin",
    type=click.IntRange(0, 1),
    default=0,
    show_default=True,
    help="Where VOC files count pixels from: 0 takes coordinates as they are (the Object Detection "
    "API's create_pascal_tf_record.py, 0-based exports); 1 subtracts 1 (the devkit's, as TFDS's voc builder).",
)
@click.option(
    "--coco-ids",
    type=click.Choice(["keep", "contiguous"]),
    default="keep",
    show_default=True,
    help="keep: COCO category ids are the labels (as create_coco_tf_record.py, so mscoco_label_map.pbtxt "
    "matches); contiguous: labels 1..N in id order. --classes numbers classes 1..N in its order.",
)
@click.option(
    "--masks",
    is_flag=True,
    help="Instance masks to image/object/mask (a 0/1 PNG per object, as the Object Detection API's "
    "--include_masks): COCO polygons and RLE, or VOC's SegmentationObject PNGs beside the annotations folder.",
)
@opt.split_options("Keep the proportions of each image's main class in every split.")
@opt.image_format_option(
    ["keep", "jpeg", "png"], "keep: JPEG/PNG bytes as they are [default: keep, or jpeg with --resize/--grayscale]."
)
@opt.QUALITY
@opt.CHROMA
@opt.resize_option("Resize every image to WxH (stretched: normalized boxes stay right).")
@click.option("--grayscale", is_flag=True, help="Store 1-channel grayscale images.")
@opt.MAX_PIXELS
@opt.CHECK
@click.option("--skip-empty", is_flag=True, help="Leave out images without boxes (kept as negatives by default).")
@opt.DEDUPE
@opt.on_error_option("skip: leave out images with a bad annotation or file, and list them.")
@opt.common_options
def command(
    image_dir,
    annotations,
    annotation_format,
    classes_file,
    voc_origin,
    coco_ids,
    masks,
    split,
    stratify,
    image_format,
    quality,
    chroma,
    resize,
    grayscale,
    max_pixels,
    check,
    skip_empty,
    dedupe,
    on_error,
    **common,
) -> None:
    """IMAGE_DIR's images with bounding boxes (CSV, Pascal VOC, COCO or YOLO annotations),
    in the TensorFlow Object Detection API's layout, with label_map.pbtxt."""
    from ...converters.annotations.detection import DetectionConverter, DetectionOptions
    from ...pictures.imaging import DecodePolicy

    policy = DecodePolicy(max_pixels, grayscale=grayscale, resize=resize, structural=check == "structure")
    splits = [split for split, _ in annotations]
    if (len(annotations) > 1 and None in splits) or len(set(splits)) != len(splits):
        raise click.UsageError("--annotations: give one PATH, or SPLIT=PATH once for each split (train=..., val=...)")
    per_split = tuple(annotations) if splits[0] is not None else ()
    annotations = annotations[0][1]
    options = opt.options_of(
        DetectionOptions,
        annotations=annotations,
        image_format=image_format or ("jpeg" if resize or grayscale else "keep"),
        policy=policy,
        split_annotations=per_split,
    )
    opt.usage_error_if(options.problem())

    def make_converter():  # remote annotations are read from local copies; images in place
        from ...storage import fs

        voc_masks = fs.join(fs.dirname(annotations.rstrip("/")), "SegmentationObject") if masks else None
        staged = dataclasses.replace(
            options,
            annotations=fs.local_copy(annotations),
            split_annotations=tuple((split, fs.local_copy(path)) for split, path in per_split),
            classes_file=fs.local_copy(classes_file),
            voc_masks=voc_masks,
        )
        return DetectionConverter(image_dir, staged, source_context(common, on_error))

    run_conversion(make_converter, on_error=on_error, **common)
