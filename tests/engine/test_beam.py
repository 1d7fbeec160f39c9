"""--engine beam on the DirectRunner, and remote output on a local S3 server."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from helpers import FailingMnist, final_files, hint
from PIL import Image

from tfr_convert.dataset.naming import ShardName
from tfr_convert.errors import FeatureError, MissingExtra, OptionError, RecordError, SourceError, TfrConvertError

pytest.importorskip("apache_beam")

SCRIPTS = Path(sysconfig.get_path("scripts"))
SPLIT = "train=0.6,validation=0.2,test=0.2"


def image_folder(root: Path, per_class: int = 20, broken: str | None = None) -> Path:
    """Class folders of small JPEGs and PNGs of varied sizes (re-encoded to PNG by the tests)."""
    rng = np.random.default_rng(7)
    for c, cls in enumerate(("cat", "dog", "owl")):
        (root / cls).mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, (8 + i % 5, 9 + c, 3), dtype=np.uint8)
            fmt = "JPEG" if i % 2 else "PNG"
            Image.fromarray(pixels).save(root / cls / f"{i:03d}.{fmt.lower()[:3]}", fmt)
    if broken:
        (root / "dog" / broken).write_bytes(b"\x89PNG\r\n\x1a\n not really")
    return root


def split_records(out: Path) -> dict[str, Counter]:
    """Per split, the multiset of serialized examples, read by TensorFlow's reader."""
    found: dict[str, Counter] = {}
    for name in final_files(out):
        shard = ShardName.parse(name)
        if shard:
            found.setdefault(shard.split, Counter()).update(r.numpy() for r in tf.data.TFRecordDataset(str(out / name)))
    return found


# by count of records written; by size, cut where the files' sizes plan it (the local
# engine's workers then write whole shards)
@pytest.mark.parametrize("cut", [["--examples-per-shard", "7"], ["--shard-size", "2000"]], ids=["count", "size"])
def test_beam_engine_gives_the_local_engines_splits_and_tfds_opens_it(cli, tmp_path, cut):
    src = image_folder(tmp_path / "pets")
    common = ["images", src, "--split", SPLIT, "--stratify", "--image-format", "png", *cut]
    local = cli.convert(*common, "--out", tmp_path / "local", "--workers", 2, "--quiet")
    assert local.exit_code == 0, local.output
    beam = cli.convert(*common, "--out", tmp_path / "beam", "--engine", "beam",
                       "--beam-options", "--runner=DirectRunner", "--quiet", "--json")  # fmt: skip
    assert beam.exit_code == 0, beam.output

    local_records, beam_records = split_records(tmp_path / "local"), split_records(tmp_path / "beam")
    assert set(beam_records) == {"train", "validation", "test"}
    assert {s: sum(c.values()) for s, c in beam_records.items()} == {"train": 36, "validation": 12, "test": 12}
    assert beam_records == local_records  # every example in the same split, whatever the engine
    # Beyond the multiset: the same cuts and order, so the very same files and metadata.
    assert final_files(tmp_path / "beam") == final_files(tmp_path / "local")
    for name in final_files(tmp_path / "local"):  # shards, and metadata with every count, size and sha256
        assert (tmp_path / "beam" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert not [n for n in os.listdir(tmp_path / "beam") if n.startswith(".")]  # no temporaries left

    builder = tfds.builder_from_directory(str(tmp_path / "beam"))
    assert {s: builder.info.splits[s].num_examples for s in ("train", "validation", "test")} == {
        "train": 36, "validation": 12, "test": 12,
    }  # fmt: skip
    labels = [int(e["label"]) for e in tfds.as_numpy(builder.as_dataset(split="train"))]
    assert Counter(labels) == {0: 12, 1: 12, 2: 12}


def test_beam_failure_leaves_nothing_and_names_the_file(cli, tmp_path):
    src = image_folder(tmp_path / "pets", per_class=4, broken="bad.png")
    out = tmp_path / "out"
    result = cli.convert("images", src, "--image-format", "png", "--out", out, "--engine", "beam", "--quiet")
    assert result.exit_code == 1
    assert "bad.png" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists() or os.listdir(out) == []


def test_beam_options_without_the_beam_engine_is_a_usage_error(cli, tmp_path):
    src = image_folder(tmp_path / "pets", per_class=2)
    result = cli.convert("images", src, "--out", tmp_path / "o", "--beam-options", "--runner=DirectRunner")
    assert result.exit_code == 2 and "--engine beam" in result.stderr


def test_engine_beam_without_the_extra_says_what_to_install(tmp_path):
    fake = tmp_path / "fake" / "apache_beam"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no Beam here')\n")
    src = image_folder(tmp_path / "pets", per_class=2)
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    result = subprocess.run(
        [str(SCRIPTS / "tfr-convert"), "images", str(src), "--out", str(tmp_path / "o"), "--engine", "beam"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert hint("beam") in result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("engine", ["local", "beam"])
def test_s3_output_reads_back_and_equals_the_local_bytes(cli, tmp_path, engine, s3):
    src = image_folder(tmp_path / "pets", per_class=3)
    out = f"{s3.url}/pets-{engine}"
    common = ["images", src, "--image-format", "png", "--split", "train=0.5,test=0.5", "--quiet"]
    result = cli.convert(*common, "--out", out, "--engine", engine)
    assert result.exit_code == 0, result.output
    names = sorted(n.rsplit("/", 1)[1] for n in s3.fs.find(out[len("s3://") :]))
    assert "dataset_info.json" in names and not [n for n in names if n.startswith(".")]
    assert cli.convert(*common, "--out", tmp_path / "same").exit_code == 0
    assert names == final_files(tmp_path / "same")
    for n in names:  # byte-identical to the same conversion written locally, metadata included
        assert s3.fs.cat_file(f"{out[len('s3://') :]}/{n}") == (tmp_path / "same" / n).read_bytes(), n
    from tfr_convert import load

    info = json.loads(s3.fs.cat_file(f"{out[len('s3://') :]}/dataset_info.json"))
    train = sum(int(n) for s in info["splits"] if s["name"] == "train" for n in s["shardLengths"])
    assert 0 < train < 9
    assert sum(1 for _ in load(out, "train")) == train  # the loader reads a remote dataset too


@pytest.mark.parametrize("file_format", ["tfrecord", "array_record"])
def test_beam_runs_the_fixed_layout_converters_too(cli, mnist_src, tmp_path, file_format):
    src, _ = mnist_src
    common = ["mnist", src, "--validation-size", 8, "--examples-per-shard", 10, "--quiet", "--format", file_format]
    assert cli.convert(*common, "--out", tmp_path / "local").exit_code == 0
    beam = cli.convert(*common, "--out", tmp_path / "beam", "--engine", "beam")
    assert beam.exit_code == 0, beam.output
    assert final_files(tmp_path / "beam") == final_files(tmp_path / "local")
    for name in final_files(tmp_path / "local"):
        assert (tmp_path / "beam" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name


def test_download_into_a_remote_src_is_a_usage_error(cli, tmp_path):
    result = cli.convert("mnist", "gs://bucket/mnist", "--download", "--out", tmp_path / "o")
    assert result.exit_code == 2 and "local folder" in result.stderr


@pytest.mark.parametrize("make_error", [lambda: FeatureError("feature 'x': integer 2**70 does not fit in int64"),
                                        lambda: SourceError("cannot read: broken"),
                                        lambda: RecordError("a.tfrecord", 4, 100, "bad CRC"),
                                        lambda: OptionError("--label-column 'x' is not a column"),
                                        lambda: MissingExtra("needs TensorFlow: pip install 'tfr-convert[tf]'")])  # fmt: skip
def test_every_library_error_reaches_the_launcher_as_the_local_engines_message(mnist_src, tmp_path, make_error):
    from tfr_convert.engine import beam as beam_engine
    from tfr_convert.engine import core as engines
    from tfr_convert.engine import local as pipeline

    src, _ = mnist_src
    messages, codes, raised = [], [], []
    for engine, out in ((pipeline.run, tmp_path / "local"), (beam_engine.run, tmp_path / "beam")):
        with pytest.raises(TfrConvertError) as caught:
            engine(FailingMnist(str(src), make_error()), engines.RunOptions(out=str(out)))
        messages.append(str(caught.value))
        codes.append(caught.value.exit_code)
        raised.append(caught.value)
        assert final_files(out) == []
    assert messages[0] == messages[1]
    assert codes[0] == codes[1] == make_error().exit_code  # a usage error (exit 2) stays one under Beam
    assert type(raised[1]) is type(raised[0]) is type(make_error())  # the class too, and its fields
    assert vars(raised[1]) == vars(raised[0]) and raised[1].args == raised[0].args
    assert messages[0] == f"{src}/train-images-idx3-ubyte.gz: image 1: {make_error()}"
