"""What a container is to the shard writer and the inspector.

A container decides how serialized examples sit in a file. Encoders leave
`head` bytes before and `tail` bytes after every payload; `seal` fills them in
place (TFRecord's length header and CRCs; nothing for ArrayRecord). The shard
writer writes sealed records through `writer`; the inspector reads any file of
the container through `records`, `count` and `verify`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..storage.pooled_writes import WritePool

Opener = Callable[[str], IO[bytes]]

# What a reader that hands out payloads (schema, stats, grid) takes whole at most, by
# default: a length field is untrusted, and a compressed stream's size unknown.
MAX_RECORD_BYTES = 64 << 20


class Record(NamedTuple):  # a tuple: a scan makes one per record, cheaply
    index: int
    offset: int | None  # of the record's start in the (uncompressed) file, where the container has one
    data: bytes


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a file: where the damaged record starts, and what is wrong."""

    index: int
    offset: int | None  # of the damaged record's start, in the uncompressed stream (None: unknown)
    kind: str
    message: str


@dataclass(frozen=True)
class Loss:
    """Bytes [start, end) of a file's (uncompressed) stream that held no sound record."""

    start: int
    end: int
    records: int | None  # records those bytes held, where that is known
    reason: str
    kept: bytes = b""  # the first of those bytes, up to a cap (what --quarantine writes)

    def summary(self) -> str:
        """The loss as reports list it: its reason and the records it held."""
        records = "records lost: unknown" if self.records is None else f"{self.records} record(s) lost"
        return f"{self.reason}; {records}"

    @property
    def whole(self) -> bool:
        """Whether `kept` holds every lost byte (else the first ones only)."""
        return len(self.kept) == self.end - self.start


class ShardFileWriter(ABC):
    """Writes sealed records to one file; `bytes_written` and `sha256` are known after close."""

    path: str

    @abstractmethod
    def write(self, blob: memoryview, sizes: list[int]) -> None:
        """Sealed records back to back in blob, slot sizes (margins included) in sizes."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def bytes_written(self) -> int: ...

    @abstractmethod
    def sha256(self) -> str:
        """The file's digest; may wait until the file is hashed (see `finished`)."""

    def finished(self) -> bool:
        """Whether `sha256()` will not wait (a writer that hashes after close, on a
        pool of threads, says False until then)."""
        return True

    def __enter__(self) -> ShardFileWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Container(ABC):
    #: file format name: in shard file names and dataset_info.json's fileFormat
    name: str
    #: bytes an encoder leaves free before and after each payload, for `seal`
    head: int = 0
    tail: int = 0
    #: --compression values this container accepts
    compressions: tuple[str, ...] = ("none",)
    #: extra to install when the container's library is missing, or "" when always available
    extra: str = ""

    def available(self) -> bool:
        return True

    def seal(self, blob: bytearray | memoryview, sizes: list[int]) -> None:
        """Fill every slot's margins in place (slot sizes include them)."""
        return None

    @abstractmethod
    def writer(
        self, path: str, compression: str, opener: Opener | None = None, pool: WritePool | None = None
    ) -> ShardFileWriter:
        """A writer of sealed records to `path`, a file opened by `opener` (fs.open_file by
        default: the output may open its files otherwise, e.g. to upload them in the background).
        `pool`: threads that may write and hash a local `path` instead (a container whose
        file is not its records' bytes back to back does without)."""

    @abstractmethod
    def sniff(self, head: bytes, size: int) -> bool:
        """Whether a file of `size` bytes starting with these (at least 16, when the file
        has them) is ours."""

    @abstractmethod
    def records(self, path: str, max_record: int = MAX_RECORD_BYTES) -> Iterator[Record]:
        """Every record of a file, checked as the container can; the first problem raises
        RecordError, a record above `max_record` bytes too (instead of being handed out)."""

    def digests(self, path: str, max_record: int = MAX_RECORD_BYTES) -> Iterator[Record]:
        """Every record of a file as `records` gives it, its data replaced by the data's
        sha256 (32 bytes): what a comparison of records needs. A container that can hash a
        record where it lies, without copying it out, does."""
        import hashlib

        for record in self.records(path, max_record):
            yield Record(record.index, record.offset, hashlib.sha256(record.data).digest())

    def salvage(self, path: str, max_record: int = MAX_RECORD_BYTES) -> Iterator[Any]:
        """Every sound record of a damaged file and, between them, each loss (a
        `salvage.Loss`: the byte range and the records it held), for containers that can
        read past damage; the others read as `records` (the first problem raises)."""
        return self.records(path, max_record)

    @abstractmethod
    def count(self, path: str) -> int:
        """How many records a file holds, by the cheapest check the container has."""

    @abstractmethod
    def verify(self, path: str, with_sha256: bool) -> dict[str, Any]:
        """{compression, records, problems: [Problem], [sha256]} of one file, checking everything."""

    def compression(self, path: str) -> str:
        """How a file's records are compressed as a whole (gzip / zlib for TFRecord), or "none"."""
        return "none"

    def read_range(self, path: str, start: int, stop: int) -> Iterator[bytes]:
        """The payloads of records [start, stop) of one file, in order (checked as `records`)."""
        for record in self.records(path):
            if record.index >= stop:
                return
            if record.index >= start:
                yield record.data

    def records_at(self, path: str, wanted: Sequence[tuple[int, int | None]]) -> list[bytes]:
        """The payloads of some records of one file, in the order asked, each named by its
        index and the byte offset `records` gave it (or None), checked as `records`. This one
        reads the file through up to the last of them; a container with an index, or plain
        offsets, reads those records alone."""
        indices = {index for index, _ in wanted}
        found: dict[int, bytes] = {}
        if indices:
            last = max(indices)
            for record in self.records(path):
                if record.index in indices:
                    found[record.index] = record.data
                if record.index >= last:
                    break
        return [_found(found, path, index, offset) for index, offset in wanted]

    def tf_shards(self, compression: str, remote: bool) -> Callable[[Any, Any, Any], Any]:
        """For tfr_convert.load(): (path, skip, take) tensors -> a tf.data.Dataset of those
        records of one shard. This one reads them through `read_range` (tf.data has no
        reader of most containers, nor TensorFlow a filesystem for most remote schemes);
        a container tf.data reads natively says so by overriding it. TensorFlow is
        imported only here, when a dataset is loaded."""
        from ..optional import tensorflow

        tf = tensorflow("tfr_convert.load()")

        def records(path, skip, take):
            yield from self.read_range(path.decode(), int(skip), int(skip + take))

        def shard(path, skip, take):
            return tf.data.Dataset.from_generator(
                records, args=(path, skip, take), output_signature=tf.TensorSpec((), tf.string)
            )

        return shard

    def index_lines(self, path: str) -> bytes:
        """An index file's text (NVIDIA DALI's format), for containers that have one."""
        from ..errors import SourceError

        raise SourceError(f"{path}: not a TFRecord file; index files are for TFRecord (ArrayRecord has its own)")


def _found(found: dict[int, bytes], path: str, index: int, offset: int | None) -> bytes:
    if index not in found:
        from ..errors import RecordError

        raise RecordError(path, index, offset or 0, "no such record: the file changed since it was read")
    return found[index]
