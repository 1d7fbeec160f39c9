"""Helpers the benchmark scripts share: timing a command, its peak memory, medians."""

from __future__ import annotations

import argparse
import compileall
import datetime
import io
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

SCRIPTS = Path(sysconfig.get_path("scripts"))
REPO = Path(__file__).resolve().parent.parent

# Runs the command as a child and reports its wall time and the peak RSS of the
# largest process among it and its descendants (workers included).
_PROBE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(time.perf_counter() - t, u.ru_maxrss, u.ru_utime + u.ru_stime)\n"
)


def settle(inputs: Sequence[str | Path] = ()) -> None:
    """Ready the machine for the next timed command: every file under `inputs` read, and
    everything written before it on disk.

    The files: this VM's host takes the page cache back within a minute or so, and the
    side of a comparison that read an input first would otherwise pay alone for reading
    it from disk. The writes: Linux writes a file's pages back in its own time (by
    default up to 30 s later), on the CPUs the next command runs on, which would then
    pay at random for the writing of the one before it."""
    files: list[Path] = []
    for p in map(Path, inputs):  # a file named is read as it is (scale.py names a million)
        files += [f for f in sorted(p.rglob("*")) if f.is_file()] if p.is_dir() else [p]
    parts = [files[i::16] for i in range(16)]
    with ThreadPoolExecutor(16) as pool:  # reads wait on the disk, not on the GIL
        list(pool.map(_read_all, parts))
    os.sync()


def _read_all(files: list[Path]) -> None:
    for f in files:
        with open(f, "rb", buffering=0) as stream:
            while stream.read(1 << 20):
                pass


def measure(cmd: list[str], shell: bool = False, inputs: Sequence[str | Path] = ()) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of one run of cmd (a shell line if shell), started
    once `settle(inputs)` has readied the machine for it."""
    seconds, rss, _ = measure_cpu(cmd, shell, inputs)
    return seconds, rss


def measure_cpu(cmd: list[str], shell: bool = False, inputs: Sequence[str | Path] = ()) -> tuple[float, int, float]:
    """`measure`, and the CPU seconds (user + system) the command and its children used."""
    argv = ["bash", "-c", cmd[0]] if shell else [str(c) for c in cmd]
    settle(inputs)
    result = subprocess.run([sys.executable, "-c", _PROBE, *argv], check=True, capture_output=True, text=True)
    seconds, rss, cpu = result.stdout.split()
    return float(seconds), int(rss), float(cpu)


def peak_rss_mib(args: Sequence[object]) -> float:
    """Run tfr-convert or tfr-inspect (`convert|inspect ARGS...`) through tests/peak_rss.py:
    its peak RSS in MiB; exits with its stderr if it fails."""
    probe = REPO / "tests" / "peak_rss.py"
    result = subprocess.run([sys.executable, str(probe), *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    line = [x for x in result.stderr.splitlines() if x.startswith("peak_rss_mib=")][-1]
    return float(line.split("=")[1])


def compile_package() -> None:
    """Byte-compile tfr_convert where it is imported from, as `pip install` of a wheel does.

    An editable install has no .pyc files (nor a wheel installed with --no-compile), and
    with PYTHONDONTWRITEBYTECODE=1 (set on these machines) Python compiles our modules
    again at every start, about 40 ms per command that no installed user pays.
    Everything the tutorial loops import is in site-packages, compiled already.
    """
    import tfr_convert

    compileall.compile_dir(os.path.dirname(tfr_convert.__file__), quiet=1)


def median(values: list[float]) -> float:
    return statistics.median(values)


def machine() -> str:
    """Cores, CPU model and Python, to name the machine beside its figures."""
    model = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = f"{usable} cores" if usable == os.cpu_count() else f"{usable} of {os.cpu_count()} cores (affinity)"
    return f"{cores}, {model or platform.processor()}, Python {platform.python_version()}"


def bench_parser(doc: str, name: str) -> argparse.ArgumentParser:
    """The options of a script that writes its own results file: --repeat, --work (a
    folder under the temporary directory, its inputs made once and kept between runs)
    and --out (benchmarks/results/NAME.md); the script adds its own."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), f"tfr-convert-bench-{name}"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / f"{name}.md"))
    return parser


def goal_rows(goals: list[tuple[str, str, float, str]]) -> list[str]:
    """The rows of a Goals table: (what, measure, value, "<= x" or ">= x") each, met or not."""
    rows = []
    for what, measure_name, value, goal in goals:
        bound = float(goal.split()[1])
        met = value <= bound if goal.startswith("<=") else value >= bound
        rows.append(f"| {what} | {measure_name} | {value:.2f} | {goal} | {'yes' if met else '**no**'} |")
    return rows


def write_results(out: str | Path, lines: list[str]) -> None:
    """A benchmark's results file (the one the docs quote), also printed."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines))
    print("\n".join(lines))


@contextmanager
def recorded(name: str) -> Iterator[None]:
    """What a benchmark prints goes to stdout and, once it has finished without an error,
    to benchmarks/results/NAME.md too, headed by the date, the machine and the command
    that reproduces it: the file the docs quote."""
    captured = io.StringIO()
    terminal = sys.stdout

    class Both(io.TextIOBase):
        def write(self, text: str) -> int:
            captured.write(text)
            return terminal.write(text)

        def flush(self) -> None:
            terminal.flush()

    sys.stdout = Both()
    try:
        yield
    finally:
        sys.stdout = terminal
    command = " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    out = REPO / "benchmarks" / "results" / f"{name}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"# {name} ({datetime.date.today()}, {machine()})\n\n`{command}`\n\n```\n{captured.getvalue()}```\n")


# Runs a loop that prints its own time; reports that time and the peak RSS of the largest
# process (the loop's, or a worker's).
_TIMED = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], check=True, capture_output=True, text=True)\n"
    "print(done.stdout.split()[-1], resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def inner_time(code: str, src: Path, *args: object) -> tuple[float, float]:
    """(the loop's own seconds, as it prints them; peak RSS MiB), its input read first."""
    settle([src])
    argv = [sys.executable, "-c", _TIMED, sys.executable, "-c", code, str(src), *map(str, args)]
    seconds, kib = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.split()
    return float(seconds), int(kib) / 1024
