"""Files and folders, local or remote.

A path with a scheme (`gs://`, `s3://`, `hdfs://`, TensorFlow's in-memory `ram://`)
goes through `tf.io.gfile`; any other path through `os` and `open`. TensorFlow
is imported only when a remote path is met, so local runs never load it (the
design's rule: it costs seconds and half a gigabyte).
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
from typing import IO, Any

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def is_remote(path: str) -> bool:
    return bool(_SCHEME.match(str(path)))


def _gfile() -> Any:
    import tensorflow as tf  # only ever for remote paths

    return tf.io.gfile


def join(path: str, *parts: str) -> str:
    return posixpath.join(path, *parts) if is_remote(path) else os.path.join(path, *parts)


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/")) if is_remote(path) else os.path.basename(path)


def open_file(path: str, mode: str = "rb") -> IO:
    if is_remote(path):
        f = _gfile().GFile(path, mode)
        return _BytesWriter(f) if "w" in mode else f  # type: ignore[return-value]
    return open(path, mode)


class _BytesWriter:
    """A GFile for writing that takes any buffer (GFile.write wants bytes or str)."""

    def __init__(self, f: Any) -> None:
        self._f = f

    def write(self, data: Any) -> int:
        self._f.write(data if isinstance(data, bytes) else bytes(data))
        return memoryview(data).nbytes

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> _BytesWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def exists(path: str) -> bool:
    return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path: str) -> bool:
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def listdir(path: str) -> list[str]:
    if is_remote(path):
        return [entry.rstrip("/") for entry in _gfile().listdir(path)]
    return os.listdir(path)


def makedirs(path: str) -> None:
    if is_remote(path):
        _gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def getsize(path: str) -> int:
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def rename(src: str, dst: str) -> None:
    """Move src to dst, replacing dst (atomic on local filesystems)."""
    if is_remote(src):
        _gfile().rename(src, dst, overwrite=True)
    else:
        os.replace(src, dst)


def remove(path: str) -> None:
    if is_remote(path):
        _gfile().remove(path)
    else:
        os.remove(path)


def rmtree(path: str) -> None:
    if is_remote(path):
        _gfile().rmtree(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def stage(path: str) -> str:
    """A local path for a source: a remote file or folder is copied through
    tf.io.gfile into a temporary folder (removed when the process exits); a
    local path is returned as it is. Converters then read local files only."""
    if not is_remote(path):
        return path
    import atexit
    import tempfile

    gfile = _gfile()
    if not gfile.exists(path):
        from .errors import SourceError

        raise SourceError(f"{path}: does not exist")
    local_root = tempfile.mkdtemp(prefix="tfr-convert-src-")
    atexit.register(shutil.rmtree, local_root, True)
    target = os.path.join(local_root, basename(path) or "src")
    if not gfile.isdir(path):
        gfile.copy(path, target)
        return target
    top = path.rstrip("/")
    for directory, _, files in gfile.walk(top):
        rel = directory.rstrip("/")[len(top) :].lstrip("/")
        os.makedirs(os.path.join(target, rel), exist_ok=True)
        for name in files:
            gfile.copy(posixpath.join(directory, name), os.path.join(target, rel, name), overwrite=True)
    return target
