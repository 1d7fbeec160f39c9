"""Detection: images/s of `tfr-convert detection` beside generate_tfrecord.py's loop.

    python benchmarks/bench_detection.py [--images 3000] [--repeat 3] [--work DIR] [--out benchmarks/detection.md]

On --images generated JPEGs of 512x384 (photo-like, quality 90) with 1 to 4 boxes each
in the tutorial's CSV (filename,width,height,class,xmin,ymin,xmax,ymax), every run a
subprocess, the rounds interleaved (loop, ours keep x1, ours keep xN, ours jpeg x1, ours
jpeg xN, then again) so that a slow moment of a shared machine cannot flatter one side:
  - the tutorial loop (tutorial_loops.py detection), TensorFlow import included;
  - `--image-format keep` (the JPEG bytes as they are: what the loop does) and `jpeg`
    (decoded and re-encoded), each with --workers 1 and --workers N (all cores).
Prints medians, images/s and ratios; writes Markdown to --out and JSON beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_images import make_images
from common import SCRIPTS, compile_package, machine, measure, median

CONVERT = str(SCRIPTS / "tfr-convert")
LOOPS = str(Path(__file__).resolve().parent / "tutorial_loops.py")
WIDTH, HEIGHT = 512, 384


def make_dataset(root: Path, count: int) -> Path:
    """The images and their boxes CSV (in the image folder, as the tutorial keeps it)."""
    make_images(root, count, (WIDTH, HEIGHT))
    csv = root / "boxes.csv"
    if not csv.exists():
        rng = np.random.default_rng(1)
        rows = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
        for path in sorted(root.rglob("*.jpg")):
            for _ in range(rng.integers(1, 5)):
                x0, y0 = rng.integers(0, WIDTH - 40), rng.integers(0, HEIGHT - 40)
                x1, y1 = rng.integers(x0 + 20, WIDTH + 1), rng.integers(y0 + 20, HEIGHT + 1)
                name = path.relative_to(root).as_posix()
                rows.append(f"{name},{WIDTH},{HEIGHT},{['car', 'dog', 'person'][rng.integers(3)]},{x0},{y0},{x1},{y1}")
        csv.write_text("\n".join(rows) + "\n")
    return csv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tfr-bench-detection")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "detection.md")
    args = parser.parse_args()
    compile_package()
    workers = os.cpu_count() or 1
    root = args.work / f"images-{args.images}"
    csv = make_dataset(root, args.images)
    out = args.work / "out"
    runs = {
        "tutorial loop (1 process)": lambda: measure([sys.executable, LOOPS, "detection", str(csv), str(out / "loop")]),
    }
    for fmt in ("keep", "jpeg"):
        for n in sorted({1, workers}):
            runs[f"tfr-convert --image-format {fmt} --workers {n}"] = lambda fmt=fmt, n=n: measure(
                [CONVERT, "detection", str(root), "--annotations", str(csv), "--out", str(out / f"{fmt}{n}"),
                 "--image-format", fmt, "--workers", str(n), "--quiet", "--overwrite"]
            )  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in runs}
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for _ in range(args.repeat):
        for name, run in runs.items():
            times[name].append(run()[0])
    loop = median(times["tutorial loop (1 process)"])
    machine_name = machine()
    lines = [f"# Detection benchmark ({args.images} JPEGs of {WIDTH}x{HEIGHT}, 1-4 boxes each)", "",
             f"Machine: {machine_name}. Medians of {args.repeat} interleaved rounds.", "",
             "| run | median s | images/s | vs tutorial loop |", "|---|---|---|---|"]  # fmt: skip
    results = []
    for name, values in times.items():
        m = median(values)
        results.append(
            {"run": name, "seconds": values, "median": m, "images_per_s": args.images / m, "vs_loop": loop / m}
        )
        lines.append(f"| {name} | {m:.2f} | {args.images / m:,.0f} | {loop / m:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(
        json.dumps({"machine": machine_name, "images": args.images, "runs": results}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
