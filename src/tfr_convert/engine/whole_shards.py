"""Shards written whole, each by one process: the local engine's way to use every core.

Where a split's cuts are known before encoding (engine/planned.py), a shard is a range
of planned items, and writing it is a task like any other: the process that takes it
encodes its items a batch at a time, seals, writes and hashes the file (the container's
writer, its helper thread hashing each piece as it is written), and sends back only what
the journal records. No record crosses a pipe and no single process writes or hashes
every byte, so N processes do N shares of the work. The parent takes the results in
order (it writes shards too whenever the oldest is not back) and journals them as the
ordered writer would have: the same files, checkpoints and findings, so either can
resume the other's run.

Not for everything: with --on-error skip the ordered writer counts a batch's skipped
items after its records, so where a shard ends depends on the batch it was encoded
in, and a remote output's uploads belong to the parent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import NamedTuple

from .. import containers
from ..converters.base import Converter
from ..storage import fs
from .core import encode_sealed


class WholeShard(NamedTuple):
    """A task: the split's planned items [start, stop) into the temporary file `path`."""

    split: str
    start: int
    stop: int
    path: str


class WrittenShard(NamedTuple):
    """What writing a shard found: its file's records, bytes and sha256, the framed bytes
    of its records (the cutter's count), and what encoding found besides records."""

    records: int
    bytes: int
    record_bytes: int
    sha256: str
    observations: Counter[Hashable]
    warnings: list[str]


def write_whole_shard(
    converter: Converter,
    items: Sequence[Hashable],
    container: containers.Container,
    compression: str,
    path: str,
) -> WrittenShard:
    """The items encoded (on_error "fail": every item is a record), a batch at a time, into
    one shard file."""
    observed: Counter[Hashable] = Counter()
    warnings: list[str] = []
    records = record_bytes = 0
    with fs.naming(path), container.writer(path, compression, fs.open_file) as writer:
        for start in range(0, len(items), converter.chunk_size):
            encoded = encode_sealed(converter, items[start : start + converter.chunk_size], "fail", container)
            writer.write(memoryview(encoded.blob), encoded.sizes)
            observed.update(encoded.observations)
            warnings += encoded.warnings
            records += len(encoded.sizes)
            record_bytes += sum(encoded.sizes)
    observed.pop(None, None)
    summary = converter.summarized(observed)
    return WrittenShard(records, writer.bytes_written(), record_bytes, writer.sha256(), summary, warnings)


def tasks(split: str, ends: list[int], begin: int, path: Callable[[int], str]) -> list[WholeShard]:
    """The split's shards from planned item `begin` on (where the kept ones end), each
    with its temporary file: `path(i)` for the i-th of them."""
    starts = [0, *ends[:-1]]
    left = [(start, stop) for start, stop in zip(starts, ends, strict=True) if start >= begin]
    return [WholeShard(split, start, stop, path(i)) for i, (start, stop) in enumerate(left)]
