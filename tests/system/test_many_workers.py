"""Many workers, the same dataset: shards written and hashed on the write pool while the
next fills (engine/local.py, storage/pooled_writes.py), or written whole by the workers
where their cuts are planned (engine/whole_shards.py), give the bytes of one worker,
survive a SIGKILL at any filesystem step, resume to the same bytes (whichever way the
interrupted run wrote), and keep the parent's memory bounded with 16 forked workers."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers import TESTS
from PIL import Image

from crashing import changes_made, files, killed_at, killed_fresh, work_dir
from tfr_convert.dataset.wire.example import serialize
from valid_files import framed

HERE = TESTS


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """160 small pictures in 4 class folders: batches of 16 when re-encoded, so 10 batches
    for the workers to share, and many shards."""
    return _noise_pictures(tmp_path_factory.mktemp("photos"), 160, 4, (20, 24), seed=0)


def _noise_pictures(root, count: int, classes: int, shape: tuple[int, int], seed: int):
    rng = np.random.default_rng(seed)
    for n in range(count):
        folder = root / f"class{n % classes}"
        folder.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (*shape, 3), dtype=np.uint8)).save(folder / f"{n:03d}.png")
    return root


def _converted(*args) -> tuple[list[str], str]:
    """tfr-convert ARGS in a process of its own: the splits whose shards the workers wrote
    whole, and what it printed."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "whole_counted.py"), *map(str, args)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return sorted(filter(None, proc.stderr.strip().splitlines()[-1].removeprefix("whole=").split(","))), proc.stdout


@pytest.mark.parametrize(
    "cut,whole_from",
    [(["--examples-per-shard", "9"], None), (["--shard-size", "6000"], 2), (["--num-shards", "9"], 2)],
    ids=["by-count", "by-size", "by-number"],
)
def test_any_worker_count_gives_the_bytes_of_one(cli, photos, tmp_path, cut, whole_from):
    args = ["images", photos, "--image-format", "png", "--split", "train=0.7,test=0.3", *cut]
    found = {}
    for workers in (1, 2, 3, 8):
        out = tmp_path / f"w{workers}"
        whole, _ = _converted(*args, "--workers", workers, "--out", out, "--quiet")
        found[workers] = files(out)
        # where the cuts are planned, each of the two splits' shards are written whole
        assert whole == (["test", "train"] if whole_from and workers >= whole_from else []), workers
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


def test_a_reshard_by_number_is_written_whole_by_the_workers_to_the_bytes_of_one(tmp_path):
    """`records --num-shards`: 4 shards written whole by 4 workers (more records than one
    batch: a single batch is encoded in one process)."""
    source = tmp_path / "many.tfrecord"
    source.write_bytes(framed([serialize({"n": [i], "text": [b"x" * (i % 300)]}) for i in range(2000)]))
    found = {}
    for workers in (1, 4):
        out = tmp_path / f"n{workers}"
        args = ["records", source, "--num-shards", 4, "--workers", workers, "--out", out, "--quiet"]
        whole, _ = _converted(*args)
        assert whole == (["train"] if workers == 4 else [])
        found[workers] = files(out)
    assert len([n for n in found[1] if "-of-" in n]) == 4 and found[4] == found[1]


def test_webdataset_shards_cut_by_their_members_sizes_are_written_whole_to_the_bytes_of_one(photos, tmp_path):
    """`webdataset --shard-size`: the cuts planned from the tar members' sizes (the
    listing has them: no stat), so the workers write the shards whole."""
    import tarfile

    tars = []
    pictures = sorted(photos.glob("*/*.png"))
    for t in range(3):
        tars.append(tmp_path / f"train-{t}.tar")
        with tarfile.open(tars[-1], "w", format=tarfile.USTAR_FORMAT) as tar:
            for picture in pictures[t::3]:
                key = f"{picture.parent.name}_{picture.stem}"
                tar.add(picture, f"{key}.png")
                label = tarfile.TarInfo(f"{key}.cls")
                label.size = 1
                tar.addfile(label, io.BytesIO(picture.parent.name[-1].encode()))
    found = {}
    for workers in (1, 3):
        out = tmp_path / f"w{workers}"
        whole, _ = _converted("webdataset", *tars, "--shard-size", 6000, "--workers", workers, "--out", out, "--quiet")
        assert whole == (["train"] if workers == 3 else [])
        found[workers] = files(out)
    assert len([n for n in found[1] if "-of-" in n]) > 6 and found[3] == found[1]


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


def test_a_run_of_one_worker_killed_after_some_shards_resumes_on_eight_writing_whole_shards(cli, photos, tmp_path):
    """The ordered writer and the workers writing whole shards journal alike: eight
    workers finish what one began, to the same bytes."""
    args = ["images", photos, "--image-format", "png", "--shard-size", "20000"]
    reference = tmp_path / "reference"
    assert cli.convert(*args, "--out", reference, "--workers", "1").exit_code == 0
    expected = files(reference)
    shards = len([n for n in expected if "-of-" in n])
    assert shards >= 8
    out = tmp_path / "out"
    total = changes_made(*args, "--out", tmp_path / "counted", "--workers", "1", count_file=tmp_path / "count")
    went_on = 0  # resumed runs that had shards left to write
    for n in (total // 4, total // 3, total // 2):  # past the first shards
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work_dir(out), ignore_errors=True)
        assert killed_at(n, *args, "--out", out, "--workers", "1").returncode == -signal.SIGKILL
        whole, printed = _converted(*args, "--out", out, "--workers", "8", "--resume", "--json", "--quiet")
        kept = json.loads(printed)["resumed"].get("kept_shards", 0)
        assert 0 < kept <= shards, n
        if kept < shards:
            went_on += 1
            assert whole == ["train"], n
        assert files(out) == expected, n
    assert went_on


@pytest.fixture(scope="module")
def slow_photos(tmp_path_factory):
    """96 noise pictures of 256x256: a second or so to re-encode as PNG, so that a run
    can be caught between its first shard and its last."""
    return _noise_pictures(tmp_path_factory.mktemp("slow"), 96, 2, (256, 256), seed=2)


def test_a_run_of_whole_shards_killed_after_some_resumes_on_one_worker_to_the_same_bytes(cli, slow_photos, tmp_path):
    """Killed once the parent has journaled a shard the workers wrote whole (the parent
    changes no file while they write, so no filesystem step falls there): the ordered
    writer of one worker finishes it."""
    args = ["images", slow_photos, "--image-format", "png", "--num-shards", "24", "--quiet"]
    reference = tmp_path / "reference"
    assert cli.convert(*args, "--out", reference, "--workers", "1").exit_code == 0
    expected = files(reference)
    out = tmp_path / "out"
    run = subprocess.Popen([sys.executable, str(HERE / "whole_counted.py"), *map(str, args), "--out", str(out),
                            "--workers", "8"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    journal = work_dir(out) / "journal"
    while run.poll() is None and not (journal.exists() and '"shard"' in journal.read_text()):
        time.sleep(0.002)
    run.kill()
    assert run.wait() == -signal.SIGKILL  # (it had not finished)
    result = cli.convert(*args, "--out", out, "--workers", "1", "--resume", "--json")
    assert result.exit_code == 0, result.output
    assert 0 < json.loads(result.output)["resumed"]["kept_shards"] < 24
    assert files(out) == expected


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
