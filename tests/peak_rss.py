"""Run tfr-convert, tfr-inspect or tfr-export in this process, then report its peak memory.

    python peak_rss.py convert|inspect|export ARGS...

Exits as the command does; the last line on stderr is `peak_rss_mib=N`, the
process's peak resident set (VmHWM), so a test can bound what any input
makes the tool hold.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    from tfr_convert.cli.convert import convert
    from tfr_convert.cli.export import export
    from tfr_convert.cli.inspect import inspect

    command = {"convert": convert, "inspect": inspect, "export": export}[sys.argv[1]]
    try:
        # outside standalone mode click returns the exit code of a ctx.exit() instead of raising
        returned = command.main(sys.argv[2:], prog_name=f"tfr-{sys.argv[1]}", standalone_mode=False)
        code = returned if isinstance(returned, int) else 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    sys.stdout.flush()
    # VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over exec, so a child of a
    # large pytest process would report the parent's size
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
    print(f"peak_rss_mib={peak:.0f}", file=sys.stderr, flush=True)
    os._exit(code)
