"""`tfr-export`: records of a dataset or of TFRecord / ArrayRecord files back out."""

from __future__ import annotations

import json
import sys

import click

from .. import __version__
from ..export import TARGETS
from .options import STORAGE_OPTIONS
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
    type=click.Choice(["folders", "csv"]),
    help="--to images: folders: OUT/SPLIT/CLASS/NAME; csv: OUT/NAME and OUT/labels.csv (filename, split, "
    "label, other features) [default: folders for a class label and nothing else to keep, else csv].",
)
@click.option(
    "--image-feature", metavar="NAME", help="--to images: the feature holding the picture [default: guessed]."
)
@click.option("--label-feature", metavar="NAME", help="--to images: the class label [default: guessed].")
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
@click.option("--overwrite", is_flag=True, help="Write into an output directory that already holds files.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document.")
@STORAGE_OPTIONS
@click.version_option(__version__, prog_name="tfr-export")
def export(
    paths,
    out,
    target,
    layout,
    image_feature,
    label_feature,
    voc_origin,
    limit,
    row_group_size,
    overwrite,
    quiet,
    as_json,
) -> None:
    """Export records to another format: --to parquet writes OUT/SPLIT.parquet; --to images
    writes each picture to a file, in class folders or beside one labels.csv; --to
    coco|yolo|voc|csv writes a detection dataset's pictures to OUT/images and its boxes
    in that format, for `tfr-convert detection OUT/images --annotations ...`.

    SRC is a dataset directory (ours or TFDS-prepared), TFRecord / ArrayRecord files or a
    glob, local or remote. The schema is inferred from the records; a damaged record is
    exit 1 naming its file and offset, and nothing is left under a final name.
    """
    from .. import fs
    from ..errors import OptionError, OutputError
    from ..export import boxes, images, parquet
    from ..export.source import ExportSource

    if target != "images" and (layout or image_feature or label_feature):
        raise OptionError("--layout, --image-feature and --label-feature are for --to images")

    if fs.exists(out) and fs.isdir(out) and fs.listdir(out) and not overwrite:
        raise OutputError(f"{out}: holds files already: give --overwrite to write into it")
    source = ExportSource.open(list(paths))
    bar = None
    if not quiet and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(unit="rec", desc="exporting", file=sys.stderr)
    progress = bar.update if bar is not None else None
    plan = images.plan(source, layout, image_feature, label_feature) if target == "images" else None
    try:
        if plan is not None:
            written = images.write(source, out, plan, limit=limit, progress=progress)
        elif target in boxes.FORMATS:
            written = boxes.write(source, out, target, limit=limit, progress=progress, voc_origin=voc_origin)
        else:
            written = parquet.write(
                source, out, limit=limit, row_group_bytes=row_group_size or parquet.ROW_GROUP_BYTES, progress=progress
            )
    finally:
        if bar is not None:
            bar.close()
    summary: dict = {"to": target, "out": out, "splits": written}
    if plan is not None:
        summary.update(layout=plan.layout, image=plan.image, label=plan.label, filename=plan.filename)
        summary.update(columns=plan.columns, left_out=plan.left_out)
    if as_json:
        click.echo(json.dumps(summary, indent=1))
    else:
        counts = ", ".join(f"{split} {entry['records']}" for split, entry in written.items())
        click.echo(f"{counts} records -> {out} ({target}{f', {plan.layout}' if plan else ''})")
        if plan is not None and plan.left_out:
            click.echo(
                f"note: features not written (lists, or not in this layout): {', '.join(plan.left_out)}", err=True
            )
