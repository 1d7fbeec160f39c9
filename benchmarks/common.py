"""Helpers the benchmark scripts share: timing a command, its peak memory, medians."""

from __future__ import annotations

import compileall
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
from pathlib import Path

SCRIPTS = Path(sysconfig.get_path("scripts"))
REPO = Path(__file__).resolve().parent.parent

# Runs the command as a child and reports its wall time and the peak RSS of the
# largest process among it and its descendants (workers included).
_PROBE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def settle() -> None:
    """Wait until what earlier commands wrote (and deleted) is on disk. Linux writes a
    file's pages back in its own time (by default up to 30 s later), on the CPUs the
    next command runs on: without this, each timed command pays at random for the
    writing of the one before it, and the sides of a comparison pay unequally."""
    os.sync()


def measure(cmd: list[str], shell: bool = False) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of one run of cmd (a shell line if shell), started
    once the writes before it are settled."""
    argv = ["bash", "-c", cmd[0]] if shell else [str(c) for c in cmd]
    settle()
    result = subprocess.run([sys.executable, "-c", _PROBE, *argv], check=True, capture_output=True, text=True)
    seconds, rss = result.stdout.split()
    return float(seconds), int(rss)


def compile_package() -> None:
    """Byte-compile tfr_convert, as `pip install` of a wheel does.

    An editable install has no .pyc files, and with PYTHONDONTWRITEBYTECODE=1
    (set on these machines) Python compiles our modules again at every start,
    about 40 ms per command that no installed user pays. Everything the tutorial
    loops import is in site-packages, compiled already.
    """
    compileall.compile_dir(str(REPO / "src" / "tfr_convert"), quiet=1)


def median(values: list[float]) -> float:
    return statistics.median(values)


def machine() -> str:
    """Cores, CPU model and Python, to name the machine beside its figures."""
    model = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    return f"{os.cpu_count()} cores, {model or platform.processor()}, Python {platform.python_version()}"
