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


# Class colours of an overlay (index modulo their count); IGNORE is left uncoloured.
COLOURS = np.array(
    [
        (230, 25, 75),
        (60, 180, 75),
        (255, 225, 25),
        (0, 130, 200),
        (245, 130, 48),
        (145, 30, 180),
        (70, 240, 240),
        (240, 50, 230),
        (210, 245, 60),
        (250, 190, 212),
        (0, 128, 128),
        (170, 110, 40),
    ],
    dtype=np.float32,
)
IGNORE = 255
ALPHA = 0.45


def mask_of(example: dict[str, tuple[str | None, list[Any]]]) -> bytes | None:
    """A record's segmentation mask: a mask-named feature holding one PNG."""
    for name, (kind, values) in sorted(example.items()):
        if is_mask(name) and kind == "bytes_list" and len(values) == 1 and sniff_format(values[0]) == "png":
            return values[0]
    return None


def overlay(pixels: np.ndarray, mask: bytes) -> np.ndarray:
    """RGB pixels with each class of the mask tinted in its colour (the mask scaled to the
    picture, nearest neighbour); the picture unchanged where the mask is unreadable."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(mask)) as im:
            if im.mode not in ("L", "P"):
                return pixels
            height, width = pixels.shape[:2]
            indices = np.asarray(im.resize((width, height), Image.Resampling.NEAREST))
    except (OSError, ValueError, Image.DecompressionBombError):
        return pixels
    colours = COLOURS[indices % len(COLOURS)]
    tinted = pixels.astype(np.float32) * (1 - ALPHA) + colours * ALPHA
    tinted[indices == IGNORE] = pixels[indices == IGNORE]
    return np.round(tinted).astype(np.uint8)
