"""A folder of JPEG photos, the job most users bring: `tfr-convert images` (keep mode, 1
and 2 workers; --image-format jpeg) against the ten-line loop it replaces, webdataset's
ShardWriter, and a Pool(2) decode + encode floor, interleaved round by round.

    python benchmarks/bench_photos.py --photos 12000 --large 2000 --repeat 3
    python benchmarks/bench_photos.py --workers 1,2,16 --out benchmarks/results/photos-16-cores.md

--workers lists the worker counts of keep mode; the largest is also that of the
--image-format jpeg run and of the floors' Pool. A peer whose library is not installed
(TensorFlow, webdataset: a bigger machine lent without them) is left out, and so are the
goals measured against it.

Two photo sets are made once under --work (seeded, on every core): --photos photos of 200-420 px a
side and --large photos of 1024x768, JPEG quality 90, in 6 class folders. Ours is timed
as the whole command (start-up, listing, hashing, metadata); the peers as their bare
loop, imports not counted (each prints its own time). Peak RSS is the largest process's
(workers included). A last contender is the floor of keep mode's input and output on
its cores: the photos read, hashed and written by as many processes, no encoding at all.
Writes the medians, their spread and the goals of issue 55 to
benchmarks/results/photos.md.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import common
from common import SCRIPTS, bench_parser, compile_package, inner_time, machine, measure, median, write_results

CONVERT = str(SCRIPTS / "tfr-convert")

# The loop people write (tf.io.gfile + tf.train.Example + TFRecordWriter), timed inside.
LOOP = """
import os, sys, time
import tensorflow as tf
src, out = sys.argv[1], sys.argv[2]
t = time.perf_counter()
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
classes = {c: i for i, c in enumerate(sorted({os.path.basename(os.path.dirname(f)) for f in files}))}
with tf.io.TFRecordWriter(out) as writer:
    for path in files:
        data = tf.io.gfile.GFile(path, "rb").read()
        label = classes[os.path.basename(os.path.dirname(path))]
        example = tf.train.Example(features=tf.train.Features(feature={
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
        }))
        writer.write(example.SerializeToString())
print(time.perf_counter() - t)
"""

# webdataset's ShardWriter: tar shards of (jpg, cls) samples, timed inside.
WEBDATASET = """
import os, sys, time
import webdataset as wds
src, out = sys.argv[1], sys.argv[2]
t = time.perf_counter()
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
classes = {c: i for i, c in enumerate(sorted({os.path.basename(os.path.dirname(f)) for f in files}))}
with wds.ShardWriter(out + "-%05d.tar", maxsize=1 << 30, verbose=0) as sink:
    for n, path in enumerate(files):
        with open(path, "rb") as f:
            data = f.read()
        sink.write({"__key__": f"{n:08d}", "jpg": data, "cls": classes[os.path.basename(os.path.dirname(path))]})
print(time.perf_counter() - t)
"""

# The least --image-format jpeg can do: every photo decoded (upright) and encoded again
# with the same settings as ours (quality 95, chroma 4:2:0: Pillow's and tf.io.encode_jpeg's default)
# by a Pool of Pillow workers (as many as ours), the bytes returned to the parent.
REENCODE_FLOOR = """
import io, os, sys, time
from multiprocessing import Pool
from PIL import Image, ImageOps
def one(path):
    with Image.open(path) as im:
        im = ImageOps.exif_transpose(im).convert("RGB")
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=95, subsampling=2)
        return buf.getvalue()
if __name__ == "__main__":
    src, processes = sys.argv[1], int(sys.argv[2])
    t = time.perf_counter()
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
    with Pool(processes) as pool:
        for _ in pool.imap(one, files, chunksize=16):
            pass
    print(time.perf_counter() - t)
"""


# What keep mode cannot do without, no encoding: each of N processes reads its share
# of the photos, hashes them (sha256) and writes them to a file of its own.
IO_FLOOR = """
import hashlib, os, sys, time
from multiprocessing import Pool
def share(job):
    files, out = job
    digest = hashlib.sha256()
    with open(out, "wb", buffering=0) as sink:
        for path in files:
            with open(path, "rb", buffering=0) as f:
                data = f.read()
            digest.update(data)
            sink.write(data)
    return digest.hexdigest()
if __name__ == "__main__":
    src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t = time.perf_counter()
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
    with Pool(n) as pool:
        pool.map(share, [(files[i::n], f"{out}-{i}") for i in range(n)])
    print(time.perf_counter() - t)
"""


def make_photos(root: Path, count: int, size: tuple[int, int] | None, first: int = 0) -> None:
    """`count` seeded photos (smooth colour fields with sensor-like noise) in 6 class
    folders, 200-420 px a side or `size`, JPEG quality 90; made once. `first`: the seed
    (and number) of the first, so that another batch holds other photos."""
    done = root.with_name(root.name + ".complete")
    if done.exists():
        return
    script = f"""
import os, sys, numpy as np
from multiprocessing import Pool
from PIL import Image
root = {str(root)!r}
def one(i):
    rng = np.random.default_rng(i)
    w, h = {size!r} or (int(rng.integers(200, 421)), int(rng.integers(200, 421)))
    y, x = np.mgrid[0:h, 0:w]
    field = np.stack([(x * (i % 7 + 1)) % 256, (y * 3 + i) % 256, ((x + y) * (i % 5 + 1)) % 256], -1)
    pixels = (field + rng.normal(0, 12, (h, w, 3))).clip(0, 255).astype(np.uint8)
    folder = os.path.join(root, f"class{{i % 6}}")
    os.makedirs(folder, exist_ok=True)
    Image.fromarray(pixels).save(os.path.join(folder, f"{{i:06d}}.jpg"), quality=90)
if __name__ == "__main__":
    with Pool() as pool:
        pool.map(one, range({first}, {first + count}), chunksize=64)
"""
    subprocess.run([sys.executable, "-c", script], check=True)
    done.write_text("")


def main() -> None:
    parser = bench_parser(__doc__, "photos")
    parser.add_argument("--photos", type=int, default=12000)
    parser.add_argument("--large", type=int, default=2000)
    parser.add_argument("--workers", default="1,2", help="keep mode's worker counts, comma-separated")
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    sets = {
        f"{args.photos:,} photos, 200-420 px": work / f"photos-{args.photos}",
        f"{args.large:,} photos, 1024x768": work / f"large-{args.large}",
    }
    make_photos(sets[f"{args.photos:,} photos, 200-420 px"], args.photos, None)
    make_photos(sets[f"{args.large:,} photos, 1024x768"], args.large, (1024, 768))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    os.environ.update(env)
    counts = [int(w) for w in args.workers.split(",")]
    most = max(counts)
    keep = {w: f"tfr-convert images (keep), {w} worker{'s' * (w > 1)}" for w in counts}
    loop, wds = "the loop: tf.io.gfile + tf.train.Example + TFRecordWriter", "webdataset ShardWriter (tar shards)"
    jpeg = f"tfr-convert images --image-format jpeg, {most} worker{'s' * (most > 1)}"
    floor = f"floor: Pool({most}) Pillow decode + JPEG encode"
    contenders = {name: (lambda src, out, w=w: _ours(src, out, "--workers", str(w))) for w, name in keep.items()}
    missing = [name for name, library in ((loop, "tensorflow"), (wds, "webdataset")) if not _installed(library)]
    peers = {
        loop: lambda src, out: inner_time(LOOP, src, out / "loop.tfrecord"),
        wds: lambda src, out: inner_time(WEBDATASET, src, out / "wds"),
        jpeg: lambda src, out: _ours(src, out, "--workers", str(most), "--image-format", "jpeg"),
        floor: lambda src, out: inner_time(REENCODE_FLOOR, src, most),
        f"floor: Pool({most}) read + sha256 + write, no encoding": lambda src, out: inner_time(
            IO_FLOOR, src, out / "io", most
        ),
    }
    contenders.update((name, run) for name, run in peers.items() if name not in missing)
    times: dict[tuple[str, str], list[float]] = {}
    rss: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeat):
        for label, src in sets.items():
            for name, run in contenders.items():
                out = work / "out"
                subprocess.run(["rm", "-rf", str(out)], check=True)
                out.mkdir(parents=True)
                seconds, peak = run(src, out)
                times.setdefault((label, name), []).append(seconds)
                rss.setdefault((label, name), []).append(peak)
    lines = [
        f"# Photos ({datetime.date.today()}, {machine()}, medians of {args.repeat}, interleaved)",
        "",
        f"`python benchmarks/bench_photos.py --photos {args.photos} --large {args.large} --repeat {args.repeat}"
        + (f" --workers {args.workers}`" if args.workers != "1,2" else "`"),
        "",
        "Ours: the whole command. Peers: their bare loop, imports not counted. Page cache warm."
        + "".join(f" Not installed here, left out: {name}." for name in missing),
        "",
    ]
    goals = []
    for label in sets:
        lines += [f"## {label}", "", "| contender | time | spread | peak RSS |", "|---|---|---|---|"]
        for name in contenders:
            t = times[label, name]
            lines.append(
                f"| {name} | {median(t):.2f} s | {min(t):.2f}-{max(t):.2f} s | {median(rss[label, name]):.0f} MiB |"
            )
        m = {name: median(times[label, name]) for name in contenders}
        for w, bound in ((1, "<= 1.5"), (2, "<= 0.9")):
            if w in keep and loop in m:
                goals.append((label, f"keep, {keep[w].split(', ')[1]} / the loop", m[keep[w]] / m[loop], bound))
        if 1 in keep and wds in m:
            goals.append((label, "keep, 1 worker / webdataset", m[keep[1]] / m[wds], "<= 1.0"))
        peak = max(median(rss[label, name]) for name in keep.values())
        goals.append((label, "peak RSS of keep mode (MiB)", peak, "<= 100"))
        goals.append((label, "--image-format jpeg speed / floor speed", m[floor] / m[jpeg], ">= 0.9"))
        lines.append("")
    lines += [
        "## Goals",
        "",
        "| photos | measure | value | goal | met |",
        "|---|---|---|---|---|",
        *common.goal_rows(goals),
        "",
    ]
    write_results(args.out, lines)


def _installed(library: str) -> bool:
    return importlib.util.find_spec(library) is not None


def _ours(src: Path, out: Path, *options: str) -> tuple[float, float]:
    seconds, peak = measure([CONVERT, "images", src, "--out", out / "ours", "--quiet", *options], inputs=[src])
    return seconds, peak / 1024


if __name__ == "__main__":
    main()
