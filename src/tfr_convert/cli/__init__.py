"""The `tfr-convert`, `tfr-inspect` and `tfr-export` commands: parse, validate, call the library.

    types.py      every ParamType: bad input is refused while parsing (exit 2)
    translate.py  the one place a library error becomes a line on stderr and an exit code
    options.py    the options every converter shares, and their cross-checks
    running.py    a conversion run from the command line: progress, signals, summary
    convert.py    `tfr-convert`: a subcommand per module of commands/
    commands/     one module per converter: its options, mapped onto its options class
    inspect.py    `tfr-inspect`
    export.py     `tfr-export`

Exit codes: 0 success, 1 a data or I/O error (the library's TfrConvertError, or an
OSError), 2 a usage error (click's own, or an error whose class says so).
Results go to stdout, progress and errors to stderr.
"""

from __future__ import annotations

import os

# Set before anything here imports numpy (a caller's own settings win). The commands do
# no linear algebra, so BLAS need not start a thread per core at import. And numpy's
# advice to back large arrays with huge pages makes the kernel compact memory to find
# them at the first touch of each array: on a busy machine that stall, not the work,
# decides how long a conversion of arrays written once and dropped takes.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

# Each command is imported from its own module (`tfr_convert.cli.inspect:inspect`, the
# console scripts' entry points), not from here: a command starts by importing only
# what it runs. Its start is part of every short run, and a script in CI makes many.
