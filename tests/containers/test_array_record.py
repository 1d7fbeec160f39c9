"""`--format array_record`: the same examples as the TFRecord output, read by random
access through TensorFlow Datasets' data source, Grain, tfr_convert.load() and tfr-inspect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import final_files, hint

import tfr_convert
from tfr_convert.containers.scan import read_records
from tfr_convert.dataset.naming import ShardName
from tfr_convert.dataset.wire.example import parse

array_record_module = pytest.importorskip("array_record.python.array_record_module")
SCRIPTS = Path(sys.executable).parent


def ar_records(path: Path) -> list[bytes]:
    reader = array_record_module.ArrayRecordReader(str(path))
    try:
        return reader.read_all()
    finally:
        reader.close()


def shards_by_split(out: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for name in final_files(out):
        shard = ShardName.parse(name)
        if shard:
            found.setdefault(shard.split, []).append(out / name)
    return found


@pytest.fixture
def both(cli, mnist_src, tmp_path) -> tuple[Path, Path]:
    """The same MNIST conversion as TFRecord and as ArrayRecord."""
    src, _ = mnist_src
    common = ["mnist", src, "--validation-size", 6, "--examples-per-shard", 15, "--quiet"]
    assert cli.convert(*common, "--out", tmp_path / "tfr").exit_code == 0
    result = cli.convert(*common, "--out", tmp_path / "ar", "--format", "array_record")
    assert result.exit_code == 0, result.output
    return tmp_path / "tfr", tmp_path / "ar"


def test_records_equal_the_tfrecord_output_one_by_one(both):
    tfr, ar = both
    tfr_shards, ar_shards = shards_by_split(tfr), shards_by_split(ar)
    assert sorted(tfr_shards) == sorted(ar_shards) == ["test", "train", "validation"]
    for split in tfr_shards:
        assert [p.name.replace(".tfrecord-", ".array_record-") for p in tfr_shards[split]] == [
            p.name for p in ar_shards[split]
        ]
        expected = [r.data for p in tfr_shards[split] for r in read_records(str(p))]
        assert [r for p in ar_shards[split] for r in ar_records(p)] == expected
    info = json.loads((ar / "dataset_info.json").read_text())
    assert info["fileFormat"] == "array_record"
    reference = json.loads((tfr / "dataset_info.json").read_text())
    assert [s["shardLengths"] for s in info["splits"]] == [s["shardLengths"] for s in reference["splits"]]


def test_tfds_data_source_reads_any_record_by_index(both):
    import tensorflow_datasets as tfds

    tfr, ar = both
    source = tfds.builder_from_directory(str(ar)).as_data_source("train")
    expected = [parse(r.data) for p in shards_by_split(tfr)["train"] for r in read_records(str(p))]
    assert len(source) == len(expected)
    for i in (len(expected) - 1, 0, 17, 5):  # any order: random access
        example = source[i]
        # TFDS decodes the raw bytes to a uint8 array of the stored shape
        assert example["image_raw"].shape == (28, 28, 1)
        assert example["image_raw"].tobytes() == expected[i]["image_raw"][1][0]
        assert int(example["label"]) == expected[i]["label"][1][0]


def test_grain_reads_the_shards_by_index(both):
    import grain

    tfr, ar = both
    paths = [str(p) for p in shards_by_split(ar)["train"]]
    dataset = grain.MapDataset.source(grain.sources.ArrayRecordDataSource(paths))
    expected = [r.data for p in shards_by_split(tfr)["train"] for r in read_records(str(p))]
    assert len(dataset) == len(expected)
    assert [dataset[i] for i in (9, 0, len(expected) - 1)] == [expected[i] for i in (9, 0, len(expected) - 1)]


def test_load_gives_the_same_examples_as_from_tfrecord(both):
    tfr, ar = both
    for split in ("train", "test[2:9]", "validation"):
        a = [(x["image_raw"].numpy().tobytes(), int(x["label"])) for x in tfr_convert.load(str(tfr), split)]
        b = [(x["image_raw"].numpy().tobytes(), int(x["label"])) for x in tfr_convert.load(str(ar), split)]
        assert a == b and a, split
    images, labels = next(iter(tfr_convert.load(str(ar), "train", as_supervised=True, batch_size=4)))
    assert images.shape[0] == 4 and labels.shape == (4,)


def test_inspect_reads_array_record_in_every_mode(cli, both):
    tfr, ar = both
    count = json.loads(cli.inspect(ar, "--count", "--json").stdout)
    assert count["records"] == 52 and {f["format"] for f in count["files"]} == {"array_record"}
    summary = json.loads(cli.inspect(ar, "--json", "--head", "2").stdout)
    reference = json.loads(cli.inspect(tfr, "--json", "--head", "2").stdout)
    assert summary["schema"] == reference["schema"] and summary["records"] == 52
    assert [e["features"] for e in summary["examples"]] == [e["features"] for e in reference["examples"]]
    stats = json.loads(cli.inspect(ar, "--stats", "--json").stdout)
    assert stats["features"] == json.loads(cli.inspect(tfr, "--stats", "--json").stdout)["features"]
    verify = cli.inspect(ar, "--verify", "--json")
    assert verify.exit_code == 0 and json.loads(verify.stdout)["ok"]
    assert "array_record" in cli.inspect(ar).stdout


def test_verify_finds_a_flipped_byte_through_the_containers_own_checksums(cli, both):
    _, ar = both
    shard = shards_by_split(ar)["train"][1]
    data = bytearray(shard.read_bytes())
    data[200] ^= 0x40  # inside the first record's chunk
    shard.write_bytes(bytes(data))
    result = cli.inspect(shard, "--verify", "--json")
    assert result.exit_code == 1
    problems = json.loads(result.stdout)["files"][0]["problems"]
    assert problems[0]["kind"] == "corrupt_chunk" and "hash mismatch" in problems[0]["message"]
    whole = cli.inspect(ar, "--verify")  # the directory: also its sha256 against the manifest
    assert whole.exit_code == 1 and "sha256" in whole.stdout
    summary = cli.inspect(shard)
    assert summary.exit_code == 1 and shard.name in summary.stderr and "Traceback" not in summary.stderr


def test_a_truncated_shard_is_one_line_in_every_mode_and_the_directory_report_goes_on(cli, both):
    _, ar = both
    shard = shards_by_split(ar)["train"][0]
    os.truncate(shard, shard.stat().st_size - 40)  # Riegeli's end (its postscript) torn off
    for mode in ([], ["--count"], ["--stats"], ["--head", "2"], ["--grid", ar.parent / "grid.png"]):
        result = cli.inspect(shard, *mode)  # an exception would propagate: the CLI let it through
        assert result.exit_code == 1, mode
        assert f"{shard}: record " in result.stderr and "at byte offset" in result.stderr, mode
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    report = cli.inspect(ar, "--verify", "--json")
    assert report.exit_code == 1
    files = {Path(f["path"]).name: f for f in json.loads(report.stdout)["files"]}
    assert len(files) == len(list(ar.glob("*.array_record-*"))) and files[shard.name]["problems"]
    assert sum(f["records"] for name, f in files.items() if name != shard.name) > 0  # the others read on
    assert "the end of the file" in files[shard.name]["problems"][0]["message"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compression", "gzip"], "--compression gzip does not apply to --format array_record"),
        (["--index"], "--index is for TFRecord shards"),
        (["--format", "tfrecord", "--compression", "zstd"], "--compression zstd does not apply to --format tfrecord"),
    ],
)
def test_options_that_do_not_apply_are_usage_errors(cli, mnist_src, tmp_path, args, message):
    src, _ = mnist_src
    fmt = [] if "--format" in args else ["--format", "array_record"]
    result = cli.convert("mnist", src, "--out", tmp_path / "o", *fmt, *args)
    assert result.exit_code == 2 and message in result.stderr
    assert not (tmp_path / "o").exists()


def test_zstd_compressed_array_record_reads_back(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out = tmp_path / "z"
    assert cli.convert("mnist", src, "--out", out, "--format", "array_record", "--compression", "zstd").exit_code == 0
    plain = tmp_path / "p"
    assert cli.convert("mnist", src, "--out", plain, "--format", "array_record").exit_code == 0
    for split, paths in shards_by_split(out).items():
        assert [ar_records(p) for p in paths] == [ar_records(p) for p in shards_by_split(plain)[split]]
    assert json.loads((out / "manifest.json").read_text())["options"]["compression"] == "zstd"


def test_without_the_library_the_format_says_what_to_install(mnist_src, tmp_path):
    fake = tmp_path / "fake" / "array_record"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no ArrayRecord here')\n")
    src, _ = mnist_src
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    result = subprocess.run(
        [str(SCRIPTS / "tfr-convert"), "mnist", str(src), "--out", str(tmp_path / "o"), "--format", "array_record"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2 and hint("array_record") in result.stderr
    assert not (tmp_path / "o").exists()


def test_shards_that_are_mostly_the_formats_padding_are_a_warning_naming_the_smaller_choice(cli, tmp_path):
    """Riegeli pads to 64 KiB blocks before the footer: an ArrayRecord file of a few
    records is 128 KiB. A conversion that writes such files says so, in the summary and
    the manifest; one of larger shards does not."""
    (tmp_path / "tiny.csv").write_text("a,b\n1,x\n2,y\n3,z\n")
    out = tmp_path / "tiny"
    result = cli.convert("table", tmp_path / "tiny.csv", "--format", "array_record", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    (warning,) = json.loads(result.stdout)["warnings"]
    assert warning.startswith("1 of 1 ArrayRecord shards are the format's smallest file, 128 KiB")
    assert "--format tfrecord" in warning and "--num-shards" not in warning  # one shard already
    assert [p.stat().st_size for p in out.glob("*.array_record-*")] == [128 << 10]
    assert json.loads((out / "manifest.json").read_text())["warnings"] == [warning]
    many = cli.convert("table", tmp_path / "tiny.csv", "--format", "array_record", "--num-shards", "3",
                       "--out", tmp_path / "many", "--json")  # fmt: skip
    assert "fewer shards (--num-shards 1)" in json.loads(many.stdout)["warnings"][0]
    wide = tmp_path / "wide.csv"
    wide.write_text("a,b\n" + "".join(f"{i},{'x' * 200}\n" for i in range(1000)))
    large = cli.convert("table", wide, "--format", "array_record", "--out", tmp_path / "wide", "--json")
    assert json.loads(large.stdout)["warnings"] == []
