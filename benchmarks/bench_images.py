"""Image-folder conversion: workers scaling, the tutorial loop, and memory vs folder size.

    python benchmarks/bench_images.py [--images 2000] [--size 256] [--repeat 3] [--rss-small 2000 --rss-large 20000]

Everything runs in one invocation on the same machine and the same files:
  1. `tfr-convert images DIR --image-format png` with --workers 1 and --workers 2;
  2. a tutorial-style loop in one process (Pillow decode + PNG encode,
     tf.train.Example, tf.io.TFRecordWriter), timed after TensorFlow is imported;
  3. peak RSS of `tfr-convert` (largest process, workers included) on folders
     of --rss-small and --rss-large small images.
Times are medians of --repeat runs; the machine is shared, so ratios matter
more than absolute seconds.

What it prints is written to benchmarks/results/images.md too (common.recorded), with the date,
the machine and the command.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from common import SCRIPTS, measure, median, recorded

CONVERT = str(SCRIPTS / "tfr-convert")


def make_images(root: Path, count: int, size: int | tuple[int, int], seed: int = 0) -> None:
    """Photo-like JPEGs (smooth gradients plus noise) in 10 class folders; size is N or (width, height)."""
    from PIL import Image

    if root.exists() and sum(1 for _ in root.rglob("*.jpg")) == count:
        return
    shutil.rmtree(root, ignore_errors=True)
    width, height = (size, size) if isinstance(size, int) else size
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    yy, xx = yy / height, xx / width
    for i in range(count):
        a, b, c = rng.uniform(0, 255, 3)
        base = np.stack([a * xx, b * yy, c * (1 - xx * yy)], axis=2)
        pixels = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
        folder = root / f"class{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(folder / f"{i:06d}.jpg", quality=90)


def run_convert(src: Path, out: Path, *args: str) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB of the largest process) of one tfr-convert run."""
    shutil.rmtree(out, ignore_errors=True)
    return measure([CONVERT, "images", str(src), "--out", str(out), "--quiet", *args])


def tutorial_loop(src: Path, out: Path) -> float:
    """The notebook way: one process, one Example per file, TFRecordWriter."""
    import tensorflow as tf
    from PIL import Image

    files = sorted(src.rglob("*.jpg"))
    classes = sorted({f.parent.name for f in files})
    start = time.perf_counter()
    with tf.io.TFRecordWriter(str(out)) as writer:
        for path in files:
            image = Image.open(path).convert("RGB")
            buf = io.BytesIO()
            image.save(buf, format="PNG")
            feature = {
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[buf.getvalue()])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[classes.index(path.parent.name)])),
                "height": tf.train.Feature(int64_list=tf.train.Int64List(value=[image.height])),
                "width": tf.train.Feature(int64_list=tf.train.Int64List(value=[image.width])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rss-small", type=int, default=2000)
    parser.add_argument("--rss-large", type=int, default=20000)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tfr-convert-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    src = work / f"images-{args.images}-{args.size}"
    make_images(src, args.images, args.size)
    print(f"# {args.images} JPEGs of {args.size}x{args.size}, re-encoded to PNG; {os.cpu_count()} cores", flush=True)
    times = {1: [], 2: []}
    tutorial = []
    for _ in range(args.repeat):
        for workers in (1, 2):
            times[workers].append(run_convert(src, work / "out", "--image-format", "png", "--workers", str(workers))[0])
        tutorial.append(tutorial_loop(src, work / "tutorial.tfrecord"))
    t1, t2, tt = median(times[1]), median(times[2]), median(tutorial)
    print(f"tutorial loop (1 process)      {tt:7.2f} s  {args.images / tt:8.0f} img/s")
    print(f"tfr-convert --workers 1        {t1:7.2f} s  {args.images / t1:8.0f} img/s")
    print(f"tfr-convert --workers 2        {t2:7.2f} s  {args.images / t2:8.0f} img/s")
    print(f"ratio workers 2 / workers 1    {t1 / t2:7.2f}x  (goal >= 1.7x)")
    print(f"ratio workers 2 / tutorial     {tt / t2:7.2f}x")

    rss = {}
    for count in (args.rss_small, args.rss_large):
        folder = work / f"images-{count}-32"
        make_images(folder, count, 32, seed=1)
        rss[count] = run_convert(folder, work / "out-rss", "--workers", "2", "--image-format", "png")[1]
        print(f"peak RSS, {count:6d} images        {rss[count] / 1024:7.1f} MiB", flush=True)
    print(
        f"ratio RSS {args.rss_large} / {args.rss_small}        {rss[args.rss_large] / rss[args.rss_small]:7.2f}x  (goal <= 1.2x)"
    )


if __name__ == "__main__":
    with recorded("images"):
        main()
