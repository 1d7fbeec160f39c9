"""Many workers, the same dataset: shards written and hashed on the write pool while the
next fills (engine/local.py, storage/pooled_writes.py), or written whole by the workers
where their cuts are planned (engine/whole_shards.py), give the bytes of one worker,
survive a SIGKILL at any filesystem step, resume to the same bytes (whichever way the
interrupted run wrote), and keep the parent's memory bounded with 16 forked workers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
from helpers import TESTS
from PIL import Image

from crashing import changes_made, files, killed_at, killed_fresh, work_dir
from tfr_convert.engine import local

HERE = TESTS


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """160 small pictures in 4 class folders: batches of 16 when re-encoded, so 10 batches
    for the workers to share, and many shards."""
    root = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(0)
    for n in range(160):
        folder = root / f"class{n % 4}"
        folder.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)).save(folder / f"{n:03d}.png")
    return root


def _whole_splits_counted(monkeypatch) -> list[str]:
    """The splits whose shards the workers write whole, as runs in this process go."""
    whole: list[str] = []
    write_whole = local._Splits._write_whole

    def counted(self, split, *args):
        whole.append(split)
        return write_whole(self, split, *args)

    monkeypatch.setattr(local._Splits, "_write_whole", counted)
    return whole


@pytest.mark.parametrize(
    "cut,whole_from",
    [(["--examples-per-shard", "9"], None), (["--shard-size", "6000"], 2), (["--num-shards", "9"], 2)],
    ids=["by-count", "by-size", "by-number"],
)
def test_any_worker_count_gives_the_bytes_of_one(cli, photos, tmp_path, monkeypatch, cut, whole_from):
    args = ["images", photos, "--image-format", "png", "--split", "train=0.7,test=0.3", *cut]
    whole = _whole_splits_counted(monkeypatch)
    found = {}
    for workers in (1, 2, 3, 8):
        out = tmp_path / f"w{workers}"
        whole.clear()
        assert cli.convert(*args, "--workers", workers, "--out", out).exit_code == 0
        found[workers] = files(out)
        # where the cuts are planned, each of the two splits' shards are written whole
        assert sorted(whole) == (["test", "train"] if whole_from and workers >= whole_from else []), workers
    assert len([n for n in found[1] if "-of-" in n]) > 6  # many shards: the pool has several under way
    assert found[2] == found[1] and found[3] == found[1] and found[8] == found[1]
    # and a reshard of it, by records' own engine path
    resharded = {}
    for workers in (1, 8):
        out = tmp_path / f"r{workers}"
        result = cli.convert(
            "records", tmp_path / "w1", "--examples-per-shard", "7", "--workers", workers, "--out", out
        )
        assert result.exit_code == 0, result.output
        resharded[workers] = files(out)
    assert resharded[8] == resharded[1]


@pytest.mark.parametrize("cut", [["--examples-per-shard", "40"], ["--num-shards", "8"]], ids=["ordered", "whole"])
def test_a_many_worker_run_killed_at_any_filesystem_step_leaves_nothing_or_all_and_resumes_to_the_same_bytes(
    cli, photos, tmp_path, cut
):
    args = ["images", photos, "--image-format", "png", *cut, "--workers", "8"]
    reference = tmp_path / "reference"
    assert cli.convert(*args, "--out", reference).exit_code == 0
    expected = files(reference)
    total = changes_made(*args, "--out", tmp_path / "counted", count_file=tmp_path / "count")
    out = tmp_path / "out"
    for n in range(1, total + 1):
        killed_fresh(n, args, out, expected)
        result = cli.convert(*args, "--out", out, "--resume")
        assert result.exit_code == 0, (n, result.output)
        assert files(out) == expected, n
        assert not work_dir(out).exists(), n


@pytest.mark.parametrize("first,then", [("1", "8"), ("8", "1")], ids=["ordered-then-whole", "whole-then-ordered"])
def test_a_run_killed_after_some_shards_resumes_the_other_way_to_the_same_bytes(cli, photos, tmp_path, first, then):
    """The ordered writer (one worker) and the workers writing whole shards (eight) journal
    alike: either one finishes what the other began."""
    args = ["images", photos, "--image-format", "png", "--shard-size", "20000"]
    reference = tmp_path / "reference"
    assert cli.convert(*args, "--out", reference, "--workers", "8").exit_code == 0
    expected = files(reference)
    assert len([n for n in expected if "-of-" in n]) >= 8
    out = tmp_path / "out"
    total = changes_made(*args, "--out", tmp_path / "counted", "--workers", first, count_file=tmp_path / "count")
    for n in (total // 3, total // 2, 2 * total // 3):  # past the first shards, before the commit
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work_dir(out), ignore_errors=True)
        assert killed_at(n, *args, "--out", out, "--workers", first).returncode == -signal.SIGKILL
        result = cli.convert(*args, "--out", out, "--workers", then, "--resume", "--json")
        assert result.exit_code == 0, (n, result.output)
        assert json.loads(result.output)["resumed"].get("kept_shards", 0) > 0, n
        assert files(out) == expected, n


def test_the_parent_of_16_forked_workers_stays_under_100_mib_on_2000_large_photos(tmp_path):
    """2,000 JPEG photos of 1024x768 (20 distinct ones, linked under 2,000 names), kept:
    the parent receives every byte of them and hands it to the write pool."""
    rng = np.random.default_rng(1)
    distinct = tmp_path / "distinct"
    distinct.mkdir()
    y, x = np.mgrid[0:768, 0:1024]
    for n in range(20):
        smooth = np.stack([(x * (n + 1) // 8) % 256, (y * (n + 2) // 8) % 256, (x + y) % 256], axis=-1)
        noisy = np.clip(smooth + rng.integers(-20, 20, smooth.shape), 0, 255).astype(np.uint8)
        Image.fromarray(noisy).save(distinct / f"{n}.jpg", quality=90)
    root = tmp_path / "photos"
    for n in range(2000):
        folder = root / f"class{n % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        os.link(distinct / f"{n % 20}.jpg", folder / f"{n:04d}.jpg")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(HERE / "peak_rss.py"), "convert", "images", str(root), "--workers", "16",
         "--out", str(out), "--quiet"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    peak = int(proc.stderr.strip().splitlines()[-1].removeprefix("peak_rss_mib="))
    written = sum(p.stat().st_size for p in out.iterdir() if "-of-" in p.name)
    assert written > 400 << 20  # every photo went through the parent
    assert peak <= 100, peak
