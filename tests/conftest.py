"""Shared fixtures: tiny synthetic inputs built in tmp_path, and a CLI runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write_mnist

from tfr_convert.cli import convert, inspect

# Set before any test module imports TensorFlow: keeps its log noise out of test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture
def mnist_src(tmp_path: Path):
    """(source dir, arrays) of a small gzipped MNIST-format dataset."""
    src = tmp_path / "src"
    return src, write_mnist(src)


class Cli:
    def __init__(self) -> None:
        self.runner = CliRunner()

    def convert(self, *args: str):
        return self.runner.invoke(convert, [str(a) for a in args], catch_exceptions=False)

    def inspect(self, *args: str):
        return self.runner.invoke(inspect, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def cli() -> Cli:
    return Cli()
