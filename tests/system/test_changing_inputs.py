"""Inputs that are not regular files or change under a run, a full disk, a file
truncated while it is verified: refused or reported with one line, never a hang,
a crash or a dataset read from outside IMAGE_DIR."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import write_mnist
from PIL import Image

from tfr_convert.converters.images import ImagesConverter, ImagesOptions
from tfr_convert.engine.local import run
from tfr_convert.engine.run_options import RunOptions
from tfr_convert.errors import SourceError


def _images(root: Path, n: int = 4, size: int = 8) -> Path:
    rng = np.random.default_rng(0)
    for c in ("a", "b"):
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(root / c / f"{i}.png")
    return root


def test_a_fifo_in_the_image_folder_is_refused_while_listing(cli, tmp_path):
    root = _images(tmp_path / "img")
    os.mkfifo(root / "a" / "stream.png")
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert result.output == f"error: {root / 'a' / 'stream.png'}: a FIFO, not a regular file\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("labels", ["fifo", "/dev/zero"])
def test_labels_that_are_a_fifo_or_a_device_are_refused_at_once(cli, tmp_path, labels):
    root = _images(tmp_path / "img")
    if labels == "fifo":
        labels = str(tmp_path / "labels.csv")
        os.mkfifo(labels)
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "tfr-convert"), "images", str(root), "--labels", labels,
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "not a regular file" in proc.stderr and labels in proc.stderr


def test_an_image_swapped_for_a_link_outside_after_listing_is_refused(tmp_path):
    root = _images(tmp_path / "img")
    outside = _images(tmp_path / "elsewhere")
    converter = ImagesConverter(str(root), ImagesOptions(image_format="keep"))  # lists and checks the files
    victim = root / "b" / "1.png"
    victim.unlink()
    victim.symlink_to(outside / "a" / "0.png")
    with pytest.raises(SourceError, match=r"b/1\.png.*now resolves to .*elsewhere/a/0\.png, outside"):
        run(converter, RunOptions(out=str(tmp_path / "out")))
    assert not (tmp_path / "out").exists()


def test_verify_of_a_file_truncated_while_it_is_read_reports_it(tmp_path):
    """In a child process: a SIGBUS there (touching a mapped page past the new end) fails this test."""
    code = f"""
import os
from tfr_convert.containers.framing import frame
from tfr_convert.containers.scan import scan_records
from tfr_convert.containers.base import Problem
path = {str(tmp_path / "big.tfrecord")!r}
record = frame(bytes(range(256)) * 400)
with open(path, "wb") as f:
    for _ in range(2000):
        f.write(record)
seen = []
for i, found in enumerate(scan_records(path)):
    seen.append(found)
    if i == 0:
        os.truncate(path, 3 * len(record) + 100)  # another process cuts it short
problems = [p for p in seen if isinstance(p, Problem)]
print(len(seen) - len(problems), problems[0].kind if problems else None)
print(problems[0].message if problems else "")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    counts, message = proc.stdout.split("\n", 1)
    records, kind = counts.split()
    assert kind in ("truncated_payload", "length_past_eof", "partial_header")
    assert int(records) < 2000
    # its offset may lie past the new end (read before the cut): the message says why
    size = 2000 * (256 * 400 + 16)
    assert (
        f"(the file changed size while it was read: {size} bytes when opened, {3 * (256 * 400 + 16) + 100} now)"
        in message
    )


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (needs the right to mount, as root in a container often has)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_names_the_file_and_keeps_the_old_dataset(cli, small_disk, tmp_path):
    small, big = tmp_path / "small", tmp_path / "big"
    write_mnist(small, n_train=20, n_test=5)
    write_mnist(big, n_train=2000, n_test=100)  # about 1.7 MB of shards: more than the disk holds
    out = small_disk / "out"
    assert cli.convert("mnist", small, "--out", out).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for extra in ([], ["--overwrite"]):
        fresh = small_disk / "fresh" if not extra else out
        result = cli.convert("mnist", big, "--out", fresh, *extra)
        assert result.exit_code == 1
        assert "No space left on device" in result.output
        assert f"{small_disk}/.{fresh.name}.tfr-convert/new/" in result.output  # the file being written
        assert not (small_disk / "fresh").exists()
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
        assert sorted(os.listdir(small_disk)) == ["out"]  # the failed run's work is gone
    assert cli.inspect(out, "--verify").exit_code == 0
