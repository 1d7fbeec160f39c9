"""docs/plugins.md's plugin, built from the page's own code blocks (`<!-- file: NAME -->`),
installed into a temporary folder and run as `tfr-convert npy`: the arrays, labels and
splits TensorFlow Datasets reads back are the ones saved, and a wrong shape is one line
naming the file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from helpers import REPO

PAGE = REPO / "docs" / "plugins.md"
SCRIPTS = Path(sys.executable).parent


def page_files() -> dict[str, str]:
    return dict(re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", PAGE.read_text(), re.S))


def test_the_plugin_page_builds_a_plugin_whose_output_tfds_reads_back(tmp_path):
    import tensorflow_datasets as tfds

    files = page_files()
    assert set(files) == {"pyproject.toml", "tfr_npy.py"}
    package = tmp_path / "tfr-convert-npy"
    package.mkdir()
    for name, text in files.items():
        (package / name).write_text(text)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(site), str(package)], check=True, capture_output=True)  # fmt: skip
    rng = np.random.default_rng(0)
    saved = {}
    for name in ("cat", "dog"):
        (tmp_path / "arrays" / name).mkdir(parents=True)
        for i in range(10):
            saved[f"{name}/{i}.npy"] = array = rng.standard_normal((4, 3)).astype(np.float32)
            np.save(tmp_path / "arrays" / name / f"{i}.npy", array)
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = subprocess.run([str(SCRIPTS / "tfr-convert"), "npy", str(tmp_path / "arrays"), "--shape", "4,3",
                          "--split", "train=0.8,test=0.2", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr
    builder = tfds.builder_from_directory(str(tmp_path / "out"))
    assert builder.info.features["label"].names == ["cat", "dog"]
    read = {
        split: {e["path"].decode(): e for e in tfds.as_numpy(builder.as_dataset(split=split))}
        for split in ("train", "test")
    }
    assert {s: len(r) for s, r in read.items()} == {"train": 16, "test": 4}
    for examples in read.values():
        for path, example in examples.items():
            assert np.array_equal(example["array"], saved[path])
            assert example["label"] == ["cat", "dog"].index(path.split("/")[0])
    verify = subprocess.run([str(SCRIPTS / "tfr-inspect"), str(tmp_path / "out"), "--verify"], capture_output=True)
    assert verify.returncode == 0
    np.save(tmp_path / "arrays" / "dog" / "odd.npy", np.zeros((2, 2)))
    bad = subprocess.run([str(SCRIPTS / "tfr-convert"), "npy", str(tmp_path / "arrays"), "--shape", "4,3",
                          "--out", str(tmp_path / "bad")], capture_output=True, text=True, env=env)  # fmt: skip
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1].startswith("error: ") and "odd.npy" in bad.stderr
    assert "an array of shape (2, 2), not (4, 3)" in bad.stderr and not (tmp_path / "bad").exists()
