"""The numbers an annotation format is written with: the shortest decimals from which
`tfr-convert detection`'s own arithmetic (per format) gives back the stored float32
corners, area and keypoints, so whole-pixel annotations come back as whole numbers and
a conversion of the export gives the same shards byte for byte."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

DIGITS = range(0, 13)  # decimals tried, fewest first


def f32(value: float) -> float:
    return float(np.float32(value))


def _shortest(candidates: Callable[[int], tuple[float, ...]], *checks: Callable[[tuple[float, ...]], bool]):
    """The first of candidates(0), candidates(1)... that passes the first check, else the
    first that passes the next (a looser) one, else the last tried."""
    values: tuple[float, ...] = ()
    for check in checks:
        for digits in DIGITS:
            values = candidates(digits)
            if check(values):
                return values
    return values


def pixel_corners(
    box: dict[str, Any], w: int, h: int, shift: float = 0.0, area_written: bool = False
) -> tuple[float, ...]:
    """(xmin, ymin, xmax, ymax) in pixels as written (plus `shift`: VOC's 1-based pixels):
    the shortest that give the stored corners and area again through the converter's
    `float(text) - shift`, then `/ width`."""
    stored = tuple(box[k] for k in ("xmin", "ymin", "xmax", "ymax"))
    exact = (stored[0] * w, stored[1] * h, stored[2] * w, stored[3] * h)

    def corners(values: tuple[float, ...]) -> bool:
        x0, y0, x1, y1 = (v - shift for v in values)
        return (f32(x0 / w), f32(y0 / h), f32(x1 / w), f32(y1 / h)) == stored

    def and_area(values: tuple[float, ...]) -> bool:
        x0, y0, x1, y1 = (v - shift for v in values)
        stated = area_written or box["area"] is None
        return corners(values) and (stated or f32((x1 - x0) * (y1 - y0)) == box["area"])

    # the area too where the format derives it from the box; an area that came from
    # elsewhere (COCO's, of a segmentation) cannot come back through a box-only format
    return _shortest(lambda d: tuple(round(v + shift, d) for v in exact), and_area, corners)


def coco_box(box: dict[str, Any], w: int, h: int) -> tuple[float, ...]:
    """[x, y, width, height] as COCO writes them; the converter takes x + width as xmax."""
    x0, y0, x1, y1 = pixel_corners(box, w, h, area_written=True)  # COCO states the area: written as stored
    stored = (box["xmax"], box["ymax"])

    def check(values: tuple[float, ...]) -> bool:
        return (f32((x0 + values[0]) / w), f32((y0 + values[1]) / h)) == stored

    bw, bh = _shortest(lambda d: (round(x1 - x0, d), round(y1 - y0, d)), check)
    return x0, y0, bw, bh


def yolo_box(box: dict[str, Any], w: int, h: int) -> tuple[float, ...]:
    """(cx, cy, w, h) normalized; the converter takes (cx -/+ w / 2) * width as the corners."""
    stored = tuple(box[k] for k in ("xmin", "ymin", "xmax", "ymax"))
    exact = ((stored[0] + stored[2]) / 2, (stored[1] + stored[3]) / 2, stored[2] - stored[0], stored[3] - stored[1])

    def pixels(values: tuple[float, ...]) -> tuple[float, ...]:
        cx, cy, bw, bh = values
        return (cx - bw / 2) * w, (cy - bh / 2) * h, (cx + bw / 2) * w, (cy + bh / 2) * h

    def corners(values: tuple[float, ...]) -> bool:
        x0, y0, x1, y1 = pixels(values)
        return (f32(x0 / w), f32(y0 / h), f32(x1 / w), f32(y1 / h)) == stored

    def and_area(values: tuple[float, ...]) -> bool:
        x0, y0, x1, y1 = pixels(values)
        return corners(values) and (box["area"] is None or f32((x1 - x0) * (y1 - y0)) == box["area"])

    return _shortest(lambda d: tuple(round(v, d + 3) for v in exact), and_area, corners)


def keypoint_pixels(points: list[tuple[float, float, int]], w: int, h: int) -> list[float]:
    """[x, y, v, ...] as COCO writes keypoints: the shortest pixels that the converter's
    `x / width` turns back into the stored float32."""
    flat: list[float] = []
    for x, y, v in points:
        exact = (x * w, y * h)
        flat += _shortest(
            lambda d, exact=exact: (round(exact[0], d), round(exact[1], d)),
            lambda c, x=x, y=y: (f32(c[0] / w), f32(c[1] / h)) == (x, y),
        )
        flat.append(int(v))
    return flat


def number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)
