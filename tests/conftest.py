"""Shared fixtures: tiny synthetic inputs built in tmp_path, and a CLI runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write_mnist

from tfr_convert.cli.convert import convert
from tfr_convert.cli.export import export
from tfr_convert.cli.inspect import inspect

# Set before any test module imports TensorFlow: keeps its log noise out of test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture
def mnist_src(tmp_path: Path):
    """(source dir, arrays) of a small gzipped MNIST-format dataset."""
    src = tmp_path / "src"
    return src, write_mnist(src)


@pytest.fixture
def no_tensorflow(tmp_path) -> dict[str, str]:
    """An environment in which `import tensorflow` fails, as on a light install: a package of
    that name that raises ImportError shadows the installed one on PYTHONPATH."""
    fake = tmp_path / "no-tf" / "tensorflow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named tensorflow (light install)')\n")
    return {**os.environ, "PYTHONPATH": str(fake.parent)}


class Cli:
    def __init__(self) -> None:
        self.runner = CliRunner()

    def convert(self, *args: str):
        return self.runner.invoke(convert, [str(a) for a in args], catch_exceptions=False)

    def inspect(self, *args: str):
        return self.runner.invoke(inspect, [str(a) for a in args], catch_exceptions=False)

    def export(self, *args: str):
        return self.runner.invoke(export, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def cli() -> Cli:
    return Cli()


class Bucket:
    """A new, empty bucket on one of the test servers: `url` (s3://name, gs://name),
    `fs` (an fsspec filesystem for it, for setting up and looking), `env` (what a
    subprocess needs to reach it)."""

    def __init__(self, scheme: str, server) -> None:
        self.name = server.bucket()
        self.url = f"{scheme}://{self.name}"
        self.fs = server.filesystem()
        self.env = {**os.environ, **server.env}


@pytest.fixture(scope="session")
def s3_server():
    pytest.importorskip("s3fs", reason="the [s3] extra is not installed")
    from object_stores import SeaweedS3

    if SeaweedS3.shared is not None:  # one for many sessions, started by their parent (scripts/mutants.py)
        yield SeaweedS3.shared
        return
    server = SeaweedS3()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gcs_server():
    # before gcsfs is imported: its experimental layer speaks gRPC, which the emulator does not
    os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    pytest.importorskip("gcsfs", reason="the [gcs] extra is not installed")
    from object_stores import FakeGcs

    server = FakeGcs()
    yield server
    server.stop()


@pytest.fixture
def s3(s3_server, monkeypatch) -> Bucket:
    """A fresh bucket on the local S3 server, reachable from this process and its children.

    Deleted afterwards: SeaweedFS gives each bucket a collection of its own and grows
    several volumes for it, out of a count it derives from the free disk, so a session
    that kept every bucket runs out of volumes after a few dozen tests (PutObject then
    fails with InternalError)."""
    for key, value in s3_server.env.items():
        monkeypatch.setenv(key, value)
    bucket = Bucket("s3", s3_server)
    yield bucket
    s3_server.delete(bucket.name)


@pytest.fixture
def gcs(gcs_server, monkeypatch) -> Bucket:
    """A fresh bucket on the local GCS server, reachable from this process and its children."""
    for key, value in gcs_server.env.items():
        monkeypatch.setenv(key, value)
    return Bucket("gs", gcs_server)
