"""CIFAR-10 / CIFAR-100 "python version" -> examples.

Sources: the extracted folder (`cifar-10-batches-py`, `cifar-100-python`), a
folder holding it, or the downloaded `.tar.gz`, read member by member straight
from the archive (nothing is extracted to disk). Every pickle goes through
`safe_pickle.safe_load` and its contents are validated before use: `data` is
uint8 (N, 3072), labels are exact ints in range, lengths agree, class names
are strings and as many as the classes.

Each row of `data` holds 1024 red, then 1024 green, then 1024 blue values;
the `image` feature stores them channel-last, (32, 32, 3), like every image
library and the CIFAR tutorial's reader expect.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Hashable
from operator import itemgetter
from typing import Any, BinaryIO, TypeVar

import numpy as np

from ...dataset.features import FeatureSpec
from ...errors import SourceError, shown
from ...pictures.imaging import encode_png
from ...pictures.png import encode_pngs
from ...storage.reading import HashingReader
from ..base import CATALOG_VERSIONS, Background, Columns, Converter, Group, PublishedOptions, SourceContext
from .cifar_files import LAYOUTS, LabelKind, Layout, Member, detect, list_folder, locate, read_archive
from .safe_pickle import UnsafePickleError, safe_load

T = TypeVar("T")
ROW_BYTES = 32 * 32 * 3


# ---------------------------------------------------------------- validating


def _as_dict(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise SourceError(f"{where}: expected a dict, found {type(obj).__name__}")
    out = {}
    for key, value in obj.items():
        if isinstance(key, bytes):
            key = key.decode("latin-1")
        if not isinstance(key, str):
            raise SourceError(f"{where}: unexpected key {shown(key)}")
        out[key] = value
    return out


def _require(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d:
        raise SourceError(f"{where}: missing key {key!r} (keys: {', '.join(sorted(d)) or 'none'})")
    return d[key]


def _load(where: str, data: bytes | BinaryIO) -> dict[str, Any]:
    try:
        return _as_dict(safe_load(data), where)
    except UnsafePickleError as e:
        raise SourceError(f"{where}: not a safe CIFAR pickle: {e}") from None


def _names(meta: dict[str, Any], kind: LabelKind, where: str) -> list[str]:
    names = _require(meta, kind.names_key, where)
    if not isinstance(names, list):
        raise SourceError(f"{where}: {kind.names_key} is a {type(names).__name__}, expected a list")
    out = []
    for i, name in enumerate(names):
        try:
            out.append(name.decode("utf-8") if isinstance(name, bytes) else name)
        except UnicodeDecodeError:
            raise SourceError(f"{where}: {kind.names_key}[{i}] is not UTF-8") from None
        if not isinstance(out[-1], str):
            raise SourceError(f"{where}: {kind.names_key}[{i}] is a {type(name).__name__}, expected a string")
    if len(out) != kind.num_classes:
        raise SourceError(f"{where}: {kind.names_key} has {len(out)} names, expected {kind.num_classes}")
    return out


def _batch(where: str, d: dict[str, Any], kinds: tuple[LabelKind, ...]) -> tuple[np.ndarray, list[list[int]]]:
    data = _require(d, "data", where)
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != ROW_BYTES:
        held = f"{data.dtype} {data.shape}" if isinstance(data, np.ndarray) else type(data).__name__
        raise SourceError(f"{where}: data is {held}, expected uint8 (N, {ROW_BYTES})")
    all_labels = []
    for kind in kinds:
        labels = _require(d, kind.labels_key, where)
        if not isinstance(labels, list):
            raise SourceError(f"{where}: {kind.labels_key} is a {type(labels).__name__}, expected a list")
        if len(labels) != len(data):
            raise SourceError(f"{where}: {len(labels)} {kind.labels_key} for {len(data)} images")
        for i, label in enumerate(labels):
            if type(label) is not int or not 0 <= label < kind.num_classes:
                raise SourceError(
                    f"{where}: {kind.labels_key}[{i}] = {shown(label)} is not a class index in 0..{kind.num_classes - 1}"
                )
        all_labels.append(labels)
    return data, all_labels


def _text_names(where: str, data: bytes, kind: LabelKind) -> list[str]:
    """Class names of the binary version: one per line (blank lines ignored)."""
    try:
        names = [line.strip() for line in data.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError as e:
        raise SourceError(f"{where}: not UTF-8 text (byte {e.start})") from None
    if len(names) != kind.num_classes:
        raise SourceError(f"{where}: {len(names)} class names, expected {kind.num_classes}")
    return names


def _binary_batch(where: str, raw: bytes, layout: Layout) -> tuple[np.ndarray, list[list[int]]]:
    """A batch of the binary version: fixed-size records, label bytes then the same
    planar pixels as the pickles' data rows."""
    record = len(layout.label_kinds) + ROW_BYTES
    if not raw or len(raw) % record:
        raise SourceError(f"{where}: {len(raw)} bytes, not a whole number of {record}-byte CIFAR records")
    rows = np.frombuffer(raw, np.uint8).reshape(-1, record)
    labels: list[list[int]] = [[] for _ in layout.label_kinds]
    for column, kind_index in enumerate(layout.label_order):
        kind = layout.label_kinds[kind_index]
        values = rows[:, column]
        bad = np.flatnonzero(values >= kind.num_classes)
        if len(bad):
            i = int(bad[0])
            raise SourceError(
                f"{where}: record {i} (byte {i * record + column}): label {int(values[i])} is not a class index "
                f"in 0..{kind.num_classes - 1}"
            )
        labels[kind_index] = values.tolist()
    return rows[:, len(layout.label_kinds) :], labels


def channel_last(rows: np.ndarray) -> np.ndarray:
    """(N, 3072) planar rows (1024 R, 1024 G, 1024 B) -> (N, 3072) interleaved RGB (32, 32, 3).

    One strided copy per channel: about twice as fast as a 4-D transpose.
    """
    planes = rows.reshape(len(rows), 3, 1024)
    out = np.empty((len(rows), ROW_BYTES), np.uint8)
    interleaved = out.reshape(len(rows), 1024, 3)
    for channel in range(3):
        interleaved[:, :, channel] = planes[:, channel, :]
    return out


# ---------------------------------------------------------------- converter


class CifarConverter(Converter):
    command = "cifar"
    chunk_size = 4096  # the raw layout is encoded a whole batch at a time (columns_of)

    def __init__(self, src: str, options: PublishedOptions | None = None, context: SourceContext | None = None) -> None:
        """layout "tfds": exactly TFDS's catalog features (id, image PNG, label, coarse_label)."""
        options = self.begin(options or PublishedOptions(), context)
        variant = options.variant
        self.layout = options.layout
        self.image_format = options.pixels
        location = locate(src)
        self._sources: list[dict[str, Any]] = []
        if os.path.isfile(location):
            by_name, archive_fingerprint = read_archive(location)
            self._sources.append(archive_fingerprint)
        else:
            by_name = list_folder(location)
        try:
            self.variant, layout = detect(by_name, location, variant)
        except SourceError:
            if variant is None:
                raise
            self.variant, layout = variant, LAYOUTS[variant]  # its files are named as missing below
        missing = [m for m in layout.members if m not in by_name]
        if missing:
            raise SourceError(f"{location}: missing {', '.join(missing)} ({self.variant})")

        # A helper thread hashes a folder's files as they are parsed (hashing releases
        # the GIL). Engines settle it before forking workers.
        self._hashes = Background()
        self._fingerprinted = [] if self._sources else list(layout.members)  # an archive's sha256 covers its members
        self.kinds = layout.label_kinds
        if layout.binary:
            self.class_names = [
                self._parse(f, by_name[f], lambda where, stream, kind=kind: _text_names(where, stream.read(), kind))
                for f, kind in zip(layout.names_files, self.kinds, strict=True)
            ]
        else:
            meta = by_name[layout.meta]
            loaded = self._parse(layout.meta, meta, _load)
            self.class_names = [_names(loaded, kind, meta.where) for kind in self.kinds]
        self._labels: dict[str, list[np.ndarray]] = {}
        self._rows: dict[str, list[tuple[int, str]]] = {}  # split -> (first index, member) per batch
        # Pixels stay planar, as parsed (no copy of the whole dataset): each encoded
        # batch gathers its rows and turns them channel-last while they are in cache.
        self._planes: dict[str, tuple[list[np.ndarray], np.ndarray]] = {}  # split -> (batches, first index of each)
        for split, members in (("train", layout.train), ("test", layout.test)):
            self._read_split(split, members, by_name, layout)
        self.dataset_name = self.variant
        if self.layout == "tfds":
            self.tfds_layout = True
            self.catalog = (self.variant, CATALOG_VERSIONS[self.variant])
        self.description = f"{'CIFAR-10' if self.variant == 'cifar10' else 'CIFAR-100'}: 32x32 RGB images."
        self._declare_features()

    def _read_split(self, split: str, members: list[str], by_name: dict[str, Member], layout: Layout) -> None:
        """A split's batches, parsed in order: their planar pixels, labels, and where each begins."""
        labels: list[list[int]] = [[] for _ in self.kinds]
        starts: list[tuple[int, str]] = []
        total, planes = 0, []
        for m in members:
            member = by_name.pop(m)  # an archive's bytes go once parsed
            if layout.binary:
                data, batch_labels = self._parse(
                    m, member, lambda where, stream: _binary_batch(where, stream.read(), layout)
                )
            else:
                data, batch_labels = self._parse(
                    m, member, lambda where, stream: _batch(where, _load(where, stream), self.kinds)
                )
            planes.append(data)
            for acc, lab in zip(labels, batch_labels, strict=True):
                acc.extend(lab)
            starts.append((total, member.where))
            total += len(data)
        self._labels[split] = [np.array(lab, np.int64) for lab in labels]
        self._planes[split] = (planes, np.array([start for start, _ in starts], np.int64))
        self._rows[split] = starts

    def _declare_features(self) -> None:
        """The image and each label kind's index and name; TFDS's names under --layout tfds."""
        image = (
            FeatureSpec.raw_image((32, 32, 3)) if self.image_format == "raw" else FeatureSpec.image((32, 32, 3), "png")
        )
        self.features = {"image": image}
        self.labels = {}
        for kind, names in zip(self.kinds, self.class_names, strict=True):
            self.features[f"{kind.feature_prefix}label_index"] = FeatureSpec.class_label(kind.num_classes)
            self.features[f"{kind.feature_prefix}label_name"] = FeatureSpec.tensor("string")
            self.labels[f"{kind.feature_prefix}label_index"] = names
        if self.layout == "tfds":  # TFDS's names: label (the fine one), coarse_label, and an id per example
            self.features = {"id": FeatureSpec.text(), "image": image}
            self.labels = {}
            for kind, names in zip(self.kinds, self.class_names, strict=True):
                self.features[f"{kind.feature_prefix}label"] = FeatureSpec.class_label(kind.num_classes)
                self.labels[f"{kind.feature_prefix}label"] = names

    def _parse(self, name: str, member: Member, parse: Callable[[str, BinaryIO], T]) -> T:
        """parse(where, stream) of one member. A folder's file is read here, once, by
        the parser itself, and fingerprinted from the very bytes it read (hashed on
        the helper thread: a file changed under the run cannot get another's digest)."""
        if member.data is not None:
            return parse(member.where, io.BytesIO(member.data))
        with open(member.where, "rb") as f:
            reader = HashingReader(f, hash_on=self._hashes.run)
            result = parse(member.where, reader)
            reader.drain()
        if reader.size != member.size:
            raise SourceError(
                f"{member.where}: changed while it was read ({member.size} bytes when listed, {reader.size} read)"
            )
        digest = reader.hash
        self._hashes.submit(name, lambda: {"file": name, "bytes": member.size, "sha256": digest.hexdigest()})
        return result

    def source_splits(self) -> dict[str, list[Hashable]]:
        return {split: [(split, i) for i in range(len(labels[0]))] for split, labels in self._labels.items()}

    def key(self, item: Hashable) -> str:
        split, i = item  # type: ignore[misc]
        return f"{split}/{i}"

    def describe(self, item: Hashable) -> str:
        split, i = item  # type: ignore[misc]
        start, where = max((s for s in self._rows[split] if s[0] <= i), key=lambda s: s[0])
        return f"{where}: row {i - start}"

    def label_of(self, item: Hashable) -> Hashable | None:
        split, i = item  # type: ignore[misc]
        return int(self._labels[split][0][i])  # the first kind's (CIFAR-100: its fine label)

    def features_of(self, item: Hashable) -> dict[str, Any]:
        split, i = item  # type: ignore[misc]
        pixels = self._planar_rows(split, np.array([i]))[0].reshape(3, 32, 32).transpose(1, 2, 0)
        image = np.ascontiguousarray(pixels).tobytes() if self.image_format == "raw" else encode_png(pixels)
        return self._features(split, i, image)

    def features_of_each(self, items: list[Hashable]) -> list[dict[str, Any]] | None:
        """PNG images: the batch's images compressed together."""
        splits = set(map(itemgetter(0), items))
        if self.image_format == "raw" or len(splits) != 1:
            return None
        split = splits.pop()
        index = np.fromiter(map(itemgetter(1), items), np.int64, len(items))
        images = encode_pngs(channel_last(self._planar_rows(split, index)).reshape(-1, 32, 32, 3))
        return [self._features(split, i, image) for i, image in zip(index.tolist(), images, strict=True)]

    def _features(self, split: str, i: int, image: bytes) -> dict[str, Any]:
        labels = self._labels[split]
        features: dict[str, Any] = {"image": image}
        if self.layout == "tfds":  # as TFDS's cifar builder: "train_00042", in the source's order
            features["id"] = f"{split}_{i:05d}"
            for kind, kind_labels in zip(self.kinds, labels, strict=True):
                features[f"{kind.feature_prefix}label"] = int(kind_labels[i])
            return features
        for kind, kind_labels, names in zip(self.kinds, labels, self.class_names, strict=True):
            index = int(kind_labels[i])
            features[f"{kind.feature_prefix}label_index"] = index
            features[f"{kind.feature_prefix}label_name"] = names[index]
        return features

    def columns_of(self, items: list[Hashable]) -> Columns | None:
        """Raw layout: records of one class share every byte but the pixels, so the
        batch is one group per class present."""
        splits = set(map(itemgetter(0), items))
        if self.image_format != "raw" or len(splits) != 1:
            return None
        split = splits.pop()
        labels = self._labels[split]
        index = np.fromiter(map(itemgetter(1), items), np.int64, len(items))
        classes = np.stack([kind_labels[index] for kind_labels in labels], axis=1)
        code = np.zeros(len(index), np.int64)  # one number per (fine, coarse) pair: a 1-D unique is cheap
        for column, kind in enumerate(self.kinds):
            code = code * kind.num_classes + classes[:, column]
        # The rows are gathered once, class after class, and turned channel-last in one
        # pass: each class is then a slice of that (a view, no copy of its own).
        order = np.argsort(code, kind="stable")
        pixels = channel_last(self._planar_rows(split, index[order]))
        bounds = np.flatnonzero(np.diff(code[order])) + 1
        groups = []
        for start, stop in zip([0, *bounds.tolist()], [*bounds.tolist(), len(index)], strict=True):
            positions = order[start:stop]
            prototype: dict[str, Any] = {"image": b""}
            for kind, label, names in zip(self.kinds, classes[positions[0]].tolist(), self.class_names, strict=True):
                prototype[f"{kind.feature_prefix}label_index"] = label
                prototype[f"{kind.feature_prefix}label_name"] = names[label]
            groups.append(Group(prototype, {"image": pixels[start:stop]}, positions))
        return Columns(groups, len(index))

    def _planar_rows(self, split: str, index: np.ndarray) -> np.ndarray:
        """The planar (N, 3072) rows of a split's images at `index`, gathered from its batches."""
        planes, firsts = self._planes[split]
        batch = np.searchsorted(firsts, index, side="right") - 1
        out = np.empty((len(index), ROW_BYTES), np.uint8)
        for b in np.flatnonzero(np.bincount(batch, minlength=len(planes))):  # the batches present
            take = np.flatnonzero(batch == b)
            out[take] = planes[b][index[take] - firsts[b]]
        return out

    def finish_loading(self) -> None:
        self._hashes.finish_loading()

    def sources(self) -> list[dict[str, Any]]:
        return self._sources or [self._hashes.get(m) for m in self._fingerprinted]

    def recorded_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"variant": self.variant, "image_format": self.image_format, "layout": self.layout}
        if self.image_format == "raw":  # how to turn the bytes back into pixels (tfr_convert.load, --grid)
            options["raw_image"] = {"feature": "image", "shape": [32, 32, 3]}
        return options
