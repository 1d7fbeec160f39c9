"""tfr-convert table on a numeric Parquet file against the loop people write
(`pd.read_parquet` + `df.iterrows()` + `tf.train.Example` + `TFRecordWriter`) and a
floor that reads the Parquet with pyarrow and writes as many bytes as our output holds.

    python benchmarks/bench_table.py [--rows 1000000] [--loop-rows 20000] [--repeat 3]
                                     [--rss-rows 0]

The table: --rows rows of 20 columns (10 int64 of mixed widths, 10 float32), one file.
Ours runs as a user types it (process start included), in the loop's order
(--no-shuffle) on 1 worker and on every core, and with its default shuffle. The loop
runs on the first --loop-rows rows and is scaled to --rows: its start (imports) once,
its per-row time times rows (a million-row loop takes minutes). The floor: a Python
process that imports pyarrow, reads the file and writes as many bytes as ours wrote.
Medians of --repeat interleaved rounds; peak RSS of ours from the kernel (ru_maxrss).
--rss-rows N also reports our peak RSS on an N-row table (one run in source order, one
shuffled, one split by --split ratios and shuffled, one split keeping whole groups) and
on an N-row labelled table (an int64, a label of 10 classes and a group of 10,000 values:
split with --label-column, with --stratify, and with --stratify keeping whole groups).

What it prints is written to benchmarks/results/table.md too (common.recorded), with the
date, the machine and the command. Where TensorFlow or pandas is not installed (a bigger
machine lent without them) the loop is left out, and so are the goals against it;
benchmarks/results/table-16-cores.md is such a run's table.md, renamed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import SCRIPTS, compile_package, measure, recorded

LOOP = r"""
import sys, time
import pandas as pd
import tensorflow as tf
src, out, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
started = time.perf_counter()
df = pd.read_parquet(src).head(rows)
with tf.io.TFRecordWriter(out) as writer:
    for _, row in df.iterrows():
        feature = {}
        for name, value in row.items():
            if name.startswith("i"):
                feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))
            else:
                feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(value)]))
        writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
print(time.perf_counter() - started)
"""

FLOOR = r"""
import sys
import pyarrow.parquet as pq
src, out, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
table = pq.read_table(src)
chunk = bytes(16 << 20)
with open(out, "wb") as f:
    while size > 0:
        f.write(chunk[: min(size, len(chunk))])
        size -= len(chunk)
"""


def make_labelled(path: Path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    group = rng.integers(0, 10_000, rows)
    columns = {"x": rng.integers(0, 1000, rows), "label": group * 7919 % 10, "g": group}  # a group's rows share a label
    pq.write_table(pa.table(columns), path, row_group_size=1 << 17)


def make_table(path: Path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    columns = {}
    for i in range(10):  # ints of 1 to 10 varint bytes: counts, ids, negatives
        columns[f"i{i}"] = rng.integers(-(10 ** (i % 5)), 10 ** (2 + i), rows, dtype=np.int64)
    for i in range(10):
        columns[f"f{i}"] = rng.standard_normal(rows).astype(np.float32)
    pq.write_table(pa.table(columns), path, row_group_size=1 << 17)


def output_bytes(out: Path) -> int:
    return sum(p.stat().st_size for p in out.iterdir() if ".tfrecord-" in p.name)


def time_loop(src: Path, out: Path, loop_rows: int, rows: int) -> float:
    """The loop's time on `loop_rows` rows, scaled to `rows`: its start once, its per-row time times rows."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", LOOP, str(src), str(out), str(loop_rows)], check=True, capture_output=True, text=True
    )
    whole = time.perf_counter() - started
    per_rows = float(result.stdout.split()[-1])
    return whole - per_rows + per_rows * rows / loop_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--loop-rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rss-rows", type=int, default=0)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tfr-convert-bench-table"))
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"numbers-{args.rows}.parquet"
    if not src.exists():
        make_table(src, args.rows)
    convert = str(SCRIPTS / "tfr-convert")
    ours = {
        "tfr-convert table, 1 worker, --no-shuffle": ["--workers", "1", "--no-shuffle"],
        f"tfr-convert table, {os.cpu_count()} workers, --no-shuffle": ["--no-shuffle"],
        f"tfr-convert table, {os.cpu_count()} workers (default: shuffled)": [],
    }
    # A machine lent without TensorFlow or pandas runs the rest and says what it left out.
    has_loop = all(importlib.util.find_spec(library) for library in ("tensorflow", "pandas"))
    times: dict[str, list[float]] = {name: [] for name in [*ours, *(["loop (scaled)"] if has_loop else []), "floor"]}
    rss: dict[str, int] = {}
    size = 0
    for _ in range(args.repeat):
        for name, extra in ours.items():
            out = work / "out"
            shutil.rmtree(out, ignore_errors=True)
            seconds, peak = measure([convert, "table", src, "--out", out, "--quiet", *extra], inputs=[src])
            times[name].append(seconds)
            rss[name] = max(rss.get(name, 0), peak)
            size = output_bytes(out)
        if has_loop:
            times["loop (scaled)"].append(time_loop(src, work / "loop.tfrecord", args.loop_rows, args.rows))
        seconds, _ = measure([sys.executable, "-c", FLOOR, src, work / "floor.bin", str(size)], inputs=[src])
        times["floor"].append(seconds)
    loop = statistics.median(times["loop (scaled)"]) if has_loop else None
    floor = statistics.median(times["floor"])
    print(f"{args.rows:,} rows x 20 columns (10 int64, 10 float32), Parquet {src.stat().st_size / 2**20:.1f} MiB; "
          f"our output {size / 2**20:.1f} MiB; medians of {args.repeat}")  # fmt: skip
    print()
    print("| contender | time | vs the loop | vs the floor | peak RSS |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        t = statistics.median(values)
        memory = f"{rss[name] / 1024:.0f} MiB" if name in rss else ""
        versus = f"{loop / t:.1f}x" if loop else ""
        print(f"| {name} | {t:.2f} s | {versus} | {t / floor:.2f}x | {memory} |")
    print()
    if loop:
        print(f"the loop ran on {args.loop_rows:,} rows and is scaled to {args.rows:,} (its start once)")
    else:
        print("TensorFlow or pandas is not installed here: the loop is left out")
    goals = []  # issue 53's, on every core: >= 30x the loop, <= 3x the floor; <= 500 MiB at 10 M rows
    for name in list(ours)[1:]:
        t = statistics.median(times[name])
        if loop:
            goals.append((f"{name}: speed / the loop's", loop / t, ">= 30", loop / t >= 30))
        goals.append((f"{name}: time / the floor's", t / floor, "<= 3", t / floor <= 3))
    if args.rss_rows:
        big = work / f"numbers-{args.rss_rows}.parquet"
        if not big.exists():
            make_table(big, args.rss_rows)
        labelled = work / f"labelled-{args.rss_rows}.parquet"
        if not labelled.exists():
            make_labelled(labelled, args.rss_rows)
        out = work / "out-big"
        split = ["--split", "train=0.9,test=0.1"]
        by_label = ["--label-column", "label", *split]
        for label, source, extra in (
            ("--no-shuffle", big, ["--no-shuffle"]),
            ("shuffled (the default)", big, []),
            ("--split train=0.9,test=0.1, shuffled", big, split),
            (
                "--split train=0.9,test=0.1 --group-column i2 (10,100 groups), shuffled",
                big,
                [*split, "--group-column", "i2"],
            ),
            ("labelled, --label-column label --split train=0.9,test=0.1, shuffled", labelled, by_label),
            ("labelled, the same --stratify", labelled, [*by_label, "--stratify"]),
            (
                "labelled, the same --stratify --group-column g (10,000 groups)",
                labelled,
                [*by_label, "--stratify", "--group-column", "g"],
            ),
        ):
            shutil.rmtree(out, ignore_errors=True)
            seconds, peak = measure([convert, "table", source, "--out", out, "--quiet", *extra], inputs=[source])
            print(f"{args.rss_rows:,} rows, {label}: {seconds:.1f} s, peak RSS {peak / 1024:.0f} MiB")
            goals.append(
                (f"{args.rss_rows:,} rows, {label}: peak RSS (MiB)", peak / 1024, "<= 500", peak <= 500 * 1024)
            )
        shutil.rmtree(out, ignore_errors=True)
    print()
    print("| goal | value | wanted | met |")
    print("|---|---|---|---|")
    for what, value, wanted, met in goals:
        print(f"| {what} | {value:.2f} | {wanted} | {'yes' if met else '**no**'} |")


if __name__ == "__main__":
    with recorded("table"):
        main()
