"""Files of an export written under OUT/.tfr-export-partial and moved to their final
names only once all are written: a failed export leaves no file at a final name."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .. import fs

STAGING = ".tfr-export-partial"


def with_folders(path: str) -> str:
    """The path, its local parent folders made (a bucket needs none)."""
    if not fs.is_remote(path):
        fs.makedirs(fs.dirname(path))
    return path


class Staging:
    def __init__(self, out: str) -> None:
        self.out = out
        self.root = fs.join(out, STAGING)
        self.files: list[str] = []  # relative to OUT

    def put(self, relative: str, data: bytes) -> None:
        fs.put_bytes(with_folders(fs.join(self.root, relative)), data)
        self.files.append(relative)

    def commit(self) -> None:
        for relative in self.files:
            fs.rename(fs.join(self.root, relative), with_folders(fs.join(self.out, relative)))


@contextmanager
def staged(out: str) -> Iterator[Staging]:
    """A Staging whose files are moved into place by commit(); whatever is left is removed."""
    staging = Staging(out)
    if fs.exists(staging.root):
        fs.rmtree(staging.root)
    try:
        yield staging
    finally:
        if fs.exists(staging.root):
            fs.rmtree(staging.root)
