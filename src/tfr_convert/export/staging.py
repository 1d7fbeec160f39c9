"""What an export holds aside until every record is read.

Files are written under OUT/.tfr-export-partial and moved to their final names only
once all are written: a failed export leaves no file at a final name. A record's file
is written there by whichever process made it, under a name of its own (its split and
place: `Drop`), and is given its final name by the one process that reads results in
record order (`Staging.place`), so a repeated name is refused before anything lands.

The moves to make, and anything else kept per record (a detection dataset's boxes, for
the annotation files written last), go to local spool files, not memory.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import os
import pickle
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from ..errors import OutputError
from ..storage import fs

STAGING = ".tfr-export-partial"
RECORDS = "records"  # where records' files wait for their names
MOVES_AT_ONCE = 1000  # remote moves handed to the store together


def with_folders(path: str) -> str:
    """The path, its local parent folders made (a bucket needs none)."""
    if not fs.is_remote(path):
        fs.makedirs(fs.dirname(path))
    return path


class Drop:
    """Where a worker writes a record's file (None: a dry run, which writes nothing)."""

    def __init__(self, root: str | None) -> None:
        self.root = root

    @staticmethod
    def name(split_number: int, position: int) -> str:
        return f"{split_number:03d}-{position:010d}"

    def put(self, name: str, data: bytes) -> None:
        if self.root is not None:
            fs.put_bytes(with_folders(fs.join(self.root, RECORDS, name)), data)


class Spool:
    """Objects appended to a local file, read back in order as often as asked."""

    def __init__(self, folder: str, name: str) -> None:
        self.path = os.path.join(folder, name)
        self._file: IO[bytes] | None = open(self.path, "wb")
        self.count = 0

    def append(self, item: Any) -> None:
        assert self._file is not None
        pickle.dump(item, self._file, pickle.HIGHEST_PROTOCOL)
        self.count += 1

    def __iter__(self) -> Iterator[Any]:
        if self._file is not None:
            self._file.close()
            self._file = None
        with open(self.path, "rb") as f:
            for _ in range(self.count):
                yield pickle.load(f)


class Staging:
    def __init__(self, out: str, dry_run: bool = False) -> None:
        self.out = out
        self.root = fs.join(out, STAGING)
        self.dry_run = dry_run
        self.drop = Drop(None if dry_run else self.root)
        self.spools = tempfile.mkdtemp(prefix="tfr-export-")
        self._moves = Spool(self.spools, "moves")
        self._files: list[str] = []  # written here, relative to OUT
        self._placed: dict[bytes, str] = {}  # a hash of each placed name -> its tag

    def spool(self, name: str) -> Spool:
        return Spool(self.spools, name)

    def claim(self, relative: str, tag: str) -> str | None:
        """Reserve OUT/relative for the one whose `tag` is given (a record, or the export's
        own file); None, or the tag of whoever holds it already. Names are remembered as
        8-byte hashes: a few bytes a record."""
        key = hashlib.blake2b(relative.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        earlier = self._placed.get(key)
        if earlier is None:
            self._placed[key] = tag
        return earlier

    def place(self, name: str, relative: str, tag: str = "an earlier record") -> str | None:
        """The record's file `name` (written through `drop`) is OUT/relative; unless that
        name is claimed already: then nothing is placed, and the holder's tag is returned."""
        earlier = self.claim(relative, tag)
        if earlier is None:
            self.move(name, relative)
        return earlier

    def move(self, name: str, relative: str) -> None:
        """The record's file `name` goes to OUT/relative, which its caller has claimed."""
        self._moves.append((fs.join(self.root, RECORDS, name), relative))

    def put(self, relative: str, data: bytes) -> None:
        with self.open(relative) as f:
            f.write(data)

    def open(self, relative: str) -> IO[bytes]:
        """A file to write OUT/relative through (in a dry run, one that keeps nothing)."""
        self._files.append(relative)
        if self.dry_run:
            return open(os.devnull, "wb")
        return fs.open_file(with_folders(fs.join(self.root, relative)))

    def local_path(self, relative: str) -> str | None:
        """Where OUT/relative is written when that is a local file (its folders made), for
        a writer that opens it itself (Arrow's own file, which writes without passing each
        buffer through Python); None in a dry run or into a bucket: then `open`."""
        path = fs.join(self.root, relative)
        if self.dry_run or fs.is_remote(path):
            return None
        self._files.append(relative)
        return with_folders(path)

    def csv(self, relative: str) -> CsvFile:
        return CsvFile(self.open(relative))

    def commit(self) -> None:
        """Every staged file moved to its final name. Locally, a move that fails puts the
        ones made back where they were (and removes the folders made for them), so a
        failed export leaves nothing under a final name."""
        if self.dry_run:
            return
        moves = (*self._moves, *((fs.join(self.root, r), r) for r in self._files))
        if not fs.is_remote(self.out):
            _move_all(((source, fs.join(self.out, relative)) for source, relative in moves), self.out)
            return
        batch: list[tuple[str, str]] = []
        for source, relative in moves:
            batch.append((source, fs.join(self.out, relative)))
            if len(batch) >= MOVES_AT_ONCE:
                fs.copy_many(batch)
                batch = []
        fs.copy_many(batch)


def _move_all(moves: Iterable[tuple[str, str]], out: str) -> None:
    """Local renames, all or none: on an error the renames made are undone in reverse and
    the folders made for them removed, then the error goes on."""
    done: list[tuple[str, str]] = []
    made: list[str] = []
    try:
        for source, target in moves:
            folder = os.path.dirname(target)
            missing = []
            while folder and not os.path.isdir(folder):
                missing.append(folder)
                folder = os.path.dirname(folder)
            for folder in reversed(missing):
                os.mkdir(folder)
                made.append(folder)
            os.rename(source, target)
            done.append((source, target))
    except OSError as e:
        for source, target in reversed(done):
            os.rename(target, source)
        for folder in reversed(made):
            os.rmdir(folder)
        raise OutputError(
            f"{e.filename or out}: cannot be written ({e.strerror}); nothing was placed in {out}"
        ) from None


class CsvFile:
    """CSV rows written to a binary file as UTF-8, a block at a time."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.text = io.StringIO()
        self.writer = csv.writer(self.text, lineterminator="\n")
        # csv quotes a field holding the line terminator's characters only: a lone "\r"
        # would end the row for a reader, so a row holding one is quoted whole
        self.quoted = csv.writer(self.text, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def row(self, values: list[Any]) -> None:
        carriage = any(isinstance(v, str) and "\r" in v for v in values)
        (self.quoted if carriage else self.writer).writerow(values)
        if self.text.tell() >= 1 << 16:
            self._flush()

    def _flush(self) -> None:
        self.f.write(self.text.getvalue().encode("utf-8"))
        self.text.seek(0)
        self.text.truncate()

    def close(self) -> None:
        self._flush()
        self.f.close()

    def __enter__(self) -> CsvFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def staged(out: str, dry_run: bool = False) -> Iterator[Staging]:
    """A Staging whose files are moved into place by commit(); whatever is left is removed
    (and a local OUT this export made, when a failure leaves it empty)."""
    staging = Staging(out, dry_run)
    made = not fs.is_remote(out) and not os.path.exists(out)
    if not dry_run and fs.exists(staging.root):
        fs.rmtree(staging.root)
    try:
        yield staging
    except BaseException:
        _clean(staging, dry_run)
        if made:
            with contextlib.suppress(OSError):
                os.rmdir(out)
        raise
    _clean(staging, dry_run)


def _clean(staging: Staging, dry_run: bool) -> None:
    shutil.rmtree(staging.spools, ignore_errors=True)
    if not dry_run and fs.exists(staging.root):
        fs.rmtree(staging.root)
