"""Run tfr-convert, then say on stderr which splits' shards the workers wrote whole
(engine/whole_shards.py), as a last line `whole=SPLIT,SPLIT` (`whole=` for none).
    python whole_counted.py images SRC --out OUT --workers 8
A process of its own: a test process may hold threads, and then no worker is forked."""

from __future__ import annotations

import sys

from tfr_convert.engine import local

whole: list[str] = []
_write_whole = local._Splits._write_whole


def _counted(self, split, *args):
    whole.append(split)
    return _write_whole(self, split, *args)


local._Splits._write_whole = _counted

if __name__ == "__main__":
    from cli_code import convert_code

    code = convert_code()
    print("whole=" + ",".join(sorted(whole)), file=sys.stderr)
    sys.exit(code)
