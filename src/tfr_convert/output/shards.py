"""Shards: how records are cut into them, and how a split's shards are written.

(Their names are naming.py's.)
- `ShardPolicy` decides where one shard ends and the next begins.
- `ShardCutter` decides, from record sizes alone, where each shard ends.
- `SplitWriter` writes one split's records to temporary files through a
  container's writer, and says where each finished shard leaves off (for the
  resume journal); the final names (which need the shard count) are given only
  at commit (base.py's `Output.name_shards`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import IO, TYPE_CHECKING, Protocol

from ..containers import Container, ShardFileWriter
from ..errors import OutputError
from ..storage import fs

if TYPE_CHECKING:
    from ..storage.pooled_writes import WritePool

DEFAULT_SHARD_SIZE = 64 << 20  # bytes: TFDS's lower bound for a shard


@dataclass
class Checkpoint:
    """Where a split's next shard begins: batch `batch` of the split, its record
    `offset` (records before it are in finished shards), and the cutter's counters."""

    batch: int = 0
    offset: int = 0
    cutter: tuple[int, int, int] = (0, 0, 0)  # records written, skipped, bytes of the split so far


class ShardDestination(Protocol):
    """Where a split's shard files go (an output.Output): a temporary path for each, and
    how to open one for writing."""

    def temp_path(self, label: str) -> str: ...

    def opener(self, path: str) -> IO[bytes]: ...


# ---------------------------------------------------------------- policy


@dataclass(frozen=True)
class ShardPolicy:
    """Exactly one of the three is used; none given means shard_size=64 MiB.

    - num_shards: that many shards per split (fewer if the split is smaller),
      with counts differing by at most one.
    - examples_per_shard: every shard but the last holds exactly that many.
    - shard_size: shards of at least this many (framed, uncompressed) bytes:
      a shard closes once it holds that much, unless what remains of the split
      (estimated from the mean record so far) would be smaller, in which case
      the rest joins it. Small data therefore gives one shard.

    `cuts` is no user's choice: where each shard of one split ends (positions among its
    planned items), fixed before encoding from planned sizes (`planned`), so that any
    process can write any shard.
    """

    num_shards: int | None = None
    examples_per_shard: int | None = None
    shard_size: int | None = None
    cuts: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        given = [v for v in (self.num_shards, self.examples_per_shard, self.shard_size) if v is not None]
        if len(given) > 1:
            raise ValueError("give at most one of --num-shards, --examples-per-shard, --shard-size")
        if any(v < 1 for v in given):
            raise ValueError("--num-shards, --examples-per-shard and --shard-size must be positive")

    @property
    def by_size(self) -> bool:
        """Whether shards are cut by bytes (--shard-size, the default), not by counts."""
        return self.num_shards is None and self.examples_per_shard is None

    def describe(self) -> dict[str, int]:
        if self.num_shards is not None:
            return {"num_shards": self.num_shards}
        if self.examples_per_shard is not None:
            return {"examples_per_shard": self.examples_per_shard}
        return {"shard_size": self.shard_size or DEFAULT_SHARD_SIZE}

    def closes_after(self, written: int, total: int, shard_records: int, shard_bytes: int, split_bytes: int) -> bool:
        """Whether the current shard ends after `written` records of `total`."""
        if written >= total:
            return True
        if self.cuts is not None:
            at = bisect_left(self.cuts, written)
            return at < len(self.cuts) and self.cuts[at] == written
        if self.num_shards is not None:
            n = min(self.num_shards, total)
            # shard k holds records [k*total//n, (k+1)*total//n): record written-1 is in shard k
            k = (written * n - 1) // total
            return written == (k + 1) * total // n
        if self.examples_per_shard is not None:
            return shard_records >= self.examples_per_shard
        target = self.shard_size or DEFAULT_SHARD_SIZE
        remaining_estimate = (total - written) * split_bytes / written
        return shard_bytes >= target and remaining_estimate >= target

    def records_until_close(
        self, written: int, total: int, shard_records: int, shard_bytes: int, split_bytes: int, sizes: list[int]
    ) -> int | None:
        """How many of the next records (sizes given) the current shard takes before it
        closes, or None if it stays open through all of them.

        Exactly what calling closes_after record by record would decide, without the
        per-record Python call: arithmetic for counts, a cumulative sum for sizes.
        """
        n = len(sizes)
        if not n:
            return None
        to_end = total - written  # the split's last record always closes the shard
        if self.cuts is not None:
            at = bisect_right(self.cuts, written)
            needed = min(self.cuts[at] if at < len(self.cuts) else total, total) - written
        elif self.num_shards is not None:
            shards = min(self.num_shards, total)
            k = ((written + 1) * shards - 1) // total  # the shard of record `written`, the next
            needed = min((k + 1) * total // shards, total) - written
        elif self.examples_per_shard is not None:
            needed = min(self.examples_per_shard - shard_records, to_end)
        else:
            target = self.shard_size or DEFAULT_SHARD_SIZE
            cumulative = list(accumulate(sizes))
            j = bisect_left(cumulative, target - shard_bytes)  # first record with shard_bytes >= target
            needed = None
            while j < n:
                w = written + j + 1
                if w >= total or (total - w) * (split_bytes + cumulative[j]) / w >= target:
                    needed = j + 1
                    break
                j += 1
            if needed is None:
                needed = to_end
        needed = max(needed, 1)
        return needed if needed <= n else None

    def ends(self, total: int) -> list[int] | None:
        """Where each of a split's shards ends (positions among its `total` planned items,
        skipped ones counted), where that is known before encoding; else None."""
        if self.cuts is not None:
            return list(self.cuts)
        if self.num_shards is not None:
            n = min(self.num_shards, total)
            return [(k + 1) * total // n for k in range(n)]
        return None

    def planned(self, sizes: list[int]) -> ShardPolicy:
        """This --shard-size policy with one split's cuts fixed from `sizes`, the bytes
        each of its items is planned to take: the cuts the cutter makes of those sizes."""
        assert self.by_size
        ends, at = [], 0
        for count, _, closes in ShardCutter(len(sizes), self).cut(sizes):
            at += count
            if closes:
                ends.append(at)
        return replace(self, cuts=tuple(ends))


# ---------------------------------------------------------------- output directory


@dataclass
class ShardFile:
    tmp_path: str
    records: int
    bytes: int
    sha256: str
    final_name: str = ""
    # a shard of the version an --append adds to (`tmp_path` its file there): it stays
    # there, and the new version gets the same bytes under its own name
    shared: bool = False


@dataclass
class SplitResult:
    split: str
    shards: list[ShardFile] = field(default_factory=list)

    @property
    def records(self) -> int:
        return sum(s.records for s in self.shards)

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.shards)


class ShardCutter:
    """Where one split's shards end, decided from record sizes alone (no I/O).

    `SplitWriter` writes by it, and the Beam engine plans with it from the sizes its
    workers report, so both engines cut a split at the same records.
    """

    def __init__(self, total: int, policy: ShardPolicy, at: tuple[int, int, int] = (0, 0, 0)) -> None:
        """`at`: (records written, skipped, bytes) where a shard began, to go on from there."""
        self.total, self.policy = total, policy
        self.written, self.skipped, self.split_bytes = at
        self.shard_records = self.shard_bytes = 0

    @property
    def state(self) -> tuple[int, int, int]:
        return (self.written, self.skipped, self.split_bytes)

    def cut(self, sizes: list[int]) -> list[tuple[int, int, bool]]:
        """The next records, in runs of (records, bytes, closes the shard): each run
        goes to the open shard (opened by the run if none is), and may close it."""
        runs = []
        at = 0
        while at < len(sizes):
            rest = sizes[at:]
            take = self.policy.records_until_close(
                self.written + self.skipped, self.total, self.shard_records, self.shard_bytes, self.split_bytes, rest
            )
            count = take if take is not None else len(rest)
            nbytes = sum(rest[:count])
            self.written += count
            self.split_bytes += nbytes
            self.shard_records += count
            self.shard_bytes += nbytes
            if take is not None:
                self.shard_records = self.shard_bytes = 0
            runs.append((count, nbytes, take is not None))
            at += count
        return runs

    def skip(self, n: int) -> bool:
        """n planned records will not come (left out under on_error="skip");
        True if that closes the open shard (the split is then complete)."""
        self.skipped += n
        closes = n > 0 and self.written + self.skipped >= self.total and self.shard_records > 0
        if closes:
            self.shard_records, self.shard_bytes = 0, 0
        return closes

    def check_complete(self, split: str) -> None:
        if self.written + self.skipped != self.total:
            raise OutputError(f"split {split}: wrote {self.written} examples, expected {self.total}")


class SplitWriter:
    """Writes one split's sealed records into shards under temporary names, through a container.

    The engine says which batch of the split each chunk is (`write_chunk`'s
    `batch` and `first`, the chunk's first record within it), so that every
    finished shard can be reported to `on_shard` with where the next one
    begins: a resumed run starts there (`kept` shards, `at`).

    With a `pool` (storage/pooled_writes.py) a shard closed is still being written and
    hashed while the next one fills: `on_cut` is told at once where it ends (the records
    it holds are decided), and `on_shard`, in order, once it is written and hashed.
    """

    def __init__(
        self,
        out: ShardDestination,
        split: str,
        total: int,
        policy: ShardPolicy,
        container: Container,
        compression: str,
        *,
        at: Checkpoint | None = None,
        kept: list[ShardFile] | None = None,
        on_shard: Callable[[ShardFile, Checkpoint], None] | None = None,
        on_cut: Callable[[Checkpoint], None] | None = None,
        pool: WritePool | None = None,
    ) -> None:
        self.out, self.split, self.container, self.compression = out, split, container, compression
        at = at or Checkpoint()
        self.cutter = ShardCutter(total, policy, at.cutter)
        self.result = SplitResult(split, list(kept or []))
        self.on_shard, self.on_cut, self.pool = on_shard, on_cut, pool
        self._writer: ShardFileWriter | None = None
        self._shard_records = 0
        self._batch = at.batch - 1  # the last batch written (none yet)
        self._shards = len(self.result.shards)  # opened, finished or not
        self._closing: deque[tuple[ShardFileWriter, int, Checkpoint]] = deque()  # closed, not yet hashed

    def skip(self, n: int) -> None:
        """n planned records will not come (left out under on_error="skip")."""
        if self.cutter.skip(n):
            self._close_shard(self._after_chunk())

    def write_chunk(self, blob: bytes | bytearray | memoryview, sizes: list[int], batch: int, first: int) -> None:
        """Write consecutive sealed records given as one blob and their slot sizes (records
        `first`... of the split's batch `batch`); the records between two shard boundaries
        go to the container's writer in one call."""
        view = memoryview(blob).cast("B")
        written, skipped, split_bytes = self.cutter.state  # (the cutter counts the whole chunk at once)
        start = at = 0
        for count, nbytes, closes in self.cutter.cut(sizes):
            self._append(view[start : start + nbytes], sizes[at : at + count])
            self._shard_records += count
            start += nbytes
            at += count
            if closes:
                self._close_shard(Checkpoint(batch, first + at, (written + at, skipped, split_bytes + start)))
        self._batch = batch
        self._report(wait=False)

    def _append(self, records: memoryview, sizes: list[int]) -> None:
        if self._writer is None:  # opened lazily: an empty split writes no file
            path = self.out.temp_path(f"{self.split}-{self._shards:05d}")
            self._writer = self.container.writer(path, self.compression, self.out.opener, self.pool)
            self._shards += 1
        with fs.naming(self._writer.path):
            self._writer.write(records, sizes)

    def _after_chunk(self) -> Checkpoint:
        """Where a shard closed by what follows a chunk (skips, the split's end) leaves off."""
        return Checkpoint(self._batch + 1, 0, self.cutter.state)

    def _close_shard(self, where: Checkpoint) -> None:
        w = self._writer
        assert w is not None
        with fs.naming(w.path):
            w.close()
        self._closing.append((w, self._shard_records, where))
        self._writer = None
        self._shard_records = 0
        if self.on_cut is not None:
            self.on_cut(where)
        self._report(wait=False)

    def _report(self, wait: bool) -> None:
        """The closed shards whose digest is known (all of them if `wait`), in order: into
        the result, and to `on_shard`."""
        while self._closing and (wait or self._closing[0][0].finished()):
            w, records, where = self._closing.popleft()
            with fs.naming(w.path):
                digest = w.sha256()
            shard = ShardFile(w.path, records, w.bytes_written(), digest)
            self.result.shards.append(shard)
            if self.on_shard is not None:
                self.on_shard(shard, where)

    def __enter__(self) -> SplitWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        # On failure, close the open shard (its helper thread and file) without
        # recording it; the output directory then removes the temporary file.
        if exc_type is not None and self._writer is not None:
            try:
                self._writer.close()
            except (OSError, RuntimeError):
                pass  # the original error is the one to report
            self._writer = None

    def close(self) -> SplitResult:
        if self._writer is not None:
            self._close_shard(self._after_chunk())
        self._report(wait=True)
        self.cutter.check_complete(self.split)
        return self.result
