"""tfr-inspect --count / --verify on a large file, against `cat FILE > /dev/null`, and on a small file.

    python benchmarks/bench_inspect.py [--gib 1] [--record-kib 100] [--repeat 3]

The large file holds records of --record-kib random bytes (image-sized by
default; try --record-kib 1 for MNIST-sized records, where per-record Python
work dominates). The file is read once first so that every contender reads it
from the page cache; times are wall-clock medians of --repeat runs of each
command as a user would type it (process start included). The small-file
figure is `tfr-inspect` (summary mode) on the shipped MNIST sample, converted.

What it prints is written to benchmarks/results/inspect.md too (common.recorded), with the date,
the machine and the command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import REPO, SCRIPTS, compile_package, recorded


def make_file(path: Path, total: int, record: int) -> int:
    from tfr_convert.containers.framing import frame

    if path.exists() and path.stat().st_size >= total:
        return path.stat().st_size
    payload = os.urandom(record)
    with open(path, "wb") as f:
        written = 0
        i = 0
        while written < total:
            # vary each record a little so the CRCs differ
            framed = frame(i.to_bytes(8, "little") + payload[8:])
            f.write(framed)
            written += len(framed)
            i += 1
    return path.stat().st_size


def big_file(work: Path, gib: float, record_kib: float) -> tuple[Path, int]:
    """(the large file of records, its size), made if missing, read once so that every
    contender reads it from the page cache."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"big-{gib:g}GiB-{record_kib:g}KiB.tfrecord"
    size = make_file(path, int(gib * (1 << 30)), int(record_kib * 1024))
    subprocess.run(["cat", str(path)], check=True, stdout=subprocess.DEVNULL)
    return path, size


def timed(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--record-kib", type=float, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tfr-convert-bench"))
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    big, size = big_file(work, args.gib, args.record_kib)
    inspect = str(SCRIPTS / "tfr-inspect")
    cat = timed(["cat", str(big)], args.repeat)
    count = timed([inspect, "--count", str(big)], args.repeat)
    verify = timed([inspect, "--verify", str(big)], args.repeat)
    gib = size / (1 << 30)
    print(f"# {gib:.2f} GiB, records of {args.record_kib:g} KiB, page cache warm, medians of {args.repeat}")
    print(f"cat FILE > /dev/null          {cat:7.3f} s  {gib / cat:6.2f} GiB/s")
    print(f"tfr-inspect --count           {count:7.3f} s  {gib / count:6.2f} GiB/s  {cat / count:6.0%} of cat")
    print(f"tfr-inspect --verify          {verify:7.3f} s  {gib / verify:6.2f} GiB/s  {cat / verify:6.0%} of cat")

    small = work / "sample"
    subprocess.run([str(SCRIPTS / "tfr-convert"), "mnist", str(REPO / "examples" / "mnist-sample"), "--out",
                    str(small), "--overwrite", "--quiet"], check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    summary = timed([inspect, str(small)], args.repeat)
    print(f"tfr-inspect on the sample     {summary:7.3f} s  (600 records, summary mode)")


if __name__ == "__main__":
    with recorded("inspect"):
        main()
