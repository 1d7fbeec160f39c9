"""`tfr-convert` run in this process as its command line would, for the scripts the tests
start as processes of their own (kill_at.py, first_read.py, whole_counted.py)."""

from __future__ import annotations

import sys


def convert_code() -> int:
    """tfr-convert with this process's arguments; its exit code."""
    from tfr_convert.cli.convert import convert

    try:
        # outside standalone mode click returns the exit code of a ctx.exit() instead of raising
        returned = convert.main(sys.argv[1:], standalone_mode=False)
        return returned if isinstance(returned, int) else 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1
