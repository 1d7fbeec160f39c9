"""The splits a detection dataset already has, where its own layout says them:

    COCO   a folder of instances files named by split (instances_train2017.json,
           instances_val2017.json): one annotations file a split, its pictures in IMAGE_DIR
           or in IMAGE_DIR's folder of the same name (train2017/)
    VOC    ImageSets/Main/{train,val,test}.txt beside Annotations/: the image ids of each
    YOLO   the train: / val: / test: keys of the dataset's YAML (data.yaml, coco8.yaml):
           folders of pictures or list files, under its path: (or its own folder)

Split names are TFDS's (`val` is validation). Nothing here reads a box.
"""

from __future__ import annotations

import dataclasses
import os
import re

from ....dataset.splits import SPLIT_FOLDERS
from ....errors import OptionError, SourceError
from . import yolo_yaml
from .common import Annotations

MAX_LIST_BYTES = 64 << 20
# a split's word inside a file name: instances_train2017, val-annotations, coco.test
_SPLIT_WORD = re.compile(r"(?:^|[_\-.])([A-Za-z]+)(\d*)(?=$|[_\-.])")


def split_word(stem: str) -> tuple[str, str] | None:
    """(TFDS split, the word as written, digits included) named in a file's stem, or None."""
    for m in _SPLIT_WORD.finditer(stem):
        split = SPLIT_FOLDERS.get(m[1].lower())
        if split is not None:
            return split, m[1] + m[2]
    return None


def split_files(folder: str, suffix: str) -> list[tuple[str, str, str]]:
    """(split, annotations file, the split's word in its name) of a folder of COCO .json
    or box .csv files: for COCO the instances_* files where there are any (captions and
    keypoints files sit beside them), else every file of the suffix; each must name its
    split, one file a split."""
    files = sorted(f for f in os.listdir(folder) if f.lower().endswith(suffix) and not f.startswith("."))
    instances = [f for f in files if f.lower().startswith("instances")] if suffix == ".json" else []
    by_split: dict[str, list[tuple[str, str]]] = {}
    for name in instances or files:
        word = split_word(os.path.splitext(name)[0])
        if word is None:
            raise SourceError(
                f"{os.path.join(folder, name)}: names no split (train, val, test): "
                "give each split's file with --annotations SPLIT=FILE"
            )
        by_split.setdefault(word[0], []).append((name, word[1]))
    if not by_split:
        raise SourceError(f"{folder}: no .json, .xml (VOC) or .txt (YOLO) files in it")
    result = []
    for split, named in sorted(by_split.items()):
        if len(named) > 1:
            raise OptionError(
                f"{folder}: {' and '.join(n for n, _ in named)} both name the {split} split: "
                f"choose one with --annotations {split}=FILE"
            )
        result.append((split, os.path.join(folder, named[0][0]), named[0][1]))
    return result


def voc_image_sets(annotations: str) -> tuple[str, dict[str, str]] | None:
    """(the folder, {image id: split}) of ImageSets/Main/{train,val,test}.txt beside a
    VOC annotations folder, or None where it holds none of them (trainval.txt is their
    union, and the per-class files repeat them)."""
    main = os.path.join(os.path.dirname(os.path.abspath(annotations)), "ImageSets", "Main")
    image_sets: dict[str, str] = {}
    for name, split in (("train.txt", "train"), ("val.txt", "validation"), ("test.txt", "test")):
        path = os.path.join(main, name)
        if not os.path.isfile(path):
            continue
        for number, line in enumerate(_lines(path), 1):
            image = line.split()[0] if line.split() else ""
            if not image:
                continue
            if image_sets.get(image, split) != split:
                raise SourceError(f"{path}: line {number}: image {image!r} is in the {image_sets[image]} split too")
            image_sets[image] = split
    return (main, image_sets) if image_sets else None


def yolo_yaml_splits(yaml_path: str, image_dir: str, images: list[str]) -> dict[str, str] | str | None:
    """{image (relative to IMAGE_DIR): split} from a YOLO dataset YAML's train: / val: /
    test: keys; None where it has none; a sentence where one names nothing there. Each
    names folders of pictures or list files (a picture's path a line), relative to the
    YAML's path: where that is a folder, else to the YAML's own folder (a leading ../,
    as Roboflow writes them, tried without, as Ultralytics does)."""
    doc = yolo_yaml.load(yaml_path)
    named = {
        split: yolo_yaml.paths(yaml_path, doc, key)
        for key, split in (("train", "train"), ("val", "validation"), ("test", "test"))
    }
    named = {split: values for split, values in named.items() if values}
    if not named:
        return None
    here = os.path.dirname(os.path.abspath(yaml_path))
    roots = [os.path.join(here, p) for p in yolo_yaml.paths(yaml_path, doc, "path")] + [here]
    root = next((r for r in roots if os.path.isdir(r)), here)
    folders: list[tuple[str, str]] = []  # (real folder, split)
    listed: dict[str, str] = {}  # real path of a picture -> split
    for split, values in named.items():
        for value in values:
            target = os.path.join(root, value)
            while not os.path.exists(target) and value.startswith("../"):
                value = value[3:]
                target = os.path.join(root, value)
            if os.path.isdir(target):
                folders.append((os.path.realpath(target), split))
            elif os.path.isfile(target):
                for line in _lines(target):
                    if line.strip():
                        listed[os.path.realpath(os.path.join(os.path.dirname(target), line.strip()))] = split
            else:
                return f"{yaml_path}: {value!r} ({split}) is no folder or list file under {root}"
    splits = {}
    for rel in images:
        real = os.path.realpath(os.path.join(image_dir, rel))
        split = listed.get(real) or next((s for d, s in folders if real.startswith(d + os.sep)), None)
        if split is not None:
            splits[rel] = split
    return splits


def _lines(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read(MAX_LIST_BYTES).splitlines()


def in_split_folder(read: Annotations, images: list[str], path: str, split: str) -> Annotations:
    """A split's annotations whose picture names lie under IMAGE_DIR's folder of that split
    (COCO's instances_train2017.json names 000000000009.jpg, kept in train2017/): the
    names, led by that folder, where none is in IMAGE_DIR as it stands."""
    names = [image.filename for image in read.images]
    on_disk = set(images)
    if not names or any(name in on_disk for name in names):
        return read
    word = split_word(os.path.splitext(os.path.basename(path))[0])
    wanted = {w.lower() for w in [*([word[1]] if word else []), *(k for k, v in SPLIT_FOLDERS.items() if v == split)]}
    folders = sorted({rel.split("/", 1)[0] for rel in images if "/" in rel and rel.split("/", 1)[0].lower() in wanted})
    for folder in folders:
        if any(f"{folder}/{name}" in on_disk for name in names):
            read.images = [dataclasses.replace(image, filename=f"{folder}/{image.filename}") for image in read.images]
            break
    return read


def merged(parts: list[tuple[str, Annotations]]) -> Annotations:
    """The annotations of every split as one: the class names the union in each file's
    order (by id where the files give ids, which must agree), one numbering for all."""
    classes: list[str] = []
    ids: dict[str, int] = {}
    named_by: dict[str, str] = {}
    together = Annotations([], [])
    for split, read in parts:
        for image in read.images:
            if image.filename in named_by:
                raise SourceError(f"{image.where}: {image.filename} is in the {named_by[image.filename]} split too")
            named_by[image.filename] = split
        together.images += read.images
        together.files += read.files
        together.problems += read.problems
        together.keypoint_names = together.keypoint_names or read.keypoint_names
        together.skeleton = together.skeleton or read.skeleton
        for i, name in enumerate(read.classes or []):
            if name not in classes:
                classes.append(name)
            if read.class_ids is not None:
                if ids.get(name, read.class_ids[i]) != read.class_ids[i]:
                    raise SourceError(
                        f"{read.files[0]}: category {name!r} has id {read.class_ids[i]}, another split's {ids[name]}"
                    )
                ids[name] = read.class_ids[i]
    if classes:
        together.classes = sorted(classes, key=lambda n: ids[n]) if len(ids) == len(classes) else classes
        together.class_ids = [ids[n] for n in together.classes] if len(ids) == len(classes) else None
    return together
