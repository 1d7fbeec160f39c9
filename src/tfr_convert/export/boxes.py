"""--to coco|yolo|voc|csv: a detection dataset (the Object Detection API's keys) back to
pictures and annotations that `tfr-convert detection` reads.

Everything goes to one folder, whatever the split (`OUT/images/NAME` and the
annotations; `OUT/splits.csv` says which split held each picture), so that converting it
again with the same `--split` and seed puts every picture where it was. Pixel values are
written as the shortest decimals from which the converter's own arithmetic (per format,
below) gives the stored float32 corners and area again, so whole-pixel annotations come
back as whole numbers and the shards come back byte for byte.
"""

from __future__ import annotations

import csv
import io
import json
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

import numpy as np

from ..errors import SourceError
from .source import ExportSource, inside_output
from .staging import staged

FORMATS = ("coco", "yolo", "voc", "csv")
IMAGES = "images"
PREFIX = "image/object/"
DIGITS = range(0, 13)  # decimals tried, fewest first


@dataclass
class Picture:
    split: str
    filename: str
    source_id: str
    data: bytes
    width: int
    height: int
    boxes: list[dict[str, Any]]  # xmin.. (float32, normalized), text, label, difficult, truncated, is_crowd, area


def _f32(value: float) -> float:
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
        return (_f32(x0 / w), _f32(y0 / h), _f32(x1 / w), _f32(y1 / h)) == stored

    def and_area(values: tuple[float, ...]) -> bool:
        x0, y0, x1, y1 = (v - shift for v in values)
        stated = area_written or box["area"] is None
        return corners(values) and (stated or _f32((x1 - x0) * (y1 - y0)) == box["area"])

    # the area too where the format derives it from the box; an area that came from
    # elsewhere (COCO's, of a segmentation) cannot come back through a box-only format
    return _shortest(lambda d: tuple(round(v + shift, d) for v in exact), and_area, corners)


def coco_box(box: dict[str, Any], w: int, h: int) -> tuple[float, ...]:
    """[x, y, width, height] as COCO writes them; the converter takes x + width as xmax."""
    x0, y0, x1, y1 = pixel_corners(box, w, h, area_written=True)  # COCO states the area: written as stored
    stored = (box["xmax"], box["ymax"])

    def check(values: tuple[float, ...]) -> bool:
        return (_f32((x0 + values[0]) / w), _f32((y0 + values[1]) / h)) == stored

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
        return (_f32(x0 / w), _f32(y0 / h), _f32(x1 / w), _f32(y1 / h)) == stored

    def and_area(values: tuple[float, ...]) -> bool:
        x0, y0, x1, y1 = pixels(values)
        return corners(values) and (box["area"] is None or _f32((x1 - x0) * (y1 - y0)) == box["area"])

    return _shortest(lambda d: tuple(round(v, d + 3) for v in exact), and_area, corners)


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def pictures(source: ExportSource, limit: int | None) -> Iterator[Picture]:
    for split in source.splits:
        for where, example, _ in source.examples(split, limit):
            yield _picture(example, split, where)


def _one(example: dict, name: str, where: str) -> Any:
    values = example.get(name, (None, []))[1]
    if len(values) != 1:
        raise SourceError(f"{where}: no single {name!r}: not a detection record (the Object Detection API's keys)")
    return values[0]


def _picture(example: dict, split: str, where: str) -> Picture:
    filename = _one(example, "image/filename", where).decode("utf-8", "replace")
    path = inside_output(filename, where)
    lists = {k: example.get(PREFIX + k, (None, []))[1] for k in ("bbox/xmin", "bbox/ymin", "bbox/xmax", "bbox/ymax")}
    n = len(lists["bbox/xmin"])
    if any(len(v) != n for v in lists.values()):
        raise SourceError(f"{where}: the box corner lists differ in length")

    def per_box(key: str, default: Any) -> list[Any]:
        values = example.get(PREFIX + key, (None, []))[1]
        return list(values) if len(values) == n else [default] * n

    texts, labels = per_box("class/text", b""), per_box("class/label", 0)
    flags = {k: per_box(k, 0) for k in ("difficult", "truncated", "is_crowd")}
    areas = per_box("area", None)
    boxes = [
        {
            **{k.removeprefix("bbox/"): _f32(v[i]) for k, v in lists.items()},
            "text": texts[i].decode("utf-8", "replace"),
            "label": int(labels[i]),
            **{k: int(v[i]) for k, v in flags.items()},
            "area": None if areas[i] is None else _f32(areas[i]),
        }
        for i in range(n)
    ]
    source_id = example.get("image/source_id", (None, [filename.encode()]))[1][0].decode("utf-8", "replace")
    return Picture(
        split,
        path,
        source_id,
        _one(example, "image/encoded", where),
        int(_one(example, "image/width", where)),
        int(_one(example, "image/height", where)),
        boxes,
    )


def write(source: ExportSource, out: str, target: str, *, limit=None, progress=None, voc_origin: int = 1) -> dict:
    """Pictures to OUT/images and the annotations in `target`'s format; {split: {records}}."""
    found = []
    placed: dict[str, str] = {}
    with staged(out) as staging:
        for picture in pictures(source, limit):
            if picture.filename in placed:
                raise SourceError(
                    f"{picture.filename}: named by records of {placed[picture.filename]} and {picture.split}"
                )
            placed[picture.filename] = picture.split
            staging.put(posixpath.join(IMAGES, picture.filename), picture.data)
            picture.data = b""  # written: only the boxes are kept
            found.append(picture)
            if progress is not None:
                progress(1)
        for path, data in ANNOTATIONS[target](found, voc_origin).items():
            staging.put(path, data)
        splits = io.StringIO()
        writer = csv.writer(splits, lineterminator="\n")
        writer.writerow(["filename", "split"])
        writer.writerows((p.filename, p.split) for p in found)
        staging.put("splits.csv", splits.getvalue().encode())
        staging.commit()
    counts: dict[str, dict[str, Any]] = {split: {"records": 0} for split in source.splits}
    for p in found:
        counts[p.split]["records"] += 1
    return counts


def _classes(found: list[Picture]) -> dict[int, str]:
    """label -> class name, from the boxes."""
    return dict(sorted({b["label"]: b["text"] for p in found for b in p.boxes}.items()))


def _coco(found: list[Picture], voc_origin: int) -> dict[str, bytes]:
    images, annotations = [], []
    ids = [int(p.source_id) if p.source_id.isdigit() else None for p in found]
    unique = all(i is not None for i in ids) and len(set(ids)) == len(ids)
    for n, picture in enumerate(found, 1):
        image_id = ids[n - 1] if unique else n
        images.append({"id": image_id, "file_name": picture.filename, "width": picture.width, "height": picture.height})
        for box in picture.boxes:
            x, y, bw, bh = coco_box(box, picture.width, picture.height)
            entry = {"id": len(annotations) + 1, "image_id": image_id, "category_id": box["label"]}
            entry.update(bbox=[float(x), float(y), float(bw), float(bh)], iscrowd=box["is_crowd"])
            if box["area"] is not None:
                entry["area"] = box["area"]
            annotations.append(entry)
    categories = [{"id": label, "name": name} for label, name in _classes(found).items()]
    document = {"images": images, "annotations": annotations, "categories": categories}
    return {"annotations.json": json.dumps(document, indent=1).encode()}


def _yolo(found: list[Picture], voc_origin: int) -> dict[str, bytes]:
    classes = _classes(found)
    order = sorted(classes)  # YOLO counts classes from 0 in label order
    files = {"labels/classes.txt": "".join(f"{classes[c]}\n" for c in order).encode()}
    for picture in found:
        lines = []
        for box in picture.boxes:
            values = yolo_box(box, picture.width, picture.height)
            lines.append(" ".join([str(order.index(box["label"])), *map(_number, values)]))
        stem = posixpath.splitext(picture.filename)[0]
        files[f"labels/{stem}.txt"] = "".join(f"{line}\n" for line in lines).encode()
    return files


def _voc(found: list[Picture], voc_origin: int) -> dict[str, bytes]:
    files = {}
    for picture in found:
        if not picture.boxes:
            continue  # a negative: no annotation file names it
        objects = []
        for box in picture.boxes:
            x0, y0, x1, y1 = (_number(v) for v in pixel_corners(box, picture.width, picture.height, voc_origin))
            objects.append(
                f"<object><name>{escape(box['text'])}</name><truncated>{box['truncated']}</truncated>"
                f"<difficult>{box['difficult']}</difficult><bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin>"
                f"<xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>"
            )
        xml = (
            f"<annotation><filename>{escape(picture.filename)}</filename><size><width>{picture.width}</width>"
            f"<height>{picture.height}</height><depth>3</depth></size>{''.join(objects)}</annotation>\n"
        )
        files[f"Annotations/{picture.filename.replace('/', '_')}.xml"] = xml.encode()
    return files


def _csv(found: list[Picture], voc_origin: int) -> dict[str, bytes]:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["filename", "width", "height", "class", "xmin", "ymin", "xmax", "ymax"])
    for picture in found:
        for box in picture.boxes:
            corners = pixel_corners(box, picture.width, picture.height)
            writer.writerow([picture.filename, picture.width, picture.height, box["text"], *map(_number, corners)])
    return {"boxes.csv": text.getvalue().encode()}


ANNOTATIONS = {"coco": _coco, "yolo": _yolo, "voc": _voc, "csv": _csv}
