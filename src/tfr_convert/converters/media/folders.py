"""What the converters of a folder of recordings or clips share: their files labelled
by class folders (class_folders.py) or by a labels CSV (label_csv.py), split by split
folders, a CSV column or --split's fractions, and named in messages by their path and
CSV line.

A converter using MediaFolder sets `root`, `context`, `_o` (options with the fields of
Labelling), `_folder` (an ImageFolder of root), `warnings` and `_group_of`, and says
which files are its own (SUFFIXES), what one is called (NOUN) and which feature names a
CSV column may not take (RESERVED).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import IO, Any

from ...dataset.features import FeatureSpec
from ...dataset.splits import SplitSpec, split_by_ratio
from ...errors import SourceError
from ...skips import Skips
from ...storage import fs
from ..base import Options, fingerprint
from ..listing.class_folders import class_folders
from ..listing.folders import FileItems, ImageFolder, dataset_name
from ..listing.label_csv import LabelCsv


@dataclass(frozen=True)
class Labelling(Options):
    """How files are labelled and split: the options `audio` and `video` share."""

    split: SplitSpec | None = None
    stratify: bool = False
    labels_csv: str | None = None
    delimiter: str | None = None  # None: detected
    path_column: str | None = None
    label_column: str | None = None
    split_column: str | None = None
    group_column: str | None = None

    def problem(self) -> str | None:
        csv_only = (self.path_column, self.label_column, self.split_column, self.group_column, self.delimiter)
        if self.labels_csv is None and any(csv_only):
            return "--path-column, --label-column, --split-column, --group-column and --delimiter need --labels"
        if self.group_column and self.split is None:
            return "--group-column keeps groups whole across --split's fractions: give --split"
        if self.split is not None and self.split_column is not None:
            return "give --split or --split-column, not both"
        return None

    def described(self) -> dict[str, Any]:
        return {
            "split": self.split.describe() if self.split else None,
            "stratify": self.stratify,
            "labels_csv": self.labels_csv,
            "path_column": self.path_column,
            "label_column": self.label_column,
            "split_column": self.split_column,
            "group_column": self.group_column,
            "delimiter": self.delimiter,
        }


class MediaFolder(FileItems):
    SUFFIXES: tuple[str, ...] = ()
    NOUN = "file"
    RESERVED: frozenset[str] = frozenset()

    context: Any
    _o: Any
    skipped: Skips
    dataset_name: str
    _folder: ImageFolder
    warnings: list[str]
    _group_of: dict[str, str]
    _real_root: str | None  # None for a remote ROOT
    features: dict[str, FeatureSpec]
    supervised_keys: dict[str, Any] | None
    reject: Callable[[str, str], None]  # the Converter's

    def _open(self, root: str, options: Labelling) -> tuple[list[tuple], dict[str, str]]:
        """Takes the (checked) options, reads ROOT and lists its files: `_listed`'s answer."""
        self._o, self.root = options, root
        self._folder = ImageFolder(root, self.context.out, self.context.fill_in_parts)
        self._real_root = None if self._folder.remote else self._folder.real_root
        self.dataset_name = dataset_name(root)
        self._group_of = {}
        return self._listed()

    def _listed(self) -> tuple[list[tuple], dict[str, str]]:
        """((relative path, CSV line or None, label, the CSV's other values) of each file,
        {file: split} from split folders or --split-column)."""
        o = self._o
        self.label_feature: str | None = None
        self.columns: list[tuple[str, str]] = []  # a CSV's other columns: (feature, dtype)
        if o.labels_csv is None:
            files_listed = class_folders(
                self._folder, self.SUFFIXES, self.NOUN, self.reject, self.warnings, self._inside
            )
            self.labels = {"label": files_listed.classes} if files_listed.classes else {}
            self.label_feature = "label" if files_listed.classes else None
            return [(rel, None, label, ()) for rel, label in files_listed.files], files_listed.split_of
        table = LabelCsv(
            self._folder, o.labels_csv, o.delimiter, set(self.RESERVED), self.reject, self._inside, self.NOUN,
            self.SUFFIXES, "ROOT",
        )  # fmt: skip
        listed, split_of = table.with_header(o.path_column, o.label_column, o.split_column, o.group_column)
        self.columns, self.labels, self.label_feature = table.columns, table.labels, table.label_feature
        self._group_of = table.group_of
        self.warnings += table.warnings
        return listed, split_of

    def _read(self, rel: str) -> bytes:
        """A file's bytes, read where it really is under ROOT (as listed)."""
        try:
            return fs.read_bytes(fs.join(self.root, rel), inside=self._real_root)
        except OSError as e:
            raise SourceError(f"cannot read: {e.strerror or e}") from None

    def _open_file(self, rel: str) -> IO[bytes]:
        """A file under ROOT, opened where it really is (as listed): read in pieces, never whole."""
        try:
            return fs.open_input(fs.join(self.root, rel), inside=self._real_root)
        except OSError as e:
            raise SourceError(f"cannot read: {e.strerror or e}") from None

    def _label_features(self, main: str) -> None:
        """The label's ClassLabel (paired with the `main` feature as the supervised keys)
        and the CSV's other columns, after the converter's own features."""
        if self.label_feature is not None:
            self.features[self.label_feature] = FeatureSpec.class_label(len(self.labels[self.label_feature]))
            self.supervised_keys = {"tuple": {"items": [{"featureKey": main}, {"featureKey": self.label_feature}]}}
        for name, dtype in self.columns:
            self.features[name] = FeatureSpec.tensor(dtype)

    def _labelled(self, features: dict[str, Any], label: Any, extras: tuple) -> dict[str, Any]:
        """An item's features with its label and its CSV values."""
        if self.label_feature is not None:
            features[self.label_feature] = label
        for (name, _), value in zip(self.columns, extras, strict=True):
            features[name] = value
        return features

    def _inside(self, rel: str, where: str) -> bool:
        real = self._folder.outside(rel)
        if real is not None:
            self.reject(where, f"resolves to {real}, outside ROOT (symlink)")
            return False
        return True

    def _split(self, items: list[tuple], split_of: dict[str, str]) -> dict[str, list[tuple]]:
        o = self._o
        if o.stratify and o.split is not None and not self.labels:
            raise SourceError(f"{self.root}: --stratify needs labels (class folders or --label-column)")
        if split_of and o.split is None:
            out: dict[str, list[tuple]] = {}
            for item in items:
                out.setdefault(split_of[item[0]], []).append(item)
            return out
        if o.split is None:
            return {"train": items}
        if split_of:
            self.warnings.append(
                f"{self.root}: --split re-splits the {self.NOUN}s of its split folders by its fractions"
            )
        stratum = (lambda item: item[2]) if o.stratify else None
        groups = [self._group_of[item[0]] for item in items] if o.group_column else None
        splits, said = split_by_ratio(
            items, self.key, o.split, self.context.seed, stratum, groups, self.context.per_item_splits
        )
        self.warnings += [said] if said else []
        return splits

    def describe(self, item: Hashable) -> str:
        rel, line = item[0], item[1]  # type: ignore[index]
        path = fs.join(self.root, rel)
        return f"{path} ({self._o.labels_csv} line {line})" if line is not None else path

    def label_of(self, item: Hashable) -> Hashable | None:
        return item[2] if self.label_feature is not None else None  # type: ignore[index]

    def input_roots(self) -> list[str]:
        return [self.root]

    def sources(self) -> list[dict[str, Any]]:
        """The labels CSV (the files are the items: their stats are recorded)."""
        if self._o.labels_csv is None:
            return []
        return [fingerprint(self._o.labels_csv, fs.read_bytes(self._o.labels_csv))]
