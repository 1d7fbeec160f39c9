"""The local engine: items -> encode (inline or on N processes) -> ordered write -> metadata.

The engine makes every execution choice, so that converters only describe data:
- inline or a pool: a converter whose batches come column-wise (`columns_of`)
  is encoded in this process, since the encoding is one numpy pass and worker
  processes would only add the copying of every record; others use `--workers`
  processes.
- fork or spawn: fork shares the converter's arrays copy-on-write; spawn when the
  converter reads remote paths (through TensorFlow, which does not survive fork)
  or when threads other than this one are alive (a forked child inherits their
  locks in whatever state they were).
- the converter's background loading is settled (its threads joined) first.

With --workers N, N-1 worker processes encode batches and seal them for the
container, and so does the parent whenever the oldest batch has not come back
yet (it would only wait); it takes the batches in order and alone decides shard
boundaries and writes. A bounded window of batches in flight keeps memory flat
however many items there are, and because order and boundaries are decided in
one place the output is byte-identical for any worker count.

Where a split's shard boundaries are planned before encoding (engine/planned.py)
and it has a shard for every worker, N worker processes write whole shards instead
(engine/whole_shards.py) and the parent only journals them: the boundaries were
decided in one place already, so the bytes are the same.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import containers
from ..converters.base import Columns, Converter
from ..errors import Interrupted, OutputError, WorkerLost, signal_number
from ..output.base import Output
from ..output.journal import Progress, Tally
from ..output.opening import open_output
from ..output.shards import Checkpoint, ShardFile, ShardPolicy, SplitResult, SplitWriter
from ..storage import fs, pooled_writes
from ..storage.pooled_writes import WritePool
from .core import (
    Summary,
    already_appended,
    appended_to,
    commit_with_metadata,
    committed_summary,
    encode_sealed,
    output_name,
    plan_splits,
)
from .encode import Encoded
from .planned import split_policies
from .resume import input_files, kept_work, run_identity
from .run_options import RunOptions
from .whole_shards import WholeShard, WrittenShard, tasks, write_whole_shard

if TYPE_CHECKING:
    from .workers import Workers

from .workers import can_fork, main_not_rerun

WINDOW_PER_WORKER = 4  # batches in flight per worker


# ---------------------------------------------------------------- encoding


class WorkerJob(NamedTuple):
    """What a worker process encodes with, set once when it starts (`_init_worker`)."""

    converter: Converter
    on_error: str
    container: containers.Container
    plan: dict[str, list[Hashable]] | None  # the plan, where it came with the fork (batches are then _Spans)
    compression: str


_worker_job: WorkerJob | None = None  # this worker process's, once started


class _Span(NamedTuple):
    """A batch named by where it lies in the plan, for workers that were forked with it:
    a few numbers cross the pipe instead of every item."""

    split: str
    start: int
    stop: int


def _init_worker(
    converter: Converter,
    on_error: str,
    container: containers.Container,
    plan: dict[str, list[Hashable]] | None,
    compression: str,
) -> None:
    global _worker_job
    _worker_job = WorkerJob(converter, on_error, container, plan, compression)


def _encode_in_worker(batch: Sequence[Hashable] | _Span | WholeShard) -> Encoded | WrittenShard:
    import pickle

    job = _worker_job
    assert job is not None
    if isinstance(batch, WholeShard):  # (only forked workers, which hold the plan, are sent these)
        assert job.plan is not None
        items = job.plan[batch.split][batch.start : batch.stop]
        return write_whole_shard(job.converter, items, job.container, job.compression, batch.path)
    if isinstance(batch, _Span):
        assert job.plan is not None
        batch = job.plan[batch.split][batch.start : batch.stop]
    encoded = encode_sealed(job.converter, batch, job.on_error, job.container)
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

    def encode_in_parent(batch: Sequence[Hashable] | _Span) -> Encoded:
        if isinstance(batch, _Span):
            batch = items[batch.start : batch.stop]
        return encode_sealed(converter, batch, options.on_error, container)

    yield from pool.ordered(batches, WINDOW_PER_WORKER * options.workers, encode_in_parent)


def _runs_inline(converter: Converter, plan: dict[str, list[Hashable]], workers: int) -> bool:
    """Whether batches are encoded here alone: one worker, one batch, or groups of near-identical
    examples (a template and a numpy copy per batch: cheaper than sending the batch
    back from a worker). Rows encoded column by column cost more: workers share them."""
    if workers <= 1 or sum(len(items) for items in plan.values()) <= converter.chunk_size:
        return True  # (one batch: nothing for another process to share)
    sample = next((items[:1] for items in plan.values() if items), None)
    return sample is None or isinstance(converter.columns_of(sample), Columns)


def _pool(
    converter: Converter,
    options: RunOptions,
    container: containers.Container,
    plan: dict[str, list[Hashable]],
    forkable: bool,
    whole: bool,
) -> Workers:
    """The worker processes, started now (before this process starts threads: writers,
    bars); forked, they hold the plan (they got it with this process's memory; spawned
    workers would each be sent all of it, so they are sent their batches instead)."""
    import multiprocessing

    from .workers import Workers

    with contextlib.nullcontext() if forkable else main_not_rerun():
        pool = Workers(
            # and this process, which encodes whenever it would wait for them; where shards are
            # written whole, it only journals them
            options.workers if whole else options.workers - 1,
            _encode_in_worker,
            _init_worker,
            (converter, options.on_error, container, plan if forkable else None, options.compression),
            multiprocessing.get_context("fork" if forkable else "spawn"),
        )
    return pool


# Shards a split has at least, for its shards to be written whole by the workers (and
# as many as --workers): with fewer, some processes would have no shard, and spreading
# the encoding of every batch uses them all (a re-encode of a few shards on many cores).
WHOLE_FROM = 2


def _whole_splits(
    options: RunOptions, plan: dict[str, list[Hashable]], policies: dict[str, ShardPolicy], out: Output
) -> set[str]:
    """The splits whose shards the workers write whole (engine/whole_shards.py): those
    whose cuts are planned, with enough shards, unless items may be skipped (the ordered
    writer cuts them by batch) or the output is remote (its uploads are this process's)."""
    if options.on_error != "fail" or fs.is_remote(out.build):
        return set()
    return {
        split
        for split, items in plan.items()
        if len(policies[split].ends(len(items)) or ()) >= max(WHOLE_FROM, options.workers)
    }


POOLED_FROM = 3  # workers from which the shards are written and hashed on a pool of threads


def _write_pool(out: Output, options: RunOptions) -> WritePool | None:
    """Threads that write and hash the shards, with --workers POOLED_FROM or more into a
    local output: one thread hashing every byte would cap what the workers give. With
    fewer, a shard's one helper thread hashes each piece as it writes it, while the piece
    is in the CPU's cache, and keeps up with two processes' encoding: the pool would cost
    a read of every shard back, for cores those two processes use already.
    (Made after the workers fork: a forked child would not have them.)"""
    if options.workers < POOLED_FROM or fs.is_remote(out.build) or not pooled_writes.available():
        return None
    return WritePool(options.workers)


# ---------------------------------------------------------------- run


def run(
    converter: Converter, options: RunOptions, progress: Callable[[int, int], None] | None = None, lock: Any = None
) -> Summary:
    """Convert everything and write the dataset directory atomically.

    `progress(n, total)` is called each time n more of the total examples are written.
    `lock`: the output's, taken by the caller before the converter read its sources
    (output.claimed); else it is taken once the plan is made.
    """
    started = time.perf_counter()
    container = options.container()
    plan = plan_splits(converter, options)
    name = output_name(converter, options)
    append, plan = appended_to(converter, options, plan)
    inputs = input_files(converter, plan, options.workers)
    identity = run_identity(converter, options, plan, inputs)
    if append is not None:
        append.identify(identity)
    if append is not None and append.done_before:
        return already_appended(append, identity, time.perf_counter() - started)
    with open_output(options.out, options.overwrite, options.resume, identity, inputs, lock) as out:
        if out.finished:
            return committed_summary(out.path, time.perf_counter() - started)
        kept = kept_work(out, name, options.file_format, container) if out.resuming else None
        out.journal.open(identity, kept[0] if kept else None, inputs)
        done = kept[1] if kept else Progress()
        converter.planned(plan)  # before workers fork: they share what it lays out
        policies = split_policies(converter, options, plan, inputs, container)
        inline = _runs_inline(converter, plan, options.workers)
        if not inline:
            converter.finish_loading()  # before workers fork, and before threads are looked for
        # whole shards need forked workers: spawned ones do not hold the plan
        shared = not inline and can_fork(converter.input_roots())
        whole = _whole_splits(options, plan, policies, out) if shared else set()
        pool = None if inline else _pool(converter, options, container, plan, shared, bool(whole))
        writes = None if whole == set(plan) else _write_pool(out, options)
        splits = _Splits(converter, options, container, out, done, (pool, shared, whole), writes, progress, policies)
        try:
            results = splits.write(plan)
        except (KeyboardInterrupt, WorkerLost) as e:
            raise _interrupted(e, out.work) from None
        finally:
            out.journal.close()
            if pool is not None:
                pool.close()
            if writes is not None:
                writes.close()
        tally = splits.tally
        summary = commit_with_metadata(
            converter, options, out, results, tally.observations, tally.skipped, tally.warnings, started, plan, append
        )
        if kept is not None:
            summary.resumed = {"kept_shards": sum(len(shards) for shards in done.shards.values())}
        elif options.resume:  # said, not silent: a mistyped --out would otherwise pass unnoticed
            summary.resumed = {"nothing_to_resume": True}
        return summary


def _interrupted(e: KeyboardInterrupt | WorkerLost, work: str | None) -> Interrupted:
    why = str(e) if isinstance(e, WorkerLost) else "interrupted"
    return Interrupted(
        f"{why}; the finished shards are kept in {work}: run the same command "
        "with --resume to finish it, or with --overwrite to start over"
        if work
        else why,
        None if isinstance(e, WorkerLost) else signal_number(e),
    )


class _Splits:
    """A run's writing of its splits, in plan order, from where an interrupted run left
    off (`done`): each split's batches encoded (here or on the workers) and written to
    its shards, each finished shard journaled with what encoding found up to its cut."""

    def __init__(
        self,
        converter: Converter,
        options: RunOptions,
        container: containers.Container,
        out: Output,
        done: Progress,
        workers: tuple[Workers | None, bool, set[str]],
        writes: WritePool | None,
        progress: Callable[[int, int], None] | None,
        policies: dict[str, ShardPolicy],
    ) -> None:
        """`workers`: the pool (None: encoding here alone), whether it holds the plan, and
        the splits whose shards it writes whole (engine/whole_shards.py)."""
        self.converter, self.options, self.container, self.out, self.done = converter, options, container, out, done
        (self.pool, self.shared, self.whole), self.writes, self.progress = workers, writes, progress
        self.policies = policies
        self.tally = Tally()  # the whole run's
        self.tally.skipped.merge(converter.skipped)  # found while listing sources: first
        self.tally.warnings += converter.warnings
        self.tally.merge(done.tally)
        self.pending = Tally()  # what the journal has not yet got
        self.cut_tallies: deque[Tally] = deque()  # what each shard cut and not yet journaled holds
        # the batch being written: its number, its records' observations, and the first
        # of them not yet in a tally of a cut shard
        self.writing: tuple[int, list[Hashable], int] = (-1, [], 0)
        self.total = 0

    def write(self, plan: dict[str, list[Hashable]]) -> list[SplitResult]:
        self.total = sum(len(items) for items in plan.values())
        self._advance(0)
        results = [self._split(split, items) for split, items in plan.items()]
        self.out.journal.flush()
        return results

    def _advance(self, n: int) -> None:
        if self.progress:
            self.progress(n, self.total)

    def _split(self, split: str, items: list[Hashable]) -> SplitResult:
        shards = [ShardFile(e.file, e.records, e.bytes, e.sha256) for e in self.done.shards.get(split, [])]
        if split in self.done.done:
            self._advance(len(items))
            return SplitResult(split, shards)
        at = self.done.at.get(split, Checkpoint())
        options = self.options

        def journal_shard(shard: ShardFile, where: Checkpoint) -> None:
            found = self._summarized(self.cut_tallies.popleft())
            self.out.journal.shard_done(split, self.out.entry(shard), where, found)

        if split in self.whole:
            return self._write_whole(split, items, at, shards)
        with SplitWriter(
            self.out, split, len(items), self.policies[split], self.container, options.compression,
            at=at, kept=shards, on_shard=journal_shard, on_cut=self._cut, pool=self.writes,
        ) as writer:  # fmt: skip
            if at.cutter != (0, 0, 0):
                self._advance(at.cutter[0] + at.cutter[1])
            self._write_batches(writer, split, items, at)
            result = writer.close()
        self.out.journal.split_done(split, self._summarized(self.pending))
        self.pending.clear()
        return result

    def _write_batches(self, writer: SplitWriter, split: str, items: list[Hashable], at: Checkpoint) -> None:
        """The split's batches from the checkpoint on, each written, its findings counted."""
        batches = _encoded(
            self.converter, items, self.pool, self.options, self.container, at.batch, split if self.shared else None
        )
        for b, encoded in enumerate(batches, at.batch):
            first = at.offset if b == at.batch else 0
            view = memoryview(encoded.blob)[sum(encoded.sizes[:first]) :]
            self.writing = (b, encoded.observations, first)
            writer.write_chunk(view, encoded.sizes[first:], b, first)  # (its cuts take their records' observations)
            self.tally.add(_counted(encoded.observations[first:]), encoded.skipped, encoded.warnings)
            self.pending.add(_counted(encoded.observations[self.writing[2] :]), encoded.skipped, encoded.warnings)
            writer.skip(len(encoded.skipped))
            self._advance(len(encoded.sizes) - first + len(encoded.skipped))

    def _write_whole(self, split: str, items: list[Hashable], at: Checkpoint, kept: list[ShardFile]) -> SplitResult:
        """The split's shards from the checkpoint on, each written whole by a worker
        (engine/whole_shards.py), journaled in order as SplitWriter would."""
        assert self.pool is not None
        ends = self.policies[split].ends(len(items))
        assert ends is not None
        written, skipped, split_bytes = at.cutter
        self._advance(written + skipped)
        result = SplitResult(split, list(kept))
        label = len(kept)
        todo = tasks(split, ends, written + skipped, lambda i: self.out.temp_path(f"{split}-{label + i:05d}"))
        # two shards a worker: one being written, the next waiting its turn; the shards
        # are about equal, so taking turns shares them out evenly
        done = self.pool.ordered(iter(todo), 2 * self.options.workers)
        chunk = self.converter.chunk_size
        for task, shard in zip(todo, done, strict=True):
            result.shards.append(ShardFile(task.path, shard.records, shard.bytes, shard.sha256))
            split_bytes += shard.record_bytes
            found = Tally()
            found.add(shard.observations, [], shard.warnings)
            self.tally.merge(found)
            batch = (task.stop - 1) // chunk  # where SplitWriter would say the next shard begins
            where = Checkpoint(batch, task.stop - batch * chunk, (task.stop, 0, split_bytes))
            self.out.journal.shard_done(split, self.out.entry(result.shards[-1]), where, found)
            self._advance(task.stop - task.start)
        wrote = written + sum(s.records for s in result.shards[len(kept) :])
        if wrote != len(items):
            raise OutputError(f"split {split}: wrote {wrote} examples, expected {len(items)}")
        self.out.journal.split_done(split, self.pending)
        return result

    def _summarized(self, tally: Tally) -> Tally:
        """The tally as journaled: with only the observations the converter's `finish` needs."""
        return Tally(self.converter.summarized(tally.observations), tally.skipped, tally.warnings)

    def _cut(self, where: Checkpoint) -> None:
        """A shard was cut: what encoding found so far is its, for when it is journaled:
        the observations of the records before the cut in the batch being written too (a
        resumed run counts that batch's from the cut on). Its skipped items and warnings
        go with the next shard: a resumed run finds them again when it encodes the batch."""
        batch, observations, counted_from = self.writing
        if where.batch == batch and where.offset > counted_from:
            self.pending.add(_counted(observations[counted_from : where.offset]), [], [])
            self.writing = (batch, observations, where.offset)
        self.cut_tallies.append(Tally())
        self.cut_tallies[-1].merge(self.pending)
        self.pending.clear()


def _counted(observations: list[Hashable]) -> Counter[Hashable]:
    observed = Counter(observations)  # counted in C
    observed.pop(None, None)
    return observed
