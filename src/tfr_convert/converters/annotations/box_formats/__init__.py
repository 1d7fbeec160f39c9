"""Box annotations in the four formats people bring, read into one shape (common.py).

`detect` tells the format from PATH: a .csv file, a COCO .json, a folder of VOC
.xml files or a folder of YOLO .txt files (a folder of .json or .csv files: one a split).
"""

from __future__ import annotations

import os

from ....errors import SourceError
from .common import Annotations, Box, ImageBoxes

FORMATS = ("csv", "voc", "coco", "yolo")


def detect(path: str) -> str:
    if os.path.isfile(path):
        lower = path.lower()
        if lower.endswith((".csv", ".tsv", ".txt")):
            return "csv"
        if lower.endswith(".json"):
            return "coco"
        raise SourceError(f"{path}: cannot tell the annotation format from the name: give --annotation-format")
    names = [n for n in os.listdir(path) if not n.startswith(".")]
    xml = sum(n.lower().endswith(".xml") for n in names)
    txt = sum(n.endswith(".txt") and n != "classes.txt" for n in names)
    subfolders = any(os.path.isdir(os.path.join(path, n)) for n in names)
    if xml and not txt:
        return "voc"
    if not xml and not txt and any(n.lower().endswith(".json") for n in names):
        return "coco"  # a folder of instances files, one a split (splits.split_files)
    if not xml and not txt and any(n.lower().endswith(".csv") for n in names):
        return "csv"  # a folder of box CSVs, one a split
    if not xml and (txt or subfolders):
        return "yolo"
    raise SourceError(
        f"{path}: a folder of {xml} .xml and {txt} .txt files: give --annotation-format voc or yolo"
        if xml
        else f"{path}: no .xml (VOC) or .txt (YOLO) files in it"
    )


def read(
    path: str,
    fmt: str,
    image_files: list[str],
    classes: list[str] | None,
    voc_origin: int = 0,
    masks: bool = False,
) -> Annotations:
    """`image_files`: IMAGE_DIR's images (relative); YOLO pairs labels with them by name.
    `voc_origin`: where VOC files count pixels from (voc.py). `masks`: keep COCO's
    segmentations."""
    if fmt == "csv":
        from . import csv_boxes

        return csv_boxes.read(path)
    if fmt == "voc":
        from . import voc

        if not os.path.isdir(path):
            raise SourceError(f"{path}: VOC annotations are a folder of .xml files")
        return voc.read(path, voc_origin)
    if fmt == "coco":
        from . import coco

        return coco.read(path, masks)
    from . import yolo

    if not os.path.isdir(path):
        raise SourceError(f"{path}: YOLO annotations are a folder of .txt files")
    return yolo.read(path, image_files, classes)


__all__ = ["FORMATS", "Annotations", "Box", "ImageBoxes", "detect", "read"]
