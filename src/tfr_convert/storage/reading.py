"""General I/O helpers for reading untrusted input: bounded reads, hashing readers."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, BinaryIO

# read_up_to reads in pieces of at most this size, so that a corrupt length
# (an idx header's, say) costs at most what the file really holds.
_READ_PIECE = 16 << 20


def read_up_to(stream: BinaryIO, n: int) -> bytes:
    """Up to n bytes (fewer only at end of stream), read in pieces so that a
    lying length or header costs what the stream holds, never n."""
    first = stream.read(min(n, _READ_PIECE))
    if len(first) == n or len(first) < min(n, _READ_PIECE):
        return first
    parts, got = [first], len(first)
    while got < n:
        piece = stream.read(min(_READ_PIECE, n - got))
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts)


class HashingReader:
    """A read-only file that keeps the sha256 and size of everything read through it.

    `hash_on`, when given, runs each `hash.update` instead of calling it here: an
    executor's submit with one worker thread, which keeps the pieces in order, so
    that the hashing (which releases the GIL) overlaps with whatever parses the
    bytes. The digest then waits for that worker. `peek` lets a parser (the C
    unpickler) look ahead without a call per small read.
    """

    def __init__(self, f: BinaryIO, hash_on: Callable[..., Any] | None = None) -> None:
        self._f = f
        self.hash = hashlib.sha256()
        self.size = 0
        self._hash_on = hash_on

    def _hashed(self, data: bytes) -> bytes:
        if self._hash_on is None:
            self.hash.update(data)
        else:
            self._hash_on(self.hash.update, data)  # bytes are immutable: the worker may take its time
        self.size += len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        return self._hashed(self._f.read(n))

    def readline(self, limit: int = -1) -> bytes:
        return self._hashed(self._f.readline(limit))

    def peek(self, n: int = 0) -> bytes:
        return self._f.peek(n)  # type: ignore[attr-defined]

    def readinto(self, buf) -> int:  # lets io.BufferedReader and gzip wrap it
        n = self._f.readinto(buf)
        piece = memoryview(buf)[:n]
        if self._hash_on is None:
            self.hash.update(piece)
            self.size += n
        else:  # the caller reuses buf: the worker gets a copy
            self._hashed(bytes(piece))
        return n

    def readable(self) -> bool:
        return True

    def drain(self) -> None:
        """Read to the end, so that `hash` covers the whole file."""
        while self.read(1 << 20):
            pass
