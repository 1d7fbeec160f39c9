"""The local engine: items -> encode (inline or on N processes) -> ordered write -> metadata.

The engine makes every execution choice, so that converters only describe data:
- inline or a pool: a converter whose batches come column-wise (`encode_batch`)
  is encoded in this process, since the encoding is one numpy pass and worker
  processes would only add the copying of every record; others use `--workers`
  processes.
- fork or spawn: fork shares the converter's arrays copy-on-write; spawn when the
  converter reads remote paths (through TensorFlow, which does not survive fork)
  or when threads other than this one are alive (a forked child inherits their
  locks in whatever state they were).
- the converter's background loading is settled (its threads joined) first.

Workers encode batches and seal them for the container; the parent receives
them in submission order and alone decides shard boundaries and writes. A
bounded window of batches in flight keeps memory flat however many items there
are, and because order and boundaries are decided in one place the output is
byte-identical for any worker count.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from . import containers, fs
from . import splits as splitting
from .converters.base import Converter
from .encode import Encoded, encode_items
from .metadata import metadata_files
from .shards import OutputDir, ShardPolicy, SplitResult, SplitWriter

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

WINDOW_PER_WORKER = 4  # batches in flight per worker


@dataclass(frozen=True)
class RunOptions:
    out: str
    name: str | None = None
    policy: ShardPolicy = field(default_factory=ShardPolicy)
    file_format: str = "tfrecord"
    compression: str = "none"
    seed: int = 0
    shuffle: bool = True
    validation_size: int = 0
    workers: int = 1
    overwrite: bool = False
    on_error: str = "fail"  # or "skip": leave out items that fail to encode, and list them
    index: bool = False  # write <shard>.index files (DALI / tfrecord package format)

    def __post_init__(self) -> None:
        if self.file_format not in containers.FORMATS:
            raise ValueError(f"file_format must be one of {containers.FORMATS}")
        if self.compression not in self.container().compressions:
            raise ValueError(f"{self.file_format} compression must be one of {self.container().compressions}")
        if self.on_error not in ("fail", "skip"):
            raise ValueError("on_error must be 'fail' or 'skip'")
        if self.index and (self.compression != "none" or self.file_format != "tfrecord"):
            raise ValueError("index files need uncompressed TFRecord shards")

    def container(self) -> containers.Container:
        return containers.get(self.file_format)

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


def encode_sealed(
    converter: Converter, items: Sequence[Hashable], on_error: str, container: containers.Container
) -> Encoded:
    """A batch encoded with room for the container's framing, and sealed: what both engines write."""
    encoded = encode_items(converter, items, on_error, container.head, container.tail)
    container.seal(encoded.blob, encoded.sizes)
    return encoded


_job: tuple[Converter, str, containers.Container] | None = None  # the worker process's converter...


def _init_worker(converter: Converter, on_error: str, container: containers.Container) -> None:
    global _job
    _job = (converter, on_error, container)


def _encode_in_worker(items: Sequence[Hashable]) -> Encoded:
    assert _job is not None
    return encode_sealed(_job[0], items, _job[1], _job[2])


def _batches(items: Sequence[Hashable], size: int) -> Iterator[Sequence[Hashable]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _encoded(
    converter: Converter,
    items: Sequence[Hashable],
    pool: ProcessPoolExecutor | None,
    options: RunOptions,
    container: containers.Container,
) -> Iterator[Encoded]:
    """Encoded, sealed batches, in item order."""
    batches = _batches(items, converter.chunk_size)
    if pool is None:
        for batch in batches:
            yield encode_sealed(converter, batch, options.on_error, container)
        return
    pending: deque[Future[Encoded]] = deque()
    for batch in batches:
        pending.append(pool.submit(_encode_in_worker, batch))
        if len(pending) >= WINDOW_PER_WORKER * options.workers:
            break
    while pending:
        encoded = pending.popleft().result()
        batch = next(batches, None)
        if batch is not None:
            pending.append(pool.submit(_encode_in_worker, batch))
        yield encoded


def _runs_inline(converter: Converter, plan: dict[str, list[Hashable]], workers: int) -> bool:
    if workers <= 1:
        return True
    sample = next((items[:1] for items in plan.values() if items), None)
    return sample is None or converter.encode_batch(sample) is not None


def _pool(converter: Converter, options: RunOptions, container: containers.Container) -> ProcessPoolExecutor:
    import multiprocessing  # here: ~15 ms to import, and inline runs never need it
    from concurrent.futures import ProcessPoolExecutor

    converter.settle()
    remote = any(fs.is_remote(root) for root in converter.roots())
    forkable = "fork" in multiprocessing.get_all_start_methods() and not remote and threading.active_count() == 1
    pool = ProcessPoolExecutor(
        max_workers=options.workers,
        mp_context=multiprocessing.get_context("fork" if forkable else "spawn"),
        initializer=_init_worker,
        initargs=(converter, options.on_error, container),
    )
    pool.submit(int).result()  # start the workers now, before this process starts threads (writers, bars)
    return pool


# ---------------------------------------------------------------- run


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run(converter: Converter, options: RunOptions, progress: Callable[[int, int], None] | None = None) -> Summary:
    """Convert everything and write the dataset directory atomically.

    `progress(n, total)` is called each time n more of the total examples are written.
    """
    started = time.perf_counter()
    container = options.container()
    plan = plan_splits(converter, options)
    total = sum(len(items) for items in plan.values())
    results: list[SplitResult] = []
    observations: Counter[Hashable] = Counter()
    skipped = list(converter.skipped)  # found while listing sources
    found_warnings: list[str] = []
    with OutputDir(options.out, options.overwrite) as out:
        pool = None if _runs_inline(converter, plan, options.workers) else _pool(converter, options, container)
        if progress:
            progress(0, total)
        try:
            for split, items in plan.items():
                with SplitWriter(out, split, len(items), options.policy, container, options.compression) as writer:
                    for encoded in _encoded(converter, items, pool, options, container):
                        writer.write_chunk(encoded.blob, encoded.sizes)
                        writer.skip(len(encoded.skipped))
                        observations.update(o for o in encoded.observations if o is not None)
                        skipped += encoded.skipped
                        found_warnings += encoded.warnings
                        if progress:
                            progress(len(encoded.sizes) + len(encoded.skipped), total)
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
    out.name_shards(results, name, options.file_format)
    files = _index_files(results) if options.index else {}
    files |= metadata_files(
        name=name,
        converter=converter.command,
        description=converter.description,
        file_format=options.file_format,
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
    from .containers.tfrecord import index_lines

    return {f"{s.final_name}.index": index_lines(s.tmp_path) for r in results for s in r.shards}


def plan_splits(converter: Converter, options: RunOptions) -> dict[str, list[Hashable]]:
    return splitting.assign(
        converter.source_splits(),
        converter.key,
        seed=options.seed,
        shuffle=options.shuffle,
        validation_size=options.validation_size,
    )
