"""Run tfr-convert and SIGKILL it right after its Nth change to an S3 store.

    KILL_AT=N python kill_at_store.py ARGS...   (N=0: never; COUNT_TO=FILE: write the count there at the end)
    HOW=FAIL: that request fails instead

Every S3 request that changes the store (an object put, a multipart upload's
completion, a copy, a delete) is counted in the converting process, and after the
Nth has been answered the process sends itself SIGKILL: no cleanup, no atexit, as
when a preempted VM or the OOM killer ends a run. The store keeps what it was told.
"""

from __future__ import annotations

import os
import signal
import sys

import s3fs

KILL_AT = int(os.environ.get("KILL_AT", "0"))
HOW = os.environ.get("HOW", "KILL")
MAIN = os.getpid()
CHANGES = {"put_object", "complete_multipart_upload", "copy_object", "upload_part_copy", "delete_object",
           "delete_objects"}  # fmt: skip
calls = 0
_call_s3 = s3fs.S3FileSystem._call_s3


async def counted(self, method, *args, **kwargs):
    global calls
    result = await _call_s3(self, method, *args, **kwargs)
    name = method if isinstance(method, str) else getattr(method, "__name__", "")
    if name in CHANGES and os.getpid() == MAIN:
        calls += 1
        if calls == KILL_AT:
            if HOW == "FAIL":
                raise OSError(5, "the store failed (injected)")
            os.kill(MAIN, signal.SIGKILL)
    return result


s3fs.S3FileSystem._call_s3 = counted

if __name__ == "__main__":
    from tfr_convert.cli.convert import convert

    try:
        convert.main(sys.argv[1:], prog_name="tfr-convert")
    finally:
        if os.environ.get("COUNT_TO"):
            with open(os.environ["COUNT_TO"], "w") as f:
                f.write(str(calls))
