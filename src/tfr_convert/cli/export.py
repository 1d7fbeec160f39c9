"""`tfr-export`: records of a dataset or of TFRecord / ArrayRecord files back out."""

from __future__ import annotations

import json

import click

from ..export import TARGETS
from .options import max_record_option, on_error_option, tool_options
from .progress import progress_bar
from .translate import Command
from .types import ByteSize, LocalOrRemotePath


@click.command(cls=Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, metavar="SRC...")
@click.option("--out", required=True, type=LocalOrRemotePath(file_okay=False, writable=True), help="Output directory.")
@click.option(
    "--to",
    "target",
    type=click.Choice(TARGETS),
    required=True,
    help="What to write.",
)
@click.option(
    "--layout",
    type=click.Choice(["folders", "csv", "masks"]),
    help="--to images: folders: OUT/SPLIT/CLASS/NAME; csv: OUT/NAME and OUT/labels.csv (filename, split, "
    "label, other features); masks: OUT/SPLIT/images/NAME and OUT/SPLIT/masks/STEM.png [default: masks for "
    "records with a segmentation mask, folders for a class label and nothing else to keep, else csv].",
)
@click.option("--image-feature", metavar="NAME", help="The feature holding the picture [default: guessed].")
@click.option("--label-feature", metavar="NAME", help="The class label (of each box) [default: guessed].")
@click.option(
    "--box-features",
    metavar="NAME",
    help="--to coco|yolo|voc|csv: the boxes: a prefix of bbox/xmin, bbox/ymin... (the Object Detection API's: "
    "image/object) or one float feature of four values a box, ymin xmin ymax xmax (TFDS's BBoxFeature, e.g. "
    "objects/bbox) [default: guessed in that order].",
)
@click.option(
    "--voc-origin",
    type=click.IntRange(0, 1),
    default=1,
    show_default=True,
    help="--to voc: 1 writes pixels counted from 1 (the devkit's; convert back with --voc-origin 1), 0 from 0.",
)
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="At most N records per split.")
@click.option(
    "--row-group-size",
    type=ByteSize(),
    help="Parquet row groups of about this many bytes of records, e.g. 128MB [default: 64MiB].",
)
@click.option(
    "--shard-size",
    type=ByteSize(),
    help="--to webdataset: tar shards of about this many bytes, e.g. 256MB [default: 64MiB]; --to hf: Arrow "
    "files of at most about this many bytes [default: 500MiB, as datasets' save_to_disk].",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Processes [default: all cores; 1 for --to webdataset, whose work is less than moving each record to a "
    "process and back].",
)
@max_record_option("exported; a larger one is an error (with --on-error skip, a loss)")
@on_error_option(
    "skip: leave out damaged records (salvaging damaged TFRecord files) and records that cannot be written, "
    "and list them; fail: the first is an error."
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Check the first records of each split and print what would be written; write nothing.",
)
@click.option("--overwrite", is_flag=True, help="Write into an output directory that already holds files.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@tool_options("tfr-export", "the summary")
def export(
    paths,
    out,
    target,
    layout,
    image_feature,
    label_feature,
    box_features,
    voc_origin,
    limit,
    row_group_size,
    shard_size,
    workers,
    max_record_size,
    on_error,
    dry_run,
    overwrite,
    quiet,
    as_json,
) -> None:
    """Export records to another format: --to parquet (OUT/SPLIT.parquet); images (a file a
    picture or a clip's frames, in class folders or beside labels.csv); audio|video;
    coco|yolo|voc|csv (OUT/images and the boxes, for `tfr-convert detection`); webdataset
    (tar shards of samples, OUT/SPLIT-000000.tar...); hf (a folder `datasets.load_from_disk`
    opens as a DatasetDict).

    SRC is a dataset directory (ours or TFDS-prepared), TFRecord / ArrayRecord files or a
    glob, local or remote. The schema is inferred from the records; a damaged record is
    exit 1 naming its file and offset, and nothing is left under a final name.
    """
    from ..engine.workers import can_fork
    from ..errors import OutputError
    from ..export.engine import ExportOptions
    from ..export.source import ExportSource
    from ..skips import Skips
    from ..storage import fs

    _check_target_options(target, layout, image_feature, label_feature, box_features, shard_size)
    if fs.exists(out) and fs.isdir(out) and fs.listdir(out) and not overwrite:
        raise OutputError(f"{out}: holds files already: give --overwrite to write into it")
    source = ExportSource.open(
        list(paths), salvage=on_error == "skip", **({"max_record": max_record_size} if max_record_size else {})
    )
    update, close_bar = progress_bar(quiet or dry_run, "exporting", "rec", "reading")
    options = ExportOptions(
        workers=workers,  # None: as the target's work is worth it
        limit=limit,
        skips=Skips() if on_error == "skip" else None,
        progress=(lambda n: update(n, None)) if update is not None else None,
        fork=can_fork([out, *paths]),
        dry_run=dry_run,
    )
    plan = _picture_plan(source, target, layout, image_feature, label_feature)
    try:
        written = _write(source, out, target, plan, options, box_features, image_feature, label_feature,
                         voc_origin=voc_origin, row_group_size=row_group_size, shard_size=shard_size)  # fmt: skip
    finally:
        close_bar()
    _tell(target, out, written, plan, options.skips, dry_run, as_json)


def _check_target_options(target, layout, image_feature, label_feature, box_features, shard_size) -> None:
    """OptionError for an option the --to target does not take."""
    from ..errors import OptionError
    from ..export import BOX_FORMATS, MEDIA

    if target not in ("images", *MEDIA) and layout:
        raise OptionError("--layout is for --to images, audio and video")
    if target in ("parquet", "hf") and (image_feature or label_feature):
        raise OptionError("--image-feature and --label-feature are for --to images and the box formats")
    if target not in BOX_FORMATS and box_features:
        raise OptionError("--box-features is for --to coco|yolo|voc|csv")
    if target not in ("webdataset", "hf") and shard_size:
        raise OptionError("--shard-size is for --to webdataset and hf")


def _picture_plan(source, target, layout, image_feature, label_feature):
    """--to images|audio|video: which feature goes where (export/images.py's Plan); else None."""
    from ..export import MEDIA

    if target == "images":
        from ..export import images

        return images.plan(source, layout, image_feature, label_feature)
    if target in MEDIA:
        from ..export import media

        return media.media_plan(source, target, layout, image_feature, label_feature)
    return None


def _write(source, out, target, plan, options, box_features, image_feature, label_feature, *, voc_origin,
           row_group_size, shard_size) -> dict:  # fmt: skip
    """Each split's entry ({records, ...}) of what the target's exporter wrote (or would);
    only the target's own module is imported."""
    from ..export import BOX_FORMATS

    if target == "hf":
        from ..export import hf

        return hf.write(source, out, options, shard_size or hf.SHARD_BYTES)
    if target == "webdataset":
        from ..export import webdataset

        roles = webdataset.features_of(source, image_feature, label_feature)
        return webdataset.write(source, out, roles, options, shard_size or webdataset.SHARD_BYTES)
    if plan is not None:
        from ..export import images

        return images.write(source, out, plan, options)
    if target in BOX_FORMATS:
        from ..export import boxes

        keys = boxes.box_keys(source, box_features, image_feature, label_feature)
        return boxes.write(source, out, target, keys, options, voc_origin=voc_origin)
    from ..export import parquet

    return parquet.write(source, out, options, row_group_size or parquet.ROW_GROUP_BYTES)


def _tell(target, out, written: dict, plan, skips, dry_run: bool, as_json: bool) -> None:
    """The summary: one JSON document, or a line on stdout and the skips and notes on stderr."""
    from ..skips import Skips, skipped_fields

    summary: dict = {"to": target, "out": out, "splits": written}
    if dry_run:
        summary = {"mode": "dry_run", **summary}
    if plan is not None:
        summary.update(layout=plan.layout, image=plan.image, label=plan.label, filename=plan.filename)
        summary.update(columns=plan.columns, left_out=plan.left_out, notes=plan.notes)
    if skips is not None:
        summary.update(skipped_fields(skips))
    if as_json:
        click.echo(json.dumps(summary, indent=1))
        return
    skips = skips or Skips()
    for skipped in skips.listed:
        click.echo(f"skipped: {skipped['item']}: {skipped['reason']}", err=True)
    if skips.total > len(skips.listed):
        kinds = "; ".join(f"{n} x {kind}" for kind, n in skips.by_kind.most_common(5))
        click.echo(f"skipped: ... and {skips.total - len(skips.listed)} more ({kinds})", err=True)
    counts = ", ".join(f"{split} {entry['records']}" for split, entry in written.items())
    what = f"{target}{f', {plan.layout}' if plan else ''}"
    if dry_run:
        checked = sum(entry["checked"] for entry in written.values())
        click.echo(
            f"dry run: nothing written. {counts} records would go to {out} ({what}); the first {checked} checked"
        )
    else:
        skipped = f" ({skips.total} skipped)" if skips.total else ""
        click.echo(f"{counts} records -> {out} ({what}){skipped}")
    for note in plan.notes if plan is not None else []:
        click.echo(f"note: {note}", err=True)
    if plan is not None and plan.left_out:
        click.echo(f"note: features not written (lists, or not in this layout): {', '.join(plan.left_out)}", err=True)
