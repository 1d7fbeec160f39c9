"""Keep mode at scale on this machine: `tfr-convert images` over N tiny PNGs (MNIST images
in 100 class folders, as `run.py` makes 40 000 of them) against a `Pool(W)` that fully
decodes the same files (`floors.py decode`), interleaved round by round.

    python benchmarks/bench_keep.py --files 1000000 --workers 2 --repeat 3

Writes the medians and their ratio to benchmarks/keep.md. The inputs are made once under
--work (a million files take a few minutes to write and about 4 GB of disk).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
from pathlib import Path

from common import REPO, compile_package, machine
from run import CONVERT, FLOORS, against_floor, make_mnist, make_tiny_pngs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tfr-convert-bench"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "keep.md"))
    args = parser.parse_args()
    compile_package()
    work = Path(args.work) / "full"
    mnist_src = work / "mnist"
    make_mnist(mnist_src, 60_000, 10_000)
    tiny = work / f"tiny-pngs-{args.files}"
    make_tiny_pngs(tiny, mnist_src, args.files)
    workers = str(args.workers)
    result = against_floor(
        f"keep, {args.files} tiny PNGs",
        [CONVERT, "images", tiny, "--out", work / "o-keep-scale", "--quiet", "--workers", workers],
        [sys.executable, FLOORS, "decode", tiny, "--workers", workers],
        tiny,
        work / "o-keep-scale",
        args.repeat,
    )
    Path(args.out).write_text(
        f"# Keep mode at scale ({datetime.date.today()}, {machine()}, medians of {args.repeat})\n\n"
        "`python benchmarks/bench_keep.py "
        f"--files {args.files} --workers {args.workers} --repeat {args.repeat}`\n\n"
        f"| files | workers | tfr-convert images (keep) | Pool({args.workers}) decode | ratio |\n"
        "|---|---|---|---|---|\n"
        f"| {args.files:,} | {args.workers} | {result['ours_s']:.2f} s | {result['floor_s']:.2f} s "
        f"| {result['ours_vs_floor']:.2f} |\n"
    )


if __name__ == "__main__":
    main()
