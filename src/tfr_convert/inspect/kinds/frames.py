"""A clip as --grid and --report draw it: four of its frames in two rows of two (a
square, as a tile is; fewer for a shorter clip), read left to right, top to bottom
(TFDS's Video feature: one encoded picture per frame; or a SequenceExample's feature
list of them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dataset.existing import ExistingDataset
from ...dataset.imageformat import sniff_format
from ...dataset.wire.example import BYTES

STRIP_FRAMES = 4  # drawn per clip: the first, the last and evenly between


def video_features(dataset: ExistingDataset) -> set[str]:
    """The dataset's Video features (one per example, not per object)."""
    return {
        name
        for name, (description, per_object, _) in dataset.flat_features.items()
        if description.get("pythonClassName", "").endswith("video_feature.Video") and not per_object
    }


def frame_list(example: dict[str, tuple[str | None, list[Any]]]) -> str | None:
    """A SequenceExample's feature list of encoded pictures (MediaPipe's image/encoded),
    if the record has one: its steps are a clip's frames."""
    for name, (kind, steps) in sorted(example.items()):
        if kind == f"feature_list[{BYTES}]" and steps and steps[0] and sniff_format(steps[0][0]):
            return name
    return None


def frames_shown(count: int) -> list[int]:
    """Which of `count` frames a strip shows: STRIP_FRAMES evenly spaced, first and last included."""
    if count <= STRIP_FRAMES:
        return list(range(count))
    return [round(i * (count - 1) / (STRIP_FRAMES - 1)) for i in range(STRIP_FRAMES)]


def strip(frames: list[np.ndarray]) -> np.ndarray:
    """RGB frames in rows of two, each scaled to the first's size, a pixel of black
    between them (a missing fourth frame is black)."""
    from PIL import Image

    height, width = frames[0].shape[:2]
    same = [
        f if f.shape[:2] == (height, width) else np.asarray(Image.fromarray(f).resize((width, height))) for f in frames
    ]
    columns = min(2, len(same))
    rows = -(-len(same) // columns)
    out = np.zeros((rows * (height + 1) - 1, columns * (width + 1) - 1, 3), np.uint8)
    for at, frame in enumerate(same):
        top, left = (at // columns) * (height + 1), (at % columns) * (width + 1)
        out[top : top + height, left : left + width] = frame
    return out
