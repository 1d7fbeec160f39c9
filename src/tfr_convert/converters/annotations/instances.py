"""What `tfr-convert detection` adds to an example beside its boxes: each object's mask
(--masks: COCO's segmentation drawn, or VOC's SegmentationObject pixels) and COCO's
keypoints, in the Object Detection API's keys."""

from __future__ import annotations

import io
import json

import numpy as np

from ...dataset import coco_rle
from ...dataset.features import FeatureSpec
from ...errors import SourceError
from ...pictures.imaging import open_image
from ...storage import fs
from .box_formats import Box

VOC_VOID = 255  # SegmentationObject's outline and "difficult" pixels: no object's


def instance_masks(
    boxes: tuple[Box, ...], voc_png: str | None, width: int, height: int, max_pixels: int
) -> list[np.ndarray]:
    """Each object's 0/1 mask at the image's displayed size: COCO's segmentation drawn
    (a crowd's RLE as it is, polygons joined), or the pixels of VOC's SegmentationObject
    PNG `voc_png` holding the object's number (its place in the XML, from 1)."""
    if voc_png is None:
        return [_drawn(box, width, height) for box in boxes]
    indices = _voc_instances(voc_png, width, height, max_pixels)
    most = int(indices[indices != VOC_VOID].max(initial=0))
    if most > len(boxes):
        raise SourceError(
            f"{voc_png}: holds object {most}, but {boxes[0].where.rsplit(' object', 1)[0]} lists {len(boxes)}"
        )
    return [(indices == n).astype(np.uint8) for n in range(1, len(boxes) + 1)]


def _drawn(box: Box, width: int, height: int) -> np.ndarray:
    if box.segmentation is None:
        raise SourceError(f"{box.where}: no segmentation, which --masks draws")
    try:
        return coco_rle.decode(json.loads(box.segmentation), height, width)
    except coco_rle.MaskError as e:
        raise SourceError(f"{box.where}: {e}") from None


def _voc_instances(path: str, width: int, height: int, max_pixels: int) -> np.ndarray:
    """A SegmentationObject PNG's object numbers (palette indices), its header checked
    against --max-pixels and the image's size before any pixel is decoded."""
    from PIL import UnidentifiedImageError

    try:
        opened = open_image(fs.read_bytes(path), max_pixels)
    except SourceError as e:
        raise e.locate(path) from None
    if opened.size != (width, height):
        raise SourceError(
            f"{path} is {opened.size[0]}x{opened.size[1]}, the image {width}x{height}: a mask must be its image's size"
        )
    try:
        with opened as im:
            if im.mode not in ("P", "L"):
                raise SourceError(f"{path}: a {im.mode} image; SegmentationObject masks are palette PNGs")
            return np.asarray(im)
    except (UnidentifiedImageError, OSError) as e:
        raise SourceError(f"{path}: not a readable mask ({e})") from None


def instance_png(mask: np.ndarray, width: int, height: int) -> bytes:
    """One object's mask as the Object Detection API stores it: a one-channel PNG of 0
    and 1 at the stored image's size (resized by nearest neighbour)."""
    from PIL import Image

    picture = Image.fromarray(mask, "L")
    if picture.size != (width, height):
        picture = picture.resize((width, height), Image.Resampling.NEAREST)
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


def keypoint_features(count: int) -> dict[str, FeatureSpec]:
    """Keypoints as the Object Detection API's decoder reads them: `count` of each per
    object, back to back (TFDS reads a Sequence of shape-(count,) tensors)."""
    return {
        "image/object/keypoint/x": FeatureSpec.tensor("float32", (count,)).of_objects(),
        "image/object/keypoint/y": FeatureSpec.tensor("float32", (count,)).of_objects(),
        "image/object/keypoint/visibility": FeatureSpec.tensor("int64", (count,)).of_objects(),
        "image/object/keypoint/text": FeatureSpec.tensor("string", (count,)).of_objects(),
        "image/object/keypoint/num": FeatureSpec.tensor("int64").of_objects(),
    }


def keypoints(boxes: tuple[Box, ...], names: list[str], width: int, height: int) -> dict[str, np.ndarray]:
    """Each object's keypoints normalized by the displayed size, in its category's order;
    an object without keypoints has an unlabelled one (0, 0, visibility 0) for each name,
    as create_coco_tf_record.py writes them. `num`: the labelled (visibility > 0) ones."""
    count = len(names)
    table = np.zeros((len(boxes), count, 3), np.float64)
    for i, box in enumerate(boxes):
        if box.keypoints is None:
            continue
        points = np.array(json.loads(box.keypoints), np.float64).reshape(count, 3)
        labelled = points[:, 2] > 0
        outside = labelled & (
            (points[:, 0] < 0) | (points[:, 0] > width) | (points[:, 1] < 0) | (points[:, 1] > height)
        )
        if outside.any():
            k = int(np.flatnonzero(outside)[0])
            raise SourceError(
                f"{box.where}: keypoint {names[k]!r} at ({points[k, 0]:g}, {points[k, 1]:g}) lies outside the "
                f"{width}x{height} image"
            )
        table[i] = points
    return {
        "image/object/keypoint/x": (table[:, :, 0] / width).astype(np.float32).reshape(-1),
        "image/object/keypoint/y": (table[:, :, 1] / height).astype(np.float32).reshape(-1),
        "image/object/keypoint/visibility": table[:, :, 2].astype(np.int64).reshape(-1),
        "image/object/keypoint/text": np.array(names * len(boxes), dtype=object),
        "image/object/keypoint/num": (table[:, :, 2] > 0).sum(axis=1).astype(np.int64),
    }
