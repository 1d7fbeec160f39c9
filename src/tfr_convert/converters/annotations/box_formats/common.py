"""What every annotation format is read into: one ImageBoxes per image.

Coordinates are those of the image as displayed (EXIF orientation applied), as
every labelling tool shows it: pixel edges counted from 0 (a box covering a
whole 640-pixel-wide image runs from 0 to 640), or fractions of the image for
YOLO (`normalized`). The readers check what needs no image (numbers, order,
class names); the converter checks the rest against the decoded image.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ....errors import shown


@dataclass(frozen=True, slots=True)
class Box:
    name: str  # class name
    xmin: float
    ymin: float
    xmax: float
    ymax: float
    where: str  # the annotation naming it: "boxes.csv line 4", "a.xml object 2"
    difficult: int = 0
    truncated: int = 0
    is_crowd: int = 0
    area: float | None = None  # COCO's own (segmentation) area; None: the box's
    normalized: bool = False  # fractions of the image (YOLO), not pixels
    # COCO's, kept as compact JSON text (a string is cheaper to hold and to ship than
    # the lists it spells): the instance's segmentation (when masks are asked for) and
    # its keypoints, [x, y, visibility] for each of its category's keypoint names
    segmentation: str | None = None
    keypoints: str | None = None


@dataclass(frozen=True, slots=True)
class ImageBoxes:
    filename: str  # relative to IMAGE_DIR, '/'-separated
    boxes: tuple[Box, ...]
    where: str  # the annotation naming the image
    width: int | None = None  # as the annotation declares it
    height: int | None = None
    source_id: str | None = None  # the annotation's own id of the image (COCO)
    problems: tuple[tuple[str, str], ...] = ()  # (where, what is wrong): the image cannot be used


@dataclass
class Annotations:
    images: list[ImageBoxes]
    files: list[str]  # the annotation files read, for the manifest
    classes: list[str] | None = None  # names in label order, when the format defines them
    class_ids: list[int] | None = None  # the format's own id of each of `classes` (COCO's category ids)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (where, what) tied to no image
    keypoint_names: list[str] | None = None  # COCO: the categories' one list of keypoints
    skeleton: list[list[int]] | None = None  # COCO: pairs of keypoints (counted from 1) joined by a limb


# A number as annotation files write one: ASCII digits, a sign, a point, an exponent
# (float() would also take "1_0", other scripts' digits, "nan" and "infinity").
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def number(text: object, what: str) -> float:
    """A finite coordinate from annotation text, or ValueError saying which."""
    if text is None:
        raise ValueError(f"{what} is missing")
    if isinstance(text, str) and not text.strip():
        raise ValueError(f"{what} is empty")
    if not isinstance(text, str) or not _NUMBER.fullmatch(text.strip()):
        raise ValueError(f"{what} {shown(text)} is not a number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{what} {shown(text)} is too large")
    return value


def json_number(value: object, what: str) -> float:
    """A finite coordinate from a JSON value: a JSON number (not a string, not true)."""
    if type(value) not in (int, float):
        raise ValueError(f"{what} is {shown(value)}, not a number")
    try:
        result = float(value)  # type: ignore[arg-type]
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise ValueError(f"{what} is {shown(value)}, too large")
    return result


def box_problem(xmin: float, ymin: float, xmax: float, ymax: float) -> str | None:
    """What makes a box impossible whatever its image, or None."""
    if xmax <= xmin:
        return f"xmax {xmax:g} is not right of xmin {xmin:g}"
    if ymax <= ymin:
        return f"ymax {ymax:g} is not below ymin {ymin:g}"
    return None


def size(text: object, what: str, parse: Callable[[object, str], float] = number) -> int:
    value = parse(text, what)
    if value != int(value) or value <= 0:
        raise ValueError(f"{what} {value:g} is not a positive whole number of pixels")
    return int(value)


class ImageCollector:
    """Boxes gathered per image in the order the annotations first name each image;
    a problem makes the whole image unusable (every one is kept, to be listed)."""

    def __init__(self) -> None:
        self._images: dict[str, dict] = {}

    def image(
        self,
        filename: str,
        where: str,
        width: int | None = None,
        height: int | None = None,
        source_id: str | None = None,
    ) -> dict:
        entry = self._images.get(filename)
        if entry is None:
            entry = self._images[filename] = {
                "where": where,
                "width": width,
                "height": height,
                "source_id": source_id,
                "boxes": [],
                "problems": [],
            }
        elif width is not None and (entry["width"], entry["height"]) not in ((None, None), (width, height)):
            entry["problems"].append(
                (where, f"declares {filename} {width}x{height}, {entry['where']} {entry['width']}x{entry['height']}")
            )
        elif entry["width"] is None:
            entry["width"], entry["height"] = width, height
        return entry

    def images(self) -> list[ImageBoxes]:
        return [
            ImageBoxes(
                name, tuple(e["boxes"]), e["where"], e["width"], e["height"], e["source_id"], tuple(e["problems"])
            )
            for name, e in self._images.items()
        ]


def relative(path: str) -> str:
    """An annotation's image path, '/'-separated and normalized (escapes are the
    converter's to refuse); '' for none."""
    path = path.strip().replace("\\", "/")
    return posixpath.normpath(path) if path else ""
