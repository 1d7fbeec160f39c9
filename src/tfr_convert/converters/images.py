"""A folder of images -> examples, labelled by a CSV or by class sub-folders.

Layouts:
  (a) --labels CSV with a header: one column holds paths relative to
      IMAGE_DIR (detected by name or by content, or --path-column); every
      other column becomes a feature named after it, typed by its values.
      --label-column COL makes COL a class label with names.
  (b) no CSV: IMAGE_DIR/<class>/<image>; label index by sorted folder name.
  (c) --headerless-labels: the face/age tutorial's headerless one-column CSV,
      matched line by line to the sorted list of files; the feature is named
      after the CSV file (age.csv -> age).

Items are (relative path, CSV line, label, extra column values): small, so a
folder of a million images lists cheaply; pixels are read only in `features_of`,
in whichever process (or Beam worker) runs it. IMAGE_DIR and the CSV may be
remote (s3://, gs://...): they are then listed and read through fsspec (`fs`),
with the file list fetched once instead of one existence check per CSV row.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from ..dataset.features import FeatureSpec
from ..dataset.splits import SplitSpec, split_by_ratio
from ..errors import SourceError
from ..pictures.imaging import DEFAULT_CHROMA, DecodePolicy
from ..pictures.stored_image import stored
from ..storage import fs
from .base import Converter, Options, SourceContext, items_per_chunk
from .listing.class_folders import class_folders
from .listing.folders import IMAGE_SUFFIXES, FileItems, ImageFolder, dataset_name, named, split_folders
from .listing.grouping import plan_groups
from .listing.label_csv import LabelCsv

IMAGE_FORMATS = ("keep", "png", "jpeg", "raw")
LAYOUTS = ("flat", "tfds")
# the features this converter writes: no CSV column may take one of the names
RESERVED = {"image", "filename", "format", "height", "width", "channels"}


@dataclass(frozen=True)
class ImagesOptions(Options):
    """What `tfr-convert images` takes besides the options every converter shares;
    `problem()` is the one home of their rules (the command line shows it as a usage
    error, the converter raises it as an OptionError)."""

    labels_csv: str | None = None
    delimiter: str | None = None  # None: detected
    path_column: str | None = None
    label_column: str | None = None
    headerless_labels: bool = False
    split: SplitSpec | None = None
    stratify: bool = False
    split_column: str | None = None
    group_column: str | None = None
    dedupe: str | None = None
    image_format: str = "keep"
    keep_exact: bool = False  # keep mode: even bytes TensorFlow cannot decode upright
    quality: int = 95
    chroma: str = DEFAULT_CHROMA  # a re-encoded JPEG's chroma subsampling
    policy: DecodePolicy = field(default_factory=DecodePolicy)
    layout: str = "flat"  # "tfds": under OUT/NAME/1.0.0, TFDS's data_dir layout

    def problem(self) -> str | None:
        """What makes these options impossible together, in the command line's words, or None."""
        if self.layout not in LAYOUTS:
            return f"--layout {self.layout}: choose {', '.join(LAYOUTS)}"
        if self.image_format not in IMAGE_FORMATS:
            return f"--image-format {self.image_format}: choose {', '.join(IMAGE_FORMATS)}"
        csv_only = (
            self.path_column,
            self.label_column,
            self.split_column,
            self.group_column,
            self.headerless_labels,
            self.delimiter,
        )
        if self.labels_csv is None and any(csv_only):
            return (
                "--path-column, --label-column, --split-column, --group-column, --headerless-labels and "
                "--delimiter need --labels"
            )
        if self.group_column and self.split is None:
            return "--group-column keeps groups whole across --split's fractions: give --split"
        if self.dedupe in ("exact", "near") and self.split_column:
            return (
                "--split-column fixes each row's split, so --dedupe exact|near cannot keep duplicates together; "
                "--dedupe drop keeps one of each"
            )
        if self.split is not None and self.split_column is not None:
            return "give --split or --split-column, not both"
        if self.image_format == "keep" and (self.policy.resize or self.policy.grayscale or self.policy.rgb):
            return "--resize and --color re-encode: use --image-format png, jpeg or raw"
        if self.keep_exact and self.image_format != "keep":
            return "--keep-exact is for --image-format keep"
        return None


class ImagesConverter(FileItems, Converter):
    command = "images"
    description = "Images from a folder, with labels from a CSV or class sub-folders."
    # what the recorded options say of this run's inputs (an --append's batch may differ)
    input_options = frozenset({"split_folders", "dedupe_found"})
    chunk_size = 16  # images are large: keep what is in flight between processes small

    def __init__(
        self,
        image_dir: str,
        options: ImagesOptions | None = None,
        context: SourceContext | None = None,
    ) -> None:
        """context.fill_in_parts: the folders of a large tree are listed in parts, in other
        processes (see list_files)."""
        options = self.begin(options or ImagesOptions(), context)
        context = self.context
        self.root = image_dir
        self._folder = ImageFolder(image_dir, context.out, context.fill_in_parts)
        self._remote, self._real_root = self._folder.remote, self._folder.real_root
        self.image_format, self.quality, self.chroma = options.image_format, options.quality, options.chroma
        self.tfds_layout = options.layout == "tfds"
        self.keep_exact = options.keep_exact  # keep mode: even bytes TensorFlow cannot decode upright
        self._flag: tuple[str, str] | None = None  # (why, file) of the item just encoded, for observe
        self.policy = options.policy or DecodePolicy()
        self.columns: list[tuple[str, str]] = []  # extra features: (name, dtype)
        self.labels: dict[str, list[str]] = {}
        self.label_feature: str | None = None
        self.raw_shape: tuple[int, int, int] | None = None  # (H, W, C), known after finish() for raw
        self._csv = options.labels_csv
        self._settings = {
            "image_format": options.image_format,
            "keep_exact": options.keep_exact,
            "split": options.split.describe() if options.split else None,
            "stratify": options.stratify,
            "split_column": options.split_column,
            "label_column": options.label_column,
            "headerless_labels": options.headerless_labels,
            "delimiter": options.delimiter,
            "group_column": options.group_column,
            "dedupe": options.dedupe,
            "layout": options.layout,
        }
        self._group_column, self._dedupe = options.group_column, options.dedupe
        self._group_of: dict[str, str] = {}  # image -> its --group-column value
        self.dataset_name = dataset_name(image_dir)
        items, split_of = self._class_folders() if options.labels_csv is None else self._labelled(options)
        if not items:
            raise SourceError(f"{image_dir}: no images to convert")
        if split_of:  # recorded: which folder gave which split
            self._settings["split_folders"] = dict(
                sorted({rel.split(os.sep, 1)[0]: s for rel, s in split_of.items()}.items())
            )
        if split_of and options.split is not None:
            self.warnings.append(
                f"{image_dir}: --split re-splits the images of its split folders "
                f"({', '.join(sorted({rel.split(os.sep, 1)[0] for rel in split_of}))}) by its fractions"
            )
            split_of = {}
        self._splits = self._split(items, options.split, options.stratify, split_of, context.seed)
        if options.image_format == "keep" and not self._remote:
            self.chunk_size = _keep_chunk_size(self.root, [item[0] for item in items[:CHUNK_SAMPLE]])
        self._folder.listed()
        self.features = self._declare_features()

    def _labelled(self, options: ImagesOptions) -> tuple[list[tuple], dict[str, str]]:
        """The items the labels CSV lists, and the split each is in (its split column, or
        the split folder its path leads through), with its extra columns and labels."""
        assert options.labels_csv is not None
        table = LabelCsv(self._folder, options.labels_csv, options.delimiter, RESERVED, self.reject, self._inside)
        if options.headerless_labels:
            items, split_of = table.headerless(), {}
        else:
            items, split_of = table.with_header(
                options.path_column, options.label_column, options.split_column, options.group_column
            )
        self.columns, self.labels, self.label_feature = table.columns, table.labels, table.label_feature
        self._group_of = table.group_of
        self.warnings += table.warnings
        if options.split_column is None:  # ROOT/SPLIT/*: the CSV's paths lead through split folders
            split_of = self._split_folders_of(items)
        return items, split_of

    # ------------------------------------------------------------ listing

    def _class_folders(self) -> tuple[list[tuple], dict[str, str]]:
        """(items, {file: split}): the classes are IMAGE_DIR's folders, or the folders
        inside its split folders (ROOT/SPLIT/CLASS/*), where its folders all name splits."""
        listed = class_folders(self._folder, IMAGE_SUFFIXES, "image", self.reject, self.warnings, self._inside)
        if listed.classes:
            self.label_feature = "label"
            self.labels = {"label": listed.classes}
        return [(f, None, label, ()) for f, label in listed.files], listed.split_of

    def _split_folders_of(self, items: list[tuple]) -> dict[str, str]:
        """{file: split} where every file a labels CSV names lies in a split folder."""
        if not items or any(os.sep not in item[0] for item in items):
            return {}
        splits = split_folders(self.root, {item[0].split(os.sep, 1)[0] for item in items})
        return {} if splits is None else {item[0]: splits[item[0].split(os.sep, 1)[0]] for item in items}

    def _inside(self, rel: str, where: str) -> bool:
        """Whether a file really lives under IMAGE_DIR (symlinks resolved); rejected if not."""
        real = self._folder.outside(rel)
        if real is not None:
            self.reject(where, f"resolves to {real}, outside IMAGE_DIR (symlink)")
            return False
        return True

    # ------------------------------------------------------------ splits

    def _split(
        self, items: list[tuple], spec: SplitSpec | None, stratify: bool, split_of: dict[str, str], seed: int
    ) -> dict[str, list[tuple]]:
        if stratify and spec is not None and self.label_feature is None:
            raise SourceError(f"{self.root}: --stratify needs labels (class folders or --label-column)")
        groups = None
        if self._dedupe or self._group_column:
            items, groups = self._groups(items)
        if split_of:
            out: dict[str, list[tuple]] = {}
            for item in items:
                out.setdefault(split_of[item[0]], []).append(item)
            return out
        if spec is None:
            return {"train": items}
        whole = groups if groups is not None and (self._group_column or self._dedupe != "drop") else None
        splits, said = split_by_ratio(
            items,
            self.key,
            spec,
            seed,
            (lambda item: item[2]) if stratify else None,
            whole,
            self.context.per_item_splits,
        )
        self.warnings += [said] if said else []
        return splits

    def _groups(self, items: list[tuple]) -> tuple[list[tuple], list[str]]:
        """(the items, minus dropped duplicates; each one's group): --group-column values
        and --dedupe clusters, merged where they overlap."""
        inside = None if self._remote else self._real_root
        kept, groups, groups_of, message = plan_groups(
            [item[0].replace(os.sep, "/") for item in items],
            lambda i: fs.read_bytes(fs.join(self.root, items[i][0]), inside=inside),
            self._dedupe,
            [self._group_of[item[0]] for item in items] if self._group_column else None,
            self.root,
        )
        if message:
            self.warnings.append(message)
        if groups_of is not None:
            self._settings["dedupe_found"] = groups_of
        return [items[i] for i in kept], groups

    # ------------------------------------------------------------ features

    def _declare_features(self) -> dict[str, FeatureSpec]:
        channels = self.policy.channels or 3
        height, width = (self.policy.resize[1], self.policy.resize[0]) if self.policy.resize else (None, None)
        if self.image_format == "raw":  # its shape is known once every image is decoded (finish)
            image = FeatureSpec.raw_image((height, width, self.policy.channels))
        else:
            encoding = self.image_format if self.image_format in ("png", "jpeg") else None
            image = FeatureSpec.image((height, width, channels), encoding)
        features = {
            "image": image,
            "filename": FeatureSpec.tensor("string"),
            "format": FeatureSpec.tensor("string"),
            "height": FeatureSpec.tensor("int64"),
            "width": FeatureSpec.tensor("int64"),
            "channels": FeatureSpec.tensor("int64"),
        }
        if self.label_feature is not None:
            features[self.label_feature] = FeatureSpec.class_label(len(self.labels[self.label_feature]))
        for name, dtype in self.columns:
            features[name] = FeatureSpec.tensor(dtype)
        return features

    # ------------------------------------------------------------ converter interface

    def describe(self, item: Hashable) -> str:
        rel, line = item[0], item[1]  # type: ignore[index]
        path = fs.join(self.root, rel)
        return f"{path} ({self._csv} line {line})" if line is not None else path

    def features_of(self, item: Hashable) -> dict[str, Any]:
        rel, _, label, extras = item  # type: ignore[misc]
        try:
            data = fs.read_bytes(fs.join(self.root, rel), inside=None if self._remote else self._real_root)
        except OSError as e:
            raise SourceError(f"cannot read: {e.strerror or e}") from None
        picture = stored(
            data, rel.replace(os.sep, "/"), self.image_format, self.policy, self.quality, self.keep_exact, self.chroma
        )
        self._flag = None if picture.flag is None else (picture.flag, rel.replace(os.sep, "/"))
        image, fmt = picture.data, picture.format
        height, width, channels = picture.height, picture.width, picture.channels
        features: dict[str, Any] = {
            "image": image,
            "filename": rel.replace(os.sep, "/"),
            "format": fmt,
            "height": height,
            "width": width,
            "channels": channels,
        }
        if self.label_feature is not None:
            features[self.label_feature] = label
        for (name, _), value in zip(self.columns, extras, strict=True):
            features[name] = value
        return features

    def label_of(self, item: Hashable) -> Hashable | None:
        return item[2] if self.label_feature is not None else None  # type: ignore[index]

    def input_roots(self) -> list[str]:
        return [self.root]

    def observe(self, features: dict[str, Any]) -> Hashable:
        return (features["format"], features["height"], features["width"], features["channels"], self._flag)

    def summarized(self, observations: Counter[Hashable]) -> Counter[Hashable]:
        """finish asks of the format, height, width and channels only whether one value was
        seen or more (a raw run lists its shapes: kept whole), and names every flagged
        file: so the flagged ones, and ones carrying the first two values seen of each."""
        if self.image_format == "raw" or len(observations) <= 2:
            return observations
        seen: tuple[set[Any], ...] = (set(), set(), set(), set())
        kept: Counter[Hashable] = Counter()
        for observed, n in observations.items():
            fmt, height, width, channels, flag = observed  # type: ignore[misc]
            keep = flag is not None
            for values, value in zip(seen, (fmt, height, width, channels), strict=True):
                if value not in values and len(values) < 2:
                    values.add(value)
                    keep = True
            if keep:
                kept[observed] = n
        return kept

    def finish(self, observations: Counter[Hashable]) -> list[str]:
        shapes = sorted({(h, w, c) for _, h, w, c, _ in observations})  # type: ignore[misc]
        if self.image_format == "raw" and len(shapes) > 1:
            listed = ", ".join(f"{h}x{w}x{c}" for h, w, c in shapes[:4])
            raise SourceError(
                f"{self.root}: --image-format raw needs one image shape, found {len(shapes)} ({listed}...); "
                "use --resize WxH (and --color rgb, or grayscale, for mixed colour)"
            )
        if self.image_format != "raw" and shapes:
            channels = {c for _, _, c in shapes}
            heights, widths = {h for h, _, _ in shapes}, {w for _, w, _ in shapes}
            spec = self.features["image"]
            self.features["image"] = FeatureSpec.image(
                (
                    heights.pop() if len(heights) == 1 else None,
                    widths.pop() if len(widths) == 1 else None,
                    channels.pop() if len(channels) == 1 and channels <= {1, 3, 4} else spec.shape[2],
                ),
                spec.encoding or _common_format(observations),
            )
        if self.image_format == "raw" and shapes:
            self.raw_shape = shapes[0]
            self.features["image"] = FeatureSpec.raw_image(self.raw_shape)
        flagged = sorted(flag for *_, flag in observations if flag is not None)  # type: ignore[misc]
        if not flagged:
            return []
        whys = ", ".join(sorted({why for why, _ in flagged}))
        files = named(sorted(file for _, file in flagged), "image")
        if self.keep_exact:
            return [f"{self.root}: kept {files} as they are ({whys}): TensorFlow's decoders will not read them upright"]
        return [
            f"{self.root}: re-encoded {files} ({whys}), so that TensorFlow decodes them upright; "
            "--keep-exact keeps their bytes"
        ]

    def sources(self) -> list[dict[str, Any]]:
        from .base import fingerprint

        if self._csv is None:
            return []
        return [fingerprint(self._csv, fs.read_bytes(self._csv))]

    def recorded_options(self) -> dict[str, Any]:
        settings = dict(self._settings)
        if self.raw_shape is not None:  # how to turn the bytes back into pixels (tfr_convert.load, --grid)
            settings["raw_image"] = {"feature": "image", "shape": list(self.raw_shape)}
        settings["decode"] = {
            "max_pixels": self.policy.max_pixels,
            "background": list(self.policy.background),
            "grayscale": self.policy.grayscale,
            "gray_method": self.policy.gray_method,
            "resize": list(self.policy.resize) if self.policy.resize else None,
            "rgb": self.policy.rgb,
            "fit": self.policy.fit,
            "quality": self.quality,
            "chroma": self.chroma,
        }
        return settings


CHUNK_SAMPLE = 64  # files whose sizes set keep mode's chunk size: the first ones, so always the same
KEEP_CHUNK_BYTES = 1 << 20


def _keep_chunk_size(root: str, sample: list[str]) -> int:
    """Items per chunk in keep mode, where a record is about as large as its file: about
    KEEP_CHUNK_BYTES a chunk, from 16 (photos) to 256 (thumbnails, where the cost of
    moving a chunk between processes would otherwise outweigh the images' own). A
    function of the input alone, so the same files give the same chunks (and --resume
    the same batches)."""
    sizes = []
    for rel in sample:
        try:
            sizes.append(os.path.getsize(os.path.join(root, rel)))
        except OSError:
            continue  # gone since the listing: the run names it when it gets there
    return items_per_chunk(sizes, KEEP_CHUNK_BYTES, ImagesConverter.chunk_size, 256)


def _common_format(observations: Counter[Hashable]) -> str | None:
    formats = {fmt for fmt, *_ in observations}  # type: ignore[misc]
    return formats.pop() if len(formats) == 1 and formats <= {"png", "jpeg"} else None
