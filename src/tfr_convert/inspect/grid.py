"""--grid OUT.png: a labelled contact sheet of the first N images, drawn with Pillow.

The image feature is the first bytes feature whose values are PNG/JPEG/...
(by magic bytes), else one named like `image`, holding raw uint8 pixels whose
shape comes from the record's height / width / depth (or channels) features,
from the manifest's raw_image shape, or from the well-known sizes (784 = 28x28x1,
3072 = 32x32x3). The caption is the class name when one is known, else the
label, else the file name.
"""

from __future__ import annotations

import io
import math
import os
from typing import Any

import numpy as np

from .. import fs
from ..containers import MAX_RECORD_BYTES
from ..dataset_dir import DatasetDir, class_names
from ..errors import SourceError
from ..example import BYTES
from ..imageformat import sniff_format
from .boxes import box_names, boxes_of
from .paths import resolve
from .summary import examples_of

CELL = 96  # pixels per tile side
# Images larger than this are reported, not decoded (--max-pixels raises it): a tile is
# 96 pixels wide, and a hostile PNG can declare a billion.
MAX_PIXELS = 25_000_000
CAPTION = 14
BOX_COLOUR = (255, 0, 255)  # magenta: rarely the colour of what is boxed
_KNOWN_RAW = {784: (28, 28, 1), 3072: (32, 32, 3)}


def _image_feature(example: dict[str, tuple[str | None, list[Any]]]) -> str | None:
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


def _pixels(value: bytes, example: dict, raw_shape: tuple[int, ...] | None, max_pixels: int) -> np.ndarray:
    from PIL import Image

    if sniff_format(value):
        Image.MAX_IMAGE_PIXELS = None  # the --max-pixels check below replaces Pillow's, whatever set it before
        with Image.open(io.BytesIO(value)) as im:
            if im.width * im.height > max_pixels:
                raise SourceError(
                    f"{im.width}x{im.height} = {im.width * im.height} pixels exceeds --max-pixels {max_pixels}"
                )
            im.draft("RGB", (CELL, CELL))  # JPEG: decoded at a reduced scale, as the tile needs no more
            return np.asarray(im.convert("RGB"))
    h, w = _int(example, "height"), _int(example, "width")
    c = _int(example, "depth", "channels")
    positive = all(v is not None and v > 0 for v in (h, w, c))
    shape = (h, w, c) if positive else raw_shape or _KNOWN_RAW.get(len(value))
    if shape is None or math.prod(shape) != len(value):
        side = math.isqrt(len(value))
        shape = (side, side, 1) if side * side == len(value) else None
    if shape is None:
        raise SourceError(f"cannot tell the shape of a {len(value)}-byte raw image")
    array = np.frombuffer(value, np.uint8).reshape(shape)
    return np.repeat(array, 3, axis=2) if shape[2] == 1 else array[..., :3]


def caption(example: dict, names: dict[str, list[str]]) -> str:
    """The class name: of a ClassLabel feature with names (whatever it is called), else
    of the usual label features, else the file name."""
    for feature in (*sorted(names), "label_name", "label", "label_index"):
        kind, values = example.get(feature, (None, []))
        if not values:
            continue
        if kind == "bytes_list":
            return values[0].decode("utf-8", "replace")
        if kind == "int64_list":
            index = int(values[0])
            known = names.get(feature, [])
            return known[index] if 0 <= index < len(known) else str(index)
    kind, values = example.get("filename", (None, []))
    return values[0].decode("utf-8", "replace") if values else ""


def grid(
    paths: list[str], out: str, count: int = 64, max_pixels: int = MAX_PIXELS, max_record: int = MAX_RECORD_BYTES
) -> dict[str, Any]:
    from PIL import Image, ImageDraw

    inputs = resolve(paths)
    names: dict[str, list[str]] = {}
    raw_shape = None
    for d in inputs.datasets:
        names.update(class_names(d))
        raw = DatasetDir(d).options.get("raw_image")
        shape = raw.get("shape") if isinstance(raw, dict) else None
        if isinstance(shape, list) and len(shape) == 3 and all(type(v) is int and v > 0 for v in shape):
            raw_shape = tuple(shape)
    tiles: list[tuple[np.ndarray, str, list[tuple[tuple[float, ...], str]]]] = []
    feature = None
    for path in inputs.files:
        for record, example in examples_of(path, max_record):
            if len(tiles) >= count:
                break
            if example is None:
                continue
            feature = feature or _image_feature(example)
            if feature is None or not example.get(feature, (None, []))[1]:
                continue
            try:
                pixels = _pixels(example[feature][1][0], example, raw_shape, max_pixels)
            except (OSError, ValueError, Image.DecompressionBombError) as e:
                raise SourceError(f"{path}: record {record.index}: cannot draw {feature!r}: {e}") from None
            except SourceError as e:
                raise SourceError(f"{path}: record {record.index}: {e}") from None
            boxes = boxes_of(example)
            if boxes is None:
                tiles.append((pixels, caption(example, names), []))
            else:  # a detection record: its boxes drawn, labelled with their classes; captioned by file
                labelled = list(zip(boxes, box_names(example, names, len(boxes)), strict=True))
                _, filename = example.get("image/filename", (None, []))
                name = filename[0].decode("utf-8", "replace") if filename else ""
                tiles.append((pixels, f"{name} ({len(boxes)})", labelled))
        if len(tiles) >= count:
            break
    if not tiles:
        raise SourceError(f"{', '.join(paths)}: no images found to draw")
    columns = math.ceil(math.sqrt(len(tiles)))
    rows = math.ceil(len(tiles) / columns)
    sheet = Image.new("RGB", (columns * CELL, rows * (CELL + CAPTION)), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for i, (pixels, text, boxes) in enumerate(tiles):
        tile = Image.fromarray(pixels)
        scale = (CELL - 4) / max(tile.size)
        resample = Image.Resampling.NEAREST if scale >= 1 else Image.Resampling.BILINEAR
        tile = tile.resize((max(1, round(tile.width * scale)), max(1, round(tile.height * scale))), resample)
        x, y = (i % columns) * CELL, (i // columns) * (CELL + CAPTION)
        left, top = x + (CELL - tile.width) // 2, y + (CELL - tile.height) // 2
        sheet.paste(tile, (left, top))
        for (xmin, ymin, xmax, ymax), name in boxes:
            corners = [
                left + xmin * tile.width,
                top + ymin * tile.height,
                left + xmax * tile.width,
                top + ymax * tile.height,
            ]
            draw.rectangle(corners, outline=BOX_COLOUR, width=1)
            draw.text((corners[0] + 1, corners[1]), name[:10], fill=BOX_COLOUR)
        draw.text((x + 2, y + CELL), text[:16], fill=(0, 0, 0))
    picture = io.BytesIO()
    sheet.save(picture, format="PNG")
    if not fs.is_remote(out):
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fs.put_bytes(out, picture.getvalue())
    return {"mode": "grid", "out": out, "images": len(tiles), "feature": feature}
