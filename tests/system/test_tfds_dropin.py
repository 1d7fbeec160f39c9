"""What TensorFlow Datasets can and cannot open, said where users look."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from helpers import write_cifar, write_mnist
from PIL import Image

import tfr_convert
from tfr_convert.containers.scan import read_records
from tfr_convert.dataset.wire.example import parse


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_shards_warn_once_and_verify_notes_that_tfds_cannot_read_them(cli, mnist_src, tmp_path, compression):
    out = tmp_path / "out"
    result = cli.convert("mnist", mnist_src[0], "--out", out, "--compression", compression)
    assert result.exit_code == 0, result.stderr
    note = f"{compression}-compressed shards: TensorFlow Datasets cannot read them"
    assert result.stderr.count(note) == 1
    assert json.loads((out / "dataset_info.json").read_text())["description"].startswith(note)
    verify = cli.inspect(out, "--verify")
    assert verify.exit_code == 0 and f"NOTE  {out}: {note}" in verify.stdout
    report = json.loads(cli.inspect(out, "--verify", "--json").stdout)
    assert report["ok"] and report["datasets"][0]["notes"][0].startswith(note)
    # the claims the note makes: TFDS fails, load() reads
    with pytest.raises(tf.errors.DataLossError):
        next(iter(tfds.builder_from_directory(str(out)).as_dataset(split="train")))
    assert sum(1 for _ in tfr_convert.load(str(out), "test")) == 12
    plain = cli.convert("mnist", mnist_src[0], "--out", tmp_path / "plain")
    assert "TensorFlow Datasets cannot read" not in plain.stderr
    assert "NOTE" not in cli.inspect(tmp_path / "plain", "--verify").stdout


def photo_folder(root):
    """A png, a webp, a tiff and a JPEG stored sideways with EXIF orientation 6 (rotate 90°)."""
    (root / "pics").mkdir(parents=True)
    pixels = np.zeros((10, 16, 3), np.uint8)
    pixels[:, :8] = (250, 10, 10)
    Image.fromarray(pixels).save(root / "pics" / "a.png")
    Image.fromarray(pixels).save(root / "pics" / "b.webp", lossless=True)
    Image.fromarray(pixels).save(root / "pics" / "c.tiff")
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(pixels).save(root / "pics" / "d.jpg", exif=exif, quality=95)
    return root


def test_keep_mode_stores_only_what_tensorflow_decodes_upright(cli, tmp_path):
    root = photo_folder(tmp_path)
    out = tmp_path / "out"
    result = cli.convert("images", root, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert (f"warning: {root}: re-encoded 3 images (pics/b.webp, pics/c.tiff, pics/d.jpg) (an EXIF orientation "
            "TensorFlow ignores, tiff, which TensorFlow cannot decode, webp, which TensorFlow cannot decode), so "
            "that TensorFlow decodes them upright; --keep-exact keeps their bytes") in result.stderr  # fmt: skip
    assert any("re-encoded 3 images" in w for w in json.loads((out / "manifest.json").read_text())["warnings"])
    seen = {}
    for shard in out.glob("*.tfrecord-*"):  # the stored bytes, through TensorFlow's own decoder
        for record in read_records(str(shard)):
            ex = {k: v[0] for k, (_, v) in parse(record.data).items()}
            decoded = tf.io.decode_image(ex["image"], expand_animations=False).numpy()
            seen[ex["filename"].decode()] = (decoded.shape, (ex["height"], ex["width"], ex["channels"]))
    assert len(seen) == 4 and all(shape == recorded for shape, recorded in seen.values()), seen
    builder = tfds.builder_from_directory(str(out))  # and through TFDS, which decodes them itself
    for ex in tfds.as_numpy(builder.as_dataset(split="train")):
        assert ex["image"].shape == seen[ex["filename"].decode()][0]
    assert seen["pics/d.jpg"][0] == (16, 10, 3)  # upright: the EXIF rotation applied
    assert seen["pics/b.webp"][0] == seen["pics/a.png"][0] == (10, 16, 3)
    for image in tfr_convert.load(str(out), "train"):
        assert image["image"].shape[-1] == 3


def test_keep_exact_keeps_every_byte_and_lists_what_tensorflow_cannot_read(cli, tmp_path):
    root = photo_folder(tmp_path)
    out = tmp_path / "out"
    result = cli.convert("images", root, "--out", out, "--keep-exact")
    assert result.exit_code == 0, result.stderr
    assert f"warning: {root}: kept 3 images (pics/b.webp, pics/c.tiff, pics/d.jpg) as they are" in result.stderr
    stored = {
        parse(r.data)["filename"][1][0].decode(): parse(r.data)["image"][1][0]
        for shard in out.glob("*.tfrecord-*")
        for r in read_records(str(shard))
    }
    assert all(stored[name] == (root / name).read_bytes() for name in stored)
    assert cli.convert("images", root, "--out", tmp_path / "x", "--keep-exact", "--image-format", "png").exit_code == 2


@pytest.mark.parametrize("variant", ["mnist", "fashion_mnist", "kmnist"])
def test_layout_tfds_gives_the_catalog_features_for_the_mnist_family(cli, tmp_path, variant):
    src = tmp_path / "src"
    arrays = write_mnist(src)
    root = tmp_path / "out"
    result = cli.convert("mnist", src, "--out", root, "--layout", "tfds", "--variant", variant, "--no-shuffle")
    assert result.exit_code == 0, result.stderr
    out = root / variant / "3.0.1"  # where tfds.load(variant, data_dir=root) looks
    ours, catalog = tfds.builder_from_directory(str(out)).info, tfds.builder(variant).info
    assert repr(ours.features) == repr(catalog.features)
    assert ours.features["label"].names == catalog.features["label"].names
    assert ours.supervised_keys == catalog.supervised_keys == ("image", "label")
    assert list(ours.splits) == ["train", "test"]
    got = list(tfds.as_numpy(tfds.builder_from_directory(str(out)).as_dataset(split="test", as_supervised=True)))
    for (image, label), source, source_label in zip(got, *arrays["test"], strict=True):
        assert image.shape == (28, 28, 1) and np.array_equal(image[..., 0], source) and label == source_label
    assert (
        cli.convert("mnist", src, "--out", tmp_path / "x", "--layout", "tfds", "--image-format", "raw").exit_code == 2
    )
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    builder = tfds.builder_from_directory(str(out))
    figure = tfds.show_examples(builder.as_dataset(split="train"), builder.info, rows=2, cols=2)
    names = catalog.features["label"].names
    assert len(figure.axes) == 4  # drawn, each captioned with its class name, as for tfds.load(NAME)
    assert all(ax.get_xlabel().rsplit(" (", 1)[0] in names for ax in figure.axes), [a.get_xlabel() for a in figure.axes]
    frame = tfds.as_dataframe(builder.as_dataset(split="test").take(3), builder.info)  # pandas and jinja2, in [dev]
    assert list(frame.columns) == ["image", "label"] and len(frame) == 3
    assert "<img" in frame._repr_html_()  # the notebook view: thumbnails, drawn through jinja2


@pytest.mark.parametrize("variant", ["cifar10", "cifar100"])
def test_layout_tfds_gives_the_catalog_features_for_cifar(cli, tmp_path, variant):
    src = write_cifar(tmp_path / "src", variant, per_batch=3)
    result = cli.convert("cifar", src["path"], "--out", tmp_path / "out", "--layout", "tfds")
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "out" / variant / "3.0.2"
    ours, catalog = tfds.builder_from_directory(str(out)).info, tfds.builder(variant).info
    assert repr(ours.features) == repr(catalog.features)
    assert ours.supervised_keys == catalog.supervised_keys
    assert ours.features["label"].names == src["names"][0]  # the data's names (the catalog reads them from it too)
    examples = list(tfds.as_numpy(tfds.builder_from_directory(str(out)).as_dataset(split="train")))
    data, labels = src["train"]
    channel_last = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    for ex in examples:
        i = int(ex["id"].decode().split("_")[1])
        assert ex["id"].decode() == f"train_{i:05d}"
        assert np.array_equal(ex["image"], channel_last[i]) and ex["label"] == labels[0][i]
        if variant == "cifar100":
            assert ex["coarse_label"] == labels[1][i]


@pytest.mark.parametrize(
    ("command", "variant", "version"), [("mnist", "mnist", "3.0.1"), ("cifar", "cifar10", "3.0.2")]
)
def test_layout_tfds_is_found_by_tfds_load_and_builder_with_data_dir_as_a_catalog_dataset(
    cli, tmp_path, command, variant, version
):
    src = write_mnist(tmp_path / "src") if command == "mnist" else None
    path = tmp_path / "src" if command == "mnist" else write_cifar(tmp_path / "src", variant, per_batch=3)["path"]
    root = tmp_path / "root"
    result = cli.convert(command, path, "--out", root, "--layout", "tfds", "--no-shuffle")
    assert result.exit_code == 0, result.stderr
    assert f"-> {root / variant / version}" in result.stdout
    builder = tfds.builder(variant, data_dir=str(root))  # the catalog's own builder, finding our files
    assert str(builder.info.version) == version and builder.info.splits["test"].num_examples > 0
    loaded = list(tfds.as_numpy(tfds.load(variant, data_dir=str(root), split="test", as_supervised=True)))
    ours = list(tfds.as_numpy(tfds.builder_from_directory(str(root / variant / version)).as_dataset(split="test")))
    assert len(loaded) == len(ours) == builder.info.splits["test"].num_examples
    for (image, label), example in zip(loaded, ours, strict=True):
        assert np.array_equal(image, example["image"]) and label == example["label"]
    if src is not None:
        images, labels = src["test"]
        assert all(
            np.array_equal(im[..., 0], s) and la == sl for (im, la), s, sl in zip(loaded, images, labels, strict=True)
        )


def test_layout_tfds_as_array_record_opens_with_tfds_data_source(cli, mnist_src, tmp_path):
    pytest.importorskip("array_record.python.array_record_module")
    root = tmp_path / "root"
    result = cli.convert("mnist", mnist_src[0], "--out", root, "--layout", "tfds", "--format", "array_record")
    assert result.exit_code == 0, result.stderr
    source = tfds.data_source("mnist", data_dir=str(root), split="train")  # random access, as Grain reads it
    assert len(source) == len(mnist_src[1]["train"][1]) and source[3]["image"].shape == (28, 28, 1)


def test_layout_tfds_under_another_name_goes_under_that_name_and_version_1_0_0(cli, mnist_src, tmp_path):
    result = cli.convert("mnist", mnist_src[0], "--out", tmp_path / "mine", "--layout", "tfds", "--name", "digits")
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["digits"]
    info = json.loads((tmp_path / "mine" / "digits" / "1.0.0" / "dataset_info.json").read_text())
    assert info["name"] == "digits" and info["version"] == "1.0.0"
    builder = tfds.builder_from_directory(str(tmp_path / "mine" / "digits" / "1.0.0"))
    assert builder.info.splits["train"].num_examples == len(mnist_src[1]["train"][1])
