"""Bounding boxes under the TF Object Detection API's keys (`image/object/bbox/xmin`...,
normalized to the image), wherever a record holds them: drawn by --grid, summarized
by --stats. Only the keys are known here, not who wrote them."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from ...dataset.wire.example import BYTES, FLOAT, INT64
from .distribution import Distribution

CORNERS = ("xmin", "ymin", "xmax", "ymax")
BOX_KEYS = tuple(f"image/object/bbox/{c}" for c in CORNERS)
CLASS_TEXT, CLASS_LABEL = "image/object/class/text", "image/object/class/label"


def boxes_of(example: dict[str, tuple[str | None, list[Any]]]) -> list[tuple[float, ...]] | None:
    """[(xmin, ymin, xmax, ymax)] of a record, or None when it has no box keys (or they disagree)."""
    lists = [example.get(k) for k in BOX_KEYS]
    if any(entry is None or entry[0] not in (FLOAT, None) for entry in lists):
        return None
    values = [entry[1] for entry in lists]  # type: ignore[index]
    if len({len(v) for v in values}) != 1:
        return None
    return list(zip(*values, strict=True))


def box_names(example: dict[str, tuple[str | None, list[Any]]], names: dict[str, list[str]], n: int) -> list[str]:
    """Each box's class: its text, else its label's name, else its label."""
    kind, texts = example.get(CLASS_TEXT, (None, []))
    if kind == BYTES and len(texts) == n:
        return [t.decode("utf-8", "replace") for t in texts]
    kind, labels = example.get(CLASS_LABEL, (None, []))
    known = names.get(CLASS_LABEL, [])
    if kind == INT64 and len(labels) == n:
        return [known[i] if 0 <= i < len(known) else str(i) for i in map(int, labels)]
    return [""] * n


def box_labels(example: dict[str, tuple[str | None, list[Any]]], n: int) -> list[int]:
    """Each object's class label, or its place among the objects where the record has none."""
    kind, labels = example.get(CLASS_LABEL, (None, []))
    return [int(v) for v in labels] if kind == INT64 and len(labels) == n else list(range(n))


class BoxStats:
    """Boxes per image, classes, and box sizes (pixels where the record gives its size)."""

    def __init__(self) -> None:
        self.images = self.negatives = self.boxes = 0
        self.most = 0
        self.classes: Counter[str] = Counter()
        self.images_with: Counter[str] = Counter()
        self.ranges: dict[str, list[float]] = {}
        self.unit = "px"
        self.spread = {"per_image": Distribution(), "width": Distribution(False), "height": Distribution(False)}

    def _extend(self, key: str, value: float) -> None:
        low_high = self.ranges.setdefault(key, [value, value])
        low_high[0], low_high[1] = min(low_high[0], value), max(low_high[1], value)

    def add(self, example: dict[str, tuple[str | None, list[Any]]], names: dict[str, list[str]]) -> bool:
        """Count a record's boxes; False if it has none of the box keys."""
        boxes = boxes_of(example)
        if boxes is None:
            return False
        self.images += 1
        self.negatives += not boxes
        self.boxes += len(boxes)
        self.most = max(self.most, len(boxes))
        self.spread["per_image"].add(len(boxes))
        named = box_names(example, names, len(boxes))
        self.classes.update(named)
        self.images_with.update(set(named))
        width = example.get("image/width", (None, [0]))[1]
        height = example.get("image/height", (None, [0]))[1]
        w, h = (width[0], height[0]) if width and height and width[0] > 0 and height[0] > 0 else (1, 1)
        if (w, h) == (1, 1):
            self.unit = "of the image"
        for xmin, ymin, xmax, ymax in boxes:
            bw, bh = (xmax - xmin) * w, (ymax - ymin) * h
            self._extend("width", bw)
            self._extend("height", bh)
            self.spread["width"].add(bw)
            self.spread["height"].add(bh)
            if bh > 0:
                self._extend("aspect", bw / bh)
        return True

    def to_dict(self) -> dict[str, Any]:
        return {
            "images": self.images,
            "boxes": self.boxes,
            "negatives": self.negatives,
            "per_image": {"max": self.most, "mean": self.boxes / self.images if self.images else 0},
            "size_unit": self.unit,
            **{k: {"min": v[0], "max": v[1]} for k, v in sorted(self.ranges.items())},
            "classes": dict(sorted(self.classes.items(), key=lambda kv: (-kv[1], kv[0]))),
            "images_share": {k: self.images_with[k] / self.images for k in sorted(self.images_with)},
            "distribution": {k: d.to_dict() for k, d in self.spread.items()},
        }


def format_boxes(b: dict[str, Any]) -> str:
    line = (
        f"boxes: {b['boxes']} in {b['images']} images ({b['negatives']} without any), "
        f"per image up to {b['per_image']['max']} (mean {b['per_image']['mean']:.2f})"
    )
    if "width" in b:
        unit = " px" if b["size_unit"] == "px" else ""
        line += (
            f"; width {b['width']['min']:.3g}..{b['width']['max']:.3g}{unit}, "
            f"height {b['height']['min']:.3g}..{b['height']['max']:.3g}{unit}"
        )
    if "aspect" in b and math.isfinite(b["aspect"]["max"]):
        line += f", aspect (w/h) {b['aspect']['min']:.3g}..{b['aspect']['max']:.3g}"
    classes = ", ".join(f"{k or '?'} {v}" for k, v in b["classes"].items())
    share = ", ".join(f"{k or '?'} {b['images_share'][k]:.0%}" for k in b["classes"] if k in b["images_share"])
    return line + (f"\n  classes: {classes}\n  images with each class: {share}" if classes else "")
