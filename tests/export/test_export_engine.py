"""How tfr-export runs: chunks cut by count and bytes, files staged and moved only at the
end (a dry run writes nothing), the same files for any worker count, damaged and
unwritable records left out and listed under --on-error skip, a remote output equal to a
local one, and memory that does not grow with the pictures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from helpers import TESTS

from tfr_convert.errors import OutputError
from tfr_convert.export import engine
from tfr_convert.export.source import ExportSource
from tfr_convert.export.staging import staged

HERE = TESTS


def _ok(result):
    assert result.exit_code == 0, result.output
    return result


def _tree(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _write_records(path: Path, payloads: list[bytes]) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for payload in payloads:
            writer.write(payload)


def _example(**features) -> bytes:
    def feature(value):
        if isinstance(value, bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    return tf.train.Example(
        features=tf.train.Features(feature={k: feature(v) for k, v in features.items()})
    ).SerializeToString()


# ---------------------------------------------------------------- the seams


def test_chunks_are_cut_by_record_count_and_bytes_and_stop_at_the_limit(tmp_path, monkeypatch):
    sizes = [10, 10, 500, 10, 10, 10, 10]
    _write_records(tmp_path / "a.tfrecord", [bytes([i]) * n for i, n in enumerate(sizes)])
    source = ExportSource.open([str(tmp_path / "a.tfrecord")])
    monkeypatch.setattr(engine, "CHUNK_RECORDS", 3)
    cut = [(c.start, [len(p) for _, p in c.records]) for c in engine.chunks(source, "train", None, None, 400)]
    assert cut == [(0, [10, 10, 500]), (3, [10, 10, 10]), (6, [10])]
    limited = list(engine.chunks(source, "train", 4, None, 400))
    assert [(c.start, len(c.records)) for c in limited] == [(0, 3), (3, 1)]
    where = limited[1].records[0][0]
    assert where.startswith(f"{tmp_path / 'a.tfrecord'} record 3, byte ")


def test_staged_files_reach_their_names_only_at_commit_and_a_dry_run_writes_nothing(tmp_path):
    out = tmp_path / "out"
    with staged(str(out)) as staging:
        staging.drop.put(staging.drop.name(0, 7), b"picture")
        staging.place(staging.drop.name(0, 7), "train/cat/a.png")
        with staging.csv("labels.csv") as rows:
            rows.row(["filename", "label"])
            rows.row(["a,b.png", "cat"])
        assert not (out / "train").exists() and not (out / "labels.csv").exists()
        staging.commit()
    assert _tree(out) == {"train/cat/a.png": b"picture", "labels.csv": b'filename,label\n"a,b.png",cat\n'}
    with staged(str(tmp_path / "dry"), dry_run=True) as staging:
        staging.drop.put(staging.drop.name(0, 0), b"x")
        staging.place(staging.drop.name(0, 0), "x.png")
        staging.put("labels.csv", b"y")
        staging.commit()
    assert not (tmp_path / "dry").exists()


def test_a_failed_export_removes_what_it_staged(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError), staged(str(out)) as staging:
        staging.drop.put(staging.drop.name(0, 0), b"picture")
        staging.place(staging.drop.name(0, 0), "a.png")
        raise RuntimeError("a record failed")
    assert _tree(out) == {}


def test_a_commit_that_fails_half_way_puts_back_what_it_moved(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "blocker").write_bytes(b"a file where a folder must go")
    with pytest.raises(OutputError, match="nothing was placed"), staged(str(out)) as staging:
        for n, relative in enumerate(["a/one.png", "b/c/two.png", "blocker/three.png", "four.png"]):
            staging.drop.put(staging.drop.name(0, n), b"picture")
            staging.place(staging.drop.name(0, n), relative)
        staging.commit()
    assert _tree(out) == {"blocker": b"a file where a folder must go"}
    assert sorted(p.name for p in out.iterdir()) == ["blocker"]  # the folders made for a/ and b/c/ went too


# ---------------------------------------------------------------- through the command


@pytest.fixture
def digits(cli, mnist_src, tmp_path):
    """An MNIST dataset (raw pixels: workers encode PNGs) in several shards."""
    out = tmp_path / "digits"
    _ok(cli.convert("mnist", mnist_src[0], "--out", out, "--num-shards", "3", "--quiet"))
    return out


@pytest.mark.parametrize("target", [["--to", "images"], ["--to", "images", "--layout", "csv"], ["--to", "parquet"]])
def test_any_worker_count_writes_the_same_files(cli, digits, tmp_path, monkeypatch, target):
    monkeypatch.setattr(engine, "CHUNK_RECORDS", 5)  # many chunks in flight at once
    trees = []
    for workers in (1, 3):
        out = tmp_path / f"w{workers}"
        _ok(cli.export(digits, "--out", out, *target, "--workers", workers, "--quiet"))
        trees.append(_tree(out))
    assert len(trees[0]) >= 2 and trees[0] == trees[1]


def test_any_worker_count_writes_the_same_detection_files(cli, tmp_path, monkeypatch):
    from detection_inputs import write_coco, write_images

    images = write_images(tmp_path / "pets")
    _ok(cli.convert("detection", images, "--annotations", write_coco(tmp_path / "c.json"), "--out", tmp_path / "ds"))
    monkeypatch.setattr(engine, "CHUNK_RECORDS", 1)
    for fmt in ("coco", "yolo", "voc", "csv"):
        trees = []
        for workers in (1, 3):
            out = tmp_path / f"{fmt}{workers}"
            _ok(cli.export(tmp_path / "ds", "--to", fmt, "--out", out, "--workers", workers))
            trees.append(_tree(out))
        assert len(trees[0]) > 3 and trees[0] == trees[1], fmt


def _damage_payload(shard: Path, record: int = 0) -> int:
    """Flip a byte inside a record's payload (its data CRC then fails); the record's offset."""
    data = bytearray(shard.read_bytes())
    offset = 0
    for _ in range(record):
        offset += 16 + int.from_bytes(data[offset : offset + 8], "little")
    data[offset + 14] ^= 0xFF
    shard.write_bytes(bytes(data))
    return offset


def test_on_error_skip_leaves_out_damaged_and_unwritable_records_and_lists_them(cli, tmp_path):
    png = tf.io.encode_png(np.zeros((3, 4, 3), np.uint8)).numpy()
    records = [_example(image=png, filename=name.encode(), label=i % 2) for i, name in enumerate(
        ["a.png", "b.png", "../up.png", "c.png", "b.png", "d.png", "a.png"])]  # fmt: skip
    records.insert(4, _example(filename=b"e.png", label=0))  # no picture
    _write_records(tmp_path / "plain.tfrecord", records)
    offset = _damage_payload(tmp_path / "plain.tfrecord", 1)  # b.png's first record
    failed = cli.export(tmp_path / "plain.tfrecord", "--to", "images", "--layout", "csv", "--out", tmp_path / "x")
    assert failed.exit_code == 1 and f"plain.tfrecord: record 1 at byte offset {offset}" in failed.stderr
    assert not (tmp_path / "x").exists() or _tree(tmp_path / "x") == {}

    result = _ok(cli.export(tmp_path / "plain.tfrecord", "--to", "images", "--layout", "csv", "--out", tmp_path / "x",
                            "--on-error", "skip", "--json", "--workers", "2"))  # fmt: skip
    summary = json.loads(result.stdout)
    assert summary["splits"]["train"]["records"] == 4, summary
    reasons = [(s["item"], s["reason"]) for s in summary["skipped"]]
    assert summary["skipped_total"] == 4 == len(reasons)
    assert reasons[0][0].endswith(f"plain.tfrecord: bytes {offset}-{offset + 16 + len(records[1])}")
    assert "1 record(s) lost" in reasons[0][1]
    up = offset + 16 + len(records[1])
    assert "file name '../up.png' is not a relative path" in reasons[1][1] and f" record at byte {up}" in reasons[1][0]
    assert reasons[2][1] == "no picture in 'image'"
    assert reasons[3][1].startswith("writes a.png, as ") and "plain.tfrecord record" in reasons[3][1]
    tree = _tree(tmp_path / "x")
    assert sorted(tree) == ["a.png", "b.png", "c.png", "d.png", "labels.csv"]
    assert tree["b.png"] == png  # the first b.png lost its record: the second one wrote it
    assert tree["labels.csv"].decode().splitlines()[1:] == ["a.png,train,0", "c.png,train,1", "b.png,train,0",
                                                            "d.png,train,1"]  # fmt: skip
    text = _ok(cli.export(tmp_path / "plain.tfrecord", "--to", "parquet", "--out", tmp_path / "p", "--on-error",
                          "skip"))  # fmt: skip
    # the damaged record is lost; the one without a picture is a row whose image is null,
    # as a Parquet column holds a feature some records lack
    assert "skipped: " in text.stderr and "(1 skipped)" in text.stdout, text.output
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "p" / "train.parquet").to_pylist()
    assert [r["filename"] for r in rows if r["image"] is None] == [b"e.png"] and len(rows) == 7


def test_a_dry_run_counts_checks_and_writes_nothing(cli, digits, tmp_path):
    out = tmp_path / "x"
    plan = json.loads(_ok(cli.export(digits, "--to", "images", "--out", out, "--dry-run", "--json")).stdout)
    assert plan["mode"] == "dry_run" and not out.exists()
    real = json.loads(_ok(cli.export(digits, "--to", "images", "--out", out, "--json")).stdout)
    assert {s: e["records"] for s, e in plan["splits"].items()} == {s: e["records"] for s, e in real["splits"].items()}
    assert all(e["checked"] == min(16, e["records"]) for e in plan["splits"].values())
    text = _ok(cli.export(digits, "--to", "parquet", "--out", tmp_path / "y", "--dry-run", "--limit", "3")).stdout
    assert (
        text.startswith("dry run: nothing written. train 3, test 3 records would go to") and "first 6 checked" in text
    )


def test_a_dry_run_finds_a_problem_in_the_first_records(cli, tmp_path):
    _write_records(tmp_path / "plain.tfrecord", [_example(image=b"\x89PNG\r\n\x1a\n", filename=b"/abs.png")])
    result = cli.export(tmp_path / "plain.tfrecord", "--to", "images", "--out", tmp_path / "x", "--dry-run")
    assert result.exit_code == 1 and "file name '/abs.png' is not a relative path" in result.stderr
    assert not (tmp_path / "x").exists()


TARGETS_HELD_TO_A_WINDOW = ("images", "parquet", "webdataset", "hf")


def test_memory_holds_a_window_of_chunks_not_the_pictures(tmp_path):
    rng = np.random.default_rng(0)
    header = tf.io.encode_png(np.zeros((1, 1, 3), np.uint8)).numpy()[:33]  # signature and IHDR: a PNG by its bytes
    peaks: dict[tuple[str, int], int] = {}
    for count in (8, 24):  # 64 and 192 MiB of records
        path = tmp_path / f"{count}.tfrecord"
        _write_records(path, [_example(image=header + rng.bytes(8 << 20), filename=f"{i:02d}.png".encode())
                              for i in range(count)])  # fmt: skip
        for target in TARGETS_HELD_TO_A_WINDOW:
            out = tmp_path / f"{target}{count}"
            done = subprocess.run(
                [sys.executable, str(HERE / "peak_rss.py"), "export", str(path), "--to", target, "--out", str(out),
                 "--workers", "2"],
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            peaks[target, count] = int(done.stderr.strip().splitlines()[-1].split("=")[1])
            shutil.rmtree(out)
        path.unlink()
    for target in TARGETS_HELD_TO_A_WINDOW:
        assert peaks[target, 24] - peaks[target, 8] < 48, peaks  # holding the pictures would add 128
    assert peaks["images", 24] < 160, peaks
