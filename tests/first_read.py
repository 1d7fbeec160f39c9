"""Run tfr-convert, stopping itself (SIGSTOP) just before it first opens or lists a
file or folder under INPUT (or INPUT itself), after writing to ORDER_TO whether it held its output's lock then.

    INPUT=DIR ORDER_TO=FILE python first_read.py ARGS...

The lock is "held" when the process has taken an fcntl lock (output/outdir's Lock):
every fcntl.lockf call that succeeds is noted. Once continued (SIGCONT), the run goes
on as usual.
"""

from __future__ import annotations

import builtins
import fcntl
import os
import signal

INPUT = os.path.realpath(os.environ["INPUT"])
MAIN = os.getpid()
locked = False
stopped = False
_open, _os_open, _lockf = builtins.open, os.open, fcntl.lockf


def lockf(fd, operation, *args):
    global locked
    result = _lockf(fd, operation, *args)
    if operation & fcntl.LOCK_EX:
        locked = True
    return result


def _first(path) -> None:
    global stopped
    if stopped or os.getpid() != MAIN or not isinstance(path, (str, os.PathLike)):
        return
    if os.path.realpath(path).startswith(INPUT + os.sep) or os.path.realpath(path) == INPUT:
        stopped = True
        with _open(os.environ["ORDER_TO"], "w") as f:
            f.write("locked\n" if locked else "not locked\n")
        os.kill(MAIN, signal.SIGSTOP)


def open_noted(file, *args, **kwargs):
    _first(file)
    return _open(file, *args, **kwargs)


def os_open_noted(path, *args, **kwargs):
    _first(path)
    return _os_open(path, *args, **kwargs)


def noted(function):
    def call(path=".", *args, **kwargs):
        _first(path)
        return function(path, *args, **kwargs)

    return call


builtins.open, os.open, fcntl.lockf = open_noted, os_open_noted, lockf
os.scandir, os.listdir = noted(os.scandir), noted(os.listdir)  # listing a folder reads it too

if __name__ == "__main__":
    from cli_code import convert_code

    code = convert_code()
    os._exit(code)
