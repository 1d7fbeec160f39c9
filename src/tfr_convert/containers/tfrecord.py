"""The TFRecord container: framed records, optionally gzip / zlib compressed.

Writing: records arrive sealed (framed in place, see framing.py); the writer
writes and hashes them on a helper thread, or, uncompressed and given a pool of
threads (storage/pooled_writes.py), through it. Reading goes through scan.py.
The bytes equal `tf.io.TFRecordWriter`'s.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import RecordError
from ..storage import fs
from ..storage.pooled_writes import PooledFile, WritePool
from ..storage.reading import HashingReader
from .base import MAX_RECORD_BYTES, Container, Opener, Problem, Record, ShardFileWriter
from .compression import COMPRESSIONS, detect_compression, open_compressed_writer
from .crc import masked_crc
from .framing import FOOTER_SIZE, HEADER_SIZE, seal, u32, u64
from .scan import count_records, read_records, scan_records

# What may wait for the helper thread, in bytes: memory stays flat whether a write is
# a batch of thumbnails or of large photos (the first write is taken whatever its size).
QUEUED_BYTES = 12 << 20
PIECE_BYTES = 1 << 18  # written, then hashed while in the cache


class _HashingFile:
    """A write-only file that keeps the sha256 of what reaches the disk.

    Writing and hashing release the GIL, so a helper thread does both while the next
    records are framed. It takes the data in order, a piece at a time, and hashes each
    piece right after writing it, while the piece is still in the CPU's cache, instead
    of reading it from memory a second time. A write waits while QUEUED_BYTES are not
    yet done. A write error surfaces at the next write or at close.
    """

    def __init__(self, path: str, opener: Opener | None = None) -> None:
        self._f = (opener or fs.open_file)(path)
        self.hash = hashlib.sha256()
        self.size = 0
        self._error: OSError | None = None
        self._queued = 0  # bytes written here and not yet through the thread
        self._room = threading.Condition()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _step(self, data) -> None:
        view = memoryview(data).cast("B")
        for at in range(0, len(view), PIECE_BYTES):
            piece = view[at : at + PIECE_BYTES]
            self._f.write(piece)
            self.hash.update(piece)
        self.size += len(view)

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            data, n = item
            if self._error is None:
                try:
                    self._step(data)
                except Exception as e:  # any failure ends the writing, and is raised in the writer
                    self._error = e if isinstance(e, OSError) else OSError(f"{type(e).__name__}: {e}")
            del data, item  # the buffer is let go of before the room is given back
            with self._room:
                self._queued -= n
                self._room.notify()

    def write(self, data) -> int:
        if self._error is not None:
            raise self._error
        n = memoryview(data).nbytes
        with self._room:
            while self._queued and self._queued + n > QUEUED_BYTES:
                self._room.wait()
            self._queued += n
        self._queue.put((data, n))
        return len(data)

    def flush(self) -> None:
        pass  # the helper thread writes everything before close() returns

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        self._f.close()
        if self._error is not None:
            raise self._error

    def sha256(self) -> str:
        return self.hash.hexdigest()


class RecordWriter(ShardFileWriter):
    """Writes sealed (framed) records to a path. `sha256()` is the digest of the file as on disk.

    `pool`: where an uncompressed file is written and hashed (`opener` is then not
    used: the pool writes local files at their offsets)."""

    def __init__(
        self, path: str, compression: str = "none", opener: Opener | None = None, pool: WritePool | None = None
    ) -> None:
        self.path = path
        pooled = pool is not None and compression == "none"
        self._raw: _HashingFile | PooledFile = PooledFile(path, pool) if pooled else _HashingFile(path, opener)
        self._out = open_compressed_writer(self._raw, compression)  # type: ignore[arg-type]

    def write(self, blob: memoryview | bytes, sizes: list[int] | None = None) -> None:
        self._out.write(blob)

    def close(self) -> None:
        if self._out is not self._raw:
            self._out.close()
        self._raw.close()

    def finished(self) -> bool:
        return not isinstance(self._raw, PooledFile) or self._raw.finished()

    def sha256(self) -> str:
        return self._raw.sha256()

    def bytes_written(self) -> int:
        """The file's size on disk (after compression), known without a stat."""
        return self._raw.size


class TFRecordContainer(Container):
    name = "tfrecord"
    head, tail = HEADER_SIZE, FOOTER_SIZE
    compressions = COMPRESSIONS

    def seal(self, blob: bytearray | memoryview, sizes: list[int]) -> None:
        seal(blob, sizes)

    def writer(
        self, path: str, compression: str, opener: Opener | None = None, pool: WritePool | None = None
    ) -> RecordWriter:
        return RecordWriter(path, compression, opener, pool)

    def sniff(self, head: bytes, size: int) -> bool:
        """Any file but one whose first header is no header at all: its length field
        reaching past the end of the file *and* its CRC wrong (a PNG, a JSON or text
        file: their first bytes read as an absurd length). A damaged TFRecord keeps one
        of the two, so it is still read, and its problems named."""
        if len(head) < HEADER_SIZE or detect_compression(head) != "none":
            return True
        (length,) = u64.unpack_from(head)
        return masked_crc(head[:8]) == u32.unpack_from(head, 8)[0] or HEADER_SIZE + length + FOOTER_SIZE <= size

    def records(self, path: str, max_record: int = MAX_RECORD_BYTES) -> Iterator[Record]:
        return read_records(path, max_record=max_record)

    def digests(self, path: str, max_record: int = MAX_RECORD_BYTES) -> Iterator[Record]:
        return read_records(path, max_record=max_record, payload="digest")

    def salvage(self, path: str, max_record: int = MAX_RECORD_BYTES) -> Iterator[Any]:
        from .salvage import salvage_records

        return salvage_records(path, max_record)

    def count(self, path: str) -> int:
        return count_records(path)

    def tf_shards(self, compression: str, remote: bool) -> Callable[[Any, Any, Any], Any]:
        if remote:  # TensorFlow's own filesystems lack most schemes (s3:// among them)
            return super().tf_shards(compression, remote)
        from ..optional import tensorflow

        tf = tensorflow("tfr_convert.load()")
        kind = {"gzip": "GZIP", "zlib": "ZLIB"}.get(compression, "")
        return lambda path, skip, take: tf.data.TFRecordDataset(path, compression_type=kind).skip(skip).take(take)

    def compression(self, path: str) -> str:
        return compression_of(path)

    def records_at(self, path: str, wanted: Sequence[tuple[int, int | None]]) -> list[bytes]:
        """An uncompressed file's records read at their offsets alone, through one open
        file, both CRCs checked (a compressed stream is read through)."""
        if any(offset is None for _, offset in wanted) or compression_of(path) != "none":
            return super().records_at(path, wanted)
        out = []
        with fs.open_input(path) as f:
            for index, offset in wanted:
                f.seek(offset)
                head = f.read(HEADER_SIZE)
                payload = None
                if len(head) == HEADER_SIZE and u32.unpack_from(head, 8)[0] == masked_crc(head[:8]):
                    length = u64.unpack_from(head)[0]
                    body = f.read(length + FOOTER_SIZE) if length <= MAX_RECORD_BYTES else b""
                    if len(body) == length + FOOTER_SIZE and u32.unpack_from(body, length)[0] == masked_crc(
                        body[:length]
                    ):
                        payload = body[:length]
                if payload is None:
                    raise RecordError(
                        path, index, offset, "the record read earlier is no longer there (the file changed)"
                    )
                out.append(payload)
        return out

    def index_lines(self, path: str) -> bytes:
        return index_lines(path)

    def verify(self, path: str, with_sha256: bool) -> dict[str, Any]:
        compression = compression_of(path)
        problems: list[Problem] = []
        records = 0
        with fs.open_input(path, buffering=8 << 10) as f:
            reader = HashingReader(f) if with_sha256 else None
            for item in scan_records(path, compression, payload="tally", raw=reader):  # type: ignore[arg-type]
                if isinstance(item, Problem):
                    problems.append(item)
                    records += item.kind == "data_crc"  # any other damaged record was not a record
                else:
                    records += item
            if reader is not None:
                reader.drain()
        result: dict[str, Any] = {"compression": compression, "records": records, "problems": problems}
        if reader is not None:
            result["sha256"] = reader.hash.hexdigest()
        return result


def compression_of(path: str) -> str:
    with fs.open_input(path) as f:
        return detect_compression(f.read(HEADER_SIZE))


def index_lines(path: str) -> bytes:
    """The index of one uncompressed TFRecord file, in the text format NVIDIA DALI and the
    PyTorch `tfrecord` package read: per record, the byte offset of its start and the
    length of the whole framed record (framing and length CRCs checked)."""
    from ..errors import SourceError

    if compression_of(path) != "none":
        raise SourceError(
            f"{path}: compressed files cannot be indexed (offsets would point into the compressed stream)"
        )
    starts = []
    for item in scan_records(path, "none", payload="skip"):
        if isinstance(item, Problem):
            raise SourceError(f"{path}: record {item.index} at byte offset {item.offset}: {item.message}")
        starts.append(item.offset)
    ends = [*starts[1:], fs.getsize(path)][: len(starts)]  # a record ends where the next one starts
    return "".join(f"{start} {end - start}\n" for start, end in zip(starts, ends, strict=True)).encode()
