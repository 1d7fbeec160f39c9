"""Run a converter: items -> encode (on N processes) -> ordered write -> metadata.

Workers encode, serialize and frame chunks of items; the parent receives the
chunks in submission order and alone decides shard boundaries and writes. A
bounded window of chunks in flight keeps memory flat however many items
there are, and because order and boundaries are decided in one place the
output is byte-identical for any worker count.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from . import splits as splitting
from .converters.base import Converter
from .errors import SourceError, TfrConvertError
from .example import serialize
from .metadata import metadata_files
from .shards import OutputDir, ShardPolicy, SplitResult, SplitWriter
from .tfrecord import COMPRESSIONS, frame

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

WINDOW_PER_WORKER = 4  # chunks in flight per worker


@dataclass(frozen=True)
class RunOptions:
    out: str
    name: str | None = None
    policy: ShardPolicy = field(default_factory=ShardPolicy)
    compression: str = "none"
    seed: int = 0
    shuffle: bool = True
    validation_size: int = 0
    workers: int = 1
    overwrite: bool = False
    on_error: str = "fail"  # or "skip": leave out items that fail to encode, and list them
    index: bool = False  # write <shard>.index files (DALI / tfrecord package format)

    def __post_init__(self) -> None:
        if self.compression not in COMPRESSIONS:
            raise ValueError(f"compression must be one of {COMPRESSIONS}")
        if self.on_error not in ("fail", "skip"):
            raise ValueError("on_error must be 'fail' or 'skip'")
        if self.index and self.compression != "none":
            raise ValueError("index files need uncompressed shards")

    def recorded(self) -> dict[str, Any]:
        """The options that shape the output (worker count does not), for the manifest."""
        d = asdict(self)
        for k in ("out", "workers", "overwrite", "policy"):
            d.pop(k)
        return {**d, "shards": self.policy.describe()}


@dataclass
class Summary:
    name: str
    out: str
    splits: dict[str, dict[str, int]]
    seconds: float
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "out": self.out,
            "splits": self.splits,
            "seconds": round(self.seconds, 3),
            "skipped": self.skipped,
            "warnings": self.warnings,
        }


# ---------------------------------------------------------------- encoding

_converter: Converter | None = None  # the worker process's converter...
_on_error = "fail"  # ...and its error policy


def _init_worker(converter: Converter, on_error: str) -> None:
    global _converter, _on_error
    _converter, _on_error = converter, on_error


class Chunk(NamedTuple):
    """What a worker sends back for a batch of items (one blob: cheap to pickle)."""

    blob: bytes  # framed records back to back
    sizes: list[int]  # of each record in blob
    observations: list[Hashable]  # converter.observe(features) per record, for converter.finish
    skipped: list[dict[str, str]]  # {"item", "reason"} of items dropped under on_error="skip"
    warnings: list[str]


def _encode_chunk(items: Sequence[Hashable]) -> Chunk:
    assert _converter is not None
    return encode_items(_converter, items, _on_error)


def encode_items(converter: Converter, items: Sequence[Hashable], on_error: str = "fail") -> Chunk:
    """Framed records of items. Errors name the item's file and position; with
    on_error="skip" a failing item is listed and left out instead."""
    fast = converter.frame_batch(list(items))
    if fast is not None:
        blob, sizes = fast
        return Chunk(blob, sizes, [], [], [])
    expected = converter.features.keys()
    records, observations, skipped = [], [], []
    # Converters report oddities (an animation's later frames dropped...) with
    # warnings.warn, naming the item in the message; collected once per chunk.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for item in items:
            try:
                features = converter.encode(item)
                if features.keys() != expected:
                    raise SourceError(f"features {sorted(features)} differ from the declared {sorted(expected)}")
                record = frame(serialize(features))
            except TfrConvertError as e:
                message = f"{converter.describe(item)}: {e}"
                if on_error != "skip":
                    raise type(e)(message) from None
                skipped.append({"item": converter.describe(item), "reason": str(e)})
                continue
            records.append(record)
            observations.append(converter.observe(features))
    return Chunk(b"".join(records), [len(r) for r in records], observations, skipped, [str(w.message) for w in caught])


def _chunks(items: Sequence[Hashable], size: int) -> Iterator[Sequence[Hashable]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _encoded(
    converter: Converter, items: Sequence[Hashable], pool: ProcessPoolExecutor | None, options: RunOptions
) -> Iterator[Chunk]:
    """Encoded chunks, in item order."""
    batches = _chunks(items, converter.chunk_size)
    if pool is None:
        for batch in batches:
            yield encode_items(converter, batch, options.on_error)
        return
    pending: deque[Future[Chunk]] = deque()
    for batch in batches:
        pending.append(pool.submit(_encode_chunk, batch))
        if len(pending) >= WINDOW_PER_WORKER * options.workers:
            break
    while pending:
        encoded = pending.popleft().result()
        batch = next(batches, None)
        if batch is not None:
            pending.append(pool.submit(_encode_chunk, batch))
        yield encoded


def _pool(converter: Converter, workers: int, on_error: str) -> ProcessPoolExecutor | None:
    if workers <= 1:
        return None
    import multiprocessing  # here: ~15 ms to import, and inline converters never need it
    from concurrent.futures import ProcessPoolExecutor

    # fork shares the converter's loaded arrays copy-on-write; elsewhere (and when
    # encode reads through TensorFlow, which does not survive fork) it is pickled.
    forkable = "fork" in multiprocessing.get_all_start_methods() and not converter.remote
    method = "fork" if forkable else "spawn"
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_init_worker,
        initargs=(converter, on_error),
    )


# ---------------------------------------------------------------- run


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run(converter: Converter, options: RunOptions, progress: Callable[[int, int], None] | None = None) -> Summary:
    """Convert everything and write the dataset directory atomically.

    `progress(n, total)` is called each time n more of the total examples are written.
    """
    started = time.perf_counter()
    plan = plan_splits(converter, options)
    total = sum(len(items) for items in plan.values())
    if progress:
        progress(0, total)
    results: list[SplitResult] = []
    observations: Counter[Hashable] = Counter()
    skipped = list(converter.skipped)  # found while listing sources
    found_warnings: list[str] = []
    with OutputDir(options.out, options.overwrite) as out:
        pool = None if converter.inline else _pool(converter, options.workers, options.on_error)
        try:
            for split, items in plan.items():
                with SplitWriter(out, split, len(items), options.policy, options.compression) as writer:
                    for chunk in _encoded(converter, items, pool, options):
                        writer.write_chunk(chunk.blob, chunk.sizes)
                        writer.skip(len(chunk.skipped))
                        observations.update(o for o in chunk.observations if o is not None)
                        skipped += chunk.skipped
                        found_warnings += chunk.warnings
                        if progress:
                            progress(len(chunk.sizes) + len(chunk.skipped), total)
                    results.append(writer.close())
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        return finish(converter, options, out, results, observations, skipped, found_warnings, started)


def finish(
    converter: Converter,
    options: RunOptions,
    out: OutputDir,
    results: list[SplitResult],
    observations: Counter[Hashable],
    skipped: list[dict[str, str]],
    found_warnings: list[str],
    started: float,
) -> Summary:
    """After every shard is written (by either engine): name the shards, write the
    metadata and commit the directory."""
    name = options.name or converter.dataset_name
    converter.finish(observations)  # may refine features, or refuse (e.g. mixed shapes for raw)
    out.name_shards(results, name)
    files = _index_files(results) if options.index else {}
    files |= metadata_files(
        name=name,
        converter=converter.command,
        description=converter.description,
        features=converter.features,
        labels=converter.labels,
        options={**options.recorded(), "name": name, **converter.options()},
        sources=converter.sources(),
        results=results,
        skipped=skipped,
        warnings=found_warnings,
    )
    out.commit(results, files)
    splits = {r.split: {"examples": r.records, "shards": len(r.shards), "bytes": r.bytes} for r in results}
    return Summary(name, options.out, splits, time.perf_counter() - started, skipped, found_warnings)


def _index_files(results: list[SplitResult]) -> dict[str, bytes]:
    from .inspect.index import index_lines

    return {f"{s.final_name}.index": index_lines(s.tmp_path) for r in results for s in r.shards}


def plan_splits(converter: Converter, options: RunOptions) -> dict[str, list[Hashable]]:
    return splitting.assign(
        converter.source_splits(),
        converter.key,
        seed=options.seed,
        shuffle=options.shuffle,
        validation_size=options.validation_size,
    )
