"""The light install: everything local runs without TensorFlow; what needs it says which extra.

TensorFlow is made absent for real in a child process: a package named
`tensorflow` that raises ImportError shadows the installed one on PYTHONPATH, so
any import of it, from anywhere in the code, fails as on a light install. (CI
also builds a genuine light venv: see .ci/run.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write_cifar, write_mnist
from PIL import Image

SCRIPTS = Path(sys.executable).parent
EXTRA_HINT = "needs TensorFlow: pip install 'tfr-convert[tf]'"


@pytest.fixture
def no_tensorflow(tmp_path) -> dict[str, str]:
    """An environment in which `import tensorflow` fails."""
    fake = tmp_path / "no-tf" / "tensorflow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named tensorflow (light install)')\n")
    return {**os.environ, "PYTHONPATH": str(fake.parent)}


def run(env: dict[str, str], command: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPTS / command), *map(str, args)], capture_output=True, text=True, env=env, timeout=300
    )


def test_every_converter_and_inspect_mode_runs_without_tensorflow(no_tensorflow, tmp_path):
    write_mnist(tmp_path / "mnist")
    cifar = write_cifar(tmp_path / "cifar")["path"]
    images = tmp_path / "images"
    for label in ("cat", "dog"):
        (images / label).mkdir(parents=True)
        for i in range(3):
            Image.new("RGB", (8, 8), (i * 40, 0, 0)).save(images / label / f"{i}.png")
    for converter, src, extra in (("mnist", tmp_path / "mnist", []), ("cifar", cifar, ["--image-format", "png"]),
                                  ("images", images, ["--format", "tfrecord", "--compression", "gzip"])):  # fmt: skip
        out = tmp_path / "out" / converter
        result = run(no_tensorflow, "tfr-convert", converter, src, "--out", out, *extra)
        assert result.returncode == 0, (converter, result.stderr)
        for mode in ([], ["--count"], ["--verify"], ["--stats"], ["--grid", tmp_path / f"{converter}.png"]):
            inspected = run(no_tensorflow, "tfr-inspect", out, *mode, "--json")
            assert inspected.returncode == 0, (converter, mode, inspected.stderr)
            json.loads(inspected.stdout)
    indexed = run(no_tensorflow, "tfr-inspect", tmp_path / "out" / "mnist", "--write-index")
    assert indexed.returncode == 0, indexed.stderr


def test_what_needs_tensorflow_says_which_extra_in_one_line(no_tensorflow, tmp_path):
    write_mnist(tmp_path / "mnist")
    remote_out = run(no_tensorflow, "tfr-convert", "mnist", tmp_path / "mnist", "--out", "ram://x/mnist")
    remote_in = run(no_tensorflow, "tfr-inspect", "gs://some-bucket/data/*.tfrecord")
    for result in (remote_out, remote_in):
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [
            f"error: a remote path (gs://, s3://, hdfs://, ram://...) {EXTRA_HINT}"
        ]
    out = tmp_path / "local"
    assert run(no_tensorflow, "tfr-convert", "mnist", tmp_path / "mnist", "--out", out).returncode == 0
    load = subprocess.run(
        [sys.executable, "-c", f"import tfr_convert; tfr_convert.load({str(out)!r}, 'train')"],
        capture_output=True, text=True, env=no_tensorflow, timeout=120,
    )  # fmt: skip
    assert load.returncode == 1
    assert load.stderr.strip().splitlines()[-1] == f"tfr_convert.errors.MissingExtra: tfr_convert.load() {EXTRA_HINT}"


def test_inspect_of_a_ram_dataset_reports_what_a_local_copy_does(cli, tmp_path):
    import tensorflow as tf

    write_mnist(tmp_path / "mnist")
    remote, local = "ram://inspected/mnist", tmp_path / "copy" / "mnist"
    assert cli.convert("mnist", tmp_path / "mnist", "--out", remote, "--num-shards", "2").exit_code == 0
    local.mkdir(parents=True)
    for name in tf.io.gfile.listdir(remote):
        tf.io.gfile.copy(f"{remote}/{name}", str(local / name))
    for mode in ([], ["--count"], ["--verify"], ["--stats"]):
        from_ram = cli.inspect(remote, *mode, "--json")
        from_disk = cli.inspect(local, *mode, "--json")
        assert from_ram.exit_code == from_disk.exit_code == 0, (mode, from_ram.stderr)
        assert from_ram.stdout == from_disk.stdout.replace(str(local), remote), mode
    glob = cli.inspect(f"{remote}/mnist-train*", "--count", "--json")
    assert [f["path"] for f in json.loads(glob.stdout)["files"]] == [
        f"{remote}/mnist-train.tfrecord-0000{i}-of-00002" for i in range(2)
    ]
    assert cli.inspect(remote, "--write-index").exit_code == 2
