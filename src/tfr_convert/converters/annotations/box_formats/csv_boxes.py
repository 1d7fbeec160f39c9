"""One row per box: `filename,width,height,class,xmin,ymin,xmax,ymax` in pixels, the
layout of the widely copied generate_tfrecord.py tutorial and of labelling tools'
"TensorFlow Object Detection CSV" exports. Column names are matched ignoring case
and spaces; other columns are ignored. A row with a filename and an empty class and
empty coordinates declares an image without boxes (some exports write those)."""

from __future__ import annotations

from ....errors import SourceError
from ...listing import csvtable
from .common import Annotations, Box, ImageCollector, box_problem, number, relative, size

COLUMNS = ("filename", "width", "height", "class", "xmin", "ymin", "xmax", "ymax")


def read(path: str, delimiter: str | None = None) -> Annotations:
    table = csvtable.read(path, delimiter=delimiter)
    column = {name.strip().lower(): i for i, name in enumerate(table.header)}
    missing = [c for c in COLUMNS if c not in column]
    if missing:
        raise SourceError(
            f"{path}: no {', '.join(missing)} column{'s' if len(missing) > 1 else ''} (found: "
            f"{', '.join(table.header)}); a box CSV has the columns {','.join(COLUMNS)}"
        )
    boxes = Annotations([], [path], problems=[(f"{path} line {line}", why) for line, why in table.problems])
    images = ImageCollector()
    for row in table.rows:
        where = f"{path} line {row.line}"
        value = {c: row.values[column[c]].strip() for c in COLUMNS}
        filename = relative(value["filename"])
        if not filename:
            boxes.problems.append((where, "empty filename"))
            continue
        try:
            width, height = size(value["width"], "width"), size(value["height"], "height")
        except ValueError as e:
            images.image(filename, where)["problems"].append((where, str(e)))
            continue
        entry = images.image(filename, where, width, height)
        if not value["class"] and not any(value[c] for c in COLUMNS[4:]):
            continue  # the image, without boxes
        try:
            if not value["class"]:
                raise ValueError("empty class")
            coords = [number(value[c], c) for c in COLUMNS[4:]]
            problem = box_problem(*coords)
            if problem:
                raise ValueError(problem)
        except ValueError as e:
            entry["problems"].append((where, str(e)))
            continue
        entry["boxes"].append(Box(value["class"], *coords, where=where))
    boxes.images = images.images()
    return boxes
