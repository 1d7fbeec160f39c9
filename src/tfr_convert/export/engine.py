"""How an export runs, whatever its target.

The source's records are read here, in order, each CRC checked, and cut into chunks.
A target's `work` turns a chunk into results (parsing, picture files, values), in this
process or on worker processes; the results come back in record order to the target's
other side, which runs here alone and decides everything that depends on the records
before it (repeated names, CSV rows, annotation files, row groups). So the output is
the same for any worker count, and memory holds a bounded window of chunks, not the
dataset.

A record that cannot be exported is a `Failed` result: an error naming the record
(exit 1), or under `--on-error skip` left out and reported, like the byte ranges of a
damaged file that salvage reads past.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SourceError
from ..skips import Skips
from .source import ExportSource

if TYPE_CHECKING:
    from .staging import Staging

CHUNK_RECORDS = 256
CHUNK_BYTES = 8 << 20
WINDOW_PER_WORKER = 4  # chunks in flight per worker


@dataclass(frozen=True)
class Chunk:
    split: str
    start: int  # the place in its split of the first record
    records: list[tuple[str, bytes]]  # (where, payload)


@dataclass(frozen=True)
class Kept:
    """A record's result where its values went into its chunk's result (a row of a table)."""

    where: str


@dataclass(frozen=True)
class Failed:
    """A record that cannot be exported, and why."""

    where: str
    reason: str


class Job(ABC):
    """One target. `work` runs wherever the engine puts it, on a copy of the job made
    before any split began: it may write files of its own (under names no other record
    uses) but keeps no state. Everything else runs in this process, in record order."""

    chunk_bytes = CHUNK_BYTES  # records' bytes in a chunk (at most CHUNK_RECORDS records)
    #: whether its work on a record is worth sending the record to a worker process and
    #: its result back; one that only lays bytes out again (webdataset's tars) is faster
    #: here alone, so its default is one process (--workers still spreads it)
    parallel = True

    @abstractmethod
    def work(self, chunk: Chunk) -> tuple[list[Any], Any]:
        """(one result per record, a `Failed` for a record left out; a result for the
        chunk as a whole or None)."""

    def in_worker(self) -> None:
        """This copy of the job runs `work` in a worker process: its results go back
        through a pipe (pickled: no views of the records' bytes)."""
        return None

    def begin(self, split: str) -> None:
        """A split's first chunk comes next."""
        return None

    @abstractmethod
    def take(self, split: str, where: str, result: Any) -> str | None:
        """Keep a record's result; the reason when it must be left out (its file name
        repeats one written before)."""

    def take_chunk(self, split: str, result: Any) -> None:
        """Keep a chunk's result (after its records')."""
        return None

    def end(self, split: str) -> dict[str, Any]:
        """The split is done: what the summary says of it, besides its record count."""
        return {}

    def close(self) -> None:
        """Let go of what is open (a file being written), after the last split or an error."""
        return None


def chunks(
    source: ExportSource, split: str, limit: int | None, skips: Skips | None, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[Chunk]:
    """The split's first `limit` sound records in chunks of bounded count and size; what
    salvage leaves out is reported to `skips`."""
    records: list[tuple[str, bytes]] = []
    start = size = 0
    for where, payload in source.records(split, skips):
        if limit is not None and start + len(records) >= limit:
            break
        records.append((where, payload))
        size += len(payload)
        if len(records) >= CHUNK_RECORDS or size >= chunk_bytes:
            yield Chunk(split, start, records)
            start += len(records)
            records, size = [], 0
    if records:
        yield Chunk(split, start, records)


@dataclass
class ExportOptions:
    workers: int | None = 1  # None: every core for a job whose work is worth it, else 1
    limit: int | None = None  # records per split
    skips: Skips | None = None  # where records left out are reported (--on-error skip); None: they are errors
    progress: Callable[[int], None] | None = None  # called with each count of records done
    fork: bool = True  # whether workers may be forked (not under a client whose threads would not survive it)
    dry_run: bool = False  # check the first DRY_RUN_SAMPLE records of each split, write nothing


DRY_RUN_SAMPLE = 16


def run(source: ExportSource, job: Job, options: ExportOptions) -> dict[str, dict[str, Any]]:
    """Export every split through `job`; {split: {records, ...what job.end says}}. A dry
    run counts the records (by the containers' cheapest count) and runs the job on a
    sample: {split: {records, checked, ...}}."""
    limit, workers, skips, progress = options.limit, options.workers, options.skips, options.progress
    if workers is None:
        from ..engine.run_options import default_workers

        workers = default_workers() if job.parallel else 1
    if options.dry_run:
        limit, workers = min(limit or DRY_RUN_SAMPLE, DRY_RUN_SAMPLE), 1
    pool = _pool(job, workers, options.fork) if workers > 1 else None
    written: dict[str, dict[str, Any]] = {}
    try:
        for split in source.splits:
            job.begin(split)
            count = 0
            tasks = chunks(source, split, limit, skips, job.chunk_bytes)
            results = map(job.work, tasks) if pool is None else pool.ordered(tasks, WINDOW_PER_WORKER * workers)
            for chunk_results, whole in results:
                for result in chunk_results:
                    if not isinstance(result, Failed):
                        reason = job.take(split, result.where, result)
                        result = Failed(result.where, reason) if reason else None
                    if result is not None:
                        if skips is None:
                            raise SourceError(f"{result.where}: {result.reason}")
                        skips.add(result.where, result.reason)
                    else:
                        count += 1
                job.take_chunk(split, whole)
                if progress is not None:
                    progress(len(chunk_results))
            written[split] = {"records": count, **job.end(split)}
            if options.dry_run:
                total = source.count(split)
                written[split].update(records=min(total, options.limit or total), checked=count)
    finally:
        if pool is not None:
            pool.close()
    return written


def run_staged(source: ExportSource, out: str, options: ExportOptions, make_job: Callable[[Staging], Job]) -> dict:
    """`run` of the job `make_job` makes on a staging area of `out`, whose files are put in
    place once every split is written (none on a dry run)."""
    from .staging import staged

    with staged(out, options.dry_run) as staging:
        job = make_job(staging)
        try:
            written = run(source, job, options)
        finally:
            job.close()
        staging.commit()
    return written


# ---------------------------------------------------------------- worker processes

_job: Job | None = None  # the worker process's copy


def _init_worker(job: Job) -> None:
    global _job
    job.in_worker()
    _job = job


def _work(chunk: Chunk) -> tuple[list[Any], Any]:
    assert _job is not None
    return _job.work(chunk)


def _pool(job: Job, workers: int, fork: bool) -> Any:
    import multiprocessing

    from ..engine.workers import Workers, may_fork

    context = multiprocessing.get_context("fork" if fork and may_fork() else "spawn")
    return Workers(workers, _work, _init_worker, (job,), context)
