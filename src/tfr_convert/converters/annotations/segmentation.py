"""Images with semantic segmentation masks -> examples as TFDS's `oxford_iiit_pet` stores
them: `image` (its bytes as they are) and `segmentation_mask` (one PNG channel of class
indices), with `file_name`.

An image `a/b.jpg` under IMAGE_DIR pairs with the mask `a/b.png` (any image suffix)
under MASK_DIR. A mask is a palette PNG (the palette index is the class, as VOC's
SegmentationClass), a grayscale one (the value is the class), or RGB-coded (each colour
a class, by --palette). Every mask's size must equal its image's, and every value be a
class index (of --classes or the palette's names, when given) or --ignore-index.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...dataset.features import FeatureSpec, labels_filename
from ...dataset.splits import SplitSpec, split_by_ratio
from ...errors import OptionError, SourceError
from ...pictures.imaging import DEFAULT_CHROMA, DecodePolicy, open_image, probe, reencode
from ...storage import fs
from ..base import Converter, Options, SourceContext, fingerprint
from ..listing.folders import IMAGE_SUFFIXES, FileItems, dataset_name, list_files
from .box_formats.class_names import read_names

MISSING = ("error", "skip")
LAYOUTS = ("flat", "tfds")
SUPERVISED = {"tuple": {"items": [{"featureKey": "image"}, {"featureKey": "segmentation_mask"}]}}
_COLOUR = re.compile(r"^\s*(?:(\d+)\s*:)?\s*(\d+)\s*[, ]\s*(\d+)\s*[, ]\s*(\d+)\s*(.*?)\s*$")


def read_palette(path: str) -> tuple[dict[tuple[int, int, int], int], list[str]]:
    """({colour: class index}, class names) of a palette file: `R G B [name]` (or
    `R,G,B name`) a line, the class index being the one after the line before's, or the
    line's own given first as `INDEX:` (`255: 224 224 192 border`, for --ignore-index);
    `#` starts a comment. The names are those of classes 0, 1, ... as far as they go on."""
    colours: dict[tuple[int, int, int], int] = {}
    named: dict[int, str] = {}
    index = -1
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0]
            if not text.strip():
                continue
            colour_match = _COLOUR.match(text)
            values = [int(v) for v in colour_match.groups()[1:4]] if colour_match else []
            index = int(colour_match.group(1)) if colour_match and colour_match.group(1) is not None else index + 1
            if not colour_match or any(v > 255 for v in values) or index > 255:
                raise SourceError(f"{path}: line {number}: {line.strip()!r} is not '[INDEX:] R G B name' (0-255 each)")
            colour = (values[0], values[1], values[2])
            if colour in colours:
                raise SourceError(f"{path}: line {number}: colour {colour} names two classes")
            colours[colour] = index
            named[index] = colour_match.group(5) or str(index)
    if not colours:
        raise SourceError(f"{path}: no colours in it")
    names = []
    while len(names) in named:
        names.append(named[len(names)])
    return colours, names


@dataclass(frozen=True)
class SegmentationOptions(Options):
    """What `tfr-convert segmentation` takes besides the options every converter shares."""

    masks: str
    classes_file: str | None = None
    palette_file: str | None = None
    ignore_index: int | None = 255
    missing: str = "error"  # an image without a mask: "error", or "skip" (listed)
    split: SplitSpec | None = None
    policy: DecodePolicy = field(default_factory=DecodePolicy)
    quality: int = 95
    chroma: str = DEFAULT_CHROMA  # a re-encoded JPEG's chroma subsampling
    layout: str = "flat"  # "tfds": under OUT/NAME/1.0.0, TFDS's data_dir layout

    def problem(self) -> str | None:
        if self.missing not in MISSING:
            return f"--missing-masks {self.missing}: choose {', '.join(MISSING)}"
        if self.layout not in LAYOUTS:
            return f"--layout {self.layout}: choose {', '.join(LAYOUTS)}"
        if self.ignore_index is not None and not 0 <= self.ignore_index <= 255:
            return f"--ignore-index {self.ignore_index}: a mask value, 0-255"
        return None


class SegmentationConverter(FileItems, Converter):
    command = "segmentation"
    description = "Images with semantic segmentation masks, as TFDS's oxford_iiit_pet stores them."
    # what the recorded options say of this run's inputs (an --append's batch may differ)
    input_options = frozenset({"masks"})
    chunk_size = 16
    supervised_keys = SUPERVISED

    def __init__(self, image_dir: str, options: SegmentationOptions, context: SourceContext | None = None) -> None:
        options = self.begin(options, context)
        context = self.context
        self.root, self.mask_root, self.options_ = image_dir, options.masks, options
        self.policy = options.policy
        self.tfds_layout = options.layout == "tfds"
        self.dataset_name = dataset_name(image_dir)
        self._real = {
            root: None if fs.is_remote(root) else os.path.realpath(root) for root in (image_dir, options.masks)
        }
        self.colours: dict[tuple[int, int, int], int] = {}
        self.classes = self._class_names(options)
        items = self._paired(image_dir, options, context)
        if not items:
            raise SourceError(f"{image_dir}: no image with a mask in {options.masks}")
        if options.split is None:
            self._splits = {"train": items}
        else:
            self._splits, said = split_by_ratio(
                items, self.key, options.split, context.seed, per_item=context.per_item_splits
            )
            self.warnings += [said] if said else []
        self.labels: dict[str, list[str]] = {}
        self.features = {
            "image": FeatureSpec.image((None, None, self.policy.channels or 3), "jpeg" if self.policy.resize else None),
            "segmentation_mask": FeatureSpec.image((None, None, 1), "png"),
            "file_name": FeatureSpec.text(),
        }

    def _class_names(self, options: SegmentationOptions) -> list[str]:
        """The classes' names (--classes, else the --palette's), and the palette's colours."""
        names: list[str] = []
        if options.palette_file:
            self.colours, names = read_palette(options.palette_file)
        if options.classes_file:
            names = read_names(options.classes_file)
            if self.colours and max(i for i in self.colours.values() if i != options.ignore_index) >= len(names):
                raise OptionError(
                    f"--palette {options.palette_file} has colours of classes past the {len(names)} that "
                    f"--classes {options.classes_file} names"
                )
        return names

    def _paired(self, image_dir: str, options: SegmentationOptions, context: SourceContext) -> list[tuple[str, str]]:
        """(image, mask) of each image with a mask of its name's stem: an image without one is
        an error, or skipped (--missing-masks skip); masks without an image are said."""
        images = [f for f in list_files(image_dir, exclude=context.out) if f.lower().endswith(IMAGE_SUFFIXES)]
        masks = [f for f in list_files(options.masks, exclude=context.out) if f.lower().endswith(IMAGE_SUFFIXES)]
        by_stem: dict[str, str] = {}
        for mask in masks:
            stem = posixpath.splitext(mask.replace(os.sep, "/"))[0]
            if stem in by_stem:
                raise SourceError(f"{fs.join(options.masks, mask)}: a second mask for {stem!r} ({by_stem[stem]})")
            by_stem[stem] = mask
        items, missing = [], []
        for image in (f.replace(os.sep, "/") for f in images):
            mask = by_stem.pop(posixpath.splitext(image)[0], None)
            if mask is None:
                missing.append(image)
            else:
                items.append((image, mask))
        if missing and options.missing == "error":
            raise SourceError(
                f"{fs.join(image_dir, missing[0])}: no mask for it in {options.masks} (looked for "
                f"{posixpath.splitext(missing[0])[0]}.png or another image suffix); {len(missing)} image(s) "
                "without masks: --missing-masks skip leaves them out"
            )
        for image in missing:
            self.skipped.add(fs.join(image_dir, image), "no mask for it")
        if by_stem:
            self.warnings.append(
                f"{options.masks}: {len(by_stem)} mask(s) without an image, left out ({sorted(by_stem.values())[0]}...)"
            )
        return items

    # ------------------------------------------------------------ converter interface

    def item_files(self, item: Hashable) -> tuple[str | None, ...]:
        return item  # type: ignore[return-value]  (the picture's path, its mask's)

    def features_of(self, item: Hashable) -> dict[str, Any]:
        image_rel, mask_rel = item  # type: ignore[misc]
        image_path, mask_path = fs.join(self.root, image_rel), fs.join(self.mask_root, mask_rel)
        try:
            data = fs.read_bytes(image_path, inside=self._real[self.root])
            mask_data = fs.read_bytes(mask_path, inside=self._real[self.mask_root])
        except OSError as e:
            raise SourceError(f"cannot read: {e.strerror or e}") from None
        info = probe(data, self.policy.max_pixels, self.policy.structural)
        if info.orientation != 1:
            raise SourceError(
                f"EXIF orientation {info.orientation} turns the image for display; its mask cannot say which "
                "way it was drawn: store the image upright"
            )
        indices = self._indices(mask_data, mask_path, info.source_size)
        width, height = info.source_size
        self._check_values(indices, mask_path)
        image = data
        if self.policy.resize or self.policy.grayscale:
            image, (height, width, _) = reencode(
                data, image_rel, self.policy, "jpeg", self.options_.quality, self.options_.chroma
            )
            indices = _resized(indices, width, height)
        return {"image": image, "segmentation_mask": _png(indices), "file_name": image_rel}

    def _indices(self, data: bytes, where: str, size: tuple[int, int]) -> np.ndarray:
        """The mask's class indices (H, W) uint8, by its kind: palette and grayscale masks
        as they are, RGB ones through the palette. Its header is checked first, against
        --max-pixels and the image's `size` (width, height): nothing else is decoded."""
        from PIL import UnidentifiedImageError

        try:
            opened = open_image(data, self.policy.max_pixels)
        except SourceError as e:
            raise e.locate(where) from None
        if opened.size != size:
            raise SourceError(
                f"the mask {where} is {opened.size[0]}x{opened.size[1]}, the image {size[0]}x{size[1]}: "
                "a mask must be its image's size"
            )
        try:
            with opened as mask:
                mode = mask.mode
                if mode in ("P", "L"):
                    return np.asarray(mask)
                if mode in ("RGB", "RGBA"):
                    pixels = np.asarray(mask.convert("RGB"))
                elif mode in ("I;16", "I"):
                    values = np.asarray(mask)
                    if values.max(initial=0) > 255:
                        raise SourceError(f"{where}: a 16-bit mask with values above 255")
                    return values.astype(np.uint8)
                else:
                    raise SourceError(f"{where}: a {mode} mask: masks are palette, grayscale or RGB PNGs")
        except (UnidentifiedImageError, OSError) as e:
            raise SourceError(f"{where}: not a readable mask ({e})") from None
        if not self.colours:
            raise SourceError(f"{where}: an RGB-coded mask: give --palette FILE (R G B name, a line per class)")
        codes = pixels[..., 0].astype(np.uint32) << 16 | pixels[..., 1].astype(np.uint32) << 8 | pixels[..., 2]
        known = np.array([r << 16 | g << 8 | b for r, g, b in self.colours], np.uint32)
        classes = np.array(list(self.colours.values()), np.uint8)
        order = np.argsort(known)
        at = np.clip(np.searchsorted(known[order], codes), 0, len(known) - 1)
        known_codes = known[order][at] == codes
        if not known_codes.all():
            y, x = map(int, np.argwhere(~known_codes)[0])
            raise SourceError(
                f"{where}: pixel (x={x}, y={y}) has colour {tuple(map(int, pixels[y, x]))}, not in --palette"
            )
        return classes[order][at]

    def _check_values(self, indices: np.ndarray, where: str) -> None:
        if not self.classes:
            return
        ignore = self.options_.ignore_index
        bad = (indices >= len(self.classes)) & (indices != ignore if ignore is not None else True)
        if bad.any():
            y, x = map(int, np.argwhere(bad)[0])
            raise SourceError(
                f"{where}: pixel (x={x}, y={y}) has value {int(indices[y, x])}, not a class index (0-"
                f"{len(self.classes) - 1}) nor --ignore-index {ignore}"
            )

    def input_roots(self) -> list[str]:
        return [self.root, self.mask_root]

    def extra_files(self) -> dict[str, bytes]:
        names = "".join(f"{n}\n" for n in self.classes).encode()
        return {labels_filename("segmentation_mask"): names} if self.classes else {}

    def sources(self) -> list[dict[str, Any]]:
        sources = []
        for path in (self.options_.classes_file, self.options_.palette_file):
            if path:
                with open(path, "rb") as f:
                    sources.append(fingerprint(path, f.read()))
        return sources

    def recorded_options(self) -> dict[str, Any]:
        return {
            "masks": self.mask_root,
            "classes": self.classes,
            "palette": {str(i): list(c) for c, i in self.colours.items()},
            "ignore_index": self.options_.ignore_index,
            "missing_masks": self.options_.missing,
            "split": self.options_.split.describe() if self.options_.split else None,
            "resize": list(self.policy.resize) if self.policy.resize else None,
            "layout": self.options_.layout,
        }


def _resized(indices: np.ndarray, width: int, height: int) -> np.ndarray:
    """Class indices resized by nearest neighbour: no value that was not there appears."""
    from PIL import Image

    return np.asarray(Image.fromarray(indices, "L").resize((width, height), Image.NEAREST))


def _png(indices: np.ndarray) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(indices, "L").save(out, format="PNG")
    return out.getvalue()
