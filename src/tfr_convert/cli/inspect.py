"""`tfr-inspect`: count, summary, verify, stats, grid and index files of TFRecord and
ArrayRecord files, globs and dataset directories."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import click

from ..errors import RecordError
from .options import max_record_option, tool_options
from .translate import Command
from .types import LocalOrRemotePath


@click.command(cls=Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--count", is_flag=True, help="Only count records (framing and length CRCs; fast).")
@click.option("--head", type=click.IntRange(min=0), default=1, show_default=True, help="Examples to show.")
@click.option("--verify", is_flag=True, help="Check every record's CRCs (and a dataset against its metadata).")
@click.option("--stats", is_flag=True, help="Per-feature statistics; split leakage on a dataset directory.")
@click.option(
    "--grid",
    "grid_out",
    type=LocalOrRemotePath(dir_okay=False),
    metavar="OUT.png|.jpg",
    help="Draw the first images (PNG or JPEG, by OUT's extension).",
)
@click.option("--grid-count", type=click.IntRange(1, 1024), default=64, show_default=True, help="Images in --grid.")
@click.option(
    "--report",
    "report_out",
    type=LocalOrRemotePath(dir_okay=False, allow_dash=True),
    metavar="OUT.html",
    help="Write one self-contained HTML page: splits, schema, charts, pictures per class, "
    "duplicates across splits, problems ('-': to stdout).",
)
@click.option(
    "--report-per-class",
    type=click.IntRange(1, 100),
    default=8,
    show_default=True,
    help="Pictures per class in --report.",
)
@click.option(
    "--diff",
    "compare",
    is_flag=True,
    help="Compare two datasets, OLD NEW: records added, removed, changed (and in which features), "
    "moved between splits; exit 1 when they differ.",
)
@click.option(
    "--key",
    metavar="FEATURE",
    help="With --diff: the feature records are matched by. [default: filename, image/filename or id, "
    "the first both have; else by content]",
)
@click.option("--write-index", is_flag=True, help="Write FILE.index (DALI / tfrecord package format) for each file.")
@click.option("--all", "every", is_flag=True, help="Infer the schema from every record, not the first of each file.")
@max_record_option("the schema, --stats and --grid read whole; larger ones are reported")
@click.option(
    "--max-pixels",
    type=click.IntRange(min=1),
    help="Largest image --grid decodes; larger ones are reported. [default: 25000000]",
)
@tool_options("tfr-inspect", "the report")
def inspect(
    paths,
    count,
    head,
    verify,
    stats,
    grid_out,
    grid_count,
    report_out,
    report_per_class,
    compare,
    key,
    write_index,
    every,
    max_record_size,
    max_pixels,
    as_json,
) -> None:
    """Look inside TFRecord files: records, schema, first examples; --verify, --stats, --grid.

    PATH is a file, a dataset directory or a glob, local or remote (s3://, gs://, az://...:
    read in place, in ranges, through fsspec). Every mode checks CRCs as it reads;
    --verify reports every problem and exits 1 if there is any. `tfr-inspect OLD NEW
    --diff` compares two datasets and exits 1 when they differ, as diff does.
    """
    flags = {"--count": count, "--verify": verify, "--stats": stats, "--grid": grid_out, "--report": report_out}
    _one_mode(len(paths), key, {**flags, "--write-index": write_index, "--diff": compare})
    with _hint_for_large_records():
        # the limits' defaults live with the readers (containers.MAX_RECORD_BYTES, grid.MAX_PIXELS)
        limit = {"max_record": max_record_size} if max_record_size else {}
        pixels = {"max_pixels": max_pixels} if max_pixels else {}
        if report_out:
            report, text = _report_page(list(paths), report_out, report_per_class, limit, pixels)
            if report_out == "-":
                if as_json:  # the page is on stdout: the figures go to stderr
                    click.echo(json.dumps(report, indent=2), err=True)
                return
        elif grid_out:
            from ..inspect.grid import grid

            report = grid(list(paths), grid_out, grid_count, **limit, **pixels)
            text = f"{report['images']} images of {report['feature']!r} -> {report['out']}"
        else:
            report, text = _figures(list(paths), count, verify, stats, write_index, head, every, limit, compare, key)
    click.echo(json.dumps(report, indent=2, ensure_ascii=False) if as_json else text)
    if (verify and not report["ok"]) or (compare and not report["equal"]):
        raise SystemExit(1)


def _one_mode(paths: int, key: str | None, flags: dict[str, object]) -> None:
    """Usage errors (exit 2): two modes at once; --diff without two paths; --key without --diff."""
    modes = [m for m, on in flags.items() if on]
    if len(modes) > 1:
        raise click.UsageError(f"choose one of {', '.join(modes)}")
    if flags["--diff"] and paths != 2:
        raise click.UsageError(f"--diff compares two datasets: tfr-inspect OLD NEW --diff (given {paths} paths)")
    if key is not None and not flags["--diff"]:
        raise click.UsageError("--key names the feature --diff matches records by: give --diff too")


def _report_page(paths: list[str], out: str, per_class: int, limit: dict, pixels: dict) -> tuple[dict, str]:
    from ..inspect.report import report as write_report

    report = write_report(paths, out, per_class, **limit, **pixels)
    text = (
        f"{report['records']} records: {report['charts']} charts, {report['thumbnails']} pictures, "
        f"{report['problems']} problems -> {report['out']}"
    )
    return report, text


def _figures(
    paths: list[str],
    count: bool,
    verify: bool,
    stats: bool,
    write_index: bool,
    head: int,
    every: bool,
    limit: dict,
    compare: bool,
    key: str | None,
) -> tuple[dict, str]:
    """The report of the mode asked (--count, --verify, --stats, --write-index, --diff, else
    the summary) and its text; each mode's module imported when it runs."""
    if compare:
        from ..inspect.diff.compare import diff, format_diff

        report = diff(paths[0], paths[1], key, **limit)
        return report, format_diff(report)
    if count:
        from ..inspect.summary import count as count_files
        from ..inspect.summary import format_files

        report = count_files(paths)
        return report, "\n".join(format_files(report))
    if verify:
        from ..inspect.verify import format_verify
        from ..inspect.verify import verify as verify_files

        report = verify_files(paths)
        return report, format_verify(report)
    if stats:
        from ..inspect.stats import format_stats
        from ..inspect.stats import stats as feature_stats

        report = feature_stats(paths, **limit)
        return report, format_stats(report)
    if write_index:
        from ..inspect.index import write_indexes

        report = write_indexes(paths)
        return report, "\n".join(f"{i['index']}  {i['records']} records" for i in report["indexes"])
    from ..inspect.summary import format_summary, summarize
    from ..inspect.versions import format_versions, held_versions
    from ..inspect.versions import report as versions_report

    held = held_versions(paths[0]) if len(paths) == 1 else None
    if held:  # a data_dir, or a dataset's folder of versions: the versions, not one of them
        report = versions_report(paths[0], held)
        return report, format_versions(report)
    report = summarize(paths, head=head, every=every, **limit)
    return report, format_summary(report)


@contextlib.contextmanager
def _hint_for_large_records() -> Iterator[None]:
    """A record over the size read whole: what tfr-inspect can do about it besides
    --max-record-size (the scan's message names no command's options but that one)."""
    try:
        yield
    except RecordError as e:
        if e.kind == "too_large":
            e.hint = "--verify and --count check records of any size"
        raise
