"""Keypoints under the Object Detection API's keys (`image/object/keypoint/x|y|visibility`,
normalized, the same number for every object, back to back), wherever a record holds
them: drawn by --grid with the dataset's skeleton."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dataset.wire.example import FLOAT, INT64
from .boxes import boxes_of

KEYS = ("image/object/keypoint/x", "image/object/keypoint/y")
VISIBILITY = "image/object/keypoint/visibility"


def keypoints_of(example: dict[str, tuple[str | None, list[Any]]]) -> list[np.ndarray]:
    """Each object's keypoints as a (K, 3) array of x, y (fractions of the image) and
    visibility (0: not labelled); [] when the record has none, or they do not divide
    evenly among its boxes."""
    x, y = (example.get(key, (None, [])) for key in KEYS)
    boxes = boxes_of(example)
    if x[0] != FLOAT or y[0] != FLOAT or not x[1] or len(x[1]) != len(y[1]) or not boxes:
        return []
    if len(x[1]) % len(boxes):
        return []
    kind, visibility = example.get(VISIBILITY, (None, []))
    seen = visibility if kind == INT64 and len(visibility) == len(x[1]) else [2] * len(x[1])
    table = np.stack([np.asarray(x[1], np.float64), np.asarray(y[1], np.float64), np.asarray(seen, np.float64)], 1)
    return list(table.reshape(len(boxes), -1, 3))
