"""The encoder seam: columnar fast paths equal the per-item path, sealing equals framing,
and an item's error reaches the caller as itself, with its location."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from helpers import FailingMnist, write_cifar, write_mnist

from tfr_convert.containers import get as container
from tfr_convert.containers.framing import FOOTER_SIZE, HEADER_SIZE, frame, seal
from tfr_convert.converters.base import Columns, Group, PublishedOptions
from tfr_convert.converters.published.cifar import CifarConverter
from tfr_convert.converters.published.mnist import MnistConverter
from tfr_convert.dataset.features import FeatureSpec
from tfr_convert.dataset.wire.example import serialize
from tfr_convert.engine.core import encode_sealed
from tfr_convert.engine.encode import encode_columns, encode_items, uniform_rows
from tfr_convert.errors import FeatureError, RecordError, SourceError


def per_item(converter, items) -> bytes:
    return b"".join(frame(serialize(converter.features_of(item))) for item in items)


def test_uniform_rows_equal_serialize_with_the_margins_left_free():
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (50, 12), dtype=np.uint8)
    labels = rng.integers(0, 128, 50)
    prototype = {"img": b"", "img_label": 0, "label": 3, "name": "seven", "x": [1.5, 2.5], "i": -5}
    rows = uniform_rows(prototype, {"img": pixels, "img_label": labels}, head=5, tail=3)
    assert rows is not None and rows.shape[0] == 50
    for row, p, lbl in zip(rows, pixels, labels, strict=True):
        assert row[5:-3].tobytes() == serialize({**prototype, "img": p.tobytes(), "img_label": int(lbl)})


def test_values_outside_the_layout_fall_back():
    pixels = np.zeros((3, 4), np.uint8)
    assert uniform_rows({"img": b"", "label": 0}, {"img": pixels, "label": np.array([1, 200, 3])}) is None
    assert uniform_rows({"img": b"", "label": 0}, {"img": pixels, "label": np.array([1, -1, 3])}) is None


@pytest.mark.parametrize("payloads", [[b""], [b"a", b"", b"x" * 300, bytes(range(256)) * 9], [b"same"] * 7])
def test_seal_fills_margins_exactly_as_frame(payloads):
    blob = bytearray().join(bytes(HEADER_SIZE) + p + bytes(FOOTER_SIZE) for p in payloads)
    seal(blob, [HEADER_SIZE + len(p) + FOOTER_SIZE for p in payloads])
    assert bytes(blob) == b"".join(frame(p) for p in payloads)


def test_seal_reads_a_buffer_of_rows_as_its_bytes():
    # a columnar batch is rows of equal records: sealed through a 2-D view of them, each
    # payload's CRC is still over its own bytes, not over whole rows
    payloads = [bytes([i]) * 20 for i in range(4)]
    width = HEADER_SIZE + 20 + FOOTER_SIZE
    rows = np.frombuffer(bytearray().join(bytes(HEADER_SIZE) + p + bytes(FOOTER_SIZE) for p in payloads), np.uint8)
    rows = rows.copy().reshape(4, width)
    seal(memoryview(rows), [width] * 4)
    assert rows.tobytes() == b"".join(frame(p) for p in payloads)


def test_mnist_batches_equal_the_per_item_path(tmp_path):
    write_mnist(tmp_path, n_train=300, n_test=20)
    converter = MnistConverter(str(tmp_path))
    items = converter.source_splits()["train"][::-1]  # any order, as after shuffling
    assert converter.columns_of(items) is not None  # the columnar path is the one tested
    encoded = encode_sealed(converter, items, "fail", container("tfrecord"))
    assert bytes(encoded.blob) == per_item(converter, items) and sum(encoded.sizes) == len(encoded.blob)
    assert MnistConverter(str(tmp_path), PublishedOptions(image_format="png")).columns_of(items) is None


def test_cifar_batches_equal_the_per_item_path(tmp_path):
    for variant in ("cifar10", "cifar100"):
        src = write_cifar(tmp_path / variant, variant, per_batch=30)
        converter = CifarConverter(str(src["path"]))
        items = converter.source_splits()["train"][::-1]
        assert converter.columns_of(items) is not None
        encoded = encode_sealed(converter, items, "fail", container("tfrecord"))
        assert bytes(encoded.blob) == per_item(converter, items)


@pytest.mark.parametrize("layout", ["tutorial", "tfds"])
def test_png_batches_compressed_together_equal_the_per_item_path(tmp_path, layout):
    write_mnist(tmp_path / "mnist", n_train=300, n_test=20)
    src = write_cifar(tmp_path / "cifar", "cifar10", per_batch=30)
    for converter in (MnistConverter(str(tmp_path / "mnist"), PublishedOptions(image_format="png", layout=layout)),
                      CifarConverter(str(src["path"]), PublishedOptions(image_format="png", layout=layout))):  # fmt: skip
        items = converter.source_splits()["train"][::-1]
        assert converter.features_of_each(items) == [converter.features_of(item) for item in items]
        encoded = encode_sealed(converter, items, "fail", container("tfrecord"))
        assert bytes(encoded.blob) == per_item(converter, items)


def test_a_batch_that_fails_together_is_encoded_item_by_item_and_the_error_names_the_item(tmp_path):
    class Failing(FailingMnist):
        def features_of_each(self, items):
            raise SourceError("one image of the batch is bad")

    write_mnist(tmp_path, n_train=4, n_test=2)
    converter = Failing(str(tmp_path), SourceError("bad pixels"))
    assert len(encode_items(converter, [("train", 0), ("train", 2)]).sizes) == 2
    with pytest.raises(SourceError, match=r"bad pixels") as caught:
        encode_items(converter, [("train", 0), ("train", 1)])
    assert str(caught.value).startswith(converter.describe(("train", 1)))


def test_interleaved_groups_of_different_widths_land_at_their_places():
    """Groups scattered straight into the blob: rows of every width, in item order,
    equal to serializing each example, with n-dimensional values read in C order."""
    rng = np.random.default_rng(1)
    names = ["a", "bbbbbbbbbb", "cc"]
    which = rng.integers(0, len(names), 40)
    pixels = rng.integers(0, 256, (40, 2, 3, 4), dtype=np.uint8)  # a value's bytes: pixels[i].tobytes()
    labels = rng.integers(0, 128, 40)
    groups = []
    for k, name in enumerate(names):
        positions = np.flatnonzero(which == k)
        varying = {"img": pixels[positions].transpose(0, 3, 2, 1), "label": labels[positions]}  # a strided view
        groups.append(Group({"img": b"", "label": 0, "name": name}, varying, positions))
    encoded = encode_columns(Columns(groups, 40), head=3, tail=2)
    assert encoded is not None
    expected = [
        bytes(3)
        + serialize({"img": pixels[i].transpose(2, 1, 0).tobytes(), "label": int(labels[i]), "name": names[which[i]]})
        + bytes(2)
        for i in range(40)
    ]
    assert encoded.sizes == [len(e) for e in expected]
    blob, at = bytes(encoded.blob), 0
    for size, e in zip(encoded.sizes, expected, strict=True):
        assert blob[at + 3 : at + size - 2] == e[3:-2]  # the margins are the container's to fill
        at += size
    assert at == len(blob)


def test_array_record_records_are_the_bare_serialized_examples(tmp_path):
    write_mnist(tmp_path, n_train=20, n_test=4)
    converter = MnistConverter(str(tmp_path))
    items = converter.source_splits()["test"]
    encoded = encode_sealed(converter, items, "fail", container("array_record"))
    assert bytes(encoded.blob) == b"".join(serialize(converter.features_of(i)) for i in items)


@pytest.mark.parametrize(
    "error",
    [RecordError("x.tfrecord", 3, 96, "data CRC mismatch"), FeatureError("value too large"), SourceError("bad row")],
)
def test_an_items_error_is_reraised_as_itself_with_its_location(tmp_path, error):
    write_mnist(tmp_path, n_train=4, n_test=2)
    converter = FailingMnist(str(tmp_path), error)
    with pytest.raises(type(error)) as caught:
        encode_items(converter, [("train", 0), ("train", 1)])
    assert caught.value is error  # not rebuilt from its class
    message = str(caught.value)
    assert message.startswith(f"{converter.describe(('train', 1))}: ") and str(error.args[0]) in message
    # the location survives the trip from a worker process
    copy = pickle.loads(pickle.dumps(caught.value))
    assert type(copy) is type(error) and str(copy) == message


def test_skip_lists_the_failing_item_and_keeps_the_rest(tmp_path):
    write_mnist(tmp_path, n_train=4, n_test=2)
    converter = FailingMnist(str(tmp_path), FeatureError("value too large"))
    encoded = encode_items(converter, [("train", 0), ("train", 1), ("train", 2)], on_error="skip")
    assert len(encoded.sizes) == 2
    assert encoded.skipped == [{"item": converter.describe(("train", 1)), "reason": "value too large"}]


def test_features_other_than_declared_are_an_error_naming_the_item(tmp_path):
    write_mnist(tmp_path, n_train=2, n_test=1)
    converter = FailingMnist(str(tmp_path), SourceError("unused"))
    converter.features = {**converter.features, "extra": FeatureSpec.tensor("int64")}
    with pytest.raises(SourceError, match=r"image 0: features .* differ from the declared"):
        encode_items(converter, [("train", 0)])


class _Noisy(MnistConverter):
    """Warns about its data, and drops an open file (as a Ctrl-C mid-read leaves one)."""

    def columns_of(self, items):
        return None

    def features_of(self, item):
        import gc
        import warnings

        warnings.warn(f"{self.key(item)}: odd image", stacklevel=2)
        open(__file__, "rb")  # left open on purpose: collected as garbage below
        gc.collect()
        return super().features_of(item)


def test_converter_warnings_are_kept_and_resource_warnings_are_not(tmp_path):
    write_mnist(tmp_path, n_train=3, n_test=1)
    converter = _Noisy(str(tmp_path))
    encoded = encode_items(converter, [("train", 0), ("train", 1)])
    assert encoded.warnings == ["train/0: odd image", "train/1: odd image"]
