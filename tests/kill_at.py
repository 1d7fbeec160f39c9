"""Run tfr-convert and SIGKILL it right after its Nth filesystem change, or make that change fail.

    KILL_AT=N python kill_at.py ARGS...   (N=0: never; COUNT_TO=FILE: write the count there at the end)
    FAIL_AT=N python kill_at.py ARGS...   (the Nth change raises ENOSPC instead of happening;
                                           FAILED_ON=FILE: the path it was to change is written there)

Every call that changes the filesystem (creating, opening for writing, renaming,
linking, removing, chmod) is counted in the converting process, wherever in the
code it happens, and after the Nth the process sends itself SIGKILL: no cleanup,
no atexit, no flush, as when the OOM killer or a preempted VM ends a run.
With FAIL_AT the Nth change is not made and raises "No space left on device",
as a full disk would, so every step's error handling is reached.
"""

from __future__ import annotations

import builtins
import errno
import os
import shutil
import signal

KILL_AT = int(os.environ.get("KILL_AT", "0"))
FAIL_AT = int(os.environ.get("FAIL_AT", "0"))
MAIN = os.getpid()
calls = 0


def counted(function):
    def call(*args, **kwargs):
        global calls
        if os.getpid() == MAIN and calls + 1 == FAIL_AT:
            calls += 1
            where = args[0] if args else None
            if os.environ.get("FAILED_ON"):
                with _open(os.environ["FAILED_ON"], "w") as f:
                    f.write(str(where))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), where)
        result = function(*args, **kwargs)
        if os.getpid() == MAIN:
            calls += 1
            if calls == KILL_AT:
                os.kill(MAIN, signal.SIGKILL)
        return result

    return call


for name in ("replace", "rename", "remove", "unlink", "link", "rmdir", "mkdir", "chmod", "truncate", "ftruncate"):
    setattr(os, name, counted(getattr(os, name)))

_open, _os_open = builtins.open, os.open


def open_counted(file, mode="r", *args, **kwargs):
    return (counted(_open) if any(c in mode for c in "wax+") else _open)(file, mode, *args, **kwargs)


def os_open_counted(path, flags, *args, **kwargs):
    writes = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
    return (counted(_os_open) if writes else _os_open)(path, flags, *args, **kwargs)


builtins.open, os.open = open_counted, os_open_counted
shutil.rmtree.avoids_symlink_attacks  # noqa: B018  (rmtree reaches os.unlink/os.rmdir through the module: counted)

if __name__ == "__main__":
    from cli_code import convert_code

    code = convert_code()
    if os.environ.get("COUNT_TO"):
        with _open(os.environ["COUNT_TO"], "w") as f:
            f.write(f"{calls}\n")
    os._exit(code)
