"""Files and folders, local or remote.

A path with a scheme (`s3://`, `gs://`, `az://`, `hdfs://`, `memory://`...) goes
through fsspec (stores.py: which backend, its options, its errors as OSError);
any other path through `os` and `open`. fsspec and its backends are imported
only when a remote path is met, so local runs never load them.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
from collections.abc import Iterator
from typing import IO, Any

from . import stores


def is_remote(path: str) -> bool:
    return stores.scheme(str(path)) is not None


# Remote files are read in ranges of this size (a sequential scan asks for the next one as
# it goes) and written in parts of this size (a multipart upload's part: each is sent as
# soon as it is full, while the writer goes on).
READ_BLOCK = 8 << 20
WRITE_BLOCK = 16 << 20


def _remote(path: str) -> tuple[Any, str]:
    return stores.filesystem(path)


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
        fs, key = _remote(path)
        with stores.translated(path):
            return fs.cat_file(key)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        stat = os.fstat(fd)
        check_regular(path, stat.st_mode)
        if inside is not None and _HAS_PROC_FD:
            opened = os.readlink(f"/proc/self/fd/{fd}")  # what was opened, every link resolved
            # both are absolute and normalized: a prefix test says what commonpath would
            if opened != inside and not opened.startswith(inside.rstrip(os.sep) + os.sep):
                from ..errors import SourceError

                raise SourceError(f"now resolves to {opened}, outside {inside} (changed after listing)").locate(path)
        # Straight from the descriptor (no file object): one read asks for a byte more
        # than the size; a file that gives exactly its size has ended there. One that
        # grew or shrank since (or a read the kernel cut short) is read on to its end.
        first = os.read(fd, stat.st_size + 1)
        if len(first) == stat.st_size:
            return first
        parts = [first]
        while parts[-1]:
            parts.append(os.read(fd, 1 << 20))
        return b"".join(parts)
    finally:
        os.close(fd)


def check_regular(path: str, mode: int) -> None:
    """SourceError unless `mode` (an os.stat st_mode) is a regular file's."""
    import stat

    if not stat.S_ISREG(mode):
        from ..errors import SourceError

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


def normpath(path: str) -> str:
    """os.path.normpath for both kinds of path (a remote one keeps its scheme's `//`)."""
    name = stores.scheme(path)
    if name is None:
        return os.path.normpath(path)
    return f"{name}://" + posixpath.normpath(path[len(name) + 3 :]).lstrip("/")


def within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies inside it (local paths compared with links
    resolved, remote ones as normalised names)."""
    if is_remote(path) or is_remote(folder):
        path, folder = normpath(path), normpath(folder).rstrip("/")
        return path == folder or path.startswith(folder + "/")
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def dirname(path: str) -> str:
    return posixpath.dirname(path.rstrip("/")) if is_remote(path) else os.path.dirname(path)


def open_input(path: str, buffering: int = -1) -> IO[bytes]:
    """A file to read, seekable: a remote one is read in ranges (READ_BLOCK ahead), never
    copied whole."""
    if not is_remote(path):
        return open(path, "rb", buffering=buffering)
    fs, key = _remote(path)
    with stores.translated(path):
        f = fs.open(key, "rb", block_size=READ_BLOCK, cache_type="readahead")
    return _Translating(f, path)  # type: ignore[return-value]


def open_file(path: str, mode: str = "wb") -> IO:
    """A binary file to write; a remote one is uploaded in parts as it fills, and appears
    whole, at once, when closed (an object store shows no partial object)."""
    if "w" not in mode:
        raise ValueError("open_file is for writing; read with open_input or read_bytes")
    if not is_remote(path):
        return open(path, mode)
    fs, key = _remote(path)
    with stores.translated(path):
        f = fs.open(key, "wb", block_size=WRITE_BLOCK)
    return _Translating(f, path)  # type: ignore[return-value]


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


def read_range(path: str, start: int, length: int) -> bytes:
    """`length` bytes of a file from `start` (one ranged request for a remote object)."""
    if not length:
        return b""
    if is_remote(path):
        fs, key = _remote(path)
        with stores.translated(path):
            return fs.cat_file(key, start=start, end=start + length)
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(length)


def put_bytes(path: str, data: bytes) -> None:
    """A whole file written in one step: a remote object in one request, a local file
    under a temporary name renamed onto `path`."""
    if is_remote(path):
        fs, key = _remote(path)
        with stores.translated(path):
            fs.pipe_file(key, data)
        return
    tmp = f"{path}.tmp-{os.getpid()}"
    with naming(tmp), open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def put_new(path: str, data: bytes) -> None:
    """A whole file written only where none is: FileExistsError if one is (a local file
    is created exclusively; a remote object with the store's conditional write)."""
    if is_remote(path):
        fs, key = _remote(path)
        with stores.translated(path):
            fs.pipe_file(key, data, mode="create")
        return
    with naming(path), open(path, "xb") as f:
        f.write(data)


def put_many(files: dict[str, bytes]) -> None:
    """Remote objects written, concurrently where the store can; each appears whole."""
    if not files:
        return
    first = next(iter(files))
    fs, _ = _remote(first)
    with stores.translated(first):
        fs.pipe({_remote(path)[1]: data for path, data in files.items()})


def exists(path: str) -> bool:
    if not is_remote(path):
        return os.path.exists(path)
    fs, key = _remote(path)
    with stores.translated(path):
        return fs.exists(key)


def isdir(path: str) -> bool:
    if not is_remote(path):
        return os.path.isdir(path)
    fs, key = _remote(path)
    with stores.translated(path):
        return fs.isdir(key)


def isfile(path: str) -> bool:
    if not is_remote(path):
        return os.path.isfile(path)
    fs, key = _remote(path)
    with stores.translated(path):
        return fs.isfile(key)


def info(path: str) -> dict[str, Any]:
    """A remote object's listing entry (size, version, last modified); FileNotFoundError if absent."""
    fs, key = _remote(path)
    with stores.translated(path):
        return fs.info(key)


def walk(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk for both kinds of path; pruning `dirs` in place works for both. A remote
    tree is listed in one go (an object store lists a prefix, not folder by folder)."""
    if not is_remote(top):
        yield from os.walk(top)
        return
    top = top.rstrip("/")
    fs, key = _remote(top)
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


def listdir(path: str) -> list[str]:
    if not is_remote(path):
        return os.listdir(path)
    fs, key = _remote(path)
    key = key.rstrip("/")
    with stores.translated(path):
        entries = fs.ls(key, detail=False)
    # a folder's own marker object (`key/`, made by consoles and some stores) is not an entry of it
    return [posixpath.basename(e.rstrip("/")) for e in entries if e.rstrip("/") != key]


def files_in(path: str) -> list[str]:
    """The names of the files (not folders) in a directory, from one listing."""
    if not is_remote(path):
        with os.scandir(path) as entries:
            return [e.name for e in entries if e.is_file()]
    fs, key = _remote(path)
    key = key.rstrip("/")
    with stores.translated(path):
        entries = fs.ls(key, detail=True)
    return [
        posixpath.basename(e["name"].rstrip("/"))
        for e in entries
        if e.get("type") == "file" and e["name"].rstrip("/") != key and not e["name"].endswith("/")
    ]


def glob(pattern: str, files_only: bool = False) -> list[str]:
    if not is_remote(pattern):
        import glob as local_glob

        found = local_glob.glob(pattern)
        return [p for p in found if not os.path.isdir(p)] if files_only else found
    fs, key = _remote(pattern)
    with stores.translated(pattern):
        found = fs.glob(key, detail=True)
    return [fs.unstrip_protocol(p) for p, entry in found.items() if not files_only or entry.get("type") == "file"]


def makedirs(path: str) -> None:
    if not is_remote(path):
        os.makedirs(path, exist_ok=True)
        return
    fs, key = _remote(path)
    with stores.translated(path):
        fs.makedirs(key, exist_ok=True)


def getsize(path: str) -> int:
    if not is_remote(path):
        return os.path.getsize(path)
    fs, key = _remote(path)
    with stores.translated(path):
        return fs.size(key)


def rename(src: str, dst: str) -> None:
    """Move src to dst, replacing dst (atomic on local filesystems; a copy, then the
    removal of src, on object stores)."""
    if not is_remote(src):
        os.replace(src, dst)
        return
    fs, key = _remote(src)
    with stores.translated(src):
        fs.mv(key, _remote(dst)[1])


def copy_many(pairs: list[tuple[str, str]]) -> None:
    """Remote objects copied (server side, concurrently where the store can), each onto its target."""
    if not pairs:
        return
    fs, _ = _remote(pairs[0][0])
    with stores.translated(pairs[0][0]):
        fs.copy([_remote(s)[1] for s, _ in pairs], [_remote(d)[1] for _, d in pairs])


def remove(path: str) -> None:
    if not is_remote(path):
        os.remove(path)
        return
    fs, key = _remote(path)
    with stores.translated(path):
        fs.rm_file(key)


def remove_many(paths: list[str]) -> None:
    """Remote objects removed (in batches where the store can); absent ones are no error."""
    if not paths:
        return
    fs, _ = _remote(paths[0])
    with stores.translated(paths[0]), contextlib.suppress(FileNotFoundError):
        fs.rm([_remote(p)[1] for p in paths])


def rmtree(path: str) -> None:
    if not is_remote(path):
        shutil.rmtree(path, ignore_errors=True)
        return
    fs, key = _remote(path)
    with stores.translated(path), contextlib.suppress(FileNotFoundError):
        if fs.exists(key):
            fs.rm(key, recursive=True)


# {local copy: the remote path it was copied from}, to name remote sources in messages
_LOCAL_COPIES: dict[str, str] = {}


def local_copy(path: str) -> str:
    """A local path for a source: a remote file or folder is downloaded into a temporary
    folder (removed when the process exits); a local path is returned as it is. For
    sources that are read whole anyway (MNIST, CIFAR, annotation files)."""
    if path is None or not is_remote(path):
        return path
    staged = next((copy for copy, remote in _LOCAL_COPIES.items() if remote == path.rstrip("/")), None)
    if staged is not None and os.path.exists(staged):
        return staged
    import atexit
    import tempfile

    fs, key = _remote(path)
    with stores.translated(path):
        if not fs.exists(key):
            from ..errors import SourceError

            raise SourceError(f"{path}: does not exist")
        local_root = tempfile.mkdtemp(prefix="tfr-convert-src-")
        atexit.register(shutil.rmtree, local_root, True)
        target = os.path.join(local_root, basename(path) or "src")
        _LOCAL_COPIES[target] = path.rstrip("/")
        if not fs.isdir(key):
            fs.get_file(key, target)
            return target
        top = path.rstrip("/")
        for directory, _, files in walk(top):
            rel = directory[len(top) :].lstrip("/")
            os.makedirs(os.path.join(target, rel), exist_ok=True)
            for name in files:
                fs.get_file(_remote(posixpath.join(directory, name))[1], os.path.join(target, rel, name))
    return target


def with_remote_names(text: str) -> str:
    """A message with each staged copy's local path put back as the remote path it stands for."""
    for copy, remote in _LOCAL_COPIES.items():
        text = text.replace(copy, remote)
    return text
