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
MARGIN = 256  # how far outside a small image a polygon's point may lie


class MaskError(ValueError):
    """A segmentation that cannot be a mask of this image (the message says why)."""


def decode(segmentation: Any, height: int, width: int) -> np.ndarray:
    """The (height, width) uint8 0/1 mask of a COCO segmentation."""
    if isinstance(segmentation, list):
        if not segmentation:
            raise MaskError("segmentation is an empty list of polygons")
        polygons = [_polygon(polygon, k, height, width) for k, polygon in enumerate(segmentation)]
        columns = np.zeros(height * width, np.uint8)
        for xy in polygons:
            columns |= _filled(xy, height, width)
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
        runs = counts
    else:
        raise MaskError("RLE counts are neither a string nor a list of whole numbers")
    return from_runs(runs, height, width)


def _polygon(polygon: Any, k: int, height: int, width: int) -> np.ndarray:
    """A polygon's (n, 2) points; one that strays further outside the image than its own
    size (or MARGIN pixels) is refused: no annotation means that, and drawing it would
    cost memory in proportion to its coordinates, not to the image."""
    if not isinstance(polygon, list) or any(type(v) not in (int, float) for v in polygon):
        raise MaskError(f"polygon {k} is not a list of numbers")
    if len(polygon) < 6 or len(polygon) % 2:
        raise MaskError(f"polygon {k} has {len(polygon)} numbers: x, y pairs of 3 points or more")
    try:
        xy = np.array(polygon, np.float64).reshape(-1, 2)
    except OverflowError:  # an integer past float64's range
        raise MaskError(f"polygon {k} holds a number past any image") from None
    if not np.isfinite(xy).all():
        raise MaskError(f"polygon {k} holds a number that is not finite")
    margin = max(width, height, MARGIN)
    outside = np.flatnonzero(((xy < -margin) | (xy > np.array([width, height]) + margin)).any(axis=1))
    if len(outside):
        x, y = xy[outside[0]]
        raise MaskError(
            f"polygon {k}: point {outside[0]} ({x:.6g}, {y:.6g}) lies more than {margin} pixels outside "
            f"the {width}x{height} image"
        )
    return xy


def from_runs(runs: list[int], height: int, width: int) -> np.ndarray:
    """The mask of run lengths (zeros first, alternating, down the columns); the total is
    summed in Python's integers, which no count can wrap."""
    total = sum(runs)
    if total != height * width:
        shown = f"{total} pixels" if total.bit_length() < 63 else "more pixels than any image"
        raise MaskError(f"RLE counts cover {shown}, the image {height}x{width} = {height * width}")
    values = np.arange(len(runs), dtype=np.int64) % 2
    flat = np.repeat(values.astype(np.uint8), np.array(runs, np.int64))
    return flat.reshape(width, height).T.copy()


def to_runs(mask: np.ndarray) -> np.ndarray:
    """Run lengths of a 0/1 mask (the inverse of from_runs)."""
    flat = (np.asarray(mask).T.reshape(-1) != 0).astype(np.int8)
    changes = np.flatnonzero(np.diff(flat)) + 1
    edges = np.concatenate(([0], changes, [flat.size]))
    runs = np.diff(edges)
    return np.concatenate(([0], runs)) if flat.size and flat[0] else runs


def counts_from_string(text: str) -> list[int]:
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
    return counts


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


# Points of the traced outline handled at once: memory is bounded by this and the image,
# whatever the polygon's number of vertices.
TRACE_POINTS = 1 << 20


def _filled(xy: np.ndarray, height: int, width: int) -> np.ndarray:
    """One polygon's ((k, 2) x, y in pixels) 0/1 pixels, down the columns: the outline
    traced edge by edge, a chunk of edges at a time, each pixel toggled as often as the
    outline crosses into it (only the parity counts), then filled between toggles."""
    grid = np.trunc(SCALE * xy + 0.5)  # the C cast truncates towards zero
    start, end = grid, np.roll(grid, -1, axis=0)
    dx, dy = np.abs(end[:, 0] - start[:, 0]), np.abs(end[:, 1] - start[:, 1])
    along_x = dx >= dy
    steps = np.where(along_x, dx, dy).astype(np.int64)
    parity = np.zeros(height * width, np.uint8)
    previous: tuple[np.ndarray, np.ndarray] | None = None  # the last traced point of the chunk before
    first = 0
    while first < len(grid):
        # at least one edge; each is at most SCALE times three image sizes long (_polygon)
        last = first + max(1, int(np.searchsorted(np.cumsum(steps[first:] + 1), TRACE_POINTS, side="right")))
        u, v = _trace(start[first:last], end[first:last], along_x[first:last], steps[first:last])
        if previous is not None:
            u, v = np.concatenate((previous[0], u)), np.concatenate((previous[1], v))
        previous = u[-1:], v[-1:]
        toggles = _toggles(u, v, height, width)
        parity ^= (np.bincount(toggles, minlength=height * width)[: height * width] & 1).astype(np.uint8)
        first = last
    # a uint8 sum wraps at 256, which keeps its parity
    return np.cumsum(parity, dtype=np.uint8) & 1


def _trace(start: np.ndarray, end: np.ndarray, along_x: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The outline of these edges on the finer grid, one grid step at a time along each
    edge's longer axis, in order: (u, v) grid columns and rows."""
    # each edge is traced from its low end, and listed from its start
    flip = np.where(along_x, start[:, 0] > end[:, 0], start[:, 1] > end[:, 1])
    low = np.where(flip[:, None], end, start)
    high = np.where(flip[:, None], start, end)
    dx, dy = np.abs(end[:, 0] - start[:, 0]), np.abs(end[:, 1] - start[:, 1])
    slope = np.where(
        along_x,
        (high[:, 1] - low[:, 1]) / np.maximum(dx, 1),  # a repeated vertex: one point
        (high[:, 0] - low[:, 0]) / np.maximum(dy, 1),
    )
    edge = np.repeat(np.arange(len(start)), steps + 1)
    offsets = np.concatenate(([0], np.cumsum(steps + 1)[:-1]))
    d = np.arange(len(edge)) - offsets[edge]
    t = np.where(flip[edge], steps[edge] - d, d).astype(np.float64)
    x0, y0, s, along = low[edge, 0], low[edge, 1], slope[edge], along_x[edge]
    u = np.where(along, t + x0, np.trunc(x0 + s * t + 0.5)).astype(np.int64)
    v = np.where(along, np.trunc(y0 + s * t + 0.5), t + y0).astype(np.int64)
    return u, v


def _toggles(u: np.ndarray, v: np.ndarray, height: int, width: int) -> np.ndarray:
    """Where the traced outline enters a new grid column whose centre is a pixel
    column's: the pixel row below the crossing, as a position down the columns (x *
    height + y); crossings outside the image are left out."""
    moved = np.flatnonzero(u[1:] != u[:-1]) + 1
    column = np.where(u[moved] < u[moved - 1], u[moved], u[moved] - 1)
    xd = (column + 0.5) / SCALE - 0.5
    keep = (np.floor(xd) == xd) & (xd >= 0) & (xd <= width - 1)
    yd = (np.minimum(v[moved], v[moved - 1]) + 0.5) / SCALE - 0.5
    yd = np.ceil(np.clip(yd, 0, height))
    toggles = xd[keep].astype(np.int64) * height + yd[keep].astype(np.int64)
    return toggles[toggles < height * width]


def encode(mask: np.ndarray) -> dict[str, Any]:
    """A 0/1 mask as a compressed COCO RLE (what the COCO API's `encode` writes)."""
    height, width = mask.shape
    return {"size": [int(height), int(width)], "counts": counts_to_string(to_runs(mask))}
