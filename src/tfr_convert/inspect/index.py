"""Index files for NVIDIA DALI and the PyTorch `tfrecord` package.

Text, one line per record: the byte offset of the record's start and the
length of the whole framed record (header, payload and footer), separated by a
space. Offsets are file offsets, so only uncompressed files can be indexed.
"""

from __future__ import annotations

from typing import Any

from .. import containers
from ..storage import fs
from .paths import resolve


def write_indexes(paths: list[str]) -> dict[str, Any]:
    written = []
    for path in resolve(paths).files:
        data = containers.of_file(path).index_lines(path)
        fs.put_bytes(path + ".index", data)
        written.append({"path": path, "index": path + ".index", "records": data.count(b"\n")})
    return {"mode": "index", "indexes": written}
