"""Masks in records, wherever a record holds them: a segmentation mask (a PNG of class
indices per record, as TFDS's `segmentation_mask`: how many pixels each class covers,
and in how many images it appears) and instance masks (a 0/1 PNG per object under
`image/object/mask`, as the Object Detection API stores them: how many per image);
both tinted over the picture by --grid, with keypoints and their skeleton."""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

import numpy as np

from ...dataset.imageformat import sniff_format
from .roles import is_instance_mask, is_mask


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
            "images_share": {str(k): v / self.masks for k, v in sorted(self.images_with.items())},
        }


class InstanceStats:
    """Instance masks per image."""

    def __init__(self) -> None:
        self.images = self.instances = self.most = self.without = 0

    def add(self, values: list[bytes]) -> None:
        self.images += 1
        self.instances += len(values)
        self.most = max(self.most, len(values))
        self.without += not values

    def to_dict(self) -> dict[str, Any] | None:
        if not self.images:
            return None
        return {
            "images": self.images,
            "instances": self.instances,
            "per_image": {"max": self.most, "mean": self.instances / self.images},
            "images_without": self.without,
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


def mask_of(example: dict[str, tuple[str | None, list[Any]]]) -> tuple[str, bytes] | None:
    """A record's segmentation mask (its feature, its PNG): a mask-named feature holding one PNG."""
    for name, (kind, values) in sorted(example.items()):
        if (
            is_mask(name)
            and not is_instance_mask(name)
            and kind == "bytes_list"
            and len(values) == 1
            and sniff_format(values[0]) == "png"
        ):
            return name, values[0]
    return None


def instance_masks_of(example: dict[str, tuple[str | None, list[Any]]]) -> list[bytes]:
    """A record's instance masks (one PNG per object), [] if it has none."""
    for name, (kind, values) in sorted(example.items()):
        if is_instance_mask(name) and kind == "bytes_list":
            return [v for v in values if sniff_format(v) == "png"]
    return []


def _indices(mask: bytes, width: int, height: int) -> np.ndarray | None:
    """A one-channel mask PNG's values scaled to the picture (nearest neighbour); None if unreadable."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(mask)) as im:
            if im.mode not in ("L", "P"):
                return None
            if im.size != (width, height):
                return np.asarray(im.resize((width, height), Image.Resampling.NEAREST))
            return np.asarray(im)
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def _tinted(pixels: np.ndarray, colours: np.ndarray, where: np.ndarray) -> np.ndarray:
    tinted = pixels.astype(np.float32)
    tinted[where] = tinted[where] * (1 - ALPHA) + colours[where] * ALPHA
    return np.round(tinted).astype(np.uint8)


def overlay(pixels: np.ndarray, mask: bytes, background: int | None = None) -> np.ndarray:
    """RGB pixels with each class of the mask tinted in its colour (the mask scaled to the
    picture, nearest neighbour), but IGNORE and `background`; the picture unchanged where
    the mask is unreadable."""
    height, width = pixels.shape[:2]
    indices = _indices(mask, width, height)
    if indices is None:
        return pixels
    return _tinted(pixels, COLOURS[indices % len(COLOURS)], (indices != IGNORE) & (indices != background))


def overlay_instances(pixels: np.ndarray, masks: list[bytes], classes: list[int]) -> np.ndarray:
    """RGB pixels with each object's mask tinted in its class's colour (`classes`: a
    number per mask; objects of one class share a colour), later objects over earlier."""
    height, width = pixels.shape[:2]
    for mask, klass in zip(masks, classes, strict=True):
        inside = _indices(mask, width, height)
        if inside is not None:
            colour = np.broadcast_to(COLOURS[klass % len(COLOURS)], (height, width, 3))
            pixels = _tinted(pixels, colour, inside > 0)
    return pixels
