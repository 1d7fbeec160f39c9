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
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from . import __version__, containers, fs
from . import splits as splitting
from .converters.base import Converter
from .dataset_dir import compressed_note
from .encode import Encoded, encode_items
from .errors import Interrupted, RecordError, WorkerLost
from .fingerprints import InputFiles
from .journal import Progress, ShardEntry, Tally, replay
from .metadata import metadata_files
from .naming import ShardName
from .outdir import Output, open_output
from .shards import Checkpoint, ShardCutter, ShardFile, ShardPolicy, SplitResult, SplitWriter
from .skips import Skips, from_fields, skipped_fields

if TYPE_CHECKING:
    from .workers import Workers

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
    resume: bool = False  # go on from an interrupted run's journal (local engine)
    on_error: str = "fail"  # or "skip": leave out items that fail to encode, and list them
    index: bool = False  # write <shard>.index files (DALI / tfrecord package format)
    limit: int | None = None  # at most this many examples per split (the first of its plan): a quick trial

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
        for k in ("out", "workers", "overwrite", "resume", "policy"):
            d.pop(k)
        return {**d, "shards": self.policy.describe()}


@dataclass
class Summary:
    name: str
    out: str
    splits: dict[str, dict[str, int]]
    seconds: float
    skipped: Skips = field(default_factory=Skips)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "out": self.out,
            "splits": self.splits,
            "seconds": round(self.seconds, 3),
            **skipped_fields(self.skipped),
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


# the worker process's converter, on_error, container, and the plan when it came with the fork
_job: tuple[Converter, str, containers.Container, dict[str, list[Hashable]] | None] | None = None


class _Span(NamedTuple):
    """A batch named by where it lies in the plan, for workers that were forked with it:
    a few numbers cross the pipe instead of every item."""

    split: str
    start: int
    stop: int


def _init_worker(
    converter: Converter, on_error: str, container: containers.Container, plan: dict[str, list[Hashable]] | None
) -> None:
    global _job
    _job = (converter, on_error, container, plan)


def _encode_in_worker(batch: Sequence[Hashable] | _Span) -> Encoded:
    import pickle

    assert _job is not None
    converter, on_error, container, plan = _job
    if isinstance(batch, _Span):
        assert plan is not None
        batch = plan[batch.split][batch.start : batch.stop]
    encoded = encode_sealed(converter, batch, on_error, container)
    return encoded._replace(blob=pickle.PickleBuffer(encoded.blob))  # sent beside the pickle, not in it


def _batches(items: Sequence[Hashable], size: int, first: int) -> Iterator[Sequence[Hashable]]:
    for start in range(first * size, len(items), size):
        yield items[start : start + size]


def _encoded(
    converter: Converter,
    items: Sequence[Hashable],
    pool: Workers | None,
    options: RunOptions,
    container: containers.Container,
    first: int = 0,
    split: str | None = None,
) -> Iterator[Encoded]:
    """Encoded, sealed batches, in item order, from batch `first` on (batches are
    cut from the split's start, so a resumed run cuts them where the first run did).
    `split`: the workers hold the plan (they were forked with it), and this is the
    split the items are: they are sent their batches as spans of it."""
    if pool is None:
        for batch in _batches(items, converter.chunk_size, first):
            yield encode_sealed(converter, batch, options.on_error, container)
        return
    size = converter.chunk_size
    batches: Iterator[Sequence[Hashable] | _Span] = (
        _batches(items, size, first)
        if split is None
        else (_Span(split, start, min(start + size, len(items))) for start in range(first * size, len(items), size))
    )
    in_flight = 0
    for batch in batches:
        pool.send(batch)
        in_flight += 1
        if in_flight >= WINDOW_PER_WORKER * options.workers:
            break
    while in_flight:
        encoded = pool.receive()
        batch = next(batches, None)
        if batch is None:
            in_flight -= 1
        else:
            pool.send(batch)
        yield encoded


def _runs_inline(converter: Converter, plan: dict[str, list[Hashable]], workers: int) -> bool:
    if workers <= 1:
        return True
    sample = next((items[:1] for items in plan.values() if items), None)
    return sample is None or converter.encode_batch(sample) is not None


def _may_fork() -> bool:
    """Whether this process may fork children that run Python: fork exists, and no
    thread but this one runs (a child would inherit the others' locks in whatever
    state they were)."""
    import multiprocessing  # here: slow to import, and inline runs never need it

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _can_fork(converter: Converter) -> bool:
    """Whether a forked process may work on the converter: _may_fork, and no path is
    remote (TensorFlow, which reads them, does not survive fork)."""
    return _may_fork() and not any(fs.is_remote(root) for root in converter.roots())


def forked_parts(workers: int) -> Callable[[Callable[[int, int], bytes], int], list[bytes] | None]:
    """For a converter's independent work (listing folders): in_parts(fill, n) gives
    fill's bytes over 0..n-1 in up to `workers` parts on forked processes, or None
    where this engine would not fork (one worker or part, other threads alive, a
    child failed): the converter then does the work itself."""

    def in_parts(fill: Callable[[int, int], bytes], n: int) -> list[bytes] | None:
        parts = min(workers, n)
        if parts < 2 or not _may_fork():
            return None
        from .workers import in_forks

        return in_forks(fill, n, parts)

    return in_parts


def _pool(
    converter: Converter, options: RunOptions, container: containers.Container, plan: dict[str, list[Hashable]]
) -> tuple[Workers, bool]:
    """The worker processes, started now (before this process starts threads: writers,
    bars), and whether they hold the plan (forked: they got it with this process's
    memory; spawned workers would each be sent all of it, so they are sent their
    batches instead)."""
    import multiprocessing

    from .workers import Workers

    converter.settle()
    forkable = _can_fork(converter)
    pool = Workers(
        options.workers,
        _encode_in_worker,
        _init_worker,
        (converter, options.on_error, container, plan if forkable else None),
        multiprocessing.get_context("fork" if forkable else "spawn"),
    )
    return pool, forkable


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
    name = options.name or converter.dataset_name
    inputs = input_files(converter, plan, options.workers)
    identity = run_identity(converter, options, plan, inputs)
    with open_output(options.out, options.overwrite, options.resume, identity, inputs) as out:
        if out.finished:
            return _committed(out.path, time.perf_counter() - started)
        kept = _resume(out, name, options.file_format, container) if out.resuming else None
        journal = out.journal
        journal.open(identity, kept[0] if kept else None, inputs)
        done = kept[1] if kept else Progress()
        tally, pending = Tally(), Tally()  # the whole run's; what the journal has not yet got
        tally.skipped.merge(converter.skipped)  # found while listing sources: first
        tally.warnings += converter.warnings
        tally.merge(done.tally)
        results: list[SplitResult] = []
        pool, shared = (
            (None, False)
            if _runs_inline(converter, plan, options.workers)
            else _pool(converter, options, container, plan)
        )
        try:
            if progress:
                progress(0, total)
            for split, items in plan.items():
                shards = [ShardFile(e.file, e.records, e.bytes, e.sha256) for e in done.shards.get(split, [])]
                if split in done.done:
                    results.append(SplitResult(split, shards))
                    if progress:
                        progress(len(items), total)
                    continue
                at = done.at.get(split, Checkpoint())

                def journal_shard(shard: ShardFile, where: Checkpoint, split: str = split) -> None:
                    journal.shard_done(split, out.entry(shard), where, pending)
                    pending.clear()

                with SplitWriter(
                    out, split, len(items), options.policy, container, options.compression,
                    at=at, kept=shards, on_shard=journal_shard,
                ) as writer:  # fmt: skip
                    if progress and at.cutter != (0, 0, 0):
                        progress(at.cutter[0] + at.cutter[1], total)
                    batches = _encoded(converter, items, pool, options, container, at.batch, split if shared else None)
                    for b, encoded in enumerate(batches, at.batch):
                        first = at.offset if b == at.batch else 0
                        view = memoryview(encoded.blob)[sum(encoded.sizes[:first]) :]
                        writer.write_chunk(view, encoded.sizes[first:], b, first)
                        observed = Counter(encoded.observations[first:])  # counted in C
                        observed.pop(None, None)
                        for found in (tally, pending):
                            found.add(observed, encoded.skipped, encoded.warnings)
                        writer.skip(len(encoded.skipped))
                        if progress:
                            progress(len(encoded.sizes) - first + len(encoded.skipped), total)
                    results.append(writer.close())
                journal.split_done(split, pending)
                pending.clear()
        except (KeyboardInterrupt, WorkerLost) as e:
            why = str(e) if isinstance(e, WorkerLost) else "interrupted"
            raise Interrupted(
                f"{why}; the finished shards are kept in {out.work}: run the same command "
                "with --resume to finish it, or with --overwrite to start over"
                if out.work
                else why
            ) from None
        finally:
            journal.close()
            if pool is not None:
                pool.close()
        return finish(converter, options, out, results, tally.observations, tally.skipped, tally.warnings, started)


def _committed(path: str, seconds: float) -> Summary:
    """The summary of a dataset already committed, from its manifest."""
    from .dataset_dir import DatasetDir

    manifest = DatasetDir(path).manifest
    splits = {
        split: {"examples": s["examples"], "shards": len(s["shards"]), "bytes": s["bytes"]}
        for split, s in manifest["splits"].items()
    }
    return Summary(manifest["dataset"], path, splits, seconds, from_fields(manifest), manifest["warnings"])


def run_identity(
    converter: Converter, options: RunOptions, plan: dict[str, list[Hashable]], inputs: InputFiles | None = None
) -> dict[str, Any]:
    """What shapes a run's output: a resumed run must match the interrupted one in all of it."""
    planned = _plan_digest(converter, plan, options.workers)
    identity = {
        "tool_version": __version__,
        "converter": converter.command,
        "options": {**options.recorded(), "name": options.name or converter.dataset_name, **converter.options()},
        "sources": converter.sources(),
        "items": {"splits": {split: len(items) for split, items in plan.items()}, "sha256": planned},
        "batch": converter.chunk_size,
    }
    if inputs is not None:
        identity["inputs"] = {"files": len(inputs.names), "sha256": inputs.digest()}
    return identity


# The item files are stat'ed on forked processes in parts of at least this many files.
STATS_PER_PROCESS = 200_000


def input_files(converter: Converter, plan: dict[str, list[Hashable]], workers: int) -> InputFiles | None:
    """The stats of the files the plan's items are read from, in plan order (None where
    items are not files)."""
    roots = converter.roots()
    items = [item for split in sorted(plan) for item in plan[split]]
    if not roots or not items or converter.item_file(items[0]) is None:
        return None
    names = [converter.item_file(item) or "" for item in items]
    parts = min(workers, len(names) // STATS_PER_PROCESS)
    return InputFiles.of(roots[0], names, lambda fill, n: _joined_parts(converter, fill, n, parts))


PLAN_BLOCK = 4096  # items per block of the plan's digest
# The blocks are hashed on forked processes in parts of at least this many items (a
# smaller plan is hashed here: forking would cost more than it saves).
DIGEST_ITEMS_PER_PROCESS = 200_000


def _plan_digest(converter: Converter, plan: dict[str, list[Hashable]], workers: int) -> str:
    """sha256 of each split's name, each followed by the sha256 of each block of its
    items: the blocks have a fixed size, so any number of processes hashing them in parts
    gives the same digest."""
    import hashlib
    import marshal

    splits = sorted(plan.items(), key=lambda kv: kv[0])
    blocks = [(items, start) for _, items in splits for start in range(0, len(items), PLAN_BLOCK)]

    def fill(lo: int, hi: int) -> bytes:
        digests = []
        for items, start in blocks[lo:hi]:
            block = items[start : start + PLAN_BLOCK]
            try:
                # marshal's version 2 writes equal values as equal bytes (no references, no
                # interning flags), several times faster than repr; it is only compared
                # with a run of the same tool on the same machine (the journal's)
                data = marshal.dumps(block, 2)
            except ValueError:  # a type marshal does not know
                data = repr(block).encode()
            digests.append(hashlib.sha256(data).digest())
        return b"".join(digests)

    parts = min(workers, sum(map(len, plan.values())) // DIGEST_ITEMS_PER_PROCESS)
    block_digests = memoryview(_joined_parts(converter, fill, len(blocks), parts))
    digest, at = hashlib.sha256(), 0
    for split, items in splits:
        size = 32 * -(-len(items) // PLAN_BLOCK)  # a sha256 per block, the last one short
        digest.update(repr(split).encode())
        digest.update(block_digests[at : at + size])
        at += size
    return digest.hexdigest()


def _resume(out: Output, name: str, file_format: str, container: containers.Container) -> tuple[list, Progress]:
    """The journal entries whose shards are still there, whole (size, sha256 and record
    count checked), and what they say was finished; the rest of the build is removed."""
    entries = out.entries
    kept: list = []
    counts: dict[str, int] = {}
    for entry, _ in entries:
        counts[entry["split"]] = counts.get(entry["split"], 0) + (1 if "shard" in entry else 0)
    index: dict[str, int] = {}
    files = set()
    for entry, end in entries:
        if "shard" in entry:
            shard = ShardEntry(**entry["shard"])
            split = entry["split"]
            i = index[split] = index.get(split, -1) + 1
            found = _find_shard(out, shard, ShardName(name, split, i, counts[split], file_format).filename, container)
            if found is None:
                break
            entry["shard"]["file"] = found
            files.add(found)
        kept.append((entry, end))
    out.keep_only(files)
    progress = replay(kept)
    for shards in progress.shards.values():
        for shard in shards:
            shard.file = fs.join(out.build, shard.file)
    return kept, progress


def _find_shard(out: Output, shard: ShardEntry, final_name: str, container: containers.Container) -> str | None:
    """Where a journaled shard is now (under its temporary name, or its final one if
    a commit had begun), if it is whole: its size and sha256 as journaled, and the
    records the journal counts in it (read back: the journal is not believed alone)."""
    for candidate in (shard.file, final_name):
        path = fs.join(out.build, candidate)
        if out.whole(path, shard) and _holds(container, path, shard.records):
            return candidate
    return None


def _holds(container: containers.Container, path: str, records: int) -> bool:
    try:
        return container.count(path) == records
    except (RecordError, OSError):
        return False


def finish(
    converter: Converter,
    options: RunOptions,
    out: Output,
    results: list[SplitResult],
    observations: Counter[Hashable],
    skipped: Skips,
    found_warnings: list[str],
    started: float,
) -> Summary:
    """After every shard is written (by either engine): name the shards, write the
    metadata and commit the directory."""
    name = options.name or converter.dataset_name
    out.sync()  # every shard in place before anything reads one back (index files) or commits
    # may refine features, or refuse (e.g. mixed shapes for raw), or have a word on the whole run
    found_warnings = [*found_warnings, *(converter.finish(observations) or [])]
    out.name_shards(results, name, options.file_format)
    description = converter.description
    if options.compression != "none":  # the metadata stays whole (load() and tfr-inspect use it); TFDS is told
        found_warnings = [*found_warnings, compressed_note(options.compression)]
        description = f"{compressed_note(options.compression)} {description}"
    files = _index_files(results) if options.index else {}
    files |= metadata_files(
        name=name,
        converter=converter.command,
        description=description,
        file_format=options.file_format,
        features=converter.features,
        labels=converter.labels,
        options={**options.recorded(), "name": name, **converter.options()},
        sources=converter.sources(),
        results=results,
        skipped=skipped,
        warnings=found_warnings,
        nested=converter.nested_features,
        extra=converter.extra_files(),
    )
    with fs.naming(out.build):
        out.commit(results, files)
    splits = {r.split: {"examples": r.records, "shards": len(r.shards), "bytes": r.bytes} for r in results}
    return Summary(name, options.out, splits, time.perf_counter() - started, skipped, found_warnings)


def _index_files(results: list[SplitResult]) -> dict[str, bytes]:
    tfrecord = containers.get("tfrecord")
    return {f"{s.final_name}.index": tfrecord.index_lines(s.tmp_path) for r in results for s in r.shards}


def _joined_parts(converter: Converter, fill: Callable[[int, int], bytes], n: int, parts: int) -> bytes:
    """fill(0, n), computed in `parts` parts on forked processes where that is worth it and
    allowed; here for one part, where no fork is allowed, or when a child failed (its
    error is then raised here, as itself)."""
    found = forked_parts(parts)(fill, n) if parts > 1 and _can_fork(converter) else None
    return fill(0, n) if found is None else b"".join(found)


# A split's ranks are computed in this many items per forked process at most (fewer
# items are ranked here: forking would cost more than it saves).
RANKS_PER_PROCESS = 50_000


def _ranks_in_parts(converter: Converter, workers: int) -> splitting.Ranker:
    """splits.rank_bytes, run in parts on forked processes for a large split: ranks are
    a pure function of each item's key, so the parts join into the same bytes."""

    def ranks(items: Sequence[Hashable], key: Callable[[Hashable], str], seed: int, purpose: str) -> bytes:
        def part(lo: int, hi: int) -> bytes:
            return splitting.rank_bytes(items[lo:hi], key, seed, purpose)

        return _joined_parts(converter, part, len(items), min(workers, len(items) // RANKS_PER_PROCESS))

    return ranks


def plan_splits(converter: Converter, options: RunOptions) -> dict[str, list[Hashable]]:
    plan = splitting.assign(
        converter.source_splits(),
        converter.key,
        seed=options.seed,
        shuffle=options.shuffle,
        validation_size=options.validation_size,
        ranker=_ranks_in_parts(converter, options.workers),
    )
    if options.limit is not None:  # after splitting and shuffling: a sample of every split, not its source order
        plan = {split: items[: options.limit] for split, items in plan.items()}
    return plan


DRY_RUN_SAMPLE = 16  # items encoded per split to estimate the sizes a dry run reports


def dry_run(converter: Converter, options: RunOptions) -> dict[str, Any]:
    """What a run would write, per split (examples, shards, estimated bytes), from the
    plan and a few encoded items; nothing is written. The inputs were already listed
    and checked when the converter was made."""
    container = options.container()
    plan = plan_splits(converter, options)
    splits = {}
    for split, items in plan.items():
        sample = encode_sealed(converter, items[:DRY_RUN_SAMPLE], options.on_error, container).sizes
        mean = sum(sample) / len(sample) if sample else 0
        cuts = ShardCutter(len(items), options.policy).cut([round(mean)] * len(items)) if items else []
        splits[split] = {"examples": len(items), "shards": sum(closes for _, _, closes in cuts),
                         "estimated_bytes": round(mean * len(items))}  # fmt: skip
    return {"name": options.name or converter.dataset_name, "out": options.out, "format": options.file_format,
            "splits": splits, "skipped": converter.skipped.total, "warnings": list(converter.warnings)}  # fmt: skip
