"""The two sides of a diff: their shards by split, the records' payload hashes and, for
the records left over, their keys, read on every core."""

from __future__ import annotations

import hashlib
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ... import containers
from ...dataset.existing import ExistingDataset
from ...dataset.wire.entries import few_values_of
from ...dataset.wire.example import ExampleDecodeError, outline
from ...errors import OptionError, RecordError
from ...storage import fs
from ..cores import each_file
from ..paths import resolve, split_of
from .matching import DIGEST, Entry

# The features converters name a record by, the first both sides have.
KEYS = ("filename", "image/filename", "id")
_FEW = 1000  # keys of at most this many records are read in this process


@dataclass
class Shard:
    path: str
    sha256: str | None = None  # as the manifest lists it
    records: int | None = None


@dataclass
class Side:
    path: str
    splits: dict[str, list[Shard]]
    features: dict[str, Any] = field(default_factory=dict)  # features.json's, {} if none
    labels: dict[str, list[str]] = field(default_factory=dict)


def side(path: str) -> Side:
    """The shards PATH names, by split (a dataset directory: as its metadata lists them)."""
    inputs = resolve([path])
    if len(inputs.datasets) == 1 and fs.normpath(inputs.datasets[0]) == fs.normpath(path):
        dataset = ExistingDataset(path)
        recorded = dataset.recorded_shards()
        splits = {}
        for split in dataset.splits():
            shards = []
            for name in dataset.shard_names(split):
                entry = recorded.get(name, {})
                sha256, records = entry.get("sha256"), entry.get("records")
                shards.append(
                    Shard(
                        fs.join(path, name),
                        sha256 if isinstance(sha256, str) else None,
                        records if type(records) is int else None,
                    )
                )
            splits[split] = shards
        return Side(path, splits, dataset.features, dataset.class_names())
    grouped: dict[str, list[Shard]] = {}
    for file in inputs.files:
        grouped.setdefault(split_of(file) or "", []).append(Shard(file))
    return Side(path, grouped)


def _key_text(values: list[Any]) -> str:
    return ",".join(v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v) for v in values)


def file_entries(path: str, max_record: int) -> tuple[bytes, array]:
    """(the payload hashes of every record of one file, DIGEST bytes each back to back;
    their offsets, -1 where the container has none), each record checked as it is read."""
    digests, offsets = bytearray(), array("q")
    for record in containers.of_file(path).digests(path, max_record):
        digests += record.data[:DIGEST]
        offsets.append(-1 if record.offset is None else record.offset)
    return bytes(digests), offsets


def file_entries_keyed(path: str, max_record: int, key: str | None) -> tuple[bytes, array, list[str]]:
    """file_entries, and every record's key (its hash where records are matched by
    content): for a file whose records have nothing to be matched with on the other side,
    so that they are read once, not again for their keys."""
    digests, offsets, keys = bytearray(), array("q"), []
    names = {key.encode("utf-8")} if key is not None else set()
    for record in containers.of_file(path).records(path, max_record):
        digest = hashlib.sha256(record.data).digest()[:DIGEST]
        digests += digest
        offsets.append(-1 if record.offset is None else record.offset)
        keys.append(
            digest.hex() if key is None else _key_of(record.data, names, key, path, record.index, record.offset)
        )
    return bytes(digests), offsets, keys


def _key_of(data: bytes, names: set[bytes], key: str, path: str, index: int, offset: int | None) -> str:
    try:
        value = few_values_of(data, names).get(key)
    except ExampleDecodeError as e:
        raise RecordError(path, index, offset or 0, f"not a tf.train.Example: {e}") from None
    if value is None:
        raise RecordError(
            path,
            index,
            offset or 0,
            f"no feature {key!r}, which --diff matches records by (--key FEATURE names another)",
        )
    return _key_text(value[1])


def file_keys(path: str, key: str, wanted: list[tuple[int, int | None]]) -> list[str]:
    """The key of each wanted record (index, offset) of one file."""
    names = {key.encode("utf-8")}
    payloads = containers.of_file(path).records_at(path, wanted)
    return [
        _key_of(data, names, key, path, index, offset) for (index, offset), data in zip(wanted, payloads, strict=True)
    ]


def keyed(entries: list[Entry], key: str | None, max_record: int) -> None:
    """Give these entries their keys (their hashes where records are matched by content);
    entries whose keys were read with their hashes (file_entries_keyed) keep them."""
    entries = [e for e in entries if not e.key]
    if key is None:
        for entry in entries:
            entry.key = entry.digest.hex()
        return
    by_file: dict[str, list[Entry]] = {}
    for entry in entries:
        by_file.setdefault(entry.path, []).append(entry)
    jobs = [(path, key, [(e.index, e.offset) for e in mine]) for path, mine in by_file.items()]
    # a few records are read here: starting processes would cost more than reading them
    found = each_file(file_keys, jobs) if len(entries) > _FEW else [file_keys(*job) for job in jobs]
    for mine, keys in zip(by_file.values(), found, strict=True):
        for entry, text in zip(mine, keys, strict=True):
            entry.key = text


def first_names(shards: list[Shard], max_record: int) -> set[str] | None:
    """The feature names of the first record of these shards (none for a record that is no
    tf.train.Example: such records are matched by content); None if they hold none."""
    for shard in shards:
        for record in containers.of_file(shard.path).records(shard.path, max_record):
            try:
                return set(outline(record.data, keep=0))
            except ExampleDecodeError:
                return set()
    return None


def chosen_key(names: list[tuple[Side, set[str] | None]], asked: str | None) -> str | None:
    """The feature records are matched by: --key's (which both sides must have), else the
    first of KEYS both sides have, else None (matched by content). `names`: each side and
    its first record's feature names."""
    if asked is not None:
        for one, found in names:
            if found is not None and asked not in found:
                raise OptionError(
                    f"--key {asked!r}: the records of {one.path} have no such feature "
                    f"(they have {', '.join(sorted(found))})"
                )
        return asked
    present = [found for _, found in names if found is not None]
    return next((k for k in KEYS if present and all(k in found for found in present)), None)


def shared_shards(old: list[Shard], new: list[Shard]) -> tuple[list[Shard], list[Shard], list[Shard]]:
    """(old shards to read, new shards to read, shards both list with one sha256)."""

    def listed(shards: list[Shard]) -> Counter[str]:
        return Counter(s.sha256 for s in shards if s.sha256 and s.records is not None)

    common = listed(old) & listed(new)
    shared: list[Shard] = []
    left: list[list[Shard]] = []
    for shards, keep_shared in ((old, True), (new, False)):
        budget = Counter(common)
        rest = []
        for shard in shards:
            if shard.sha256 and shard.records is not None and budget[shard.sha256] > 0:
                budget[shard.sha256] -= 1
                if keep_shared:
                    shared.append(shard)
            else:
                rest.append(shard)
        left.append(rest)
    return left[0], left[1], shared
