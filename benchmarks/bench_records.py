"""tfr-convert records (reshard, shuffle) on a large TFRecord file, against the floor
`cat SRC > DST` of the same bytes, with the peak RSS of each run.

    python benchmarks/bench_records.py [--gib 1] [--record-kib 100] [--shards 8] [--repeat 3]

The source holds records of --record-kib random bytes. It is read once first, so that
every contender reads it from the page cache; each contender writes to a fresh folder
on the same disk. Times are wall-clock medians of --repeat interleaved rounds of each
command as a user types it (process start included); the reshard keeps the order
(--no-shuffle), the shuffle is the default. Peak RSS from the kernel's accounting of
the child (ru_maxrss). Beside `cat`, `cat` followed by a sha256 of the copy (hashlib: OpenSSL): the
floor of a reshard whose manifest lists every shard's sha256, as tfr-convert's does; and
copy_hash_floor.py, the same copy and hashes on every core at once (that floor on this
machine).

What it prints is written to benchmarks/results/records.md too (common.recorded), with the date,
the machine and the command.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_inspect import big_file
from common import SCRIPTS, compile_package, recorded, settle

HERE = Path(__file__).resolve().parent

# OpenSSL's sha256 through hashlib (coreutils' sha256sum is several times slower here)
_SHA256 = 'import hashlib, sys; print(hashlib.file_digest(open(sys.argv[1], "rb"), "sha256").hexdigest())'


def timed(cmd: list[str], out: Path, src: Path, stdout_to: Path | None = None) -> tuple[float, int]:
    """(seconds, peak RSS in bytes of the process and the children it waited for) of one
    run writing `out` (a folder or a file: removed first, so that no run pays for
    truncating the last one's output), started once `settle` has read `src` and put
    everything written before on disk (no run pays for the last one's writeback)."""
    shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)
    if stdout_to is not None:
        stdout_to.unlink(missing_ok=True)
    settle([src])
    sink = open(stdout_to, "wb") if stdout_to is not None else subprocess.DEVNULL
    try:
        start = time.perf_counter()
        process = subprocess.Popen(cmd, stdout=sink)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stdout_to is not None:
            sink.close()
    if process.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({process.returncode})")
    return seconds, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--record-kib", type=float, default=100)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tfr-convert-bench"))
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    src, size = big_file(work, args.gib, args.record_kib)
    convert = str(SCRIPTS / "tfr-convert")
    common = [convert, "records", str(src), "--num-shards", str(args.shards), "--quiet", "--overwrite"]
    copy = work / "cat-out.tfrecord"
    contenders = {
        "cat SRC > DST": lambda: timed(["cat", str(src)], copy, src, stdout_to=copy),
        # what a reshard that lists each shard's sha256 (the manifest) must do at least
        "cat, then sha256 of DST": lambda: timed(
            ["bash", "-c", f"cat {src} > {copy} && {sys.executable} -c '{_SHA256}' {copy}"],
            copy,
            src,
        ),
        # the same work spread over every core: the floor of such a reshard on this machine
        "copy || sha256, all cores": lambda: timed(
            [sys.executable, str(HERE / "copy_hash_floor.py"), str(src), str(copy), "--parts", str(args.shards)],
            copy,
            src,
        ),
        "records --no-shuffle": lambda: timed(
            [*common, "--out", str(work / "reshard"), "--no-shuffle"], work / "reshard", src
        ),
        "records (shuffle)": lambda: timed([*common, "--out", str(work / "shuffle")], work / "shuffle", src),
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    peaks: dict[str, int] = {}
    for _ in range(args.repeat):  # interleaved: a slow moment of the machine hits every contender
        for name, run in contenders.items():
            seconds, peak = run()
            times[name].append(seconds)
            peaks[name] = peak
    gib = size / (1 << 30)
    floor = statistics.median(times["cat SRC > DST"])
    print(f"# {gib:.2f} GiB, records of {args.record_kib:g} KiB, {args.shards} shards, page cache warm, "
          f"medians of {args.repeat}")  # fmt: skip
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:26} {median:7.3f} s  {gib / median:6.2f} GiB/s  {floor / median:6.0%} of cat  "
              f"peak RSS {peaks[name] / (1 << 20):6.0f} MiB")  # fmt: skip
    for path in (work / "cat-out.tfrecord", work / "reshard", work / "shuffle"):
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


if __name__ == "__main__":
    with recorded("records"):
        main()
