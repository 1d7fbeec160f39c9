"""One run per remote output: a lock object, created only where none is.

S3 (If-None-Match) and GCS (ifGenerationMatch=0) create an object only if none
is there, atomically, so of two runs that start together exactly one gets the
lock. No kernel drops the lock when its holder dies, so the holder renews it
(writes it again) every LEASE/4 seconds on a helper thread, and a lock is stale
when
- its holder ran on this machine (same host name, same boot) and that process
  is gone: a killed run's lock is taken over at once, by the next run here;
- or it has not been renewed for LEASE seconds (a holder elsewhere that died),
  by the store's last-modified time against this machine's clock.
A stale lock is replaced by a conditional write where the store has one (S3's
If-Match), else removed and created anew. A run that finds the lock is no
longer its own (taken over while it stalled for a whole lease) stops before its
commit (`check`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from typing import Any

from ..errors import OutputError
from ..storage import fs, stores

LEASE_ENV = "TFR_CONVERT_LOCK_LEASE"
DEFAULT_LEASE = 120.0  # seconds


def lease_seconds() -> float:
    try:
        return max(float(os.environ.get(LEASE_ENV, DEFAULT_LEASE)), 1.0)
    except ValueError:
        return DEFAULT_LEASE


def _process_start(pid: int) -> str | None:
    """When a process started (clock ticks since boot), None if there is none: with the
    pid, it names one process (a pid alone may have been given to another since)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat.rsplit(b")", 1)[1].split()[19].decode()


def _boot_id(path: str = "/proc/sys/kernel/random/boot_id") -> str:
    """This boot's id ("" where the system has none: a lock is then told stale by its age)."""
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


class RemoteLock:
    def __init__(self, path: str) -> None:
        self.path = path
        self.lease = lease_seconds()
        pid = os.getpid()
        self.me = {
            "run": uuid.uuid4().hex,
            "host": socket.gethostname(),
            "boot": _boot_id(),
            "pid": pid,
            "pid_start": _process_start(pid),
            "since": round(time.time()),
        }
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _body(self) -> bytes:
        return json.dumps({**self.me, "renewed": round(time.time())}).encode()

    def _read(self) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """(the holder's record, the lock object's listing), (None, {}) if there is no lock."""
        try:
            listing = fs.info(self.path)
            data = fs.read_bytes(self.path)
        except FileNotFoundError:
            return None, {}
        try:
            holder = json.loads(data)
        except ValueError:
            holder = {}
        return (holder if isinstance(holder, dict) else {}), listing

    def _stale(self, holder: dict[str, Any], listing: dict[str, Any]) -> bool:
        pid = holder.get("pid")
        if holder.get("host") == self.me["host"] and holder.get("boot") == self.me["boot"] and isinstance(pid, int):
            return _process_start(pid) != holder.get("pid_start")
        modified = stores.modified_of(listing)
        return modified is not None and time.time() - modified > self.lease

    def acquire(self, what: str) -> None:
        for _ in range(5):
            if stores.create_exclusive(self.path, self._body()):
                return self._hold()
            holder, listing = self._read()
            if holder is None:
                continue  # released meanwhile
            if not self._stale(holder, listing):
                since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since") or 0))
                raise OutputError(
                    f"{what}: another tfr-convert run (pid {holder.get('pid', '?')} on {holder.get('host', '?')}, "
                    f"since {since}) is writing this output; wait for it to end, or stop it, and run again "
                    f"(its lock, {self.path}, is taken over once not renewed for {self.lease:.0f} s)"
                )
            replaced = stores.replace_if_unchanged(self.path, self._body(), stores.version_of(listing))
            if replaced:
                return self._hold()
            if replaced is None:  # no conditional replace here: remove it, then create as above
                with contextlib.suppress(FileNotFoundError):
                    fs.remove(self.path)
        raise OutputError(f"{self.path}: cannot take the lock (other runs keep taking it)")

    def _hold(self) -> None:
        self._thread = threading.Thread(target=self._renew, name="tfr-convert-lock", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.lease / 4):
            try:
                holder, _ = self._read()
                if holder is None or holder.get("run") != self.me["run"]:
                    self.lost = "another run took this output's lock over while this one was stalled; stopped"
                    return
                fs.put_bytes(self.path, self._body())
            except OSError:
                continue  # a passing failure: the lease outlasts three missed renewals

    def check(self) -> None:
        """OutputError if the lock is no longer this run's."""
        if self.lost:
            raise OutputError(f"{self.path}: {self.lost}")

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            with contextlib.suppress(OSError):
                holder, _ = self._read()
                if holder is not None and holder.get("run") == self.me["run"]:
                    fs.remove(self.path)
