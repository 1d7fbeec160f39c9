"""EMNIST from NIST's published layout (gzip.zip, or its extracted gzip/ folder), read
back through TensorFlow Datasets itself."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
import tensorflow_datasets as tfds
from helpers import EMNIST_LABELS, final_files, write_emnist

from tfr_convert.converters.published.emnist import DEFAULT_NAMES, TFDS_CLASSES, UNUSED, VARIANTS, parse_mapping


def _supervised(out, split):
    builder = tfds.builder_from_directory(str(out))
    return list(tfds.as_numpy(builder.as_dataset(split=split, as_supervised=True, shuffle_files=False)))


def _shards(out):
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if ".tfrecord-" in p.name}


@pytest.mark.parametrize("variant", ["letters", "digits"])
def test_emnist_from_the_zip_is_stored_upright_with_the_mapping_files_names(cli, tmp_path, variant):
    src = write_emnist(tmp_path / "src", variants=("letters", "digits"))
    out = tmp_path / "out"
    result = cli.convert("mnist", src["path"], "--variant", f"emnist/{variant}", "--out", out, "--no-shuffle")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"emnist_{variant}: train 30, test 10 examples")
    names = (out / "label.labels.txt").read_text().splitlines()
    if variant == "letters":  # labels run 1..26: label 0 has no character
        assert names[:3] == [UNUSED, "Aa", "Bb"] and len(names) == 27
    else:
        assert names == list("0123456789")
    for split in ("train", "test"):
        images, labels = src[variant][split]
        got = _supervised(out, split)
        assert len(got) == len(labels)
        for (image, label), stored, stored_label in zip(got, images, labels, strict=True):
            assert image.shape == (28, 28, 1)
            assert np.array_equal(image[..., 0], stored.T)  # upright: EMNIST stores them transposed
            assert label == stored_label  # labels as published (letters: 1..26)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["variant"] == f"emnist/{variant}" and manifest["options"]["upright"] is True


def test_the_extracted_folder_gives_the_zips_shards_byte_for_byte(cli, tmp_path):
    zipped = write_emnist(tmp_path / "zip", variants=("balanced",))
    folder = write_emnist(tmp_path / "folder", variants=("balanced",), archive=False)
    for name, src in (("a", zipped["path"]), ("b", folder["path"]), ("c", folder["path"].parent)):
        assert cli.convert("mnist", src, "--out", tmp_path / name).exit_code == 0  # the one variant is detected
    assert _shards(tmp_path / "a") and _shards(tmp_path / "a") == _shards(tmp_path / "b") == _shards(tmp_path / "c")
    assert (tmp_path / "a" / "label.labels.txt").read_text() == (tmp_path / "b" / "label.labels.txt").read_text()


@pytest.mark.parametrize("variant", list(TFDS_CLASSES))
def test_layout_tfds_gives_the_catalog_features_and_its_orientation_for_every_variant(cli, tmp_path, variant):
    src = write_emnist(tmp_path / "src", variants=(variant,), n_train=8, n_test=4)
    out = tmp_path / "out"
    result = cli.convert("mnist", src["path"], "--layout", "tfds", "--out", out, "--no-shuffle")
    assert result.exit_code == 0, result.stderr
    out = out / f"emnist_{variant}" / "1.0.0"  # TFDS's layout, under the version of a dataset of its own
    ours, catalog = tfds.builder_from_directory(str(out)).info, tfds.builder(f"emnist/{variant}").info
    assert repr(ours.features) == repr(catalog.features)
    assert ours.features["label"].names == catalog.features["label"].names
    assert ours.supervised_keys == catalog.supervised_keys == ("image", "label")
    assert list(ours.splits) == ["train", "test"]
    images, labels = src[variant]["test"]
    for (image, label), stored, stored_label in zip(_supervised(out, "test"), images, labels, strict=True):
        assert np.array_equal(image[..., 0], stored) and label == stored_label  # as TFDS's builder stores them


def test_an_archive_of_several_variants_asks_for_one(cli, tmp_path):
    src = write_emnist(tmp_path / "src", variants=("letters", "digits", "mnist"))
    result = cli.convert("mnist", src["path"], "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "holds EMNIST letters, digits, mnist: choose one with --variant emnist/NAME" in result.stderr
    assert "Traceback" not in result.stderr and final_files(tmp_path / "out") == []
    missing = cli.convert("mnist", src["path"], "--variant", "emnist/byclass", "--out", tmp_path / "out")
    assert missing.exit_code == 1
    assert "missing emnist-byclass-train-images-idx3-ubyte (or emnist-byclass-train-images-idx3-ubyte.gz)" in (
        missing.stderr
    )


def test_without_mapping_files_the_published_names_are_used(cli, tmp_path):
    src = write_emnist(tmp_path / "src", variants=("bymerge",), mapping=False, archive=False)
    out = tmp_path / "out"
    assert cli.convert("mnist", src["path"], "--out", out).exit_code == 0
    assert (out / "label.labels.txt").read_text().splitlines() == DEFAULT_NAMES["bymerge"]
    assert len(DEFAULT_NAMES["bymerge"]) == EMNIST_LABELS["bymerge"][1] == 47


def test_a_corrupt_zip_member_is_named(cli, tmp_path):
    src = write_emnist(tmp_path / "src", variants=("digits",))
    path = src["path"]
    with zipfile.ZipFile(path) as z:
        member = z.getinfo("gzip/emnist-digits-train-images-idx3-ubyte.gz")
    data = bytearray(path.read_bytes())
    data[member.header_offset + 30 + len(member.filename) + 40] ^= 0xFF  # inside the member's data
    path.write_bytes(bytes(data))
    result = cli.convert("mnist", path, "--out", tmp_path / "out")
    assert result.exit_code == 1, result.stderr
    assert f"{path}:gzip/emnist-digits-train-images-idx3-ubyte.gz: corrupt zip member" in result.stderr
    assert "Traceback" not in result.stderr and final_files(tmp_path / "out") == []


def test_a_label_past_the_mapping_is_named_with_its_byte(cli, tmp_path):
    src = write_emnist(tmp_path / "src", variants=("digits",), archive=False)
    labels = src["path"] / "emnist-digits-test-labels-idx1-ubyte.gz"
    import gzip

    raw = bytearray(gzip.decompress(labels.read_bytes()))
    raw[8 + 3] = 10
    labels.write_bytes(gzip.compress(bytes(raw)))
    result = cli.convert("mnist", src["path"], "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{labels}: label 10 at index 3 (byte 11) is outside 0..9" in result.stderr


def test_a_malformed_mapping_line_is_named(cli, tmp_path):
    src = write_emnist(tmp_path / "src", variants=("digits",), archive=False)
    mapping = src["path"] / "emnist-digits-mapping.txt"
    mapping.write_text("0 48\n1 49\n2 fifty\n")
    result = cli.convert("mnist", src["path"], "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{mapping}: line 3: expected 'label code [code ...]', found '2 fifty'" in result.stderr


def test_mapping_files_name_each_label_by_its_characters():
    assert parse_mapping("m", b"1 65 97\n3 67 99\n") == [UNUSED, "Aa", UNUSED, "Cc"]
    with pytest.raises(Exception, match="m: line 2: label 1 is mapped twice"):
        parse_mapping("m", b"1 65\n1 66\n")


def test_emnist_has_no_download_and_says_where_to_get_it(cli, tmp_path):
    result = cli.convert("mnist", "--download", "--variant", "emnist/letters", "--out", tmp_path / "out")
    assert result.exit_code == 2 and "gzip.zip" in result.stderr and "give it as SRC" in result.stderr


def test_the_command_line_lists_every_emnist_variant():
    from tfr_convert.cli.commands.mnist import VARIANTS as LISTED

    assert LISTED[-len(VARIANTS) :] == VARIANTS


def test_a_member_declaring_more_than_an_emnist_file_can_hold_is_refused_before_reading(cli, tmp_path):
    src = write_emnist(tmp_path / "src", variants=("digits",))
    path = src["path"]
    data = bytearray(path.read_bytes())
    name = b"gzip/emnist-digits-train-images-idx3-ubyte.gz"
    at = data.index(name, data.index(b"PK\x01\x02")) - 46  # the central directory entry naming it
    assert data[at : at + 4] == b"PK\x01\x02"
    data[at + 24 : at + 28] = (3 << 30).to_bytes(4, "little")  # declared uncompressed size: 3 GiB
    path.write_bytes(bytes(data))
    result = cli.convert("mnist", path, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{path}:{name.decode()}: declares {3 << 30} bytes, more than the {1 << 30}" in result.stderr


def _layouts(root):
    """Folders and files SRC may be: (name, path), made under root."""
    from helpers import write_mnist

    made = {}
    write_mnist(root / "mnist")
    made["plain MNIST"] = root / "mnist"
    (root / "empty").mkdir()
    made["an empty folder"] = root / "empty"
    (root / "notes").mkdir()
    (root / "notes" / "my-emnist-notes.txt").write_text("x")
    (root / "notes" / "gzip").mkdir()
    made["a folder naming emnist only inside a name"] = root / "notes"
    write_emnist(root / "zipped")
    made["a folder with gzip.zip"] = root / "zipped"
    made["gzip.zip itself"] = root / "zipped" / "gzip.zip"
    write_emnist(root / "extracted", archive=False)
    made["a folder with gzip/ of emnist files"] = root / "extracted"
    made["the gzip/ folder itself"] = root / "extracted" / "gzip"
    (root / "mapping").mkdir()
    (root / "mapping" / "emnist-letters-mapping.txt").write_text("1 65 97\n")
    made["a mapping file alone"] = root / "mapping"
    (root / "bad").mkdir()
    (root / "bad" / "gzip.zip").write_bytes(b"not a zip")
    made["a broken gzip.zip"] = root / "bad"
    (root / "file").write_bytes(b"idx")
    made["a file that is no zip"] = root / "file"
    return made


def test_a_folder_told_apart_without_the_emnist_reader_is_one_the_reader_calls_plain(tmp_path):
    """idx.may_be_emnist, which the mnist command asks before importing the EMNIST reader,
    says no only where looks_like_emnist says no (it may say yes more often)."""
    from tfr_convert.converters.published.emnist import looks_like_emnist
    from tfr_convert.converters.published.idx import may_be_emnist

    told = {name: (may_be_emnist(str(p)), looks_like_emnist(str(p))) for name, p in _layouts(tmp_path).items()}
    assert [name for name, (may, looks) in told.items() if looks and not may] == []
    assert told["plain MNIST"] == (False, False) and told["an empty folder"] == (False, False)
    assert told["a folder with gzip/ of emnist files"] == (True, True)


def test_a_plain_mnist_run_does_not_import_the_emnist_reader(tmp_path):
    import subprocess
    import sys

    from helpers import write_mnist

    write_mnist(tmp_path / "src")
    code = (
        "import sys\n"
        "from tfr_convert.cli.convert import convert\n"
        "convert.main(sys.argv[1:], standalone_mode=False)\n"
        "print(sorted(m for m in sys.modules if m.endswith('.emnist')))\n"
    )
    args = ["mnist", str(tmp_path / "src"), "--out", str(tmp_path / "out"), "--quiet"]
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "out" / "dataset_info.json").exists()
