"""Helpers the tests import: synthetic inputs and what-was-left-behind checks."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from tfr_convert.converters.mnist import FILES, idx_bytes


def write_mnist(directory: Path, n_train: int = 40, n_test: int = 12, gz: bool = True, seed: int = 0,
                size: tuple[int, int] = (28, 28)) -> dict[str, tuple[np.ndarray, np.ndarray]]:  # fmt: skip
    """Random MNIST-format idx files; returns {split: (images, labels)}."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, size=(n, *size), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        arrays[split] = (images, labels)
        for what, array in (("images", images), ("labels", labels)):
            data = idx_bytes(array)
            name = FILES[split, what] + (".gz" if gz else "")
            (directory / name).write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return arrays


def final_files(directory: Path) -> list[str]:
    """Every entry of a directory (temporaries included), or [] if it is gone."""
    if not directory.exists():
        return []
    return sorted(p.name for p in directory.iterdir())
