"""General I/O helpers for reading untrusted input: bounded reads, hashing readers."""

from __future__ import annotations

import hashlib
from typing import BinaryIO

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
    """A read-only file that keeps the sha256 and size of everything read through it."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.hash = hashlib.sha256()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self.hash.update(data)
        self.size += len(data)
        return data

    def readinto(self, buf) -> int:  # lets io.BufferedReader and gzip wrap it
        n = self._f.readinto(buf)
        self.hash.update(memoryview(buf)[:n])
        self.size += n
        return n

    def readable(self) -> bool:
        return True

    def drain(self) -> None:
        """Read to the end, so that `hash` covers the whole file."""
        while self.read(1 << 20):
            pass
