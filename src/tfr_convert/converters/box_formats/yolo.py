"""YOLO: one `.txt` per image, at the image's path relative to IMAGE_DIR with `.txt`
for its extension, each line `class cx cy w h` (fractions of the image, class
counted from 0); class names from `classes.txt` (one per line) or the `names:` of
a `data.yaml`, in the labels folder or the one above it (or --classes)."""

from __future__ import annotations

import os
import posixpath
import re

from ...errors import SourceError
from .common import Annotations, Box, ImageCollector, box_problem, number

MAX_LABELS_BYTES = 16 << 20
NAME_FILES = ("classes.txt", "data.yaml", "data.yml")


def _scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text.split(" #", 1)[0].strip()


def yaml_names(path: str, text: str) -> list[str]:
    """`names:` of a YOLO data.yaml: a flow list, a block list or a block mapping from
    0..N-1 (the forms the YOLO tools write; not a general YAML reader)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"names\s*:\s*(.*)$", line)
        if not m:
            continue
        rest = m[1].split(" #", 1)[0].strip()
        if rest.startswith("["):
            if not rest.endswith("]"):
                raise SourceError(f"{path}: line {i + 1}: names: [...] must close on its line")
            return [_scalar(v) for v in rest[1:-1].split(",") if v.strip()]
        if rest:
            raise SourceError(f"{path}: line {i + 1}: names: is neither a list nor followed by one")
        names: dict[int, str] = {}
        listed: list[str] = []
        for j in range(i + 1, len(lines)):
            item = lines[j]
            if not item.strip() or item.lstrip().startswith("#"):
                continue
            if not item[:1].isspace() and not item.startswith("-"):
                break
            if item.strip().startswith("- "):
                listed.append(_scalar(item.strip()[2:]))
                continue
            m2 = re.match(r"\s+(\d+)\s*:\s*(.+)$", item)
            if not m2:
                raise SourceError(f"{path}: line {j + 1}: expected '- name' or 'N: name' under names:")
            names[int(m2[1])] = _scalar(m2[2])
        if names:
            if sorted(names) != list(range(len(names))):
                raise SourceError(f"{path}: names: numbers must run 0..{len(names) - 1}")
            return [names[k] for k in range(len(names))]
        return listed
    raise SourceError(f"{path}: no names: (the class names)")


def find_names(folder: str) -> tuple[str, list[str]] | None:
    """(file, class names) from the labels folder or the one above it, or None."""
    for where in (folder, os.path.dirname(os.path.abspath(folder))):
        for name in NAME_FILES:
            path = os.path.join(where, name)
            if os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read(MAX_LABELS_BYTES)
                if name == "classes.txt":
                    return path, [line.strip() for line in text.splitlines() if line.strip()]
                return path, yaml_names(path, text)
    return None


def read(folder: str, image_files: list[str], names: list[str] | None = None) -> Annotations:
    """`image_files`: IMAGE_DIR's images, relative and '/'-separated."""
    found_names = find_names(folder)
    files = []
    if names is None:
        if found_names is None:
            raise SourceError(f"{folder}: no classes.txt or data.yaml here or above: give --classes FILE")
        files.append(found_names[0])
        names = found_names[1]
    if not names:
        raise SourceError(f"{found_names[0] if found_names else folder}: no class names in it")
    image_of: dict[str, list[str]] = {}
    for image in image_files:
        image_of.setdefault(posixpath.splitext(image)[0], []).append(image)
    found = Annotations([], files, classes=list(names))
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
                found.problems.append((path, f"{why} named {stem}.* in IMAGE_DIR for these labels"))
                continue
            files.append(path)
            entry_boxes = images.image(candidates[0], path)
            _read_labels(path, names, entry_boxes)
    found.images = images.images()
    return found


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
                raise ValueError(f"{len(fields)} values, expected 5 (class cx cy w h; segmentation polygons "
                                 "are not boxes)")  # fmt: skip
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
