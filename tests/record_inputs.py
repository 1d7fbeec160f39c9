"""Records to convert (written by TensorFlow's own writer) and the records of a converted directory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tfr_convert.containers import of_file
from tfr_convert.dataset.wire.example import serialize


def payloads(directory: Path, split: str | None = None) -> list[bytes]:
    """Every record of a directory's shards (of one split), shard after shard."""
    found = []
    for path in sorted(directory.iterdir()):
        if (".tfrecord-" in path.name or ".array_record-" in path.name) and (
            split is None or f"-{split}." in path.name
        ):
            found += [r.data for r in of_file(str(path)).records(str(path))]
    return found


def write_tfrecord(path: Path, records: list[bytes], compression: str | None = None) -> Path:
    """Records framed as tf.io.TFRecordWriter frames them (TensorFlow writes them)."""
    tf = pytest.importorskip("tensorflow")
    options = tf.io.TFRecordOptions(compression_type=compression.upper()) if compression else None
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for record in records:
            writer.write(record)
    return path


def examples(n: int, start: int = 0) -> list[bytes]:
    return [
        serialize(
            {
                "id": i,
                "score": [i / 2, i / 4, 1.0],
                "name": f"n{i}".encode(),
                "tokens": np.arange(i % 4, dtype=np.int64),
            }
        )
        for i in range(start, start + n)
    ]
