"""`tfr-convert cifar`: exact pixels and labels back through TensorFlow and TFDS,
from the folder and the archive, and hostile pickles refused."""

from __future__ import annotations

import pickle
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from helpers import final_files, write_cifar, write_cifar_binary

import py2pickle
from tfr_convert.converters.published.safe_pickle import UnsafePickleError, safe_load
from tfr_convert.dataset.naming import ShardName


def shards_of(out: Path, split: str) -> list[str]:
    return sorted(str(p) for p in out.iterdir() if (s := ShardName.parse(p.name)) and s.split == split)


def tutorial_reader(files: list[str]) -> list[tuple[bytes, int, str]]:
    """The CIFAR tutorial's parser: image bytes decoded as uint8 and reshaped to (32, 32, 3)."""
    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label_index": tf.io.FixedLenFeature([], tf.int64),
        "label_name": tf.io.FixedLenFeature([], tf.string),
    }

    def parse(record):
        ex = tf.io.parse_single_example(record, spec)
        return tf.reshape(tf.io.decode_raw(ex["image"], tf.uint8), [32, 32, 3]), ex["label_index"], ex["label_name"]

    dataset = tf.data.TFRecordDataset(files).map(parse)
    return [(img.numpy().tobytes(), int(i), name.numpy().decode()) for img, i, name in dataset]


def expected(data: np.ndarray, labels: list[int], names: list[str]) -> list[tuple[bytes, int, str]]:
    channel_last = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return sorted((img.tobytes(), lbl, names[lbl]) for img, lbl in zip(channel_last, labels, strict=True))


@pytest.mark.parametrize("archive", [False, True], ids=["folder", "tar.gz"])
def test_tutorial_reader_recovers_pixels_labels_and_names(cli, tmp_path, archive):
    src = write_cifar(tmp_path / "src", "cifar10", per_batch=4, archive=archive)
    out = tmp_path / "out"
    result = cli.convert("cifar", src["path"], "--out", out, "--validation-size", 3)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("cifar10: train 17, validation 3, test 4 examples")
    train = tutorial_reader(shards_of(out, "train")) + tutorial_reader(shards_of(out, "validation"))
    assert sorted(train) == expected(src["train"][0], src["train"][1][0], src["names"][0])
    assert sorted(tutorial_reader(shards_of(out, "test"))) == expected(
        src["test"][0], src["test"][1][0], src["names"][0]
    )
    assert (out / "label_index.labels.txt").read_text().splitlines() == src["names"][0]


def test_folder_and_archive_give_identical_shards(cli, tmp_path):
    folder = write_cifar(tmp_path / "a", "cifar100", per_batch=6)
    archive = write_cifar(tmp_path / "b", "cifar100", per_batch=6, archive=True)
    for name, src in (("f", folder), ("t", archive)):
        assert cli.convert("cifar", src["path"], "--out", tmp_path / name, "--num-shards", 2).exit_code == 0
    shards = sorted(p.name for p in (tmp_path / "f").iterdir() if ShardName.parse(p.name))
    assert shards == sorted(p.name for p in (tmp_path / "t").iterdir() if ShardName.parse(p.name))
    assert all((tmp_path / "f" / s).read_bytes() == (tmp_path / "t" / s).read_bytes() for s in shards)


def test_tfds_opens_cifar100_with_both_label_kinds(cli, tmp_path):
    src = write_cifar(tmp_path / "src", "cifar100", per_batch=8)
    out = tmp_path / "out"
    assert cli.convert("cifar", src["path"], "--out", out, "--image-format", "png").exit_code == 0
    builder = tfds.builder_from_directory(str(out))
    fine, coarse = builder.info.features["label_index"], builder.info.features["coarse_label_index"]
    assert fine.names == src["names"][0] and coarse.names == src["names"][1]
    got = sorted(
        (ex["image"].tobytes(), int(ex["label_index"]), int(ex["coarse_label_index"]), ex["coarse_label_name"].decode())
        for ex in tfds.as_numpy(builder.as_dataset(split="train"))
    )
    data, (fine_labels, coarse_labels) = src["train"]
    channel_last = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    assert got == sorted(
        (img.tobytes(), f, c, src["names"][1][c])
        for img, f, c in zip(channel_last, fine_labels, coarse_labels, strict=True)
    )


@pytest.mark.parametrize("variant", ["cifar10", "cifar100"])
@pytest.mark.parametrize("image_format", ["raw", "png"])
def test_tfds_as_supervised_gives_the_source_pixels_and_fine_labels(cli, tmp_path, variant, image_format):
    src = write_cifar(tmp_path / "src", variant, per_batch=4)
    out = tmp_path / "out"
    assert cli.convert("cifar", src["path"], "--out", out, "--image-format", image_format).exit_code == 0
    builder = tfds.builder_from_directory(str(out))
    assert builder.info.supervised_keys == ("image", "label_index")
    got = sorted(
        (image.tobytes(), int(label))
        for image, label in tfds.as_numpy(builder.as_dataset(split="test", as_supervised=True))
        if image.shape == (32, 32, 3) and image.dtype == np.uint8
    )
    data, labels = src["test"]
    channel_last = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    assert got == sorted((img.tobytes(), int(f)) for img, f in zip(channel_last, labels[0], strict=True))


def test_examples_per_shard_reproduces_the_tutorials_shards(cli, tmp_path):
    src = write_cifar(tmp_path / "src", "cifar10", per_batch=5)
    out = tmp_path / "out"
    assert cli.convert("cifar", src["path"], "--out", out, "--examples-per-shard", 10, "--no-shuffle").exit_code == 0
    assert [Path(s).name for s in shards_of(out, "train")] == [
        "cifar10-train.tfrecord-00000-of-00003",
        "cifar10-train.tfrecord-00001-of-00003",
        "cifar10-train.tfrecord-00002-of-00003",
    ]
    assert [len(tutorial_reader([s])) for s in shards_of(out, "train")] == [10, 10, 5]


# ---------------------------------------------------------------- hostile pickles


def _global_call(module: str, name: str, arg: str, protocol0: bool = True) -> bytes:
    """A pickle that imports module.name and calls it with one string argument."""
    if protocol0:
        return f"c{module}\n{name}\n(S'{arg}'\ntR.".encode()
    a = arg.encode()
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"X" + len(a).to_bytes(4, "little") + a + b"\x85R."


def _stack_global(module: str, name: str) -> bytes:
    """Protocol 4: STACK_GLOBAL with a (possibly dotted) name."""
    m, n = module.encode(), name.encode()
    return b"\x80\x04\x8c" + bytes([len(m)]) + m + b"\x8c" + bytes([len(n)]) + n + b"\x93."


def _resolve_then_call(target: str, arg: str) -> bytes:
    """pkgutil.resolve_name(target)(arg) at protocol 2."""
    t, a = target.encode(), arg.encode()
    return (
        b"\x80\x02cpkgutil\nresolve_name\nX" + len(t).to_bytes(4, "little") + t + b"\x85R"
        + b"X" + len(a).to_bytes(4, "little") + a + b"\x85R."
    )  # fmt: skip


def hostile_pickles(marker: Path) -> dict[str, bytes]:
    touch = f"open({str(marker)!r}, 'w').close()"
    data = np.zeros((4, 3072), np.uint8)
    return {
        "os.system via protocol-0 GLOBAL": _global_call("os", "system", f"touch {marker}"),
        "posix.system": _global_call("posix", "system", f"touch {marker}"),
        "builtins.eval": _global_call("builtins", "eval", touch, protocol0=False),
        "importlib.import_module": _global_call("importlib", "import_module", "os", protocol0=False),
        "pkgutil.resolve_name": _resolve_then_call("os:system", f"touch {marker}"),
        "numpy prefix reaching sys": b"cnumpy._core._internal\nsys\n.",
        "numpy prefix, dotted name at protocol 4": _stack_global("numpy._core._internal", "sys.modules"),
        "numpy.core prefix, dotted name": _stack_global("numpy.core.multiarray", "_reconstruct.__globals__"),
        "object-dtype array": pickle.dumps({"data": np.array([1, "x"], dtype=object), "labels": [0, 1]}, protocol=2),
        "array declaring 2**40 elements": py2pickle.dumps(
            {b"data": py2pickle.Py2Array(data, shape=(2**40,)), b"labels": [0] * 4}
        ),
        "array declaring 2**40 elements, protocol 5": pickle.dumps(np.zeros(8, np.uint8), protocol=5).replace(
            b"K\x08\x85", b"\x8a\x06" + (2**40).to_bytes(6, "little") + b"\x85"
        ),
    }


def test_safe_load_refuses_every_hostile_pickle(tmp_path):
    marker = tmp_path / "pwned"
    for name, payload in hostile_pickles(marker).items():
        with pytest.raises(UnsafePickleError):
            safe_load(payload)
        assert not marker.exists(), name
    # and the same payloads run under pickle.loads really are hostile (the test is not vacuous)
    pickle.loads(hostile_pickles(marker)["builtins.eval"])
    assert marker.exists()


@pytest.mark.parametrize("case", list(hostile_pickles(Path("x"))))
def test_hostile_batch_exits_1_and_its_side_effect_never_happens(cli, tmp_path, case):
    src = write_cifar(tmp_path / "src", "cifar10", per_batch=4)
    marker = tmp_path / "pwned"
    victim = src["path"] / "data_batch_3"
    victim.write_bytes(hostile_pickles(marker)[case])
    out = tmp_path / "out"
    result = cli.convert("cifar", src["path"], "--out", out)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {victim}: ")
    assert "not a safe CIFAR pickle: " in result.stderr or "expected a dict" in result.stderr
    assert not marker.exists() and final_files(out) == []


# ---------------------------------------------------------------- bad input


def _edit_batch(path: Path, **changes) -> None:
    batch = safe_load(path.read_bytes())
    for key, value in changes.items():
        if value is None:
            del batch[key.encode()]
        else:
            batch[key.encode()] = value
    path.write_bytes(py2pickle.dumps(batch))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: (p / "data_batch_4").unlink(), "{dir}: missing data_batch_4 (cifar10)"),
        (
            lambda p: _edit_batch(p / "data_batch_2", labels=None, label=[0] * 4),
            "{dir}/data_batch_2: missing key 'labels'",
        ),
        (
            lambda p: _edit_batch(p / "test_batch", data=np.zeros((4, 3000), np.uint8)),
            "{dir}/test_batch: data is uint8 (4, 3000), expected uint8 (N, 3072)",
        ),
        (
            lambda p: _edit_batch(p / "test_batch", data=np.zeros((4, 3072), np.int16)),
            "{dir}/test_batch: data is int16 (4, 3072), expected uint8",
        ),
        (
            lambda p: _edit_batch(p / "data_batch_1", labels=[0, 1, 10, 2]),
            "{dir}/data_batch_1: labels[2] = 10 is not a class index in 0..9",
        ),
        (
            lambda p: _edit_batch(p / "data_batch_1", labels=[0, True, 1, 2]),
            "{dir}/data_batch_1: labels[1] = True is not a class index",
        ),
        (lambda p: _edit_batch(p / "data_batch_5", labels=[0, 1, 2]), "{dir}/data_batch_5: 3 labels for 4 images"),
        (
            lambda p: (p / "data_batch_1").write_bytes((p / "data_batch_1").read_bytes()[:-500]),
            "{dir}/data_batch_1: not a safe CIFAR pickle: ",
        ),
        (
            lambda p: (p / "batches.meta").write_bytes(py2pickle.dumps({b"label_names": [b"a"] * 9})),
            "{dir}/batches.meta: label_names has 9 names, expected 10",
        ),
        (
            lambda p: (p / "batches.meta").write_bytes(py2pickle.dumps({b"label_names": [b"\xff"] * 10})),
            "{dir}/batches.meta: label_names[0] is not UTF-8",
        ),
    ],
)
def test_bad_folder_input_exits_1_naming_the_file(cli, tmp_path, edit, message):
    src = write_cifar(tmp_path / "src", "cifar10", per_batch=4)
    edit(src["path"])
    out = tmp_path / "out"
    result = cli.convert("cifar", src["path"], "--out", out)
    assert result.exit_code == 1
    assert f"error: {message.format(dir=src['path'])}" in result.stderr
    assert "Traceback" not in result.stderr and final_files(out) == []


def test_truncated_archive_names_the_archive_and_member(cli, tmp_path):
    src = write_cifar(tmp_path / "src", "cifar10", per_batch=40, archive=True)
    archive = src["path"]
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    result = cli.convert("cifar", archive, "--out", out)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {archive}:cifar-10-batches-py/")
    assert "truncated or corrupt archive" in result.stderr and final_files(out) == []


def test_hostile_member_inside_the_archive(cli, tmp_path):
    src = write_cifar(tmp_path / "src", "cifar10", per_batch=4)
    marker = tmp_path / "pwned"
    (src["path"] / "test_batch").write_bytes(hostile_pickles(marker)["os.system via protocol-0 GLOBAL"])
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src["path"], arcname="cifar-10-batches-py")
    result = cli.convert("cifar", archive, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"error: {archive}:cifar-10-batches-py/test_batch: not a safe CIFAR pickle: refused global os.system" in (
        result.stderr
    )
    assert not marker.exists()


def test_variant_is_detected_and_can_be_forced(cli, tmp_path):
    src = write_cifar(tmp_path / "src", "cifar100", per_batch=3)
    wrong = cli.convert("cifar", src["path"], "--out", tmp_path / "o", "--variant", "cifar10")
    assert wrong.exit_code == 1 and "missing data_batch_1" in wrong.stderr
    # SRC may also be the folder that holds the extracted folder
    assert cli.convert("cifar", tmp_path / "src", "--out", tmp_path / "o2").stdout.startswith("cifar100: ")


def test_directory_holding_the_downloaded_archive(cli, tmp_path):
    src = write_cifar(tmp_path / "src", "cifar10", per_batch=2, archive=True)
    shutil.rmtree(tmp_path / "src" / "cifar-10-batches-py")
    result = cli.convert("cifar", tmp_path / "src", "--out", tmp_path / "o", "--json")
    assert result.exit_code == 0 and '"examples": 10' in result.stdout
    assert src["path"].exists()


@pytest.mark.parametrize("variant", ["cifar10", "cifar100"])
@pytest.mark.parametrize("archive", [False, True], ids=["folder", "archive"])
def test_the_binary_version_gives_the_pickles_shards_byte_for_byte(cli, tmp_path, variant, archive):
    pickled = write_cifar(tmp_path / "py", variant, per_batch=6)
    binary = write_cifar_binary(tmp_path / "bin", pickled, variant, archive=archive)
    for name, src in (("from_py", pickled["path"]), ("from_bin", binary)):
        result = cli.convert("cifar", src, "--out", tmp_path / name, "--num-shards", 2)
        assert result.exit_code == 0, result.stderr
    shards = sorted(p.name for p in (tmp_path / "from_py").iterdir() if ShardName.parse(p.name))
    assert shards == sorted(p.name for p in (tmp_path / "from_bin").iterdir() if ShardName.parse(p.name))
    assert all((tmp_path / "from_py" / s).read_bytes() == (tmp_path / "from_bin" / s).read_bytes() for s in shards)
    for labels_file in (tmp_path / "from_py").glob("*.labels.txt"):
        assert labels_file.read_text() == (tmp_path / "from_bin" / labels_file.name).read_text()


def test_a_binary_batch_that_is_not_whole_records_is_named_with_its_size(cli, tmp_path):
    pickled = write_cifar(tmp_path / "py", "cifar10", per_batch=3)
    folder = write_cifar_binary(tmp_path / "bin", pickled, "cifar10")
    (folder / "data_batch_2.bin").write_bytes((folder / "data_batch_2.bin").read_bytes()[:-5])
    result = cli.convert("cifar", folder, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{folder / 'data_batch_2.bin'}: 9214 bytes, not a whole number of 3073-byte CIFAR records" in result.stderr
    (folder / "data_batch_2.bin").write_bytes(bytes([10]) + bytes(3072))
    result = cli.convert("cifar", folder, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert "data_batch_2.bin: record 0 (byte 0): label 10 is not a class index in 0..9" in result.stderr
    assert not (tmp_path / "out").exists()
