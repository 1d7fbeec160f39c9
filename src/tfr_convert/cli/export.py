"""`tfr-export`: records of a dataset or of TFRecord / ArrayRecord files back out."""

from __future__ import annotations

import json
import sys

import click

from .. import __version__
from .options import STORAGE_OPTIONS
from .translate import Command
from .types import ByteSize, LocalOrRemotePath


@click.command(cls=Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, metavar="SRC...")
@click.option("--out", required=True, type=LocalOrRemotePath(file_okay=False, writable=True), help="Output directory.")
@click.option("--to", "target", type=click.Choice(["parquet"]), required=True, help="What to write.")
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
def export(paths, out, target, limit, row_group_size, overwrite, quiet, as_json) -> None:
    """Export records to another format: --to parquet writes OUT/SPLIT.parquet.

    SRC is a dataset directory (ours or TFDS-prepared), TFRecord / ArrayRecord files or a
    glob, local or remote. The schema is inferred from the records; a damaged record is
    exit 1 naming its file and offset, and nothing is left under a final name.
    """
    from .. import fs
    from ..errors import OutputError
    from ..export import parquet
    from ..export.source import ExportSource

    if fs.exists(out) and fs.isdir(out) and fs.listdir(out) and not overwrite:
        raise OutputError(f"{out}: holds files already: give --overwrite to write into it")
    source = ExportSource.open(list(paths))
    bar = None
    if not quiet and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(unit="rec", desc="exporting", file=sys.stderr)
    try:
        written = parquet.write(
            source,
            out,
            limit=limit,
            row_group_bytes=row_group_size or parquet.ROW_GROUP_BYTES,
            progress=bar.update if bar is not None else None,
        )
    finally:
        if bar is not None:
            bar.close()
    if as_json:
        click.echo(json.dumps({"to": target, "out": out, "splits": written}, indent=1))
    else:
        counts = ", ".join(f"{split} {entry['records']}" for split, entry in written.items())
        click.echo(f"{counts} records -> {out} ({target})")
