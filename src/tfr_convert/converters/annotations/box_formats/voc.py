"""Pascal VOC: one XML file per image (`filename`, `size/width|height`, `object/name`,
`object/bndbox/xmin|ymin|xmax|ymax`, `difficult`, `truncated`).

`origin`: where the file's pixel coordinates start. The devkit counts from 1, and
TensorFlow Datasets' voc builder subtracts 1 (origin 1); the Object Detection API's
create_pascal_tf_record.py takes them as they are (origin 0), as do tools that export
0-based VOC files. Documents declaring a DTD or entities are
refused before parsing: annotation files need neither, and entity expansion is how
a small XML file becomes a huge one.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from ....errors import SourceError
from .common import Annotations, Box, ImageCollector, box_problem, number, relative, size

MAX_XML_BYTES = 16 << 20  # real files are a few KB
MAX_LABELMAP_BYTES = 16 << 20


def _flag(obj: ET.Element, tag: str) -> int:
    text = (obj.findtext(tag) or "0").strip()
    if text not in ("0", "1"):
        raise ValueError(f"<{tag}> is {text[:20]!r}, not 0 or 1")
    return int(text)


def read_file(path: str, images: ImageCollector, fallback_name: str, origin: int = 0) -> None:
    if os.path.getsize(path) > MAX_XML_BYTES:
        raise SourceError(f"{path}: {os.path.getsize(path)} bytes, more than a VOC annotation may hold")
    with open(path, "rb") as f:
        data = f.read()
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise SourceError(f"{path}: declares a DTD or entities, which a VOC annotation never needs: refused")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        line, column = e.position
        raise SourceError(f"{path}: line {line}, column {column}: not well-formed XML ({e.msg})") from None
    if root.tag != "annotation":
        raise SourceError(f"{path}: root element <{root.tag}>, expected <annotation>")
    filename = relative(root.findtext("filename") or fallback_name)
    try:
        width = size(root.findtext("size/width"), "<size><width>")
        height = size(root.findtext("size/height"), "<size><height>")
    except ValueError as e:
        images.image(filename, path)["problems"].append((path, str(e)))
        return
    entry = images.image(filename, path, width, height)
    for n, obj in enumerate(root.iter("object"), 1):
        where = f"{path} object {n}"
        try:
            name = (obj.findtext("name") or "").strip()
            if not name:
                raise ValueError("<name> is empty")
            box = obj.find("bndbox")
            if box is None:
                raise ValueError("no <bndbox>")
            coords = [number(box.findtext(c), f"<{c}>") - origin for c in ("xmin", "ymin", "xmax", "ymax")]
            problem = box_problem(*coords)
            if problem:
                raise ValueError(problem)
            entry["boxes"].append(
                Box(name, *coords, where=where, difficult=_flag(obj, "difficult"), truncated=_flag(obj, "truncated"))
            )
        except ValueError as e:
            entry["problems"].append((where, str(e)))


def read(folder: str, origin: int = 0) -> Annotations:
    names = sorted(n for n in os.listdir(folder) if n.lower().endswith(".xml") and not n.startswith("."))
    if not names:
        raise SourceError(f"{folder}: no .xml files")
    images = ImageCollector()
    for name in names:
        read_file(os.path.join(folder, name), images, os.path.splitext(name)[0] + ".jpg", origin)
    files = [os.path.join(folder, n) for n in names]
    labelmap = _labelmap(folder)
    if labelmap is None:
        return Annotations(images.images(), files)
    return Annotations(images.images(), [labelmap[0], *files], classes=labelmap[1])


LABELMAP = "labelmap.txt"  # Datumaro's and CVAT's VOC exports: the classes, in order


def _labelmap(folder: str) -> tuple[str, list[str]] | None:
    """(path, class names) of a labelmap.txt in the annotations folder or the one above it
    (`name:color:parts:actions` a line, `#` comments; the background is no class), or None."""
    for where in (folder, os.path.dirname(os.path.abspath(folder))):
        path = os.path.join(where, LABELMAP)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read(MAX_LABELMAP_BYTES).splitlines()
        names: list[str] = []
        for at, line in enumerate(lines, 1):
            name = line.split(":", 1)[0].strip()
            if not name or line.lstrip().startswith("#") or name.lower() in ("background", "__background__"):
                continue
            if name in names:
                raise SourceError(f"{path}: line {at}: class {name!r} is listed twice")
            names.append(name)
        if not names:
            raise SourceError(f"{path}: no class names in it")
        return path, names
    return None
