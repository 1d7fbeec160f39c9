"""tfr-inspect --verify / --stats / --grid / --write-index / --count, and fuzzing of the reader."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from tfr_convert.containers.crc import masked_crc
from tfr_convert.containers.framing import frame
from tfr_convert.containers.scan import scan_records
from tfr_convert.containers.tfrecord import index_lines
from tfr_convert.errors import TfrConvertError
from tfr_convert.inspect.summary import summarize
from tfr_convert.inspect.verify import verify


def tf_file(path: Path, n: int = 5, compression: str = "") -> list[int]:
    """A TensorFlow-written file of n examples; returns each record's start offset (uncompressed)."""
    offsets, pos = [], 0
    with tf.io.TFRecordWriter(str(path), options=compression) as w:
        for i in range(n):
            data = tf.train.Example(
                features=tf.train.Features(
                    feature={"x": tf.train.Feature(int64_list=tf.train.Int64List(value=[i] * (i + 1)))}
                )
            ).SerializeToString()
            w.write(data)
            offsets.append(pos)
            pos += 16 + len(data)
    return offsets


# ---------------------------------------------------------------- --verify


def _flip_payload_bit(data: bytes, offsets: list[int]) -> bytes:
    b = bytearray(data)
    b[offsets[2] + 14] ^= 0x10
    return bytes(b)


def _huge_length(data: bytes, offsets: list[int]) -> bytes:
    header = struct.pack("<Q", 1 << 60)
    return data[: offsets[3]] + header + struct.pack("<I", masked_crc(header)) + data[offsets[3] + 12 :]


CORRUPTIONS = {
    "bit flip in a payload": (_flip_payload_bit, 2, "data_crc"),
    "truncated inside a record": (lambda d, o: d[: o[4] + 15], 4, "length_past_eof"),
    "huge length with a valid CRC": (_huge_length, 3, "length_past_eof"),
    "5 trailing bytes": (lambda d, o: d + b"\x00" * 5, 5, "partial_header"),
}


@pytest.mark.parametrize("case", CORRUPTIONS)
def test_verify_reports_the_damaged_records_offset(cli, tmp_path, case):
    path = tmp_path / "data.tfrecord"
    offsets = tf_file(path)
    clean = cli.inspect(path, "--verify")
    assert clean.exit_code == 0 and "verified 1 file, 5 records: no problems" in clean.stdout
    corrupt, index, kind = CORRUPTIONS[case]
    data = path.read_bytes()
    path.write_bytes(corrupt(data, offsets))
    start = offsets[index] if index < len(offsets) else len(data)
    result = cli.inspect(path, "--verify")
    assert result.exit_code == 1
    assert f"FAIL  {path}: record {index} at byte offset {start}: {kind}: " in result.stdout
    report = json.loads(cli.inspect(path, "--verify", "--json").stdout)
    assert report["ok"] is False and report["files"][0]["problems"][0]["offset"] == start


def test_verify_goes_on_after_a_data_crc_mismatch(tmp_path):
    path = tmp_path / "two.tfrecord"
    offsets = tf_file(path, 6)
    b = bytearray(path.read_bytes())
    for i in (1, 4):
        b[offsets[i] + 13] ^= 1
    path.write_bytes(bytes(b))
    report = verify([str(path)])
    assert [(p["record"], p["kind"]) for p in report["files"][0]["problems"]] == [(1, "data_crc"), (4, "data_crc")]
    assert report["records"] == 6


def test_verify_checks_a_dataset_against_its_metadata(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out = tmp_path / "out"
    assert cli.convert("mnist", src, "--out", out, "--num-shards", 2).exit_code == 0
    assert cli.inspect(out, "--verify").exit_code == 0
    shard = out / "mnist-train.tfrecord-00000-of-00002"
    shard.write_bytes(shard.read_bytes() + frame(b"\x0a\x00"))  # a valid extra record
    (out / "mnist-test.tfrecord-00001-of-00002").unlink()
    shutil.copy(shard, out / "mnist-test.tfrecord-00002-of-00002")
    report = json.loads(cli.inspect(out, "--verify", "--json").stdout)
    kinds = sorted((p["kind"], p["file"]) for p in report["datasets"][0]["problems"])
    assert kinds == [
        ("byte_count", "mnist-train.tfrecord-00000-of-00002"),
        ("missing_shard", "mnist-test.tfrecord-00001-of-00002"),
        ("record_count", "mnist-train.tfrecord-00000-of-00002"),
        ("sha256", "mnist-train.tfrecord-00000-of-00002"),
        ("unexpected_shard", "mnist-test.tfrecord-00002-of-00002"),
    ]
    assert cli.inspect(out, "--verify").exit_code == 1


def test_verify_of_a_dataset_says_which_files_beside_it_are_another_datasets(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out, other = tmp_path / "out", tmp_path / "other"
    assert cli.convert("mnist", src, "--out", out, "--num-shards", 2).exit_code == 0
    assert cli.convert("mnist", src, "--out", other, "--name", "digits").exit_code == 0
    for shard in other.glob("digits-*"):
        shutil.copy(shard, out / shard.name)
    result = cli.inspect(out, "--verify")
    assert result.exit_code == 0  # sound files, and the dataset whole
    assert f"NOTE  {out}: 2 files of another dataset, 'digits' (52 records), lie beside 'mnist'" in result.stdout
    assert "verified 6 files, 104 records" in result.stdout


def test_gzip_and_zlib_files_are_detected_and_verified(cli, tmp_path):
    for compression in ("GZIP", "ZLIB"):
        path = tmp_path / f"c.{compression}"
        tf_file(path, 4, compression)
        report = json.loads(cli.inspect(path, "--verify", "--json").stdout)
        assert report["ok"] and report["files"][0]["compression"] == compression.lower()
        assert report["records"] == 4


def test_a_fifo_is_refused_at_once(cli, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = cli.inspect(fifo, "--count")
    assert result.exit_code == 1 and f"error: {fifo}: not a regular file (a FIFO)" in result.stderr


# ---------------------------------------------------------------- fuzzing


def _valid_file(n: int) -> bytes:
    return b"".join(frame(bytes([i]) * i) for i in range(n))


def _read_everything(path: Path) -> None:
    """Every reading entry point; only our own errors may come out."""
    for item in scan_records(str(path)):
        assert item.offset >= 0
    verify([str(path)])
    try:
        summarize([str(path)])
    except TfrConvertError:
        pass
    try:
        index_lines(str(path))
    except TfrConvertError:
        pass


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(
    st.binary(max_size=400),
    st.tuples(st.integers(1, 6), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4))
    .map(lambda t: _corrupt(_valid_file(t[0]), t[1])),
    st.binary(max_size=200).map(lambda b: gzip.compress(b, mtime=0)),
    st.tuples(st.integers(1, 6), st.integers(0, 10_000)).map(lambda t: gzip.compress(_valid_file(t[0]), mtime=0)[: t[1]]),
))  # fmt: skip
def test_random_bytes_and_corruptions_only_raise_our_errors(tmp_path, data):
    path = tmp_path / "fuzz.tfrecord"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        _read_everything(path)
    except TfrConvertError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 8 << 20  # never allocates anything near what a corrupt length claims


def _corrupt(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    b = bytearray(data)
    for position, value in edits:
        if b:
            b[position % len(b)] = value
    return bytes(b)


# ---------------------------------------------------------------- index files


def test_index_of_a_tensorflow_file_matches_its_framing_and_the_tfrecord_package_reads_it(cli, tmp_path):
    path = tmp_path / "tf.tfrecord"
    offsets = tf_file(path, 7)
    result = cli.inspect(path, "--write-index")
    assert result.exit_code == 0
    lines = (tmp_path / "tf.tfrecord.index").read_text().splitlines()
    ends = [*offsets[1:], path.stat().st_size]
    assert lines == [f"{a} {b - a}" for a, b in zip(offsets, ends, strict=True)]
    # the `tfrecord` package (PyTorch's reader) shards by the index; it cannot share a process with TensorFlow
    script = (
        "import sys\n"
        "from tfrecord.reader import tfrecord_loader\n"
        "got = [int(r['x'][0]) for part in (0, 1) for r in tfrecord_loader(sys.argv[1], sys.argv[2], {'x': 'int'}, shard=(part, 2))]\n"
        "print(sorted(got))\n"
    )
    run = subprocess.run([sys.executable, "-c", script, str(path), str(tmp_path / "tf.tfrecord.index")],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(list(range(7)))


def test_convert_index_option_writes_one_per_shard(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out = tmp_path / "out"
    assert cli.convert("mnist", src, "--out", out, "--num-shards", 2, "--index").exit_code == 0
    shards = sorted(p for p in out.iterdir() if p.name.startswith("mnist-") and not p.name.endswith(".index"))
    assert len(shards) == 4
    for shard in shards:
        assert (out / f"{shard.name}.index").read_bytes() == index_lines(str(shard))
    refused = cli.convert("mnist", src, "--out", tmp_path / "o2", "--index", "--compression", "gzip")
    assert refused.exit_code == 2 and "--index needs --compression none" in refused.stderr


def test_compressed_files_cannot_be_indexed(cli, tmp_path):
    path = tmp_path / "c.gz"
    tf_file(path, 2, "GZIP")
    result = cli.inspect(path, "--write-index")
    assert result.exit_code == 1 and "compressed files cannot be indexed" in result.stderr


# ---------------------------------------------------------------- --stats and --grid


def test_stats_numbers_strings_labels_and_images(cli, tmp_path):
    root = tmp_path / "imgs"
    root.mkdir()
    rng = np.random.default_rng(0)
    for i in range(4):
        Image.fromarray(rng.integers(0, 256, (10 + i, 20, 3), dtype=np.uint8)).save(root / f"{i}.png")
    Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(root / "4.jpg", format="JPEG")
    shutil.copy(root / "0.png", root / "copy.png")  # the same bytes, to land in another split
    csv = tmp_path / "l.csv"
    rows = ["0.png,train,1,0.5,a", "1.png,train,2,0.0,a", "2.png,train,0,1.5,b", "3.png,train,2,2.0,a",
            "4.jpg,train,1,-1.0,c", "copy.png,test,1,0.5,a"]  # fmt: skip
    csv.write_text("path,split,label,score,tag\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out"
    result = cli.convert("images", root, "--labels", csv, "--split-column", "split", "--label-column", "label",
                         "--out", out)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(cli.inspect(out, "--stats", "--json").stdout)
    assert report["records"] == 6
    score = report["features"]["score"]
    assert (score["min"], score["max"], score["zeros"]) == (-1.0, 2.0, 1)
    assert score["mean"] == pytest.approx(0.5833333, abs=1e-6)
    assert score["std"] == pytest.approx(np.std([0.5, 0.0, 1.5, 2.0, -1.0, 0.5]), abs=1e-6)
    assert report["features"]["label"]["histogram"] == {"0": 1, "1": 3, "2": 2}
    tag = report["features"]["tag"]
    assert tag["unique"] == 3 and tag["top"][0] == {"value": "a", "count": 4}
    image = report["features"]["image"]["image"]
    assert image["formats"] == {"jpeg": 1, "png": 5}
    assert image["width"] == [8, 20] and image["height"] == [8, 13]
    leakage = report["leakage"]
    assert leakage["images_in_several_splits"] == 1 and leakage["examples"][0]["splits"] == ["test", "train"]
    text = cli.inspect(out, "--stats").stdout
    assert "leakage: 1 images appear in more than one split" in text


@pytest.mark.parametrize("converter", ["mnist", "images"])
def test_grid_draws_a_labelled_contact_sheet(cli, mnist_src, tmp_path, converter):
    out = tmp_path / "out"
    if converter == "mnist":
        src, _ = mnist_src
        assert cli.convert("mnist", src, "--out", out).exit_code == 0
    else:
        for cls in ("cat", "dog"):
            (tmp_path / "pets" / cls).mkdir(parents=True)
            for i in range(3):
                Image.new("RGB", (30, 20), (200, 10 * i, 0)).save(tmp_path / "pets" / cls / f"{i}.png")
        assert cli.convert("images", tmp_path / "pets", "--out", out).exit_code == 0
    sheet = tmp_path / "grid.png"
    result = cli.inspect(out, "--grid", sheet, "--grid-count", 9, "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    expected = 9 if converter == "mnist" else 6
    assert report["images"] == expected
    with Image.open(sheet) as im:
        assert im.format == "PNG" and im.size == (3 * 96, (-(-expected // 3)) * (96 + 14))
        assert len({tuple(p) for p in np.asarray(im).reshape(-1, 3)[::97]}) > 2  # something was drawn


def test_modes_are_exclusive_and_every_json_parses(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out = tmp_path / "out"
    assert cli.convert("mnist", src, "--out", out).exit_code == 0
    for args in (["--count"], ["--head", "2"], ["--verify"], ["--stats"], ["--grid", str(tmp_path / "g.png")],
                 ["--write-index"]):  # fmt: skip
        result = cli.inspect(out, *args, "--json")
        assert result.exit_code == 0, (args, result.stderr)
        assert json.loads(result.stdout)["mode"] in ("count", "summary", "verify", "stats", "grid", "index")
    both = cli.inspect(out, "--verify", "--stats")
    assert both.exit_code == 2 and "choose one of --verify, --stats" in both.stderr


def _shards_without_metadata(cli, mnist_src, out: Path) -> list[Path]:
    src, _ = mnist_src
    assert cli.convert("mnist", src, "--out", out, "--examples-per-shard", 5, "--quiet").exit_code == 0
    for name in ("dataset_info.json", "manifest.json", "features.json"):
        (out / name).unlink()
    return sorted(out.glob("mnist-train.tfrecord-*"))


def test_verify_finds_missing_shards_from_the_names_alone(cli, mnist_src, tmp_path):
    shards = _shards_without_metadata(cli, mnist_src, tmp_path / "o")
    assert len(shards) == 8
    shards[3].unlink()
    shards[6].unlink()
    result = cli.inspect(tmp_path / "o", "--verify", "--json")
    assert result.exit_code == 1
    problems = [p for d in json.loads(result.stdout)["datasets"] for p in d["problems"]]
    assert [(p["kind"], p["file"]) for p in problems] == [
        ("missing_shard", shards[3].name),
        ("missing_shard", shards[6].name),
    ]
    text = cli.inspect(str(tmp_path / "o" / "mnist-*"), "--verify")  # a glob names them too
    assert text.exit_code == 1 and f"{shards[3].name}: missing_shard: shard 3 of 8 is absent" in text.stdout


def test_verify_finds_two_shard_counts_for_one_split(cli, mnist_src, tmp_path):
    shards = _shards_without_metadata(cli, mnist_src, tmp_path / "o")
    stray = shards[0].with_name(shards[0].name.replace("-of-00008", "-of-00009"))
    stray.write_bytes(shards[0].read_bytes())  # a leftover of an older run, say
    result = cli.inspect(tmp_path / "o", "--verify", "--json")
    assert result.exit_code == 1
    kinds = [p["kind"] for d in json.loads(result.stdout)["datasets"] for p in d["problems"]]
    assert kinds[0] == "mixed_shard_counts" and kinds.count("missing_shard") == 8  # 1..8 of 9


def test_with_metadata_a_missing_shard_is_reported_once(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out = tmp_path / "o"
    assert cli.convert("mnist", src, "--out", out, "--examples-per-shard", 5, "--quiet").exit_code == 0
    victim = sorted(out.glob("mnist-train.tfrecord-*"))[2]
    victim.unlink()
    result = cli.inspect(out, "--verify", "--json")
    problems = [p for d in json.loads(result.stdout)["datasets"] for p in d["problems"]]
    assert result.exit_code == 1 and [(p["kind"], p["file"]) for p in problems] == [("missing_shard", victim.name)]


def test_a_sequence_example_shows_its_context_and_its_feature_lists(cli, tmp_path):
    path = tmp_path / "seq.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(3):
            steps = i + 2
            sequence = tf.train.SequenceExample(
                context=tf.train.Features(feature={"id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}),
                feature_lists=tf.train.FeatureLists(feature_list={
                    "frames": tf.train.FeatureList(feature=[
                        tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"f%d" % t])) for t in range(steps)]),
                    "tokens": tf.train.FeatureList(feature=[
                        tf.train.Feature(int64_list=tf.train.Int64List(value=[t, t + 1])) for t in range(steps)]),
                }),
            )  # fmt: skip
            writer.write(sequence.SerializeToString())
    report = json.loads(cli.inspect(path, "--json", "--head", "1").stdout)
    assert report["undecodable_records"] == 0
    schema = report["schema"]
    assert schema["id"]["kind"] == "int64_list"
    assert schema["frames"]["kind"] == "feature_list[bytes_list]"
    assert (schema["frames"]["min_values"], schema["frames"]["max_values"]) == (2, 4)  # steps per record
    assert schema["tokens"]["kind"] == "feature_list[int64_list]"
    first = report["examples"][0]["features"]
    assert first["frames"]["values"] == [["f0"], ["f1"]] and first["tokens"]["values"] == [[0, 1], [1, 2]]
    text = cli.inspect(path).stdout
    assert "  frames  feature_list[bytes_list]  2..4 (mean 3) step(s)" in text
    assert "  frames: [['f0'], ['f1']]" in text


@pytest.mark.parametrize(("name", "kind"), [("sheet.jpg", "JPEG"), ("sheet.JPEG", "JPEG"), ("sheet.png", "PNG")])
def test_grid_writes_the_format_its_extension_names(cli, mnist_src, tmp_path, name, kind):
    src, _ = mnist_src
    assert cli.convert("mnist", src, "--out", tmp_path / "out").exit_code == 0
    result = cli.inspect(tmp_path / "out", "--grid", tmp_path / name, "--grid-count", 4)
    assert result.exit_code == 0, result.stderr
    with Image.open(tmp_path / name) as im:
        assert im.format == kind


def test_grid_refuses_an_extension_it_cannot_write_before_reading(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    assert cli.convert("mnist", src, "--out", tmp_path / "out").exit_code == 0
    result = cli.inspect(tmp_path / "out", "--grid", tmp_path / "sheet.gif")
    assert result.exit_code == 2 and "sheet.gif" in result.stderr and ".png" in result.stderr
    assert not (tmp_path / "sheet.gif").exists() and "Traceback" not in result.output


def test_grid_captions_keep_the_end_of_a_long_file_name():
    from tfr_convert.inspect.grid import fitted

    assert fitted("train/000000000009.jpg", tail=True) == "000000000009.jpg"  # coco8's, whole
    assert fitted("train/a_very_long_file_name_0042.jpg", tail=True) == "...name_0042.jpg"
    assert fitted("american_pit_bull_terrier") == "american_pit_..."  # a class name keeps its start
    assert fitted("short.png", tail=True) == "short.png"
    assert all(len(fitted("x" * n, tail=t)) <= 16 for n in (15, 16, 17, 40) for t in (True, False))
