"""`tfr-convert table`: every input kind read back with TensorFlow and TFDS value for
value; nulls in each mode; structs and nested lists; labels; splits and keys; the same
bytes from 2 workers and from Beam."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import tfr_convert

pa = pytest.importorskip("pyarrow")
import pyarrow.feather  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from tfr_convert.containers import get as container  # noqa: E402
from tfr_convert.dataset.naming import ShardName  # noqa: E402
from tfr_convert.dataset.wire.example import parse  # noqa: E402


def records(out, split="train"):
    """Every Example of a split, parsed, in order."""
    found = []
    for path in sorted(out.iterdir()):
        shard = ShardName.parse(path.name)
        if shard is not None and shard.split == split:
            found += [parse(r.data) for r in container("tfrecord").records(str(path))]
    return found


def values(example, name):
    return example[name][1] if name in example else None


def tfds_rows(out, split="train"):
    tfds = pytest.importorskip("tensorflow_datasets")
    builder = tfds.builder_from_directory(str(out))
    return list(tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)))


TABLE = {
    "id": [1, 2, 3, 4],
    "price": [1.5, 2.25, -3.0, 1e10],
    "name": ["a", "bé", "c", ""],
    "flag": [True, False, True, False],
}


def write_csv(path, rows, delimiter=","):
    names = list(rows)
    lines = [delimiter.join(names)]
    for i in range(len(rows[names[0]])):
        lines.append(delimiter.join("" if rows[n][i] is None else str(rows[n][i]) for n in names))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def convert(cli, *args):
    result = cli.convert("table", *args, "--no-shuffle", "--quiet")
    return result


def test_a_csv_becomes_one_example_per_row_typed_by_its_values(cli, tmp_path):
    src = write_csv(tmp_path / "shop.csv", {k: v for k, v in TABLE.items() if k != "flag"})
    result = convert(cli, src, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    got = records(tmp_path / "out")
    assert [values(e, "id") for e in got] == [[1], [2], [3], [4]]
    assert [values(e, "price") for e in got] == [[1.5], [2.25], [-3.0], [1e10]]
    assert [values(e, "name") for e in got] == [[b"a"], ["bé".encode()], [b"c"], [b""]]
    rows = tfds_rows(tmp_path / "out")
    assert [int(r["id"]) for r in rows] == [1, 2, 3, 4]
    assert [r["name"] for r in rows] == [b"a", "bé".encode(), b"c", b""]
    info = json.loads((tmp_path / "out" / "dataset_info.json").read_text())
    assert info["name"] == "shop"


def test_a_tsv_and_a_semicolon_csv_are_read_with_their_separators(cli, tmp_path):
    tsv = write_csv(tmp_path / "a.tsv", {"x": [1, 2], "y": ["p q", "r"]}, "\t")
    semi = write_csv(tmp_path / "b.csv", {"x": [1, 2], "y": ["1,5", "2,25"]}, ";")
    assert convert(cli, tsv, "--out", tmp_path / "o1").exit_code == 0
    assert [values(e, "y") for e in records(tmp_path / "o1")] == [[b"p q"], [b"r"]]
    assert [(int(r["x"]), r["y"]) for r in tfds_rows(tmp_path / "o1")] == [(1, b"p q"), (2, b"r")]
    assert convert(cli, semi, "--out", tmp_path / "o2").exit_code == 0
    assert [values(e, "y") for e in records(tmp_path / "o2")] == [[1.5], [2.25]]  # decimal commas
    assert [float(r["y"]) for r in tfds_rows(tmp_path / "o2")] == [1.5, 2.25]


def arrow_table():
    return pa.table(
        {
            **TABLE,
            "small": pa.array([1, 2, 3, 4], pa.int8()),
            "point": pa.array([{"x": 1.0, "y": 2.0}, {"x": 3.0, "y": 4.0}, {"x": 5.0, "y": 6.0}, {"x": 7.0, "y": 8.0}]),
            "tags": pa.array([["a"], [], ["b", "c"], ["d"]], pa.list_(pa.string())),
            "vec": pa.array([[1, 2, 3]] * 4, pa.list_(pa.int64(), 3)),
            "boxes": pa.array(
                [[[0.1, 0.2]], [], [[0.3, 0.4], [0.5, 0.6]], [[0.7, 0.8]]], pa.list_(pa.list_(pa.float32(), 2))
            ),
            "day": pa.array([0, 1, 2, 3], pa.date32()),
            "blob": pa.array([b"\x00\xff", b"", b"x", b"y"], pa.binary()),
        }
    )


def check_arrow_table(out):
    got = records(out)
    assert [values(e, "small") for e in got] == [[1], [2], [3], [4]]
    assert [values(e, "flag") for e in got] == [[1], [0], [1], [0]]
    assert [values(e, "point/x") for e in got] == [[1.0], [3.0], [5.0], [7.0]]
    assert [values(e, "tags") for e in got] == [[b"a"], [], [b"b", b"c"], [b"d"]]
    assert [values(e, "vec") for e in got] == [[1, 2, 3]] * 4
    assert [len(values(e, "boxes")) for e in got] == [2, 0, 4, 2]
    assert [values(e, "day") for e in got] == [[0], [1], [2], [3]]
    assert [values(e, "blob") for e in got] == [[b"\x00\xff"], [b""], [b"x"], [b"y"]]
    rows = tfds_rows(out)
    assert [r["point"]["y"].item() for r in rows] == [2.0, 4.0, 6.0, 8.0]
    assert [r["vec"].tolist() for r in rows] == [[1, 2, 3]] * 4
    assert [r["boxes"].shape for r in rows] == [(1, 2), (0, 2), (2, 2), (1, 2)]
    assert np.allclose(rows[2]["boxes"], [[0.3, 0.4], [0.5, 0.6]])
    assert [list(r["tags"]) for r in rows] == [[b"a"], [], [b"b", b"c"], [b"d"]]


def test_parquet_arrow_and_jsonl_give_features_by_their_arrow_types(cli, tmp_path):
    table = arrow_table()
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=2)
    pyarrow.feather.write_feather(table, tmp_path / "t.feather")
    for name in ("t.parquet", "t.feather"):
        out = tmp_path / f"out-{name}"
        result = convert(cli, tmp_path / name, "--out", out)
        assert result.exit_code == 0, result.stderr
        check_arrow_table(out)
    with open(tmp_path / "t.jsonl", "w") as f:
        for row in table.drop_columns(["day", "blob", "boxes", "vec"]).to_pylist():
            f.write(json.dumps(row) + "\n")
    result = convert(cli, tmp_path / "t.jsonl", "--out", tmp_path / "out-jsonl")
    assert result.exit_code == 0, result.stderr
    got = records(tmp_path / "out-jsonl")
    assert [values(e, "point/y") for e in got] == [[2.0], [4.0], [6.0], [8.0]]
    assert [values(e, "tags") for e in got] == [[b"a"], [], [b"b", b"c"], [b"d"]]
    rows = tfds_rows(tmp_path / "out-jsonl")
    assert [(int(r["id"]), float(r["price"]), r["name"]) for r in rows] == [
        (i, p, n.encode()) for i, p, n in zip(TABLE["id"], TABLE["price"], TABLE["name"], strict=True)
    ]
    assert [r["point"]["y"].item() for r in rows] == [2.0, 4.0, 6.0, 8.0]
    assert [list(r["tags"]) for r in rows] == [[b"a"], [], [b"b", b"c"], [b"d"]]


def test_a_parquet_folder_and_split_named_files_give_their_splits(cli, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(pa.table({"x": [1, 2, 3]}), folder / "train.parquet")
    pq.write_table(pa.table({"x": [4, 5]}), folder / "part-test.parquet")
    result = convert(cli, folder, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert [values(e, "x")[0] for e in records(tmp_path / "out", "train")] == [1, 2, 3]
    assert [values(e, "x")[0] for e in records(tmp_path / "out", "test")] == [4, 5]
    assert [int(r["x"]) for r in tfds_rows(tmp_path / "out", "train")] == [1, 2, 3]
    assert [int(r["x"]) for r in tfds_rows(tmp_path / "out", "test")] == [4, 5]


def test_nulls_are_an_error_naming_the_row_or_omitted_or_filled(cli, tmp_path):
    src = tmp_path / "n.parquet"
    pq.write_table(pa.table({"a": [1, None, 3], "s": ["x", "y", None], "l": [[1], None, [2, 3]]}), src)
    result = convert(cli, src, "--out", tmp_path / "err")
    assert result.exit_code == 1
    assert "n.parquet: row 1: column 'a' is null: --nulls omit or fill keeps the row" in result.stderr
    assert not (tmp_path / "err").exists()

    assert convert(cli, src, "--out", tmp_path / "omit", "--nulls", "omit").exit_code == 0
    got = records(tmp_path / "omit")
    assert ["a" in e for e in got] == [True, False, True] and ["s" in e for e in got] == [True, True, False]
    rows = tfds_rows(tmp_path / "omit")
    assert [r["a"].tolist() for r in rows] == [[1], [], [3]]
    assert [r["s"].tolist() for r in rows] == [[b"x"], [b"y"], []]
    assert [r["l"].tolist() for r in rows] == [[1], [], [2, 3]]

    assert convert(cli, src, "--out", tmp_path / "fill", "--nulls", "fill").exit_code == 0
    rows = tfds_rows(tmp_path / "fill")
    assert [int(r["a"]) for r in rows] == [1, 0, 3] and [r["s"] for r in rows] == [b"x", b"y", b""]

    result = convert(cli, src, "--out", tmp_path / "skip", "--on-error", "skip")
    assert result.exit_code == 0
    assert [values(e, "a") for e in records(tmp_path / "skip")] == [[1]]


def test_a_text_label_column_becomes_a_class_label_with_sorted_names(cli, tmp_path):
    src = write_csv(tmp_path / "l.csv", {"x": [1, 2, 3, 4], "kind": ["dog", "cat", "dog", "emu"]})
    result = convert(cli, src, "--out", tmp_path / "out", "--label-column", "kind", "--rename", "kind=label")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "out" / "label.labels.txt").read_text().split() == ["cat", "dog", "emu"]
    assert [values(e, "label") for e in records(tmp_path / "out")] == [[1], [0], [1], [2]]
    tfds = pytest.importorskip("tensorflow_datasets")
    builder = tfds.builder_from_directory(str(tmp_path / "out"))
    assert builder.info.features["label"].names == ["cat", "dog", "emu"]


def test_integer_labels_keep_their_numbers_and_label_names_names_them(cli, tmp_path):
    src = write_csv(tmp_path / "l.csv", {"x": [1, 2, 3], "y": [2, 0, 1]})
    names = tmp_path / "names.txt"
    names.write_text("zero\none\ntwo\n")
    result = convert(cli, src, "--out", tmp_path / "out", "--label-column", "y", "--label-names", names)
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "out" / "y.labels.txt").read_text().split() == ["zero", "one", "two"]
    assert [values(e, "y") for e in records(tmp_path / "out")] == [[2], [0], [1]]
    names.write_text("zero\none\n")
    result = convert(cli, src, "--out", tmp_path / "bad", "--label-column", "y", "--label-names", names)
    assert result.exit_code == 1 and "l.csv: line 2: label 2 is not a class index 0..1" in result.stderr


def test_integer_labels_without_names_are_class_indices_up_to_the_largest(cli, tmp_path):
    """Labels of any integer width (nulls and negatives included) are read into as few
    bytes as they need and written as the int64s they are; a label below 0 is named."""
    src = tmp_path / "i.parquet"
    labels = [i * 7 % 12 for i in range(48)]
    for kind in (pa.int8(), pa.uint16(), pa.int64()):
        pq.write_table(pa.table({"x": list(range(48)), "y": pa.array(labels, kind)}), src)
        out = tmp_path / f"out-{kind}"
        result = convert(cli, src, "--out", out, "--label-column", "y", "--split", "train=0.75,test=0.25",
                         "--stratify", "--no-shuffle")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        assert (out / "y.labels.txt").read_text().split() == [str(i) for i in range(12)]
        for split in ("train", "test"):
            found = [(values(e, "x")[0], values(e, "y")[0]) for e in records(out, split)]
            assert all(labels[x] == y for x, y in found)
            assert sorted(y for _, y in found) == sorted(list(range(12)) * (3 if split == "train" else 1))
    pq.write_table(pa.table({"x": [1, 2, 3], "y": pa.array([3, None, -2], pa.int16())}), src)
    result = convert(cli, src, "--out", tmp_path / "bad", "--label-column", "y", "--on-error", "skip")
    assert result.exit_code == 0, result.stderr
    assert [values(e, "y") for e in records(tmp_path / "bad")] == [[3]]
    skipped = json.loads((tmp_path / "bad" / "manifest.json").read_text())["skipped"]
    reasons = {item["item"].rsplit("/", 1)[-1]: item["reason"] for item in skipped}
    assert reasons == {"i.parquet: row 1": "column 'y' is null: a label names a class: give every row one",
                       "i.parquet: row 2": "label -2 is not a class index 0..3"}  # fmt: skip
    pq.write_table(pa.table({"x": [1, 2], "y": pa.array([0, 5000], pa.int32())}), src)
    result = convert(cli, src, "--out", tmp_path / "sparse", "--label-column", "y")
    assert result.exit_code == 1
    assert "integers up to 5000 but only 2 distinct values" in result.stderr


def test_a_split_column_names_each_rows_split_and_is_not_written(cli, tmp_path):
    src = write_csv(tmp_path / "s.csv", {"x": [1, 2, 3, 4], "fold": ["train", "test", "train", "validation"]})
    result = convert(cli, src, "--out", tmp_path / "out", "--split-column", "fold")
    assert result.exit_code == 0, result.stderr
    assert [values(e, "x") for e in records(tmp_path / "out", "train")] == [[1], [3]]
    assert [values(e, "x") for e in records(tmp_path / "out", "test")] == [[2]]
    assert all("fold" not in e for e in records(tmp_path / "out", "train"))


def test_a_split_column_of_any_arrow_type_is_read_by_its_distinct_values(cli, tmp_path):
    """Split names as strings, dictionary-encoded strings or with nulls among them (a
    null row rejected, named): each row goes to the split its value names; the first
    row (in file order) whose value is no split name is the one named."""
    folds = ["test", "train", None, "train", "validation", "test"]
    for kind, column in (
        ("plain", pa.array(folds)),
        ("dictionary", pa.array(folds).dictionary_encode()),
    ):
        src = tmp_path / f"{kind}.parquet"
        pq.write_table(pa.table({"x": list(range(6)), "fold": column}), src)
        out = tmp_path / f"out-{kind}"
        result = convert(cli, src, "--out", out, "--split-column", "fold", "--on-error", "skip")
        assert result.exit_code == 0, result.stderr
        got = {split: [values(e, "x")[0] for e in records(out, split)] for split in ("train", "validation", "test")}
        assert got == {"train": [1, 3], "validation": [4], "test": [0, 5]}
    src = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"x": list(range(5)), "fold": ["train", "2nd", "train", "x y", "2nd"]}), src)
    result = convert(cli, src, "--out", tmp_path / "bad", "--split-column", "fold")
    assert result.exit_code == 1 and "bad.parquet: row 1: --split-column fold is '2nd'" in result.stderr
    assert not (tmp_path / "bad").exists()


def test_ratio_splits_keep_label_proportions_and_groups_whole(cli, tmp_path):
    n = 400
    src = tmp_path / "r.parquet"
    pq.write_table(
        pa.table({"x": list(range(n)), "y": [i % 4 == 0 for i in range(n)], "g": [i // 4 for i in range(n)]}), src
    )
    result = convert(cli, src, "--out", tmp_path / "strat", "--split", "train=0.75,test=0.25", "--label-column", "y",
                     "--stratify")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "strat" / "y.labels.txt").read_text().split() == ["false", "true"]
    for split, size in (("train", 300), ("test", 100)):
        got = [values(e, "y")[0] for e in records(tmp_path / "strat", split)]
        assert len(got) == size and sum(got) == size // 4  # a quarter true in each, exactly
    result = cli.convert("table", src, "--out", tmp_path / "out", "--split", "train=0.75,test=0.25", "--quiet",
                         "--group-column", "g")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    train = {values(e, "g")[0] for e in records(tmp_path / "out", "train")}
    test = {values(e, "g")[0] for e in records(tmp_path / "out", "test")}
    assert not train & test and len(train) == 75 and len(test) == 25


def test_a_key_column_must_be_unique_naming_both_rows(cli, tmp_path):
    src = write_csv(tmp_path / "k.csv", {"id": ["a", "b", "a"], "x": [1, 2, 3]})
    result = convert(cli, src, "--out", tmp_path / "out", "--key-column", "id")
    assert result.exit_code == 1
    assert "k.csv: line 2 and k.csv: line 4 have one --key-column id value, 'a'" in result.stderr.replace(
        str(tmp_path) + "/", ""
    )


def test_an_unsupported_column_is_exit_2_naming_it_and_drop_leaves_it_out(cli, tmp_path):
    src = tmp_path / "m.parquet"
    pq.write_table(pa.table({"x": [1], "m": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int64()))}), src)
    result = convert(cli, src, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "column 'm' is a map" in result.stderr and "--drop it" in result.stderr
    assert convert(cli, src, "--out", tmp_path / "out", "--drop", "m").exit_code == 0
    result = convert(cli, src, "--out", tmp_path / "o2", "--columns", "nope")
    assert result.exit_code == 2 and "no column 'nope'" in result.stderr


def test_float64_values_that_float32_changes_are_counted(cli, tmp_path):
    src = tmp_path / "f.parquet"
    pq.write_table(pa.table({"f": [0.5, 0.1, 1 / 3, math.nan]}), src)
    result = cli.convert("table", src, "--out", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.stderr
    assert "column 'f': 2 float64 values changed when stored as float32" in result.output + result.stderr


def test_two_workers_and_beam_write_the_bytes_of_one(cli, tmp_path):
    table = arrow_table()
    big = pa.concat_tables([table] * 300)
    pq.write_table(big, tmp_path / "t.parquet")
    outs = {}
    for name, extra in (("one", ["--workers", "1"]), ("two", ["--workers", "2"]), ("beam", ["--engine", "beam"])):
        if name == "beam":
            pytest.importorskip("apache_beam")
        result = cli.convert("table", tmp_path / "t.parquet", "--out", tmp_path / name, "--quiet", *extra,
                             "--split", "train=0.9,test=0.1", "--shard-size", "20KB")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        outs[name] = {p.name: p.read_bytes() for p in (tmp_path / name).iterdir() if "tfrecord" in p.name}
    assert len(outs["one"]) > 2 and outs["one"] == outs["two"] == outs["beam"]


def test_a_hugging_face_dataset_dict_keeps_its_splits_and_class_names(cli, tmp_path):
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["neg", "pos", "mixed"]),
            "score": datasets.Value("float32"),
            "tokens": datasets.Sequence(datasets.Value("int32")),
        }
    )
    parts = {
        "train": {
            "text": ["good", "bad", "meh"],
            "label": [1, 0, 2],
            "score": [0.5, -1.0, 0.0],
            "tokens": [[1, 2], [], [3]],
        },
        "test": {"text": ["fine"], "label": [1], "score": [0.25], "tokens": [[4, 5, 6]]},
    }
    dataset = datasets.DatasetDict({s: datasets.Dataset.from_dict(d, features=features) for s, d in parts.items()})
    dataset.save_to_disk(str(tmp_path / "hf"))
    result = convert(cli, tmp_path / "hf", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "out" / "label.labels.txt").read_text().split() == ["neg", "pos", "mixed"]
    for split, expected in parts.items():
        rows = tfds_rows(tmp_path / "out", split)
        assert [r["text"].decode() for r in rows] == expected["text"]
        assert [int(r["label"]) for r in rows] == expected["label"]
        assert [float(r["score"]) for r in rows] == expected["score"]
        assert [r["tokens"].tolist() for r in rows] == expected["tokens"]
    tfds = pytest.importorskip("tensorflow_datasets")
    assert tfds.builder_from_directory(str(tmp_path / "out")).info.features["label"].names == ["neg", "pos", "mixed"]
    # one Dataset (no dict): one train split
    dataset["test"].save_to_disk(str(tmp_path / "one"))
    assert convert(cli, tmp_path / "one", "--out", tmp_path / "out1").exit_code == 0
    assert [values(e, "text") for e in records(tmp_path / "out1")] == [[b"fine"]]


def png(pixels) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def pictures(n, size=(6, 5)):
    rng = np.random.default_rng(1)
    return [rng.integers(0, 256, (*size, 3), dtype=np.uint8) for _ in range(n)]


def test_picture_columns_of_bytes_and_of_paths_are_stored_and_decode_to_their_pixels(cli, tmp_path):
    pixels = pictures(3)
    root = tmp_path / "imgs"
    root.mkdir()
    for i, p in enumerate(pixels):
        (root / f"{i}.png").write_bytes(png(p))
    src = tmp_path / "p.parquet"
    pq.write_table(
        pa.table({"photo": [png(p) for p in pixels], "file": [f"{i}.png" for i in range(3)], "y": [0, 1, 0]}), src
    )
    result = convert(cli, src, "--out", tmp_path / "out", "--image-column", "photo", "--image-column", "file",
                     "--image-root", root, "--label-column", "y")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    got = records(tmp_path / "out")
    assert [values(e, "photo")[0] for e in got] == [png(p) for p in pixels]  # keep mode: the bytes as they are
    rows = tfds_rows(tmp_path / "out")
    for row, p in zip(rows, pixels, strict=True):
        assert np.array_equal(row["photo"], p) and np.array_equal(row["file"], p)
    tfds = pytest.importorskip("tensorflow_datasets")
    builder = tfds.builder_from_directory(str(tmp_path / "out"))
    assert builder.info.features["photo"].shape == (6, 5, 3)
    assert builder.info.supervised_keys is None or "y" in str(builder.info.supervised_keys)
    # --resize re-encodes every picture as PNG of that size
    result = convert(cli, src, "--out", tmp_path / "small", "--image-column", "photo", "--drop", "file",
                     "--resize", "3x2")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert [r["photo"].shape for r in tfds_rows(tmp_path / "small")] == [(2, 3, 3)] * 3


def test_a_damaged_picture_is_exit_1_naming_its_row_or_skipped(cli, tmp_path):
    good = [png(p) for p in pictures(3)]
    src = tmp_path / "d.parquet"
    pq.write_table(pa.table({"photo": [good[0], good[1][:40], good[2]], "i": [0, 1, 2]}), src)
    result = convert(cli, src, "--out", tmp_path / "out", "--image-column", "photo")
    assert result.exit_code == 1 and "d.parquet: row 1:" in result.stderr
    assert not (tmp_path / "out").exists()
    result = convert(cli, src, "--out", tmp_path / "out", "--image-column", "photo", "--on-error", "skip")
    assert result.exit_code == 0, result.stderr
    assert [values(e, "i") for e in records(tmp_path / "out")] == [[0], [2]]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert "d.parquet: row 1" in json.dumps(manifest)


def test_a_picture_path_leading_outside_the_image_root_is_refused(cli, tmp_path):
    root = tmp_path / "imgs"
    root.mkdir()
    (tmp_path / "secret.png").write_bytes(png(pictures(1)[0]))
    (root / "link.png").symlink_to(tmp_path / "secret.png")
    for name in ("../secret.png", "link.png", "/etc/passwd"):
        src = write_csv(tmp_path / "p.csv", {"file": [name]})
        result = convert(cli, src, "--out", tmp_path / "out", "--image-column", "file", "--image-root", root)
        assert result.exit_code == 1, (name, result.stderr)
        assert "outside" in result.stderr and not (tmp_path / "out").exists()


def test_a_hugging_face_image_feature_is_a_picture_without_being_named(cli, tmp_path):
    datasets = pytest.importorskip("datasets")
    from PIL import Image

    pixels = pictures(2, (4, 7))
    features = datasets.Features({"img": datasets.Image(), "label": datasets.ClassLabel(names=["a", "b"])})
    data = {"img": [Image.fromarray(p) for p in pixels], "label": [1, 0]}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(data, features=features)}).save_to_disk(
        str(tmp_path / "hf")
    )
    result = convert(cli, tmp_path / "hf", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    rows = tfds_rows(tmp_path / "out")
    assert [int(r["label"]) for r in rows] == [1, 0]
    for row, p in zip(rows, pixels, strict=True):
        assert np.array_equal(row["img"], p)
    tfds = pytest.importorskip("tensorflow_datasets")
    builder = tfds.builder_from_directory(str(tmp_path / "out"))
    assert builder.info.supervised_keys is not None  # one image, one class label: as_supervised works


def test_a_null_picture_is_left_out_under_omit_and_read_as_no_picture(cli, tmp_path):
    pixels = pictures(2)
    src = tmp_path / "n.parquet"
    pq.write_table(pa.table({"photo": pa.array([png(pixels[0]), None, png(pixels[1])], pa.binary())}), src)
    result = convert(cli, src, "--out", tmp_path / "err", "--image-column", "photo")
    assert result.exit_code == 1 and "n.parquet: row 1: column 'photo' is null" in result.stderr
    assert convert(cli, src, "--out", tmp_path / "out", "--image-column", "photo", "--nulls", "omit").exit_code == 0
    rows = tfds_rows(tmp_path / "out")
    assert [len(r["photo"]) for r in rows] == [1, 0, 1]
    assert np.array_equal(rows[2]["photo"][0], pixels[1])


# ---------------------------------------------------------------- tfr_convert.write()


def shard_bytes(out):
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if ".tfrecord-" in p.name}


def test_write_of_a_dataframe_gives_the_bytes_of_the_command_on_its_parquet(cli, tmp_path):
    pd = pytest.importorskip("pandas")
    import tfr_convert

    df = pd.DataFrame({"x": range(50), "y": [f"c{i % 3}" for i in range(50)], "f": [i / 7 for i in range(50)]})
    df.to_parquet(tmp_path / "df.parquet")
    summary = tfr_convert.write(df, tmp_path / "py", name="df", split={"train": 0.8, "test": 0.2},
                                label_column="y", stratify=True, shard_size="1KB")  # fmt: skip
    assert sum(s["examples"] for s in summary["splits"].values()) == 50 and summary["name"] == "df"
    result = cli.convert("table", tmp_path / "df.parquet", "--out", tmp_path / "cli", "--split", "train=0.8,test=0.2",
                         "--label-column", "y", "--stratify", "--shard-size", "1KB", "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert len(shard_bytes(tmp_path / "py")) > 2 and shard_bytes(tmp_path / "py") == shard_bytes(tmp_path / "cli")


def test_write_takes_arrow_tables_readers_rows_and_hugging_face_datasets(tmp_path):
    import tfr_convert

    table = pa.table({"x": [1, 2, 3], "s": ["a", "b", "c"]})
    expected = [[1], [2], [3]]
    for i, data in enumerate([table, pa.RecordBatchReader.from_batches(table.schema, table.to_batches()),
                              table.to_pylist(), iter(table.to_pylist())]):  # fmt: skip
        tfr_convert.write(data, tmp_path / f"o{i}", shuffle=False, name="t")
        assert [values(e, "x") for e in records(tmp_path / f"o{i}")] == expected
    assert shard_bytes(tmp_path / "o0") == shard_bytes(tmp_path / "o2")
    rows = [{"x": 1, "v": None}, {"x": 2, "v": 2.5}]
    tfr_convert.write(rows, tmp_path / "typed", features={"x": pa.int32(), "v": pa.float64()}, nulls="omit")
    assert sorted(records(tmp_path / "typed"), key=lambda e: values(e, "x"))[0].keys() == {"x"}
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"x": datasets.Value("int64"), "label": datasets.ClassLabel(names=["no", "yes"])})
    hf = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"x": [1, 2, 3], "label": [0, 1, 1]}, features=features),
            "test": datasets.Dataset.from_dict({"x": [4], "label": [0]}, features=features),
        }
    )
    summary = tfr_convert.write(hf, tmp_path / "hf", shuffle=False)
    assert {s: v["examples"] for s, v in summary["splits"].items()} == {"train": 3, "test": 1}
    assert (tmp_path / "hf" / "label.labels.txt").read_text().split() == ["no", "yes"]
    shown = hf["train"].select([2, 0])  # a view: the rows it shows, in its order
    tfr_convert.write(shown, tmp_path / "view", shuffle=False)
    assert [values(e, "x") for e in records(tmp_path / "view")] == [[3], [1]]


def test_write_raises_the_errors_the_command_line_reports(tmp_path):
    import tfr_convert
    from tfr_convert.errors import OptionError, SourceError

    table = pa.table({"x": [1, None]})
    with pytest.raises(OptionError, match="no option 'colour'"):
        tfr_convert.write(table, tmp_path / "a", colour="red")
    with pytest.raises(OptionError, match="--split"):
        tfr_convert.write(table, tmp_path / "b", split="train=2")
    with pytest.raises(SourceError, match="row 1: column 'x' is null"):
        tfr_convert.write(table, tmp_path / "c")
    with pytest.raises(OptionError, match="DataFrame"):
        tfr_convert.write(42, tmp_path / "d")
    assert not any((tmp_path / n).exists() for n in "abcd")


# ---------------------------------------------------------------- the round trip


def round_trip(cli, original, tmp_path):
    result = cli.export(original, "--out", tmp_path / "parquet", "--to", "parquet")
    assert result.exit_code == 0, result.stderr
    result = cli.convert("table", tmp_path / "parquet", "--out", tmp_path / "back", "--quiet")
    assert result.exit_code == 0, result.stderr
    return tmp_path / "back"


def test_an_exported_dataset_converts_back_to_byte_identical_shards(cli, tmp_path, mnist_src):
    src, _ = mnist_src
    original = tmp_path / "mnist"
    assert cli.convert("mnist", src, "--out", original, "--validation-size", "7", "--quiet").exit_code == 0
    back = round_trip(cli, original, tmp_path)
    assert len(shard_bytes(original)) == 3 and shard_bytes(back) == shard_bytes(original)
    assert (back / "label.labels.txt").read_bytes() == (original / "label.labels.txt").read_bytes()
    assert json.loads((back / "features.json").read_text()) == json.loads((original / "features.json").read_text())


def test_an_exported_table_with_pictures_and_text_comes_back_byte_identical(cli, tmp_path):
    pixels = pictures(12)
    src = tmp_path / "p.parquet"
    pq.write_table(pa.table({"photo": [png(p) for p in pixels], "caption": [f"picture {i} é" for i in range(12)],
                             "kind": ["a", "b", "c"] * 4, "score": [i / 3 for i in range(12)]}), src)  # fmt: skip
    original = tmp_path / "orig"
    result = cli.convert("table", src, "--out", original, "--image-column", "photo", "--label-column", "kind",
                         "--split", "train=0.5,test=0.5", "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    back = round_trip(cli, original, tmp_path)
    assert set(shard_bytes(original)) == {"p-train.tfrecord-00000-of-00001", "p-test.tfrecord-00000-of-00001"}
    assert shard_bytes(back) == shard_bytes(original)
    features = json.loads((back / "features.json").read_text())["featuresDict"]["features"]
    assert features["photo"]["pythonClassName"].endswith("image_feature.Image")
    # an explicit --shuffle still shuffles
    result = cli.convert("table", tmp_path / "parquet", "--out", tmp_path / "shuffled", "--shuffle", "--quiet")
    assert result.exit_code == 0 and shard_bytes(tmp_path / "shuffled") != shard_bytes(original)


# ---------------------------------------------------------------- inspecting numeric columns


def test_stats_and_the_report_show_each_numeric_columns_spread_and_missing_share(cli, tmp_path):
    src = tmp_path / "m.parquet"
    ages = [20, 30, None, 40, 50, None, 60, 70]
    pq.write_table(pa.table({"age": ages, "w": [float(i) for i in range(8)], "y": ["a", "b"] * 4}), src)
    out = tmp_path / "out"
    assert convert(cli, src, "--out", out, "--nulls", "omit", "--label-column", "y").exit_code == 0
    result = cli.inspect(out, "--stats", "--json")
    assert result.exit_code == 0, result.stderr
    features = json.loads(result.output)["features"]
    age = features["age"]
    assert (age["missing"], age["missing_share"], age["min"], age["max"], age["mean"]) == (2, 0.25, 20, 70, 45)
    assert sum(b["count"] for b in age["distribution"]["bins"]) == 6
    assert features["w"]["missing"] == 0 and features["w"]["distribution"]["values"] == 8
    text = cli.inspect(out, "--stats").output
    assert "missing in 2 records (25.0%)" in text
    result = cli.inspect(out, "--report", tmp_path / "r.html")
    assert result.exit_code == 0, result.stderr
    page = (tmp_path / "r.html").read_text()
    assert "age: values, missing in 25.0%" in page and "w: values" in page


# ---------------------------------------------------------------- the columnar path


def test_the_columnar_path_writes_the_bytes_of_the_value_by_value_path(tmp_path):
    """Batches taken in any order from a table of every kind of column, nulls in each mode,
    several files and row groups (sliced, chunked arrays): the columns' bytes equal the
    one serializer's of each row's features."""
    import decimal
    import random

    from tfr_convert.converters.base import ColumnBatch
    from tfr_convert.converters.table.converter import TableConverter, TableOptions
    from tfr_convert.dataset.wire.example import serialize
    from tfr_convert.engine.encode import encode_items

    base = arrow_table()
    extra = pa.table(
        {
            "when": pa.array([0, 10**12, None, -5], pa.timestamp("us")),
            "money": pa.array(
                [decimal.Decimal("1.50"), None, decimal.Decimal("-3.25"), decimal.Decimal("0")], pa.decimal128(6, 2)
            ),
            "cat": pa.array(["x", "y", None, "x"]).dictionary_encode(),
            "maybe": pa.array([[1, 2], None, [], [3]], pa.list_(pa.int32())),
            "words": pa.array([["a", "bb"], None, [], ["c" * 200]], pa.list_(pa.large_string())),
            "big": pa.array([2**40, -(2**62), None, 0], pa.int64()),
            "half": pa.array([1.5, None, -0.25, 3.0], pa.float16()),
        }
    )
    whole = pa.Table.from_arrays([*base.columns, *extra.columns], names=[*base.column_names, *extra.column_names])
    for i in range(3):
        pq.write_table(whole, tmp_path / f"part{i}.parquet", row_group_size=3)
    paths = [str(tmp_path / f"part{i}.parquet") for i in range(3)]
    for nulls in ("omit", "fill"):
        converter = TableConverter(paths, TableOptions(nulls=nulls))
        rows = list(range(12))
        random.Random(nulls).shuffle(rows)
        for batch in (rows, rows[:5], sorted(rows)[3:9]):
            assert isinstance(converter.columns_of(batch), ColumnBatch)
            fast = encode_items(converter, batch).blob
            slow = b"".join(serialize(f) for f in converter.features_of_each(batch))
            assert bytes(fast) == slow, nulls


def test_a_table_far_wider_than_its_batch_is_encoded_row_by_row_to_the_same_bytes(tmp_path, monkeypatch):
    """100,000 columns of one row: row by row (a column's numpy calls cost more than its
    one value) gives the columnar encoder's bytes, nulls and lists included."""
    from tfr_convert.converters.table import converter as table_module

    pa = pytest.importorskip("pyarrow")
    columns = {f"c{i}": pa.array([i, None] if i % 3 else [[i], [1, 2]], pa.int64() if i % 3 else pa.list_(pa.int64()))
               for i in range(3000)}  # fmt: skip
    data = pa.table(columns)
    tfr_convert.write(data, tmp_path / "rows", workers=1, quiet=True, nulls="omit")
    monkeypatch.setattr(table_module, "WIDE_TABLE", 10**9)  # never wide: column by column
    tfr_convert.write(data, tmp_path / "columns", workers=1, quiet=True, nulls="omit")
    shards = sorted(p.name for p in (tmp_path / "rows").glob("*.tfrecord-*"))
    assert shards and all(
        (tmp_path / "rows" / s).read_bytes() == (tmp_path / "columns" / s).read_bytes() for s in shards
    )


def test_a_class_label_outside_its_names_is_refused_and_left_out_under_skip(cli, tmp_path):
    """GLUE-style test splits hold -1 in a ClassLabel column ("no label"): not a class."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])})
    parts = {"train": {"text": ["a", "b"], "label": [0, 1]}, "test": {"text": ["c", "d"], "label": [-1, -1]}}
    dataset = datasets.DatasetDict({s: datasets.Dataset.from_dict(d, features=features) for s, d in parts.items()})
    dataset.save_to_disk(str(tmp_path / "hf"))
    refused = convert(cli, tmp_path / "hf", "--out", tmp_path / "out")
    assert refused.exit_code == 1 and not (tmp_path / "out").exists()
    assert (
        "test/data-00000-of-00001.arrow: row 0: column 'label' holds -1, which is none of its 2 class names (0..1)"
        in (refused.stderr)
    )
    skipped = convert(cli, tmp_path / "hf", "--out", tmp_path / "out", "--on-error", "skip")
    assert skipped.exit_code == 0, skipped.stderr
    assert sorted(v for e in records(tmp_path / "out") for v in values(e, "label")) == [0, 1]


def test_a_gzipped_csv_is_read_as_pandas_reads_it(cli, tmp_path):
    import gzip

    text = "a,b\n1,x\n2,y\n3,\n"
    (tmp_path / "plain").mkdir()
    (tmp_path / "gz").mkdir()
    (tmp_path / "plain" / "data.csv").write_text(text)
    (tmp_path / "gz" / "data.csv.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    for kind, src in (("plain", "data.csv"), ("gz", "data.csv.gz")):
        assert convert(cli, tmp_path / kind / src, "--out", tmp_path / f"out-{kind}").exit_code == 0
    assert shard_bytes(tmp_path / "out-plain") == shard_bytes(tmp_path / "out-gz")
    pd = pytest.importorskip("pandas")
    assert [values(e, "a")[0] for e in records(tmp_path / "out-gz")] == pd.read_csv(tmp_path / "gz" / "data.csv.gz")[
        "a"
    ].tolist()
    (tmp_path / "gz" / "cut.csv.gz").write_bytes(gzip.compress(text.encode(), mtime=0)[:-9])
    cut = convert(cli, tmp_path / "gz" / "cut.csv.gz", "--out", tmp_path / "out-cut")
    assert cut.exit_code == 1 and "cut.csv.gz: truncated gzip stream" in cut.stderr


def test_write_in_a_plain_script_with_a_thread_alive_never_runs_the_script_again(tmp_path):
    """Another thread alive (tqdm's monitor, say) makes the workers spawned, not forked:
    spawn imports the caller's main module in each, which ran a plain script again (its
    prints, its own write(), the lock it then found). The workers start without it, and
    give the bytes of one worker."""
    script = tmp_path / "plain.py"
    script.write_text(
        "import sys, threading\n"
        "print('top level ran', flush=True)\n"
        "threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
        "import tfr_convert\n"
        "rows = [{'x': i, 's': f'row {i}'} for i in range(40000)]\n"
        "tfr_convert.write(rows, sys.argv[1], workers=int(sys.argv[2]), quiet=True, examples_per_shard=15000)\n"
    )
    for workers in (1, 2):
        run = subprocess.run([sys.executable, str(script), str(tmp_path / f"out{workers}"), str(workers)],
                             capture_output=True, text=True, timeout=300, cwd=tmp_path)  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert run.stdout == "top level ran\n" and "Traceback" not in run.stderr
    assert shard_bytes(tmp_path / "out1") == shard_bytes(tmp_path / "out2") and len(shard_bytes(tmp_path / "out1")) == 3


def test_missing_value_markers_are_nulls_in_a_column_of_numbers_as_pyarrow_reads_them(cli, tmp_path):
    """R's and pandas' NA (and pyarrow's whole null_values list) in a numeric column: a
    null, not the whole column turned to text; in a text column, text as it stands."""
    pacsv = pytest.importorskip("pyarrow.csv")
    src = tmp_path / "penguins.csv"
    src.write_text("bill,mass,island\n39.1,3750,Torgersen\nNA,NA,NA\n40.3,#N/A,Dream\nnan,3250,\n")
    result = convert(cli, src, "--out", tmp_path / "out", "--nulls", "omit")
    assert result.exit_code == 0, result.stderr
    expected = pacsv.read_csv(src).to_pylist()
    got = records(tmp_path / "out")
    for row, example in zip(expected, got, strict=True):
        assert values(example, "bill") == ([pytest.approx(row["bill"])] if row["bill"] is not None else None)
        assert values(example, "mass") == ([row["mass"]] if row["mass"] is not None else None)
        assert values(example, "island") == [row["island"].encode()]
    assert [r["island"] for r in expected] == ["Torgersen", "NA", "Dream", ""]  # text stays text


def test_an_empty_label_cell_names_no_class(cli, tmp_path):
    src = tmp_path / "labels.csv"
    src.write_text("x,label\n1,cat\n2,\n3,dog\n")
    refused = convert(cli, src, "--out", tmp_path / "out", "--label-column", "label")
    assert refused.exit_code == 1 and "line 3: column 'label' is empty: a label names a class" in refused.stderr
    done = convert(cli, src, "--out", tmp_path / "out", "--label-column", "label", "--on-error", "skip")
    assert done.exit_code == 0
    assert (tmp_path / "out" / "label.labels.txt").read_text().split("\n") == ["cat", "dog", ""]


def test_a_pandas_index_is_no_feature_from_write_or_from_to_parquet(cli, tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": [1, 2, 3]}, index=[10, 20, 30])
    summary = tfr_convert.write(frame, tmp_path / "written", quiet=True, shuffle=False)
    assert any("left out the pandas index (__index_level_0__)" in w for w in summary["warnings"])
    frame.to_parquet(tmp_path / "frame.parquet")
    assert convert(cli, tmp_path / "frame.parquet", "--out", tmp_path / "file").exit_code == 0
    for out in ("written", "file"):
        assert [sorted(e) for e in records(tmp_path / out)] == [["x"]] * 3
    kept = tfr_convert.write(frame.reset_index(), tmp_path / "kept", quiet=True, shuffle=False)
    assert not kept["warnings"] and sorted(records(tmp_path / "kept")[0]) == ["index", "x"]


def test_a_table_with_omitted_nulls_exports_to_parquet_and_converts_back_to_the_same_shards(cli, tmp_path):
    src = tmp_path / "scores.csv"
    src.write_text("a,score,tags\n1,2.5,x\n2,,y\n3,4.5,\n")
    assert convert(cli, src, "--out", tmp_path / "one", "--nulls", "omit", "--name", "s").exit_code == 0
    exported = cli.export(tmp_path / "one", "--to", "parquet", "--out", tmp_path / "export")
    assert exported.exit_code == 0, exported.stderr
    rows = pq.read_table(tmp_path / "export" / "train.parquet").to_pylist()
    assert sorted((r["a"], r["score"]) for r in rows) == [(1, 2.5), (2, None), (3, 4.5)]
    back = convert(cli, tmp_path / "export", "--out", tmp_path / "two", "--nulls", "omit", "--name", "s")
    assert back.exit_code == 0, back.stderr
    assert shard_bytes(tmp_path / "one") == shard_bytes(tmp_path / "two")
