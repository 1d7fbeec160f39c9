"""Salvage's cost on this machine: how fast `records --on-error skip` searches garbage for
the next record, and the whole command on 10 records followed by 256 MiB of zeros,
gzipped (the case that once wrote a whole inflated copy and scanned it at ~2 MB/s).

    python benchmarks/bench_salvage.py --repeat 3

Garbage kinds (64 MiB each, after 5 bytes that break the first header): random bytes,
zeros, sparse (1% of the bytes non-zero) and small integers (0-3: every length field is
plausible). Each is timed through containers.salvage.salvage_records, in this process;
the command is timed whole, with its peak RSS. Writes benchmarks/results/salvage.md.
"""

from __future__ import annotations

import datetime
import sys
import time
import zlib
from pathlib import Path

import numpy as np
from common import REPO, SCRIPTS, bench_parser, compile_package, machine, measure, median, write_results

sys.path.insert(0, str(REPO / "tests"))

KINDS = ("random", "zeros", "sparse", "small integers")
GARBAGE = 64 << 20


def _garbage(kind: str, rng: np.random.Generator) -> bytes:
    if kind == "random":
        return rng.integers(0, 256, GARBAGE, dtype=np.uint8).tobytes()
    if kind == "zeros":
        return bytes(GARBAGE)
    if kind == "sparse":
        a = np.zeros(GARBAGE, np.uint8)
        at = rng.integers(0, GARBAGE, GARBAGE // 100)
        a[at] = rng.integers(1, 256, len(at), dtype=np.uint8)
        return a.tobytes()
    return rng.integers(0, 4, GARBAGE, dtype=np.uint8).tobytes()


def _zeros_case(work: Path) -> Path:
    """10 records, then 256 MiB of zeros, gzipped as written."""
    import tensorflow as tf

    path = work / "zeros-train.tfrecord.gz"
    if path.exists():
        return path
    with tf.io.TFRecordWriter(str(work / "head.tfrecord")) as writer:
        for i in range(10):
            feature = {"i": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(packer.compress((work / "head.tfrecord").read_bytes()))
        block = bytes(8 << 20)
        for _ in range(32):
            f.write(packer.compress(block))
        f.write(packer.flush())
    return path


def main() -> None:
    parser = bench_parser(__doc__, "salvage")
    args = parser.parse_args()
    compile_package()
    from tfr_convert.containers.salvage import salvage_records

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    files = {}
    for kind in KINDS:
        files[kind] = work / f"garbage-{kind.replace(' ', '-')}.tfrecord"
        files[kind].write_bytes(b"\x01" * 5 + _garbage(kind, rng))
    packed = _zeros_case(work)
    scans: dict[str, list[float]] = {kind: [] for kind in KINDS}
    command: list[tuple[float, int]] = []
    for _ in range(args.repeat):  # interleaved: each round times every case once
        for kind in KINDS:
            started = time.perf_counter()
            found = list(salvage_records(str(files[kind])))
            scans[kind].append(time.perf_counter() - started)
            assert len(found) == 1, kind  # one loss, the whole file
        out = work / "out"
        salvage = [SCRIPTS / "tfr-convert", "records", packed, "--out", out, "--overwrite", "--on-error", "skip"]
        command.append(measure([*salvage, "--quiet"]))
    lines = [
        f"# Salvage ({datetime.date.today()}, {machine()}, medians of {args.repeat}, interleaved)",
        "",
        f"`python benchmarks/bench_salvage.py --repeat {args.repeat}`",
        "",
        "| garbage (64 MiB after a broken header) | search speed | spread |",
        "|---|---|---|",
    ]
    for kind in KINDS:
        speeds = [GARBAGE / s / 1e6 for s in scans[kind]]
        lines.append(f"| {kind} | {median(speeds):.0f} MB/s | {min(speeds):.0f}-{max(speeds):.0f} |")
    seconds = [s for s, _ in command]
    lines += [
        "",
        "| whole command | time | spread | peak RSS |",
        "|---|---|---|---|",
        f"| `tfr-convert records` on 10 records + 256 MiB of zeros, gzipped ({packed.stat().st_size:,} bytes), "
        f"`--on-error skip` | {median(seconds):.2f} s | {min(seconds):.2f}-{max(seconds):.2f} s "
        f"| {median([r for _, r in command]) / 1024:.0f} MiB |",
        "",
    ]
    write_results(args.out, lines)


if __name__ == "__main__":
    main()
