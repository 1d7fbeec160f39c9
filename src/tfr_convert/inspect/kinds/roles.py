"""Which part a record's feature plays, told from its name and its first value alone (no
pixels decoded, no numpy: the exporters that only move bytes ask this too): the picture,
the shape of raw pixels, the masks."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...dataset.imageformat import sniff_format
from ...dataset.wire.example import BYTES

if TYPE_CHECKING:
    from ...dataset.existing import ExistingDataset

_KNOWN_RAW = {784: (28, 28, 1), 3072: (32, 32, 3)}


def image_feature(example: dict[str, tuple[str | None, list[Any]]]) -> str | None:
    """The feature holding the picture: the first bytes feature whose value is an image
    format, else the first named like `image` (raw pixels)."""
    candidates = [n for n, (k, v) in sorted(example.items()) if k == BYTES and v]
    for name in candidates:
        if sniff_format(example[name][1][0]):
            return name
    named = [n for n in candidates if "image" in n]
    return named[0] if named else None


def _int(example: dict, *names: str) -> int | None:
    for name in names:
        kind, values = example.get(name, (None, []))
        if values and kind == "int64_list":
            return int(values[0])
    return None


def raw_shape_of(value: bytes, example: dict, known: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """(height, width, channels) of raw uint8 pixels: from the record's height / width /
    depth (or channels) features, else `known` (the manifest's), else the well-known sizes,
    else a square of one channel; None if nothing fits the byte count."""
    h, w = _int(example, "height"), _int(example, "width")
    c = _int(example, "depth", "channels")
    positive = all(v is not None and v > 0 for v in (h, w, c))
    shape = (h, w, c) if positive else known or _KNOWN_RAW.get(len(value))
    if shape is None or math.prod(shape) != len(value):
        side = math.isqrt(len(value))
        shape = (side, side, 1) if side * side == len(value) else None
    return shape


def manifest_raw_shape(dataset: ExistingDataset) -> tuple[int, ...] | None:
    """The shape of raw pixels that a dataset's manifest states (`raw_image`), if any."""
    raw = dataset.options.get("raw_image")
    shape = raw.get("shape") if isinstance(raw, dict) else None
    if isinstance(shape, list) and len(shape) == 3 and all(type(v) is int and v > 0 for v in shape):
        return tuple(shape)
    return None


def is_mask(name: str) -> bool:
    """`segmentation_mask`, `mask`, `image/segmentation/mask`...: a feature named for one."""
    return "mask" in name.rsplit("/", 1)[-1]


def is_instance_mask(name: str) -> bool:
    """A mask of each object (`image/object/mask`): one PNG per object, not a class map."""
    return is_mask(name) and "object" in name.split("/")[:-1]
