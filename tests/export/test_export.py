"""tfr-export --to parquet: files pyarrow and pandas read, holding exactly the records'
values (checked against TensorFlow's own parser), for our datasets and for a plain
TFRecord written by tf.io.TFRecordWriter (schema inferred); bounded row groups; the
error discipline (a damaged record names file and offset, nothing left at a final name)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf
from PIL import Image


def _records(paths):
    return [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset([str(p) for p in paths])]


def _value(feature: tf.train.Feature):
    kind = feature.WhichOneof("kind")
    return list(getattr(feature, kind).value) if kind else []


@pytest.fixture
def pets(cli, tmp_path):
    rng = np.random.default_rng(0)
    for c, name in enumerate(("cat", "dog", "emu")):
        (tmp_path / "pets" / name).mkdir(parents=True)
        for i in range(4 + c):
            pixels = rng.integers(0, 256, (6 + i, 5 + c, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(tmp_path / "pets" / name / f"{i}.png")
    out = tmp_path / "ds"
    result = cli.convert(
        "images", tmp_path / "pets", "--out", out, "--split", "train=0.6,test=0.4", "--num-shards", "2"
    )
    assert result.exit_code == 0, result.stderr
    return out


def test_a_dataset_exports_one_parquet_file_per_split_with_the_records_values(cli, pets, tmp_path):
    result = cli.export(pets, "--out", tmp_path / "pq", "--to", "parquet", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert list(summary["splits"]) == ["train", "test"]
    for split in ("train", "test"):
        table = pq.read_table(tmp_path / "pq" / f"{split}.parquet")
        frame = pd.read_parquet(tmp_path / "pq" / f"{split}.parquet")
        examples = _records(sorted(pets.glob(f"pets-{split}.tfrecord-*")))
        assert summary["splits"][split]["records"] == len(examples) == table.num_rows == len(frame)
        assert table.schema.field("image").type == pa.binary() and table.schema.field("filename").type == pa.string()
        assert table.schema.field("label").type == pa.int64()
        for row, example in zip(table.to_pylist(), examples, strict=True):
            features = example.features.feature
            assert set(row) == set(features)
            for name, feature in features.items():
                want = _value(feature)[0]
                assert row[name] == (want.decode() if name in ("filename", "format") else want), name
        assert list(frame["label"]) == [_value(e.features.feature["label"])[0] for e in examples]
    metadata = json.loads(pq.read_schema(tmp_path / "pq" / "train.parquet").metadata[b"tfr_convert"])
    assert metadata["class_names"] == {"label": ["cat", "dog", "emu"]}


def test_a_plain_tfrecord_without_metadata_exports_with_an_inferred_schema(cli, tmp_path):
    path = tmp_path / "plain.tfrecord"
    rows = []
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(7):
            row = {"id": i * 3, "scores": [0.5 * k for k in range(i % 3)], "blob": bytes([i, 255, 0]), "pair": [i, -i]}
            rows.append(row)
            example = tf.train.Example(features=tf.train.Features(feature={
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[row["id"]])),
                "scores": tf.train.Feature(float_list=tf.train.FloatList(value=row["scores"])),
                "blob": tf.train.Feature(bytes_list=tf.train.BytesList(value=[row["blob"]])),
                "pair": tf.train.Feature(int64_list=tf.train.Int64List(value=row["pair"])),
            }))  # fmt: skip
            writer.write(example.SerializeToString())
    result = cli.export(path, "--out", tmp_path / "pq", "--to", "parquet")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"train 7 records -> {tmp_path / 'pq'} (parquet)"
    table = pq.read_table(tmp_path / "pq" / "train.parquet")
    assert dict(zip(table.schema.names, table.schema.types, strict=True)) == {
        "blob": pa.binary(), "id": pa.int64(), "pair": pa.list_(pa.int64()), "scores": pa.list_(pa.float32()),
    }  # fmt: skip
    assert table.to_pylist() == rows


def test_row_groups_are_bounded_and_limit_counts_per_split(cli, pets, tmp_path):
    result = cli.export(pets, "--out", tmp_path / "pq", "--to", "parquet", "--row-group-size", "300")
    assert result.exit_code == 0, result.stderr
    whole = pq.ParquetFile(tmp_path / "pq" / "train.parquet")
    assert whole.metadata.num_row_groups > 1
    result = cli.export(pets, "--out", tmp_path / "few", "--to", "parquet", "--limit", "2")
    assert result.exit_code == 0, result.stderr
    few = pq.read_table(tmp_path / "few" / "train.parquet")
    assert few.num_rows == 2 and few.to_pylist() == whole.read().to_pylist()[:2]


def test_array_record_shards_export_the_same_rows(cli, pets, tmp_path, mnist_src):
    for fmt in ("tfrecord", "array_record"):
        result = cli.convert("mnist", mnist_src[0], "--out", tmp_path / fmt, "--format", fmt, "--no-shuffle")
        assert result.exit_code == 0, result.stderr
        assert cli.export(tmp_path / fmt, "--out", tmp_path / f"pq-{fmt}", "--to", "parquet").exit_code == 0
    for split in ("train", "test"):
        a, b = (pq.read_table(tmp_path / f"pq-{fmt}" / f"{split}.parquet") for fmt in ("tfrecord", "array_record"))
        assert a.num_rows == len(mnist_src[1][split][1]) and a.equals(b)


def test_a_damaged_record_is_exit_1_naming_file_and_offset_with_nothing_at_a_final_name(cli, pets, tmp_path):
    shard = sorted(pets.glob("pets-test.tfrecord-*"))[0]
    data = bytearray(shard.read_bytes())
    data[40] ^= 0xFF  # inside the first record's payload: its data CRC fails
    shard.write_bytes(bytes(data))
    out = tmp_path / "pq"
    result = cli.export(pets, "--out", out, "--to", "parquet")
    assert result.exit_code == 1
    assert str(shard) in result.stderr and "offset 0" in result.stderr, result.stderr
    assert not list(out.glob("*.parquet")) and not list(out.glob("*.partial"))


def test_an_output_holding_files_needs_overwrite(cli, pets, tmp_path):
    (tmp_path / "pq").mkdir()
    (tmp_path / "pq" / "notes.txt").write_text("mine")
    result = cli.export(pets, "--out", tmp_path / "pq", "--to", "parquet")
    assert result.exit_code == 1 and "--overwrite" in result.stderr
    assert cli.export(pets, "--out", tmp_path / "pq", "--to", "parquet", "--overwrite").exit_code == 0
    assert (tmp_path / "pq" / "notes.txt").read_text() == "mine"
