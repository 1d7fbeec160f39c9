"""Index files for NVIDIA DALI and the PyTorch `tfrecord` package.

Text, one line per record: the byte offset of the record's start and the
length of the whole framed record (header, payload and footer), separated by a
space. Offsets are file offsets, so only uncompressed files can be indexed.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import SourceError
from ..tfrecord import Problem, scan_records
from .paths import compression_of, resolve


def index_lines(path: str) -> bytes:
    """The index of one uncompressed TFRecord file (framing and length CRCs checked)."""
    if compression_of(path) != "none":
        raise SourceError(
            f"{path}: compressed files cannot be indexed (offsets would point into the compressed stream)"
        )
    starts = []
    for item in scan_records(path, "none", payload="skip"):
        if isinstance(item, Problem):
            raise SourceError(f"{path}: record {item.index} at byte offset {item.offset}: {item.message}")
        starts.append(item.offset)
    ends = [*starts[1:], os.path.getsize(path)][: len(starts)]  # a record ends where the next one starts
    return "".join(f"{start} {end - start}\n" for start, end in zip(starts, ends, strict=True)).encode()


def write_indexes(paths: list[str]) -> dict[str, Any]:
    written = []
    for path in resolve(paths).files:
        data = index_lines(path)
        with open(path + ".index", "wb") as f:
            f.write(data)
        written.append({"path": path, "index": path + ".index", "records": data.count(b"\n")})
    return {"mode": "index", "indexes": written}
