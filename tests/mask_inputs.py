"""COCO instance masks and keypoints, written by hand, and the Object Detection API's keys for them."""

from __future__ import annotations

import json

import numpy as np
import tensorflow as tf
from pycocotools import mask as coco_mask

from detection_inputs import OD_API_KEYS, write_images
from tfr_convert.dataset import coco_rle

# The API's decoder keys for what this adds (TfExampleDecoder with PNG instance masks and
# num_keypoints): masks as PNG strings, keypoints as flat lists.
MASK_KEYS = {
    **OD_API_KEYS,
    "image/object/mask": tf.io.VarLenFeature(tf.string),
    "image/object/keypoint/x": tf.io.VarLenFeature(tf.float32),
    "image/object/keypoint/y": tf.io.VarLenFeature(tf.float32),
    "image/object/keypoint/visibility": tf.io.VarLenFeature(tf.int64),
    "image/object/keypoint/text": tf.io.VarLenFeature(tf.string),
    "image/object/keypoint/num": tf.io.VarLenFeature(tf.int64),
}
KEYPOINTS = ["nose", "left_eye", "right_eye", "left_hand", "right_hand"]
SKELETON = [[1, 2], [1, 3], [2, 4], [3, 5]]


def parsed(out, keys=MASK_KEYS):
    found = {}
    for record in tf.data.TFRecordDataset([str(p) for p in sorted(out.glob("*.tfrecord-*"))]):
        ex = tf.io.parse_single_example(record, {k: v for k, v in keys.items()})
        ex = {k: tf.sparse.to_dense(v).numpy() if isinstance(v, tf.SparseTensor) else v.numpy() for k, v in ex.items()}
        found[ex["image/filename"].decode()] = ex
    return found


def decoded_masks(ex) -> list[np.ndarray]:
    """As the API's decoder does: each PNG to one channel, > 0 is the object."""
    return [tf.io.decode_png(png, channels=1).numpy()[..., 0] for png in ex["image/object/mask"]]


# image -> (width, height, [(category, segmentation, iscrowd, keypoints or None)])
def coco_dataset():
    square = [[4.0, 4.0, 20.5, 4.0, 20.5, 18.2, 4.0, 18.2]]
    two_parts = [[30, 2, 40, 2, 35, 12], [41.3, 20.7, 60, 25.2, 50.5, 40.1, 44, 33]]
    crowd = np.zeros((48, 64), np.uint8)
    crowd[30:46, 2:25] = 1
    crowd[40:44, 30:60] = 1
    crowd_rle = coco_mask.encode(np.asfortranarray(crowd))
    crowd_rle = {"size": crowd_rle["size"], "counts": crowd_rle["counts"].decode()}
    ring = np.zeros((70, 50), np.uint8)
    ring[10:60, 5:45] = 1
    ring[25:45, 15:35] = 0
    uncompressed = {"size": [70, 50], "counts": coco_rle.to_runs(ring).tolist()}
    points = [10, 8, 2, 14, 6, 2, 8, 6, 1, 0, 0, 0, 18.5, 17.25, 2]
    return {
        "a.jpg": (64, 48, [("person", square, 0, points), ("dog", two_parts, 0, None), ("dog", crowd_rle, 1, None)]),
        "b.png": (50, 70, [("person", uncompressed, 0, [0] * 15)]),
        "c.jpg": (40, 40, []),
    }


def write_coco(path, dataset, keypoints=True):
    ids = {"person": 1, "dog": 18}
    images, annotations = [], []
    for i, (name, (w, h, objects)) in enumerate(dataset.items(), 1):
        images.append({"id": i, "file_name": name, "width": w, "height": h})
        for category, segmentation, crowd, points in objects:
            mask = coco_rle.decode(segmentation, h, w)
            ys, xs = np.nonzero(mask)
            ann = {"id": len(annotations) + 1, "image_id": i, "category_id": ids[category], "iscrowd": crowd,
                   "bbox": [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)],
                   "area": int(mask.sum()), "segmentation": segmentation}  # fmt: skip
            if points is not None:
                ann["keypoints"] = points
                ann["num_keypoints"] = sum(v > 0 for v in points[2::3])
            annotations.append(ann)
    person = {"id": 1, "name": "person"}
    if keypoints:
        person |= {"keypoints": KEYPOINTS, "skeleton": SKELETON}
    doc = {"images": images, "annotations": annotations, "categories": [person, {"id": 18, "name": "dog"}]}
    path.write_text(json.dumps(doc))
    return path


def coco_case(cli, tmp_path, *args, dataset=None, keypoints=True):
    dataset = dataset or coco_dataset()
    images = write_images(tmp_path / "images", {n: (w, h, []) for n, (w, h, _) in dataset.items()})
    annotations = write_coco(tmp_path / "person_keypoints.json", dataset, keypoints)
    out = tmp_path / "out"
    result = cli.convert("detection", images, "--annotations", annotations, "--out", out, "--no-shuffle", *args)
    return result, out, annotations
