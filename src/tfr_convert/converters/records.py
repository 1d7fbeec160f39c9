"""Existing records in: TFRecord (plain, gzip, zlib) or ArrayRecord files, globs, and
dataset directories (ours, or TFDS-prepared `NAME/VERSION` folders), local or remote.

Every record is read once while listing, through the containers' checking readers (a
bad CRC, a truncation: SourceError naming the file, record and byte offset, before
anything is written). Items are where each record's bytes lie: in place for a plain
local TFRecord file, else in a local spool file the listing fills (a compressed
stream or an object cannot be read at an offset). Records are copied byte for byte,
never decoded; the engine frames them anew for the output's container.

Splits: a dataset directory's own, else a split name in the file name (`-train.`,
`-validation.`, `-test.`...), else everything is train; `--split` re-splits them all.
Features: a dataset directory's features.json and class names, carried over as they
are; for files without one, a schema inferred from the first records (record_schema).

This is the one converter that reads containers (through their interface only): its
source is records.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from .. import containers
from ..dataset.existing import ExistingDataset
from ..dataset.features import FeatureSpec
from ..dataset.naming import ShardName
from ..dataset.record_schema import SAMPLE, NoSchema, infer_schema
from ..dataset.splits import SPLIT_NAME, SPLIT_ORDER, SplitSpec, split_by_ratio
from ..dataset.wire.example import ExampleDecodeError, outline, values_of
from ..errors import OutputError, RecordError, SourceError
from ..storage import fs
from .base import Converter, Options, SourceContext, items_per_chunk

#: split names a plain file's name may carry (`data-train.tfrecord`, `x-val.tfrec`)
FILE_SPLITS = {
    "train": "train",
    "validation": "validation",
    "valid": "validation",
    "val": "validation",
    "test": "test",
    "dev": "validation",
    "eval": "test",
}
_SPLIT_IN_NAME = re.compile(r"-([A-Za-z]+)\.")
_METADATA_SUFFIXES = (".json", ".txt", ".md", ".png", ".index", ".pbtxt")


@dataclass(frozen=True)
class RecordsOptions(Options):
    """What `tfr-convert records` takes besides its sources and the shared options."""

    split: SplitSpec | None = None  # re-split every record by these fractions
    split_feature: str | None = None  # the feature whose value names each record's split
    stratify_feature: str | None = None  # --split keeps the proportions of this feature's values
    group_feature: str | None = None  # --split keeps records sharing this feature's value together
    quarantine: str | None = None  # a folder for the raw bytes of every loss
    max_record_size: int = containers.MAX_RECORD_BYTES  # the largest record copied (each is held whole once)

    def problem(self, on_error: str = "fail") -> str | None:
        """What makes these options impossible, with the run's --on-error (skip: salvage
        damaged files, reading past bad records, and report each loss), or None."""
        if self.quarantine is not None and on_error != "skip":
            return "--quarantine keeps what --on-error skip leaves out: add --on-error skip"
        if self.split_feature is not None and (self.split, self.stratify_feature, self.group_feature) != (None,) * 3:
            return "--split-feature names each record's split: drop --split, --stratify-feature and --group-feature"
        if self.split is None and (self.stratify_feature or self.group_feature):
            return "--stratify-feature and --group-feature shape --split's fractions: give --split"
        return None

    def features_read(self) -> tuple[str, ...]:
        """The features each record is read for (none: records are never decoded)."""
        names = (self.split_feature, self.stratify_feature, self.group_feature)
        return tuple(dict.fromkeys(n for n in names if n is not None))


@dataclass(frozen=True)
class _Source:
    """One input file: where it was named, and where its payloads are read from."""

    path: str  # as named (local or remote)
    split: str
    records: int
    crc32c: int  # CRC32C of its payloads one after another: the same records in any container
    read_from: str  # the file itself (plain, local) or the spool
    lost: tuple[int, int] = (0, 0)  # under --on-error skip: bytes and records (known) left out


def _files_of(paths: list[str]) -> tuple[list[tuple[str, str | None]], list[ExistingDataset]]:
    """(file, its split if a dataset directory names it) for every SRC, and the dataset
    directories among them."""
    files: list[tuple[str, str | None]] = []
    datasets = []
    for p in paths:
        if fs.isdir(p):
            if ExistingDataset.holds_dataset(p):
                dataset = ExistingDataset(p)
                datasets.append(dataset)
                for split in dataset.splits():
                    files += [(fs.join(p, name), split) for name in dataset.shard_names(split)]
                continue
            listed = sorted(e for e in fs.files_in(p) if not e.startswith(".") and not e.endswith(_METADATA_SUFFIXES))
            if not listed:
                raise SourceError(f"{p}: directory holds no record files")
            files += [(fs.join(p, e), None) for e in listed]
        elif fs.isfile(p):
            files.append((p, None))
        else:
            matches = sorted(m for m in fs.glob(p) if not fs.isdir(m))
            if not matches:
                raise SourceError(f"{p}: no such file, directory or glob match")
            files += [(m, None) for m in matches]
    return files, datasets


def split_in_name(path: str) -> str:
    """The split a file's name says it holds: a shard name's, a known word after a '-'
    (`-val.` is validation), else train."""
    shard = ShardName.parse(path)
    if shard is not None:
        return shard.split
    for word in reversed(_SPLIT_IN_NAME.findall(fs.basename(path))):
        if word.lower() in FILE_SPLITS:
            return FILE_SPLITS[word.lower()]
    return "train"


def _remove_if_ours(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # not in a worker forked from the process that made it
        shutil.rmtree(folder, ignore_errors=True)


# Records per batch: about CHUNK_BYTES of them, at most 256 (small records, where moving a
# batch between processes would otherwise cost more than the records), so that a worker's
# batch fits its shared slot and what is in flight stays small however large the records.
# From the sizes of the first CHUNK_SAMPLE records listed: the same input, the same batches.
CHUNK_BYTES, CHUNK_SAMPLE = 4 << 20, 64


class RecordsConverter(Converter):
    command = "records"
    description = "Records copied from existing TFRecord / ArrayRecord files."
    chunk_size = 256
    serialized = True

    def __init__(
        self, paths: list[str], options: RecordsOptions | None = None, context: SourceContext | None = None
    ) -> None:
        context = context or SourceContext()
        options = self.begin(options or RecordsOptions(), context, context.on_error)
        self._options = options
        files, datasets = _files_of(paths)
        if len({dataset.name for dataset in datasets}) > 1:
            raise SourceError(f"datasets {sorted({d.name for d in datasets})} differ: give one dataset's directories")
        self._values: dict[tuple[int, int], dict[str, str]] = {}  # (source, record) -> features_read's values
        self._spool_folder: str | None = None
        self._sources: list[_Source] = []
        self._items: dict[str, list[Hashable]] = {}
        sample: list[tuple[str, bytes]] = []
        for path, split in files:
            self._list(path, split or split_in_name(path), sample)
        if sample:
            sizes = [len(data) for _, data in sample[:CHUNK_SAMPLE]]
            self.chunk_size = items_per_chunk(sizes, CHUNK_BYTES, 1, RecordsConverter.chunk_size)
        if datasets:
            dataset = datasets[0]
            self.dataset_name = dataset.name
            self.features = {name: FeatureSpec.from_tfds(d) for name, d in dataset.features.items()}
            self.labels = dataset.class_names()
            self.description = dataset.info.get("description") or self.description
            keys = dataset.info.get("supervisedKeys")
            self.supervised_keys = keys if isinstance(keys, dict) else {}
        else:
            self.dataset_name = "records"
            self.labels = {}
            try:
                self.features = infer_schema(sample)
            except NoSchema as e:
                self.features = {}
                self.warnings.append(
                    f"no schema written ({e}): the records are copied as they are, but TFDS and "
                    "load() need one to parse them"
                )
        self._label = options.stratify_feature or _label_feature(self.supervised_keys, self.features)
        self._fds: dict[str, int] = {}
        self._fds_pid = 0

    # ------------------------------------------------------------ listing

    def _spool(self) -> str:
        if self._spool_folder is None:
            self._spool_folder = tempfile.mkdtemp(prefix="tfr-convert-records-")
            weakref.finalize(self, _remove_if_ours, self._spool_folder, os.getpid())
        return self._spool_folder

    def _list(self, path: str, split: str, sample: list[tuple[str, bytes]]) -> None:
        container = containers.of_file(path)
        in_place = not fs.is_remote(path) and container.name == "tfrecord" and container.compression(path) == "none"
        number = len(self._sources)
        read_from = path if in_place else os.path.join(self._spool(), f"{number:06d}")
        spool = None if in_place else open(read_from, "wb")
        crc = 0
        items = self._items.setdefault(split, [])
        written = count = lost_bytes = lost_records = 0
        salvaging = self.context.on_error == "skip"
        read_for = self._options.features_read()
        try:
            limit = self._options.max_record_size
            for record in container.salvage(path, limit) if salvaging else container.records(path, limit):
                if isinstance(record, containers.Loss):
                    self._lose(number, path, record)
                    lost_bytes += record.end - record.start
                    lost_records += record.records or 0
                    continue
                data = record.data
                crc = containers.crc32c(data, crc)  # the content's checksum: the hardware CRC, cheap beside a sha256
                if in_place:
                    at = record.offset + 12  # past the length and its CRC
                else:
                    at = written
                    spool.write(data)
                    written += len(data)
                item = (number, record.index, at, len(data))
                if read_for:
                    values = self._values[number, record.index] = _read_values(path, record.index, data, read_for)
                    if self._options.split_feature:
                        items = self._items.setdefault(_split_named(path, record.index, values, self._options), [])
                items.append(item)
                if len(sample) < SAMPLE:
                    sample.append((f"{path}: record {record.index}", data))
                count += 1
        finally:
            if spool is not None:
                spool.close()
        self._sources.append(_Source(path, split, count, crc, read_from, (lost_bytes, lost_records)))

    def _lose(self, number: int, path: str, loss: containers.Loss) -> None:
        """A loss reported (stderr, --json and the manifest list skipped items) and its bytes
        quarantined."""
        entry = {
            "item": f"{path}: bytes {loss.start}-{loss.end}",
            "reason": loss.summary(),
            "file": path,
            "start": loss.start,
            "end": loss.end,
            "records": loss.records,
        }
        if self._options.quarantine is not None and loss.end > loss.start:
            kept = fs.join(self._options.quarantine, f"{number:05d}-{fs.basename(path)}.{loss.start}-{loss.end}.bad")
            fs.makedirs(self._options.quarantine)
            try:
                fs.put_new(kept, loss.kept)
            except FileExistsError:
                raise OutputError(
                    f"{kept}: exists already, and a quarantine never replaces a file: give --quarantine a new "
                    "or empty folder"
                ) from None
            entry["quarantined"] = kept
            if not loss.whole:
                entry["quarantined_bytes"] = len(loss.kept)  # the first ones: each loss keeps at most so many
        self.skipped.extend([entry])

    # ------------------------------------------------------------ the Converter interface

    def source_splits(self) -> dict[str, list[Hashable]]:
        given = {s: self._items[s] for s in sorted(self._items, key=_split_rank)}
        self._items = {}
        if self._options.split is None:
            return given
        everything = [item for items in given.values() for item in items]
        stratify, group = self._options.stratify_feature, self._options.group_feature
        values = self._values

        def stratum(item: Hashable) -> str:
            return values[item[:2]][stratify]  # type: ignore[index]

        groups = [values[item[:2]][group] for item in everything] if group else None  # type: ignore[index]
        splits, said = split_by_ratio(
            everything,
            self.key,
            self._options.split,
            self.context.seed,
            stratum if stratify else None,
            groups,
            self.context.per_item_splits,
        )
        self._values = {}
        self.warnings += [said] if said else []
        return splits

    def key(self, item: Hashable) -> str:
        number, index, _, _ = item  # type: ignore[misc]
        return f"{self._sources[number].path}#{index}"

    def describe(self, item: Hashable) -> str:
        number, index, _, _ = item  # type: ignore[misc]
        return f"{self._sources[number].path}: record {index}"

    def features_of(self, item: Hashable) -> bytes:  # type: ignore[override]
        number, index, at, length = item  # type: ignore[misc]
        data = os.pread(self._fd(number), length, at)
        if len(data) != length:
            source = self._sources[number]
            raise RecordError(source.path, index, at, "the file is shorter than when it was listed (changed since?)")
        return data

    def _fd(self, number: int) -> int:
        if self._fds_pid != os.getpid():  # descriptors are per process (workers fork)
            self._fds, self._fds_pid = {}, os.getpid()
        path = self._sources[number].read_from
        fd = self._fds.get(path)
        if fd is None:
            fd = self._fds[path] = os.open(path, os.O_RDONLY)
        return fd

    def label_of(self, item: Hashable) -> Hashable | None:
        if self._label is None:
            return None
        try:
            _, values = values_of(self.features_of(item), (self._label,)).get(self._label, (None, []))
        except ExampleDecodeError:
            return None
        return tuple(values) if len(values) != 1 else values[0]

    def sources(self) -> list[dict[str, Any]]:
        listed = []
        for s in self._sources:
            source = {"file": s.path, "split": s.split, "records": s.records, "records_crc32c": f"{s.crc32c:08x}"}
            if self.context.on_error == "skip":
                source["lost_bytes"], source["lost_records_known"] = s.lost
            listed.append(source)
        return listed

    def recorded_options(self) -> dict[str, Any]:
        o = self._options
        return {
            "split": o.split.describe() if o.split else None,
            "split_feature": o.split_feature,
            "stratify_feature": o.stratify_feature,
            "group_feature": o.group_feature,
        }

    def __getstate__(self) -> dict[str, Any]:  # open descriptors stay in their process
        return {**self.__dict__, "_fds": {}, "_fds_pid": 0}


def _label_feature(keys: dict[str, Any] | None, features: dict[str, FeatureSpec]) -> str | None:
    """The feature that holds the records' class: the label of the supervised keys carried
    over, else the one class label among the features, else an integer `label`."""
    if keys:
        items = keys.get("tuple", {}).get("items") if isinstance(keys.get("tuple"), dict) else None
        named = [i.get("featureKey") for i in items if isinstance(i, dict)] if isinstance(items, list) else []
        label = named[-1] if len(named) == 2 else keys.get("output")  # TFDS's current form, or its older one
        if isinstance(label, str):
            return label
    labels = [name for name, f in features.items() if f.is_class_label]
    if len(labels) == 1:
        return labels[0]
    return "label" if "label" in features else None


def _read_values(path: str, index: int, data: bytes, names: tuple[str, ...]) -> dict[str, str]:
    """The features a split is decided by, each as text (a bytes value decoded, numbers
    written out, several values joined by '|'); SourceError naming the record if one is
    missing or the record is not an Example."""
    where = f"{path}: record {index}"
    try:
        read = values_of(data, names)
    except ExampleDecodeError as e:
        raise SourceError(f"{where}: not a tf.train.Example ({e}), so it has no feature {names[0]!r}") from None
    texts = {}
    for name in names:
        _, values = read.get(name, (None, []))
        if not values:
            has = ", ".join(sorted(outline(data, keep=0))) or "none"
            raise SourceError(f"{where}: no value for feature {name!r} (its features: {has})")
        texts[name] = "|".join(_text(v) for v in values)
    return texts


def _split_named(path: str, index: int, values: dict[str, str], options: RecordsOptions) -> str:
    name = values[options.split_feature]  # type: ignore[index]
    if not SPLIT_NAME.fullmatch(name):
        raise SourceError(
            f"{path}: record {index}: --split-feature {options.split_feature} is {name!r}, "
            "not a split name like train, validation or test"
        )
    return name


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return repr(value) if isinstance(value, float) else str(value)


def _split_rank(split: str) -> tuple[int, str]:
    return (SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER), split)
