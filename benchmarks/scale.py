"""Scale: many images on many cores, against what a plain multiprocessing.Pool does.

    python benchmarks/scale.py [--small 1000000] [--large 20000] [--workers 1,2,4,8,16] [--repeat 1]

Needs only the local-path dependencies (numpy, Pillow, click, tqdm, crc32c): no
TensorFlow, so it runs on any bigger machine. Generates, once, in --work:
  - --small tiny JPEGs (48x48, quality 90) in 1 000 class folders;
  - --large photo-like JPEGs of 500x375.
Then, for each worker count W in --workers (those above the machine's cores skipped):
  - keep:       `tfr-convert images SMALL --image-format keep --workers W`, against the floor
                Pool(W) fully decoding every file (goal: within 1.5x);
  - re-encode:  `tfr-convert images LARGE --image-format jpeg --resize 224x224 --workers W`,
                against the floor Pool(W) decoding, resizing and encoding with no writing
                (goal: >= 0.9 of the floor's speed);
  - the parent: CPU seconds of tfr-convert's own process (its workers excluded) per image
                (goal: <= 10 us) and its peak RSS (goal: <= 400 MiB at 1M images).
Prints one table with the machine named and writes Markdown to --out.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from common import compile_package, machine, median, settle

# Runs the CLI in this process, then prints the process's own CPU time and peak RSS:
# RUSAGE_SELF leaves the worker processes out, which is the parent's share. The peak is
# VmHWM: Linux carries ru_maxrss across exec, so it would report this script's own
# size (a million file names) as the child's.
_PARENT = (
    "import resource, sys, time\n"
    "from tfr_convert.cli.convert import convert\n"
    "t = time.perf_counter()\n"
    "try:\n"
    "    convert(sys.argv[1:], standalone_mode=False)\n"
    "finally:\n"
    "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    hwm = next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM'))\n"
    "    print('PARENT', time.perf_counter() - t, u.ru_utime + u.ru_stime, hwm, file=sys.stderr)\n"
)


def _write_small(args: tuple[Path, int, int]) -> None:
    from PIL import Image

    root, start, stop = args
    rng = np.random.default_rng(start)
    for i in range(start, stop):
        folder = root / f"class{i % 1000:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        base = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8).repeat(8, 0).repeat(8, 1)
        Image.fromarray(base).save(folder / f"{i:07d}.jpg", quality=90)


def _write_large(args: tuple[Path, int, int]) -> None:
    from PIL import Image

    root, start, stop = args
    yy, xx = np.mgrid[0:375, 0:500].astype(np.float32)
    rng = np.random.default_rng(start)
    for i in range(start, stop):
        a, b, c = rng.uniform(0, 255, 3)
        base = np.stack([a * xx / 500, b * yy / 375, c * (1 - xx * yy / 187500)], axis=2)
        pixels = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
        folder = root / f"class{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(folder / f"{i:06d}.jpg", quality=90)


def generate(root: Path, count: int, writer, workers: int) -> None:
    marker = root / ".done"
    if marker.exists() and marker.read_text() == str(count):
        return
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    step = max(count // (workers * 8), 1)
    with Pool(workers) as pool:
        pool.map(writer, [(root, s, min(s + step, count)) for s in range(0, count, step)])
    marker.write_text(str(count))


def _decode(path: str) -> int:
    from PIL import Image

    with Image.open(path) as im:
        im.load()
        return im.width


def _reencode(path: str) -> int:
    from PIL import Image

    with Image.open(path) as im:
        small = im.convert("RGB").resize((224, 224), Image.Resampling.BILINEAR)
    buf = io.BytesIO()
    small.save(buf, "JPEG", quality=95)
    return len(buf.getvalue())


def floor(files: list[str], fn, workers: int) -> float:
    settle(files)
    start = time.perf_counter()
    with Pool(workers) as pool:
        for _ in pool.imap_unordered(fn, files, chunksize=64):
            pass
    return time.perf_counter() - start


def convert(args: list[str], inputs: list[str]) -> tuple[float, float, int]:
    """(wall s, parent CPU s, parent peak RSS KiB) of one tfr-convert run in a child process."""
    settle(inputs)
    run = subprocess.run([sys.executable, "-c", _PARENT, *args], capture_output=True, text=True, check=True)
    line = next(x for x in run.stderr.splitlines() if x.startswith("PARENT "))
    _, wall, cpu, rss = line.split()
    return float(wall), float(cpu), int(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--large", type=int, default=20_000)
    parser.add_argument("--workers", default="1,2,4,8,16")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tfr-bench-scale")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "scale.md")
    args = parser.parse_args()
    compile_package()  # as an installed package is: no module compiled again by each run
    cores = os.cpu_count() or 1
    counts = [w for w in (int(x) for x in args.workers.split(",")) if w <= cores]
    small, large = args.work / f"small-{args.small}", args.work / f"large-{args.large}"
    generate(small, args.small, _write_small, cores)
    generate(large, args.large, _write_large, cores)
    files = {name: sorted(str(p) for p in root.rglob("*.jpg")) for name, root in (("small", small), ("large", large))}
    lines = [
        f"# Scale ({machine()}; {args.small:,} small JPEGs, {args.large:,} of 500x375; medians of {args.repeat})",
        "",
        "| workers | keep s | Pool decode s | keep / floor (goal <= 1.5) | re-encode s | Pool floor s "
        "| floor / re-encode (goal >= 0.9) | parent us/image (goal <= 10) | parent RSS MiB (goal <= 400 at 1M) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for w in counts:
        keep, keep_floor, enc, enc_floor, parent, rss = [], [], [], [], [], []
        for _ in range(args.repeat):  # interleaved rounds
            out = args.work / "out"
            shutil.rmtree(out, ignore_errors=True)
            wall, cpu, peak = convert(["images", str(small), "--out", str(out), "--quiet", "--workers", str(w)],
                                      files["small"])  # fmt: skip
            keep.append(wall)
            parent.append(cpu / args.small * 1e6)
            rss.append(peak / 1024)
            keep_floor.append(floor(files["small"], _decode, w))
            shutil.rmtree(out, ignore_errors=True)
            enc.append(convert(["images", str(large), "--out", str(out), "--quiet", "--workers", str(w),
                                "--image-format", "jpeg", "--resize", "224x224"], files["large"])[0])  # fmt: skip
            enc_floor.append(floor(files["large"], _reencode, w))
        k, kf, e, ef = median(keep), median(keep_floor), median(enc), median(enc_floor)
        # Each row is printed as it is measured, so a run cut short still reports what it had.
        lines.append(
            f"| {w} | {k:.1f} | {kf:.1f} | {k / kf:.2f} | {e:.1f} | {ef:.1f} | {ef / e:.2f} "
            f"| {median(parent):.1f} | {max(rss):.0f} |"
        )
        print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
