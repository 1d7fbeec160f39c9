"""--grid OUT.png: a labelled contact sheet of the first N images, drawn with Pillow
(a clip as a strip of its frames: frames.py; for a dataset of sound and no pictures,
its recordings' waveforms: waveform.py).

The image feature is the first bytes feature whose values are PNG/JPEG/...
(by magic bytes), else one named like `image`, holding raw uint8 pixels whose
shape comes from the record's height / width / depth (or channels) features,
from the manifest's raw_image shape, or from the well-known sizes (784 = 28x28x1,
3072 = 32x32x3). The caption is the class name when one is known, else the
label, else the file name.
"""

from __future__ import annotations

import io
import math
import os
from typing import Any, NamedTuple

import numpy as np

from ..containers import MAX_RECORD_BYTES
from ..dataset.existing import ExistingDataset, class_names
from ..dataset.imageformat import sniff_format
from ..errors import OptionError, SourceError
from ..storage import fs
from .kinds.boxes import box_labels, box_names, boxes_of
from .kinds.frames import frame_list, frames_shown, strip, video_features
from .kinds.keypoints import keypoints_of
from .kinds.masks import instance_masks_of, mask_of, overlay, overlay_instances
from .kinds.roles import image_feature, is_mask, manifest_raw_shape, raw_shape_of
from .kinds.waveform import Sound, audio_features, samples_of, waveform
from .paths import resolve
from .summary import examples_of

CELL = 96  # pixels per tile side
# Images larger than this are reported, not decoded (--max-pixels raises it): a tile is
# 96 pixels wide, and a hostile PNG can declare a billion.
MAX_PIXELS = 25_000_000
CAPTION = 14
BOX_COLOUR = (255, 0, 255)  # magenta: rarely the colour of what is boxed
LIMB_COLOUR, POINT_COLOUR = (0, 255, 255), (255, 255, 0)


def _pixels(value: bytes, example: dict, raw_shape: tuple[int, ...] | None, max_pixels: int) -> np.ndarray:
    from PIL import Image

    if sniff_format(value):
        Image.MAX_IMAGE_PIXELS = None  # the --max-pixels check below replaces Pillow's, whatever set it before
        with Image.open(io.BytesIO(value)) as im:
            if im.width * im.height > max_pixels:
                raise SourceError(
                    f"{im.width}x{im.height} = {im.width * im.height} pixels exceeds --max-pixels {max_pixels}"
                )
            im.draft("RGB", (CELL, CELL))  # JPEG: decoded at a reduced scale, as the tile needs no more
            return np.asarray(im.convert("RGB"))
    shape = raw_shape_of(value, example, raw_shape)
    if shape is None:
        raise SourceError(f"cannot tell the shape of a {len(value)}-byte raw image")
    array = np.frombuffer(value, np.uint8).reshape(shape)
    return np.repeat(array, 3, axis=2) if shape[2] == 1 else array[..., :3]


#: what --grid writes, by OUT's extension
GRID_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG"}
CAPTION_CHARACTERS = 16  # of the default font, under a CELL-wide tile


def grid_format(out: str) -> str | None:
    """The image format --grid writes to OUT, by its extension; None for one it does not know."""
    return GRID_FORMATS.get(os.path.splitext(out)[1].lower())


def fitted(text: str, width: int = CAPTION_CHARACTERS, tail: bool = False) -> str:
    """`text` in `width` characters. A file name (`tail`) keeps its end, where names
    differ (`train/000000000009.jpg` -> `000000000009.jpg`, else `...0000009.jpg`); a
    class name keeps its start."""
    if len(text) <= width:
        return text
    if not tail:
        return text[: width - 3] + "..."
    base = text.rsplit("/", 1)[-1]
    return base if len(base) <= width else "..." + text[-(width - 3) :]


def caption(example: dict, names: dict[str, list[str]]) -> tuple[str, bool]:
    """(the class name: of a ClassLabel feature with names, whatever it is called, else
    of the usual label features; else the file name, True: it names a file)."""
    for feature in (*sorted(names), "label_name", "label", "label_index"):
        kind, values = example.get(feature, (None, []))
        if not values or is_mask(feature):  # a mask's names are its pixels', not the picture's
            continue
        if kind == "bytes_list":
            return values[0].decode("utf-8", "replace"), False
        if kind == "int64_list":
            index = int(values[0])
            known = names.get(feature, [])
            return (known[index] if 0 <= index < len(known) else str(index)), False
    values = example.get("filename", example.get("file_name", (None, [])))[1]
    return (values[0].decode("utf-8", "replace") if values else ""), True


class Pictures:
    """The pictures of records: which feature holds the image, the shape of raw pixels,
    the class names to caption them with; shared by --grid and --report."""

    def __init__(self, paths: list[str], max_pixels: int = MAX_PIXELS) -> None:
        inputs = resolve(paths)
        self.files = inputs.files
        self.names: dict[str, list[str]] = {}
        self.raw_shape: tuple[int, ...] | None = None
        self.feature: str | None = None
        self.max_pixels = max_pixels
        self.skeleton: list[tuple[int, int]] = []
        self.sounds: dict[str, Sound] = {}  # the sound features holding samples
        self.sound: str | None = None  # the one drawn
        self.videos: set[str] = set()  # Video features: a strip of frames each
        self.frames: str | None = None  # a SequenceExample's feature list of frames ("" none: not looked again)
        for d in inputs.datasets:
            dataset = ExistingDataset(d)  # (its metadata read once)
            self.sounds.update(audio_features(dataset))
            self.videos |= video_features(dataset)
            self.names.update(class_names(d))
            self.raw_shape = manifest_raw_shape(dataset) or self.raw_shape
            self.skeleton = dataset.skeleton or self.skeleton

    def _background(self, mask: str) -> int | None:
        """The mask's class left untinted: 0 where the dataset names it the background."""
        names = self.names.get(mask, [])
        return 0 if names and names[0].strip("_").lower() == "background" else None

    def _clip(self, path: str, index: int, example: dict) -> Picture | None:
        """A SequenceExample's clip: a few of its frames side by side."""
        from PIL import Image

        self.feature = self.frames  # (what the grid says it drew)
        frames = [step[0] for step in example.get(self.frames, (None, []))[1] if step]
        if not frames:
            return None
        try:
            pixels = strip([_pixels(frames[i], example, None, self.max_pixels) for i in frames_shown(len(frames))])
        except (OSError, ValueError, Image.DecompressionBombError, SourceError) as e:
            raise SourceError(f"{path}: record {index}: cannot draw {self.frames!r}: {e}") from None
        label, names_file = caption(example, self.names)
        return Picture(pixels, label, [], [label], tail=names_file)

    def _recording(self, example: dict) -> Picture | None:
        """A recording's waveform, or None when the record holds none."""
        self.sound = self.sound or next((n for n in self.sounds if example.get(n, (None, []))[1]), None)
        if self.sound is None or not example.get(self.sound, (None, []))[1]:
            return None
        label, names_file = caption(example, self.names)
        sound = self.sounds[self.sound]
        drawn = waveform(samples_of(example[self.sound][1], sound), sound.channels)
        return Picture(drawn, label, [], [label], tail=names_file)

    def picture(self, path: str, index: int, example: dict) -> Picture | None:
        """The record's image with its caption and boxes, or None when it holds no image."""
        from PIL import Image

        if self.frames is None:
            self.frames = frame_list(example) or ""
        if self.frames:  # a SequenceExample's clip: its frames are the steps of a feature list
            return self._clip(path, index, example)
        self.feature = self.feature or image_feature(example)
        if self.feature is None:  # a recording is drawn as its waveform
            return self._recording(example)
        if not example.get(self.feature, (None, []))[1]:
            return None
        values = example[self.feature][1]
        try:
            if self.feature in self.videos:  # a clip: a few of its frames side by side
                pixels = strip([_pixels(values[i], example, None, self.max_pixels) for i in frames_shown(len(values))])
            else:
                pixels = _pixels(values[0], example, self.raw_shape, self.max_pixels)
        except (OSError, ValueError, Image.DecompressionBombError) as e:
            raise SourceError(f"{path}: record {index}: cannot draw {self.feature!r}: {e}") from None
        except SourceError as e:
            raise SourceError(f"{path}: record {index}: {e}") from None
        mask = mask_of(example)
        if mask is not None and not (self.feature and is_mask(self.feature)):
            pixels = overlay(pixels, mask[1], background=self._background(mask[0]))
        boxes = boxes_of(example)
        if boxes is None:
            label, names_file = caption(example, self.names)
            return Picture(pixels, label, [], [label], tail=names_file)
        # a detection record: its masks tinted, its boxes drawn and labelled with their
        # classes, its keypoints joined by the skeleton; captioned by file
        instances = instance_masks_of(example)
        if instances:
            pixels = overlay_instances(pixels, instances, box_labels(example, len(instances)))
        labelled = list(zip(boxes, box_names(example, self.names, len(boxes)), strict=True))
        _, filename = example.get("image/filename", (None, []))
        name = filename[0].decode("utf-8", "replace") if filename else ""
        points = keypoints_of(example)
        return Picture(
            pixels,
            f"{name} ({len(boxes)})",
            labelled,
            sorted({n for _, n in labelled}),
            tuple(points),
            tuple(self.skeleton),
            tail=True,
        )


class Picture(NamedTuple):
    pixels: np.ndarray
    caption: str
    boxes: list[tuple[tuple[float, ...], str]]
    classes: list[str]  # what it shows: its label, or its boxes' classes
    points: tuple[np.ndarray, ...] = ()  # each object's keypoints: (K, 3) x, y (fractions), visibility
    skeleton: tuple[tuple[int, int], ...] = ()  # the keypoints joined by a limb
    tail: bool = False  # the caption names a file: shortened, it keeps its end

    def tile(self, side: int = CELL):
        """The picture scaled to fit a square of `side` pixels, its boxes drawn."""
        from PIL import Image, ImageDraw

        tile = Image.fromarray(self.pixels)
        scale = side / max(tile.size)
        resample = Image.Resampling.NEAREST if scale >= 1 else Image.Resampling.BILINEAR
        tile = tile.resize((max(1, round(tile.width * scale)), max(1, round(tile.height * scale))), resample)
        draw = ImageDraw.Draw(tile)
        for (xmin, ymin, xmax, ymax), name in self.boxes:
            corners = [xmin * tile.width, ymin * tile.height, xmax * tile.width, ymax * tile.height]
            draw.rectangle(corners, outline=BOX_COLOUR, width=1)
            draw.text((corners[0] + 1, corners[1]), name[:10], fill=BOX_COLOUR)
        for points in self.points:
            at = [(x * tile.width, y * tile.height) for x, y, _ in points]
            labelled = [v > 0 for _, _, v in points]
            for a, b in self.skeleton:
                if max(a, b) < len(at) and labelled[a] and labelled[b]:
                    draw.line([at[a], at[b]], fill=LIMB_COLOUR, width=1)
            for (x, y), shown in zip(at, labelled, strict=True):
                if shown:
                    draw.ellipse([x - 1.5, y - 1.5, x + 1.5, y + 1.5], fill=POINT_COLOUR)
        return tile


def grid(
    paths: list[str], out: str, count: int = 64, max_pixels: int = MAX_PIXELS, max_record: int = MAX_RECORD_BYTES
) -> dict[str, Any]:
    from PIL import Image, ImageDraw

    written = grid_format(out)
    if written is None:  # before anything is read
        raise OptionError(f"--grid {out}: name a .png, .jpg or .jpeg file (its extension says the format)")
    pictures = Pictures(paths, max_pixels)
    tiles: list[Picture] = []
    for path in pictures.files:
        for record, example in examples_of(path, max_record):
            if len(tiles) >= count:
                break
            if example is not None and (picture := pictures.picture(path, record.index, example)) is not None:
                tiles.append(picture)
        if len(tiles) >= count:
            break
    if not tiles:
        raise SourceError(f"{', '.join(paths)}: no images found to draw")
    columns = math.ceil(math.sqrt(len(tiles)))
    rows = math.ceil(len(tiles) / columns)
    sheet = Image.new("RGB", (columns * CELL, rows * (CELL + CAPTION)), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for i, picture in enumerate(tiles):
        tile = picture.tile(CELL - 4)
        x, y = (i % columns) * CELL, (i // columns) * (CELL + CAPTION)
        sheet.paste(tile, (x + (CELL - tile.width) // 2, y + (CELL - tile.height) // 2))
        draw.text((x + 2, y + CELL), fitted(picture.caption, tail=picture.tail), fill=(0, 0, 0))
    picture = io.BytesIO()
    sheet.save(picture, format=written, **({"quality": 90} if written == "JPEG" else {}))
    if not fs.is_remote(out):
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fs.put_bytes(out, picture.getvalue())
    return {"mode": "grid", "out": out, "images": len(tiles), "feature": pictures.feature or pictures.sound}
