"""`--engine beam`: the conversion of `local.run` as an Apache Beam pipeline.

The launcher lists the items and assigns splits with the code the local engine
uses (`engine.plan_splits`: ranks by a seeded hash of each item's key, cut at
exact counts), so both engines put every example in the same split. Beam does
the expensive part on as many machines as the runner gives it:

    batches of items --Encode--> framed chunks --sizes--> shard cuts per split
                                      |                  (ShardCutter, as local)
                                      +--pieces by shard--> GroupByKey --> WriteShard

`WriteShard` writes each shard under a temporary name in --out, with a small
JSON report beside it; `Extras` gathers the converter's observations, skipped
items and warnings into one more report. After the pipeline, the launcher reads
the reports, renames the shards and writes the metadata last, exactly as the
local engine does; a failed pipeline leaves nothing at a final name, and its
temporaries are removed. Within a shard, records keep item order, so the
shards are the local engine's, byte for byte.

Everything Beam ships to workers is defined at module level here (picklable by
reference); workers need tfr-convert installed (see docs/remote.md for Dataflow).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import sys
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

from .. import containers
from ..converters.base import Converter
from ..dataset.naming import TEMP_PREFIX
from ..errors import TfrConvertError, as_text, from_text
from ..optional import extra_hint
from ..output.base import Output
from ..output.journal import hashable, jsonable
from ..output.opening import open_output
from ..output.shards import ShardCutter, ShardFile, ShardPolicy, SplitResult
from ..skips import LISTED, Skips
from ..storage import fs
from .core import Summary, already_appended, appended_to, commit_with_metadata, encode_sealed, output_name, plan_splits
from .planned import split_policies
from .resume import input_files, run_identity
from .run_options import RunOptions

_PREFIX = f"{TEMP_PREFIX}beam-"
_REPORTS = f"{_PREFIX}reports.json"
_BATCHES_PER_PLAN_FILE = 256


def install_hint() -> str:
    return f"--engine beam needs Apache Beam: {extra_hint('beam')}"


def available() -> bool:
    # Beam's import logs a warning about optional Google Cloud clients on the root
    # logger; it is noise for every runner but Dataflow (where they are installed).
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        import apache_beam  # noqa: F401
    except ImportError:
        return False
    finally:
        root.setLevel(level)
    return True


def run(
    converter: Converter,
    options: RunOptions,
    beam_options: str = "",
    progress: Callable[[int, int], None] | None = None,
    quiet: bool = False,
    lock: Any = None,
) -> Summary:
    """Convert with a Beam pipeline (options as for Beam's command line, e.g.
    "--runner=DataflowRunner --project=P ...") and commit the directory. `quiet`: what
    the runner and its worker processes log goes to a file, named if the pipeline fails.
    `lock`: the output's, taken by the caller before the converter read its sources."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    started = time.perf_counter()
    container = options.container()
    plan = plan_splits(converter, options)
    output_name(converter, options)  # checked before anything is written
    append, plan = appended_to(converter, options, plan)
    # the inputs' stats: an --append's identity, and the sizes --shard-size plans cuts by
    inputs = input_files(converter, plan, 1) if append is not None or options.policy.by_size else None
    identity = run_identity(converter, options, plan, inputs) if append else {}
    if append is not None:
        append.identify(identity)
    if append is not None and append.done_before:
        return already_appended(append, identity, time.perf_counter() - started)
    converter.finish_loading()  # no threads or futures in what is shipped to workers
    totals = {split: len(items) for split, items in plan.items()}
    policies = split_policies(converter, options, plan, inputs, container)
    if progress:
        progress(0, sum(totals.values()))
    with open_output(options.out, options.overwrite, lock=lock) as out:
        log = None
        try:
            plan_files = _write_plan(plan, converter.chunk_size, out.build)
            arguments = shlex.split(beam_options)
            if not any(a.startswith("--default_sdk_harness_log_level") for a in arguments):
                arguments.append(f"--default_sdk_harness_log_level={'ERROR' if quiet else 'WARNING'}")
            with _logs_aside(quiet) as log, beam.Pipeline(options=PipelineOptions(arguments)) as pipeline:
                _steps(pipeline, plan_files, converter, options, container, out.build, totals, policies)
        except TfrConvertError:
            _remove_temporaries(out.build)
            raise
        except Exception as e:  # Beam wraps what a worker raised: the error itself, not Beam's stack
            _remove_temporaries(out.build)
            raise _pipeline_error(e, log) from None
        results, observations, skipped, found_warnings = _read_reports(out, totals)
        if progress:
            progress(sum(totals.values()), sum(totals.values()))
        in_order = Skips()
        in_order.merge(converter.skipped)  # found while listing sources: first, as in the local engine
        in_order.merge(skipped)
        found_warnings = [*converter.warnings, *found_warnings]  # listing's first, as in the local engine
        return commit_with_metadata(
            converter, options, out, results, observations, in_order, found_warnings, started, plan, append
        )


def _steps(
    pipeline: Any,
    plan_files: list[str],
    converter: Converter,
    options: RunOptions,
    container: containers.Container,
    build: str,
    totals: dict[str, int],
    policies: dict[str, ShardPolicy],
) -> None:
    """The pipeline: the plan's batches spread and encoded; their sizes cut into shards per
    split, each shard written; what encoding found gathered; every report written."""
    import apache_beam as beam

    rank = {split: i for i, split in enumerate(policies)}
    encoded = (
        pipeline
        | "PlanFiles" >> beam.Create(plan_files)
        | "Batches" >> beam.FlatMap(_read_plan)
        | "Spread" >> beam.Reshuffle()
        | "Encode"
        >> beam.Map(
            _encode_batch, converter=converter, on_error=options.on_error, container=container, out=build, rank=rank
        )
    )
    shards = (
        encoded
        | "Sizes" >> beam.Map(lambda e: (e[0], (e[1], e[2], e[3])))
        | "BySplit" >> beam.GroupByKey()
        | "Cut" >> beam.FlatMap(_cut_split, totals=totals, policies=policies)
        | "ByShard" >> beam.GroupByKey()
        | "WriteShard" >> beam.Map(_write_shard, out=build, container=container, compression=options.compression)
    )
    extras = (
        encoded
        | "Extras" >> beam.Map(lambda e: e[4])
        | "Gather" >> beam.CombineGlobally(_merge_extras)
        | "Tag" >> beam.Map(lambda gathered: {"extras": gathered})
    )
    # One last step that every other one leads to: some runners (Dask's) run only
    # what the pipeline's final transform needs.
    _ = (
        (shards, extras)
        | "Reports" >> beam.Flatten()
        | "Collect" >> beam.combiners.ToList()
        | "WriteReports" >> beam.Map(_write_json, path=fs.join(build, _REPORTS))
    )


def _pipeline_error(e: Exception, log: Any) -> TfrConvertError:
    """What a failed pipeline raised, as the error a worker raised where Beam carried it,
    else one line naming the runner's log."""
    raised = from_text(str(e))
    if raised is not None:
        return raised
    text = str(e).strip()
    where = f" (the runner's log: {log.name})" if log is not None else ""
    first = text.splitlines()[0] if text else type(e).__name__
    return TfrConvertError(f"the Beam pipeline failed: {first}{where}")


@contextlib.contextmanager
def _logs_aside(quiet: bool) -> Iterator[Any]:
    """With `quiet`, this process's standard error, which the runner's worker processes
    inherit, goes to a temporary file while the pipeline runs: kept if it fails, else
    removed."""
    if not quiet:
        yield None
        return
    import tempfile

    log = tempfile.NamedTemporaryFile(prefix="tfr-convert-beam-", suffix=".log", delete=False)
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(log.fileno(), 2)
    failed = True
    try:
        yield log
        failed = False
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        log.close()
        if not failed:
            os.remove(log.name)


def _write_plan(plan: dict[str, list[Hashable]], batch_size: int, out: str) -> list[str]:
    """The batches of items, as JSON files in --out that workers read.

    Items travel through files rather than inside the pipeline: runners cap the
    size of a job's description (Dataflow at about 10 MB), which a list of tens of
    millions of file names would exceed.
    """
    batches = [
        [split, b, items[b * batch_size : (b + 1) * batch_size]]
        for split, items in plan.items()
        for b in range(-(-len(items) // batch_size))
    ]
    paths = []
    for start in range(0, len(batches), _BATCHES_PER_PLAN_FILE):
        path = fs.join(out, f"{_PREFIX}plan-{len(paths):05d}.json")
        _write_json(batches[start : start + _BATCHES_PER_PLAN_FILE], path)
        paths.append(path)
    return paths


# ---------------------------------------------------------------- on the workers


def _read_plan(path: str) -> Iterator[tuple[str, int, list[Hashable]]]:
    for split, b, items in json.loads(fs.read_bytes(path)):
        yield split, b, [hashable(item) for item in items]


class WorkerError(Exception):
    """A worker's TfrConvertError, as text the launcher finds it in (errors.as_text):
    runners carry a worker's failure as their own exception, some only as its text."""


def _batch_path(out: str, split: str, b: int) -> str:
    return fs.join(out, f"{_PREFIX}batch-{split}-{b:08d}")


def _encode_batch(
    element: tuple[str, int, list[Hashable]],
    converter: Converter,
    on_error: str,
    container: containers.Container,
    out: str,
    rank: dict[str, int],
) -> tuple[str, int, list[int], int, dict[str, Any]]:
    """Batch -> its sealed records, written to a temporary file in --out; what goes on
    through the pipeline is small: (split, batch number, record sizes, items skipped, extras)."""
    split, b, items = element
    try:
        encoded = encode_sealed(converter, items, on_error, container)
    except TfrConvertError as e:
        raise WorkerError(as_text(e)) from None
    fs.put_bytes(_batch_path(out, split, b), bytes(encoded.blob))  # a retried bundle writes the same bytes
    return split, b, encoded.sizes, len(encoded.skipped), _extras_of(split, b, encoded, rank, converter)


def _cut_split(
    element: tuple[str, Iterable[tuple[int, list[int], int]]],
    totals: dict[str, int],
    policies: dict[str, ShardPolicy],
) -> Iterator[tuple[tuple[str, int], tuple[int, int, int, list[int]]]]:
    """Where a split's shards end, from every batch's record sizes in item order: each
    piece of a batch that goes to one shard, as ((split, shard), (batch, byte start,
    byte count, record sizes))."""
    split, batches = element
    cutter = ShardCutter(totals[split], policies[split])
    shard = 0
    for b, sizes, skipped in sorted(batches, key=lambda t: t[0]):
        start = at = 0
        for count, nbytes, closes in cutter.cut(sizes):
            yield (split, shard), (b, start, nbytes, sizes[at : at + count])
            start += nbytes
            at += count
            shard += closes
        if cutter.skip(skipped):
            shard += 1
    cutter.check_complete(split)


def _write_shard(
    element: tuple[tuple[str, int], Iterable[tuple[int, int, int, list[int]]]],
    out: str,
    container: containers.Container,
    compression: str,
) -> dict[str, Any]:
    """One shard from its pieces, read from the batches' temporary files in item order."""
    (split, shard), pieces = element
    path = fs.join(out, f"{_PREFIX}{split}-{shard:05d}")
    records = 0
    with container.writer(path, compression) as writer:
        for b, start, nbytes, sizes in sorted(pieces, key=lambda p: p[0]):
            writer.write(memoryview(fs.read_range(_batch_path(out, split, b), start, nbytes)), sizes)
            records += len(sizes)
    return {
        "split": split,
        "shard": shard,
        "path": path,
        "records": records,
        "bytes": writer.bytes_written(),
        "sha256": writer.sha256(),
    }


def _extras_of(split: str, b: int, encoded: Any, rank: dict[str, int], converter: Converter) -> dict[str, Any]:
    """One encoded batch's extras; its skipped items keyed by where they come in the
    local engine's order (split, batch, item), since Beam gathers batches in any order."""
    observed = converter.summarized(Counter(o for o in encoded.observations if o is not None))
    skips = Skips()
    skips.extend(encoded.skipped)
    return {
        "observations": [[jsonable(o), n] for o, n in observed.items()],
        "skipped": [[[rank[split], b, i], s] for i, s in enumerate(skips.listed)],
        "skipped_total": skips.total,
        "skipped_by_kind": dict(skips.by_kind),
        "warnings": encoded.warnings,
    }


def _merge_extras(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Extras of batches (or of merges: Beam may merge in stages), the skipped items
    cut to the first LISTED in order."""
    merged: dict[str, Any] = {
        "observations": [],
        "skipped": [],
        "skipped_total": 0,
        "skipped_by_kind": Counter(),
        "warnings": [],
    }
    for part in parts:
        merged["observations"] += part["observations"]
        merged["warnings"] += part["warnings"]
        merged["skipped"] = sorted(merged["skipped"] + part["skipped"], key=lambda keyed: keyed[0])[:LISTED]
        merged["skipped_total"] += part["skipped_total"]
        merged["skipped_by_kind"].update(part["skipped_by_kind"])
    return merged


def _write_json(data: Any, path: str) -> None:
    with fs.open_file(path, "wb") as f:
        f.write(json.dumps(data).encode())


# ---------------------------------------------------------------- back on the launcher


def _read_reports(out: Output, totals: dict[str, int]):
    """SplitResults (shards in order) and the gathered extras, from the workers' reports;
    TfrConvertError if the runner did not run every shard (records and skips short of the plan)."""
    by_split: dict[str, list[dict[str, Any]]] = {split: [] for split in totals}
    extras: dict[str, Any] = {
        "observations": [],
        "skipped": [],
        "skipped_total": 0,
        "skipped_by_kind": {},
        "warnings": [],
    }
    path = fs.join(out.build, _REPORTS)
    reports = json.loads(fs.read_bytes(path)) if fs.exists(path) else []
    for report in reports:
        if "extras" in report:
            extras = report["extras"]
        else:
            by_split[report["split"]].append(report)
    _remove_temporaries(out.build, keep=[report["path"] for report in reports if "path" in report])
    results = []
    for split in totals:
        result = SplitResult(split)
        for report in sorted(by_split[split], key=lambda r: r["shard"]):
            out.adopt(report["path"])
            result.shards.append(ShardFile(report["path"], report["records"], report["bytes"], report["sha256"]))
        results.append(result)
    written, planned = sum(r.records for r in results), sum(totals.values())
    if written + extras["skipped_total"] != planned:
        raise TfrConvertError(
            f"the Beam runner wrote {written} of the {planned} examples ({extras['skipped_total']} skipped) and "
            "reported no failure: it did not run every step of the pipeline"
        )
    observations: Counter[Hashable] = Counter()
    for observed, n in extras["observations"]:
        observations[hashable(observed)] += n
    skipped = Skips.from_json(
        {
            "listed": [entry for _, entry in extras["skipped"]],
            "total": extras["skipped_total"],
            "by_kind": extras["skipped_by_kind"],
        }
    )
    return results, observations, skipped, extras["warnings"]


def _remove_temporaries(out: str, keep: Iterable[str] = ()) -> None:
    """The pipeline's temporaries (plan files, encoded batches, reports), but the shards in `keep`."""
    if fs.isdir(out):
        kept = {fs.basename(path) for path in keep}
        gone = [fs.join(out, e) for e in fs.listdir(out) if e.startswith(_PREFIX) and e not in kept]
        if fs.is_remote(out):
            fs.remove_many(gone)
        else:
            for path in gone:
                fs.remove(path)
