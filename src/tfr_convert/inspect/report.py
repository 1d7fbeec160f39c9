"""--report OUT.html: one self-contained page to look at a dataset.

Its numbers are --stats's report, its problems --verify's and its schema the default
summary's, each computed by that mode's own function; this module only adds the
pictures (a bounded set of thumbnails per class, and the records that --stats found in
more than one split) and hands everything to page.render.
"""

from __future__ import annotations

import base64
import io
import os
import sys
from typing import Any

from ..containers import MAX_RECORD_BYTES
from ..dataset.existing import ExistingDataset
from ..errors import SourceError
from ..storage import fs
from ..version import __version__
from .grid import MAX_PIXELS, Picture, Pictures
from .page import render
from .paths import resolve
from .stats import stats
from .summary import examples_of, summarize
from .verify import verify

PER_CLASS = 8  # thumbnails per class
MAX_CLASSES = 50  # classes with a row of thumbnails; the rest are counted on the page
UNLABELLED = 32  # thumbnails of a dataset without labels
THUMB = 96  # pixels on a thumbnail's longer side


def _data_uri(picture: Picture) -> str:
    """The thumbnail as a data URI: PNG for small pictures (sharp pixels, few bytes once
    scaled up), JPEG for photographs."""
    tile = picture.tile(THUMB)
    small = max(picture.pixels.shape[:2]) <= THUMB
    out = io.BytesIO()
    if small:
        tile.save(out, format="PNG", optimize=True)
    else:
        tile.save(out, format="JPEG", quality=80)
    kind = "png" if small else "jpeg"
    return f"data:image/{kind};base64,{base64.b64encode(out.getvalue()).decode('ascii')}"


def _thumb(picture: Picture, path: str, index: int) -> dict[str, Any]:
    return {"src": _data_uri(picture), "caption": picture.caption, "file": os.path.basename(path), "record": index}


def class_order(figures: dict[str, Any]) -> list[str]:
    """The classes the thumbnails can find, in the order --stats lists them: the boxes'
    classes (most frequent first), else the names of the largest label histogram's
    values (by index); empty for a dataset without labels."""
    if "boxes" in figures:
        return list(figures["boxes"]["classes"])
    labelled = [f for f in figures["features"].values() if "histogram" in f]
    if not labelled:
        return []
    feature = max(labelled, key=lambda f: len(f["histogram"]))
    names = feature.get("class_names", {})
    return [names.get(k, k) for k in feature["histogram"]]


def galleries(pictures: Pictures, classes: int, per_class: int, max_record: int) -> dict[str, list[dict[str, Any]]]:
    """{class: up to `per_class` thumbnails, first in reading order}; the first MAX_CLASSES
    classes met get a row. Reading stops once as many rows are full as --stats counted
    classes (or MAX_CLASSES). A dataset without labels gets one row of UNLABELLED pictures."""
    rows: dict[str, list[dict[str, Any]]] = {}
    wanted = min(classes, MAX_CLASSES) if classes else 1
    limit = per_class if classes else UNLABELLED
    full = 0
    for path in pictures.files:
        for record, example in examples_of(path, max_record, sound_only=True):
            if example is None or (picture := pictures.picture(path, record.index, example)) is None:
                continue
            thumb = None
            for name in picture.classes if classes else ["all images"]:
                row = rows.get(name)
                if row is None:
                    if len(rows) >= MAX_CLASSES:
                        continue
                    row = rows[name] = []
                if len(row) < limit:
                    thumb = thumb or _thumb(picture, path, record.index)
                    row.append(thumb)
                    full += len(row) == limit
            if full >= wanted:
                return rows
    return rows


def _referenced(figures: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The groups of records --stats found in several splits: exact copies, then near ones."""
    leakage = figures.get("leakage", {})
    groups = [example["records"] for example in leakage.get("examples", [])]
    return groups + [pair["records"] for pair in leakage.get("near_duplicates", [])]


def pictures_at(pictures: Pictures, wanted: list[dict[str, Any]], max_record: int) -> dict[tuple[str, int], dict]:
    """{(file, record): thumbnail} of the records asked for, each file read up to the last of them."""
    by_file: dict[str, set[int]] = {}
    for ref in wanted:
        by_file.setdefault(ref["file"], set()).add(ref["record"])
    by_ref: dict[tuple[str, int], dict] = {}
    for path, indexes in by_file.items():
        last = max(indexes)
        for record, example in examples_of(path, max_record, sound_only=True):
            if record.index > last:
                break
            if record.index in indexes and example is not None:
                picture = pictures.picture(path, record.index, example)
                if picture is not None:
                    by_ref[(path, record.index)] = _thumb(picture, path, record.index)
    return by_ref


def _provenance(datasets: list[str]) -> list[dict[str, Any]]:
    out = []
    for d in datasets:
        manifest = ExistingDataset(d).manifest
        if manifest:
            out.append(
                {
                    "path": d,
                    "tool": f"{manifest.get('tool', '?')} {manifest.get('tool_version', '')}".strip(),
                    "converter": manifest.get("converter"),
                    "options": manifest.get("options", {}),
                    "sources": manifest.get("sources", []),
                    "warnings": manifest.get("warnings", []),
                    "skipped": manifest.get("skipped_total", 0),
                }
            )
    return out


def _title(paths: list[str], datasets: list[str]) -> str:
    names = []
    for d in datasets:
        try:
            names.append(ExistingDataset(d).name)
        except SourceError:
            names.append(fs.basename(fs.normpath(d)))
    return ", ".join(dict.fromkeys(names)) or ", ".join(fs.basename(fs.normpath(p)) for p in paths)


def report(
    paths: list[str],
    out: str,
    per_class: int = PER_CLASS,
    max_record: int = MAX_RECORD_BYTES,
    max_pixels: int = MAX_PIXELS,
) -> dict[str, Any]:
    """Write the page to `out` ('-': standard output); what it holds, in numbers."""
    inputs = resolve(paths)
    # a damaged file is shown as far as it is sound; its damage is --verify's to list
    summary = summarize(paths, head=1, max_record=max_record, sound_only=True)
    figures = stats(paths, max_record, sound_only=True)
    checked = verify(paths)
    pictures = Pictures(paths, max_pixels)
    order = class_order(figures)
    rows = galleries(pictures, len(order), per_class, max_record)
    position = {name: i for i, name in enumerate(order)}
    rows = dict(sorted(rows.items(), key=lambda row: position.get(row[0], len(order))))
    groups = _referenced(figures)
    at_refs = pictures_at(pictures, [ref for group in groups for ref in group], max_record)
    pairs = [[{**ref, "thumb": at_refs.get((ref["file"], ref["record"]))} for ref in group] for group in groups]
    page = render(
        {
            "title": _title(paths, inputs.datasets),
            "version": __version__,
            "summary": summary,
            "stats": figures,
            "verify": checked,
            "provenance": _provenance(inputs.datasets),
            "galleries": rows,
            "classes": len(order),
            "limits": {"per_class": per_class, "max_classes": MAX_CLASSES, "unlabelled": UNLABELLED, "side": THUMB},
            "pairs": pairs,
            "image_feature": pictures.feature,
        }
    )
    data = page.html.encode("utf-8")
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        if not fs.is_remote(out):
            os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        fs.put_bytes(out, data)
    return {
        "mode": "report",
        "out": out,
        "bytes": len(data),
        "records": figures["records"],
        "thumbnails": page.thumbnails,
        "charts": page.charts,
        "problems": checked["problems"],
    }
