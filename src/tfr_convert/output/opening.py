"""Opening a run's output: a local directory (local.py) or a remote prefix (remote.py),
chosen by its path, and its lock taken before the run reads anything (`claimed`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..storage import fs
from ..storage.fingerprints import InputFiles
from .base import Output


def open_output(
    path: str,
    overwrite: bool = False,
    resume: bool = False,
    identity: dict[str, Any] | None = None,
    inputs: InputFiles | None = None,
    lock: Any = None,
) -> Output:
    """The output of one run: a local directory, or a remote prefix. `lock`: its lock,
    taken before the run read its inputs (`claimed`); else it is taken now."""
    if fs.is_remote(path):
        from .remote import RemoteOutput

        return RemoteOutput(path, overwrite, resume, identity, inputs, lock)
    from .local import LocalOutput

    return LocalOutput(path, overwrite, resume, identity, inputs, lock)


@contextmanager
def claimed(path: str) -> Iterator[Any]:
    """The lock of the output at `path`, held from now until the block ends: a run takes
    it before it reads any input and hands it to `open_output`, so that a second run
    into the same output is refused at any point of the first, its reading included."""
    if fs.is_remote(path):
        from .remote import RemoteOutput

        lock = RemoteOutput.claim(path)
        try:
            yield lock
        finally:
            lock.release()
        return
    from .local import LocalOutput, release

    lock = LocalOutput.claim(path)
    try:
        yield lock
    finally:
        release(lock)
