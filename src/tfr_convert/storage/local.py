"""Files and folders on this machine's disks, through `os` and `open`.

LocalFiles has the same methods as remote.RemoteFiles; fs.py chooses one of the two
for each path, so callers never ask which kind of path they hold.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from typing import IO, Any

from ..errors import SourceError

_HAS_PROC_FD = os.path.isdir("/proc/self/fd")  # Linux: an open file's real path, links resolved


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """An OSError raised inside that names no file (a write's ENOSPC names none) names `path`."""
    try:
        yield
    except OSError as e:
        if not e.filename:
            e.filename = path
        raise


def check_regular(path: str, mode: int) -> None:
    """SourceError unless `mode` (an os.stat st_mode) is a regular file's."""
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else ("a socket" if stat.S_ISSOCK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a file")
        )
        raise SourceError(f"{kind}, not a regular file").locate(path)


class LocalFiles:
    """The local disk."""

    # --- names ---

    def join(self, path: str, *parts: str) -> str:
        return os.path.join(path, *parts)

    def basename(self, path: str) -> str:
        return os.path.basename(path)

    def dirname(self, path: str) -> str:
        return os.path.dirname(path)

    def normpath(self, path: str) -> str:
        return os.path.normpath(path)

    def within(self, path: str, folder: str) -> bool:
        """Compared with links resolved."""
        path, folder = os.path.realpath(path), os.path.realpath(folder)
        return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)

    # --- reading ---

    def read_bytes(self, path: str, inside: str | None = None) -> bytes:
        """The file must be a regular one (a FIFO would block, a device never end) and,
        given `inside` (a real path), really under it when opened, whatever was swapped
        in since it was listed."""
        fd, size = self._opened(path, inside)
        try:
            # Straight from the descriptor (no file object): one read asks for a byte more
            # than the size; a file that gives exactly its size has ended there. One that
            # grew or shrank since (or a read the kernel cut short) is read on to its end.
            first = os.read(fd, size + 1)
            if len(first) == size:
                return first
            parts = [first]
            while parts[-1]:
                parts.append(os.read(fd, 1 << 20))
            return b"".join(parts)
        finally:
            os.close(fd)

    def open_input(self, path: str, buffering: int = -1, inside: str | None = None) -> IO[bytes]:
        """A regular file only, as read_bytes: a FIFO would block, a device never end.
        (stat, not open, tells: opening a FIFO blocks.)"""
        if inside is not None:
            return open(self._opened(path, inside)[0], "rb", buffering=buffering)
        check_regular(path, os.stat(path).st_mode)
        return open(path, "rb", buffering=buffering)

    @staticmethod
    def _opened(path: str, inside: str | None) -> tuple[int, int]:
        """A descriptor of the regular file `path`, checked to be under `inside` as opened,
        and its size then."""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            check_regular(path, st.st_mode)
            if inside is not None and _HAS_PROC_FD:
                opened = os.readlink(f"/proc/self/fd/{fd}")  # what was opened, every link resolved
                # both are absolute and normalized: a prefix test says what commonpath would
                if opened != inside and not opened.startswith(inside.rstrip(os.sep) + os.sep):
                    raise SourceError(f"now resolves to {opened}, outside {inside} (changed after listing)").locate(
                        path
                    )
        except BaseException:
            os.close(fd)
            raise
        return fd, st.st_size

    def read_range(self, path: str, start: int, length: int) -> bytes:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read(length)

    def local_copy(self, path: str) -> str:
        return path

    # --- writing ---

    def open_file(self, path: str, mode: str) -> IO:
        return open(path, mode)

    def put_bytes(self, path: str, data: bytes) -> None:
        """Under a temporary name, renamed onto `path`."""
        tmp = f"{path}.tmp-{os.getpid()}"
        with naming(tmp), open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    def put_new(self, path: str, data: bytes) -> None:
        """Created exclusively."""
        with naming(path), open(path, "xb") as f:
            f.write(data)

    def put_many(self, files: dict[str, bytes]) -> None:
        for path, data in files.items():
            self.put_bytes(path, data)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def rename(self, src: str, dst: str) -> None:
        """Atomic on one filesystem."""
        os.replace(src, dst)

    def copy_many(self, pairs: list[tuple[str, str]]) -> None:
        for src, dst in pairs:
            shutil.copyfile(src, dst)

    def remove(self, path: str) -> None:
        os.remove(path)

    def remove_many(self, paths: list[str]) -> None:
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)

    def rmtree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    # --- listing ---

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def isfile(self, path: str) -> bool:
        return os.path.isfile(path)

    def getsize(self, path: str) -> int:
        return os.path.getsize(path)

    def info(self, path: str) -> dict[str, Any]:
        """As fsspec names a listing entry's fields."""
        st = os.stat(path)
        kind = "directory" if stat.S_ISDIR(st.st_mode) else "file"
        return {"name": path, "size": st.st_size, "type": kind, "mtime": st.st_mtime}

    def walk(self, top: str) -> Iterator[tuple[str, list[str], list[str]]]:
        yield from os.walk(top)

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def files_in(self, path: str) -> list[str]:
        with os.scandir(path) as entries:
            return [e.name for e in entries if e.is_file()]

    def glob(self, pattern: str, files_only: bool = False) -> list[str]:
        import glob

        matches = glob.glob(pattern)
        return [p for p in matches if not os.path.isdir(p)] if files_only else matches
