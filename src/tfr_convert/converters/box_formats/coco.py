"""COCO: an `instances*.json` with `images` (id, file_name, width, height),
`annotations` (image_id, bbox `[x, y, width, height]` in pixels, category_id,
iscrowd, area) and `categories` (id, name).

Category ids are often not contiguous (COCO's own run 1..90 for 80 classes): they
become labels 1..N in increasing id order, the names in that order.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ...errors import SourceError, shown
from .common import Annotations, Box, ImageCollector, box_problem, json_number, relative, size

MAX_JSON_BYTES = 2 << 30
MAX_DIGITS = 4000  # Python turns no longer text into an int (its guard against slow conversions)


class LongInteger:
    """A JSON integer too long to convert: kept as its length, to be named in a message."""

    def __init__(self, digits: str) -> None:
        self.length = len(digits.lstrip("-"))

    def __repr__(self) -> str:
        return f"an integer of {self.length} digits"


def _parse_int(text: str) -> int | LongInteger:
    return int(text) if len(text) <= MAX_DIGITS else LongInteger(text)


MAX_DEPTH = 100  # arrays and objects in arrays and objects: a COCO file's go 4 deep


def _too_deep_at(data: bytes) -> int:
    """The byte where the JSON's nesting passes MAX_DEPTH (strings skipped)."""
    import re

    depth = 0
    for m in re.finditer(rb'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', data):
        token = m[0]
        if token in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                return m.start()
        elif token in (b"]", b"}"):
            depth -= 1
    return 0


def _list(doc: dict[str, Any], key: str, path: str) -> list[Any]:
    value = doc.get(key)
    if not isinstance(value, list):
        raise SourceError(f"{path}: no {key!r} list (a COCO instances file has images, annotations, categories)")
    return value


def _int(value: Any, what: str) -> int:
    if type(value) is not int:
        raise ValueError(f"{what} is {shown(value)}, not an integer")
    return value


def read(path: str) -> Annotations:
    if os.path.getsize(path) > MAX_JSON_BYTES:
        raise SourceError(f"{path}: {os.path.getsize(path)} bytes, more than a COCO file may hold here (2 GiB)")
    with open(path, "rb") as f:
        data = f.read()
    try:
        doc = json.loads(data, parse_int=_parse_int)
    except UnicodeDecodeError as e:
        raise SourceError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise SourceError(f"{path}: line {e.lineno}, column {e.colno}: not valid JSON ({e.msg})") from None
    except RecursionError:
        raise SourceError(
            f"{path}: byte {_too_deep_at(data)}: arrays or objects nested more than {MAX_DEPTH} deep "
            "(a COCO file's go 4 deep), more than the JSON parser follows"
        ) from None
    del data
    if not isinstance(doc, dict):
        raise SourceError(f"{path}: the top level is not an object")
    categories: dict[int, str] = {}
    for i, cat in enumerate(_list(doc, "categories", path)):
        where = f"{path} categories[{i}]"
        try:
            if not isinstance(cat, dict):
                raise ValueError("not an object")
            cid = _int(cat.get("id"), "id")
            name = cat.get("name")
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"name is {shown(name)}")
        except ValueError as e:
            raise SourceError(f"{where}: {e}") from None
        if cid in categories:
            raise SourceError(f"{where}: category id {cid} appears twice")
        if name.strip() in categories.values():
            raise SourceError(f"{where}: category name {name.strip()!r} appears twice")
        categories[cid] = name.strip()
    found = Annotations([], [path], classes=[categories[c] for c in sorted(categories)])
    images = ImageCollector()
    by_id: dict[int, dict] = {}
    for i, image in enumerate(_list(doc, "images", path)):
        where = f"{path} images[{i}]"
        try:
            if not isinstance(image, dict):
                raise ValueError("not an object")
            iid = _int(image.get("id"), "id")
            name = image.get("file_name")
            if not isinstance(name, str) or not relative(name):
                raise ValueError(f"file_name is {shown(name)}")
            width = size(image.get("width"), "width", json_number)
            height = size(image.get("height"), "height", json_number)
        except ValueError as e:
            found.problems.append((where, str(e)))
            continue
        if iid in by_id:
            found.problems.append((where, f"image id {iid} appears twice"))
            continue
        by_id[iid] = images.image(relative(name), where, width, height, source_id=str(iid))
    ann_ids: dict[int, int] = {}  # annotation id -> where it was first seen
    for i, ann in enumerate(_list(doc, "annotations", path)):
        where = f"{path} annotations[{i}]"
        if isinstance(ann, dict) and type(ann.get("id")) is int:
            first = ann_ids.setdefault(ann["id"], i)
            if first != i:
                found.problems.append((where, f"annotation id {ann['id']} appears twice (annotations[{first}] too)"))
                continue
        if not isinstance(ann, dict) or type(ann.get("image_id")) is not int:
            found.problems.append(
                (where, f"image_id is {shown(ann.get('image_id') if isinstance(ann, dict) else ann)}")
            )
            continue
        entry = by_id.get(ann["image_id"])
        if entry is None:
            found.problems.append((where, f"image_id {ann['image_id']} is not in 'images'"))
            continue
        try:
            cid = _int(ann.get("category_id"), "category_id")
            if cid not in categories:
                raise ValueError(f"category_id {cid} is not in 'categories'")
            bbox = ann.get("bbox")
            if not isinstance(bbox, list) or len(bbox) != 4:
                raise ValueError(f"bbox is {shown(bbox)}, not [x, y, width, height]")
            x, y, w, h = (json_number(v, f"bbox[{k}]") for k, v in enumerate(bbox))
            problem = box_problem(x, y, x + w, y + h)
            if problem:
                raise ValueError(f"bbox {shown(bbox)}: width and height must be positive")
            crowd = ann.get("iscrowd", 0)
            if crowd not in (0, 1) or type(crowd) is bool:
                raise ValueError(f"iscrowd is {shown(crowd)}, not 0 or 1")
            area = json_number(ann["area"], "area") if "area" in ann else None
        except ValueError as e:
            entry["problems"].append((where, str(e)))
            continue
        entry["boxes"].append(Box(categories[cid], x, y, x + w, y + h, where=where, is_crowd=crowd, area=area))
    found.images = images.images()
    return found
