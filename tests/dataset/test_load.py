"""tfr_convert.load(): shapes, dtypes and values per converter; slices; clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from helpers import write_cifar
from PIL import Image

import tfr_convert
from tfr_convert.containers.scan import read_records
from tfr_convert.dataset.wire.example import parse
from tfr_convert.errors import SourceError


def convert(cli, *args) -> None:
    result = cli.convert(*map(str, args), "--quiet")
    assert result.exit_code == 0, result.stderr


def specs(dataset) -> dict[str, tuple[tuple, tf.DType]]:
    return {k: (tuple(v.shape), v.dtype) for k, v in dataset.element_spec.items()}


@pytest.mark.parametrize("image_format", ["raw", "png"])
def test_mnist(cli, mnist_src, tmp_path, image_format):
    src, arrays = mnist_src
    out = tmp_path / "out"
    convert(cli, "mnist", src, "--out", out, "--image-format", image_format, "--no-shuffle", "--num-shards", 3)
    name = "image_raw" if image_format == "raw" else "image"
    test = tfr_convert.load(str(out), "test")
    assert specs(test)[name] == ((28, 28, 1), tf.uint8)
    assert specs(test)["label"] == ((), tf.int64)
    got = sorted((ex[name].numpy().tobytes(), int(ex["label"])) for ex in test)
    images, labels = arrays["test"]
    assert got == sorted((img.tobytes(), int(lbl)) for img, lbl in zip(images, labels, strict=True))
    x, y = next(iter(tfr_convert.load(str(out), "train", as_supervised=True, batch_size=8)))
    assert x.shape == (8, 28, 28, 1) and y.dtype == tf.int64


def test_cifar10_and_cifar100(cli, tmp_path):
    for variant in ("cifar10", "cifar100"):
        src = write_cifar(tmp_path / variant, variant, per_batch=3)
        out = tmp_path / f"out-{variant}"
        convert(cli, "cifar", src["path"], "--out", out, "--no-shuffle")
        ds = tfr_convert.load(str(out), "test")
        s = specs(ds)
        assert s["image"] == ((32, 32, 3), tf.uint8)
        assert s["label_index"] == ((), tf.int64) and s["label_name"] == ((), tf.string)
        if variant == "cifar100":
            assert s["coarse_label_index"] == ((), tf.int64) and s["coarse_label_name"] == ((), tf.string)
        first = next(iter(ds))
        data, labels = src["test"]
        assert np.array_equal(first["image"].numpy(), data[0].reshape(3, 32, 32).transpose(1, 2, 0))
        assert int(first["label_index"]) == labels[0][0]
        assert first["label_name"].numpy().decode() == src["names"][0][labels[0][0]]


def test_image_folder_with_resize(cli, tmp_path):
    root = tmp_path / "pets"
    rng = np.random.default_rng(0)
    for cls in ("cat", "dog"):
        (root / cls).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(rng.integers(0, 256, (20 + i, 30, 3), dtype=np.uint8)).save(root / cls / f"{i}.png")
    for image_format in ("png", "raw", "jpeg"):
        out = tmp_path / image_format
        convert(cli, "images", root, "--out", out, "--resize", "16x12", "--image-format", image_format)
        ds = tfr_convert.load(str(out), "train")
        assert specs(ds)["image"] == ((12, 16, 3), tf.uint8)
        assert specs(ds)["label"] == ((), tf.int64) and specs(ds)["filename"] == ((), tf.string)
        assert sum(1 for _ in ds) == 6


def test_split_slices(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out = tmp_path / "out"
    convert(cli, "mnist", src, "--out", out, "--examples-per-shard", 7, "--no-shuffle")
    # slices select by position in shard order; iteration interleaves the shards
    file_order = [
        parse(r.data)["image_raw"][1][0]
        for shard in sorted(out.glob("mnist-train.tfrecord-*"))
        for r in read_records(str(shard))
    ]

    def images(split):
        return sorted(ex["image_raw"].numpy().tobytes() for ex in tfr_convert.load(str(out), split))

    assert len(images("train")) == 40 == len(file_order)
    assert images("train[:10%]") == sorted(file_order[:4])
    assert images("train[5:20]") == sorted(file_order[5:20])
    assert images("train[-3:]") == sorted(file_order[-3:])


def test_metadata_that_does_not_match_the_shards_is_a_clear_error(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out = tmp_path / "out"
    convert(cli, "mnist", src, "--out", out, "--num-shards", 2)
    shard = out / "mnist-train.tfrecord-00001-of-00002"
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(SourceError, match=r"mnist-train.tfrecord-00001-of-00002: \d+ bytes, manifest.json says \d+"):
        tfr_convert.load(str(out), "train")
    shard.unlink()
    with pytest.raises(SourceError, match=r"shard listed in dataset_info\.json is missing"):
        tfr_convert.load(str(out), "train")
    with pytest.raises(SourceError, match="no split 'validation'"):
        tfr_convert.load(str(out), "validation")
    with pytest.raises(SourceError, match="not a tfr-convert dataset"):
        tfr_convert.load(str(src), "train")
