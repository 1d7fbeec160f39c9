"""tfr-export --to images against the loop people write: tf.data.TFRecordDataset +
tf.io.parse_single_example + a file write per record, on the same dataset.

    python benchmarks/bench_export.py [--images 10000] [--repeat 5]

The dataset: --images random 32x32 PNGs in 10 class folders, converted by
`tfr-convert images` (keep: the PNG bytes are stored as they are). Both contenders
write every picture to OUT/train/CLASS/NAME; the loop's output is checked to be the
same files as the tool's (on all cores and on one worker). Times are wall-clock medians of --repeat interleaved rounds,
process start included (the loop's `import tensorflow` too, as a user's script pays it).

What it prints is written to benchmarks/results/export.md too (common.recorded), with the date,
the machine and the command.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import SCRIPTS, compile_package, recorded

LOOP = r"""
import os, sys
import tensorflow as tf
src, out = sys.argv[1], sys.argv[2]
names = open(os.path.join(src, "label.labels.txt")).read().split()
spec = {"image": tf.io.FixedLenFeature((), tf.string), "filename": tf.io.FixedLenFeature((), tf.string),
        "label": tf.io.FixedLenFeature((), tf.int64)}
files = sorted(os.path.join(src, f) for f in os.listdir(src) if ".tfrecord-" in f)
for raw in tf.data.TFRecordDataset(files):
    example = tf.io.parse_single_example(raw, spec)
    name = example["filename"].numpy().decode()
    folder = names[int(example["label"])]
    path = os.path.join(out, "train", folder, name.removeprefix(folder + "/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(example["image"].numpy())
"""


def make_dataset(root: Path, count: int) -> Path:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    pictures = root / "pictures"
    for i in range(count):
        folder = pictures / f"class{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(folder / f"{i:06d}.png")
    dataset = root / "dataset"
    subprocess.run([SCRIPTS / "tfr-convert", "images", pictures, "--out", dataset, "--quiet"], check=True)
    return dataset


def timed(cmd: list, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def same_files(a: Path, b: Path) -> bool:
    left = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    right = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return left == right and all(filecmp.cmp(a / p, b / p, shallow=False) for p in left)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parent) as tmp:
        root = Path(tmp)
        dataset = make_dataset(root, args.images)
        tool_out, loop_out = root / "tool", root / "loop"
        one_out = root / "one"
        contenders = {
            "tfr-export --to images": (
                [SCRIPTS / "tfr-export", dataset, "--to", "images", "--out", tool_out],
                tool_out,
            ),
            "tfr-export --to images --workers 1": (
                [SCRIPTS / "tfr-export", dataset, "--to", "images", "--out", one_out, "--workers", "1"],
                one_out,
            ),
            "tf.data + parse_single_example + writes": ([sys.executable, "-c", LOOP, dataset, loop_out], loop_out),
        }
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.repeat):
            for name, (cmd, out) in contenders.items():
                times[name].append(timed(cmd, out))
        assert same_files(tool_out / "train", loop_out / "train"), "the loop wrote other files than the tool"
        assert same_files(tool_out, one_out), "one worker wrote other files than all"
    medians = {name: statistics.median(t) for name, t in times.items()}
    tool, loop = medians["tfr-export --to images"], medians["tf.data + parse_single_example + writes"]
    print(f"{args.images} images, medians of {args.repeat}:")
    for name, seconds in medians.items():
        print(f"  {name:<42} {seconds:7.2f} s  {args.images / seconds:9.0f} images/s")
    print(f"  tool / loop: {loop / tool:.2f}x the loop's speed (all {os.cpu_count()} cores)")
    print(f"  all cores / one worker: {medians['tfr-export --to images --workers 1'] / tool:.2f}x")


if __name__ == "__main__":
    with recorded("export"):
        main()
