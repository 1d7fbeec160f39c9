"""Segmentation masks (a PNG of class indices per record, as TFDS's `segmentation_mask`):
how many pixels each class covers, and in how many images it appears."""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

import numpy as np

from ..imageformat import sniff_format


def is_mask(name: str) -> bool:
    """`segmentation_mask`, `mask`, `image/segmentation/mask`...: a feature named for one."""
    return "mask" in name.rsplit("/", 1)[-1]


class MaskStats:
    def __init__(self) -> None:
        self.masks = self.unreadable = 0
        self.pixels: Counter[int] = Counter()
        self.images_with: Counter[int] = Counter()

    def add(self, values: list[bytes]) -> None:
        """One record's mask; a list of several (instance masks) is not a class map and is left out."""
        if len(values) != 1 or sniff_format(values[0]) != "png":
            return
        from PIL import Image

        try:
            with Image.open(io.BytesIO(values[0])) as im:
                if im.mode not in ("L", "P", "I", "I;16"):
                    return  # colours, not class indices
                indices = np.asarray(im).ravel()
        except (OSError, ValueError, Image.DecompressionBombError):
            self.unreadable += 1
            return
        counts = np.bincount(indices.astype(np.int64))
        present = np.flatnonzero(counts)
        self.masks += 1
        self.pixels.update(dict(zip(present.tolist(), counts[present].tolist(), strict=True)))
        self.images_with.update(present.tolist())

    def to_dict(self) -> dict[str, Any] | None:
        if not self.masks:
            return None
        return {
            "masks": self.masks,
            "unreadable": self.unreadable,
            "pixels": {str(k): v for k, v in sorted(self.pixels.items())},
            "images_with": {str(k): v for k, v in sorted(self.images_with.items())},
        }
