"""Run a converter: items -> encode (on N processes) -> ordered write -> metadata.

Workers encode, serialize and frame chunks of items; the parent receives the
chunks in submission order and alone decides shard boundaries and writes. A
bounded window of chunks in flight keeps memory flat however many items
there are, and because order and boundaries are decided in one place the
output is byte-identical for any worker count.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from . import splits as splitting
from .converters.base import Converter
from .errors import SourceError, TfrConvertError
from .example import serialize
from .metadata import metadata_files
from .shards import OutputDir, ShardPolicy, SplitResult, SplitWriter
from .tfrecord import COMPRESSIONS, frame

CHUNK_SIZE = 256  # items per task: large enough to amortize IPC, small enough to stream
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

    def __post_init__(self) -> None:
        if self.compression not in COMPRESSIONS:
            raise ValueError(f"compression must be one of {COMPRESSIONS}")

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

    @property
    def examples(self) -> int:
        return sum(s["examples"] for s in self.splits.values())

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "out": self.out, "splits": self.splits, "seconds": round(self.seconds, 3)}


# ---------------------------------------------------------------- encoding

_converter: Converter | None = None  # the worker process's converter


def _init_worker(converter: Converter) -> None:
    global _converter
    _converter = converter


Chunk = tuple[bytes, list[int]]  # framed records back to back, and their sizes


def _encode_chunk(items: Sequence[Hashable]) -> Chunk:
    assert _converter is not None
    return encode_items(_converter, items)


def encode_items(converter: Converter, items: Sequence[Hashable]) -> Chunk:
    """Framed records of items, as one blob (cheap to send between processes).

    Errors name the item's file and position.
    """
    expected = converter.features.keys()
    records = []
    for item in items:
        try:
            features = converter.encode(item)
            if features.keys() != expected:
                raise SourceError(f"features {sorted(features)} differ from the declared {sorted(expected)}")
            records.append(frame(serialize(features)))
        except TfrConvertError as e:
            raise type(e)(f"{converter.describe(item)}: {e}") from None
    return b"".join(records), [len(r) for r in records]


def _chunks(items: Sequence[Hashable]) -> Iterator[Sequence[Hashable]]:
    for start in range(0, len(items), CHUNK_SIZE):
        yield items[start : start + CHUNK_SIZE]


def _encoded(
    converter: Converter, items: Sequence[Hashable], pool: ProcessPoolExecutor | None, workers: int
) -> Iterator[Chunk]:
    """Framed records chunk by chunk, in item order."""
    if pool is None:
        for batch in _chunks(items):
            yield encode_items(converter, batch)
        return
    batches = _chunks(items)
    pending: deque[Future[Chunk]] = deque()
    for batch in batches:
        pending.append(pool.submit(_encode_chunk, batch))
        if len(pending) >= WINDOW_PER_WORKER * workers:
            break
    while pending:
        encoded = pending.popleft().result()
        batch = next(batches, None)
        if batch is not None:
            pending.append(pool.submit(_encode_chunk, batch))
        yield encoded


def _pool(converter: Converter, workers: int) -> ProcessPoolExecutor | None:
    if workers <= 1:
        return None
    # fork shares the converter's loaded arrays copy-on-write; elsewhere it is pickled.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_init_worker,
        initargs=(converter,),
    )


# ---------------------------------------------------------------- run


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run(converter: Converter, options: RunOptions, progress: Callable[[int, int], None] | None = None) -> Summary:
    """Convert everything and write the dataset directory atomically.

    `progress(n, total)` is called each time n more of the total examples are written.
    """
    started = time.perf_counter()
    name = options.name or converter.dataset_name
    plan = plan_splits(converter, options)
    total = sum(len(items) for items in plan.values())
    if progress:
        progress(0, total)
    results: list[SplitResult] = []
    with OutputDir(options.out, options.overwrite) as out:
        pool = _pool(converter, options.workers)
        try:
            for split, items in plan.items():
                writer = SplitWriter(out, split, len(items), options.policy, options.compression)
                for blob, sizes in _encoded(converter, items, pool, options.workers):
                    writer.write_chunk(blob, sizes)
                    if progress:
                        progress(len(sizes), total)
                results.append(writer.close())
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        out.name_shards(results, name)
        files = metadata_files(
            name=name,
            converter=converter.command,
            description=converter.description,
            features=converter.features,
            labels=converter.labels,
            options={**options.recorded(), "name": name, **converter.options()},
            sources=converter.sources(),
            results=results,
        )
        out.commit(results, files)
    splits = {r.split: {"examples": r.records, "shards": len(r.shards), "bytes": r.bytes} for r in results}
    return Summary(name, options.out, splits, time.perf_counter() - started)


def plan_splits(converter: Converter, options: RunOptions) -> dict[str, list[Hashable]]:
    return splitting.assign(
        converter.source_splits(),
        converter.key,
        seed=options.seed,
        shuffle=options.shuffle,
        validation_size=options.validation_size,
    )
