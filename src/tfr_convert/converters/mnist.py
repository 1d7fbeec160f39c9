"""MNIST-family idx files (MNIST, Fashion-MNIST, KMNIST) -> examples.

The idx format: a big-endian header `0 0 <dtype> <rank>` then one uint32 per
dimension, then the data, row-major. Images are magic 2051 (uint8, rank 3),
labels 2049 (uint8, rank 1). Every header is checked against the file's real
size instead of trusting it, and a gzip is never inflated past the size its idx
header implies (a gzip bomb fails fast, a truncated one fails clearly).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import math
import os
import struct
import zlib
from collections.abc import Hashable, Iterator
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from ..errors import SourceError
from ..features import FeatureSpec
from ..streams import read_up_to
from .base import CATALOG_VERSIONS, Background, Columns, Converter, Group, PublishedOptions, fingerprint
from .imaging import encode_png
from .png import encode_pngs

IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049
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
# (split, what) -> the file stem every variant uses
FILES = {
    ("train", "images"): "train-images-idx3-ubyte",
    ("train", "labels"): "train-labels-idx1-ubyte",
    ("test", "images"): "t10k-images-idx3-ubyte",
    ("test", "labels"): "t10k-labels-idx1-ubyte",
}


def find_source(src_dir: str, stem: str) -> str:
    """The file for a stem: plain or gzipped, `-idx` or `.idx` spelling."""
    dotted = stem.replace("-idx", ".idx")
    for name in (stem, stem + ".gz", dotted, dotted + ".gz"):
        path = os.path.join(src_dir, name)
        if os.path.isfile(path):
            return path
    raise SourceError(f"{src_dir}: missing {stem} (or {stem}.gz)")


# gzip input is inflated this much at a time, straight into one buffer. Small slices:
# each call's output (a few times the slice, for idx data) is a block the allocator
# hands back for the next call, where the output of large calls is fresh memory whose
# every page the kernel must map and zero, which costs more than the calls saved.
_INFLATE_SLICE = 128 << 10
# at most this much output per call (deflate can expand a slice up to 1032 times)
_INFLATE_PIECE = 4 << 20
# the buffer's first size, in bytes per byte of gzip: idx images compress 3 to 5 times;
# a stream that compresses better doubles the buffer as it outgrows it
_FIRST_RATIO = 16
# deflate cannot expand data by more than 1032:1, so a gzip of n bytes holds at most this much
_MAX_INFLATION = 1032


class _Inflated(NamedTuple):
    data: memoryview
    eof: bool  # the gzip member's end was reached (and its CRC and length checked)
    after: bytes  # what follows that end: empty, or its first bytes


def _inflate(raw: bytes, limit: int) -> _Inflated:
    """Up to `limit` bytes of a gzip stream, inflated into one buffer: the input goes
    in slices (views, no copies), each slice's output is copied to its place."""
    inflater = zlib.decompressobj(wbits=31)  # gzip framing; zlib checks its CRC and length
    # filled through a memoryview, which keeps the GIL: numpy's copy lets it go and must
    # then wait for it, up to a switch interval, while the caller plans the splits
    view = memoryview(np.empty(min(limit, _FIRST_RATIO * len(raw) + _INFLATE_PIECE), np.uint8))
    n, source, at, tail = 0, memoryview(raw), 0, b""
    while n < limit and not inflater.eof:
        if not tail:
            if at >= len(raw):
                break  # the input ran out (a truncated stream)
            tail, at = source[at : at + _INFLATE_SLICE], at + _INFLATE_SLICE
        piece = inflater.decompress(tail, min(_INFLATE_PIECE, limit - n))  # bounded by what the header declares
        if n + len(piece) > len(view):  # never past the limit: the call was bounded by it
            grown = memoryview(np.empty(min(limit, 2 * len(view)), np.uint8))
            grown[:n] = view[:n]
            view = grown
        view[n : n + len(piece)] = piece
        n += len(piece)
        tail = inflater.unconsumed_tail
    # past the stream's end: its first bytes (input not yet fed is not "after" unless the end was reached)
    after = inflater.unused_data + raw[at : at + 2] if inflater.eof else b""
    return _Inflated(view[:n], inflater.eof, after)


def _read_data(path: str, stream, raw: bytes, header: int, expected: int, gzipped: bool):
    """(the data section, whether anything follows it). Plain files: a view of `raw`.
    A gzip: inflated in slices, in all bounded by the size the header declares (+1, to
    see if there is more); the streaming reader only for lies and multi-member files."""
    if not gzipped:
        return memoryview(raw)[header : header + expected], len(raw) > header + expected
    if expected <= _MAX_INFLATION * len(raw):  # else a lie: read what there is below
        content = _inflate(raw, header + expected + 1)  # one byte more than declared, to see if there is more
        if len(content.data) <= header + expected and not content.eof:
            raise EOFError("compressed data ends before the end-of-stream marker")
        if content.after and not content.after.startswith(b"\x1f\x8b"):
            raise SourceError(f"{path}: unexpected data after the end of the gzip stream")
        if not content.after:
            return memoryview(content.data)[header : header + expected], len(content.data) > header + expected
    data = read_up_to(stream, expected)
    if len(data) < expected:
        return data, False
    try:
        return data, bool(stream.read(1))
    except EOFError:
        raise SourceError(f"{path}: truncated gzip stream (its end-of-stream marker is missing)") from None
    except (OSError, zlib.error) as e:
        raise SourceError(f"{path}: unexpected data after the end of the gzip stream ({e})") from None


def _open_idx(raw: bytes) -> tuple[bool, io.BufferedIOBase, str]:
    gzipped = raw[:2] == b"\x1f\x8b"
    stream: io.BufferedIOBase = gzip.GzipFile(fileobj=io.BytesIO(raw)) if gzipped else io.BytesIO(raw)
    return gzipped, stream, "decompressed data" if gzipped else "file"


@contextlib.contextmanager
def _gzip_errors(path: str) -> Iterator[None]:
    try:
        yield
    except EOFError:
        raise SourceError(f"{path}: truncated gzip stream (it ends before its end-of-stream marker)") from None
    except (OSError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
        raise SourceError(f"{path}: corrupt gzip data: {e}") from None


def _read_header(path: str, stream: io.BufferedIOBase, what: str, magic: int, rank: int) -> tuple[int, ...]:
    head = stream.read(4)
    if len(head) < 4:
        raise SourceError(f"{path}: {what} is {len(head)} bytes long, too short for an idx header")
    (found,) = struct.unpack(">I", head)
    if found != magic:
        raise SourceError(f"{path}: byte 0: magic number {found}, expected {magic}")
    dims_raw = stream.read(4 * rank)
    if len(dims_raw) < 4 * rank:
        raise SourceError(f"{path}: idx header is truncated (needs {4 + 4 * rank} bytes)")
    dims = struct.unpack(f">{rank}I", dims_raw)
    if dims[0] == 0:
        raise SourceError(f"{path}: byte 4: the idx header declares 0 {'images' if rank > 1 else 'labels'}")
    if 0 in dims[1:]:
        raise SourceError(f"{path}: byte 8: image dimensions {dims[1:]} contain a zero")
    return dims


def idx_dims(path: str, raw: bytes, magic: int, rank: int) -> tuple[int, ...]:
    """The dimensions an idx file's header declares, checked; only the header is inflated."""
    _, stream, what = _open_idx(raw)
    with _gzip_errors(path):
        return _read_header(path, stream, what, magic, rank)


def parse_idx(path: str, raw: bytes, magic: int, rank: int) -> np.ndarray:
    """Validate and decode one idx file's bytes (gzipped or not) into an array."""
    gzipped, stream, what = _open_idx(raw)
    with _gzip_errors(path):
        dims = _read_header(path, stream, what, magic, rank)
        header = 4 + 4 * rank
        expected = math.prod(dims)  # Python ints: a product of huge dimensions cannot wrap
        data, extra = _read_data(path, stream, raw, header, expected, gzipped)
        if len(data) < expected:
            raise SourceError(
                f"{path}: truncated at byte {header + len(data)}: the header declares "
                f"{'x'.join(map(str, dims))} = {expected} data bytes, only {len(data)} present"
            )
        if extra:
            where = "expands past" if gzipped else "is longer than"
            raise SourceError(
                f"{path}: {what} {where} the {header + expected} bytes its idx header implies "
                f"(trailing data at byte {header + expected})"
            )
    return np.frombuffer(data, dtype=np.uint8).reshape(dims)


def idx_bytes(array: np.ndarray) -> bytes:
    """The idx encoding of a uint8 array (magic 0x08 << 8 | rank, e.g. 2051 for images)."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(f">I{array.ndim}I", 0x0800 | array.ndim, *array.shape)
    return header + array.tobytes()


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class MnistConverter(Converter):
    command = "mnist"
    chunk_size = 4096  # the raw layout is encoded a whole batch at a time (encode_batch)
    description = "MNIST-format idx images (28x28 grayscale) with class labels."

    #: labels lie in 0..num_classes-1 (set before the files are read: EMNIST's depend on the variant)
    num_classes = NUM_CLASSES

    def __init__(self, src_dir: str, options: PublishedOptions | None = None) -> None:
        options = (options or PublishedOptions()).checked()
        self.src_dir = src_dir
        self.layout = layout = options.layout
        self.image_format = image_format = options.pixels
        self._labels: dict[str, np.ndarray] = {}
        self._images = Background()
        self._paths: dict[tuple[str, str], str] = {}
        self._sources: list[dict[str, Any]] = []
        # Inflating the images runs on a thread (zlib releases the GIL) while the
        # caller plans the splits, which needs only the labels; every header is
        # still checked here. Engines settle it before forking workers.
        shapes = set()
        for split in ("train", "test"):
            images_path, images_raw = self._read_source(split, "images")
            dims = idx_dims(images_path, images_raw, IMAGES_MAGIC, 3)
            # inflating the images is the longest step of a conversion: it starts first
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
            shapes.add(tuple(dims[1:]))
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

    def _read_source(self, split: str, what: str) -> tuple[str, bytes]:
        """(where, bytes) of one of the four idx files."""
        path = find_source(self.src_dir, FILES[split, what])
        return path, _read(path)

    def _parse_images(self, where: str, raw: bytes) -> np.ndarray:
        """The (N, H, W) pixels of an images file, as they are to be stored."""
        return parse_idx(where, raw, IMAGES_MAGIC, 3)

    def class_names(self) -> list[str]:
        return CLASS_NAMES[self.variant]

    def _detect_variant(self) -> str:
        """A known variant when every source file matches its published checksum, else mnist."""
        from ..download import files_of

        ours = {s["file"]: s["sha256"] for s in self._sources}
        for variant in VARIANTS:
            published = {os.path.basename(f.file): f.digest for f in files_of(variant) if f.algorithm == "sha256"}
            if published and published == ours:
                return variant
        return "mnist"

    def source_splits(self) -> dict[str, list[Hashable]]:
        return {split: [(split, i) for i in range(len(self._labels[split]))] for split in ("train", "test")}

    def key(self, item: Hashable) -> str:
        split, i = item  # type: ignore[misc]
        return f"{split}/{i}"

    def describe(self, item: Hashable) -> str:
        split, i = item  # type: ignore[misc]
        return f"{self._paths[split, 'images']}: image {i}"

    def encode(self, item: Hashable) -> dict[str, Any]:
        split, i = item  # type: ignore[misc]
        images, labels = self._split_arrays(split)
        pixels = images[i]
        if self.image_format == "raw":
            return self._features({"image_raw": pixels.tobytes()}, labels[i])
        return self._features({"image": encode_png(pixels)}, labels[i])

    def encode_each(self, items: list[Hashable]) -> list[dict[str, Any]] | None:
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

    def encode_batch(self, items: list[Hashable]) -> Columns | None:
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

    def settle(self) -> None:
        self._images.settle()

    def sources(self) -> list[dict[str, Any]]:
        return self._sources

    def options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"variant": self.variant, "image_format": self.image_format, "layout": self.layout}
        if self.image_format == "raw":  # how to turn the bytes back into pixels (tfr_convert.load, --grid)
            options["raw_image"] = {"feature": "image_raw", "shape": [self.height, self.width, 1]}
        return options
