"""The numpy fast path gives exactly the bytes of the per-example path."""

from __future__ import annotations

import numpy as np
from helpers import write_cifar, write_mnist

from tfr_convert.converters.cifar import CifarConverter
from tfr_convert.converters.mnist import MnistConverter
from tfr_convert.example import serialize
from tfr_convert.layout import frame_uniform
from tfr_convert.tfrecord import frame


def per_item(converter, items) -> bytes:
    return b"".join(frame(serialize(converter.encode(item))) for item in items)


def test_frame_uniform_matches_frame_of_serialize():
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (50, 12), dtype=np.uint8)
    labels = rng.integers(0, 128, 50)
    prototype = {"img": b"", "img_label": 0, "label": 3, "name": "seven", "x": [1.5, 2.5], "i": -5}
    rows = frame_uniform(prototype, {"img": pixels, "img_label": labels})
    assert rows is not None and rows.shape[0] == 50
    for row, p, lbl in zip(rows, pixels, labels, strict=True):
        assert row.tobytes() == frame(serialize({**prototype, "img": p.tobytes(), "img_label": int(lbl)}))


def test_values_outside_the_layout_fall_back():
    pixels = np.zeros((3, 4), np.uint8)
    assert frame_uniform({"img": b"", "label": 0}, {"img": pixels, "label": np.array([1, 200, 3])}) is None
    assert frame_uniform({"img": b"", "label": 0}, {"img": pixels, "label": np.array([1, -1, 3])}) is None


def test_mnist_batches_equal_the_per_item_path(tmp_path):
    write_mnist(tmp_path, n_train=300, n_test=20)
    converter = MnistConverter(str(tmp_path))
    items = converter.source_splits()["train"][::-1]  # any order, as after shuffling
    blob, sizes = converter.frame_batch(items)
    assert blob == per_item(converter, items) and sum(sizes) == len(blob)
    assert MnistConverter(str(tmp_path), image_format="png").frame_batch(items) is None


def test_cifar_batches_equal_the_per_item_path(tmp_path):
    for variant in ("cifar10", "cifar100"):
        src = write_cifar(tmp_path / variant, variant, per_batch=30)
        converter = CifarConverter(str(src["path"]))
        items = converter.source_splits()["train"][::-1]
        blob, sizes = converter.frame_batch(items)
        assert blob == per_item(converter, items) and sum(sizes) == len(blob)
