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
import mmap
import os
import queue
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

from . import fs
from .errors import RecordError


def _load_crc32c():
    """The `crc32c` function of the crc32c package's C extension.

    The package's __init__ looks its own version up through importlib.metadata,
    which costs about 60 ms at every start of every command, more than a whole
    `tfr-inspect` on a small file otherwise takes. Load the extension module by
    itself (finding the package does not run it); fall back to a plain import.
    """
    import importlib.machinery
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("crc32c")
        for folder in (spec and spec.submodule_search_locations) or ():
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_crc32c" + suffix)
                if os.path.exists(path):
                    loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                    loader.exec_module(module)
                    return module.crc32c
    except (ImportError, OSError, AttributeError):
        pass
    from crc32c import crc32c

    return crc32c


crc32c = _load_crc32c()  # crc32c(buffer, value=0) -> the plain (unmasked) CRC32C of any buffer

COMPRESSIONS = ("none", "gzip", "zlib")
HEADER_SIZE = 12  # length (8) + length CRC (4)
FOOTER_SIZE = 4
# TensorFlow's writers use zlib's default level for both gzip and zlib.
_COMPRESS_LEVEL = 6
# read_up_to reads in pieces of at most this size, so that a corrupt length
# (an idx header's, say) costs at most what the file really holds.
_READ_PIECE = 16 << 20
# Scans read ahead in a few blocks of this size (see _ReadAhead): large enough that
# per-block costs vanish, small enough to stay in the CPU caches while checked
# (1-4 MiB measure the same), and a constant few MiB of memory per scan.
_BLOCK_SIZE = 1 << 20
_BLOCKS = 3
# Plain files are scanned through memory-mapped windows of this size (_MappedWindows);
# a multiple of mmap.ALLOCATIONGRANULARITY, which window offsets must be.
_WINDOW_SIZE = 16 << 20

_u32 = struct.Struct("<I")
_u64 = struct.Struct("<Q")
_header = struct.Struct("<QI")  # length, masked CRC of the length


def masked_crc(data: bytes | bytearray | memoryview) -> int:
    # crc32c (hardware CRC32C) takes any buffer, so views of larger buffers (numpy
    # rows, blocks of a file) need no copy, and it releases the GIL on large ones.
    crc = crc32c(data)
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
        self._f = fs.open_file(path, "wb")
        self.hash = hashlib.sha256()
        self.size = 0
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
                    self.size += memoryview(data).nbytes
                except Exception as e:  # any failure ends the writing, and is raised in the writer
                    self._error = e if isinstance(e, OSError) else OSError(f"{type(e).__name__}: {e}")

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

    def bytes_written(self) -> int:
        """The file's size on disk (after compression), known without a stat."""
        return self._raw.size

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---------------------------------------------------------------- reading


class Record(NamedTuple):  # a tuple: a scan makes one per record, cheaply
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


class _ReadAhead:
    """A stream read on a helper thread into a few recycled blocks.

    For streams that cannot be mapped: compressed files, and plain ones read
    through a HashingReader (a dataset's shards, whose sha256 --verify compares).
    Reading (and inflating, and hashing) releases the GIL, as does CRC32C over
    large views, so the caller checks one block while the next is read. An error
    of the stream is raised in the caller, in order.
    """

    def __init__(self, stream: BinaryIO, block_size: int = _BLOCK_SIZE) -> None:
        self._stream = stream
        self._free: queue.SimpleQueue = queue.SimpleQueue()
        self._full: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(_BLOCKS):
            self._free.put(bytearray(block_size))
        self._closed = False
        self._thread = threading.Thread(target=self._fill, daemon=True)
        self._thread.start()

    def _fill(self) -> None:
        try:
            while (block := self._free.get()) is not None and not self._closed:
                n = self._stream.readinto(block)
                self._full.put((block, n))
                if not n:
                    return
        except Exception as e:  # handed to the caller, who knows the file
            # without its traceback, which would hold this frame and so the blocks
            self._full.put(e.with_traceback(None))

    def next_block(self) -> tuple[bytearray, int]:
        """The next block and how many of its bytes are filled; 0 at end of stream."""
        item = self._full.get()
        if isinstance(item, Exception):
            raise item
        return item

    def recycle(self, block: bytearray) -> None:
        self._free.put(block)

    def close(self) -> None:
        self._closed = True
        self._free.put(None)
        self._thread.join()
        # let the blocks go now, whatever still refers to this object
        self._free = self._full = queue.SimpleQueue()


class _MappedWindows:
    """A plain file's consecutive windows, memory-mapped: a scan's blocks with no copy.

    Reading copies every byte once (that copy is all `cat FILE > /dev/null` costs);
    a CRC over a view of the mapped page cache copies nothing, and needs no second
    thread, so it stays fast on a busy machine too. A window is unmapped as soon as
    nothing refers to it (the cursor has moved on): memory stays at a window or two,
    whatever the file's size. The size is checked before each window, since touching
    a page of a file truncated meanwhile would kill the process (SIGBUS).
    """

    def __init__(self, f: BinaryIO, file_size: int) -> None:
        self._fd, self._size, self._at = f.fileno(), file_size, 0

    def next_block(self) -> tuple[memoryview, int]:
        if self._at >= self._size:
            return memoryview(b""), 0
        if os.fstat(self._fd).st_size < self._size:
            raise OSError(f"the file shrank while being read (it was {self._size} bytes)")
        n = min(_WINDOW_SIZE, self._size - self._at)
        window = mmap.mmap(self._fd, n, access=mmap.ACCESS_READ, offset=self._at)
        self._at += n
        return memoryview(window), n

    def recycle(self, block: memoryview) -> None:
        pass  # unmapped when its last view is gone


class _Cursor:
    """The stream as consecutive byte ranges, from blocks (_ReadAhead, _MappedWindows).

    `take(n)` returns the next n bytes (fewer only at the end of the stream): a view
    into the current block when they lie inside it (no copy), else a buffer
    assembled as blocks arrive, so a lying length costs what the stream really
    holds. A view is only valid until the next `take`.
    """

    def __init__(self, ahead: _ReadAhead | _MappedWindows) -> None:
        self._ahead = ahead
        self._block: bytearray | memoryview | None = None
        # the current block's bytes and the unread part of them (the scan's fast path reads these)
        self.view = memoryview(b"")
        self.pos = self.end = 0
        self._eof = False

    def take(self, n: int) -> memoryview:
        pos = self.pos
        if self.end - pos >= n:
            self.pos = pos + n
            return self.view[pos : pos + n]
        part = bytearray(self.view[pos : self.end])
        self.pos = self.end
        while len(part) < n and self._advance():
            k = min(n - len(part), self.end)
            part += self.view[:k]
            self.pos = k
        return memoryview(part)

    def _advance(self) -> bool:
        if self._eof:
            return False
        if self._block is not None:
            self._ahead.recycle(self._block)
            self._block = None
        block, n = self._ahead.next_block()
        self.view = memoryview(block)
        self.pos, self.end = 0, n
        if not n:
            self._eof = True
            return False
        self._block = block
        return True


def scan_records(
    path: str, compression: str = "auto", *, payload: str = "keep", raw: BinaryIO | None = None
) -> Iterator[Record | Problem]:
    """Every record and every problem of one file, in order, in constant memory.

    Always moves forward and never allocates more than what remains of the
    file. After a data-CRC mismatch the scan goes on (the length was sound, so
    the next record's start is known); any other problem ends it.
    payload="keep": records carry their data. "check": data CRCs are checked but
    records carry no data (what --verify needs). "skip": framing and length CRCs
    only, for a fast count; plain files seek past payloads.
    `raw` replaces the opened file (e.g. a HashingReader over it).
    """
    with open(path, "rb") as f:
        if compression == "auto":
            compression = detect_compression(f.read(HEADER_SIZE))
            f.seek(0)
        file_size = f.seek(0, io.SEEK_END)
        f.seek(0)
        if payload == "skip" and compression == "none" and raw is None:
            yield from _count_plain(f, file_size)
            return
        if compression == "none" and raw is None:
            yield from _scan_stream(_Cursor(_MappedWindows(f, file_size)), compression, file_size, payload)
            return
        stream = _open_reader(raw or f, compression)
        # a small plain file needs no more than its size (a compressed one's is unknown)
        ahead = _ReadAhead(stream, _BLOCK_SIZE if compression != "none" else max(1, min(_BLOCK_SIZE, file_size)))
        try:
            yield from _scan_stream(_Cursor(ahead), compression, file_size, payload)
        finally:
            ahead.close()


def _scan_stream(cursor: _Cursor, compression: str, file_size: int, payload: str) -> Iterator[Record | Problem]:
    index = offset = 0
    keep, check = payload == "keep", payload != "skip"
    try:
        while True:
            # Fast path: the sound records lying whole in the current block, with no
            # call per record beyond the CRCs (small records are all per-record cost).
            view, pos, end = cursor.view, cursor.pos, cursor.end
            while pos + HEADER_SIZE <= end:
                length, length_crc = _header.unpack_from(view, pos)
                body = pos + HEADER_SIZE
                stop = body + length
                if stop + FOOTER_SIZE > end or crc32c(view[pos : pos + 8]) != unmask(length_crc):
                    break  # across the block's end, or broken: the careful path below
                if check and crc32c(view[body:stop]) != unmask(_u32.unpack_from(view, stop)[0]):
                    yield Problem(index, offset, "data_crc", "data CRC mismatch (corrupt payload)")
                else:
                    yield Record(index, offset, bytes(view[body:stop]) if keep else b"")
                index += 1
                offset += stop + FOOTER_SIZE - pos
                pos = stop + FOOTER_SIZE
            cursor.pos = pos
            # Careful path: one record, wherever it lies, every problem named.
            header = cursor.take(HEADER_SIZE)
            if not header:
                return
            if problem := header_problem(header, index, offset, compression, file_size):
                yield problem
                return
            (length,) = _u64.unpack_from(header)
            body = cursor.take(length + FOOTER_SIZE)  # payload and footer in one piece
            if len(body) < length + FOOTER_SIZE:
                yield Problem(index, offset, "truncated_payload",
                              f"truncated payload: length {length}, file ends after {min(len(body), length)} bytes")  # fmt: skip
                return
            data = body[:length]
            if check and masked_crc(data) != _u32.unpack_from(body, length)[0]:
                yield Problem(index, offset, "data_crc", "data CRC mismatch (corrupt payload)")
            else:
                yield Record(index, offset, bytes(data) if keep else b"")
            index += 1
            offset += HEADER_SIZE + length + FOOTER_SIZE
    except (OSError, EOFError, zlib.error) as e:
        # gzip.BadGzipFile is an OSError; a cut-off stream is an EOFError.
        what = "read error" if compression == "none" else f"{compression} stream is corrupt"
        yield Problem(index, offset, "corrupt_stream", f"{what}: {e}")


def _count_plain(f: BinaryIO, file_size: int) -> Iterator[Record | Problem]:
    """Headers only, seeking past every payload: a count touches a few bytes per record."""
    index = offset = 0
    while True:
        f.seek(offset)
        header = f.read(HEADER_SIZE)
        if not header:
            return
        if problem := header_problem(header, index, offset, "none", file_size):
            yield problem
            return
        yield Record(index, offset, b"")
        index += 1
        offset += HEADER_SIZE + _u64.unpack_from(header)[0] + FOOTER_SIZE


def header_problem(header, index: int, offset: int, compression: str, file_size: int) -> Problem | None:
    if len(header) < HEADER_SIZE:
        return Problem(index, offset, "partial_header",
                       f"partial header: {len(header)} trailing bytes, a header needs {HEADER_SIZE}")  # fmt: skip
    if masked_crc(header[:8]) != _u32.unpack_from(header, 8)[0]:
        return Problem(index, offset, "length_crc", "length CRC mismatch (corrupt length field)")
    (length,) = _u64.unpack_from(header)
    body_at = offset + HEADER_SIZE
    if compression == "none" and body_at + length + FOOTER_SIZE > file_size:
        return Problem(index, offset, "length_past_eof",
                       f"length {length} reaches past the end of the file ({file_size - body_at} bytes remain)")  # fmt: skip
    return None


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
