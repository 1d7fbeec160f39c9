"""`--engine beam`: the conversion of `pipeline.run` as an Apache Beam pipeline.

The launcher lists the items and assigns splits with the code the local engine
uses (`pipeline.plan_splits`: ranks by a seeded hash of each item's key, cut at
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
reference); workers need tfr-convert installed (see the README for Dataflow).
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

from . import containers, fs
from .converters.base import Converter
from .errors import TfrConvertError
from .journal import hashable, jsonable
from .outdir import Output, open_output
from .pipeline import RunOptions, Summary, encode_sealed, finish, plan_splits
from .shards import TEMP_PREFIX, ShardCutter, ShardFile, ShardPolicy, SplitResult
from .skips import LISTED, Skips

_PREFIX = f"{TEMP_PREFIX}beam-"
# What a worker's TfrConvertError becomes on its way through the runner (which
# wraps it in its own exceptions and may carry only its text between machines):
# one marked line the launcher finds, whatever the error's class (runners add
# their own words around it, so both ends are marked).
_MARK, _END = "tfr-convert error >>> ", " <<<"
_EXTRAS = f"{_PREFIX}extras.json"
_BATCHES_PER_PLAN_FILE = 256

INSTALL_HINT = "--engine beam needs Apache Beam: pip install 'tfr-convert[beam]'"


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
) -> Summary:
    """Convert with a Beam pipeline (options as for Beam's command line, e.g.
    "--runner=DataflowRunner --project=P ...") and commit the directory."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    started = time.perf_counter()
    container = options.container()
    plan = plan_splits(converter, options)
    converter.settle()  # no threads or futures in what is shipped to workers
    totals = {split: len(items) for split, items in plan.items()}
    if progress:
        progress(0, sum(totals.values()))
    with open_output(options.out, options.overwrite) as out:
        try:
            plan_files = _write_plan(plan, converter.chunk_size, out.build)
            with beam.Pipeline(options=PipelineOptions(shlex.split(beam_options))) as pipeline:
                encoded = (
                    pipeline
                    | "PlanFiles" >> beam.Create(plan_files)
                    | "Batches" >> beam.FlatMap(_read_plan)
                    | "Spread" >> beam.Reshuffle()
                    | "Encode"
                    >> beam.Map(_encode_batch, converter=converter, on_error=options.on_error, container=container)
                )
                cuts = (
                    encoded
                    | "Sizes" >> beam.Map(lambda e: (e[0], (e[1], e[2].sizes, len(e[2].skipped))))
                    | "BySplit" >> beam.GroupByKey()
                    | "Cut" >> beam.Map(_cut_split, totals=totals, policy=options.policy)
                )
                _ = (
                    encoded
                    | "Pieces" >> beam.FlatMap(_pieces, cuts=beam.pvalue.AsDict(cuts))
                    | "ByShard" >> beam.GroupByKey()
                    | "WriteShard"
                    >> beam.Map(_write_shard, out=out.build, container=container, compression=options.compression)
                )
                _ = (
                    encoded
                    | "Extras" >> beam.Map(_extras_of, rank={split: i for i, split in enumerate(plan)})
                    | "Gather" >> beam.CombineGlobally(_merge_extras)
                    | "WriteExtras" >> beam.Map(_write_json, path=fs.join(out.build, _EXTRAS))
                )
        except TfrConvertError:
            _remove_temporaries(out.build)
            raise
        except Exception as e:  # Beam wraps what a worker raised; keep the message, not Beam's stack
            _remove_temporaries(out.build)
            raise TfrConvertError(_worker_message(e)) from None
        results, observations, skipped, found_warnings = _read_reports(out, list(plan))
        if progress:
            progress(sum(totals.values()), sum(totals.values()))
        in_order = Skips()
        in_order.merge(converter.skipped)  # found while listing sources: first, as in the local engine
        in_order.merge(skipped)
        found_warnings = [*converter.warnings, *found_warnings]  # listing's first, as in the local engine
        return finish(converter, options, out, results, observations, in_order, found_warnings, started)


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
    """A worker's TfrConvertError, as the one marked line the launcher looks for."""


def _encode_batch(
    element: tuple[str, int, list[Hashable]], converter: Converter, on_error: str, container: containers.Container
):
    """Batch -> (split, batch number, Encoded sealed records)."""
    split, b, items = element
    try:
        encoded = encode_sealed(converter, items, on_error, container)
    except TfrConvertError as e:
        raise WorkerError(f"{_MARK}{e}{_END}") from None
    return split, b, encoded._replace(blob=bytes(encoded.blob))  # a view or bytearray: Beam pickles bytes


def _cut_split(
    element: tuple[str, Iterable[tuple[int, list[int], int]]], totals: dict[str, int], policy: ShardPolicy
) -> tuple[str, dict[int, list[tuple[int, int, int, int]]]]:
    """Where a split's shards end, from every batch's record sizes in item order:
    per batch, its pieces as (shard number, byte start, byte count, record count)."""
    split, batches = element
    cutter = ShardCutter(totals[split], policy)
    shard, per_batch = 0, {}
    for b, sizes, skipped in sorted(batches, key=lambda t: t[0]):
        pieces, start = [], 0
        for count, nbytes, closes in cutter.cut(sizes):
            pieces.append((shard, start, nbytes, count))
            start += nbytes
            shard += closes
        if cutter.skip(skipped):
            shard += 1
        per_batch[b] = pieces
    cutter.check_complete(split)
    return split, per_batch


def _pieces(
    element: tuple[str, int, Any], cuts: dict
) -> Iterator[tuple[tuple[str, int], tuple[int, bytes, list[int]]]]:
    split, b, encoded = element
    blob = memoryview(encoded.blob)
    at = 0
    for shard, start, nbytes, count in cuts[split].get(b, []):
        yield (split, shard), (b, bytes(blob[start : start + nbytes]), encoded.sizes[at : at + count])
        at += count


def _write_shard(
    element: tuple[tuple[str, int], Iterable[tuple[int, bytes, list[int]]]],
    out: str,
    container: containers.Container,
    compression: str,
) -> None:
    (split, shard), pieces = element
    path = fs.join(out, f"{_PREFIX}{split}-{shard:05d}")
    records = 0
    with container.writer(path, compression) as writer:
        for _, blob, sizes in sorted(pieces, key=lambda p: p[0]):  # item order within the shard
            writer.write(memoryview(blob), sizes)
            records += len(sizes)
    report = {"split": split, "shard": shard, "path": path, "records": records,
              "bytes": writer.bytes_written(), "sha256": writer.sha256()}  # fmt: skip
    _write_json(report, path + ".json")


def _extras_of(batch: tuple[str, int, Any], rank: dict[str, int]) -> dict[str, Any]:
    """One encoded batch's extras; its skipped items keyed by where they come in the
    local engine's order (split, batch, item), since Beam gathers batches in any order."""
    split, b, encoded = batch
    observed = Counter(o for o in encoded.observations if o is not None)
    skips = Skips()
    skips.extend(encoded.skipped)
    return {"observations": [[jsonable(o), n] for o, n in observed.items()],
            "skipped": [[[rank[split], b, i], s] for i, s in enumerate(skips.listed)],
            "skipped_total": skips.total, "skipped_by_kind": dict(skips.by_kind),
            "warnings": encoded.warnings}  # fmt: skip


def _merge_extras(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Extras of batches (or of merges: Beam may merge in stages), the skipped items
    cut to the first LISTED in order."""
    merged: dict[str, Any] = {"observations": [], "skipped": [], "skipped_total": 0,
                              "skipped_by_kind": Counter(), "warnings": []}  # fmt: skip
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


def _read_reports(out: Output, splits: list[str]):
    """SplitResults (shards in order) and the gathered extras, from the workers' reports."""
    by_split: dict[str, list[dict[str, Any]]] = {split: [] for split in splits}
    extras: dict[str, Any] = {"observations": [], "skipped": [], "skipped_total": 0, "skipped_by_kind": {},
                              "warnings": []}  # fmt: skip
    for entry in fs.listdir(out.build):
        if not (entry.startswith(_PREFIX) and entry.endswith(".json")):
            continue
        path = fs.join(out.build, entry)
        report = json.loads(fs.read_bytes(path))
        fs.remove(path)
        if entry.startswith(f"{_PREFIX}plan-"):
            continue
        if entry == _EXTRAS:
            extras = report
        else:
            by_split[report["split"]].append(report)
    results = []
    for split in splits:
        result = SplitResult(split)
        for report in sorted(by_split[split], key=lambda r: r["shard"]):
            out.adopt(report["path"])
            result.shards.append(ShardFile(report["path"], report["records"], report["bytes"], report["sha256"]))
        results.append(result)
    observations: Counter[Hashable] = Counter()
    for observed, n in extras["observations"]:
        observations[hashable(observed)] += n
    skipped = Skips.from_json({"listed": [entry for _, entry in extras["skipped"]],
                               "total": extras["skipped_total"], "by_kind": extras["skipped_by_kind"]})  # fmt: skip
    return results, observations, skipped, extras["warnings"]


def _remove_temporaries(out: str) -> None:
    if fs.isdir(out):
        for entry in fs.listdir(out):
            if entry.startswith(_PREFIX):
                fs.remove(fs.join(out, entry))


def _worker_message(error: Exception) -> str:
    """What a worker raised, as its one marked line, without the runner's decoration."""
    text = str(error).strip()
    for line in text.splitlines():
        if _MARK in line and _END in line:
            return line.split(_MARK, 1)[1].rsplit(_END, 1)[0]
    return f"the Beam pipeline failed: {text.splitlines()[0] if text else type(error).__name__}"
