"""COCO: an `instances*.json` with `images` (id, file_name, width, height),
`annotations` (image_id, bbox `[x, y, width, height]` in pixels, category_id,
iscrowd, area) and `categories` (id, name).

Category ids are often not contiguous (COCO's own run 1..90 for 80 classes): the
classes are listed in increasing id order, with their ids beside them; the converter
keeps the ids as labels (as the Object Detection API's create_coco_tf_record.py does)
or numbers them 1..N in that order (--coco-ids).

With `masks`, each annotation's `segmentation` (polygons or RLE) is kept for the
converter to draw; a person_keypoints file's `keypoints` ([x, y, v] for each name in
its category's `keypoints`, v 0: not labelled, 1: hidden, 2: visible) are kept
whenever they are there, with the categories' names and `skeleton`.
"""

from __future__ import annotations

import json
import math
import os
from array import array
from collections.abc import Iterator
from typing import Any

from ....dataset.naming import holds_line_break
from ....errors import SourceError, shown
from .common import Annotations, Box, ImageCollector, box_problem, json_number, relative, size
from .json_stream import read_object

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


def read(path: str, masks: bool = False) -> Annotations:
    if os.path.getsize(path) > MAX_JSON_BYTES:
        raise SourceError(f"{path}: {os.path.getsize(path)} bytes, more than a COCO file may hold here (2 GiB)")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode(json.detect_encoding(data), "surrogatepass")
    except UnicodeDecodeError as e:
        raise SourceError(f"{path}: not UTF-8 text (byte {e.start})") from None
    del data  # the text alone while it is parsed
    images, annotations = _Images(path), _Annotations(path, masks)
    try:
        doc = read_object(text, {"images": images.read, "annotations": annotations.read}, _parse_int)
    except json.JSONDecodeError as e:
        raise SourceError(f"{path}: line {e.lineno}, column {e.colno}: not valid JSON ({e.msg})") from None
    except RecursionError:
        raise SourceError(
            f"{path}: byte {_too_deep_at(text.encode('utf-8', 'surrogatepass'))}: arrays or objects nested more "
            f"than {MAX_DEPTH} deep (a COCO file's go 4 deep), more than the JSON parser follows"
        ) from None
    del text
    if doc is None:
        raise SourceError(f"{path}: the top level is not an object")
    for key, part in (("images", images), ("annotations", annotations)):
        if not part.read_once:
            _list(doc, key, path)  # raises: no such list
    other_kinds = {
        "segments_info": "a COCO panoptic file (its segments are in PNGs)",
        "caption": "a COCO captions file",
    }
    for key, kind in other_kinds.items():
        if key in annotations.first_keys and "bbox" not in annotations.first_keys:
            raise SourceError(f"{path}: {kind}: no boxes here; give the instances_*.json of the same split")
    categories = _categories(doc, path)
    keypoints = _keypoint_lists(doc, categories, path)
    boxes = Annotations([], [path], classes=[categories[c] for c in sorted(categories)], class_ids=sorted(categories))
    if keypoints:
        boxes.keypoint_names, boxes.skeleton = next(iter(keypoints.values()))
    boxes.problems += images.problems
    annotations.resolve(images.by_id, categories, boxes.problems, {c: len(k[0]) for c, k in keypoints.items()})
    boxes.images = images.collector.images()
    return boxes


def _unwritable(value: Any) -> Any:
    raise ValueError(f"segmentation holds {value!r}, not a number")


def _categories(doc: dict[str, Any], path: str) -> dict[int, str]:
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
            if holds_line_break(name):
                raise ValueError(f"name {name!r} holds a line break (class names are written one per line)")
        except ValueError as e:
            raise SourceError(f"{where}: {e}") from None
        if cid in categories:
            raise SourceError(f"{where}: category id {cid} appears twice")
        if name.strip() in categories.values():
            raise SourceError(f"{where}: category name {name.strip()!r} appears twice")
        categories[cid] = name.strip()
    return categories


def _keypoint_lists(doc: dict[str, Any], categories: dict[int, str], path: str) -> dict[int, tuple[list, list]]:
    """{category id: (keypoint names, skeleton)} of the categories that name keypoints;
    all of them must name the same (the records hold one list per object)."""
    keypoints: dict[int, tuple[list, list]] = {}
    for i, cat in enumerate(doc["categories"]):
        if "keypoints" not in cat:
            continue
        where = f"{path} categories[{i}]"
        names, skeleton = cat["keypoints"], cat.get("skeleton", [])
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n.strip() for n in names):
            raise SourceError(f"{where}: keypoints is {shown(names)}, not a list of names")
        if len(set(names)) != len(names):
            raise SourceError(f"{where}: keypoints names one point twice")
        if not isinstance(skeleton, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and all(type(k) is int and 1 <= k <= len(names) for k in pair)
            for pair in skeleton
        ):
            raise SourceError(f"{where}: skeleton is {shown(skeleton)}, not pairs of keypoint numbers 1..{len(names)}")
        for other, (other_names, _) in keypoints.items():
            if other_names != names:
                raise SourceError(
                    f"{where}: {categories[cat['id']]!r} names other keypoints than {categories[other]!r}; "
                    "the records hold one list of keypoints for every object: convert them apart"
                )
        keypoints[cat["id"]] = (names, skeleton)
    return keypoints


def _keypoints(value: Any) -> tuple[str, int]:
    """An annotation's keypoints as compact JSON text, and how many points they are."""
    if not isinstance(value, list) or len(value) % 3:
        raise ValueError(f"keypoints is {shown(value)}, not [x, y, visibility] triples")
    for k in range(0, len(value), 3):
        json_number(value[k], f"keypoints[{k}]")
        json_number(value[k + 1], f"keypoints[{k + 1}]")
        if value[k + 2] not in (0, 1, 2) or type(value[k + 2]) is bool:
            raise ValueError(f"keypoints[{k + 2}] is {shown(value[k + 2])}, a visibility: 0, 1 or 2")
    return json.dumps(value, separators=(",", ":")), len(value) // 3


class _Images:
    """The `images` list, read entry by entry as the file is parsed."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.collector = ImageCollector()
        self.by_id: dict[int, dict] = {}
        self.problems: list[tuple[str, str]] = []
        self.read_once = False

    def read(self, entries: Iterator[Any]) -> None:
        self.read_once = True
        for i, image in enumerate(entries):
            where = f"{self.path} images[{i}]"
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
                self.problems.append((where, str(e)))
                continue
            if iid in self.by_id:
                self.problems.append((where, f"image id {iid} appears twice"))
                continue
            self.by_id[iid] = self.collector.image(relative(name), where, width, height, source_id=str(iid))


class _Annotations:
    """The `annotations` list, read entry by entry as the file is parsed, and kept in
    columns (not as a dict each) until the categories and images, which may come later
    in the file, are known. What cannot be told without them (an image or category id
    that names none) is decided in `resolve`, in the order each entry was checked before."""

    def __init__(self, path: str, masks: bool = False) -> None:
        self.path = path
        self.masks = masks
        self.read_once = False
        self.index = array("q")  # of each sound entry, in 'annotations'
        self.image_ids: list[int] = []
        self.category_ids: list[int] = []
        self.boxes = array("d")  # x, y, w, h of each
        self.crowd = array("b")
        self.area = array("d")  # nan: none given
        self.segmentations: list[str | None] = []  # with masks
        self.keypoints: list[str | None] = []
        self.keypoint_counts = array("q")
        # (index, image id or None, category id or None, message) of an entry found wrong;
        # image id None: the message is about the image id itself (no image to blame)
        self.wrong: list[tuple[int, int | None, int | None, str]] = []
        self.ids = array("q")  # the entries' own ids, for duplicates
        self.id_at = array("q")
        self.big_ids: dict[int, list[int]] = {}  # ids beyond 64 bits: rare, kept aside
        self.first_keys: set[str] = set()  # of the first entry: tells another kind of COCO file

    def read(self, entries: Iterator[Any]) -> None:
        self.read_once = True
        for i, ann in enumerate(entries):
            if i == 0 and isinstance(ann, dict):
                self.first_keys = set(ann)
            if isinstance(ann, dict) and type(ann.get("id")) is int:
                if -(1 << 63) <= ann["id"] < 1 << 63:
                    self.ids.append(ann["id"])
                    self.id_at.append(i)
                else:
                    self.big_ids.setdefault(ann["id"], []).append(i)
            if not isinstance(ann, dict) or type(ann.get("image_id")) is not int:
                self.wrong.append(
                    (i, None, None, f"image_id is {shown(ann.get('image_id') if isinstance(ann, dict) else ann)}")
                )
                continue
            iid, cid = ann["image_id"], ann.get("category_id")
            try:
                cid = _int(cid, "category_id")
            except ValueError as e:
                self.wrong.append((i, iid, None, str(e)))
                continue
            try:
                bbox = ann.get("bbox")
                if not isinstance(bbox, list) or len(bbox) != 4:
                    raise ValueError(f"bbox is {shown(bbox)}, not [x, y, width, height]")
                x, y, w, h = (json_number(v, f"bbox[{k}]") for k, v in enumerate(bbox))
                if box_problem(x, y, x + w, y + h):
                    raise ValueError(f"bbox {shown(bbox)}: width and height must be positive")
                crowd = ann.get("iscrowd", 0)
                if crowd not in (0, 1) or type(crowd) is bool:
                    raise ValueError(f"iscrowd is {shown(crowd)}, not 0 or 1")
                area = json_number(ann["area"], "area") if "area" in ann else math.nan
                segmentation = None
                if self.masks:
                    if "segmentation" not in ann:
                        raise ValueError("no segmentation, which --masks draws")
                    segmentation = json.dumps(ann["segmentation"], separators=(",", ":"), default=_unwritable)
                keypoints, count = _keypoints(ann["keypoints"]) if "keypoints" in ann else (None, 0)
            except ValueError as e:
                self.wrong.append((i, iid, cid, str(e)))
                continue
            self.index.append(i)
            self.image_ids.append(iid)
            self.category_ids.append(cid)
            self.boxes.extend((x, y, w, h))
            self.crowd.append(crowd)
            self.area.append(area)
            if self.masks:
                self.segmentations.append(segmentation)
            self.keypoints.append(keypoints)
            self.keypoint_counts.append(count)

    def _repeated(self) -> dict[int, str]:
        """Each entry whose id an earlier one has: the message naming the first."""
        import numpy as np

        repeated: dict[int, str] = {}
        ids = np.frombuffer(self.ids, np.int64)
        order = np.argsort(ids, kind="stable")  # equal ids together, in file order
        ids = ids[order]
        if len(ids) > 1 and (ids[1:] == ids[:-1]).any():
            at, start = np.frombuffer(self.id_at, np.int64)[order].tolist(), 0
            ids = ids.tolist()
            for k in range(1, len(ids)):
                if ids[k] != ids[start]:
                    start = k
                else:
                    repeated[at[k]] = f"annotation id {ids[k]} appears twice (annotations[{at[start]}] too)"
        for value, where in self.big_ids.items():
            for later in where[1:]:
                repeated[later] = f"annotation id {value} appears twice (annotations[{where[0]}] too)"
        return repeated

    def resolve(
        self,
        by_id: dict[int, dict],
        categories: dict[int, str],
        problems: list[tuple[str, str]],
        keypoint_counts: dict[int, int] | None = None,
    ) -> None:
        """Every entry, in file order, as a box of its image or a problem (of the image, or
        of the file where no image can be blamed). `keypoint_counts`: of each category
        that names keypoints."""
        keypoint_counts = keypoint_counts or {}
        repeated = self._repeated()
        wrong = iter(self.wrong)
        pending = next(wrong, None)
        sound = len(self.index)
        k = 0
        while k < sound or pending is not None:
            if pending is not None and (k == sound or pending[0] < self.index[k]):
                i, iid, cid, message = pending
                pending = next(wrong, None)
            else:
                i, iid, cid, message = self.index[k], self.image_ids[k], self.category_ids[k], None
                k += 1
            where = f"{self.path} annotations[{i}]"
            if i in repeated:
                problems.append((where, repeated[i]))
                continue
            if iid is None:
                problems.append((where, message))  # type: ignore[arg-type]
                continue
            entry = by_id.get(iid)
            if entry is None:
                problems.append((where, f"image_id {iid} is not in 'images'"))
                continue
            if cid is not None and cid not in categories:
                entry["problems"].append((where, f"category_id {cid} is not in 'categories'"))
            elif message is not None:
                entry["problems"].append((where, message))
            elif self.keypoints[k - 1] is not None and self.keypoint_counts[k - 1] != keypoint_counts.get(cid):
                named = keypoint_counts.get(cid)
                entry["problems"].append(
                    (
                        where,
                        f"{self.keypoint_counts[k - 1]} keypoints, but category {categories[cid]!r} names "
                        + (f"{named}" if named else "none"),
                    )
                )
            else:
                entry["boxes"].append(self._box(k - 1, categories[cid], where))  # type: ignore[index]

    def _box(self, at: int, name: str, where: str) -> Box:
        """The sound entry `at` of the columns, as a box (COCO's x, y, width, height as corners)."""
        x, y, w, h = self.boxes[4 * at : 4 * at + 4]
        area = self.area[at]
        return Box(
            name,
            x,
            y,
            x + w,
            y + h,
            where=where,
            is_crowd=self.crowd[at],
            area=None if math.isnan(area) else area,
            segmentation=self.segmentations[at] if self.masks else None,
            keypoints=self.keypoints[at],
        )
