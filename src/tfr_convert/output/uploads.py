"""Shards for a remote output: written to a local spool file, uploaded on helper threads.

An object store takes a file fastest when several requests run at once (the parts
of one object, several objects): a shard streamed as the run writes it goes one
part at a time. So each shard is written to a local temporary file at the pace of
encoding, and uploaded whole (the backend's concurrent upload) on a helper thread
once closed, while the next shard is encoded. At most `pending` shards are spooled
and not yet uploaded; the one after waits for a slot, so the spool stays within a
few shards' size (TMPDIR).

Nothing claims a shard exists before `wait()` has returned: the output waits for
every upload before its commit, and a resumed run re-reads each journaled shard.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from ..storage import fs, stores
from .watched_futures import WatchedFutures

PENDING = 2  # shards uploading at once; one more may be spooled while they go


class Uploads:
    def __init__(self, pending: int = PENDING) -> None:
        self._pool = ThreadPoolExecutor(pending, thread_name_prefix="tfr-convert-upload")
        self._slots = threading.BoundedSemaphore(pending + 1)
        self._pending = WatchedFutures()
        self._spool = tempfile.mkdtemp(prefix="tfr-convert-spool-")
        self._count = 0

    def open(self, path: str) -> IO[bytes]:
        """A file to write `path` through: its bytes go to the store once it is closed."""
        self._pending.raise_failed()
        self._slots.acquire()
        self._count += 1
        local = os.path.join(self._spool, f"{self._count:08d}")
        return _Spooled(self, local, path)  # type: ignore[return-value]

    def _submit(self, local: str, path: str) -> None:
        self._pending.add(self._pool.submit(self._upload, local, path))

    def _upload(self, local: str, path: str) -> None:
        try:
            store, key = stores.filesystem(path)
            with stores.translated(path):
                store.put_file(local, key)
        finally:
            os.remove(local)
            self._slots.release()

    def wait(self) -> None:
        """Every upload finished; the first failure raised."""
        self._pending.wait()

    def close(self) -> None:
        """Uploads under way are let finish (a shard the journal names may be kept), errors ignored."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self._spool, ignore_errors=True)


class _Spooled:
    """A local file that is handed to its Uploads when closed."""

    def __init__(self, uploads: Uploads, local: str, path: str) -> None:
        self._uploads, self._local, self.name = uploads, local, path
        self._f = open(local, "wb")

    def write(self, data: Any) -> int:
        with fs.naming(self._local):
            return self._f.write(data)

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        if self._f.closed:
            return
        with fs.naming(self._local):
            self._f.close()
        self._uploads._submit(self._local, self.name)

    def __enter__(self) -> _Spooled:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
