"""The scaling curve: tfr-convert on 1, 2, 4, ... workers up to the machine's cores, on
the jobs that move bytes, against the floors of each job on every core and webdataset.

    python benchmarks/bench_scale.py --photos 12000 --repeat 3
    python benchmarks/bench_scale.py --out benchmarks/results/scale-16-cores.md   # on a larger machine

Jobs (inputs made once under --work, seeded):
  keep       `tfr-convert images` of --photos JPEG photos of 200-420 px (bench_photos.py's),
             keep mode; floor: Pool(N) read + sha256 + write of the photos, no encoding;
             peers: webdataset's ShardWriter in 1 process and in N processes, each
             writing its own shards; the tutorial loop (TensorFlow) where installed.
  re-encode  the same photos, `--image-format jpeg`; floor: Pool(N) Pillow decode + JPEG
             encode as ours does (quality 95, 4:2:0), nothing written.
  reshard    `tfr-convert records` of a --records-gib file of 100 KiB records to 8 shards,
             in order; floor: Pool(N) read + sha256 + write of the file's share of each.
  table      `tfr-convert table` of --rows rows of 20 numeric columns (bench_table.py's);
             floor: pyarrow reads the Parquet and writes as many bytes (one process).
  shard writer  the parent's part alone: as many bytes as the reshard's, sealed, through
             the shard writer: for 1, a helper thread that writes and hashes; for W, a
             pool of W threads writing and hashing (the engine's from 3 workers on);
             floor: the reshard's.
N is the largest worker count. Ours runs as a user types it (process start included);
the peers and floors time their bare work, imports not counted. Every contender runs
once a round, rounds interleaved; medians of --repeat. A peer whose library is missing
(webdataset, TensorFlow, pyarrow on a machine lent without them) is left out with its
goals. Writes --out (benchmarks/results/scale.md) and beside it a plot of the speed-up
of each of our jobs against workers (scale.svg), with the floors as their own speed-up.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import common
from bench_inspect import make_file
from bench_photos import IO_FLOOR, LOOP, REENCODE_FLOOR, make_photos
from bench_table import FLOOR as TABLE_FLOOR_BODY
from common import SCRIPTS, bench_parser, compile_package, inner_time, machine, measure, median, write_results

CONVERT = str(SCRIPTS / "tfr-convert")

# webdataset's ShardWriter in N processes, each writing the shards of its share.
WEBDATASET_N = """
import os, sys, time
from multiprocessing import Pool
import webdataset as wds
def share(job):
    files, classes, pattern = job
    with wds.ShardWriter(pattern, maxsize=1 << 30, verbose=0) as sink:
        for n, path in files:
            with open(path, "rb") as f:
                data = f.read()
            sink.write({"__key__": f"{n:08d}", "jpg": data, "cls": classes[os.path.basename(os.path.dirname(path))]})
if __name__ == "__main__":
    src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t = time.perf_counter()
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
    classes = {c: i for i, c in enumerate(sorted({os.path.basename(os.path.dirname(f)) for f in files}))}
    numbered = list(enumerate(files))
    with Pool(n) as pool:
        pool.map(share, [(numbered[i::n], classes, f"{out}-{i}-%05d.tar") for i in range(n)])
    print(time.perf_counter() - t)
"""

# The least a reshard does with its bytes: N processes each read a share of the file,
# hash it and write it out.
RESHARD_FLOOR = """
import hashlib, os, sys, time
from multiprocessing import Pool
def share(job):
    src, start, stop, out = job
    digest = hashlib.sha256()
    with open(src, "rb", buffering=0) as f, open(out, "wb", buffering=0) as sink:
        f.seek(start)
        while start < stop:
            block = f.read(min(8 << 20, stop - start))
            digest.update(block)
            sink.write(block)
            start += len(block)
    return digest.hexdigest()
if __name__ == "__main__":
    src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t = time.perf_counter()
    size = os.path.getsize(src)
    cuts = [size * i // n for i in range(n + 1)]
    with Pool(n) as pool:
        pool.map(share, [(src, cuts[i], cuts[i + 1], f"{out}-{i}") for i in range(n)])
    print(time.perf_counter() - t)
"""

# The parent's part alone: sealed records of 100 KiB, as many bytes as the reshard's
# file, through the shard writer (64 MiB shards): for 1, a helper thread writes and
# hashes; for W, a pool of W threads (storage/pooled_writes.py).
SHARD_WRITER = """
import os, sys, time
from tfr_convert.containers import get
from tfr_convert.containers.framing import frame
from tfr_convert.output.shards import ShardPolicy, SplitWriter
from tfr_convert.storage.pooled_writes import WritePool
size, out, w = os.path.getsize(sys.argv[1]), sys.argv[2], int(sys.argv[3])
record = frame(os.urandom(100 << 10))
chunk, sizes = record * 10, [len(record)] * 10
batches = size // len(chunk)
class Here:
    def temp_path(self, label): return os.path.join(out, label)
    def opener(self, path): return open(path, "wb")
os.makedirs(out)
t = time.perf_counter()
pool = WritePool(w) if w > 1 else None
with SplitWriter(Here(), "train", batches * 10, ShardPolicy(), get("tfrecord"), "none", pool=pool) as writer:
    for b in range(batches):
        writer.write_chunk(chunk, sizes, b, 0)
    writer.close()
if pool is not None:
    pool.close()
print(time.perf_counter() - t)
"""

# bench_table.py's floor (pyarrow reads the table, as many bytes are written), timed inside
TABLE_FLOOR = "import time\nt = time.perf_counter()\n" + TABLE_FLOOR_BODY + "print(time.perf_counter() - t)\n"


def worker_counts(cores: int) -> list[int]:
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return [*counts, cores]


def _installed(library: str) -> bool:
    return importlib.util.find_spec(library) is not None


def _ours(args: list[object], out: Path, src: Path) -> float:
    return measure([CONVERT, *map(str, args), "--out", str(out / "ours"), "--quiet"], inputs=[src])[0]


def _written(out: Path) -> int:
    return sum(p.stat().st_size for p in (out / "ours").iterdir() if ".tfrecord-" in p.name)


def main() -> None:
    parser = bench_parser(__doc__, "scale")
    parser.add_argument("--photos", type=int, default=12000)
    parser.add_argument("--records-gib", type=float, default=1.0)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="the largest worker count")
    parser.add_argument("--workers", help="the worker counts, comma-separated (default: 1, 2, 4, ... --cores)")
    parser.add_argument("--jobs", help="the jobs to run, comma-separated (default: all of them)")
    parser.add_argument(
        "--no-single-peer", action="store_true", help="leave out webdataset in 1 process (the slowest contender)"
    )
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    counts = [int(w) for w in args.workers.split(",")] if args.workers else worker_counts(args.cores)
    most = counts[-1]
    wanted = set(args.jobs.split(",")) if args.jobs else {"keep", "re-encode", "reshard", "shard writer", "table"}
    photos = work / f"photos-{args.photos}"
    if wanted & {"keep", "re-encode"}:
        make_photos(photos, args.photos, None)
    records = work / f"records-{args.records_gib:g}GiB.tfrecord"
    if wanted & {"reshard", "shard writer"}:
        make_file(records, int(args.records_gib * (1 << 30)), 100 << 10)
    table = work / f"table-{args.rows}.parquet"
    if "table" in wanted and _installed("pyarrow") and not table.exists():
        from bench_table import make_table

        make_table(table, args.rows)

    # job -> contender -> (input, run(out) -> seconds); ours are named "ours, W workers"
    jobs: dict[str, dict[str, tuple[Path, object]]] = {"keep": {}, "re-encode": {}, "reshard": {}}
    for w in counts:
        jobs["keep"][f"ours, {w}"] = (photos, lambda out, w=w: _ours(["images", photos, "--workers", w], out, photos))
        jobs["re-encode"][f"ours, {w}"] = (
            photos,
            lambda out, w=w: _ours(["images", photos, "--image-format", "jpeg", "--workers", w], out, photos),
        )
        jobs["reshard"][f"ours, {w}"] = (
            records,
            lambda out, w=w: _ours(
                ["records", records, "--num-shards", 8, "--no-shuffle", "--workers", w], out, records
            ),
        )
    jobs["shard writer"] = {
        f"ours, {w}": (records, lambda out, w=w: inner_time(SHARD_WRITER, records, out / "s", w)[0]) for w in counts
    }
    jobs["shard writer"][f"floor: Pool({most}) read + sha256 + write"] = (
        records, lambda out: inner_time(RESHARD_FLOOR, records, out / "r", most)[0])  # fmt: skip
    jobs["keep"][f"floor: Pool({most}) read + sha256 + write"] = (
        photos, lambda out: inner_time(IO_FLOOR, photos, out / "io", most)[0])  # fmt: skip
    if _installed("webdataset"):
        if not args.no_single_peer:
            jobs["keep"]["webdataset, 1 process"] = (
                photos, lambda out: inner_time(WEBDATASET_N, photos, out / "w", 1)[0])  # fmt: skip
        jobs["keep"][f"webdataset, {most} processes"] = (
            photos, lambda out: inner_time(WEBDATASET_N, photos, out / "w", most)[0])  # fmt: skip
    if _installed("tensorflow"):
        jobs["keep"]["the loop (TensorFlow)"] = (photos, lambda out: inner_time(LOOP, photos, out / "l.tfrecord")[0])
    jobs["re-encode"][f"floor: Pool({most}) decode + JPEG encode"] = (
        photos, lambda out: inner_time(REENCODE_FLOOR, photos, most)[0])  # fmt: skip
    jobs["reshard"][f"floor: Pool({most}) read + sha256 + write"] = (
        records, lambda out: inner_time(RESHARD_FLOOR, records, out / "r", most)[0])  # fmt: skip
    if _installed("pyarrow"):
        jobs["table"] = {
            f"ours, {w}": (table, lambda out, w=w: _ours(["table", table, "--no-shuffle", "--workers", w], out, table))
            for w in counts
        }
        jobs["table"]["floor: pyarrow read + write as many bytes"] = (
            table, lambda out: inner_time(TABLE_FLOOR, table, out / "t", _table_bytes(table, work))[0])  # fmt: skip

    jobs = {job: contenders for job, contenders in jobs.items() if job in wanted}
    times: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.repeat):
        for job, contenders in jobs.items():
            for name, (_, run) in contenders.items():
                out = work / "out"
                subprocess.run(["rm", "-rf", str(out)], check=True)
                out.mkdir(parents=True)
                times.setdefault((job, name), []).append(run(out))  # type: ignore[operator]
        # written after every round, so that a run stopped early leaves what it measured
        m = {key: median(found) for key, found in times.items()}
        _report(args, jobs, times, m, counts, most, round_ + 1)
        _plot(Path(args.out).with_suffix(".svg"), jobs, m, counts)


def _table_bytes(table: Path, work: Path) -> int:
    """What ours writes of the table (one run, not timed): the floor writes as many bytes."""
    out = work / "table-size"
    if not (out / "ours").exists():
        measure([CONVERT, "table", str(table), "--no-shuffle", "--out", str(out / "ours"), "--quiet"])
    return _written(out)


def _report(args, jobs, times, m, counts: list[int], most: int, rounds: int) -> None:
    chosen = "".join(f" --{o} {getattr(args, o)}" for o in ("workers", "jobs") if getattr(args, o))
    chosen += " --no-single-peer" if args.no_single_peer else ""
    lines = [
        f"# Scaling ({datetime.date.today()}, {machine()}, medians of {rounds}, interleaved)",
        "",
        f"`python benchmarks/bench_scale.py --photos {args.photos} --records-gib {args.records_gib:g} "
        f"--rows {args.rows} --cores {args.cores}{chosen} --repeat {args.repeat}`",
        "",
        "Ours: the whole command, W workers. Floors and peers: their bare work, imports not counted.",
        "",
    ]
    goals = []
    for job, contenders in jobs.items():
        one = m[job, "ours, 1"]
        lines += [f"## {job}", "", "| contender | time | spread | speed-up over ours, 1 |", "|---|---|---|---|"]
        for name in contenders:
            t = times[job, name]
            lines.append(f"| {name} | {median(t):.2f} s | {min(t):.2f}-{max(t):.2f} s | {one / median(t):.2f}x |")
        lines.append("")
        floor = next((m[job, name] for name in contenders if name.startswith("floor")), None)
        top = m[job, f"ours, {most}"]
        if job == "keep":
            goals.append((job, f"ours, {most} / ours, 1 (speed-up)", one / top, ">= 6" if most >= 16 else ">= 1.6"))
            if floor:
                goals.append((job, f"ours, {most} / its floor", top / floor, "<= 4"))
            if (job, f"webdataset, {most} processes") in m:
                goals.append((job, f"ours, {most} / webdataset, {most} processes", top / m[job, f"webdataset, {most} processes"], "<= 1.0"))  # fmt: skip
            if (job, "the loop (TensorFlow)") in m and most <= 2:
                goals.append((job, f"ours, {most} / the loop", top / m[job, "the loop (TensorFlow)"], "<= 0.9"))
        elif job == "re-encode" and floor:
            goals.append((job, f"floor speed / ours, {most} speed", floor / top, ">= 0.9"))
        elif job in ("reshard", "shard writer") and floor:
            goals.append((job, f"ours, {most} / its floor", top / floor, "<= 1.5"))
    lines += ["## Goals (issue 74)", "", "| job | measure | value | goal | met |", "|---|---|---|---|---|"]
    lines += [*common.goal_rows(goals), ""]
    write_results(args.out, lines)


def _plot(path: Path, jobs, m, counts: list[int]) -> None:
    """Speed-up over 1 worker against workers, a line per job; each floor a mark at N."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for job, contenders in jobs.items():
        one = m[job, "ours, 1"]
        (line,) = axes.plot(counts, [one / m[job, f"ours, {w}"] for w in counts], marker="o", label=f"{job} (ours)")
        for name in contenders:
            if name.startswith("floor"):
                axes.plot([counts[-1]], [one / m[job, name]], marker="*", markersize=12, color=line.get_color(),
                          linestyle="none", label=f"{job}: {name}")  # fmt: skip
    axes.plot(counts, counts, linestyle=":", color="grey", label="linear")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log", base=2)
    axes.set_xticks(counts, [str(c) for c in counts])
    axes.set_xlabel("workers")
    axes.set_ylabel("speed-up over 1 worker")
    axes.legend(fontsize=7)
    axes.set_title(f"tfr-convert scaling ({machine()})", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, metadata={"Date": None})
    print(f"plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
