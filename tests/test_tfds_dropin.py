"""What TensorFlow Datasets can and cannot open, said where users look."""

from __future__ import annotations

import json

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import tfr_convert


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_shards_warn_once_and_verify_notes_that_tfds_cannot_read_them(cli, mnist_src, tmp_path, compression):
    out = tmp_path / "out"
    result = cli.convert("mnist", mnist_src[0], "--out", out, "--compression", compression)
    assert result.exit_code == 0, result.stderr
    note = f"{compression}-compressed shards: TensorFlow Datasets cannot read them"
    assert result.stderr.count(note) == 1
    assert json.loads((out / "dataset_info.json").read_text())["description"].startswith(note)
    verify = cli.inspect(out, "--verify")
    assert verify.exit_code == 0 and f"NOTE  {out}: {note}" in verify.stdout
    report = json.loads(cli.inspect(out, "--verify", "--json").stdout)
    assert report["ok"] and report["datasets"][0]["notes"][0].startswith(note)
    # the claims the note makes: TFDS fails, load() reads
    with pytest.raises(tf.errors.DataLossError):
        next(iter(tfds.builder_from_directory(str(out)).as_dataset(split="train")))
    assert sum(1 for _ in tfr_convert.load(str(out), "test")) == 12
    plain = cli.convert("mnist", mnist_src[0], "--out", tmp_path / "plain")
    assert "TensorFlow Datasets cannot read" not in plain.stderr
    assert "NOTE" not in cli.inspect(tmp_path / "plain", "--verify").stdout
