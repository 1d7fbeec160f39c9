"""`tfr-convert mnist` end to end, read back by TensorFlow and TFDS."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from helpers import final_files, write_mnist

from tfr_convert.containers.scan import read_records
from tfr_convert.converters.published.idx import FILES, IMAGES_MAGIC, idx_bytes, parse_idx
from tfr_convert.dataset.naming import ShardName


def tutorial_reader(files: list[str]) -> list[tuple[bytes, int]]:
    """The MNIST tutorial's parse function, verbatim in spirit."""
    spec = {
        "image_raw": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(record):
        example = tf.io.parse_single_example(record, spec)
        image = tf.reshape(tf.io.decode_raw(example["image_raw"], tf.uint8), [28, 28])
        return image, example["label"]

    return [(img.numpy().tobytes(), int(lbl)) for img, lbl in tf.data.TFRecordDataset(files).map(parse)]


def pairs(images: np.ndarray, labels: np.ndarray) -> list[tuple[bytes, int]]:
    return sorted((img.tobytes(), int(lbl)) for img, lbl in zip(images, labels, strict=True))


def shards_of(out: Path, split: str) -> list[str]:
    return sorted(str(p) for p in out.iterdir() if (s := ShardName.parse(p.name)) and s.split == split)


@pytest.mark.parametrize("content", ["mostly zeros", "noise"])
def test_gzip_idx_files_inflate_to_their_exact_bytes_however_well_they_compress(content):
    rng = np.random.default_rng(7)
    if content == "mostly zeros":  # about 300:1, where idx images compress 3 to 5 times
        images = np.zeros((20000, 28, 28), np.uint8)
        images[rng.choice(20000, 50, replace=False)] = rng.integers(0, 256, (50, 28, 28), dtype=np.uint8)
    else:
        images = rng.integers(0, 256, (3000, 28, 28), dtype=np.uint8)
    data = idx_bytes(images)
    packed = gzip.compress(data, mtime=0)
    if content == "mostly zeros":  # more than twice what a buffer sized for 16:1 holds: it grows, twice
        assert len(data) > 2 * (16 * len(packed) + (4 << 20))
    got = parse_idx("x-idx3-ubyte.gz", packed, IMAGES_MAGIC, 3)
    assert got.shape == images.shape and np.array_equal(got, images)
    assert np.array_equal(parse_idx("x-idx3-ubyte", data, IMAGES_MAGIC, 3), images)


def test_tutorial_reader_gets_exact_pixels_and_labels_for_every_split(cli, mnist_src, tmp_path):
    src, arrays = mnist_src
    out = tmp_path / "out"
    result = cli.convert("mnist", src, "--out", out, "--validation-size", 10, "--quiet")
    assert result.exit_code == 0, result.stderr
    train = tutorial_reader(shards_of(out, "train"))
    validation = tutorial_reader(shards_of(out, "validation"))
    test = tutorial_reader(shards_of(out, "test"))
    assert len(validation) == 10 and len(train) == 30
    assert sorted(train + validation) == pairs(*arrays["train"])
    assert sorted(test) == pairs(*arrays["test"])


def test_tfds_builder_from_directory_yields_every_example(cli, mnist_src, tmp_path):
    src, arrays = mnist_src
    out = tmp_path / "out"
    assert cli.convert("mnist", src, "--out", out, "--validation-size", 5, "--num-shards", 2).exit_code == 0
    builder = tfds.builder_from_directory(str(out))
    assert builder.info.features["label"].names == [str(i) for i in range(10)]
    assert builder.info.splits["train"].num_examples == 35
    assert builder.info.splits["train"].num_shards == 2
    got = {}
    for split in ("train", "validation", "test"):
        got[split] = []
        for ex in tfds.as_numpy(builder.as_dataset(split=split)):
            # TFDS decodes the raw bytes itself: a uint8 array of the stored shape
            assert ex["image_raw"].dtype == np.uint8 and ex["image_raw"].shape == (28, 28, 1)
            got[split].append((ex["image_raw"].tobytes(), int(ex["label"]), int(ex["height"]), int(ex["width"]),
                               int(ex["depth"])))  # fmt: skip
        assert {(h, w, d) for _, _, h, w, d in got[split]} == {(28, 28, 1)}
    assert sorted((i, lbl) for i, lbl, *_ in got["train"] + got["validation"]) == pairs(*arrays["train"])
    assert sorted((i, lbl) for i, lbl, *_ in got["test"]) == pairs(*arrays["test"])


def test_tfds_as_supervised_gives_image_label_pairs(cli, mnist_src, tmp_path):
    src, arrays = mnist_src
    for image_format in ("raw", "png"):
        out = tmp_path / image_format
        assert cli.convert("mnist", src, "--out", out, "--image-format", image_format, "--no-shuffle").exit_code == 0
        builder = tfds.builder_from_directory(str(out))
        pairs_ = list(tfds.as_numpy(builder.as_dataset(split="test", as_supervised=True)))
        assert len(pairs_) == len(arrays["test"][0])
        for (image, label), source, source_label in zip(pairs_, *arrays["test"], strict=True):
            assert image.shape == (28, 28, 1) and np.array_equal(image[..., 0], source) and label == source_label


def test_png_layout_decodes_to_the_source_pixels_in_tfds(cli, mnist_src, tmp_path):
    src, arrays = mnist_src
    out = tmp_path / "out"
    assert cli.convert("mnist", src, "--out", out, "--image-format", "png", "--no-shuffle").exit_code == 0
    builder = tfds.builder_from_directory(str(out))
    images = [(ex["image"], ex["label"]) for ex in tfds.as_numpy(builder.as_dataset(split="test"))]
    source_images, source_labels = arrays["test"]
    assert len(images) == len(source_images)
    for (image, label), src_image, src_label in zip(
        images, source_images, source_labels, strict=True
    ):  # --no-shuffle keeps order
        assert image.shape == (28, 28, 1) and np.array_equal(image[..., 0], src_image) and label == src_label


def test_same_inputs_and_seed_give_byte_identical_output_for_any_worker_count(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    outputs = []
    for i, workers in enumerate((1, 2, 1)):
        out = tmp_path / f"out{i}"
        args = (
            "mnist",
            src,
            "--out",
            out,
            "--seed",
            7,
            "--validation-size",
            6,
            "--num-shards",
            3,
            "--workers",
            workers,
        )
        assert cli.convert(*args).exit_code == 0
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert outputs[0] == outputs[1] == outputs[2]
    other = tmp_path / "other-seed"
    assert (
        cli.convert("mnist", src, "--out", other, "--seed", 8, "--validation-size", 6, "--num-shards", 3).exit_code == 0
    )
    assert (other / "mnist-train.tfrecord-00000-of-00003").read_bytes() != outputs[0][
        "mnist-train.tfrecord-00000-of-00003"
    ]


def test_metadata_counts_match_the_shards(cli, tmp_path):
    src = tmp_path / "src"
    write_mnist(src, n_train=95, n_test=20, gz=False)
    out = tmp_path / "out"
    assert (
        cli.convert("mnist", src, "--out", out, "--examples-per-shard", 30, "--variant", "fashion_mnist").exit_code == 0
    )
    info = json.loads((out / "dataset_info.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    assert info["name"] == "fashion_mnist"
    for split in info["splits"]:
        shards = shards_of(out, split["name"])
        counts = [sum(1 for _ in read_records(s)) for s in shards]
        assert [int(n) for n in split["shardLengths"]] == counts
        assert int(split["numBytes"]) == sum(Path(s).stat().st_size for s in shards)
        assert [s["records"] for s in manifest["splits"][split["name"]]["shards"]] == counts
    assert [int(n) for n in info["splits"][0]["shardLengths"]] == [30, 30, 30, 5]
    assert (out / "label.labels.txt").read_text().splitlines()[0] == "T-shirt/top"
    assert {s["file"] for s in manifest["sources"]} == {v for v in FILES.values()}


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_output_reads_in_tensorflow(cli, mnist_src, tmp_path, compression):
    src, arrays = mnist_src
    out = tmp_path / "out"
    assert cli.convert("mnist", src, "--out", out, "--compression", compression).exit_code == 0
    dataset = tf.data.TFRecordDataset(shards_of(out, "test"), compression_type=compression.upper())
    assert sum(1 for _ in dataset) == len(arrays["test"][1])


def test_existing_output_needs_overwrite_and_overwrite_replaces_old_shards(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out = tmp_path / "out"
    assert cli.convert("mnist", src, "--out", out, "--num-shards", 3).exit_code == 0
    refused = cli.convert("mnist", src, "--out", out)
    assert refused.exit_code == 1 and "not empty (use --overwrite" in refused.stderr
    assert cli.convert("mnist", src, "--out", out, "--overwrite").exit_code == 0
    assert final_files(out) == [
        "dataset_info.json", "features.json", "label.labels.txt", "manifest.json",
        "mnist-test.tfrecord-00000-of-00001", "mnist-train.tfrecord-00000-of-00001",
    ]  # fmt: skip


# ---------------------------------------------------------------- bad input


def _rewrite(src: Path, stem: str, data: bytes, gz: bool = True) -> Path:
    path = src / (stem + (".gz" if gz else ""))
    for old in src.glob(stem + "*"):
        old.unlink()
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def _images(n=40):
    return idx_bytes(np.zeros((n, 28, 28), np.uint8))


BAD_INPUTS = {
    "wrong magic": (FILES["train", "images"], lambda: idx_bytes(np.zeros(40, np.uint8)), True,
                    "byte 0: magic number 2049, expected 2051"),
    "wrong rank": (FILES["train", "images"], lambda: idx_bytes(np.zeros((40, 784), np.uint8)), True,
                   "byte 0: magic number 2050, expected 2051"),
    "zero dimension": (FILES["train", "images"], lambda: idx_bytes(np.zeros((40, 28, 0), np.uint8)), True,
                       "image dimensions (28, 0) contain a zero"),
    "short file": (FILES["train", "images"], lambda: _images()[:-100], False,
                   "truncated at byte 31276: the header declares 40x28x28 = 31360 data bytes, only 31260 present"),
    "long file": (FILES["train", "images"], lambda: _images() + b"junk", False,
                  "file is longer than the 31376 bytes its idx header implies"),
    "gzip expands too far": (FILES["train", "images"], lambda: _images() + b"junk", True,
                             "decompressed data expands past the 31376 bytes its idx header implies"),
    "count mismatch": (FILES["train", "labels"], lambda: idx_bytes(np.zeros(39, np.uint8)), True,
                       "holds 40 images but"),
    "label out of range": (FILES["train", "labels"], lambda: idx_bytes(np.array([1] * 7 + [10] + [2] * 32, np.uint8)),
                           True, "label 10 at index 7 (byte 15) is outside 0..9"),
    "header only": (FILES["test", "labels"], lambda: b"\x00\x00\x08", False, "too short for an idx header"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_exits_1_naming_the_file_and_leaves_nothing(cli, mnist_src, tmp_path, case):
    src, _ = mnist_src
    stem, make, gz, message = BAD_INPUTS[case]
    path = _rewrite(src, stem, make(), gz)
    out = tmp_path / "out"
    result = cli.convert("mnist", src, "--out", out)
    assert result.exit_code == 1
    assert message in result.stderr
    named = path if case != "count mismatch" else src / (FILES["train", "images"] + ".gz")
    assert result.stderr.startswith(f"error: {named}:")
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert final_files(out) == []


def test_truncated_gzip(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    path = src / (FILES["train", "images"] + ".gz")
    path.write_bytes(path.read_bytes()[:-20])
    result = cli.convert("mnist", src, "--out", tmp_path / "out")
    assert result.exit_code == 1 and f"error: {path}: truncated gzip stream" in result.stderr
    assert final_files(tmp_path / "out") == []


def test_garbage_after_the_gzip_stream(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    path = src / (FILES["test", "labels"] + ".gz")
    path.write_bytes(path.read_bytes() + b"garbage!")
    result = cli.convert("mnist", src, "--out", tmp_path / "out")
    assert result.exit_code == 1 and f"error: {path}: unexpected data after the end of the gzip stream" in result.stderr
    assert final_files(tmp_path / "out") == []


def test_missing_file(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    (src / (FILES["test", "images"] + ".gz")).unlink()
    result = cli.convert("mnist", src, "--out", tmp_path / "out")
    assert result.exit_code == 1 and f"error: {src}: missing t10k-images-idx3-ubyte" in result.stderr
    assert final_files(tmp_path / "out") == []


def test_failure_while_writing_leaves_no_final_named_file(cli, mnist_src, tmp_path):
    # --validation-size larger than train fails after the sources were read.
    src, _ = mnist_src
    out = tmp_path / "out"
    result = cli.convert("mnist", src, "--out", out, "--validation-size", 41)
    assert (
        result.exit_code == 1
        and "cannot take 41 examples for validation: the source split has only 40" in result.stderr
    )
    assert final_files(out) == []


def test_broken_test_images_found_after_train_was_written_leave_nothing(cli, mnist_src, tmp_path):
    # Raw images inflate on threads while the splits are planned, so a broken data
    # section is found while converting, here after the train shards were written.
    src, _ = mnist_src
    path = src / (FILES["test", "images"] + ".gz")
    path.write_bytes(path.read_bytes()[:-20])
    out = tmp_path / "out"
    result = cli.convert("mnist", src, "--out", out, "--examples-per-shard", 10)
    assert result.exit_code == 1 and f"error: {path}: truncated gzip stream" in result.stderr
    assert not out.exists()  # no final names, no temporaries: the run created the folder and removed it


def test_images_set_inflating_before_the_converter_give_the_same_shards(mnist_src, tmp_path):
    # the command starts idx.start_images before it imports the converter (and numpy);
    # the converter reading the folder itself is the simple path it is held to
    from tfr_convert.converters.published.idx import start_images
    from tfr_convert.converters.published.mnist import MnistConverter
    from tfr_convert.engine.local import run
    from tfr_convert.engine.run_options import RunOptions
    from tfr_convert.output.shards import ShardPolicy

    src, _ = mnist_src
    shards = []
    for early in (False, True):
        out = tmp_path / f"out-{early}"
        images = start_images(str(src)) if early else None
        assert (images is not None) == early
        run(MnistConverter(images or str(src)), RunOptions(out=str(out), policy=ShardPolicy(None, 16, None)))
        shards.append({p.name: p.read_bytes() for p in out.iterdir() if ".tfrecord-" in p.name})
    assert len(shards[0]) == 4 and shards[0] == shards[1]


def test_start_images_leaves_a_folder_missing_an_images_file_to_the_converter(mnist_src):
    from tfr_convert.converters.published.idx import start_images

    src, _ = mnist_src
    (src / (FILES["test", "images"] + ".gz")).unlink()
    assert start_images(str(src)) is None


def test_idx_reading_and_run_options_import_no_numpy():
    # so the command can check its options and set the images inflating (the longest step
    # of an MNIST conversion) before it imports numpy, which takes a while
    import subprocess
    import sys

    code = (
        "import sys; import tfr_convert.converters.published.idx, tfr_convert.engine.run_options; "
        "print(sorted(m for m in ('numpy', 'tfr_convert.engine.core') if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
