"""`tfr-convert records`: existing TFRecord / ArrayRecord files, or datasets, resharded,
merged, re-split, shuffled or converted; records copied byte for byte."""

from __future__ import annotations

import dataclasses

import click

from ..options import common_options, on_error_option, split_options, usage_error_if
from ..running import run_conversion

CONVERTERS = ("tfr_convert.converters.records:RecordsConverter",)


@click.command()
@click.argument("src", nargs=-1, required=True)
@split_options("Not available for records yet.")
@on_error_option(
    "skip: salvage damaged TFRecord files: read past every bad record (a payload that fails "
    "its CRC is dropped; after a broken length the records go on at the next sound one), keep "
    "every sound record and list each loss (file, byte range, records lost)."
)
@click.option(
    "--quarantine",
    metavar="DIR",
    help="With --on-error skip: write the raw bytes of every loss here, one file each "
    "(NNNNN-SOURCE.START-END.bad), for a closer look.",
)
@common_options
def command(src, split, stratify, on_error, quarantine, **common) -> None:
    """TFRecord (plain, gzip or zlib) or ArrayRecord files, globs, or dataset directories
    (tfr-convert's, or TFDS-prepared NAME/VERSION folders), local or remote: their
    records copied byte for byte into new shards.

    Splits are kept (a dataset's own, or -train. / -validation. / -test. in file names,
    else one train split) unless --split re-splits them; --shuffle (the default) puts
    each split in a seeded random order; --format and --compression convert.
    Features and class names carry over from a dataset's metadata; plain files get a
    schema inferred from their first records.
    """
    from ...converters.records import RecordsOptions

    if stratify:
        raise click.UsageError("--stratify is not available for records: no label is known to keep in proportion")
    options = RecordsOptions(split=split, on_error=on_error, quarantine=None if common["dry_run"] else quarantine)
    usage_error_if(options.problem())

    def make_converter():
        from ...converters.records import RecordsConverter

        return RecordsConverter(list(src), options, seed=common["seed"])

    run_conversion(make_converter, on_error=on_error, **common)
