"""TFRecord framing: write and read records, masked CRC32C, gzip / zlib.

A record on disk (after decompression) is

    uint64 length (LE) | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)

with masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8 (mod 2**32). The writer's
bytes equal `tf.io.TFRecordWriter`'s; the reader checks both CRCs and says exactly
which record, at which byte offset, is broken, where TensorFlow's reader crashes
on an absurd length or silently drops a few trailing bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import queue
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import google_crc32c

from .errors import RecordError

COMPRESSIONS = ("none", "gzip", "zlib")
HEADER_SIZE = 12  # length (8) + length CRC (4)
FOOTER_SIZE = 4
# TensorFlow's writers use zlib's default level for both gzip and zlib.
_COMPRESS_LEVEL = 6
# Payloads of compressed files are read in pieces of at most this size, so a
# corrupt length field costs at most what the file really holds, never the
# length it claims.
_READ_PIECE = 16 << 20

_u32 = struct.Struct("<I")
_u64 = struct.Struct("<Q")


def masked_crc(data: bytes | memoryview) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    """The CRC32C a masked CRC was made from (the inverse of the rotate-and-add)."""
    rotated = (masked - 0xA282EAD8) & 0xFFFFFFFF
    return ((rotated << 15) | (rotated >> 17)) & 0xFFFFFFFF


def frame(data: bytes) -> bytes:
    """One record exactly as `tf.io.TFRecordWriter` puts it on disk (uncompressed)."""
    header = _u64.pack(len(data))
    return header + _u32.pack(masked_crc(header)) + data + _u32.pack(masked_crc(data))


# ---------------------------------------------------------------- writing


class _ZlibWriter(io.RawIOBase):
    """A write-only zlib stream, the format of TF's `compression_type='ZLIB'`."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._z = zlib.compressobj(_COMPRESS_LEVEL)

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        self._raw.write(self._z.compress(data))
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._raw.write(self._z.flush())
        super().close()


def open_compressed_writer(raw: BinaryIO, compression: str) -> BinaryIO:
    """Wrap a binary file for writing; `close()` of the wrapper leaves `raw` open."""
    if compression == "none":
        return raw
    if compression == "gzip":
        # mtime=0 and no file name keep the gzip header, and so the shard, reproducible.
        return gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=_COMPRESS_LEVEL, mtime=0)
    if compression == "zlib":
        return _ZlibWriter(raw)  # type: ignore[return-value]
    raise ValueError(f"unknown compression {compression!r}; expected one of {COMPRESSIONS}")


class _HashingFile:
    """A write-only file that keeps the sha256 of what reaches the disk.

    Hashing and writing both release the GIL, so they run on a helper thread and
    overlap with the framing of the next records; one queue keeps their order.
    A write error surfaces at the next write or at close.
    """

    def __init__(self, path: str) -> None:
        self._f = open(path, "wb")
        self.hash = hashlib.sha256()
        self._queue: queue.Queue = queue.Queue(maxsize=8)  # bounds what waits in memory
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while (data := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self.hash.update(data)
                    self._f.write(data)
                except OSError as e:
                    self._error = e

    def write(self, data) -> int:
        if self._error is not None:
            raise self._error
        self._queue.put(data)
        return len(data)

    def flush(self) -> None:
        pass  # the helper thread writes everything before close() returns

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        self._f.close()
        if self._error is not None:
            raise self._error


class RecordWriter:
    """Writes framed records to a path; a context manager.

    `sha256()` is the digest of the file as written to disk.
    """

    def __init__(self, path: str, compression: str = "none") -> None:
        self.path = path
        self._raw = _HashingFile(path)
        self._out = open_compressed_writer(self._raw, compression)  # type: ignore[arg-type]

    def write(self, data: bytes) -> None:
        self._out.write(frame(data))

    def write_framed(self, framed: bytes | memoryview) -> None:
        """Write records that were framed elsewhere (e.g. in a worker process)."""
        self._out.write(framed)

    def close(self) -> None:
        if self._out is not self._raw:
            self._out.close()
        self._raw.close()

    def sha256(self) -> str:
        return self._raw.hash.hexdigest()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class Record:
    index: int
    offset: int  # of the record's header, in the uncompressed stream
    data: bytes


def detect_compression(head: bytes) -> str:
    """Guess a file's compression from its first bytes.

    A valid plain header wins (its CRC proves it), then the gzip magic, then a
    zlib header; anything else is read as plain so the reader can report the
    broken header precisely.
    """
    if len(head) >= HEADER_SIZE and masked_crc(head[:8]) == _u32.unpack_from(head, 8)[0]:
        return "none"
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and (head[0] << 8 | head[1]) % 31 == 0:
        return "zlib"
    return "none"


class _ZlibReader(io.RawIOBase):
    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._z = zlib.decompressobj()
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while not self._pending:
            if self._z.eof:
                return 0
            chunk = self._z.unconsumed_tail or self._raw.read(1 << 16)
            if not chunk:
                raise EOFError("zlib stream ended before its end-of-stream marker")
            self._pending = self._z.decompress(chunk, 1 << 20)
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def _open_reader(raw: BinaryIO, compression: str) -> BinaryIO:
    if compression == "none":
        return raw
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if compression == "zlib":
        return io.BufferedReader(_ZlibReader(raw), 1 << 20)  # type: ignore[return-value]
    raise ValueError(f"unknown compression {compression!r}; expected one of {COMPRESSIONS}")


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


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a file: where the damaged record starts, and what is wrong."""

    index: int
    offset: int  # of the damaged record's header, in the uncompressed stream
    kind: str  # one of PROBLEM_KINDS
    message: str


PROBLEM_KINDS = (
    "partial_header",  # 1-11 bytes after the last record (TensorFlow silently ignores them)
    "length_crc",  # the length field does not match its CRC
    "length_past_eof",  # a length larger than what remains of the file
    "truncated_payload",  # the file (or compressed stream) ends inside a record
    "data_crc",  # the payload does not match its CRC
    "corrupt_stream",  # gzip / zlib data that cannot be inflated
)


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


def scan_records(
    path: str, compression: str = "auto", *, payload: str = "keep", raw: BinaryIO | None = None
) -> Iterator[Record | Problem]:
    """Every record and every problem of one file, in order, in constant memory.

    Always moves forward and never allocates more than what remains of the
    file. After a data-CRC mismatch the scan goes on (the length was sound, so
    the next record's start is known); any other problem ends it.
    payload="keep": records carry their data. "check": data CRCs are checked but
    records carry no data (what --verify needs: payload and footer come in one read
    and one CRC pass). "skip": plain files seek past payloads, checking framing and
    length CRCs only, for a fast count (compressed files are read in full anyway).
    `raw` replaces the opened file (e.g. a HashingReader over it).
    """
    # A small buffer: headers of small records come from it, payloads larger than it
    # are read straight into their bytes object, and a seek past a payload wastes little.
    with open(path, "rb", buffering=8 << 10) as f:
        if compression == "auto":
            compression = detect_compression(f.read(HEADER_SIZE))
            f.seek(0)
        file_size = f.seek(0, io.SEEK_END)
        f.seek(0)
        stream = _open_reader(raw or f, compression)
        skip_data = payload == "skip" and compression == "none" and raw is None
        index = offset = 0
        try:
            while True:
                header = stream.read(HEADER_SIZE)
                if not header:
                    return
                if len(header) < HEADER_SIZE:
                    yield Problem(index, offset, "partial_header",
                                  f"partial header: {len(header)} trailing bytes, a header needs {HEADER_SIZE}")  # fmt: skip
                    return
                (length,) = _u64.unpack_from(header)
                if masked_crc(header[:8]) != _u32.unpack_from(header, 8)[0]:
                    yield Problem(index, offset, "length_crc", "length CRC mismatch (corrupt length field)")
                    return
                body_at = offset + HEADER_SIZE
                end = body_at + length + FOOTER_SIZE
                if compression == "none" and end > file_size:
                    yield Problem(index, offset, "length_past_eof",
                                  f"length {length} reaches past the end of the file ({file_size - body_at} bytes remain)")  # fmt: skip
                    return
                if skip_data:
                    f.seek(end)
                    yield Record(index, offset, b"")
                elif payload == "check":
                    body = read_up_to(stream, length + FOOTER_SIZE)
                    if len(body) < length + FOOTER_SIZE:
                        yield Problem(index, offset, "truncated_payload",
                                      f"truncated payload: length {length}, file ends after {min(len(body), length)} bytes")  # fmt: skip
                        return
                    # crc(data + footer) == extend(crc(data), footer): one CRC pass, no slicing of data
                    expected = unmask(_u32.unpack_from(body, length)[0])
                    if google_crc32c.extend(expected, body[length:]) != google_crc32c.value(body):
                        yield Problem(index, offset, "data_crc", "data CRC mismatch (corrupt payload)")
                    else:
                        yield Record(index, offset, b"")
                else:
                    data = read_up_to(stream, length)
                    footer = stream.read(FOOTER_SIZE)
                    if len(data) < length or len(footer) < FOOTER_SIZE:
                        yield Problem(index, offset, "truncated_payload",
                                      f"truncated payload: length {length}, file ends after {len(data)} bytes")  # fmt: skip
                        return
                    if masked_crc(data) != _u32.unpack(footer)[0]:
                        yield Problem(index, offset, "data_crc", "data CRC mismatch (corrupt payload)")
                    else:
                        yield Record(index, offset, data)
                index += 1
                offset = end
        except (OSError, EOFError, zlib.error) as e:
            # gzip.BadGzipFile is an OSError; a cut-off stream is an EOFError.
            yield Problem(index, offset, "corrupt_stream", f"{compression} stream is corrupt: {e}")


def read_records(path: str, compression: str = "auto") -> Iterator[Record]:
    """Stream the records of one file, checking every CRC; the first problem
    raises RecordError naming the file, record index and byte offset."""
    for item in scan_records(path, compression):
        if isinstance(item, Problem):
            raise RecordError(path, item.index, item.offset, item.message)
        yield item


def count_records(path: str, compression: str = "auto") -> int:
    """Records in a file, checking framing and length CRCs only (plain files skip payloads)."""
    n = 0
    for item in scan_records(path, compression, payload="skip"):
        if isinstance(item, Problem):
            raise RecordError(path, item.index, item.offset, item.message)
        n += 1
    return n
