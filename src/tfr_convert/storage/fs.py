"""Files and folders, local or remote: one set of functions for both kinds of path.

A path with a scheme (`s3://`, `gs://`, `az://`, `hdfs://`, `memory://`...) is served by
remote.RemoteFiles (fsspec; stores.py picks the backend, its options and turns its errors
into OSError); any other path by local.LocalFiles (`os` and `open`). The two have the same
methods; `files_for` is the one place that tells the kinds of path apart. fsspec and its
backends are imported only when a remote path is met, so local runs never load them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from . import stores
from .local import LocalFiles, check_regular, naming
from .remote import READ_BLOCK, WRITE_BLOCK, RemoteFiles, with_remote_names

__all__ = [
    "READ_BLOCK",
    "WRITE_BLOCK",
    "check_regular",
    "files_for",
    "is_remote",
    "naming",
    "with_remote_names",
]

LOCAL = LocalFiles()
REMOTE = RemoteFiles()


def is_remote(path: str) -> bool:
    return stores.scheme(str(path)) is not None


def files_for(path: str) -> LocalFiles | RemoteFiles:
    """Which implementation serves `path`."""
    return REMOTE if is_remote(path) else LOCAL


# --- names ---


def join(path: str, *parts: str) -> str:
    return files_for(path).join(path, *parts)


def basename(path: str) -> str:
    return files_for(path).basename(path)


def dirname(path: str) -> str:
    return files_for(path).dirname(path)


def normpath(path: str) -> str:
    """os.path.normpath for both kinds of path (a remote one keeps its scheme's `//`)."""
    return files_for(path).normpath(path)


def within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies inside it (local paths compared with links
    resolved, remote ones as normalised names)."""
    return files_for(folder if is_remote(folder) else path).within(path, folder)


# --- reading ---


def read_bytes(path: str, inside: str | None = None) -> bytes:
    """The whole file. A local one must be a regular file (a FIFO would block, a
    device never end) and, given `inside` (a real path), must really be under it
    when opened, whatever was swapped in since it was listed."""
    return files_for(path).read_bytes(path, inside)


def open_input(path: str, buffering: int = -1, inside: str | None = None) -> IO[bytes]:
    """A file to read, seekable: a remote one is read in ranges (READ_BLOCK ahead), never
    copied whole; a local one must be a regular file, and given `inside` (a real path)
    really under it when opened, as read_bytes checks."""
    return files_for(path).open_input(path, buffering, inside)


def read_range(path: str, start: int, length: int) -> bytes:
    """`length` bytes of a file from `start` (one ranged request for a remote object)."""
    return files_for(path).read_range(path, start, length) if length else b""


def local_copy(path: str) -> str:
    """A local path for a source: a remote file or folder is downloaded into a temporary
    folder (removed when the process exits); a local path is returned as it is. For
    sources that are read whole anyway (MNIST, CIFAR, annotation files)."""
    return path if path is None else files_for(path).local_copy(path)


# --- writing ---


def open_file(path: str, mode: str = "wb") -> IO:
    """A binary file to write; a remote one is uploaded in parts as it fills, and appears
    whole, at once, when closed (an object store shows no partial object)."""
    if "w" not in mode:
        raise ValueError("open_file is for writing; read with open_input or read_bytes")
    return files_for(path).open_file(path, mode)


def put_bytes(path: str, data: bytes) -> None:
    """A whole file written in one step: a remote object in one request, a local file
    under a temporary name renamed onto `path`."""
    files_for(path).put_bytes(path, data)


def put_new(path: str, data: bytes) -> None:
    """A whole file written only where none is: FileExistsError if one is (a local file
    is created exclusively; a remote object with the store's conditional write)."""
    files_for(path).put_new(path, data)


def put_many(files: dict[str, bytes]) -> None:
    """Files written, concurrently where the store can; each appears whole."""
    if files:
        files_for(next(iter(files))).put_many(files)


def makedirs(path: str) -> None:
    files_for(path).makedirs(path)


def rename(src: str, dst: str) -> None:
    """Move src to dst, replacing dst (atomic on local filesystems; a copy, then the
    removal of src, on object stores)."""
    files_for(src).rename(src, dst)


def copy_many(pairs: list[tuple[str, str]]) -> None:
    """Files copied (server side, concurrently where the store can), each onto its target."""
    if pairs:
        files_for(pairs[0][0]).copy_many(pairs)


def remove(path: str) -> None:
    files_for(path).remove(path)


def remove_many(paths: list[str]) -> None:
    """Files removed (in batches where the store can); absent ones are no error."""
    if paths:
        files_for(paths[0]).remove_many(paths)


def rmtree(path: str) -> None:
    files_for(path).rmtree(path)


# --- listing ---


def exists(path: str) -> bool:
    return files_for(path).exists(path)


def isdir(path: str) -> bool:
    return files_for(path).isdir(path)


def isfile(path: str) -> bool:
    return files_for(path).isfile(path)


def getsize(path: str) -> int:
    return files_for(path).getsize(path)


def info(path: str) -> dict[str, Any]:
    """A listing entry (size, type; a remote object's version and last modified too);
    FileNotFoundError if absent."""
    return files_for(path).info(path)


def walk(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk for both kinds of path; pruning `dirs` in place works for both. A remote
    tree is listed in one go (an object store lists a prefix, not folder by folder)."""
    return files_for(top).walk(top)


def listdir(path: str) -> list[str]:
    return files_for(path).listdir(path)


def files_in(path: str) -> list[str]:
    """The names of the files (not folders) in a directory, from one listing."""
    return files_for(path).files_in(path)


def glob(pattern: str, files_only: bool = False) -> list[str]:
    return files_for(pattern).glob(pattern, files_only)
