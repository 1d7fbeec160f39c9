"""tfr-export against hostile data: class, split and file names from the records never
place a file outside OUT, a failed export leaves nothing under a final name, and names
that would corrupt a text file (a line break in a one-per-line list, a lone carriage
return in a CSV cell, a control character in XML) are refused or written so they read
back as they were. Every refusal is exit 1 naming the record or file and the value."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
import tensorflow as tf

TARGETS = [("images", "folders"), ("images", "csv"), ("coco", None), ("yolo", None), ("voc", None), ("parquet", None)]
# where names from the records never become paths (a column there): split names still do
COLUMN_TARGETS = [("hf", None), ("webdataset", None)]


def _feature(value):
    if isinstance(value, bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
    if isinstance(value, list) and value and isinstance(value[0], float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=value))
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=value))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=value if isinstance(value, list) else [value]))


def _records(path, names, texts=None, seed=1):
    """One record per file name: a small PNG, a label, and one box of class `texts[i]`
    under the Object Detection API's keys (so every target can export it)."""
    rng = np.random.default_rng(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i, name in enumerate(names):
            image = tf.io.encode_png(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)).numpy()
            text = (texts or ["cat", "dog"])[i % len(texts or ["cat", "dog"])]
            feature = {
                "image/encoded": _feature(image),
                "image/filename": _feature(name.encode("utf-8", "surrogateescape")),
                "image/class/label": _feature(i % 2),
                "image/width": _feature(5),
                "image/height": _feature(4),
                "image/object/bbox/xmin": _feature([0.2]),
                "image/object/bbox/ymin": _feature([0.25]),
                "image/object/bbox/xmax": _feature([0.8]),
                "image/object/bbox/ymax": _feature([0.75]),
                "image/object/class/label": _feature([i % 2 + 1]),
                "image/object/class/text": _feature([text.encode()]),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return path


def _everything(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _export(cli, src, out, target, layout, *more):
    args = [src, "--to", target, "--out", out, *(["--layout", layout] if layout else []), *more]
    return cli.export(*args)


def _refused(result, *words):
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.stderr, result.stderr
    return result


@pytest.mark.parametrize(("target", "layout"), TARGETS + COLUMN_TARGETS)
@pytest.mark.parametrize("split", ["..", "."])
def test_a_split_name_that_climbs_out_is_exit_1_naming_the_file_for_every_target(cli, tmp_path, target, layout, split):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    src = _records(work / f"w-{split}.tfrecord-00000-of-00001", ["x.png", "y.png"])
    before = _everything(tmp_path)
    result = _refused(_export(cli, src, work / "out", target, layout), f"split name {split!r}", src.name)
    assert "cannot name a file or folder under the output" in result.stderr
    assert _everything(tmp_path) == before  # nothing written anywhere, OUT not even made


@pytest.mark.parametrize(("target", "layout"), TARGETS + COLUMN_TARGETS)
def test_hostile_class_texts_stay_text_inside_out_for_every_target(cli, tmp_path, target, layout):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    src = _records(work / "plain.tfrecord", ["x.png", "y.png"], texts=["../../../evil", str(tmp_path / "abs")])
    before = _everything(tmp_path)
    result = _export(cli, src, work / "out", target, layout)
    assert result.exit_code == 0, result.output
    after = _everything(tmp_path)
    assert [p for p in after if p not in before and not p.startswith("a/b/out")] == []


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../../../escaped", "path separator"),
        ("/ABSOLUTE/victim", "path separator"),
        ("a/b", "path separator"),
        ("..", "'..'"),
        ("", "is empty"),
        ("x" * 256, "longer than 255 bytes"),
    ],
)
def test_a_class_name_that_is_no_folder_name_is_exit_1_before_anything_is_written(cli, tmp_path, name, problem):
    pets = tmp_path / "pets"
    for folder in ("cat", "dog"):
        (pets / folder).mkdir(parents=True)
        tf.io.write_file(str(pets / folder / "1.png"), tf.io.encode_png(np.zeros((3, 3, 3), np.uint8)))
    assert cli.convert("images", pets, "--out", tmp_path / "ds").exit_code == 0
    victim = tmp_path / "ABSOLUTE" / "victim"
    victim.mkdir(parents=True)
    (victim / "keep.txt").write_text("mine")
    hostile = name.replace("/ABSOLUTE", str(tmp_path / "ABSOLUTE"))
    (tmp_path / "ds" / "label.labels.txt").write_text(f"{hostile}\ndog\n")
    before = _everything(tmp_path)
    out = tmp_path / "deep" / "er" / "out"
    result = _refused(_export(cli, tmp_path / "ds", out, "images", "folders"), "class 0 of 'label'", problem)
    assert _everything(tmp_path) == before
    assert (victim / "keep.txt").read_text() == "mine"
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("target", "layout"), TARGETS)
@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("c\0d.png", "NUL byte"),
        ("n" * 300 + ".png", "longer than 255 bytes"),
        ("../up.png", "'..'"),
        ("/etc/passwd", "is absolute"),
        ("ok/../../up.png", "'..'"),
        ("C:/windows.png", "Windows drive"),
    ],
)
def test_a_bad_file_name_after_good_records_leaves_nothing_in_out(cli, tmp_path, target, layout, bad, problem):
    src = _records(tmp_path / "plain.tfrecord", ["a.png", "b.png", bad, "d.png"])
    out = tmp_path / "out"
    result = _export(cli, src, out, target, layout)
    if target == "parquet":  # file names are a column there, never a path
        assert result.exit_code == 0, result.output
        return
    _refused(result, "plain.tfrecord record 2", "is not a relative path inside the output", problem)
    assert not out.exists() or _everything(out) == []
    assert not (tmp_path / "up.png").exists()


def test_a_skipped_bad_name_is_listed_and_the_rest_exported(cli, tmp_path):
    src = _records(tmp_path / "plain.tfrecord", ["a.png", "b\0.png", "n" * 300 + ".png", "d.png"])
    result = cli.export(src, "--to", "images", "--layout", "csv", "--out", tmp_path / "out", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert result.stderr.count("skipped: ") == 2 and "NUL byte" in result.stderr
    assert _everything(tmp_path / "out") == ["a.png", "d.png", "labels.csv"]


@pytest.mark.parametrize(
    ("target", "names", "clash"),
    [
        ("yolo", ["a.png", "b.png", "a.jpg"], "labels/a.txt"),
        ("voc", ["a/b.png", "c.png", "a_b.png"], "Annotations/a_b.xml"),
        ("voc", ["a.png", "b.png", "a.jpg"], "Annotations/a.xml"),  # named after the stem, as VOC names them
        ("yolo", ["x.png", "classes.png"], "labels/classes.txt"),
    ],
)
def test_two_records_whose_annotation_files_clash_are_exit_1_naming_both(cli, tmp_path, target, names, clash):
    src = _records(tmp_path / "plain.tfrecord", names)
    out = tmp_path / "out"
    result = _refused(_export(cli, src, out, target, None), clash, f"plain.tfrecord record {len(names) - 1}")
    assert not out.exists() or _everything(out) == []
    assert "Traceback" not in result.output


def test_a_record_named_like_the_exports_own_csv_is_refused(cli, tmp_path):
    src = _records(tmp_path / "plain.tfrecord", ["a.png", "labels.csv"])
    _refused(_export(cli, src, tmp_path / "out", "images", "csv"), "writes labels.csv, as the export's own labels.csv")
    assert not (tmp_path / "out").exists() or _everything(tmp_path / "out") == []


@pytest.mark.parametrize("target", ["yolo", "voc"])
@pytest.mark.parametrize("text", ["ca\nt", "ca\rt", "ca\u2028t", "ca\x0bt"])
def test_a_class_that_would_break_a_text_file_is_exit_1_naming_it(cli, tmp_path, target, text):
    src = _records(tmp_path / "plain.tfrecord", ["a.png", "b.png"], texts=["dog", text])
    if target == "voc" and text in ("ca\nt", "ca\rt", "ca\u2028t"):  # XML holds these as they are
        assert _export(cli, src, tmp_path / "out", target, None).exit_code == 0
        return
    _refused(_export(cli, src, tmp_path / "out", target, None), "plain.tfrecord record 1", repr(text))
    assert not (tmp_path / "out").exists() or _everything(tmp_path / "out") == []


def test_the_voc_export_of_a_class_with_markup_reads_back_as_it_was(cli, tmp_path):
    src = _records(tmp_path / "plain.tfrecord", ["a.png", "b.png"], texts=['<dog & "cat">', "emu"])
    assert _export(cli, src, tmp_path / "out", "voc", None).exit_code == 0
    import xml.etree.ElementTree as ET

    names = {ET.parse(p).find("object/name").text for p in (tmp_path / "out" / "Annotations").iterdir()}
    assert names == {'<dog & "cat">', "emu"}


def test_a_class_names_file_that_is_not_utf8_is_exit_1_naming_it(cli, tmp_path):
    images, masks = tmp_path / "img", tmp_path / "masks"
    images.mkdir()
    masks.mkdir()
    for i in range(2):
        tf.io.write_file(str(images / f"{i}.png"), tf.io.encode_png(np.zeros((4, 4, 3), np.uint8)))
        tf.io.write_file(str(masks / f"{i}.png"), tf.io.encode_png(np.full((4, 4, 1), i, np.uint8)))
    (tmp_path / "classes.txt").write_text("background\nthing\n")
    converted = cli.convert("segmentation", images, "--masks", masks, "--classes", tmp_path / "classes.txt",
                            "--out", tmp_path / "ds")  # fmt: skip
    assert converted.exit_code == 0, converted.output
    labels = next((tmp_path / "ds").glob("*.labels.txt"))
    labels.write_bytes(b"back\x85ground\nthing\n")
    before = _everything(tmp_path)
    _refused(_export(cli, tmp_path / "ds", tmp_path / "out", "images", "masks"), labels.name, "not UTF-8")
    assert _everything(tmp_path) == before


def test_a_csv_cell_with_a_carriage_return_reads_back_as_it_was(cli, tmp_path):
    rng = np.random.default_rng(0)
    with tf.io.TFRecordWriter(str(tmp_path / "plain.tfrecord")) as writer:
        for i, note in enumerate(["one\rtwo", "three\r\nfour", "plain"]):
            image = tf.io.encode_png(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)).numpy()
            feature = {"image": _feature(image), "filename": _feature(f"{i}.png".encode()), "note": _feature(
                note.encode())}  # fmt: skip
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    result = cli.export(tmp_path / "plain.tfrecord", "--to", "images", "--layout", "csv", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "out" / "labels.csv").read_bytes().decode()
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [r["note"] for r in rows] == ["one\rtwo", "three\r\nfour", "plain"]


def test_a_converted_class_name_with_a_line_break_is_exit_1_with_nothing_at_a_final_name(cli, tmp_path):
    pets = tmp_path / "pets"
    for folder in ("cat", "d\nog"):
        (pets / folder).mkdir(parents=True)
        tf.io.write_file(str(pets / folder / "1.png"), tf.io.encode_png(np.zeros((3, 3, 3), np.uint8)))
    result = _refused(cli.convert("images", pets, "--out", tmp_path / "ds"), "'d\\nog'", "line break")
    assert not (tmp_path / "ds").exists() or not list((tmp_path / "ds").glob("*.tfrecord*"))
    assert "Traceback" not in result.output


def test_the_label_map_escapes_a_class_name_so_protobuf_reads_it_back(cli, tmp_path):
    from google.protobuf import text_format
    from google.protobuf.struct_pb2 import ListValue  # noqa: F401  (the package is protobuf's)

    from tfr_convert.converters.annotations.label_map import label_map_pbtxt

    names = {'a "quoted"\nname': 1, "tab\there\\back\r\x01\x7f": 2, "üñï": 3}
    text = label_map_pbtxt(names).decode()
    assert len(text.splitlines()) == 4 * len(names)
    # the label map's items, read by protobuf's own text tokenizer
    tokenizer = text_format.Tokenizer(text.splitlines())
    read = []
    while not tokenizer.AtEnd():
        token = tokenizer.token
        if token == "name":
            tokenizer.NextToken()
            tokenizer.Consume(":")
            read.append(tokenizer.ConsumeString())
        else:
            tokenizer.NextToken()
    assert read == list(names)


def _mask_records(path, names):
    rng = np.random.default_rng(2)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for name in names:
            image = tf.io.encode_png(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)).numpy()
            mask = tf.io.encode_png(rng.integers(0, 3, (4, 5, 1), dtype=np.uint8)).numpy()
            feature = {"image": _feature(image), "segmentation_mask": _feature(mask),
                       "file_name": _feature(name.encode("utf-8", "surrogateescape"))}  # fmt: skip
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return path


@pytest.mark.parametrize(
    ("shard", "names", "words"),
    [
        ("w-...tfrecord-00000-of-00001", ["a.png", "b.png"], ["split name '..'"]),
        ("w-train.tfrecord-00000-of-00001", ["a.png", "../../up.png"], ["record 1", "'..'"]),
        ("w-train.tfrecord-00000-of-00001", ["a.png", "b\0.png"], ["record 1", "NUL byte"]),
        ("w-train.tfrecord-00000-of-00001", ["a.png", "a.jpg"], ["record 1", "train/masks/a.png"]),
    ],
)
def test_the_masks_layout_refuses_hostile_split_and_file_names_leaving_nothing(cli, tmp_path, shard, names, words):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    src = _mask_records(work / shard, names)
    before = _everything(tmp_path)
    _refused(_export(cli, src, work / "out", "images", "masks"), *words)
    assert _everything(tmp_path) == before


@pytest.mark.parametrize("name", ["../../../evil", "/abs/evil", "a\0b"])
def test_a_dataset_name_from_its_metadata_names_no_file_outside_its_directory(cli, tmp_path, name):
    import json

    (tmp_path / "src").mkdir()
    _records(tmp_path / "src" / "plain.tfrecord", ["a.png", "b.png"])
    dataset = tmp_path / "a" / "b" / "ds"
    assert cli.convert("records", tmp_path / "src", "--out", dataset, "--quiet").exit_code == 0
    info = json.loads((dataset / "dataset_info.json").read_text())
    info["name"] = name
    (dataset / "dataset_info.json").write_text(json.dumps(info))
    before = _everything(tmp_path)
    converted = cli.convert("records", dataset, "--out", tmp_path / "a" / "b" / "out")
    assert converted.exit_code == 1, converted.output
    assert f"dataset_info.json: dataset name {name!r}" in converted.stderr and "Traceback" not in converted.output
    verified = cli.inspect(dataset, "--verify")  # the metadata's problem is reported, not followed
    assert verified.exit_code == 1 and "Traceback" not in verified.output
    assert _everything(tmp_path) == before
