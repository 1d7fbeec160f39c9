"""Local files written by a pool of threads, each hashed by it once whole.

One thread that writes and sha256-hashes every byte of a run caps a many-core run at
the speed of one core's sha256, however many processes encode. Here the caller hands
a file's pieces in order; each is written at its offset (`os.pwrite`) by whichever
thread of the pool is free, once the file's previous piece is written (two threads
writing one file would only queue on its lock in the kernel, and a piece written
ahead of the one before it leaves a hole the filesystem must fill later), and once
the file is closed one thread reads it back (from the page cache, where it was just
written) to hash it: the closed files of a run are hashed side by side while the next
is written. pwrite, pread and sha256 release the GIL, so the threads use as many
cores as there are files under way.

The caller learns a file's digest when it asks for it (`PooledFile.sha256`), and a
write's error at its next write or then. Memory stays flat: a write waits while
`QUEUED_BYTES` are handed and not yet written (the pieces are the caller's buffers,
held until written). That is a bound on the whole pool, not on each thread: a file's
writes take turns anyway, while the hashes, which read the files back, use the
threads side by side.
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

QUEUED_BYTES = 16 << 20  # handed to the pool and not yet written
READ_BYTES = 1 << 18  # read back at once to hash: stays in the CPU's cache, and small on each thread


class WritePool:
    """`threads` threads that write the pieces of `PooledFile`s and hash them."""

    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(max(1, threads), thread_name_prefix="tfr-convert-write")
        self._room = threading.Condition()
        self._queued = 0
        self._open: set[int] = set()  # descriptors not yet closed by their hash

    def open(self, path: str) -> int:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o666)
        self._open.add(fd)
        return fd

    def write(self, fd: int, piece: memoryview, offset: int, after: Future | None = None) -> Future:
        """Write `piece` at `offset` once `after` (the file's previous write) is done."""
        n = len(piece)
        with self._room:
            while self._queued and self._queued + n > QUEUED_BYTES:
                self._room.wait()
            self._queued += n
        return self._executor.submit(self._write, fd, piece, offset, after)

    def _write(self, fd: int, piece: memoryview, offset: int, after: Future | None) -> None:
        n = len(piece)
        try:
            if after is not None:
                wait([after])
            done = 0
            while done < n:
                done += os.pwrite(fd, piece[done:], offset + done)
        finally:
            del piece  # let go of the caller's buffer before its room is given back
            with self._room:
                self._queued -= n
                self._room.notify_all()

    def digest(self, fd: int, size: int, writes: Sequence[Future]) -> Future:
        """The sha256 of the file's `size` bytes once `writes` are done (they were
        submitted first, so they are running or done when this starts); the file is
        closed after."""
        return self._executor.submit(self._digest, fd, size, writes)

    def _digest(self, fd: int, size: int, writes: Sequence[Future]) -> str:
        try:
            wait(writes)
            for w in writes:
                w.result()  # a write's error is the file's
            return read_sha256(fd, size)
        finally:
            self._open.discard(fd)
            os.close(fd)

    def close(self) -> None:
        """Every write and hash handed so far finishes (or is dropped, if not begun), and
        the files still open are closed."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        for fd in list(self._open):
            self._open.discard(fd)
            os.close(fd)

    def __enter__(self) -> WritePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_sha256(fd: int, size: int) -> str:
    """The sha256 of a file's first `size` bytes, read at their offsets; OSError if the
    file holds fewer."""
    digest = hashlib.sha256()
    buffer = memoryview(bytearray(min(READ_BYTES, max(size, 1))))
    at = 0
    while at < size:
        want = min(len(buffer), size - at)
        if hasattr(os, "preadv"):  # into the one buffer
            n = os.preadv(fd, [buffer[:want]], at)
            piece = buffer[:n]
        else:  # (macOS before 11) a new bytes object a read
            piece = os.pread(fd, want, at)
            n = len(piece)
        if n == 0:
            raise OSError(errno.EIO, f"the file ends at byte {at}, before the {size} bytes written")
        digest.update(piece)
        at += n
    return digest.hexdigest()


def available() -> bool:
    """Whether this system writes at offsets (`os.pwrite`: not on Windows)."""
    return hasattr(os, "pwrite")


class PooledFile:
    """A local file written through a WritePool: pieces in order (`write`), then
    `close`; `sha256()` waits for the digest of what reached the file."""

    def __init__(self, path: str, pool: WritePool) -> None:
        self.path, self._pool = path, pool
        self._fd = pool.open(path)
        self.size = 0
        self._writes: list[Future] = []
        self._digest: Future | None = None

    def write(self, data) -> int:
        self._raise_failed()
        piece = memoryview(data).cast("B")
        if piece:
            after = self._writes[-1] if self._writes else None
            self._writes.append(self._pool.write(self._fd, piece, self.size, after))
            self.size += len(piece)
        return len(piece)

    def _raise_failed(self) -> None:
        """A finished write's error, raised now; finished writes are let go of."""
        while self._writes and self._writes[0].done():
            self._writes.pop(0).result()

    def close(self) -> None:
        if self._digest is None:
            self._digest = self._pool.digest(self._fd, self.size, list(self._writes))
            self._writes = []

    def finished(self) -> bool:
        """Whether the digest is known (or its error): `sha256()` will not wait."""
        return self._digest is not None and self._digest.done()

    def sha256(self) -> str:
        assert self._digest is not None, "closed first"
        return self._digest.result()
