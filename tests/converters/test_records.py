"""`tfr-convert records`: existing records resharded, merged, re-split, shuffled and
converted, byte for byte, read back by TensorFlow, TFDS and load()."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import crc32c
import numpy as np
import pytest

from record_inputs import examples, payloads, write_tfrecord
from tfr_convert.containers import of_file
from tfr_convert.dataset.features import FeatureSpec
from tfr_convert.dataset.record_schema import NoSchema, infer_schema
from tfr_convert.dataset.wire.example import serialize

# ---------------------------------------------------------------- reshard, merge, convert


def test_a_dataset_resharded_keeps_its_splits_records_and_metadata(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    assert cli.convert("mnist", src, "--out", tmp_path / "one", "--num-shards", 1, "--quiet").exit_code == 0
    result = cli.convert("records", tmp_path / "one", "--out", tmp_path / "five", "--num-shards", 5, "--no-shuffle",
                         "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert {s: v["shards"] for s, v in report["splits"].items()} == {"train": 5, "test": 5}
    for split in ("train", "test"):
        assert payloads(tmp_path / "five", split) == payloads(tmp_path / "one", split)  # same order, same bytes
    for name in ("features.json", "label.labels.txt"):
        assert (tmp_path / "five" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()
    info = json.loads((tmp_path / "five" / "dataset_info.json").read_text())
    assert [len(s["shardLengths"]) for s in info["splits"]] == [5, 5]
    assert info["supervisedKeys"] == json.loads((tmp_path / "one" / "dataset_info.json").read_text())["supervisedKeys"]


def test_tfrecord_to_array_record_and_back_returns_the_same_records(cli, tmp_path):
    pytest.importorskip("array_record.python.array_record_module")
    src = write_tfrecord(tmp_path / "data-train.tfrecord", examples(300))
    common = ("--no-shuffle", "--quiet")
    assert cli.convert("records", src, "--out", tmp_path / "ar", "--format", "array_record", *common).exit_code == 0
    assert any(".array_record-" in p.name for p in (tmp_path / "ar").iterdir())
    assert cli.convert("records", tmp_path / "ar", "--out", tmp_path / "back", *common).exit_code == 0
    assert payloads(tmp_path / "back") == [r.data for r in of_file(str(src)).records(str(src))]


def test_compressed_and_plain_files_merge_into_one_dataset_with_splits_from_their_names(cli, tmp_path):
    write_tfrecord(tmp_path / "part-a-train.tfrecord.gz", examples(40), "gzip")
    write_tfrecord(tmp_path / "part-b-train.tfrecord", examples(30, 40))
    write_tfrecord(tmp_path / "part-val.tfrecord", examples(20, 70), "zlib")
    result = cli.convert("records", tmp_path / "part-*", "--out", tmp_path / "out", "--no-shuffle", "--compression",
                         "gzip", "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert {s: v["examples"] for s, v in json.loads(result.stdout)["splits"].items()} == {"train": 70, "validation": 20}
    assert payloads(tmp_path / "out", "train") == examples(40) + examples(30, 40)
    assert payloads(tmp_path / "out", "validation") == examples(20, 70)
    shard = next((tmp_path / "out").glob("*-train.tfrecord-*"))
    assert shard.read_bytes()[:2] == b"\x1f\x8b" and gzip.decompress(shard.read_bytes())  # gzip written


# ---------------------------------------------------------------- readers


def test_a_tfds_prepared_directory_resharded_reads_back_through_tfds(cli, tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")

    def generate(start, n):
        return [(i, {"image": np.full((8, 8, 1), i, np.uint8), "label": i % 3}) for i in range(start, start + n)]

    features = tfds.features.FeaturesDict(
        {"image": tfds.features.Image(shape=(8, 8, 1)), "label": tfds.features.ClassLabel(names=list("abc"))}
    )
    builder = tfds.dataset_builders.store_as_tfds_dataset(
        "records_test_tiny", "1.0.0", features, {"train": generate(0, 40), "test": generate(40, 10)},
        data_dir=str(tmp_path / "tfds"),
    )  # fmt: skip
    prepared = Path(builder.data_dir)
    assert len(list(prepared.glob("*-train.tfrecord-*"))) == 1
    result = cli.convert("records", prepared, "--out", tmp_path / "seven", "--num-shards", 7, "--quiet")
    assert result.exit_code == 0, result.stderr
    assert len(list((tmp_path / "seven").glob("*-train.tfrecord-*"))) == 7
    back = tfds.builder_from_directory(str(tmp_path / "seven"))
    assert back.info.features.keys() == builder.info.features.keys()
    assert back.info.features["label"].names == ["a", "b", "c"]
    for split in ("train", "test"):
        before = sorted((int(e["image"][0, 0, 0]), int(e["label"])) for e in tfds.as_numpy(builder.as_dataset(split)))
        after = sorted((int(e["image"][0, 0, 0]), int(e["label"])) for e in tfds.as_numpy(back.as_dataset(split)))
        assert after == before and len(after) == {"train": 40, "test": 10}[split]


def test_plain_records_get_an_inferred_schema_that_load_uses(cli, tmp_path):
    pytest.importorskip("tensorflow")
    from tfr_convert import load

    src = write_tfrecord(tmp_path / "plain.tfrecord", examples(12))
    assert cli.convert("records", src, "--out", tmp_path / "out", "--no-shuffle", "--quiet").exit_code == 0
    features = json.loads((tmp_path / "out" / "features.json").read_text())["featuresDict"]["features"]
    assert {n: f["tensor"]["shape"].get("dimensions", []) for n, f in features.items()} == {
        "id": [], "name": [], "score": ["3"], "tokens": ["-1"],
    }  # fmt: skip
    got = list(load(str(tmp_path / "out"), "train").as_numpy_iterator())
    assert [int(e["id"]) for e in got] == list(range(12))
    assert [e["name"] for e in got] == [f"n{i}".encode() for i in range(12)]
    assert np.allclose(got[5]["score"], [2.5, 1.25, 1.0]) and list(got[7]["tokens"]) == [0, 1, 2]


def test_the_inferred_schema_names_a_feature_it_cannot_describe():
    mixed = [("a: record 0", serialize({"x": 1})), ("a: record 1", serialize({"x": b"text"}))]
    with pytest.raises(NoSchema, match="feature 'x' has kinds"):
        infer_schema(mixed)
    partial = [("a: record 0", serialize({"x": 1, "y": 2})), ("a: record 1", serialize({"x": 1}))]
    with pytest.raises(NoSchema, match="'y' is missing from 1 of the first 2 records"):
        infer_schema(partial)
    assert infer_schema([("a", serialize({"x": [1, 2]}))]) == {"x": FeatureSpec.tensor("int64", (2,))}
    with pytest.raises(NoSchema, match=r"a: record 0: not a tf\.train\.Example"):
        infer_schema([("a: record 0", b"\xff\xff not protobuf")])


# ---------------------------------------------------------------- shuffle and re-split


def test_the_shuffle_is_a_seeded_permutation_the_same_for_any_worker_count(cli, tmp_path):
    src = write_tfrecord(tmp_path / "sorted.tfrecord", examples(500))
    outs = {}
    for workers, seed in ((1, 0), (2, 0), (1, 1)):
        out = tmp_path / f"w{workers}s{seed}"
        assert cli.convert("records", src, "--out", out, "--workers", workers, "--seed", seed, "--num-shards", 3,
                           "--quiet").exit_code == 0  # fmt: skip
        outs[workers, seed] = out
    shuffled = payloads(outs[1, 0])
    assert Counter(shuffled) == Counter(examples(500)) and shuffled != examples(500)
    files = {p.name: p.read_bytes() for p in outs[1, 0].iterdir()}
    assert {p.name: p.read_bytes() for p in outs[2, 0].iterdir()} == files  # byte-identical
    assert payloads(outs[1, 1]) != shuffled  # another seed, another order


def test_batches_hold_about_chunk_bytes_of_records_and_large_records_copy_alike_on_2_workers(cli, tmp_path):
    from tfr_convert.converters.records import CHUNK_BYTES, RecordsConverter

    rng = np.random.default_rng(1)
    large = [rng.bytes(300_000 + 1000 * i) for i in range(40)]
    small = [rng.bytes(100) for _ in range(40)]
    big_src = write_tfrecord(tmp_path / "large.tfrecord", large)
    small_src = write_tfrecord(tmp_path / "small.tfrecord", small)
    assert RecordsConverter([str(big_src)]).chunk_size == CHUNK_BYTES // 320_000  # the median record's 13
    assert RecordsConverter([str(small_src)]).chunk_size == RecordsConverter.chunk_size  # 256 at most
    outs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        assert cli.convert("records", big_src, "--out", out, "--workers", workers, "--quiet").exit_code == 0
        outs.append({p.name: p.read_bytes() for p in out.iterdir() if ".tfrecord-" in p.name})
    assert outs[0] == outs[1] and Counter(payloads(tmp_path / "w2")) == Counter(large)


def test_split_re_splits_every_record_by_exact_fractions(cli, tmp_path):
    write_tfrecord(tmp_path / "a-train.tfrecord", examples(80))
    write_tfrecord(tmp_path / "a-test.tfrecord", examples(20, 80))
    result = cli.convert("records", tmp_path / "a-train.tfrecord", tmp_path / "a-test.tfrecord", "--out",
                         tmp_path / "out", "--split", "train=0.7,validation=0.2,test=0.1", "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert {s: v["examples"] for s, v in json.loads(result.stdout)["splits"].items()} == {
        "train": 70, "validation": 20, "test": 10,
    }  # fmt: skip
    assert Counter(payloads(tmp_path / "out")) == Counter(examples(100))


# ---------------------------------------------------------------- bad input


def test_a_corrupt_record_is_exit_1_naming_file_and_offset_and_nothing_is_written(cli, tmp_path):
    src = write_tfrecord(tmp_path / "bad.tfrecord", examples(10))
    data = bytearray(src.read_bytes())
    first = 12 + len(examples(1)[0]) + 4  # the second record's start
    data[first + 12 + 3] ^= 0x40  # a byte of its payload
    src.write_bytes(bytes(data))
    result = cli.convert("records", src, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{src}: record 1 at byte offset {first}" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_sources_that_are_not_records_or_not_there_are_named(cli, tmp_path):
    (tmp_path / "notes.bin").write_bytes(b"\x00" * 3)
    result = cli.convert("records", tmp_path / "notes.bin", "--out", tmp_path / "o")
    assert result.exit_code == 1 and "notes.bin" in result.stderr
    missing = cli.convert("records", tmp_path / "nothing-*.tfrecord", "--out", tmp_path / "o")
    assert missing.exit_code == 1 and "no such file, directory or glob match" in missing.stderr


def test_the_manifest_lists_every_source_with_a_checksum_of_its_records(cli, tmp_path):
    src = write_tfrecord(tmp_path / "x.tfrecord", examples(5))
    assert cli.convert("records", src, "--out", tmp_path / "out", "--quiet").exit_code == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    crc = f"{crc32c.crc32c(b''.join(examples(5))):08x}"  # the crc32c package itself, not our loader of it
    assert manifest["sources"] == [{"file": str(src), "split": "train", "records": 5, "records_crc32c": crc}]


def test_beam_writes_the_same_bytes_as_the_local_engine_from_a_spooled_source(cli, tmp_path):
    pytest.importorskip("apache_beam")
    src = write_tfrecord(tmp_path / "data-train.tfrecord.gz", examples(120), "gzip")
    for engine in ("local", "beam"):
        result = cli.convert(
            "records", src, "--out", tmp_path / engine, "--num-shards", 3, "--engine", engine, "--quiet"
        )
        assert result.exit_code == 0, result.stderr
    local = {p.name: p.read_bytes() for p in (tmp_path / "local").iterdir()}
    assert {p.name: p.read_bytes() for p in (tmp_path / "beam").iterdir()} == local


def test_records_that_are_not_examples_are_copied_with_a_warning_and_no_schema(cli, tmp_path):
    src = write_tfrecord(tmp_path / "blobs.tfrecord", [bytes([i]) * 50 for i in range(20)])
    result = cli.convert("records", src, "--out", tmp_path / "out", "--no-shuffle", "--json")
    assert result.exit_code == 0, result.stderr
    warning = json.loads(result.stdout)["warnings"][0]
    assert warning.startswith(f"no schema written ({src}: record 0: not a tf.train.Example")
    assert payloads(tmp_path / "out") == [bytes([i]) * 50 for i in range(20)]
    assert json.loads((tmp_path / "out" / "features.json").read_text())["featuresDict"]["features"] == {}
