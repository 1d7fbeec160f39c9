"""YOLO: one `.txt` per image, at the image's path relative to IMAGE_DIR with `.txt`
for its extension, each line `class cx cy w h` (fractions of the image, class
counted from 0); class names found beside the labels or up to the dataset's root
(class_names.find_names: classes.txt, obj.names, data.yaml...), or --classes."""

from __future__ import annotations

import os
import posixpath

from ....errors import SourceError
from .class_names import NAME_FILES, find_names
from .common import Annotations, Box, ImageCollector, box_problem, number

MAX_LABELS_BYTES = 16 << 20


def read(folder: str, image_files: list[str], names: list[str] | None = None) -> Annotations:
    """`image_files`: IMAGE_DIR's images, relative and '/'-separated."""
    found_names = find_names(folder)
    files = []
    if names is None:
        if found_names is None:
            raise SourceError(
                f"{folder}: no {', '.join(NAME_FILES)}, nor another *.yaml with names:, here or up to two folders "
                "above: give --classes FILE"
            )
        files.append(found_names[0])
        names = found_names[1]
    if not names:
        raise SourceError(f"{found_names[0] if found_names else folder}: no class names in it")
    image_of: dict[str, list[str]] = {}
    for image in image_files:
        image_of.setdefault(posixpath.splitext(image)[0], []).append(image)
    boxes = Annotations([], files, classes=list(names))
    images = ImageCollector()
    for directory, dirs, entries in os.walk(folder):
        dirs.sort()
        for entry in sorted(entries):
            if not entry.endswith(".txt") or entry in NAME_FILES or entry.startswith("."):
                continue
            path = os.path.join(directory, entry)
            stem = os.path.relpath(path, folder)[: -len(".txt")].replace(os.sep, "/")
            candidates = image_of.get(stem, [])
            if len(candidates) != 1:
                why = "no image" if not candidates else f"{len(candidates)} images ({', '.join(candidates)})"
                boxes.problems.append((path, f"{why} named {stem}.* in IMAGE_DIR for these labels"))
                continue
            files.append(path)
            entry_boxes = images.image(candidates[0], path)
            _read_labels(path, names, entry_boxes)
    boxes.images = images.images()
    return boxes


def _read_labels(path: str, names: list[str], entry: dict) -> None:
    if os.path.getsize(path) > MAX_LABELS_BYTES:
        raise SourceError(f"{path}: {os.path.getsize(path)} bytes, more than a YOLO labels file may hold")
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    for line_number, line in enumerate(lines, 1):
        where = f"{path} line {line_number}"
        fields = line.split()
        if not fields:
            continue
        try:
            if len(fields) != 5:
                raise ValueError(
                    f"{len(fields)} values, expected 5 (class cx cy w h; segmentation polygons are not boxes)"
                )
            if not fields[0].isdigit() or int(fields[0]) >= len(names):
                raise ValueError(f"class {fields[0][:20]!r} is not one of 0..{len(names) - 1}")
            cx, cy, w, h = (number(v, what) for v, what in zip(fields[1:], ("cx", "cy", "w", "h"), strict=True))
            coords = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
            problem = box_problem(*coords)
            if problem:
                raise ValueError(f"w {w:g} and h {h:g} must be positive")
        except ValueError as e:
            entry["problems"].append((where, str(e)))
            continue
        entry["boxes"].append(Box(names[int(fields[0])], *coords, where=where, normalized=True))
