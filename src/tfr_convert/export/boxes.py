"""--to coco|yolo|voc|csv: a detection dataset back to pictures and annotations that
`tfr-convert detection` reads.

The boxes are found (`box_keys`) under the Object Detection API's keys (one list per
corner: `image/object/bbox/xmin`...; any prefix with --box-features) or in one list of
four values a box as TFDS's BBoxFeature stores them (`objects/bbox`: ymin, xmin, ymax,
xmax), with their sibling `label` (a TFDS ClassLabel counts from 0: written from 1, its
names as the class text) and flags (`is_difficult`, `is_crowd`, `area`...).

Everything goes to one folder, whatever the split (`OUT/images/NAME` and the
annotations; `OUT/splits.csv` says which split held each picture), so that converting it
again with the same `--split` and seed puts every picture where it was. Pixel values are
written as the shortest decimals from which the converter's own arithmetic (per format,
below) gives the stored float32 corners and area again, so whole-pixel annotations come
back as whole numbers and the shards come back byte for byte.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

import numpy as np

from ..dataset import coco_rle
from ..dataset.imageformat import sniff_format
from ..dataset.naming import checked_relative, lines_file
from ..errors import OptionError, SourceError
from ..inspect.kinds.roles import image_feature
from .box_numbers import coco_box, f32, keypoint_pixels, number, pixel_corners, yolo_box
from .engine import Chunk, ExportOptions, Failed, Job, run
from .images import EXTENSIONS
from .source import ExportSource, parsed
from .staging import Drop, Spool, Staging, staged

IMAGES = "images"
YOLO_CLASSES = "labels/classes.txt"
# The splits an export keeps in files of their own, each with its word in them (a key of
# YOLO's data.yaml, a list of VOC's ImageSets/Main): the ones the converter reads back
SPLIT_WORDS = {"train": "train", "validation": "val", "test": "test"}
COCO_SPLITS = "annotations"  # the folder of a COCO or CSV export's per-split files
YOLO_DATASET = "data.yaml"  # a YOLO export's dataset file (names, splits), as Ultralytics reads one
VOC_IMAGE_SETS = "ImageSets/Main"  # the devkit's split lists, beside Annotations/
VOC_LABELMAP = "labelmap.txt"  # Datumaro's and CVAT's list of a VOC dataset's classes
# what XML 1.0 cannot hold, escaped or not
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
PREFIX = "image/object/"
CORNERS = ("xmin", "ymin", "xmax", "ymax")
FLAGS = {  # what the annotation formats keep, and the names datasets give it
    "difficult": ("difficult", "is_difficult"),
    "truncated": ("truncated", "is_truncated"),
    "is_crowd": ("is_crowd", "iscrowd"),
    "area": ("area",),
}


@dataclass(frozen=True)
class BoxKeys:
    """Where a record keeps its picture and boxes."""

    image: str
    corners: tuple[str, ...] | None  # one list per corner: xmin, ymin, xmax, ymax
    packed: str | None  # one list, four values a box: ymin, xmin, ymax, xmax
    label: str | None
    text: str | None
    names: tuple[str, ...]  # the label's class names, when it counts from 0 (TFDS's ClassLabel)
    known: tuple[tuple[int, str], ...]  # (label as boxes carry it, name) of every class the dataset names
    flags: tuple[tuple[str, str], ...]  # (difficult | truncated | is_crowd | area, its feature)
    filename: str | None
    source_id: str | None
    size: tuple[str, str] | None  # (width, height) features; None: read from the picture
    mask: str | None = None  # one 0/1 PNG per box (`image/object/mask`), for COCO's segmentation
    keypoints: tuple[str, str, str, str] | None = None  # x, y, visibility, text: the same number per box


def box_keys(
    source: ExportSource, box_feature: str | None, image: str | None = None, label: str | None = None
) -> BoxKeys:
    """The keys of the records' boxes: --box-features (a prefix of `bbox/xmin`... or one
    float feature of four values a box), else the Object Detection API's, else a TFDS
    BBoxFeature (by the metadata, or a float feature named `bbox`)."""
    schema = source.schema()

    def present(*names: str, dtype: str | None = None) -> str | None:
        return next((n for n in names if n in schema and dtype in (None, schema[n].dtype)), None)

    if box_feature is not None:
        prefix = box_feature.rstrip("/") + "/" if box_feature.strip("/") else ""
        if present(prefix + "bbox/xmin", dtype="float32"):
            return _listed(source, schema, prefix, image, label, present)
        if present(box_feature, dtype="float32"):
            return _packed(source, box_feature, image, label, present)
        raise OptionError(
            f"--box-features {box_feature}: no float feature {box_feature!r} (four values a box) and no "
            f"{prefix}bbox/xmin (a list per corner) in the records"
        )
    if present(PREFIX + "bbox/xmin", dtype="float32"):
        return _listed(source, schema, PREFIX, image, label, present)
    described = source.dataset.flat_features if source.dataset is not None else {}
    packed = [n for n, (d, _, _) in described.items() if str(d.get("pythonClassName", "")).endswith("BBoxFeature")]
    packed += [n for n in sorted(schema) if n.rsplit("/", 1)[-1] == "bbox" and schema[n].dtype == "float32"]
    if not packed:
        raise SourceError("no boxes in the records: name their feature with --box-features")
    return _packed(source, packed[0], image, label, present)


def _listed(source: ExportSource, schema, prefix: str, image: str | None, label: str | None, present) -> BoxKeys:
    return BoxKeys(
        image=image or "image/encoded",
        corners=tuple(f"{prefix}bbox/{c}" for c in CORNERS),
        packed=None,
        label=label or present(prefix + "class/label", dtype="int64"),
        text=present(prefix + "class/text", dtype="string"),
        names=(),
        known=_named_labels(source, label or present(prefix + "class/label", dtype="int64")),
        flags=tuple((k, n) for k, names in FLAGS.items() if (n := present(*(prefix + a for a in names)))),
        filename=present("image/filename", dtype="string"),
        source_id=present("image/source_id", dtype="string"),
        size=("image/width", "image/height") if present("image/width") and present("image/height") else None,
        mask=present(prefix + "mask", dtype="string"),
        keypoints=tuple(prefix + f"keypoint/{k}" for k in ("x", "y", "visibility", "text"))  # type: ignore[arg-type]
        if present(prefix + "keypoint/x", dtype="float32") and present(prefix + "keypoint/y", dtype="float32")
        else None,
    )


def _named_labels(source: ExportSource, label: str | None) -> tuple[tuple[int, str], ...]:
    """(label, name) of every class an Object Detection API dataset names: its ClassLabel's
    names by label, less the background (0) and the labels no class has ('(unused N)',
    between kept COCO ids); classes with no box are among them."""
    names = source.class_names().get(label, []) if label else []
    return tuple((i, name) for i, name in enumerate(names) if i and name != f"(unused {i})")


def _packed(source: ExportSource, feature: str, image: str | None, label: str | None, present) -> BoxKeys:
    parent = feature.rsplit("/", 1)[0] + "/" if "/" in feature else ""
    label = label or present(parent + "label", dtype="int64")
    if image is None:
        example = source.first_example() or {}
        image = image_feature(example) or "image"
    return BoxKeys(
        image=image,
        corners=None,
        packed=feature,
        label=label,
        text=None,
        names=tuple(source.class_names().get(label, ())) if label else (),
        known=tuple((i + 1, name) for i, name in enumerate(source.class_names().get(label, ()) if label else ())),
        flags=tuple((k, n) for k, names in FLAGS.items() if (n := present(*(parent + a for a in names)))),
        filename=present("image/filename", "filename", dtype="string"),
        source_id=present("image/id", "image/source_id", "id"),
        size=("image/width", "image/height") if present("image/width") and present("image/height") else None,
    )


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
    keypoint_names: list[str] = field(default_factory=list)


def _one(example: dict, name: str) -> Any:
    values = example.get(name, (None, []))[1]
    if len(values) != 1:
        raise SourceError(f"no single {name!r}: not a detection record with these keys (see --box-features)")
    return values[0]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _picture(example: dict, keys: BoxKeys, where: str, default_name: str) -> tuple[Picture, bytes]:
    """A record's picture (its boxes) and the picture file's bytes; `default_name` is
    its file name (without extension) when the record holds none."""
    data = _one(example, keys.image)
    if not isinstance(data, bytes) or sniff_format(data) is None:
        raise SourceError(f"{keys.image!r} holds no encoded picture")
    if keys.filename is not None:
        path = checked_relative(_text(_one(example, keys.filename)))
    else:
        path = f"{default_name}.{EXTENSIONS.get(sniff_format(data) or '', 'bin')}"
    corners = _corners(example, keys)
    n = len(corners)

    def per_box(key: str | None, default: Any) -> list[Any]:
        values = example.get(key, (None, []))[1] if key else []
        return list(values) if len(values) == n else [default] * n

    labels = per_box(keys.label, 0)
    if keys.text is not None:
        texts = [_text(t) for t in per_box(keys.text, b"")]
    elif keys.names:
        texts = [keys.names[i] if 0 <= i < len(keys.names) else str(i) for i in map(int, labels)]
    else:
        texts = [str(int(i)) for i in labels]
    offset = 1 if keys.packed is not None else 0  # a ClassLabel counts from 0, the Object Detection API from 1
    flags = {k: per_box(feature, None) for k, feature in keys.flags}
    boxes = [
        {
            **{c: f32(v) for c, v in zip(CORNERS, corners[i], strict=True)},
            "text": texts[i],
            "label": int(labels[i]) + offset,
            **{k: int(flags.get(k, [0] * n)[i] or 0) for k in ("difficult", "truncated", "is_crowd")},
            "area": None if flags.get("area", [None] * n)[i] is None else f32(flags["area"][i]),
        }
        for i in range(n)
    ]
    source_id = _text(_one(example, keys.source_id)) if keys.source_id else path
    if keys.size is not None:
        width, height = int(_one(example, keys.size[0])), int(_one(example, keys.size[1]))
    else:
        width, height = _size(data)
    picture = Picture(where, path, source_id, width, height, boxes)
    if keys.mask is not None:
        masks = example.get(keys.mask, (None, []))[1]
        if len(masks) != n:
            raise SourceError(f"{len(masks)} masks in {keys.mask!r} for {n} boxes")
        for box, mask in zip(boxes, masks, strict=True):
            box["mask"] = mask
    if keys.keypoints is not None:
        _add_keypoints(picture, example, keys.keypoints)
    return picture, data


def _corners(example: dict, keys: BoxKeys) -> list[tuple]:
    """Each box's (xmin, ymin, xmax, ymax): from four lists, or one of four values a box
    in TFDS's order (ymin, xmin, ymax, xmax)."""
    if keys.corners is not None:
        lists = [example.get(k, (None, []))[1] for k in keys.corners]
        if any(len(v) != len(lists[0]) for v in lists):
            raise SourceError("the box corner lists differ in length")
        return list(zip(*lists, strict=True))
    flat = example.get(keys.packed, (None, []))[1]
    if len(flat) % 4:
        raise SourceError(f"{keys.packed!r} holds {len(flat)} values, not four a box")
    return [(flat[i + 1], flat[i], flat[i + 3], flat[i + 2]) for i in range(0, len(flat), 4)]


def _add_keypoints(picture: Picture, example: dict, features: tuple[str, ...]) -> None:
    """Each box's share of the keypoint lists (x, y, visibility; their names once)."""
    boxes, n = picture.boxes, len(picture.boxes)
    x, y, visibility, text = (example.get(k, (None, []))[1] for k in features)
    if n and (len(x) % n or len(y) != len(x) or len(visibility) not in (0, len(x))):
        raise SourceError(f"{len(x)} keypoints in {features[0]!r} do not divide among {n} boxes")
    count = len(x) // n if n else 0
    picture.keypoint_names = [_text(t) for t in text[:count]] if len(text) == len(x) else []
    for i, box in enumerate(boxes):
        at = slice(i * count, (i + 1) * count)
        box["keypoints"] = list(zip(map(f32, x[at]), map(f32, y[at]), visibility[at] or [2] * count, strict=True))


def _instance(mask: bytes, w: int, h: int) -> np.ndarray:
    """An object's 0/1 mask from its PNG (any value above 0 is the object, as the Object
    Detection API decodes it), which must be the picture's size."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(mask)) as picture:
            if picture.size != (w, h):  # checked before a pixel is decoded
                raise SourceError(f"an instance mask is {picture.size[0]}x{picture.size[1]}, the picture {w}x{h}")
            pixels = np.asarray(picture.convert("L"))
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as e:
        raise SourceError(f"an instance mask cannot be read ({e})") from None
    return (pixels > 0).astype(np.uint8)


def _size(data: bytes) -> tuple[int, int]:
    """(width, height) from the picture's header."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as picture:
            return picture.size
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as e:
        raise SourceError(f"the picture cannot be read ({e})") from None


class BoxesJob(Job):
    def __init__(
        self,
        target: str,
        keys: BoxKeys,
        staging: Staging,
        splits: list[str],
        voc_origin: int,
        skeleton: list[tuple[int, int]] | None = None,
    ) -> None:
        self.target, self.keys, self.voc_origin, self.drop = target, keys, voc_origin, staging.drop
        self.skeleton = skeleton or []
        # COCO: the keypoint names, and the labels of classes with any labelled keypoint
        self.keypoint_names: list[str] = []
        self.keypoint_classes: set[int] = set()
        self.numbers = {split: n for n, split in enumerate(splits)}
        self._staging: Staging | None = staging  # parent side only
        self.pictures: Spool | None = staging.spool("pictures")
        # label -> class name: every class the dataset names (with boxes or without), and
        # those the boxes show
        self.classes: dict[int, str] = dict(keys.known)
        if target == "yolo":
            staging.claim(YOLO_CLASSES, f"the export's own {YOLO_CLASSES}")
        if target == "voc":
            staging.claim(VOC_LABELMAP, f"the export's own {VOC_LABELMAP}")

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_staging": None, "pictures": None, "classes": {}, "ids": None}

    def work(self, chunk: Chunk) -> tuple[list[Any], Any]:
        results: list[Any] = []
        for i, (where, payload) in enumerate(chunk.records):
            try:
                position = chunk.start + i
                picture, data = _picture(parsed(payload), self.keys, where, f"{chunk.split}/{position:06d}")
                for box in picture.boxes:
                    box["values"] = self.values(box, picture.width, picture.height)
                    if self.target == "coco":
                        self.coco_extras(box, picture.width, picture.height)
                self.check_text(picture)
            except SourceError as e:
                results.append(Failed(where, str(e)))
                continue
            picture.name = Drop.name(self.numbers[chunk.split], position)
            self.drop.put(picture.name, data)
            results.append(picture)
        return results, None

    def check_text(self, picture: Picture) -> None:
        """Names the target's text files cannot hold: a class with a line break in YOLO's
        one-per-line classes.txt; characters XML 1.0 forbids in a VOC annotation."""
        if self.target == "yolo":
            lines_file((box["text"] for box in picture.boxes), "a box's class")
        elif self.target == "voc":
            for text in (picture.filename, *(box["text"] for box in picture.boxes)):
                if _NOT_XML.search(text):
                    raise SourceError(f"{text!r} holds a control character, which an XML file cannot")

    def annotation_file(self, picture: Picture) -> str | None:
        """The record's own annotation file, relative to OUT (YOLO's, VOC's), if any."""
        if self.target == "yolo":
            return f"labels/{posixpath.splitext(picture.filename)[0]}.txt"
        if self.target == "voc" and picture.boxes:  # a negative has none
            return f"Annotations/{posixpath.splitext(picture.filename)[0].replace('/', '_')}.xml"
        return None

    def values(self, box: dict[str, Any], w: int, h: int) -> tuple[float, ...]:
        if self.target == "coco":
            return coco_box(box, w, h)
        if self.target == "yolo":
            return yolo_box(box, w, h)
        return pixel_corners(box, w, h, self.voc_origin if self.target == "voc" else 0)

    @staticmethod
    def coco_extras(box: dict[str, Any], w: int, h: int) -> None:
        """The box's mask as a compressed RLE (exact, unlike a polygon), its keypoints in pixels."""
        mask = box.pop("mask", None)
        if mask is not None:
            box["segmentation"] = coco_rle.encode(_instance(mask, w, h))
        if "keypoints" in box:
            box["keypoints"] = keypoint_pixels(box["keypoints"], w, h)

    def take(self, split: str, where: str, picture: Picture) -> str | None:
        assert self._staging is not None and self.pictures is not None
        earlier = self._staging.place(picture.name, posixpath.join(IMAGES, picture.filename), split)
        if earlier is not None:
            return f"{picture.filename}: named by records of {earlier} and {split} too"
        annotation = self.annotation_file(picture)
        if annotation is not None:
            earlier = self._staging.claim(annotation, f"{where} ({picture.filename})")
            if earlier is not None:
                return f"{picture.filename}: its annotation {annotation} is {earlier}'s too"
        picture.split = split
        self.pictures.append(picture)
        for box in picture.boxes:
            self.classes.setdefault(box["label"], box["text"])
            if self.target == "coco" and any(box.get("keypoints", [])[2::3]):
                self.keypoint_classes.add(box["label"])
        self.keypoint_names = self.keypoint_names or picture.keypoint_names
        return None


def write(
    source: ExportSource, out: str, target: str, keys: BoxKeys, options: ExportOptions, voc_origin: int = 1
) -> dict:
    """Pictures to OUT/images and the annotations in `target`'s format; {split: {records}}."""
    if target == "yolo":
        lines_file((name for _, name in keys.known), "the class names")  # all of them go to classes.txt
    with staged(out, options.dry_run) as staging:
        skeleton = source.dataset.skeleton if source.dataset is not None else []
        job = BoxesJob(target, keys, staging, list(source.splits), voc_origin, skeleton)
        written = run(source, job, options)
        assert job.pictures is not None
        ANNOTATIONS[target](job, staging)
        with staging.csv("splits.csv") as splits:
            splits.row(["filename", "split"])
            for picture in job.pictures:
                splits.row([picture.filename, picture.split])
        staging.commit()
    return written


def _coco(job: BoxesJob, staging: Staging) -> None:
    """annotations.json, streamed. A dataset of several splits, each a split `tfr-convert detection` reads from
    a file's name (train, validation, test), is one file a split, as COCO ships its own:
    annotations/instances_SPLIT.json, each with every category, which
    `tfr-convert detection DIR/images --annotations DIR/annotations` reads back, split by split."""
    assert job.pictures is not None
    splits = list(dict.fromkeys(picture.split for picture in job.pictures))
    if len(splits) > 1 and all(split in SPLIT_WORDS for split in splits):
        for split in splits:
            _coco_file(
                job, staging, f"{COCO_SPLITS}/instances_{split}.json", [p for p in job.pictures if p.split == split]
            )
    else:
        _coco_file(job, staging, "annotations.json", job.pictures)


def _coco_file(job: BoxesJob, staging: Staging, name: str, pictures: list[Picture]) -> None:
    """One COCO file of `pictures`: they keep their source ids where all are distinct numbers."""
    ids = [int(p.source_id) if p.source_id.isdigit() else None for p in pictures]
    kept = None not in ids and len(set(ids)) == len(ids)
    with staging.open(name) as f:
        f.write(b'{"images": [')
        for n, picture in enumerate(pictures, 1):
            image_id = ids[n - 1] if kept else n
            entry = {"id": image_id, "file_name": picture.filename, "width": picture.width, "height": picture.height}
            f.write((",\n " if n > 1 else "\n ").encode() + json.dumps(entry).encode())
        f.write(b'\n],\n"annotations": [')
        count = 0
        for n, picture in enumerate(pictures, 1):
            image_id = ids[n - 1] if kept else n
            for box in picture.boxes:
                count += 1
                entry = {"id": count, "image_id": image_id, "category_id": box["label"]}
                entry.update(bbox=[float(v) for v in box["values"]], iscrowd=box["is_crowd"])
                if box["area"] is not None:
                    entry["area"] = box["area"]
                if "segmentation" in box:
                    entry["segmentation"] = box["segmentation"]
                if box["label"] in job.keypoint_classes and job.keypoint_names:
                    entry["keypoints"] = box["keypoints"]
                    entry["num_keypoints"] = sum(v > 0 for v in box["keypoints"][2::3])
                f.write((",\n " if count > 1 else "\n ").encode() + json.dumps(entry).encode())
        categories: list[dict[str, Any]] = [{"id": label, "name": name} for label, name in sorted(job.classes.items())]
        for category in categories:
            if category["id"] in job.keypoint_classes and job.keypoint_names:
                category["keypoints"] = job.keypoint_names
                category["skeleton"] = [[a + 1, b + 1] for a, b in job.skeleton]
        f.write(b'\n],\n"categories": ' + json.dumps(categories, indent=1).encode() + b"}\n")


def _yolo(job: BoxesJob, staging: Staging) -> None:
    """classes.txt holds every class in label order, one line a label from 1 (a label
    no class has keeps its line, '(unused N)'), so a box's YOLO index is its label - 1:
    the dataset's own numbering, whatever classes the boxes use."""
    labels = sorted(job.classes)
    if labels and labels[0] >= 1:
        order = list(range(1, labels[-1] + 1))
    else:  # labels from 0 or below (no ClassLabel): numbered in order
        order = labels
    names = [job.classes.get(label, f"(unused {label})") for label in order]
    staging.put(YOLO_CLASSES, lines_file(names, "the class names"))
    _yolo_dataset(job, staging, names)
    index = {label: i for i, label in enumerate(order)}
    assert job.pictures is not None
    for picture in job.pictures:
        lines = "".join(
            " ".join([str(index[box["label"]]), *map(number, box["values"])]) + "\n" for box in picture.boxes
        )
        staging.put(job.annotation_file(picture), lines.encode())  # type: ignore[arg-type]


def _yolo_dataset(job: BoxesJob, staging: Staging, names: list[str]) -> None:
    """data.yaml, as Ultralytics' dataset files are (`yolo train data=DIR/data.yaml`): the
    names, and each split's pictures in a list file beside it (`./images/NAME` a line,
    relative to the list, as Ultralytics reads one), so that converting the export keeps
    the splits. A split that is none of train, validation and test has no key: then no
    split is listed, and the names alone are written."""
    import yaml

    assert job.pictures is not None
    splits = list(dict.fromkeys(picture.split for picture in job.pictures))
    document: dict[str, Any] = {}
    if all(split in SPLIT_WORDS for split in splits):
        for split in splits:
            listed = "".join(f"./{IMAGES}/{p.filename}\n" for p in job.pictures if p.split == split)
            staging.put(f"{SPLIT_WORDS[split]}.txt", listed.encode("utf-8", "surrogateescape"))
            document[SPLIT_WORDS[split]] = f"{SPLIT_WORDS[split]}.txt"
    document["names"] = dict(enumerate(names))
    staging.put(YOLO_DATASET, yaml.safe_dump(document, allow_unicode=True, sort_keys=False).encode("utf-8"))


def _voc_image_sets(job: BoxesJob, staging: Staging) -> None:
    """ImageSets/Main/{train,val,test}.txt (the devkit's split lists, by image id: the
    picture's stem), which `tfr-convert detection` reads beside Annotations/, for a
    dataset of several splits among train, validation and test whose stems are distinct."""
    assert job.pictures is not None
    splits = list(dict.fromkeys(picture.split for picture in job.pictures))
    stems = [posixpath.splitext(posixpath.basename(picture.filename))[0] for picture in job.pictures]
    if len(splits) < 2 or not all(split in SPLIT_WORDS for split in splits) or len(set(stems)) != len(stems):
        return
    for split in splits:
        ids = "".join(f"{stem}\n" for stem, picture in zip(stems, job.pictures, strict=True) if picture.split == split)
        staging.put(f"{VOC_IMAGE_SETS}/{SPLIT_WORDS[split]}.txt", ids.encode("utf-8", "surrogateescape"))


def _voc(job: BoxesJob, staging: Staging) -> None:
    """One annotation file a picture with boxes, named after the picture's stem, and
    labelmap.txt (as Datumaro and CVAT export VOC): every class in label order, those with
    no box too, which `tfr-convert detection` reads back as the classes (left out where a
    class name holds a ':' or a line break, which a line of it cannot)."""
    assert job.pictures is not None
    names = [job.classes[label] for label in sorted(job.classes)]
    if not any(":" in name or len(name.splitlines()) != 1 for name in names):  # else a line could not hold it
        staging.put(VOC_LABELMAP, ("# label:color_rgb:parts:actions\n" + "".join(f"{n}:::\n" for n in names)).encode())
    _voc_image_sets(job, staging)
    for picture in job.pictures:
        if not picture.boxes:
            continue  # a negative: no annotation file names it
        objects = []
        for box in picture.boxes:
            x0, y0, x1, y1 = map(number, box["values"])
            objects.append(
                f"<object><name>{escape(box['text'])}</name><truncated>{box['truncated']}</truncated>"
                f"<difficult>{box['difficult']}</difficult><bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin>"
                f"<xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>"
            )
        xml = (
            f"<annotation><filename>{escape(picture.filename)}</filename><size><width>{picture.width}</width>"
            f"<height>{picture.height}</height><depth>3</depth></size>{''.join(objects)}</annotation>\n"
        )
        staging.put(job.annotation_file(picture), xml.encode())  # type: ignore[arg-type]


def _csv(job: BoxesJob, staging: Staging) -> None:
    """boxes.csv, a row a box. A dataset of several splits, each a split the converter
    reads from a file's name, is one file a split, annotations/boxes_SPLIT.csv (as COCO's
    instances files), each listing its pictures without boxes too (a row with no class
    and no corners), so that `--annotations DIR/annotations` reads every split back."""
    assert job.pictures is not None
    splits = list(dict.fromkeys(picture.split for picture in job.pictures))
    if len(splits) > 1 and all(split in SPLIT_WORDS for split in splits):
        for split in splits:
            _csv_file(staging, f"{COCO_SPLITS}/boxes_{split}.csv", [p for p in job.pictures if p.split == split], True)
    else:
        _csv_file(staging, "boxes.csv", job.pictures, False)


def _csv_file(staging: Staging, name: str, pictures: list[Picture], negatives: bool) -> None:
    with staging.csv(name) as rows:
        rows.row(["filename", "width", "height", "class", "xmin", "ymin", "xmax", "ymax"])
        for picture in pictures:
            for box in picture.boxes:
                rows.row([picture.filename, picture.width, picture.height, box["text"], *map(number, box["values"])])
            if negatives and not picture.boxes:
                rows.row([picture.filename, picture.width, picture.height, "", "", "", "", ""])


ANNOTATIONS = {"coco": _coco, "yolo": _yolo, "voc": _voc, "csv": _csv}
