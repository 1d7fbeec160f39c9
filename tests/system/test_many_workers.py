"""Many workers, the same dataset: shards written and hashed on the write pool while the
next fills (engine/local.py, storage/pooled_writes.py) give the bytes of one worker,
survive a SIGKILL at any filesystem step, resume to the same bytes, and keep the
parent's memory bounded with 16 forked workers."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import TESTS
from PIL import Image

from crashing import changes_made, files, killed_fresh, work_dir

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


@pytest.mark.parametrize("cut", [["--examples-per-shard", "9"], ["--shard-size", "6000"]], ids=["by-count", "by-size"])
def test_any_worker_count_gives_the_bytes_of_one(cli, photos, tmp_path, cut):
    args = ["images", photos, "--image-format", "png", "--split", "train=0.7,test=0.3", *cut]
    found = {}
    for workers in (1, 2, 3, 8):
        out = tmp_path / f"w{workers}"
        assert cli.convert(*args, "--workers", workers, "--out", out).exit_code == 0
        found[workers] = files(out)
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


def test_a_many_worker_run_killed_at_any_filesystem_step_leaves_nothing_or_all_and_resumes_to_the_same_bytes(
    cli, photos, tmp_path
):
    args = ["images", photos, "--image-format", "png", "--examples-per-shard", "40", "--workers", "8"]
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
