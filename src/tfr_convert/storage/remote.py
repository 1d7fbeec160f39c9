"""Files and folders in object stores and other remote filesystems, through fsspec.

RemoteFiles has the same methods as local.LocalFiles; fs.py chooses one of the two for
each path. Which backend serves a scheme, its options and its errors (raised as OSError
naming the path) are stores.py's job; this module only speaks fsspec's file API.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from ..errors import SourceError
from . import stores

# Remote files are read in ranges of this size (a sequential scan asks for the next one as
# it goes) and written in parts of this size (a multipart upload's part: each is sent as
# soon as it is full, while the writer goes on).
READ_BLOCK = 8 << 20
WRITE_BLOCK = 16 << 20

# {local copy: the remote path it was copied from}, to name remote sources in messages
_LOCAL_COPIES: dict[str, str] = {}


def with_remote_names(text: str) -> str:
    """A message with each local copy's path put back as the remote path it stands for."""
    for copy, remote in _LOCAL_COPIES.items():
        text = text.replace(copy, remote)
    return text


def _split(path: str) -> tuple[Any, str]:
    return stores.filesystem(path)


def _key(path: str) -> str:
    return stores.filesystem(path)[1]


class _Translating:
    """An fsspec file whose backend errors are raised as OSError naming its path."""

    def __init__(self, f: Any, path: str) -> None:
        self._f, self.name = f, path

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._f, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            with stores.translated(self.name):
                return attribute(*args, **kwargs)

        return call

    def write(self, data: Any) -> int:
        with stores.translated(self.name):
            self._f.write(data)
        return memoryview(data).nbytes

    def readline(self, size: int | None = -1) -> bytes:
        """A line, or its first `size` bytes, as io's readline (fsspec's own takes no
        size: it would hold a line of any length whole)."""
        with stores.translated(self.name):
            if size is None or size < 0:
                return self._f.readline()
            start, parts, got = self._f.tell(), [], 0
            while got < size:
                chunk = self._f.read(min(1 << 16, size - got))
                if not chunk:
                    break
                end = chunk.find(b"\n")
                if end >= 0:
                    parts.append(chunk[: end + 1])
                    got += end + 1
                    self._f.seek(start + got)
                    break
                parts.append(chunk)
                got += len(chunk)
            return b"".join(parts)

    def readinto(self, buffer: Any) -> int:
        with stores.translated(self.name):
            data = self._f.read(len(buffer))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)

    def __enter__(self) -> _Translating:
        return self

    def __exit__(self, *exc: object) -> None:
        with stores.translated(self.name):
            self._f.close()


class RemoteFiles:
    """Paths with a scheme (`s3://`, `gs://`, `memory://`...). Several paths given at once
    (the *_many methods) are on the first one's store."""

    # --- names ---

    def join(self, path: str, *parts: str) -> str:
        return posixpath.join(path, *parts)

    def basename(self, path: str) -> str:
        return posixpath.basename(path.rstrip("/"))

    def dirname(self, path: str) -> str:
        return posixpath.dirname(path.rstrip("/"))

    def normpath(self, path: str) -> str:
        """The scheme's `//` kept."""
        name = stores.scheme(path)
        if name is None:
            return posixpath.normpath(path)
        return f"{name}://" + posixpath.normpath(path[len(name) + 3 :]).lstrip("/")

    def within(self, path: str, folder: str) -> bool:
        """Compared as normalised names."""
        path, folder = self.normpath(path), self.normpath(folder).rstrip("/")
        return path == folder or path.startswith(folder + "/")

    # --- reading ---

    def read_bytes(self, path: str, inside: str | None = None) -> bytes:
        """An object store has no links to leave `inside` by."""
        fs, key = _split(path)
        with stores.translated(path):
            return fs.cat_file(key)

    def open_input(self, path: str, buffering: int = -1, inside: str | None = None) -> IO[bytes]:
        """Read in ranges (READ_BLOCK ahead), never copied whole (no links to leave `inside` by)."""
        fs, key = _split(path)
        with stores.translated(path):
            f = fs.open(key, "rb", block_size=READ_BLOCK, cache_type="readahead")
        return _Translating(f, path)  # type: ignore[return-value]

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """One ranged request."""
        fs, key = _split(path)
        with stores.translated(path):
            return fs.cat_file(key, start=start, end=start + length)

    def local_copy(self, path: str) -> str:
        """Downloaded (a file or a whole folder) into a temporary folder removed when the
        process exits; once per path."""
        staged = next((copy for copy, remote in _LOCAL_COPIES.items() if remote == path.rstrip("/")), None)
        if staged is not None and os.path.exists(staged):
            return staged
        fs, key = _split(path)
        with stores.translated(path):
            if not fs.exists(key):
                raise SourceError(f"{path}: does not exist")
            local_root = tempfile.mkdtemp(prefix="tfr-convert-src-")
            atexit.register(shutil.rmtree, local_root, True)
            target = os.path.join(local_root, self.basename(path) or "src")
            _LOCAL_COPIES[target] = path.rstrip("/")
            if not fs.isdir(key):
                fs.get_file(key, target)
                return target
            top = path.rstrip("/")
            for directory, _, files in self.walk(top):
                rel = directory[len(top) :].lstrip("/")
                os.makedirs(os.path.join(target, rel), exist_ok=True)
                for name in files:
                    fs.get_file(_key(posixpath.join(directory, name)), os.path.join(target, rel, name))
        return target

    # --- writing ---

    def open_file(self, path: str, mode: str) -> IO:
        """Uploaded in parts as it fills; the object appears whole, at once, when closed."""
        fs, key = _split(path)
        with stores.translated(path):
            f = fs.open(key, "wb", block_size=WRITE_BLOCK)
        return _Translating(f, path)  # type: ignore[return-value]

    def put_bytes(self, path: str, data: bytes) -> None:
        """In one request."""
        fs, key = _split(path)
        with stores.translated(path):
            fs.pipe_file(key, data)

    def put_new(self, path: str, data: bytes) -> None:
        """With the store's conditional write."""
        fs, key = _split(path)
        with stores.translated(path):
            fs.pipe_file(key, data, mode="create")

    def put_many(self, files: dict[str, bytes]) -> None:
        """Concurrently where the store can."""
        first = next(iter(files))
        fs, _ = _split(first)
        with stores.translated(first):
            fs.pipe({_key(path): data for path, data in files.items()})

    def makedirs(self, path: str) -> None:
        fs, key = _split(path)
        with stores.translated(path):
            fs.makedirs(key, exist_ok=True)

    def rename(self, src: str, dst: str) -> None:
        """A copy, then the removal of src."""
        fs, key = _split(src)
        with stores.translated(src):
            fs.mv(key, _key(dst))

    def copy_many(self, pairs: list[tuple[str, str]]) -> None:
        """Server side, concurrently where the store can."""
        fs, _ = _split(pairs[0][0])
        with stores.translated(pairs[0][0]):
            fs.copy([_key(s) for s, _ in pairs], [_key(d) for _, d in pairs])

    def remove(self, path: str) -> None:
        fs, key = _split(path)
        with stores.translated(path):
            fs.rm_file(key)

    def remove_many(self, paths: list[str]) -> None:
        """In batches where the store can."""
        fs, _ = _split(paths[0])
        with stores.translated(paths[0]), contextlib.suppress(FileNotFoundError):
            fs.rm([_key(p) for p in paths])

    def rmtree(self, path: str) -> None:
        fs, key = _split(path)
        with stores.translated(path), contextlib.suppress(FileNotFoundError):
            if fs.exists(key):
                fs.rm(key, recursive=True)

    # --- listing ---

    def exists(self, path: str) -> bool:
        fs, key = _split(path)
        with stores.translated(path):
            return fs.exists(key)

    def isdir(self, path: str) -> bool:
        fs, key = _split(path)
        with stores.translated(path):
            return fs.isdir(key)

    def isfile(self, path: str) -> bool:
        fs, key = _split(path)
        with stores.translated(path):
            return fs.isfile(key)

    def getsize(self, path: str) -> int:
        fs, key = _split(path)
        with stores.translated(path):
            return fs.size(key)

    def info(self, path: str) -> dict[str, Any]:
        """The listing entry (size, version, last modified)."""
        fs, key = _split(path)
        with stores.translated(path):
            return fs.info(key)

    def walk(self, top: str) -> Iterator[tuple[str, list[str], list[str]]]:
        """Listed in one go (an object store lists a prefix, not folder by folder)."""
        top = top.rstrip("/")
        fs, key = _split(top)
        key = key.rstrip("/")
        with stores.translated(top):
            entries = fs.find(key, withdirs=True, detail=True)
        children: dict[str, tuple[list[str], list[str]]] = {"": ([], [])}
        for name, entry in sorted(entries.items()):
            rel = name.rstrip("/")[len(key) :].strip("/")
            if not rel:
                continue
            parent, _, base = rel.rpartition("/")
            children.setdefault(parent, ([], []))
            if entry.get("type") == "directory":
                children.setdefault(rel, ([], []))
                children[parent][0].append(base)
            else:
                children[parent][1].append(base)
        for parent in list(children):  # folders only implied by their objects' keys
            while parent:
                grand, _, base = parent.rpartition("/")
                siblings = children.setdefault(grand, ([], []))[0]
                if base not in siblings:
                    siblings.append(base)
                parent = grand
        pending = [""]
        while pending:
            rel = pending.pop()
            dirs, files = children.get(rel, ([], []))
            dirs, files = sorted(set(dirs)), sorted(files)
            yield (posixpath.join(top, rel) if rel else top), dirs, files
            pending.extend(posixpath.join(rel, d) if rel else d for d in reversed(dirs))

    def listdir(self, path: str) -> list[str]:
        fs, key = _split(path)
        key = key.rstrip("/")
        with stores.translated(path):
            entries = fs.ls(key, detail=False)
        # a folder's own marker object (`key/`, made by consoles and some stores) is not an entry of it
        return [posixpath.basename(e.rstrip("/")) for e in entries if e.rstrip("/") != key]

    def files_in(self, path: str) -> list[str]:
        fs, key = _split(path)
        key = key.rstrip("/")
        with stores.translated(path):
            entries = fs.ls(key, detail=True)
        return [
            posixpath.basename(e["name"].rstrip("/"))
            for e in entries
            if e.get("type") == "file" and e["name"].rstrip("/") != key and not e["name"].endswith("/")
        ]

    def glob(self, pattern: str, files_only: bool = False) -> list[str]:
        fs, key = _split(pattern)
        with stores.translated(pattern):
            matches = fs.glob(key, detail=True)
        return [fs.unstrip_protocol(p) for p, entry in matches.items() if not files_only or entry.get("type") == "file"]
