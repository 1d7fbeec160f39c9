"""MNIST-family idx files (MNIST, Fashion-MNIST, KMNIST) -> examples: the four files
of a folder (read by idx.py), their labels checked against the class count, their
images stored raw or as PNG."""

from __future__ import annotations

import os
from collections.abc import Hashable
from operator import itemgetter
from typing import Any

import numpy as np

from ...dataset.features import FeatureSpec
from ...errors import SourceError
from ...pictures.imaging import encode_png
from ...pictures.png import encode_pngs
from ..base import (
    CATALOG_VERSIONS,
    Background,
    Columns,
    Converter,
    Group,
    PublishedOptions,
    SourceContext,
    fingerprint,
)
from .idx import FILES, IMAGES_MAGIC, LABELS_MAGIC, SPLITS, ImageFiles, find_source, idx_dims, parse_idx, read_file

NUM_CLASSES = 10
VARIANTS = ("mnist", "fashion_mnist", "kmnist")
CLASS_NAMES = {
    "mnist": [str(i) for i in range(10)],
    "fashion_mnist": [
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ],
    "kmnist": ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"],
}


class MnistConverter(Converter):
    command = "mnist"
    chunk_size = 4096  # the raw layout is encoded a whole batch at a time (columns_of)
    description = "MNIST-format idx images (28x28 grayscale) with class labels."

    #: labels lie in 0..num_classes-1 (set before the files are read: EMNIST's depend on the variant)
    num_classes = NUM_CLASSES

    def __init__(
        self,
        source: str | ImageFiles,
        options: PublishedOptions | None = None,
        context: SourceContext | None = None,
    ) -> None:
        """`source`: the folder, or its images files set inflating already by
        idx.start_images (by a caller that starts them before it imports this module, and
        numpy)."""
        options = self.begin(options or PublishedOptions(), context)
        images = source if isinstance(source, ImageFiles) else None
        self.src_dir = src_dir = images.folder if images else str(source)
        self.layout = layout = options.layout
        self.image_format = image_format = options.pixels
        self._labels: dict[str, np.ndarray] = {}
        self._images = images.arrays if images else Background()
        self._paths: dict[tuple[str, str], str] = {}
        self._sources: list[dict[str, Any]] = []
        # Inflating the images runs on a thread (zlib releases the GIL) while the
        # caller plans the splits, which needs only the labels; every header is
        # still checked here. Engines settle it before forking workers.
        shapes = {self._read_split(split, images) for split in SPLITS}
        if len(shapes) != 1:
            raise SourceError(f"{src_dir}: train and test images differ in size: {sorted(shapes)}")
        self.height, self.width = shapes.pop()
        self.variant = options.variant or self._detect_variant()
        self.dataset_name = self.variant
        size = {
            "height": FeatureSpec.tensor("int64"),
            "width": FeatureSpec.tensor("int64"),
            "depth": FeatureSpec.tensor("int64"),
        }
        image = (
            {"image_raw": FeatureSpec.raw_image((self.height, self.width, 1))}
            if image_format == "raw"
            else {"image": FeatureSpec.image((self.height, self.width, 1), "png")}
        )
        self.features = {**image, "label": FeatureSpec.class_label(self.num_classes), **size}
        if layout == "tfds":
            self.tfds_layout = True
            self.features = {"image": image["image"], "label": self.features["label"]}
            if self.variant in CATALOG_VERSIONS:
                self.catalog = (self.variant, CATALOG_VERSIONS[self.variant])
        self.labels = {"label": self.class_names()}

    def _read_split(self, split: str, images: ImageFiles | None) -> tuple[int, ...]:
        """A split's labels, checked against its images' header (their inflating set going
        on a thread, unless the caller started it); the images' (height, width)."""
        if images:
            images_path, images_raw = images.files[split]
        else:
            images_path, images_raw = self._read_source(split, "images")
        dims = idx_dims(images_path, images_raw, IMAGES_MAGIC, 3)
        if not images:  # inflating the images is the longest step of a conversion: it starts first
            self._images.submit(split, self._parse_images, images_path, images_raw)
        labels_path, labels_raw = self._read_source(split, "labels")
        self._paths[split, "images"], self._paths[split, "labels"] = images_path, labels_path
        self._sources += [fingerprint(images_path, images_raw), fingerprint(labels_path, labels_raw)]
        labels = parse_idx(labels_path, labels_raw, LABELS_MAGIC, 1)
        if dims[0] != len(labels):
            raise SourceError(f"{images_path}: holds {dims[0]} images but {labels_path} holds {len(labels)} labels")
        bad = np.flatnonzero(labels >= self.num_classes)
        if bad.size:
            i = int(bad[0])
            raise SourceError(
                f"{labels_path}: label {labels[i]} at index {i} (byte {8 + i}) is outside 0..{self.num_classes - 1}"
            )
        self._labels[split] = labels
        return tuple(dims[1:])

    def _read_source(self, split: str, what: str) -> tuple[str, bytes]:
        """(where, bytes) of one of the four idx files."""
        path = find_source(self.src_dir, FILES[split, what])
        return path, read_file(path)

    def _parse_images(self, where: str, raw: bytes) -> np.ndarray:
        """The (N, H, W) pixels of an images file, as they are to be stored."""
        return parse_idx(where, raw, IMAGES_MAGIC, 3)

    def class_names(self) -> list[str]:
        return CLASS_NAMES[self.variant]

    def _detect_variant(self) -> str:
        """A known variant when every source file matches its published checksum, else mnist."""
        from ...storage.download import files_of

        ours = {s["file"]: s["sha256"] for s in self._sources}
        for variant in VARIANTS:
            published = {os.path.basename(f.file): f.digest for f in files_of(variant) if f.algorithm == "sha256"}
            if published and published == ours:
                return variant
        return "mnist"

    def source_splits(self) -> dict[str, list[Hashable]]:
        return {split: [(split, i) for i in range(len(self._labels[split]))] for split in SPLITS}

    def key(self, item: Hashable) -> str:
        split, i = item  # type: ignore[misc]
        return f"{split}/{i}"

    def describe(self, item: Hashable) -> str:
        split, i = item  # type: ignore[misc]
        return f"{self._paths[split, 'images']}: image {i}"

    def label_of(self, item: Hashable) -> Hashable | None:
        split, i = item  # type: ignore[misc]
        return int(self._labels[split][i])

    def features_of(self, item: Hashable) -> dict[str, Any]:
        split, i = item  # type: ignore[misc]
        images, labels = self._split_arrays(split)
        pixels = images[i]
        if self.image_format == "raw":
            return self._features({"image_raw": pixels.tobytes()}, labels[i])
        return self._features({"image": encode_png(pixels)}, labels[i])

    def features_of_each(self, items: list[Hashable]) -> list[dict[str, Any]] | None:
        """PNG images: the batch's images compressed together."""
        splits = set(map(itemgetter(0), items))
        if self.image_format == "raw" or len(splits) != 1:
            return None
        images, labels = self._split_arrays(splits.pop())
        index = np.fromiter(map(itemgetter(1), items), np.int64, len(items))
        pngs = encode_pngs(images[index])
        return [self._features({"image": data}, label) for data, label in zip(pngs, labels[index], strict=True)]

    def _features(self, image: dict[str, bytes], label: np.integer) -> dict[str, Any]:
        if self.layout == "tfds":
            return {**image, "label": int(label)}
        return {**image, "label": int(label), "height": self.height, "width": self.width, "depth": 1}

    def columns_of(self, items: list[Hashable]) -> Columns | None:
        """Raw layout: every record is the same bytes but for the pixels and the label."""
        splits = set(map(itemgetter(0), items))
        if self.image_format != "raw" or len(splits) != 1:
            return None
        images, labels = self._split_arrays(splits.pop())
        index = np.fromiter(map(itemgetter(1), items), np.int64, len(items))
        prototype = {"image_raw": b"", "label": 0, "height": self.height, "width": self.width, "depth": 1}
        varying = {"image_raw": images[index].reshape(len(index), -1), "label": labels[index]}
        return Columns([Group(prototype, varying)], len(index))

    def _split_arrays(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """(images, labels) of a split; waits for the images' inflation (its errors surface here)."""
        return self._images.get(split), self._labels[split]

    def finish_loading(self) -> None:
        self._images.finish_loading()

    def sources(self) -> list[dict[str, Any]]:
        return self._sources

    def recorded_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"variant": self.variant, "image_format": self.image_format, "layout": self.layout}
        if self.image_format == "raw":  # how to turn the bytes back into pixels (tfr_convert.load, --grid)
            options["raw_image"] = {"feature": "image_raw", "shape": [self.height, self.width, 1]}
        return options
