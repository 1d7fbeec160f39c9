"""The notebook loops tfr-convert replaces, as the tutorials write them (the baseline of run.py).

    python benchmarks/tutorial_loops.py mnist SRC_DIR OUT_FILE
    python benchmarks/tutorial_loops.py cifar BATCHES_DIR OUT_PREFIX
    python benchmarks/tutorial_loops.py images IMAGE_DIR OUT_FILE
    python benchmarks/tutorial_loops.py detection IMAGE_DIR/BOXES.csv OUT_FILE

One process, TensorFlow imported, one tf.train.Example per example, tf.io.TFRecordWriter.
(The CIFAR loop uses pickle.load, as the tutorial does: never do that on files you did
not make yourself.)
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import sys

import numpy as np
import tensorflow as tf


def _bytes(value: bytes) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _int64(value: int) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def mnist(src: str, out: str) -> None:
    for split, prefix in (("train", "train"), ("test", "t10k")):
        with gzip.open(os.path.join(src, f"{prefix}-images-idx3-ubyte.gz")) as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
        with gzip.open(os.path.join(src, f"{prefix}-labels-idx1-ubyte.gz")) as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        with tf.io.TFRecordWriter(f"{out}-{split}") as writer:
            for image, label in zip(images, labels, strict=True):
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "height": _int64(28),
                            "width": _int64(28),
                            "depth": _int64(1),
                            "label": _int64(int(label)),
                            "image_raw": _bytes(image.tobytes()),
                        }
                    )
                )
                writer.write(example.SerializeToString())


def cifar(src: str, out: str) -> None:
    with open(os.path.join(src, "batches.meta"), "rb") as f:
        names = pickle.load(f, encoding="bytes")[b"label_names"]
    batches = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in batches:
        with open(os.path.join(src, name), "rb") as f:
            batch = pickle.load(f, encoding="bytes")
        images = batch[b"data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        with tf.io.TFRecordWriter(f"{out}-{name}.tfrecord") as writer:
            for image, label in zip(images, batch[b"labels"], strict=True):
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image": _bytes(image.tobytes()),
                            "label_index": _int64(label),
                            "label_name": _bytes(names[label]),
                        }
                    )
                )
                writer.write(example.SerializeToString())


def images(src: str, out: str) -> None:
    from PIL import Image

    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
    classes = sorted({os.path.basename(os.path.dirname(f)) for f in files})
    with tf.io.TFRecordWriter(out) as writer:
        for path in files:
            image = Image.open(path).convert("RGB")
            buf = io.BytesIO()
            image.save(buf, format="JPEG", quality=90)
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "image": _bytes(buf.getvalue()),
                        "label": _int64(classes.index(os.path.basename(os.path.dirname(path)))),
                        "height": _int64(image.height),
                        "width": _int64(image.width),
                    }
                )
            )
            writer.write(example.SerializeToString())


def detection(csv_path: str, out: str) -> None:
    """generate_tfrecord.py's loop: group the box rows by filename, read each JPEG,
    open it with Pillow for its size, one Example with the Object Detection API's keys."""
    import csv
    from collections import defaultdict

    from PIL import Image

    image_dir = os.path.dirname(csv_path)
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    grouped: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        grouped[row["filename"]].append(row)
    classes = sorted({row["class"] for row in rows})
    with tf.io.TFRecordWriter(out) as writer:
        for filename, boxes in grouped.items():
            with tf.io.gfile.GFile(os.path.join(image_dir, filename), "rb") as fid:
                encoded = fid.read()
            width, height = Image.open(io.BytesIO(encoded)).size

            def floats(key: str, scale: int, boxes=boxes) -> tf.train.Feature:
                return tf.train.Feature(float_list=tf.train.FloatList(value=[float(b[key]) / scale for b in boxes]))

            feature = {
                "image/height": _int64(height),
                "image/width": _int64(width),
                "image/filename": _bytes(filename.encode()),
                "image/source_id": _bytes(filename.encode()),
                "image/encoded": _bytes(encoded),
                "image/format": _bytes(b"jpeg"),
                "image/object/bbox/xmin": floats("xmin", width),
                "image/object/bbox/xmax": floats("xmax", width),
                "image/object/bbox/ymin": floats("ymin", height),
                "image/object/bbox/ymax": floats("ymax", height),
                "image/object/class/text": tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[b["class"].encode() for b in boxes])
                ),
                "image/object/class/label": tf.train.Feature(
                    int64_list=tf.train.Int64List(value=[classes.index(b["class"]) + 1 for b in boxes])
                ),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


if __name__ == "__main__":
    loops = {"mnist": mnist, "cifar": cifar, "images": images, "detection": detection}
    loops[sys.argv[1]](sys.argv[2], sys.argv[3])
