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

import hashlib
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

import numpy as np

from ..errors import SourceError
from .engine import Chunk, ExportOptions, Failed, Job, run
from .source import ExportSource, inside_output, parsed
from .staging import Drop, Spool, Staging, staged

FORMATS = ("coco", "yolo", "voc", "csv")
IMAGES = "images"
PREFIX = "image/object/"
DIGITS = range(0, 13)  # decimals tried, fewest first


@dataclass
class Picture:
    where: str
    filename: str
    source_id: str
    width: int
    height: int
    boxes: list[dict[str, Any]]  # xmin.. (float32, normalized), text, label, difficult, truncated, is_crowd, area,
    # and `values`: the numbers the target writes
    name: str = ""  # the Drop's name of its picture file
    split: str = ""


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


def _one(example: dict, name: str) -> Any:
    values = example.get(name, (None, []))[1]
    if len(values) != 1:
        raise SourceError(f"no single {name!r}: not a detection record (the Object Detection API's keys)")
    return values[0]


def _picture(example: dict, where: str) -> tuple[Picture, bytes]:
    """A record's picture (its boxes) and the picture file's bytes."""
    filename = _one(example, "image/filename").decode("utf-8", "replace")
    path = inside_output(filename)
    lists = {k: example.get(PREFIX + k, (None, []))[1] for k in ("bbox/xmin", "bbox/ymin", "bbox/xmax", "bbox/ymax")}
    n = len(lists["bbox/xmin"])
    if any(len(v) != n for v in lists.values()):
        raise SourceError("the box corner lists differ in length")

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
    width, height = int(_one(example, "image/width")), int(_one(example, "image/height"))
    return Picture(where, path, source_id, width, height, boxes), _one(example, "image/encoded")


class BoxesJob(Job):
    def __init__(self, target: str, staging: Staging, splits: list[str], voc_origin: int) -> None:
        self.target, self.voc_origin, self.drop = target, voc_origin, staging.drop
        self.numbers = {split: n for n, split in enumerate(splits)}
        self._staging: Staging | None = staging  # parent side only
        self._seen: dict[bytes, str] = {}  # a hash of each file name -> its split
        self.found: Spool | None = staging.spool("pictures")
        self.classes: dict[int, str] = {}  # label -> class name, from the boxes
        self.ids: set[int] | None = set()  # the pictures' source ids while all are distinct numbers

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_staging": None, "_seen": {}, "found": None, "classes": {}, "ids": None}

    def work(self, chunk: Chunk) -> tuple[list[Any], Any]:
        results: list[Any] = []
        for i, (where, payload) in enumerate(chunk.records):
            try:
                picture, data = _picture(parsed(payload), where)
                for box in picture.boxes:
                    box["values"] = self.values(box, picture.width, picture.height)
            except SourceError as e:
                results.append(Failed(where, str(e)))
                continue
            picture.name = Drop.name(self.numbers[chunk.split], chunk.start + i)
            self.drop.put(picture.name, data)
            results.append(picture)
        return results, None

    def values(self, box: dict[str, Any], w: int, h: int) -> tuple[float, ...]:
        if self.target == "coco":
            return coco_box(box, w, h)
        if self.target == "yolo":
            return yolo_box(box, w, h)
        return pixel_corners(box, w, h, self.voc_origin if self.target == "voc" else 0)

    def take(self, split: str, where: str, picture: Picture) -> str | None:
        key = hashlib.blake2b(picture.filename.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        if key in self._seen:
            return f"{picture.filename}: named by records of {self._seen[key]} and {split} too"
        self._seen[key] = split
        assert self._staging is not None and self.found is not None
        self._staging.place(picture.name, posixpath.join(IMAGES, picture.filename))
        picture.split = split
        self.found.append(picture)
        for box in picture.boxes:
            self.classes.setdefault(box["label"], box["text"])
        if self.ids is not None:
            number = int(picture.source_id) if picture.source_id.isdigit() else None
            if number is None or number in self.ids:
                self.ids = None
            else:
                self.ids.add(number)
        return None


def write(source: ExportSource, out: str, target: str, options: ExportOptions, voc_origin: int = 1) -> dict:
    """Pictures to OUT/images and the annotations in `target`'s format; {split: {records}}."""
    with staged(out, options.dry_run) as staging:
        job = BoxesJob(target, staging, list(source.splits), voc_origin)
        written = run(source, job, options)
        assert job.found is not None
        ANNOTATIONS[target](job, staging)
        with staging.csv("splits.csv") as splits:
            splits.row(["filename", "split"])
            for picture in job.found:
                splits.row([picture.filename, picture.split])
        staging.commit()
    return written


def _coco(job: BoxesJob, staging: Staging) -> None:
    """annotations.json, streamed: pictures keep their source ids where all are distinct numbers."""
    assert job.found is not None
    with staging.open("annotations.json") as f:
        f.write(b'{"images": [')
        for n, picture in enumerate(job.found, 1):
            image_id = int(picture.source_id) if job.ids is not None else n
            entry = {"id": image_id, "file_name": picture.filename, "width": picture.width, "height": picture.height}
            f.write((",\n " if n > 1 else "\n ").encode() + json.dumps(entry).encode())
        f.write(b'\n],\n"annotations": [')
        count = 0
        for n, picture in enumerate(job.found, 1):
            image_id = int(picture.source_id) if job.ids is not None else n
            for box in picture.boxes:
                count += 1
                entry = {"id": count, "image_id": image_id, "category_id": box["label"]}
                entry.update(bbox=[float(v) for v in box["values"]], iscrowd=box["is_crowd"])
                if box["area"] is not None:
                    entry["area"] = box["area"]
                f.write((",\n " if count > 1 else "\n ").encode() + json.dumps(entry).encode())
        categories = [{"id": label, "name": name} for label, name in sorted(job.classes.items())]
        f.write(b'\n],\n"categories": ' + json.dumps(categories, indent=1).encode() + b"}\n")


def _yolo(job: BoxesJob, staging: Staging) -> None:
    order = sorted(job.classes)  # YOLO counts classes from 0 in label order
    staging.put("labels/classes.txt", "".join(f"{job.classes[c]}\n" for c in order).encode())
    index = {label: i for i, label in enumerate(order)}
    assert job.found is not None
    for picture in job.found:
        lines = "".join(
            " ".join([str(index[box["label"]]), *map(_number, box["values"])]) + "\n" for box in picture.boxes
        )
        stem = posixpath.splitext(picture.filename)[0]
        staging.put(f"labels/{stem}.txt", lines.encode())


def _voc(job: BoxesJob, staging: Staging) -> None:
    assert job.found is not None
    for picture in job.found:
        if not picture.boxes:
            continue  # a negative: no annotation file names it
        objects = []
        for box in picture.boxes:
            x0, y0, x1, y1 = map(_number, box["values"])
            objects.append(
                f"<object><name>{escape(box['text'])}</name><truncated>{box['truncated']}</truncated>"
                f"<difficult>{box['difficult']}</difficult><bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin>"
                f"<xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>"
            )
        xml = (
            f"<annotation><filename>{escape(picture.filename)}</filename><size><width>{picture.width}</width>"
            f"<height>{picture.height}</height><depth>3</depth></size>{''.join(objects)}</annotation>\n"
        )
        staging.put(f"Annotations/{picture.filename.replace('/', '_')}.xml", xml.encode())


def _csv(job: BoxesJob, staging: Staging) -> None:
    assert job.found is not None
    with staging.csv("boxes.csv") as rows:
        rows.row(["filename", "width", "height", "class", "xmin", "ymin", "xmax", "ymax"])
        for picture in job.found:
            for box in picture.boxes:
                rows.row([picture.filename, picture.width, picture.height, box["text"], *map(_number, box["values"])])


ANNOTATIONS = {"coco": _coco, "yolo": _yolo, "voc": _voc, "csv": _csv}
