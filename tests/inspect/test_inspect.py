"""tfr-inspect on our output, on TensorFlow's files, and on broken ones."""

from __future__ import annotations

import json

import tensorflow as tf

from tfr_convert.containers.framing import frame


def _convert(cli, src, out, *args):
    result = cli.convert("mnist", src, "--out", out, *args)
    assert result.exit_code == 0, result.stderr


def test_report_counts_schema_and_first_example(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    out = tmp_path / "out"
    _convert(cli, src, out, "--validation-size", 4, "--no-shuffle")
    result = cli.inspect(out)
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith("mnist-train.tfrecord-00000-of-00001") and "36 records" in lines[0]
    assert lines[1].startswith("mnist-validation.tfrecord") and lines[2].startswith("mnist-test.tfrecord")
    assert lines[3].startswith("total: 52 records in 3 files")
    assert "  image_raw  bytes_list  1 value(s)" in lines
    assert any(line.startswith("  image_raw: ['<784 bytes: ") for line in lines)


def test_json_report(cli, mnist_src, tmp_path):
    src, arrays = mnist_src
    out = tmp_path / "out"
    _convert(cli, src, out, "--no-shuffle")
    report = json.loads(cli.inspect(out, "--json", "--head", 2).stdout)
    assert report["records"] == 52
    assert report["schema"]["label"] == {
        "kind": "int64_list", "min_values": 1, "max_values": 1, "mean_values": 1.0, "present_in": 52, "fraction": 1.0,
    }  # fmt: skip
    assert [e["features"]["label"]["values"] for e in report["examples"]] == [
        [int(arrays["train"][1][0])],
        [int(arrays["train"][1][1])],
    ]
    assert {f["compression"] for f in report["files"]} == {"none"}
    counted = json.loads(cli.inspect(out, "--count", "--json").stdout)
    assert counted["records"] == 52 and "schema" not in counted


def test_tensorflow_written_gzip_file_and_globs(cli, tmp_path):
    for i in range(2):
        with tf.io.TFRecordWriter(str(tmp_path / f"part{i}.tfrecord.gz"), options="GZIP") as w:
            for j in range(3):
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5] * (j + 1))),
                            "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"cat"])),
                        }
                    )
                )
                w.write(example.SerializeToString())
    report = json.loads(cli.inspect(str(tmp_path / "part*.tfrecord.gz"), "--json").stdout)
    assert report["records"] == 6 and [f["compression"] for f in report["files"]] == ["gzip", "gzip"]
    assert report["schema"]["x"]["min_values"] == 1 and report["schema"]["x"]["max_values"] == 3
    assert report["examples"][0]["features"]["name"]["values"] == ["cat"]


def test_corrupt_file_exits_1_with_record_and_offset(cli, tmp_path):
    path = tmp_path / "x.tfrecord"
    good = frame(b"\x0a\x00") + frame(b"\x0a\x00")
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    result = cli.inspect(path)
    assert result.exit_code == 1
    assert result.stderr == f"error: {path}: record 1 at byte offset 18: data CRC mismatch (corrupt payload)\n"


def test_missing_path_exits_1(cli, tmp_path):
    result = cli.inspect(tmp_path / "nope*")
    assert result.exit_code == 1 and "no such file, directory or glob match" in result.stderr


def test_non_example_payloads_are_counted_not_fatal(cli, tmp_path):
    path = tmp_path / "raw.tfrecord"
    path.write_bytes(frame(b"\xff\xff") + frame(b"\x0a\x00"))
    report = json.loads(cli.inspect(path, "--json").stdout)
    assert report["records"] == 2 and report["undecodable_records"] == 1
