"""The light install: everything local runs without TensorFlow; what needs it says which extra.

TensorFlow is made absent for real in a child process: a package named
`tensorflow` that raises ImportError shadows the installed one on PYTHONPATH, so
any import of it, from anywhere in the code, fails as on a light install. (CI
also builds a genuine light venv: see .ci/run.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import REPO, hint, write_cifar, write_mnist
from PIL import Image

SCRIPTS = Path(sys.executable).parent
EXTRA_HINT = f"needs TensorFlow: {hint('tf')}"


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


def test_load_without_tensorflow_says_which_extra_in_one_line(no_tensorflow, tmp_path):
    write_mnist(tmp_path / "mnist")
    out = tmp_path / "local"
    assert run(no_tensorflow, "tfr-convert", "mnist", tmp_path / "mnist", "--out", out).returncode == 0
    load = subprocess.run(
        [sys.executable, "-c", f"import tfr_convert; tfr_convert.load({str(out)!r}, 'train')"],
        capture_output=True, text=True, env=no_tensorflow, timeout=120,
    )  # fmt: skip
    assert load.returncode == 1
    assert load.stderr.strip().splitlines()[-1] == f"tfr_convert.errors.MissingExtra: tfr_convert.load() {EXTRA_HINT}"


def test_s3_without_tensorflow_gives_the_local_bytes_and_verify_names_a_damaged_object(no_tensorflow, s3, tmp_path):
    """The acceptance line of remote storage: no TensorFlow, a real S3 server, mnist and an
    image folder with a CSV read from it and written to it, byte for byte the local run."""
    from object_stores import download_tree, upload_tree

    env = {**s3.env, "PYTHONPATH": no_tensorflow["PYTHONPATH"]}
    write_mnist(tmp_path / "mnist")
    images = tmp_path / "pets" / "images"  # the default name, "pets", walks up past "images" here and remotely
    rows = ["path,label"]
    for label in ("cat", "dog"):
        (images / label).mkdir(parents=True)
        for i in range(3):
            Image.new("RGB", (8, 8), (i * 40, 0, 0)).save(images / label / f"{i}.png")
            rows.append(f"{label}/{i}.png,{label}")
    (images / "labels.csv").write_text("\n".join(rows) + "\n")
    upload_tree(s3.fs, tmp_path / "mnist", f"{s3.name}/mnist-src")
    upload_tree(s3.fs, images, f"{s3.name}/pets/images")
    jobs = {"mnist": (["mnist", tmp_path / "mnist"], ["mnist", f"{s3.url}/mnist-src"]),
            "images": (["images", images, "--labels", images / "labels.csv", "--label-column", "label"],
                       ["images", f"{s3.url}/pets/images", "--labels", f"{s3.url}/pets/images/labels.csv", "--label-column", "label"])}  # fmt: skip
    for name, (local_args, remote_args) in jobs.items():
        assert run(env, "tfr-convert", *local_args, "--out", tmp_path / "out" / name, "--quiet").returncode == 0
        remote = run(env, "tfr-convert", *remote_args, "--out", f"{s3.url}/out/{name}", "--quiet")
        assert remote.returncode == 0, remote.stderr
        written = download_tree(s3.fs, f"{s3.name}/out/{name}")
        assert written == {p.name: p.read_bytes() for p in (tmp_path / "out" / name).iterdir()}, name
    shard = next(k for k in s3.fs.find(f"{s3.name}/out/mnist") if "train.tfrecord" in k)
    data = bytearray(s3.fs.cat_file(shard))
    data[-10] ^= 1  # the last record's payload
    s3.fs.pipe_file(shard, bytes(data))
    verify = run(env, "tfr-inspect", f"{s3.url}/out/mnist", "--verify")
    assert verify.returncode == 1 and f"FAIL  s3://{shard}: record " in verify.stdout, verify.stdout
    assert run(env, "python", "-c", "import tensorflow").returncode != 0


def test_a_missing_extra_names_the_checkout_this_package_was_installed_from(tmp_path):
    """Installed from a folder (not an index), the hint installs the extra from that same
    folder: `pip install 'tfr-convert[s3]'` would find nothing for someone holding a checkout."""
    import shutil

    checkout, target = tmp_path / "checkout", tmp_path / "site"  # a copy: pip builds inside the folder
    shutil.copytree(REPO / "src", checkout / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, checkout / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(checkout)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    said = subprocess.run(
        [sys.executable, "-c", "from tfr_convert.optional import extra_hint; print(extra_hint('s3'))"],
        capture_output=True, text=True, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}, timeout=60,
    )  # fmt: skip
    assert said.stdout.strip() == f"pip install '{checkout}[s3]'", said.stderr
