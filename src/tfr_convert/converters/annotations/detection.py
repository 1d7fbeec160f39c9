"""Images with bounding boxes -> examples in the TF Object Detection API's layout.

The annotations (CSV, Pascal VOC, COCO or YOLO: `box_formats/`) are read and
checked up front, into one item per image holding all its boxes, so a split never
separates boxes of one image. Every image file under IMAGE_DIR is an example: one
no annotation names is a negative (no boxes). `features_of` reads the image, checks the
annotation against its size as displayed (EXIF orientation applied: annotations
describe what the labelling tool showed) and writes the boxes normalized to
[0, 1], which keeps them right when the image is resized.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
import os
import posixpath
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...dataset.features import FeatureSpec
from ...dataset.naming import KEYPOINTS
from ...dataset.splits import SplitSpec, split_by_ratio
from ...errors import OptionError, SourceError
from ...pictures.imaging import DEFAULT_CHROMA, DecodePolicy, probe, reencode
from ...storage import fs
from ..base import Converter, Options, SourceContext, fingerprint
from ..listing.folders import IMAGE_SUFFIXES, FileItems, dataset_name, list_files, named
from ..listing.grouping import plan_groups
from . import box_formats
from .box_formats import Annotations, Box, ImageBoxes
from .box_formats.class_names import find_dataset_yaml, read_names
from .box_formats.splits import in_split_folder, merged, split_files, voc_image_sets, yolo_yaml_splits
from .instances import instance_masks, instance_png, keypoint_features, keypoints
from .label_map import class_labels, label_map_pbtxt, label_names

IMAGE_FORMATS = ("keep", "jpeg", "png")
MASK_FORMATS = ("coco", "voc")
# What the API's decoder reads by `image/format`; anything else is re-encoded in keep mode.
STORED_AS_IS = ("jpeg", "png")
CLIP_TOLERANCE = 1.0  # pixels a box may lie outside its image and be clipped, not refused
# Up to this far out a box is on the edge, not past it: YOLO's fractions, written with six
# decimals, land a few millionths of a pixel either side. Clipped without a word.
ROUNDING = 1e-3  # pixels
LABEL = "image/object/class/label"
_NAMED = 5


def _named(wheres: list[str]) -> str:
    return ", ".join(wheres[:_NAMED]) + (", ..." if len(wheres) > _NAMED else "")


# a Box as the tuple of its fields (dataclasses.astuple deep-copies, ten times slower)
_BOX_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(Box)))


def _item(entry: ImageBoxes, mask_file: str | None = None) -> tuple:
    """An image's annotation as an item: plain tuples (engines ship items as JSON), with
    the file of its instance masks (VOC's SegmentationObject PNG), if any."""
    boxes = tuple(map(_BOX_FIELDS, entry.boxes))
    return (entry.filename, entry.where, entry.width, entry.height, entry.source_id, mask_file, boxes)


def _annotation(item: tuple) -> tuple[ImageBoxes, str | None]:
    filename, where, width, height, source_id, mask_file, boxes = item
    return ImageBoxes(filename, tuple(Box(*box) for box in boxes), where, width, height, source_id), mask_file


VOC_ORIGINS = (0, 1)
COCO_IDS = ("keep", "contiguous")


@dataclass(frozen=True)
class DetectionOptions(Options):
    """What `tfr-convert detection` takes besides the options every converter shares;
    `problem()` is the one home of their rules (a usage error on the command line, an
    OptionError from the converter)."""

    annotations: str
    annotation_format: str = "auto"
    classes_file: str | None = None
    split: SplitSpec | None = None
    stratify: bool = False
    image_format: str = "keep"
    quality: int = 95
    chroma: str = DEFAULT_CHROMA  # a re-encoded JPEG's chroma subsampling
    policy: DecodePolicy = field(default_factory=DecodePolicy)
    skip_empty: bool = False
    dedupe: str | None = None
    voc_origin: int = 0  # as the Object Detection API's converter reads VOC files
    coco_ids: str = "keep"
    masks: bool = False  # instance masks: COCO segmentations, VOC SegmentationObject PNGs
    voc_masks: str | None = None  # VOC's SegmentationObject folder; None: beside the annotations folder
    # (split, annotations) of each split, where the dataset's splits come in files of their own
    split_annotations: tuple[tuple[str, str], ...] = ()

    def problem(self) -> str | None:
        """What makes these options impossible together, in the command line's words, or None."""
        if self.voc_origin not in VOC_ORIGINS:
            return f"--voc-origin {self.voc_origin}: choose 0 or 1"
        if self.coco_ids not in COCO_IDS:
            return f"--coco-ids {self.coco_ids}: choose {', '.join(COCO_IDS)}"
        if self.image_format not in IMAGE_FORMATS:
            return f"--image-format {self.image_format}: choose {', '.join(IMAGE_FORMATS)}"
        if self.image_format == "keep" and (self.policy.resize or self.policy.grayscale):
            return "--resize and --grayscale re-encode: use --image-format jpeg or png"
        return None


class DetectionConverter(FileItems, Converter):
    command = "detection"
    description = "Images with bounding boxes, in the TensorFlow Object Detection API's layout."
    # what the recorded options say of this run's inputs (an --append's batch may differ)
    input_options = frozenset({"splits_from", "dedupe_found"})
    chunk_size = 16  # images are large: keep what is in flight between processes small
    nested_features = True

    def __init__(self, image_dir: str, options: DetectionOptions, context: SourceContext | None = None) -> None:
        options = self.begin(options, context)
        context = self.context
        self.root = image_dir
        # a local image's real path must stay under this (object stores have no links)
        self._real_root = None if fs.is_remote(image_dir) else os.path.realpath(image_dir)
        self.image_format, self.quality, self.chroma = options.image_format, options.quality, options.chroma
        self.policy = options.policy or DecodePolicy()
        self.dataset_name = dataset_name(image_dir)
        self._flag: tuple[Any, ...] = ()
        fmt = self.annotation_format = self._format_of(options)
        self.masks = options.masks
        self._voc_masks = self._voc_masks_of(options, fmt)
        self._annotations = options.annotations
        self._settings = {
            "annotation_format": fmt,
            "image_format": options.image_format,
            "skip_empty": options.skip_empty,
            "split": options.split.describe() if options.split else None,
            "stratify": options.stratify,
            "dedupe": options.dedupe,
            **({"voc_origin": options.voc_origin} if fmt == "voc" else {}),
            **({"coco_ids": options.coco_ids} if fmt == "coco" else {}),
            **({"masks": True} if options.masks else {}),
        }
        self._dedupe = options.dedupe
        classes = read_names(options.classes_file) if options.classes_file else None
        images = [f.replace(os.sep, "/") for f in list_files(image_dir, exclude=context.out)]
        images = [f for f in images if f.lower().endswith(IMAGE_SUFFIXES)]
        annotations_read, split_of, split_source = self._read(options, fmt, images, classes)
        self._take_annotations(annotations_read, classes, options)
        items = self._items(
            annotations_read.images,
            images,
            options.classes_file or (annotations_read.files[0] if annotations_read.classes else None),
        )
        if split_of:
            items, split_of = self._in_their_splits(items, split_of, split_source, options.split)
        if options.skip_empty:
            items = [item for item in items if item[-1]]
        if not items:
            raise SourceError(f"{image_dir}: no images to convert")
        self._splits = self._split(items, options.split, options.stratify, context.seed, split_of)
        negatives = sum(not item[-1] for split_items in self._splits.values() for item in split_items)
        if negatives and not options.skip_empty:
            self.warnings.insert(
                0,
                f"{image_dir}: {negatives} image{'s' if negatives != 1 else ''} without boxes, "
                "kept as negatives (--skip-empty drops them)",
            )
        self.labels = {LABEL: label_names(self._label)}
        self.features = self._declare_features()

    @staticmethod
    def _format_of(options: DetectionOptions) -> str:
        """The annotations' format: as given, or detected (one for every split's file)."""
        if options.annotation_format != "auto":
            return options.annotation_format
        fmt = box_formats.detect(options.annotations)
        if options.split_annotations:
            formats = {box_formats.detect(path) for _, path in options.split_annotations}
            if len(formats) > 1:
                raise OptionError(
                    f"--annotations: the splits' files are of several formats ({', '.join(sorted(formats))})"
                )
        return fmt

    @staticmethod
    def _voc_masks_of(options: DetectionOptions, fmt: str) -> str | None:
        """--masks: refused for formats without segmentations; VOC's folder of instance masks."""
        if options.masks and fmt not in MASK_FORMATS:
            raise OptionError(
                f"--masks draws COCO segmentations or VOC SegmentationObject PNGs; {fmt} annotations hold none"
            )
        if not (options.masks and fmt == "voc"):
            return None
        folder = options.voc_masks or fs.join(fs.dirname(options.annotations.rstrip("/")), "SegmentationObject")
        if not fs.isdir(folder):
            raise SourceError(
                f"{folder}: no such folder: --masks reads VOC's instance masks from the "
                "SegmentationObject folder beside the annotations folder"
            )
        return folder

    def _take_annotations(self, read: Any, classes: list[str] | None, options: DetectionOptions) -> None:
        """What the annotations hold besides boxes: their files, keypoint names, the
        problems found (rejected), the classes and their ids."""
        self._annotation_files = read.files
        self.keypoint_names, self.skeleton = read.keypoint_names or [], read.skeleton or []
        if self.keypoint_names:
            self._settings["keypoints"] = {"names": self.keypoint_names, "skeleton": self.skeleton}
        for where, why in read.problems:
            self.reject(where, why)
        self.classes = classes or read.classes or sorted({b.name for i in read.images for b in i.boxes})
        kept_ids = read.class_ids if classes is None and options.coco_ids == "keep" else None
        self._label = class_labels(self.classes, kept_ids, options.annotations)

    def _in_their_splits(
        self, items: list[tuple], split_of: dict[str, str], split_source: str, split: Any
    ) -> tuple[list[tuple], dict[str, str]]:
        """The items the annotations' own splits name (the others left out, said), and those
        splits, or none where --split re-splits them."""
        self._settings["splits_from"] = split_source
        left = [item[0] for item in items if item[0] not in split_of]
        items = [item for item in items if item[0] in split_of]
        if left:
            self.warnings.append(
                f"{self.root}: {named(left, 'image')} in none of the splits of {split_source}, left out"
            )
        if split is not None:
            self.warnings.append(f"{self.root}: --split re-splits the images of the splits of {split_source}")
            split_of = {}
        return items, split_of

    # ------------------------------------------------------------ listing

    def _items(self, annotated: list[ImageBoxes], images: list[str], class_source: str | None) -> list[tuple]:
        on_disk = set(images)
        by_name: dict[str, ImageBoxes] = {}
        voc_masks = {f.replace(os.sep, "/") for f in list_files(self._voc_masks)} if self._voc_masks else set()
        mask_files: dict[str, str] = {}
        for entry in annotated:
            name = entry.filename
            if posixpath.isabs(name) or name == ".." or name.startswith("../"):
                self.reject(entry.where, f"image path {name!r} is not inside IMAGE_DIR")
                continue
            if name not in on_disk:
                self.reject(entry.where, f"image {name!r} not found in {self.root}")
                continue
            problems = list(entry.problems)
            for box in entry.boxes:
                if box.name not in self._label:
                    problems.append((box.where, f"class {box.name!r} is not in {class_source}"))
            if self._voc_masks and entry.boxes:
                mask_files[name] = posixpath.splitext(name)[0] + ".png"  # a/b.jpg's is a/b.png
                if mask_files[name] not in voc_masks:
                    problems.append(
                        (
                            entry.where,
                            f"no instance mask {fs.join(self._voc_masks, mask_files[name])} (VOC segments some "
                            "images only: --on-error skip leaves the others out)",
                        )
                    )
            if problems:
                if self.context.on_error != "skip":
                    raise SourceError(f"{problems[0][0]}: {problems[0][1]}")
                for where, why in problems:
                    self.skipped.add(where, why)
                on_disk.discard(name)  # dropped, not kept as a negative
                continue
            by_name[name] = entry
        return [
            _item(by_name.get(name) or ImageBoxes(name, (), ""), mask_files.get(name))
            for name in images
            if name in on_disk
        ]

    def _read(
        self, options: DetectionOptions, fmt: str, images: list[str], classes: list[str] | None
    ) -> tuple[Annotations, dict[str, str], str]:
        """The annotations, and {image: split} with where it came from, where the dataset
        has splits of its own (files a split, VOC's ImageSets, a YOLO YAML's keys)."""

        def read(path: str) -> Annotations:
            return box_formats.read(path, fmt, images, classes, options.voc_origin, masks=options.masks)

        per_split = list(options.split_annotations)
        if not per_split and fmt in ("coco", "csv") and os.path.isdir(options.annotations):
            suffix = ".json" if fmt == "coco" else ".csv"
            per_split = [(split, path) for split, path, _ in split_files(options.annotations, suffix)]
        if per_split:
            parts = [(split, in_split_folder(read(path), images, path, split)) for split, path in per_split]
            read_boxes = merged(parts)
            split_of = {image.filename: split for split, part in parts for image in part.images}
            return read_boxes, split_of, ", ".join(f"{split}={path}" for split, path in per_split)
        read_boxes = read(options.annotations)
        if fmt == "voc":
            sets = voc_image_sets(options.annotations)
            if sets is not None:
                ids = sets[1]
                stems = {rel: posixpath.splitext(posixpath.basename(rel))[0] for rel in images}
                return read_boxes, {rel: ids[stem] for rel, stem in stems.items() if stem in ids}, sets[0]
        if fmt == "yolo":
            dataset_yaml = find_dataset_yaml(options.annotations)  # its splits, wherever the names came from
            if dataset_yaml is not None:
                split_of = yolo_yaml_splits(dataset_yaml, self.root, images)
                if isinstance(split_of, str):
                    self.warnings.append(f"{split_of}: its splits are not used")
                elif split_of is not None:
                    return read_boxes, split_of, dataset_yaml
        return read_boxes, {}, ""

    def _split(
        self, items: list[tuple], spec: SplitSpec | None, stratify: bool, seed: int, split_of: dict[str, str]
    ) -> dict[str, list[tuple]]:
        groups = None
        if self._dedupe:
            kept, groups, by_split, message = plan_groups(
                [item[0] for item in items],
                lambda i: fs.read_bytes(fs.join(self.root, items[i][0]), inside=self._real_root),
                self._dedupe,
                None,
                self.root,
            )
            items = [items[i] for i in kept]
            self._settings["dedupe_found"] = by_split
            if message:
                self.warnings.append(message)
        if spec is None and split_of:
            by_split: dict[str, list[tuple]] = {}
            for item in items:
                by_split.setdefault(split_of[item[0]], []).append(item)
            return by_split
        if spec is None:
            return {"train": items}
        whole = groups if groups is not None and self._dedupe != "drop" else None
        splits, said = split_by_ratio(
            items, self.key, spec, seed, self._main_class if stratify else None, whole, self.context.per_item_splits
        )
        self.warnings += [said] if said else []
        return splits

    def _main_class(self, item: tuple) -> str:
        """The image's most frequent class (ties: first in label order), "" for none."""
        counts = Counter(box.name for box in _annotation(item)[0].boxes)
        return min(counts, key=lambda n: (-counts[n], self._label[n])) if counts else ""

    def label_of(self, item: Hashable) -> Hashable | None:
        return self._main_class(item)  # type: ignore[arg-type]

    def _declare_features(self) -> dict[str, FeatureSpec]:
        channels = self.policy.channels or 3
        encoding = self.image_format if self.image_format != "keep" else None
        per_object_float = FeatureSpec.tensor("float32").of_objects()
        per_object_int = FeatureSpec.tensor("int64").of_objects()
        return {
            "image/encoded": FeatureSpec.image((None, None, channels), encoding),
            "image/format": FeatureSpec.text(),
            "image/filename": FeatureSpec.text(),
            "image/source_id": FeatureSpec.text(),
            "image/key/sha256": FeatureSpec.text(),
            "image/height": FeatureSpec.tensor("int64"),
            "image/width": FeatureSpec.tensor("int64"),
            "image/object/bbox/xmin": per_object_float,
            "image/object/bbox/ymin": per_object_float,
            "image/object/bbox/xmax": per_object_float,
            "image/object/bbox/ymax": per_object_float,
            "image/object/class/text": FeatureSpec.text().of_objects(),
            LABEL: FeatureSpec.class_label(len(self.labels[LABEL])).of_objects(),
            "image/object/difficult": per_object_int,
            "image/object/truncated": per_object_int,
            "image/object/is_crowd": per_object_int,
            "image/object/area": per_object_float,
            **({"image/object/mask": FeatureSpec.image((None, None, 1), "png").of_objects()} if self.masks else {}),
            **(keypoint_features(len(self.keypoint_names)) if self.keypoint_names else {}),
        }

    # ------------------------------------------------------------ converter interface

    def features_of(self, item: Hashable) -> dict[str, Any]:
        annotation, mask_file = _annotation(item)  # type: ignore[arg-type]
        rel = annotation.filename
        try:
            data = fs.read_bytes(fs.join(self.root, rel), inside=self._real_root)
        except OSError as e:
            raise SourceError(f"cannot read: {e.strerror or e}") from None
        info = probe(data, self.policy.max_pixels, self.policy.structural)
        stored_w, stored_h = info.source_size
        width, height = (stored_h, stored_w) if info.orientation in (5, 6, 7, 8) else (stored_w, stored_h)
        if annotation.width is not None and (annotation.width, annotation.height) != (width, height):
            turned = (annotation.width, annotation.height) == (stored_w, stored_h)
            raise SourceError(
                f"{annotation.where}: declares {annotation.width}x{annotation.height}, but the image is "
                f"{width}x{height} as displayed"
                + (" (its EXIF orientation turns it; annotations describe the image as shown)" if turned else "")
            )
        why = None
        if self.image_format == "keep" and info.source_format in STORED_AS_IS and info.orientation == 1:
            image, fmt, out_h, out_w = data, info.source_format, height, width
        else:
            if self.image_format == "keep":
                why = "EXIF orientation" if info.orientation != 1 else info.source_format
            fmt = (
                self.image_format if self.image_format != "keep" else "jpeg" if info.source_format == "jpeg" else "png"
            )
            image, (out_h, out_w, _) = reencode(
                data, rel, self.policy, fmt, self.quality, self.chroma
            )  # upright, resized
        objects, clipped = self._objects(annotation.boxes, width, height)
        if self.masks:
            voc_png = fs.join(self._voc_masks, mask_file) if mask_file else None  # type: ignore[arg-type]
            masks = instance_masks(annotation.boxes, voc_png, width, height, self.policy.max_pixels)
            objects["image/object/mask"] = np.array([instance_png(m, out_w, out_h) for m in masks], dtype=object)
        if self.keypoint_names:
            objects.update(keypoints(annotation.boxes, self.keypoint_names, width, height))
        self._flag = (fmt, why and rel, tuple(clipped))
        return {
            "image/encoded": image,
            "image/format": fmt,
            "image/filename": rel,
            "image/source_id": annotation.source_id or rel,
            "image/key/sha256": hashlib.sha256(image).hexdigest(),
            "image/height": out_h,
            "image/width": out_w,
            **objects,
        }

    def _objects(self, boxes: tuple[Box, ...], width: int, height: int) -> tuple[dict[str, np.ndarray], list[str]]:
        """The per-object features, boxes normalized by the displayed size; boxes up to
        CLIP_TOLERANCE pixels outside are clipped (their annotations listed)."""
        corners, clipped = [], []
        for box in boxes:
            scale = (width, height) if box.normalized else (1, 1)
            x0, y0, x1, y1 = box.xmin * scale[0], box.ymin * scale[1], box.xmax * scale[0], box.ymax * scale[1]
            outside = max(-x0, -y0, x1 - width, y1 - height)
            if outside > CLIP_TOLERANCE:
                raise SourceError(
                    f"{box.where}: box ({x0:g}, {y0:g}, {x1:g}, {y1:g}) lies {outside:g} px outside the "
                    f"{width}x{height} image (up to {CLIP_TOLERANCE:g} px is clipped)"
                )
            if outside > 0:
                if outside > ROUNDING:
                    clipped.append(box.where)
                x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
                if x1 <= x0 or y1 <= y0:
                    raise SourceError(f"{box.where}: box lies along the image's edge, with no area inside it")
            area = box.area if box.area is not None else (x1 - x0) * (y1 - y0)
            corners.append((x0 / width, y0 / height, x1 / width, y1 / height, area))
        table = np.array(corners, np.float64).reshape(-1, 5)
        return {
            "image/object/bbox/xmin": table[:, 0].astype(np.float32),
            "image/object/bbox/ymin": table[:, 1].astype(np.float32),
            "image/object/bbox/xmax": table[:, 2].astype(np.float32),
            "image/object/bbox/ymax": table[:, 3].astype(np.float32),
            "image/object/class/text": np.array([b.name for b in boxes], dtype=object),
            LABEL: np.array([self._label[b.name] for b in boxes], np.int64),
            "image/object/difficult": np.array([b.difficult for b in boxes], np.int64),
            "image/object/truncated": np.array([b.truncated for b in boxes], np.int64),
            "image/object/is_crowd": np.array([b.is_crowd for b in boxes], np.int64),
            "image/object/area": table[:, 4].astype(np.float32),
        }, clipped

    def input_roots(self) -> list[str]:
        return [self.root]

    def observe(self, features: dict[str, Any]) -> Hashable:
        return self._flag

    def finish(self, observations: Counter[Hashable]) -> list[str]:
        formats = {fmt for fmt, _, _ in observations}  # type: ignore[misc]
        if self.image_format == "keep" and len(formats) == 1:
            spec = self.features["image/encoded"]
            self.features["image/encoded"] = FeatureSpec.image(spec.shape, formats.pop())
        warnings = []
        reencoded = sorted(rel for _, rel, _ in observations if rel)  # type: ignore[misc]
        if reencoded:
            warnings.append(
                f"{self.root}: re-encoded {len(reencoded)} image{'s' if len(reencoded) != 1 else ''} "
                f"({_named(reencoded)}) upright as JPEG or PNG, which the API decodes"
            )
        clipped = sorted(w for _, _, wheres in observations for w in wheres)  # type: ignore[misc]
        if clipped:
            warnings.append(
                f"clipped {len(clipped)} box{'es' if len(clipped) != 1 else ''} lying up to "
                f"{CLIP_TOLERANCE:g} px outside the image ({_named(clipped)})"
            )
        return warnings

    def extra_files(self) -> dict[str, bytes]:
        labels = self._label
        if self.labels[LABEL] != label_names(labels):  # an --append numbered more classes, after the dataset's
            labels = {name: i for i, name in enumerate(self.labels[LABEL]) if i and name != f"(unused {i})"}
        files = {"label_map.pbtxt": label_map_pbtxt(labels)}
        if self.keypoint_names:
            files[KEYPOINTS] = (
                json.dumps({"names": self.keypoint_names, "skeleton": self.skeleton}, indent=1) + "\n"
            ).encode()
        return files

    def sources(self) -> list[dict[str, Any]]:
        sources = []
        for path in self._annotation_files:
            with open(path, "rb") as f:
                sources.append(fingerprint(path, f.read()))
        return sources

    def recorded_options(self) -> dict[str, Any]:
        return {
            **self._settings,
            "decode": {
                "max_pixels": self.policy.max_pixels,
                "quality": self.quality,
                "chroma": self.chroma,
                "resize": list(self.policy.resize) if self.policy.resize else None,
                "grayscale": self.policy.grayscale,
            },
        }
