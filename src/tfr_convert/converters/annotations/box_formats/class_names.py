"""Class names, from the files people keep them in: a YOLO `data.yaml` (its `names:`, a
list or a 0..N-1 mapping), Darknet's / CVAT's `obj.names` and `classes.txt` (one per
line), and an Object Detection API label map (`.pbtxt`, names in id order).

`read_names(path)` reads --classes by the file's kind (anything else is a usage error
naming the kinds); `find_names(labels)` looks for one beside YOLO labels and up to two
folders above, where the layouts people export keep it:
    Darknet / CVAT     obj.names beside obj_train_data/
    Ultralytics        data.yaml (or dataset.yaml, or NAME.yaml: coco8.yaml) at the root,
                       labels in labels/train/
    Roboflow           data.yaml at the root, labels in train/labels/
"""

from __future__ import annotations

import os
import re

from ....errors import OptionError, SourceError
from . import yolo_yaml

MAX_NAMES_BYTES = 16 << 20
#: what find_names looks for, in this order, in each folder
NAME_FILES = ("classes.txt", "obj.names", "data.yaml", "data.yml", "dataset.yaml")
UP = 2  # folders above the labels' that find_names looks in
# The keys a YOLO data.yaml has besides names: a "names file" holding them is one.
_YAML_KEYS = re.compile(r"^\s*(names|nc|train|val|test|path|download)\s*:", re.MULTILINE)


def _label_map_names(path: str, text: str) -> list[str]:
    """The names of an Object Detection API label map (`item { id: N name: "..." }`), in
    id order; an item's display_name where it has one (COCO's map names items by
    Freebase id, `/m/01g317`, and shows `person`)."""

    def quoted(key: str, body: str) -> str | None:
        m = re.search(r"\b" + key + r'\s*:\s*"((?:[^"\\]|\\.)*)"', body)
        return re.sub(r"\\(.)", r"\1", m[1]) if m else None

    items: dict[int, str] = {}
    for m in re.finditer(r"item\s*\{(.*?)\}", text, re.DOTALL):
        number = re.search(r"\bid\s*:\s*(-?\d+)", m[1])
        name = quoted("display_name", m[1]) or quoted("name", m[1])
        if number is None or name is None:
            line = text.count("\n", 0, m.start()) + 1
            raise SourceError(f"{path}: line {line}: an item without an id or a name")
        if int(number[1]) in items:
            raise SourceError(f"{path}: id {number[1]} appears twice")
        items[int(number[1])] = name
    if not items:
        raise SourceError(f'{path}: no item {{ id: N name: "..." }} in this label map')
    return [items[k] for k in sorted(items)]


def _lines(path: str, text: str) -> list[str]:
    """One name per line (blank lines ignored); a name twice is an error."""
    if _YAML_KEYS.search(text) and ":" in text.split("\n", 1)[0]:
        raise OptionError(
            f"{path}: holds YAML keys (names:, nc:, train:...), not one name per line: "
            "a YOLO data.yaml is read as such when its name ends in .yaml"
        )
    names: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        name = line.strip()
        if name in names:
            raise SourceError(f"{path}: line {number}: class {name!r} is listed twice")
        if name:
            names.append(name)
    return names


def read_names(path: str) -> list[str]:
    """The class names of a file given as --classes, read by its kind."""
    lower = path.lower()
    if not lower.endswith((".yaml", ".yml", ".pbtxt", ".names", ".txt")):
        raise OptionError(
            f"{path}: --classes takes a names file: a YOLO data.yaml, obj.names, classes.txt (one name per "
            "line) or an Object Detection API label map (.pbtxt)"
        )
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read(MAX_NAMES_BYTES)
    if lower.endswith((".yaml", ".yml")):
        names = yolo_yaml.names(path, yolo_yaml.load(path))
    elif lower.endswith(".pbtxt"):
        names = _label_map_names(path, text)
    else:
        names = _lines(path, text)
    if not names:
        raise SourceError(f"{path}: no class names in it")
    return names


def find_names(labels: str) -> tuple[str, list[str]] | None:
    """(file, class names) found beside YOLO labels or up to UP folders above, or None:
    in each folder one of NAME_FILES, else the one other YAML file with a `names:` key
    (Ultralytics names its dataset files after the dataset: coco8.yaml)."""
    names_file = _looked_up(labels, NAME_FILES)
    return (names_file, read_names(names_file)) if names_file is not None else None


def find_dataset_yaml(labels: str) -> str | None:
    """The dataset YAML (data.yaml, dataset.yaml, coco8.yaml...) beside YOLO labels or up
    to UP folders above, where its train: / val: / test: say the splits; None if none,
    whatever file names the classes (a classes.txt beside the labels too)."""
    return _looked_up(labels, tuple(n for n in NAME_FILES if n.endswith((".yaml", ".yml"))))


def _looked_up(labels: str, names: tuple[str, ...]) -> str | None:
    """The first of `names`, else the one other YAML file with a `names:` key, in the
    labels' folder or up to UP above."""
    where = os.path.abspath(labels)
    for _ in range(UP + 1):
        for name in names:
            path = os.path.join(where, name)
            if os.path.isfile(path):
                return path
        yamls = _yaml_names_files(where)
        if len(yamls) > 1:
            raise OptionError(
                f"{where}: {' and '.join(os.path.basename(p) for p in yamls[:3])} both name classes: "
                "choose one with --classes"
            )
        if yamls:
            return yamls[0]
        parent = os.path.dirname(where)
        if parent == where:
            break
        where = parent
    return None


def _yaml_names_files(folder: str) -> list[str]:
    """The YAML files of a folder (other than NAME_FILES) that have a `names:` key (one
    that is not YAML, or no mapping, is some other file: passed over)."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    files = []
    for entry in entries:
        path = os.path.join(folder, entry)
        if entry in NAME_FILES or not entry.lower().endswith((".yaml", ".yml")) or not os.path.isfile(path):
            continue
        try:
            if "names" in yolo_yaml.load(path):
                files.append(path)
        except SourceError:
            continue
    return files
