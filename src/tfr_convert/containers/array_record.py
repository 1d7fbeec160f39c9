"""The ArrayRecord container (Riegeli files with a record index), for random access.

Each record is the serialized example itself; ArrayRecord adds its own chunk
headers, highwayhash checksums and a footer index. Written with `group_size:1`
(one record per chunk), as TensorFlow Datasets writes it and as Grain requires
for random access (it logs an error for any other group size), and uncompressed
by default: per-record compression saves little on image bytes and costs most of
the write time (see docs/choices.md); `--compression zstd` turns it on.

The library (`array-record`) is an extra, imported only here and only when used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import MissingExtra, RecordError, TfrConvertError
from ..optional import extra_hint
from ..storage import fs
from ..storage.pooled_writes import WritePool
from ..storage.reading import HashingReader
from .base import MAX_RECORD_BYTES, Container, Opener, Problem, Record, ShardFileWriter

WRITER_OPTIONS = {"none": "group_size:1,uncompressed", "zstd": "group_size:1,zstd:3"}
# The smallest ArrayRecord file: Riegeli pads to a 64 KiB block boundary before the
# footer, which takes a block of its own, whatever the records hold.
SMALLEST_FILE = 128 << 10


def padding_note(sizes: list[int], splits: int) -> str | None:
    """A word for a dataset whose ArrayRecord shards (`sizes`: bytes each, of `splits`
    splits) are mostly the format's padding, None where none is."""
    small = [n for n in sizes if n <= SMALLEST_FILE]
    if not small:
        return None
    fewer = "fewer shards (--num-shards 1) or " if len(sizes) > splits else ""
    return (
        f"{len(small)} of {len(sizes)} ArrayRecord shards are the format's smallest file, 128 KiB, most of it "
        f"padding (Riegeli pads to 64 KiB blocks before the footer): for data this small, {fewer}--format tfrecord "
        "takes less space"
    )


# The first bytes of every Riegeli file: the signature chunk's header.
SIGNATURE = bytes.fromhex("83af70d10d884a3f")
# Records read per call when scanning: bounded memory, few calls.
_RANGE = 256


def _module():
    try:
        from array_record.python import array_record_module
    except ImportError:
        raise MissingExtra(f"ArrayRecord files need the array-record package: {extra_hint('array_record')}") from None
    return array_record_module


class ArrayRecordWriter(ShardFileWriter):
    """The library writes a local file itself: for a remote path, a temporary one, copied
    to `opener(path)` when closed."""

    def __init__(self, path: str, compression: str, opener: Opener | None = None) -> None:
        self.path = path
        self._opener = opener or fs.open_file
        self._local = path
        if fs.is_remote(path):
            import tempfile

            handle, self._local = tempfile.mkstemp(prefix="tfr-convert-", suffix=".array_record")
            os.close(handle)
        self._writer = _module().ArrayRecordWriter(self._local, WRITER_OPTIONS[compression])
        self._size: int | None = None
        self._sha256 = ""

    def write(self, blob: memoryview, sizes: list[int]) -> None:
        write, start = self._writer.write, 0
        for size in sizes:
            write(bytes(blob[start : start + size]))  # the binding takes bytes only
            start += size

    def close(self) -> None:
        if self._size is not None:
            return
        self._writer.close()
        hashed = _hashed(self._local)  # the library writes the file itself: hash what reached the disk
        self._size, self._sha256 = hashed.size, hashed.hash.hexdigest()
        if self._local != self.path:
            try:
                with open(self._local, "rb") as source, self._opener(self.path) as target:
                    while block := source.read(8 << 20):
                        target.write(block)
            finally:
                os.remove(self._local)

    def bytes_written(self) -> int:
        assert self._size is not None, "known after close"
        return self._size

    def sha256(self) -> str:
        return self._sha256


def _hashed(path: str) -> HashingReader:
    with fs.open_input(path) as f:
        reader = HashingReader(f)
        reader.drain()
    return reader


def _reader(path: str):
    local = fs.local_copy(path)  # the library reads local files only: a remote one is copied first, once
    try:
        return _module().ArrayRecordReader(local, "readahead_buffer_size:16M,max_parallelism:0")
    except (RuntimeError, ValueError) as e:
        raise RecordError(path, 0, 0, f"not a readable ArrayRecord file: {_first_line(e)}") from None


def _num_records(reader: Any, path: str) -> int:
    try:
        return reader.num_records()
    except RuntimeError as e:
        raise RecordError(path, 0, 0, f"not a readable ArrayRecord file: {_first_line(e)}") from None


def _close(reader: Any) -> str | None:
    """Closes a reader; Riegeli checks the file's end there: what it found wrong, or None."""
    try:
        reader.close()
    except RuntimeError as e:
        return _first_line(e)
    return None


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _byte_of(message: str) -> int | None:
    m = re.search(r"at byte (\d+)", message)
    return int(m[1]) if m else None


class ArrayRecordContainer(Container):
    name = "array_record"
    compressions = tuple(WRITER_OPTIONS)
    extra = "array_record"

    def available(self) -> bool:
        try:
            _module()
        except TfrConvertError:
            return False
        return True

    def writer(
        self, path: str, compression: str, opener: Opener | None = None, pool: WritePool | None = None
    ) -> ArrayRecordWriter:
        return ArrayRecordWriter(path, compression, opener)  # (its library writes the file: no pool)

    def sniff(self, head: bytes, size: int) -> bool:
        return head.startswith(SIGNATURE)

    def _scan(self, path: str) -> Iterator[Record | Problem]:
        reader = _reader(path)
        closed = False
        try:
            total = _num_records(reader, path)
            for start in range(0, total, _RANGE):
                try:
                    batch = reader.read(start, min(start + _RANGE, total))
                except RuntimeError as e:
                    # Riegeli names the damaged chunk; our unit is the record range it fell in
                    message = _first_line(e)
                    yield Problem(start, _byte_of(message), "corrupt_chunk", message)
                    return
                for k, data in enumerate(batch):
                    yield Record(start + k, None, data)
            closed = True
            message = _close(reader)
            if message is not None:  # a damaged end (a truncated file): its records were read
                yield Problem(total, _byte_of(message), "corrupt_chunk", f"the end of the file: {message}")
        finally:
            if not closed:
                _close(reader)  # what it finds is already said, or the caller stopped reading

    def records(self, path: str, max_record: int = MAX_RECORD_BYTES) -> Iterator[Record]:
        # (Riegeli bounds its chunks itself; the limit keeps the modes that hold records alike)
        for item in self._scan(path):
            if isinstance(item, Problem):
                raise RecordError(path, item.index, item.offset or 0, item.message)
            if len(item.data) > max_record:
                raise RecordError(
                    path,
                    item.index,
                    0,
                    f"a record of {len(item.data)} bytes, above the {max_record} "
                    "read whole (--max-record-size raises it)",
                )
            yield item

    def count(self, path: str) -> int:
        reader = _reader(path)
        try:
            total = _num_records(reader, path)  # from the footer index
        finally:
            message = _close(reader)
        if message is not None:
            raise RecordError(path, total, _byte_of(message) or 0, f"the end of the file: {message}")
        return total

    def read_range(self, path: str, start: int, stop: int) -> Iterator[bytes]:
        return read_range(path, start, stop)

    def records_at(self, path: str, wanted: Sequence[tuple[int, int | None]]) -> list[bytes]:
        """Each record by its index alone, through the file's own index and one reader."""
        if not wanted:
            return []
        reader = _reader(path)
        try:
            return list(reader.read([index for index, _ in wanted]))
        except RuntimeError as e:  # an index past the end: the file changed since it was read
            raise RecordError(path, wanted[0][0], 0, f"cannot read its records again: {_first_line(e)}") from None
        finally:
            _close(reader)

    def verify(self, path: str, with_sha256: bool) -> dict[str, Any]:
        problems, records = [], 0
        try:
            for item in self._scan(path):
                if isinstance(item, Problem):
                    problems.append(item)
                else:
                    records += 1
        except RecordError as e:
            problems.append(Problem(0, None, "corrupt_chunk", e.problem))
        result: dict[str, Any] = {"compression": "none", "records": records, "problems": problems}
        if with_sha256:
            result["sha256"] = _hashed(path).hash.hexdigest()
        return result


def read_range(path: str, start: int, stop: int) -> Iterator[bytes]:
    """Records [start, stop) of one file, in order (for tfr_convert.load)."""
    reader = _reader(path)
    try:
        for at in range(start, stop, _RANGE):
            try:
                batch = reader.read(at, min(at + _RANGE, stop))
            except RuntimeError as e:
                message = _first_line(e)
                raise RecordError(path, at, _byte_of(message) or 0, message) from None
            yield from batch
    finally:
        _close(reader)
