"""`tfr-convert table`: rows of CSV / TSV, Parquet, JSON Lines, Arrow / Feather files or
Hugging Face `save_to_disk` folders, one Example each."""

from __future__ import annotations

import click

from .. import options as opt
from ..running import converted, dry_run_plan, run_conversion, source_context
from ..types import ColumnNames, Delimiter, LocalOrRemotePath, Rename

CONVERTERS = ("tfr_convert.converters.table.converter:TableConverter",)


@click.command()
@click.argument("src", nargs=-1, required=True)
@click.option("--delimiter", type=Delimiter(), help="A CSV's separator: , ; tab | [default: detected].")
@click.option("--columns", type=ColumnNames(), multiple=True, help="Only these columns become features (a,b,c).")
@click.option("--drop", type=ColumnNames(), multiple=True, help="These columns do not become features (a,b,c).")
@click.option("--rename", type=Rename(), multiple=True, help="Write column OLD as feature NEW (repeatable).")
@click.option(
    "--nulls",
    type=click.Choice(["error", "omit", "fill"]),
    default="error",
    show_default=True,
    help="A null (an empty CSV cell): error names it; omit leaves the feature out of that "
    "Example (its schema then reads it as a list of 0 or 1 values); fill writes 0, 0.0, an "
    "empty string or list.",
)
@click.option("--label-column", help="This column becomes a ClassLabel: texts get sorted names, integers keep theirs.")
@click.option(
    "--label-names",
    type=LocalOrRemotePath(exists=True, dir_okay=False),
    help="A file of class names, one per line (the first names class 0), for an integer --label-column.",
)
@opt.split_options("Keep --label-column's proportions in every split.")
@click.option("--split-column", help="The column naming each row's split (it is not written as a feature).")
@click.option("--group-column", help="With --split: rows sharing this column's value go to one split.")
@click.option("--key-column", help="Each row's unique key (seeds splits and shuffle) [default: its position].")
@click.option(
    "--image-column",
    "image_columns",
    multiple=True,
    help="A column of pictures: PNG/JPEG bytes, paths under --image-root, or Hugging Face Image structs "
    "(repeatable; a Hugging Face dataset's Image features are pictures unnamed).",
)
@click.option(
    "--image-root",
    type=LocalOrRemotePath(exists=True, file_okay=False),
    help="The folder the paths of a picture column are relative to (nothing outside it is read).",
)
@opt.image_format_option(
    ["keep", "png", "jpeg"], "keep: the pictures' own bytes (checked) [default: keep, or png with --resize]."
)
@opt.QUALITY
@opt.CHROMA
@opt.resize_option("Resize every picture to WxH.")
@opt.MAX_PIXELS
@opt.CHECK
@opt.on_error_option(
    "skip: leave out rows that cannot be written (a null, a bad label, a damaged picture) and list them."
)
@opt.common_options
def command(
    src,
    delimiter,
    columns,
    drop,
    rename,
    nulls,
    label_column,
    label_names,
    split,
    stratify,
    split_column,
    group_column,
    key_column,
    image_columns,
    image_root,
    image_format,
    quality,
    chroma,
    resize,
    max_pixels,
    check,
    on_error,
    **common,
):
    """Tables: CSV / TSV, Parquet files or folders, JSON Lines, Arrow IPC / Feather, and
    Hugging Face `save_to_disk` folders (a DatasetDict's splits are kept), local or
    remote; one Example per row, one feature per column, typed by the table's own types.

    Splits: a DatasetDict's, else a split word as a file's name (train.csv, data-test.parquet),
    else all train; --split-column reads them from a column, --split draws them by ratio.
    """
    from ...converters.table.converter import TableOptions
    from ...converters.table.files import FromPython

    options = opt.options_of(
        TableOptions,
        columns=tuple(n for group in columns for n in group),
        drop=tuple(n for group in drop for n in group),
        rename=tuple(rename),
        label_names=_names_in(label_names),
        image_columns=tuple(image_columns),
        images=_image_policy(image_format, quality, chroma, resize, max_pixels, check, image_root),
    )
    opt.usage_error_if(options.problem())
    given = click.get_current_context().find_object(FromPython)  # tfr_convert.write()'s tables

    def make_converter():
        from ...converters.table.converter import TableConverter
        from ...engine.run_options import default_workers  # the engine runs the shuffle's parts
        from ...engine.workers import forked_filler

        parts = forked_filler(common["workers"] or default_workers())
        return TableConverter(given.opened if given else list(src), options, source_context(common, on_error, parts))

    _run(make_converter, given, on_error, common)


def _run(make_converter, given, on_error: str, common: dict) -> None:
    """The run, reported on the command line; for tfr_convert.write() (`given`), nothing
    reported: its summary, or its --dry-run plan, kept for write() to return."""
    if given is None:
        run_conversion(make_converter, on_error=on_error, **common)
        return
    common.pop("as_json")
    run = dry_run_plan if common.pop("dry_run") else converted
    given.summary = run(make_converter, on_error=on_error, **common)


def _names_in(path: str | None) -> tuple[str, ...] | None:
    """--label-names: a file's non-empty lines."""
    if path is None:
        return None
    from ...storage import fs

    lines = (line.strip() for line in fs.read_bytes(path).decode("utf-8-sig").splitlines())
    return tuple(n for n in lines if n)


def _image_policy(image_format, quality, chroma, resize, max_pixels, check, image_root):
    """How the picture columns are stored: kept, or re-encoded (PNG by default when resized)."""
    from ...converters.table.pictures import ImagePolicy
    from ...pictures.imaging import DecodePolicy

    return ImagePolicy(
        image_format=image_format or ("png" if resize else "keep"),
        quality=quality,
        chroma=chroma,
        policy=DecodePolicy(max_pixels, resize=resize, structural=check == "structure"),
        root=image_root,
    )
