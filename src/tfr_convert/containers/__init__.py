"""Containers: how serialized examples sit in a file, beneath the shard writer.

    tfrecord.py      TFRecord (framing.py: the record format; scan.py: the checking
                     reader; compression.py: gzip / zlib; crc.py: masked CRC32C)
    array_record.py  ArrayRecord (Riegeli with an index), for random access

`get(name)` is the container of a `--format`; `of_file(path)` is the container
a file's first bytes say it is (TFRecord when nothing else claims it).
"""

from __future__ import annotations

import importlib

from ..errors import SourceError
from .base import MAX_RECORD_BYTES, Container, Loss, Opener, Problem, Record, ShardFileWriter
from .crc import crc32c

# --format name -> (module here, class): each container owns its writer, its checking
# reader and its tf.data reader, so a new one is a module and a line here; imported
# when asked for (ArrayRecord's library is an extra).
_REGISTRY = {
    "tfrecord": ("tfrecord", "TFRecordContainer"),
    "array_record": ("array_record", "ArrayRecordContainer"),
}
FORMATS = tuple(_REGISTRY)


def get(name: str) -> Container:
    if name not in _REGISTRY:
        raise ValueError(f"unknown format {name!r}; expected one of {FORMATS}")
    module, cls = _REGISTRY[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)()


def of_file(path: str) -> Container:
    """The container of a file, from its first bytes; SourceError if none is."""
    from ..storage import fs

    with fs.open_input(path) as f:
        head = f.read(16)
        size = f.seek(0, 2)
    for name in reversed(FORMATS):  # the specific signatures first, TFRecord last
        container = get(name)
        if container.sniff(head, size):
            return container
    hint = " (a dataset's metadata: give the dataset directory, not DIR/*)" if path.endswith((".json", ".txt")) else ""
    raise SourceError(f"{path}: not a TFRecord or ArrayRecord file (starts with {head[:8]!r}){hint}")


__all__ = [
    "FORMATS",
    "MAX_RECORD_BYTES",
    "Container",
    "Loss",
    "Opener",
    "Problem",
    "Record",
    "ShardFileWriter",
    "crc32c",
    "get",
    "of_file",
]
