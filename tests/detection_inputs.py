"""One small detection dataset, written in each annotation format (CSV, VOC, COCO, YOLO), and the Object Detection API's keys."""

from __future__ import annotations

import json

import numpy as np
import tensorflow as tf
from PIL import Image

# The Object Detection API's own parsing spec (its TfExampleDecoder's keys and kinds).
OD_API_KEYS = {
    "image/encoded": tf.io.FixedLenFeature((), tf.string),
    "image/format": tf.io.FixedLenFeature((), tf.string),
    "image/filename": tf.io.FixedLenFeature((), tf.string),
    "image/source_id": tf.io.FixedLenFeature((), tf.string),
    "image/key/sha256": tf.io.FixedLenFeature((), tf.string),
    "image/height": tf.io.FixedLenFeature((), tf.int64),
    "image/width": tf.io.FixedLenFeature((), tf.int64),
    "image/object/bbox/xmin": tf.io.VarLenFeature(tf.float32),
    "image/object/bbox/ymin": tf.io.VarLenFeature(tf.float32),
    "image/object/bbox/xmax": tf.io.VarLenFeature(tf.float32),
    "image/object/bbox/ymax": tf.io.VarLenFeature(tf.float32),
    "image/object/class/text": tf.io.VarLenFeature(tf.string),
    "image/object/class/label": tf.io.VarLenFeature(tf.int64),
    "image/object/difficult": tf.io.VarLenFeature(tf.int64),
    "image/object/truncated": tf.io.VarLenFeature(tf.int64),
    "image/object/is_crowd": tf.io.VarLenFeature(tf.int64),
    "image/object/area": tf.io.VarLenFeature(tf.float32),
}
CLASSES = ["bird", "cat", "dog"]  # sorted, so every format numbers them alike
COCO_IDS = {"bird": 2, "cat": 5, "dog": 9}  # not contiguous, as COCO's own
# image -> (width, height, [(class, xmin, ymin, xmax, ymax) in pixel edges])
DATASET = {
    "a.jpg": (64, 48, [("cat", 2, 3, 30, 40), ("dog", 20, 10, 64, 48)]),
    "b.jpg": (50, 70, [("bird", 0, 0, 25, 35)]),
    "sub/c.png": (40, 40, [("dog", 5, 6, 35, 36), ("dog", 1, 1, 9, 9), ("cat", 10, 20, 30, 30)]),
    "d.jpg": (32, 32, []),  # a negative: no annotation names it (YOLO: an empty file)
}


def write_images(root, dataset=DATASET):
    rng = np.random.default_rng(0)
    for name, (w, h, _) in dataset.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
    return root


def write_csv(path, dataset=DATASET):
    rows = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
    rows += [
        f"{n},{w},{h},{c},{x0},{y0},{x1},{y1}" for n, (w, h, boxes) in dataset.items() for c, x0, y0, x1, y1 in boxes
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def write_voc(folder, dataset=DATASET, origin=1):
    """`origin` 1: pixels counted from 1, as the devkit writes them; 0: as 0-based tools export."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (w, h, boxes) in dataset.items():
        if not boxes:
            continue
        objects = "".join(
            f"<object><name>{c}</name><pose>Unspecified</pose><truncated>{int(x1 == w)}</truncated>"
            f"<difficult>{int(c == 'bird')}</difficult><bndbox><xmin>{x0 + origin}</xmin><ymin>{y0 + origin}</ymin>"
            f"<xmax>{x1 + origin}</xmax><ymax>{y1 + origin}</ymax></bndbox></object>"
            for c, x0, y0, x1, y1 in boxes
        )
        xml = (f"<annotation><folder>x</folder><filename>{name}</filename><size><width>{w}</width>"
               f"<height>{h}</height><depth>3</depth></size>{objects}</annotation>")  # fmt: skip
        (folder / (name.replace("/", "_") + ".xml")).write_text(xml)
    return folder


def write_coco(path, dataset=DATASET):
    images, annotations = [], []
    for i, (name, (w, h, boxes)) in enumerate(dataset.items(), 100):
        images.append({"id": i, "file_name": name, "width": w, "height": h})
        for c, x0, y0, x1, y1 in boxes:
            annotations.append({"id": len(annotations) + 1, "image_id": i, "category_id": COCO_IDS[c],
                                "bbox": [x0, y0, x1 - x0, y1 - y0], "area": 12.5, "iscrowd": int(c == "cat")})  # fmt: skip
    categories = [{"id": i, "name": n} for n, i in sorted(COCO_IDS.items(), key=lambda kv: -kv[1])]
    path.write_text(json.dumps({"images": images, "annotations": annotations, "categories": categories}))
    return path


def write_yolo(folder, dataset=DATASET):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "classes.txt").write_text("\n".join(CLASSES) + "\n")
    for name, (w, h, boxes) in dataset.items():
        lines = [
            f"{CLASSES.index(c)} {(x0 + x1) / 2 / w:.6f} {(y0 + y1) / 2 / h:.6f} {(x1 - x0) / w:.6f} {(y1 - y0) / h:.6f}"
            for c, x0, y0, x1, y1 in boxes
        ]
        label = folder / (name.rsplit(".", 1)[0] + ".txt")
        label.parent.mkdir(parents=True, exist_ok=True)
        label.write_text("".join(line + "\n" for line in lines))
    return folder


WRITERS = {"csv": lambda r: write_csv(r / "boxes.csv"), "voc": lambda r: write_voc(r / "Annotations"),
           "coco": lambda r: write_coco(r / "instances_train.json"), "yolo": lambda r: write_yolo(r / "labels")}  # fmt: skip
