"""A remote output (`--out s3://bucket/DIR`): object stores have no rename and no
folder to swap, so the commit is a roll-forward from a record.

Everything a run writes before its commit lives under `DIR/.tfr-convert/`:

    lock            one run at a time (remote_lock.py)
    journal/        one object per finished shard, for --resume (journal.py)
    new/            the shards, under temporary names
    committing      the commit's record: which shard goes to which final name, which
                    files of the old dataset go, and the metadata to write

The commit writes the record, then: removes the old `dataset_info.json` (from
here on DIR holds no dataset that claims to be complete), copies each shard to
its final name (server side), removes the old dataset's other files, writes the
metadata with `dataset_info.json` last, and removes the work. A reader therefore
sees the old dataset, then no dataset, then the new one; never a mixture behind a
`dataset_info.json`. A run killed after writing the record is finished by the
next run into DIR (any run: `recover`), from the record; one killed before it
leaves the old dataset as it was, and its finished shards for --resume.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from typing import IO, Any

from ..dataset.naming import COMMITTING, INFO, WORK_FOLDER
from ..storage import fs
from ..storage.fingerprints import InputFiles
from .base import Output, dataset_files
from .journal import Journal, ShardEntry
from .remote_lock import RemoteLock
from .shards import SplitResult
from .uploads import Uploads


class RemoteOutput(Output):
    def __init__(
        self,
        path: str,
        overwrite: bool,
        resume: bool,
        identity: dict[str, Any] | None,
        inputs: InputFiles | None,
        lock: RemoteLock | None = None,
    ) -> None:
        """`lock`: this output's lock, taken earlier by `claim` (and released by its taker)."""
        super().__init__(overwrite, resume, identity, inputs)
        self.path = path.rstrip("/")
        self.work = fs.join(self.path, WORK_FOLDER)
        self.build = fs.join(self.work, "new")
        self.journal = Journal(fs.join(self.work, "journal"))
        self._record = fs.join(self.work, COMMITTING)
        self._own_lock = lock is None
        self._lock = lock or RemoteLock(fs.join(self.work, "lock"))
        self._uploads = Uploads()
        if lock is None:
            self._lock.acquire(self.path)
        try:
            self.recover()
            partial = self.journal.exists() or bool(self._built())
            # --resume after a run that had finished (or whose commit `recover` just finished)
            self.finished = resume and not partial and self._done_already()
            if self.resuming:
                self.entries = self.journal.read(self.identity, self.inputs)
            if not self.finished:
                self._refuse_start(bool(self._entries()), partial)
                if partial and not resume:
                    self._discard()
        except BaseException:
            self.close()
            raise

    def _entries(self) -> list[str]:
        """What DIR holds, besides the work folder."""
        if not fs.isdir(self.path):
            return []
        return [e for e in fs.listdir(self.path) if e != WORK_FOLDER]

    def _built(self) -> list[str]:
        """The names under new/ (a store with folders may keep new/ itself, empty)."""
        return fs.listdir(self.build) if fs.isdir(self.build) else []

    def _discard(self) -> None:
        """An interrupted run's work, gone (its record is not: `recover` has run)."""
        fs.rmtree(self.build)
        self.journal.remove()

    # ------------------------------------------------------------ writing

    def opener(self, path: str) -> IO[bytes]:
        return self._uploads.open(path)

    def sync(self) -> None:
        self._uploads.wait()

    def whole(self, path: str, shard: ShardEntry) -> bool:
        """The object is there with its size, and its bytes (read back) hash as journaled: a
        shard is journaled when written, before its upload has finished."""
        try:
            if fs.info(path).get("size") != shard.bytes:
                return False
        except FileNotFoundError:
            return False  # gone since it was journaled
        digest = hashlib.sha256()
        with fs.open_input(path) as f:
            while block := f.read(8 << 20):
                digest.update(block)
        return digest.hexdigest() == shard.sha256

    def keep_only(self, files: set[str]) -> None:
        fs.remove_many([fs.join(self.build, e) for e in self._built() if e not in files])

    def check_held(self) -> None:
        self._lock.check()

    def commit(self, results: list[SplitResult], metadata: dict[str, bytes]) -> None:
        shards = [(fs.basename(s.tmp_path), s.final_name) for r in results for s in r.shards if not s.shared]
        shared = [(s.tmp_path, s.final_name) for r in results for s in r.shards if s.shared]
        new = {final for _, final in shards + shared} | set(metadata)
        old = dataset_files(self.path) - {WORK_FOLDER} if self.overwrite and fs.isdir(self.path) else set()
        record = {
            "copies": shards,
            "shared": shared,
            "remove": sorted(old - new),
            "metadata": [[name, base64.b64encode(data).decode("ascii")] for name, data in metadata.items()],
        }
        self._uploads.wait()
        self._lock.check()
        fs.put_bytes(self._record, json.dumps(record).encode())
        self._temps.clear()
        self._finish(record)

    def _finish(self, record: dict[str, Any]) -> None:
        """The commit, from its record; each step may be done again (after a kill)."""
        info = fs.join(self.path, INFO)
        if fs.exists(info):  # first: until the new one is written, DIR claims no complete dataset
            fs.remove(info)
        present = set(self._built())
        fs.copy_many(
            [(fs.join(self.build, tmp), fs.join(self.path, final)) for tmp, final in record["copies"] if tmp in present]
            # another version's shards, copied on the server (their source stays: done again after a kill)
            + [(source, fs.join(self.path, final)) for source, final in record.get("shared", [])]
        )
        fs.remove_many([fs.join(self.path, name) for name in record["remove"]])
        metadata = {fs.join(self.path, name): base64.b64decode(data) for name, data in record["metadata"]}
        info_data = metadata.pop(info, None)
        fs.put_many(metadata)
        if info_data is not None:  # last: DIR claims a complete dataset once everything else is there
            fs.put_bytes(info, info_data)
        fs.rmtree(self.build)
        self.journal.remove()
        fs.remove(self._record)

    def recover(self) -> None:
        """Finish the commit of a run killed after it wrote its record."""
        try:
            record = json.loads(fs.read_bytes(self._record))
        except FileNotFoundError:
            return
        self._finish(record)

    # ------------------------------------------------------------ ending

    def abort(self, keep: bool) -> None:
        self._uploads.close()  # the uploads under way finish: a shard journaled may then be kept
        if not keep and not fs.exists(self._record):
            # (with the record written, what is there is for the next run's `recover`)
            with contextlib.suppress(OSError):
                self._discard()
        self._temps.clear()

    @staticmethod
    def claim(path: str) -> RemoteLock:
        """The lock of the output at `path`, taken now: a run holds it from before it
        reads its first input (the CLI takes it so) until after its commit."""
        path = path.rstrip("/")
        lock = RemoteLock(fs.join(path, WORK_FOLDER, "lock"))
        lock.acquire(path)
        return lock

    def close(self) -> None:
        self._uploads.close()
        if self._own_lock:
            self._lock.release()
