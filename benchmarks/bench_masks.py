"""tfr-convert detection --masks against the loop of create_coco_tf_record.py --include_masks
(the Object Detection API's: pycocotools draws each mask, Pillow writes it as PNG,
tf.train.Example + TFRecordWriter), on the same COCO dataset.

    python benchmarks/bench_masks.py [--images 2000] [--repeat 5]

The dataset: --images 320x240 JPEGs with four polygon objects each (8 to 16 vertices)
and, on every tenth image, a crowd region as an uncompressed RLE (as COCO's own files
store crowds; the script's frPyObjects reads no other RLE). The tool runs on all
cores and on one worker; the loop on one process, as the script does. Every mask PNG
the loop wrote is checked to be the very bytes the tool wrote for the same object.
Times are wall-clock medians of --repeat interleaved rounds, process start included
(the loop's `import tensorflow` too, as a user's script pays it).

What it prints is written to benchmarks/results/masks.md too (common.recorded), with the date,
the machine and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import SCRIPTS, compile_package, machine, recorded

LOOP = r"""
import io, json, os, sys
import numpy as np
import PIL.Image
import tensorflow as tf
from pycocotools import mask
images, annotations, out = sys.argv[1:4]
doc = json.load(open(annotations))
by_image = {}
for a in doc["annotations"]:
    by_image.setdefault(a["image_id"], []).append(a)
with tf.io.TFRecordWriter(out) as writer:
    for image in doc["images"]:
        h, w = image["height"], image["width"]
        with open(os.path.join(images, image["file_name"]), "rb") as f:
            encoded = f.read()
        PIL.Image.open(io.BytesIO(encoded))
        xmin, ymin, xmax, ymax, labels, masks = [], [], [], [], [], []
        for a in by_image.get(image["id"], []):
            x, y, bw, bh = a["bbox"]
            xmin.append(x / w); ymin.append(y / h); xmax.append((x + bw) / w); ymax.append((y + bh) / h)
            labels.append(a["category_id"])
            binary = mask.decode(mask.frPyObjects(a["segmentation"], h, w))
            if not a["iscrowd"]:
                binary = np.amax(binary, axis=2)
            png = io.BytesIO()
            PIL.Image.fromarray(binary).save(png, format="PNG")
            masks.append(png.getvalue())
        feature = {
            "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[encoded])),
            "image/filename": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image["file_name"].encode()])),
            "image/height": tf.train.Feature(int64_list=tf.train.Int64List(value=[h])),
            "image/width": tf.train.Feature(int64_list=tf.train.Int64List(value=[w])),
            "image/object/bbox/xmin": tf.train.Feature(float_list=tf.train.FloatList(value=xmin)),
            "image/object/bbox/ymin": tf.train.Feature(float_list=tf.train.FloatList(value=ymin)),
            "image/object/bbox/xmax": tf.train.Feature(float_list=tf.train.FloatList(value=xmax)),
            "image/object/bbox/ymax": tf.train.Feature(float_list=tf.train.FloatList(value=ymax)),
            "image/object/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=labels)),
            "image/object/mask": tf.train.Feature(bytes_list=tf.train.BytesList(value=masks)),
        }
        writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
"""


def make_dataset(root: Path, count: int) -> tuple[Path, Path]:
    import numpy as np
    from PIL import Image

    from tfr_convert.dataset import coco_rle

    rng = np.random.default_rng(0)
    images = root / "images"
    images.mkdir()
    w, h = 320, 240
    ramp = np.linspace(0, 255, w, dtype=np.float32)[None, :, None]
    entries, annotations = [], []
    for i in range(count):
        pixels = np.clip(ramp * rng.random(3) + rng.normal(0, 12, (h, w, 3)), 0, 255).astype(np.uint8)
        name = f"{i:06d}.jpg"
        Image.fromarray(pixels).save(images / name, quality=90)
        entries.append({"id": i + 1, "file_name": name, "width": w, "height": h})
        for k in range(4):
            cx, cy, r = rng.uniform(40, w - 40), rng.uniform(40, h - 40), rng.uniform(10, 40)
            angles = np.sort(rng.uniform(0, 2 * np.pi, rng.integers(8, 17)))
            radii = r * rng.uniform(0.6, 1.0, len(angles))
            xs, ys = cx + radii * np.cos(angles), cy + radii * np.sin(angles)
            polygon = np.round(np.stack([xs, ys], 1).reshape(-1), 2).tolist()
            bbox = [float(xs.min()), float(ys.min()), float(xs.max() - xs.min()), float(ys.max() - ys.min())]
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1, "category_id": 1 + k % 3,
                                "bbox": bbox, "area": float(bbox[2] * bbox[3]), "iscrowd": 0,
                                "segmentation": [polygon]})  # fmt: skip
        if i % 10 == 0:
            crowd = np.zeros((h, w), np.uint8)
            crowd[150:230, 10:300] = rng.random((80, 290)) < 0.7
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1, "category_id": 1,
                                "bbox": [10.0, 150.0, 290.0, 80.0], "area": float(crowd.sum()), "iscrowd": 1,
                                "segmentation": {"size": [h, w], "counts": coco_rle.to_runs(crowd).tolist()}})  # fmt: skip
    categories = [{"id": k, "name": n} for k, n in ((1, "cat"), (2, "dog"), (3, "bird"))]
    path = root / "instances.json"
    path.write_text(json.dumps({"images": entries, "annotations": annotations, "categories": categories}))
    return images, path


def timed(cmd: list, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def masks_by_image(files: list[Path]) -> dict[str, list[bytes]]:
    import tensorflow as tf

    spec = {"image/filename": tf.io.FixedLenFeature((), tf.string), "image/object/mask": tf.io.VarLenFeature(tf.string)}
    found = {}
    for raw in tf.data.TFRecordDataset([str(f) for f in files]):
        ex = tf.io.parse_single_example(raw, spec)
        found[ex["image/filename"].numpy().decode()] = list(tf.sparse.to_dense(ex["image/object/mask"]).numpy())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parent) as tmp:
        root = Path(tmp)
        images, annotations = make_dataset(root, args.images)
        tool = [SCRIPTS / "tfr-convert", "detection", images, "--annotations", annotations, "--masks", "--quiet"]
        contenders = {
            "tfr-convert detection --masks": ([*tool, "--out", root / "all"], root / "all"),
            "tfr-convert detection --masks --workers 1": (
                [*tool, "--out", root / "one", "--workers", "1"],
                root / "one",
            ),
            "create_coco_tf_record-style loop": (
                [sys.executable, "-c", LOOP, images, annotations, root / "loop.tfrecord"],
                root / "loop.tfrecord",
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.repeat):
            for name, (cmd, out) in contenders.items():
                times[name].append(timed(cmd, out))
        tool_masks = masks_by_image(sorted((root / "all").glob("*.tfrecord-*")))
        assert tool_masks == masks_by_image([root / "loop.tfrecord"]), "the loop's masks differ from the tool's"
        one = sorted((root / "one").glob("*.tfrecord-*"))
        assert [p.read_bytes() for p in one] == [p.read_bytes() for p in sorted((root / "all").glob("*.tfrecord-*"))]
    medians = {name: statistics.median(t) for name, t in times.items()}
    all_cores, loop = medians["tfr-convert detection --masks"], medians["create_coco_tf_record-style loop"]
    print(f"{args.images} images ({args.images * 4 + args.images // 10} masks), medians of {args.repeat}, {machine()}:")
    for name, seconds in medians.items():
        print(f"  {name:<44} {seconds:7.2f} s  {args.images / seconds:8.0f} images/s")
    print(f"  all {os.cpu_count()} cores / loop: {loop / all_cores:.2f}x the loop's speed")
    print(f"  all cores / one worker: {medians['tfr-convert detection --masks --workers 1'] / all_cores:.2f}x")
    print("  masks: the loop's PNGs are byte-identical to the tool's; one worker's shards equal all cores'")


if __name__ == "__main__":
    with recorded("masks"):
        main()
