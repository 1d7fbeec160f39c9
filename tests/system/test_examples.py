"""The examples/ scripts, run as users run them, on small synthetic data made here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO, write_cifar, write_idx_files
from PIL import Image

EXAMPLES = REPO / "examples"
ENV = {
    **os.environ,
    "PATH": f"{sysconfig.get_path('scripts')}{os.pathsep}{os.environ['PATH']}",
    "PYTHON": sys.executable,
    "TF_CPP_MIN_LOG_LEVEL": "2",
}


def run(*cmd, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=ENV, timeout=600)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def learnable_mnist(directory: Path, shuffle_labels: bool) -> None:
    """Ten class templates plus noise: the labels follow from the pixels (unless shuffled)."""
    rng = np.random.default_rng(5)
    templates = rng.integers(0, 256, size=(10, 28, 28)).astype(np.float32)
    arrays = {}
    for split, n in (("train", 1500), ("test", 500)):
        labels = rng.integers(0, 10, size=n)
        images = np.clip(0.5 * templates[labels] + rng.normal(0, 60, size=(n, 28, 28)), 0, 255).astype(np.uint8)
        if shuffle_labels:
            labels = rng.permutation(labels)
        arrays[split] = (images, labels.astype(np.uint8))
    write_idx_files(directory, arrays)


def accuracy(output: str) -> float:
    return float(re.search(r"test accuracy: ([0-9.]+)", output)[1])


def test_mnist_softmax_learns_and_shuffled_labels_do_not(tmp_path):
    results = {}
    for shuffled in (False, True):
        src, out = tmp_path / f"src{shuffled}", tmp_path / f"out{shuffled}"
        learnable_mnist(src, shuffled)
        run("tfr-convert", "mnist", src, "--out", out, "--quiet", "--num-shards", 3)
        results[shuffled] = accuracy(
            run(sys.executable, EXAMPLES / "train_mnist_softmax.py", out, "--epochs", 3).stdout
        )
    assert results[False] >= 0.9  # images and labels stayed paired through convert and load
    assert results[True] <= 0.25  # chance is 0.1: nothing to learn once the pairing is broken


def test_cifar_cnn_trains_on_cifar10_and_cifar100(tmp_path):
    for variant in ("cifar10", "cifar100"):
        src = write_cifar(tmp_path / variant, variant, per_batch=20)
        out = tmp_path / f"out-{variant}"
        run("tfr-convert", "cifar", src["path"], "--out", out, "--quiet")
        output = run(sys.executable, EXAMPLES / "train_cifar_cnn.py", out, "--epochs", 1).stdout
        assert 0.0 <= accuracy(output) <= 1.0


def test_faces_ages_script(tmp_path):
    faces = tmp_path / "faces"
    faces.mkdir()
    rng = np.random.default_rng(0)
    ages = []
    for i in range(10):
        Image.fromarray(rng.integers(0, 256, (60 + i, 50, 3), dtype=np.uint8)).save(faces / f"{i:02d}.jpg")
        ages.append(20 + 3 * i)
    csv = tmp_path / "age.csv"
    csv.write_text("".join(f"{a}\n" for a in ages))
    output = run("bash", EXAMPLES / "faces_ages.sh", faces, csv, tmp_path / "out").stdout
    assert "verified 2 files, 10 records: no problems" in output
    assert re.search(r"train: images \(8, 48, 48, 1\) uint8, mean age [0-9.]+", output)
    assert re.search(r"test: images \(2, 48, 48, 1\) uint8, mean age [0-9.]+", output)


def test_ci_check_passes_clean_output_and_fails_the_job_on_damage(tmp_path):
    out = tmp_path / "out"
    sample = EXAMPLES / "mnist-sample"
    ok = run("bash", EXAMPLES / "ci_check.sh", out, "mnist", sample, "--num-shards", 2)
    assert ok.stdout.strip() == "ok: 600 records in 4 files, 0 problems"
    shard = out / "mnist-test.tfrecord-00001-of-00002"
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))
    failed = run("bash", EXAMPLES / "ci_check.sh", out, check=False)
    assert failed.returncode == 1
    assert f"::error::{shard}: record 0 at byte 0: data_crc: " in failed.stdout
    assert failed.stdout.strip().endswith("FAILED: 600 records in 4 files, 2 problems")  # the CRC and the sha256


def test_scripts_find_the_commands_without_an_activated_venv_or_say_how(tmp_path):
    if not (EXAMPLES.parent / ".venv" / "bin" / "tfr-convert").exists():
        pytest.skip("needs the Quickstart's .venv in the repository")
    bare = {**ENV, "PATH": "/usr/bin:/bin"}  # as right after the Quickstart: nothing activated
    out = tmp_path / "out"
    found = subprocess.run(["bash", EXAMPLES / "ci_check.sh", out, "mnist", EXAMPLES / "mnist-sample"],
                           capture_output=True, text=True, env=bare, timeout=300)  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "ok: 600 records in 2 files, 0 problems"
    elsewhere = tmp_path / "copy" / "examples"  # no .venv beside these copies
    elsewhere.mkdir(parents=True)
    for script in ("ci_check.sh", "find_tools.sh"):
        (elsewhere / script).write_text((EXAMPLES / script).read_text())
    lost = subprocess.run(["bash", elsewhere / "ci_check.sh", out], capture_output=True, text=True, env=bare)
    assert lost.returncode == 127
    assert lost.stderr.strip() == (
        f"{elsewhere / 'ci_check.sh'}: tfr-convert not found: activate the venv (source .venv/bin/activate) "
        "or pip install tfr-convert"
    )


def test_ci_check_on_a_missing_output_shows_the_cause_not_a_traceback(tmp_path):
    result = run("bash", EXAMPLES / "ci_check.sh", tmp_path / "nothing-here", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: {tmp_path / 'nothing-here'}: no such file, directory or glob match"
