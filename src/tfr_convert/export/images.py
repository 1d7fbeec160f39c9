"""--to images: each record's picture back to a file, in one of three layouts.

- folders: `OUT/SPLIT/CLASS/NAME`, a folder per class name (every class, even one with
  no picture in a split, so a folder listing numbers the classes as the dataset did).
  Each file goes back where it was under the folder the dataset came from: a NAME led by
  its split's folder (`train/cat/1.jpg`) or by its class folder is not given them twice,
  and a dataset of class folders (one split, train, its names led by no split folder) is
  `OUT/CLASS/NAME`, so `tfr-convert images OUT` gives the same examples again. Where
  that cannot be (names under no class folder, as a CSV of labels gives them; splits
  drawn by ratio), the export says so, and without --layout takes csv instead.
- csv: `OUT/NAME` and one `OUT/labels.csv` with `filename` (relative to the CSV),
  `split`, the label and one column per other scalar feature, written so that
  `tfr-convert images OUT --labels OUT/labels.csv --label-column LABEL --split-column split`
  gives the same examples again.
- masks (records with a segmentation mask): `OUT/SPLIT/images/NAME` and the mask as
  stored, `OUT/SPLIT/masks/STEM.png`, with `OUT/classes.txt` where the class names are
  known, so that `tfr-convert segmentation OUT/SPLIT/images --masks OUT/SPLIT/masks`
  gives the same examples again.

NAME is the record's `filename` feature (a relative path; one that climbs out of OUT is
an error), else `NNNNNN.EXT` by its place in the split. Encoded pictures are written as
stored; raw pixels as PNG. A record whose picture feature holds a list of pictures (a
clip's frames: TFDS's Video) is a folder, NAME less its suffix, of its frames as stored,
`000000.png`... Everything is staged (staging.py): a failed export leaves no file at a final name.
"""

from __future__ import annotations

import io
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..dataset.imageformat import sniff_format
from ..dataset.naming import checked_component, checked_relative, lines_file
from ..dataset.splits import SPLIT_FOLDERS
from ..dataset.wire.example import BYTES, FLOAT, INT64
from ..errors import OptionError, SourceError
from ..inspect.kinds.roles import image_feature, is_instance_mask, is_mask, manifest_raw_shape, raw_shape_of
from ..storage import fs
from .engine import Chunk, ExportOptions, Failed, Job, run
from .source import ExportSource, parsed
from .staging import Drop, Staging, staged

LAYOUTS = ("folders", "csv", "masks")
CSV_NAME = "labels.csv"
CLASSES_NAME = "classes.txt"
# what `tfr-convert images` writes of each picture itself: never a CSV column
OWN_FEATURES = ("image", "filename", "format", "height", "width", "channels", "depth")
FILENAME_FEATURES = ("filename", "image/filename", "file_name")
EXTENSIONS = {"jpeg": "jpg", "png": "png", "gif": "gif", "bmp": "bmp", "webp": "webp", "tiff": "tif"}


@dataclass
class Plan:
    """Which features are the picture, its class and its file name, and what else is kept."""

    image: str
    label: str | None
    names: list[str]  # the label's class names ([] when only indices are known)
    filename: str | None
    columns: list[str]  # further scalar features: CSV columns
    left_out: list[str] = field(default_factory=list)  # features neither layout can hold
    layout: str = "folders"
    raw_shape: tuple[int, ...] | None = None
    mask: str | None = None  # the segmentation mask (layout masks)
    mask_names: list[str] = field(default_factory=list)  # its classes' names
    media: str | None = None  # --to audio|video (media.py): the feature is a recording or a clip
    # media.py's: (the record -> file bytes, extension, made here rather than kept)
    render: Callable[[dict, Plan], tuple[bytes, str, bool]] | None = None
    media_dtype: str = ""  # a recording's samples' type
    media_channels: int = 1
    media_rate: int = 0  # the feature's sample rate (0: none said)
    media_packed: bool = False  # a recording's samples as one bytes value (TFDS's encoding BYTES)
    frames: bool = False  # the feature is a clip's frames (TFDS's Video): a folder of them each
    split_folders: bool = True  # folders: each split in OUT/SPLIT (not where every name has its own)
    notes: list[str] = field(default_factory=list)  # what the user must know of the export

    def label_text(self, index: int) -> str:
        """The label as the CSV or folder shows it: the class name where names are known
        and sorted (so a new conversion numbers them alike), else the index."""
        if self.names and self.names == sorted(self.names) and 0 <= index < len(self.names):
            return self.names[index]
        return str(index)

    def folder(self, index: int) -> str:
        return self.names[index] if 0 <= index < len(self.names) else str(index)


def plan(source: ExportSource, layout: str | None, image: str | None = None, label: str | None = None) -> Plan:
    """What to write, from the schema (overridden by `image` / `label`): the layout is
    masks for records with a segmentation mask, folders when there is a class label and
    nothing else worth keeping, else csv."""
    schema = source.schema()
    example = source.first_example()
    if example is None:
        files = [f for fs_ in source.splits.values() for f in fs_]
        raise SourceError(
            f"{', '.join(files[:3]) or 'the input'}{' and more' if len(files) > 3 else ''}: no records to export"
        )
    image = image or image_feature(example)
    if image is None or image not in schema:
        raise SourceError("no picture found in the records: name its feature with --image-feature")
    names = source.class_names()
    scalars = {n for n, spec in schema.items() if spec.shape == ()}
    if label is None:
        labelled = [n for n in sorted(names) if n in scalars and schema[n].dtype == "int64"]
        named = [n for n in sorted(scalars) if schema[n].dtype == "int64" and "label" in n.rsplit("/", 1)[-1]]
        label = (labelled or named or [None])[0]
    elif label not in scalars or schema[label].dtype != "int64":
        raise OptionError(f"--label-feature {label}: not an integer feature with one value in every record")
    filename = next((n for n in FILENAME_FEATURES if n in scalars and schema[n].dtype == "string"), None)
    mask = next(
        (n for n in sorted(scalars) if is_mask(n) and not is_instance_mask(n) and schema[n].dtype == "string"), None
    )
    if layout == "masks" and mask is None:
        raise OptionError("--layout masks: no segmentation mask in the records (a feature named like mask)")
    own = {image, label, filename, mask, *OWN_FEATURES}
    columns = sorted(n for n in scalars - own if not n.startswith("image/") or schema[n].dtype != "string")
    left_out = sorted(set(schema) - scalars - own)
    folders_note = _folders_note(example, filename, label, names.get(label, []) if label else [], list(source.splits))
    if layout is None:
        layout = "masks" if mask is not None else "folders" if label is not None and not columns else "csv"
        layout = "csv" if layout == "folders" and folders_note else layout
    raw = manifest_raw_shape(source.dataset) if source.dataset is not None else None
    if layout == "masks":  # the picture and its mask, nothing else
        left_out = sorted({*left_out, *columns, *([label] if label else [])})
        return Plan(image, None, [], filename, [], left_out, layout, raw, mask, names.get(mask, []))  # type: ignore[arg-type]
    if mask is not None:
        left_out = sorted({*left_out, mask})
    if layout == "folders":
        left_out = sorted(set(left_out) | set(columns))
        columns = []
        for number, name in enumerate(names.get(label, []) if label else []):
            checked_component(name, f"class {number} of {label!r} (a folder of the export)")
    frames = schema[image].shape != ()  # a list of pictures in a record: a clip's frames
    return Plan(
        image,
        label,
        names.get(label, []) if label else [],
        filename,
        columns,
        left_out,
        layout,
        raw,
        frames=frames,
        split_folders=filename is None or list(source.splits) != ["train"],
        notes=[folders_note] if layout == "folders" and folders_note else [],
    )


def _folders_note(example: dict, filename: str | None, label: str | None, names: list[str], splits: list[str]) -> str:
    """Why the folders layout would not convert back to the same file names ("" where it
    would), judged by the first record: its name must lead with its class folder, and
    with its split's folder where the dataset has another split than train."""
    if filename is None or label is None:
        return ""  # no names to give back (MNIST, CIFAR): numbered files
    name = _cell(*example.get(filename, (None, [b""])), filename)
    values = example.get(label, (None, []))[1]
    if len(values) != 1:
        return ""
    first, _, rest = name.partition("/")
    in_split = bool(rest) and first.lower() in SPLIT_FOLDERS
    folder = names[int(values[0])] if 0 <= int(values[0]) < len(names) else str(int(values[0]))
    if not (rest if in_split else name).startswith(folder + "/"):
        return (
            f"the records' file names ({name}) are not under their class folders: converting OUT again "
            "names them CLASS/NAME; --layout csv converts back to the same examples"
        )
    if not in_split and splits != ["train"]:
        return (
            f"the records' file names ({name}) hold no split folder: converting OUT again names them "
            "SPLIT/CLASS/NAME; --layout csv converts back to the same examples"
        )
    return ""


def _picture(value: bytes, example: dict, plan: Plan) -> tuple[bytes, str]:
    """(file bytes, extension): encoded pictures as stored, raw pixels as PNG."""
    fmt = sniff_format(value)
    if fmt is not None:
        return value, EXTENSIONS.get(fmt, fmt)
    shape = raw_shape_of(value, example, plan.raw_shape)
    if shape is None or shape[2] not in (1, 3, 4):
        raise SourceError(f"{plan.image!r} is neither an image format nor raw pixels of a known shape")
    import numpy as np  # here: exporters that only move bytes (webdataset's) plan with this module
    from PIL import Image

    pixels = np.frombuffer(value, np.uint8).reshape(shape)
    out = io.BytesIO()
    Image.fromarray(pixels[..., 0] if shape[2] == 1 else pixels).save(out, format="PNG")
    return out.getvalue(), "png"


def _cell(kind: str | None, values: list[Any], name: str) -> str:
    value = values[0]
    if kind == FLOAT:
        return repr(float(value))  # shortest text that reads back as the same float32
    if kind == BYTES:
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise SourceError(f"feature {name!r} is not UTF-8 text, which a CSV cell must be") from None
    return str(value)


@dataclass(frozen=True)
class Placed:
    """A record's picture, written under `name` (the Drop's), for OUT/relative."""

    where: str
    relative: str
    name: str
    row: list[str] | None  # its labels.csv row
    mask: str | None = None  # layout masks: where its mask goes (the Drop's name: `name` + MASK)
    frames: tuple[str, ...] = ()  # a clip's frames: the extension of each (the Drop's `name` + FRAME % k)


class ImagesJob(Job):
    def __init__(self, plan: Plan, staging: Staging, splits: list[str]) -> None:
        self.plan, self.drop = plan, staging.drop
        self.numbers = {split: n for n, split in enumerate(splits)}
        self._staging: Staging | None = staging  # parent side only
        self._csv: Any = None
        own = {"csv": CSV_NAME, "masks": CLASSES_NAME}.get(plan.layout)
        if own is not None:
            staging.claim(own, f"the export's own {own}")

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_staging": None, "_csv": None}

    def work(self, chunk: Chunk) -> tuple[list[Any], Any]:
        results: list[Any] = []
        for i, (where, payload) in enumerate(chunk.records):
            position = chunk.start + i
            try:
                example = parsed(payload)
                relative, data, row = _item(example, self.plan, chunk.split, position)
                mask = _mask(example, self.plan, relative) if self.plan.layout == "masks" else None
            except SourceError as e:
                results.append(Failed(where, str(e)))
                continue
            name = Drop.name(self.numbers[chunk.split], position)
            extensions: tuple[str, ...] = ()
            if isinstance(data, list):  # a clip's frames: a file each
                for k, (frame, _) in enumerate(data):
                    self.drop.put(name + FRAME % k, frame)
                extensions = tuple(extension for _, extension in data)
            else:
                self.drop.put(name, data)
            if mask is not None:
                self.drop.put(name + MASK, mask[1])
            results.append(Placed(where, relative, name, row, mask and mask[0], extensions))
        return results, None

    def begin(self, split: str) -> None:
        if self.plan.layout == "csv" and self._csv is None:
            assert self._staging is not None
            self._csv = self._staging.csv(CSV_NAME)
            self._csv.row(["filename", "split", *([self.plan.label] if self.plan.label else []), *self.plan.columns])

    def take(self, split: str, where: str, result: Placed) -> str | None:
        assert self._staging is not None
        staging = self._staging
        earlier = staging.claim(result.relative, where)
        if earlier is not None:
            within = " within a split" if self.plan.layout != "csv" else ""
            return f"writes {result.relative}, as {earlier} does: file names must differ{within}"
        if result.mask is not None:
            earlier = staging.claim(result.mask, f"the mask of {where}")
            if earlier is not None:
                return f"writes {result.mask}, as {earlier} does: file names must differ in more than suffix"
            staging.move(result.name + MASK, result.mask)
        if result.frames:  # the folder is claimed: the names inside it are the export's own
            for k, extension in enumerate(result.frames):
                staging.move(result.name + FRAME % k, f"{result.relative}/{k:06d}.{extension}")
        else:
            staging.move(result.name, result.relative)
        if result.row is not None:
            self._csv.row(result.row)
        return None

    def end(self, split: str) -> dict[str, Any]:
        out = self._staging.out if self._staging is not None else ""
        if self.plan.layout == "csv":
            return {"csv": fs.join(out, CSV_NAME)}
        return {"folder": fs.join(out, split) if self.plan.split_folders else out}

    def close(self) -> None:
        if self._csv is not None:
            self._csv.close()
            self._csv = None


def write(
    source: ExportSource,
    out: str,
    plan: Plan,
    options: ExportOptions,
) -> dict[str, dict[str, Any]]:
    """Write every split; {split: {records, folder | csv}}."""
    dry_run = options.dry_run
    classes = lines_file(plan.mask_names, f"the class names of {plan.mask!r}") if plan.mask_names else None
    with staged(out, dry_run) as staging:
        job = ImagesJob(plan, staging, list(source.splits))
        try:
            written = run(source, job, options)
        finally:
            job.close()
        if plan.layout == "masks" and classes is not None:
            staging.put(CLASSES_NAME, classes)
        staging.commit()
    if plan.layout == "folders" and not dry_run:
        for split in source.splits:  # every class a folder, so listing them numbers them alike
            for name in plan.names:
                fs.makedirs(fs.join(out, split, name) if plan.split_folders else fs.join(out, name))
    return written


def _item(
    example: dict, plan: Plan, split: str, position: int
) -> tuple[str, bytes | list[tuple[bytes, str]], list[str] | None]:
    """(path relative to OUT, file bytes, CSV row or None) of one record; a clip's frames
    are a folder there, its file bytes each frame's bytes as stored, with its extension."""
    made = False
    data: bytes | list[tuple[bytes, str]]
    if plan.render is not None:
        data, extension, made = plan.render(example, plan)
    elif plan.frames:
        data, extension, made = _frames(example, plan), "", True
    else:
        kind, values = example.get(plan.image, (None, []))
        if kind != BYTES or len(values) != 1:
            raise SourceError(f"no picture in {plan.image!r}")
        data, extension = _picture(values[0], example, plan)
    if plan.filename is not None:
        name = checked_relative(_cell(*example.get(plan.filename, (None, [b""])), plan.filename))
        if made:  # written in another format than the file it came from (or a folder): named for it
            name = checked_relative(posixpath.splitext(name)[0] + ("." + extension if extension else ""))
    else:
        stem = f"{position:06d}" + ("." + extension if extension else "")
        name = stem if plan.layout != "csv" else f"{split}/{stem}"
    index = None
    if plan.label is not None:
        kind, values = example.get(plan.label, (None, []))
        if kind != INT64 or len(values) != 1:
            raise SourceError(f"no single {plan.label!r} value")
        index = int(values[0])
    if plan.layout == "masks":
        return posixpath.join(split, "images", name), data, None
    if plan.layout == "folders":
        folder = plan.folder(index) if index is not None else ""
        top, rest = split if plan.split_folders else "", name
        first, _, after = name.partition("/")
        if after and SPLIT_FOLDERS.get(first.lower()) == split:  # ROOT/SPLIT/CLASS/...: the split's folder as it was
            top, rest = first, after
        inside = rest.removeprefix(folder + "/") if folder else rest
        return posixpath.join(top, folder, inside) if folder else posixpath.join(top, inside), data, None
    row = [name, split, *([plan.label_text(index)] if index is not None else [])]
    for column in plan.columns:
        value = example.get(column)
        if value is None or len(value[1]) != 1:
            raise SourceError(f"no single {column!r} value, which the first records have")
        row.append(_cell(value[0], value[1], column))
    return name, data, row


MASK = "-mask"  # a record's mask in the Drop, beside its picture
FRAME = "-frame%06d"  # a clip's frame k in the Drop


def _frames(example: dict, plan: Plan) -> list[tuple[bytes, str]]:
    """A clip's frames as stored (TFDS's Video: one encoded picture each), with their
    extensions; raw pixels are no frame this writes."""
    kind, values = example.get(plan.image, (None, []))
    if kind != BYTES or not values:
        raise SourceError(f"no frames in {plan.image!r}")
    frames = []
    for k, value in enumerate(values):
        fmt = sniff_format(value)
        if fmt is None:
            raise SourceError(f"frame {k} of {plan.image!r} is no encoded picture")
        frames.append((value, EXTENSIONS.get(fmt, fmt)))
    return frames


def _mask(example: dict, plan: Plan, relative: str) -> tuple[str, bytes]:
    """(path relative to OUT, PNG bytes as stored) of a record's segmentation mask: beside
    SPLIT/images/NAME, SPLIT/masks/STEM.png, which `tfr-convert segmentation` pairs with it."""
    kind, values = example.get(plan.mask, (None, []))  # type: ignore[arg-type]
    if kind != BYTES or len(values) != 1 or sniff_format(values[0]) != "png":
        raise SourceError(f"no PNG mask in {plan.mask!r}")
    split, _, name = relative.split("/", 2)
    return posixpath.join(split, "masks", posixpath.splitext(name)[0] + ".png"), values[0]
