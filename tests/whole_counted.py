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
    from tfr_convert.cli.convert import convert

    try:
        returned = convert.main(sys.argv[1:], standalone_mode=False)
        code = returned if isinstance(returned, int) else 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    print("whole=" + ",".join(sorted(whole)), file=sys.stderr)
    sys.exit(code)
