"""`tfr-convert records`: existing TFRecord / ArrayRecord files, or datasets, resharded,
merged, re-split, shuffled or converted; records copied byte for byte."""

from __future__ import annotations

import click

from ..options import common_options, split_options, usage_error_if
from ..running import run_conversion

CONVERTERS = ("tfr_convert.converters.records:RecordsConverter",)


@click.command()
@click.argument("src", nargs=-1, required=True)
@split_options("Not available for records yet.")
@common_options
def command(src, split, stratify, **common) -> None:
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
    options = RecordsOptions(split=split)
    usage_error_if(options.problem())

    def make_converter():
        from ...converters.records import RecordsConverter

        return RecordsConverter(list(src), options, seed=common["seed"])

    run_conversion(make_converter, **common)
