"""`tfr-convert records`: existing TFRecord / ArrayRecord files, or datasets, resharded,
merged, re-split, shuffled or converted; records copied byte for byte."""

from __future__ import annotations

import dataclasses

import click

from .. import options as opt
from ..running import run_conversion, source_context

CONVERTERS = ("tfr_convert.converters.records:RecordsConverter",)


@click.command()
@click.argument("src", nargs=-1, required=True)
@opt.split_options("Records name the feature to stratify by: use --stratify-feature NAME.")
@click.option(
    "--split-feature",
    metavar="NAME",
    help="Each record's split is the value of this feature (e.g. a bytes feature 'split' of train / test).",
)
@click.option(
    "--stratify-feature",
    metavar="NAME",
    help="With --split: every split keeps the proportions of this feature's values (e.g. a label).",
)
@click.option(
    "--group-feature",
    metavar="NAME",
    help="With --split: records sharing this feature's value go to one split (e.g. a patient or video id).",
)
@opt.on_error_option(
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
@opt.max_record_option("copied; a larger one is an error (with --on-error skip, a loss)")
@opt.common_options
def command(
    src,
    split,
    stratify,
    split_feature,
    stratify_feature,
    group_feature,
    on_error,
    quarantine,
    max_record_size,
    **common,
):
    """TFRecord (plain, gzip or zlib) or ArrayRecord files, globs, or dataset directories
    (tfr-convert's, or TFDS-prepared NAME/VERSION folders), local or remote: their
    records copied byte for byte into new shards.

    Splits are kept (a dataset's own, or -train. / -validation. / -test. in file names,
    else one train split) unless --split re-splits them (by record, or keeping a
    feature's proportions or groups) or --split-feature reads them from the records;
    --shuffle (the default) puts
    each split in a seeded random order; --format and --compression convert.
    Features and class names carry over from a dataset's metadata; plain files get a
    schema inferred from their first records.
    """
    from ...converters.records import RecordsOptions

    if stratify:
        raise click.UsageError("records name the feature to keep in proportion: use --stratify-feature NAME")
    options = RecordsOptions(
        split=split,
        split_feature=split_feature,
        stratify_feature=stratify_feature,
        group_feature=group_feature,
        quarantine=quarantine,
        **({"max_record_size": max_record_size} if max_record_size else {}),
    )
    opt.usage_error_if(options.problem(on_error))
    from ...storage import fs

    if quarantine is not None and fs.within(quarantine, common["out"]):
        raise click.UsageError(
            f"--quarantine {quarantine} lies inside --out {common['out']}: keep the damaged bytes outside the dataset"
        )
    if common["dry_run"]:  # it writes nothing, the quarantine included
        options = dataclasses.replace(options, quarantine=None)

    def make_converter():
        from ...converters.records import RecordsConverter

        return RecordsConverter(list(src), options, source_context(common, on_error))

    run_conversion(make_converter, on_error=on_error, **common)
