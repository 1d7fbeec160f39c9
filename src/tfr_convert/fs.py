"""Files and folders, local or remote.

A path with a scheme (`gs://`, `s3://`, `hdfs://`, TensorFlow's in-memory `ram://`)
goes through `tf.io.gfile`; any other path through `os` and `open`. TensorFlow
is imported only when a remote path is met, so local runs never load it (the
design's rule: it costs seconds and half a gigabyte).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import re
import shutil
from collections.abc import Iterator
from typing import IO, Any

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def is_remote(path: str) -> bool:
    return bool(_SCHEME.match(str(path)))


def _gfile() -> Any:
    """tf.io.gfile, its errors raised as OSError (see _errors_as_oserror)."""
    from .optional import tensorflow  # only ever for remote paths

    return _Translated(tensorflow("a remote path (gs://, s3://, hdfs://, ram://...)").io.gfile)


class _Translated:
    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        function = getattr(self._module, name)

        def call(path: str, *args: Any, **kwargs: Any) -> Any:
            with _errors_as_oserror(path):
                return function(path, *args, **kwargs)

        return call


@contextlib.contextmanager
def _errors_as_oserror(path: str) -> Iterator[None]:
    """TensorFlow's file errors (tf.errors.OpError) as the OSError local files raise,
    so that one `except OSError` serves both kinds of path."""
    try:
        yield
    except OSError:
        raise
    except Exception as e:
        import tensorflow as tf

        if isinstance(e, tf.errors.OpError):
            code = errno.ENOENT if isinstance(e, tf.errors.NotFoundError) else errno.EIO
            raise OSError(code, e.message or type(e).__name__, path) from None
        raise


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """An OSError raised inside that names no file (a write's ENOSPC names none) names `path`."""
    try:
        yield
    except OSError as e:
        if not e.filename:
            e.filename = path
        raise


_HAS_PROC_FD = os.path.isdir("/proc/self/fd")  # Linux: an open file's real path, links resolved


def read_bytes(path: str, inside: str | None = None) -> bytes:
    """The whole file. A local one must be a regular file (a FIFO would block, a
    device never end) and, given `inside` (a real path), must really be under it
    when opened, whatever was swapped in since it was listed."""
    if is_remote(path):
        with _errors_as_oserror(path):
            with _gfile().GFile(path, "rb") as f:
                return f.read()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        stat = os.fstat(fd)
        check_regular(path, stat.st_mode)
        if inside is not None and _HAS_PROC_FD:
            opened = os.readlink(f"/proc/self/fd/{fd}")  # what was opened, every link resolved
            # both are absolute and normalized: a prefix test says what commonpath would
            if opened != inside and not opened.startswith(inside.rstrip(os.sep) + os.sep):
                from .errors import SourceError

                raise SourceError(f"now resolves to {opened}, outside {inside} (changed after listing)").locate(path)
        # Straight from the descriptor (no file object): one read takes the whole file
        # as its size says, the next sees the end, or what it grew by since.
        parts = [os.read(fd, stat.st_size + 1)]
        while parts[-1]:
            parts.append(os.read(fd, 1 << 20))
        return parts[0] if len(parts) == 2 else b"".join(parts)
    finally:
        os.close(fd)


def check_regular(path: str, mode: int) -> None:
    """SourceError unless `mode` (an os.stat st_mode) is a regular file's."""
    import stat

    if not stat.S_ISREG(mode):
        from .errors import SourceError

        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else ("a socket" if stat.S_ISSOCK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a file")
        )
        raise SourceError(f"{kind}, not a regular file").locate(path)


def join(path: str, *parts: str) -> str:
    return posixpath.join(path, *parts) if is_remote(path) else os.path.join(path, *parts)


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/")) if is_remote(path) else os.path.basename(path)


def open_file(path: str, mode: str = "rb") -> IO:
    """A binary file; remote ones are written through a GFile (read them with read_bytes)."""
    if is_remote(path):
        if "w" not in mode:
            raise ValueError("remote files are read with read_bytes")
        with _errors_as_oserror(path):
            return _GFileWriter(_gfile().GFile(path, mode), path)  # type: ignore[return-value]
    return open(path, mode)


class _GFileWriter:
    """A GFile for writing that takes any buffer (GFile.write wants bytes) and
    raises OSError like a local file."""

    def __init__(self, f: Any, path: str) -> None:
        self._f, self._path = f, path

    def write(self, data: Any) -> int:
        with _errors_as_oserror(self._path):
            self._f.write(data if isinstance(data, bytes) else bytes(data))
        return memoryview(data).nbytes

    def flush(self) -> None:
        with _errors_as_oserror(self._path):
            self._f.flush()

    def close(self) -> None:
        with _errors_as_oserror(self._path):
            self._f.close()

    def __enter__(self) -> _GFileWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def exists(path: str) -> bool:
    return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path: str) -> bool:
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def isfile(path: str) -> bool:
    if is_remote(path):
        return _gfile().exists(path) and not _gfile().isdir(path)
    return os.path.isfile(path)


def walk(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk for both kinds of path; pruning `dirs` in place works for both."""
    if not is_remote(top):
        yield from os.walk(top)
        return
    gfile = _gfile()
    pending = [top.rstrip("/")]
    while pending:
        directory = pending.pop()
        entries = gfile.listdir(directory)
        dirs = sorted(e.rstrip("/") for e in entries if e.endswith("/") or gfile.isdir(posixpath.join(directory, e)))
        files = sorted(e for e in entries if e.rstrip("/") not in dirs)
        yield directory, dirs, files
        pending.extend(posixpath.join(directory, d) for d in reversed(dirs))


def listdir(path: str) -> list[str]:
    if is_remote(path):
        return [entry.rstrip("/") for entry in _gfile().listdir(path)]
    return os.listdir(path)


def glob(pattern: str) -> list[str]:
    if is_remote(pattern):
        return list(_gfile().glob(pattern))
    import glob as local_glob

    return local_glob.glob(pattern)


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
