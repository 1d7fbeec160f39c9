"""COCO's instance masks: polygons and run-length encodings (RLE), to and from pixels.

A COCO `segmentation` is a list of polygons `[[x0, y0, x1, y1, ...], ...]` (their
union), an uncompressed RLE `{"size": [h, w], "counts": [n0, n1, ...]}` or a compressed
one whose counts are a string. Runs go down the columns (Fortran order), starting
with a run of zeros. Polygons are rasterized as the COCO API does it (pycocotools'
`frPyObjects`): the outline traced on a grid five times finer, one crossing kept per
pixel column, so that masks match the ones every COCO-trained model was evaluated on.
A test holds these functions equal to pycocotools on the same annotations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

SCALE = 5  # the finer grid the outline is traced on


class MaskError(ValueError):
    """A segmentation that cannot be a mask of this image (the message says why)."""


def decode(segmentation: Any, height: int, width: int) -> np.ndarray:
    """The (height, width) uint8 0/1 mask of a COCO segmentation."""
    if isinstance(segmentation, list):
        if not segmentation:
            raise MaskError("segmentation is an empty list of polygons")
        columns = np.zeros(height * width, np.uint8)
        for k, polygon in enumerate(segmentation):
            columns |= _columns(_polygon_toggles(_polygon(polygon, k), height, width), height, width)
        return columns.reshape(width, height).T.copy()
    if not isinstance(segmentation, dict) or "counts" not in segmentation:
        raise MaskError("segmentation is neither a list of polygons nor an RLE {size, counts}")
    size = segmentation.get("size")
    if not isinstance(size, list) or len(size) != 2 or any(type(v) is not int for v in size):
        raise MaskError(f"RLE size is {size!r}, not [height, width]")
    if tuple(size) != (height, width):
        raise MaskError(f"RLE size is {size[0]}x{size[1]} (height x width), the image {height}x{width}")
    counts = segmentation["counts"]
    if isinstance(counts, str | bytes):
        runs = counts_from_string(counts if isinstance(counts, str) else counts.decode("ascii", "replace"))
    elif isinstance(counts, list) and all(type(c) is int and c >= 0 for c in counts):
        runs = np.array(counts, np.int64)
    else:
        raise MaskError("RLE counts are neither a string nor a list of whole numbers")
    return from_runs(runs, height, width)


def _polygon(polygon: Any, k: int) -> np.ndarray:
    if not isinstance(polygon, list) or any(type(v) not in (int, float) for v in polygon):
        raise MaskError(f"polygon {k} is not a list of numbers")
    if len(polygon) < 6 or len(polygon) % 2:
        raise MaskError(f"polygon {k} has {len(polygon)} numbers: x, y pairs of 3 points or more")
    xy = np.array(polygon, np.float64)
    if not np.isfinite(xy).all():
        raise MaskError(f"polygon {k} holds a number that is not finite")
    return xy.reshape(-1, 2)


def from_runs(runs: np.ndarray, height: int, width: int) -> np.ndarray:
    """The mask of run lengths (zeros first, alternating, down the columns)."""
    total = int(runs.sum())
    if total != height * width:
        raise MaskError(f"RLE counts cover {total} pixels, the image {height}x{width} = {height * width}")
    values = np.arange(len(runs), dtype=np.int64) % 2
    flat = np.repeat(values.astype(np.uint8), runs)
    return flat.reshape(width, height).T.copy()


def to_runs(mask: np.ndarray) -> np.ndarray:
    """Run lengths of a 0/1 mask (the inverse of from_runs)."""
    flat = (np.asarray(mask).T.reshape(-1) != 0).astype(np.int8)
    changes = np.flatnonzero(np.diff(flat)) + 1
    edges = np.concatenate(([0], changes, [flat.size]))
    runs = np.diff(edges)
    return np.concatenate(([0], runs)) if flat.size and flat[0] else runs


def counts_from_string(text: str) -> np.ndarray:
    """The run lengths of a compressed RLE: each count in 5-bit groups, low first, one
    character ('0' + group, with 0x20 set while more follow) a group, the last group's
    0x10 bit a sign; from the fourth count on, each is stored as its difference from the
    count two before."""
    counts: list[int] = []
    value = shift = 0
    for position, char in enumerate(text):
        code = ord(char) - 48
        if not 0 <= code < 64:
            raise MaskError(f"RLE counts: character {char!r} at {position} is not one of '0'..'o'")
        value |= (code & 0x1F) << shift
        shift += 5
        if code & 0x20:
            continue
        if code & 0x10:
            value -= 1 << shift
        if len(counts) > 2:
            value += counts[-2]
        if value < 0:
            raise MaskError(f"RLE counts: a negative run ending at character {position}")
        counts.append(value)
        value = shift = 0
    if shift:
        raise MaskError("RLE counts: the string ends inside a number")
    return np.array(counts, np.int64)


def counts_to_string(runs: np.ndarray) -> str:
    """The compressed form of run lengths (the inverse of counts_from_string)."""
    chars: list[str] = []
    runs = [int(r) for r in runs]
    for i, run in enumerate(runs):
        value = run - runs[i - 2] if i > 2 else run
        while True:
            group = value & 0x1F
            value >>= 5
            more = value != -1 if group & 0x10 else value != 0
            chars.append(chr(48 + (group | (0x20 if more else 0))))
            if not more:
                break
    return "".join(chars)


def _polygon_toggles(xy: np.ndarray, height: int, width: int) -> np.ndarray:
    """Where one polygon's ((k, 2) x, y in pixels) inside/outside toggles, as positions down the columns (x *
    height + y): the vertices rounded onto the finer grid, each edge traced one grid
    step at a time along its longer axis (all edges at once), and where the trace enters
    a new grid column whose centre is a pixel column's, the pixel row below the crossing."""
    grid = np.trunc(SCALE * xy + 0.5)  # the C cast truncates towards zero
    start, end = grid, np.roll(grid, -1, axis=0)
    dx, dy = np.abs(end[:, 0] - start[:, 0]), np.abs(end[:, 1] - start[:, 1])
    along_x = dx >= dy
    # each edge is traced from its low end, and listed from its start
    flip = np.where(along_x, start[:, 0] > end[:, 0], start[:, 1] > end[:, 1])
    low = np.where(flip[:, None], end, start)
    high = np.where(flip[:, None], start, end)
    steps = np.where(along_x, dx, dy).astype(np.int64)
    slope = np.where(
        along_x,
        (high[:, 1] - low[:, 1]) / np.maximum(dx, 1),  # a repeated vertex: one point
        (high[:, 0] - low[:, 0]) / np.maximum(dy, 1),
    )
    edge = np.repeat(np.arange(len(grid)), steps + 1)
    offsets = np.concatenate(([0], np.cumsum(steps + 1)[:-1]))
    d = np.arange(len(edge)) - offsets[edge]
    t = np.where(flip[edge], steps[edge] - d, d).astype(np.float64)
    x0, y0, s, along = low[edge, 0], low[edge, 1], slope[edge], along_x[edge]
    u = np.where(along, t + x0, np.trunc(x0 + s * t + 0.5)).astype(np.int64)
    v = np.where(along, np.trunc(y0 + s * t + 0.5), t + y0).astype(np.int64)
    moved = np.flatnonzero(u[1:] != u[:-1]) + 1
    column = np.where(u[moved] < u[moved - 1], u[moved], u[moved] - 1)
    xd = (column + 0.5) / SCALE - 0.5
    keep = (np.floor(xd) == xd) & (xd >= 0) & (xd <= width - 1)
    yd = (np.minimum(v[moved], v[moved - 1]) + 0.5) / SCALE - 0.5
    yd = np.ceil(np.clip(yd, 0, height))
    return xd[keep].astype(np.int64) * height + yd[keep].astype(np.int64)


def _columns(toggles: np.ndarray, height: int, width: int) -> np.ndarray:
    """The 0/1 pixels, down the columns, of toggles at these positions (a position
    toggled twice is not toggled); filled only between the first and the last."""
    flat = np.zeros(height * width, np.uint8)
    toggles = toggles[toggles < height * width]
    if not len(toggles):
        return flat
    first, last = int(toggles.min()), int(toggles.max())
    counts = np.bincount(toggles - first, minlength=last - first + 1).astype(np.uint8)
    # a uint8 sum wraps at 256, which keeps its parity
    flat[first : last + 1] = np.cumsum(counts & 1, dtype=np.uint8) & 1
    flat[last + 1 :] = flat[last]
    return flat


def encode(mask: np.ndarray) -> dict[str, Any]:
    """A 0/1 mask as a compressed COCO RLE (what the COCO API's `encode` writes)."""
    height, width = mask.shape
    return {"size": [int(height), int(width)], "counts": counts_to_string(to_runs(mask))}
