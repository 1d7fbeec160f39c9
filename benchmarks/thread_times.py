"""Where a command's CPU goes: the parent's main thread, its other threads, its children.

    python benchmarks/thread_times.py tfr-convert images PHOTOS --out OUT --workers 16

Runs the command and reads /proc every 10 ms (Linux only): the CPU seconds of each
thread of the command's own process and of the processes it started, as last seen
before each ended. A main thread whose CPU time is close to the wall time is the stage
that stops the command from going faster with more workers. Prints one line of JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def _cpu(stat_path: str) -> float | None:
    """utime + stime of a /proc stat file, in seconds (None once it is gone)."""
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def main() -> None:
    started = time.perf_counter()
    process = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
    pid = process.pid
    threads: dict[int, float] = {}
    children: dict[int, float] = {}
    while process.poll() is None:
        for tid in os.listdir(f"/proc/{pid}/task") if os.path.exists(f"/proc/{pid}/task") else []:
            seen = _cpu(f"/proc/{pid}/task/{tid}/stat")
            if seen is not None:
                threads[int(tid)] = seen
        for child in _children(pid):
            seen = _cpu(f"/proc/{child}/stat")
            if seen is not None:
                children[child] = seen
        time.sleep(0.01)
    wall = time.perf_counter() - started
    main_thread = threads.pop(pid, 0.0)
    print(
        json.dumps(
            {
                "command": " ".join(sys.argv[1:]),
                "exit": process.returncode,
                "wall_s": round(wall, 3),
                "main_thread_cpu_s": round(main_thread, 3),
                "other_threads_cpu_s": round(sum(threads.values()), 3),
                "other_threads": len(threads),
                "children_cpu_s": round(sum(children.values()), 3),
                "children": len(children),
            }
        )
    )


if __name__ == "__main__":
    main()
