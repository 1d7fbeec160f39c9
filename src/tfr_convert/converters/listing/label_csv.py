"""A label CSV (`tfr-convert images --labels`, `audio --labels`) read against its folder:
one item per usable row, (relative path, CSV line, label index, the other columns' values).

The path column is named (--path-column), known by name, or the one whose every value
is a file here; --label-column becomes a class label (integers keep their numbers,
anything else is numbered in sorted order); the other columns become features typed by
their values. --headerless-labels matches a one-column CSV line by line to the sorted
files (the face/age tutorial's age.csv). A row that cannot be used is `reject`ed with
its line; a wrong option (a column that is not there) is an OptionError.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ...dataset.splits import SPLIT_NAME
from ...errors import OptionError, SourceError
from ...storage import fs
from . import csvtable
from .folders import IMAGE_SUFFIXES, ImageFolder, named

PATH_COLUMN_NAMES = (
    "path",
    "file",
    "filename",
    "file_name",
    "filepath",
    "file_path",
    "image",
    "image_path",
    "image_file",
    "img",
    "img_path",
    "audio",
    "audio_path",
    "audio_file",
    "recording",
    "wav",
    "sound",
)
# Column names that say "this is the class": a CSV with one and no --label-column is told
LABEL_LIKE = ("label", "labels", "class", "category", "target")
# Integer labels from this value up must be dense enough (at least a quarter of 0..max
# present) to become class indices: ids such as 10000000 would make a table of millions
# of class names.
MAX_SPARSE_LABEL = 1000


class LabelCsv:
    def __init__(
        self,
        folder: ImageFolder,
        csv_path: str,
        delimiter: str | None,
        reserved: set[str],
        reject: Callable[[str, str], None],
        inside: Callable[[str, str], bool],
        noun: str = "image",
        suffixes: tuple[str, ...] = IMAGE_SUFFIXES,
        root_name: str = "IMAGE_DIR",
    ) -> None:
        """reserved: feature names the converter writes itself (no column may take one);
        reject(where, why): a row left out or fatal; inside(rel, where): whether a path
        stays inside the folder (rejecting it if not); noun, suffixes, root_name: what
        the folder holds (its files by suffix), and how the command names the folder."""
        self.folder, self.csv_path, self.delimiter, self.reserved = folder, csv_path, delimiter, reserved
        self.noun, self.suffixes, self.root_name = noun, suffixes, root_name
        self.reject, self.inside = reject, inside
        self.columns: list[tuple[str, str]] = []  # features besides the label: (name, dtype)
        self.labels: dict[str, list[str]] = {}
        self.label_feature: str | None = None
        self.group_of: dict[str, str] = {}  # image -> its --group-column value
        self.warnings: list[str] = []
        self._integer_labels = False
        self._label_lookup: dict[str, int] = {}

    def _resolve(self, path: str, where: str, seen: dict[str, int], line: int) -> str | None:
        """A CSV path made relative to IMAGE_DIR, or None (and a problem) if unusable."""
        if not path:
            self.reject(where, "empty path")
            return None
        if os.path.isabs(path) or re.match(r"^[A-Za-z]:[\\/]", path):
            self.reject(where, f"absolute path {path!r}: paths must be relative to {self.root_name}")
            return None
        rel = os.path.normpath(path.replace("\\", "/"))
        if rel == ".." or rel.startswith(".." + os.sep):
            self.reject(where, f"path {path!r} escapes {self.root_name}")
            return None
        if rel in seen:
            self.reject(where, f"duplicate row: {path!r} is already on line {seen[rel]}")
            return None
        if not self.inside(rel, where):
            return None
        if not self.folder.is_file(rel):
            full = os.path.join(self.folder.root, rel)
            if not self.folder.remote and os.path.islink(full):
                self.reject(where, f"{self.noun} {path!r} is a symlink that loops or leads nowhere")
            else:
                self.reject(where, f"{self.noun} {path!r} not found in {self.folder.root}")
            return None
        seen[rel] = line
        return rel

    def headerless(self) -> list[tuple]:
        table = csvtable.read(self.csv_path, header=False, delimiter=self.delimiter)
        real = (lambda p: p) if self.folder.remote else os.path.realpath
        csv_real = real(self.csv_path)
        files = [f for f in self.folder.files() if real(fs.join(self.folder.root, f)) != csv_real]
        # one CSV line per file, in order; a malformed line still holds its file's place
        lines = sorted([(r.line, r) for r in table.rows] + [(line, reason) for line, reason in table.problems])
        if len(files) != len(lines):
            raise SourceError(
                f"{self.csv_path}: {len(lines)} labels for {len(files)} {self.noun}s in {self.folder.root} "
                "(--headerless-labels matches them one to one, in sorted file order)"
            )
        name = re.sub(r"\W", "_", os.path.splitext(os.path.basename(self.csv_path))[0]) or "label"
        if not re.match(r"[A-Za-z]", name):
            name = f"label_{name}"
        dtype = table.column_type([r.values[0] for r in table.rows])
        self.columns = [(name, dtype)]
        items = []
        for f, (line, row) in zip(files, lines, strict=True):
            where = f"{self.csv_path} line {line}"
            if isinstance(row, str):
                self.reject(where, row)
            elif self.inside(f, where):
                items.append((f, line, None, (table.typed(row.values[0], dtype),)))
        return items

    def with_header(
        self, path_column: str | None, label_column: str | None, split_column: str | None, group_column: str | None
    ) -> tuple[list[tuple], dict[str, str]]:
        table = csvtable.read(self.csv_path, delimiter=self.delimiter)
        for line, reason in table.problems:
            self.reject(f"{self.csv_path} line {line}", reason)
        header = list(table.header)
        path_col = self._path_column(table, path_column)
        for option, col in (
            ("--label-column", label_column),
            ("--split-column", split_column),
            ("--group-column", group_column),
        ):
            if col is not None and col not in header:
                raise OptionError(f"{self.csv_path}: {option} {col!r} is not a column ({self._columns_seen(table)})")
        feature_cols = [c for c in header if c not in (path_col, split_column)]
        for c in feature_cols:
            if c in self.reserved:
                raise SourceError(
                    f"{self.csv_path}: column {c!r} clashes with a feature the converter writes; rename it"
                )
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_./-]*", c):
                raise SourceError(f"{self.csv_path}: column name {c!r} is not usable as a feature name")
        col_index = {c: header.index(c) for c in header}
        dtypes = {c: table.column_type([r.values[col_index[c]] for r in table.rows]) for c in feature_cols}
        if label_column is not None:
            self._label_names(table, col_index[label_column], dtypes[label_column], label_column)
        self.columns = [(c, dtypes[c]) for c in feature_cols if c != label_column]
        named_like_a_label = [c for c in feature_cols if c.lower() in LABEL_LIKE]
        if label_column is None and named_like_a_label:
            c = named_like_a_label[0]
            self.warnings.append(
                f"{self.csv_path}: column {c!r} is kept as a plain {dtypes[c]} feature; give --label-column {c} "
                "to make it a class label with names (TFDS's as_supervised needs one)"
            )
        seen: dict[str, int] = {}
        items, split_of = [], {}
        for row in table.rows:
            where = f"{self.csv_path} line {row.line}"
            split_name = row.values[col_index[split_column]] if split_column else None
            if split_name is not None and not SPLIT_NAME.fullmatch(split_name):
                self.reject(where, f"split {split_name!r} is not a name like train, validation or test")
                continue
            spanning = next((c for c, v in zip(header, row.values, strict=True) if "\n" in v), None)
            if spanning is not None:  # a label CSV has no multi-line values: a quote left open swallowed a row
                self.reject(where, f"the {spanning} value runs over several lines (a quote left open?)")
                continue
            rel = self._resolve(row.values[col_index[path_col]], where, seen, row.line)
            if rel is None:
                continue
            label = self._label_index(row.values[col_index[label_column]]) if label_column else None
            extras = tuple(table.typed(row.values[col_index[c]], d) for c, d in self.columns)
            items.append((rel, row.line, label, extras))
            if group_column is not None:
                self.group_of[rel] = row.values[col_index[group_column]]
            if split_name is not None:
                split_of[rel] = split_name
        self._warn_unlisted(seen)
        return items, split_of

    def _warn_unlisted(self, listed: dict[str, int]) -> None:
        """Files under the folder that no CSV row names: left out, and said so once."""
        unlisted = [
            f for f in self.folder.files() if f.lower().endswith(self.suffixes) and os.path.normpath(f) not in listed
        ]
        if unlisted:
            self.warnings.append(f"{self.folder.root}: {named(unlisted, self.noun)} not in {self.csv_path}, left out")

    def _path_column(self, table: csvtable.Table, chosen: str | None) -> str:
        header = list(table.header)
        if chosen is not None:
            if chosen not in header:
                raise OptionError(
                    f"{table.path}: --path-column {chosen!r} is not a column ({self._columns_seen(table)})"
                )
            return chosen
        by_name = [c for c in header if c.lower() in PATH_COLUMN_NAMES]
        if len(by_name) == 1:
            return by_name[0]
        for i, c in enumerate(header):  # else: the column whose every value is a file here
            if all(self.folder.is_file(os.path.normpath(r.values[i].replace("\\", "/"))) for r in table.rows):
                return c
        if len(header) == 1:  # one column, no paths: another separator, or the tutorial's one value per image
            lines = "\n".join([header[0], *(r.values[0] for r in table.rows[:20])])
            other = csvtable.detect_delimiter(lines)
            # (the detector falls back on ","; it counts only where the header splits on it)
            if other != table.delimiter and len(header[0].split(other)) > 1:
                flag = "tab" if other == "\t" else other
                raise OptionError(
                    f"{table.path}: one column, read with separator {csvtable.delimiter_name(table.delimiter)}, "
                    f"but its lines split on {csvtable.delimiter_name(other)}: use --delimiter '{flag}'"
                )
            raise OptionError(
                f"{table.path}: one column and no {self.noun} paths in it; if it holds one value per {self.noun} in "
                "sorted file order (like the face/age tutorial's age.csv), add --headerless-labels"
            )
        raise OptionError(
            f"{table.path}: cannot tell which column holds the {self.noun} paths ({self._columns_seen(table)}); "
            "use --path-column, or --delimiter if the separator is wrong"
        )

    @staticmethod
    def _columns_seen(table: csvtable.Table) -> str:
        return f"columns, read with separator {csvtable.delimiter_name(table.delimiter)}: {', '.join(table.header)}"

    def _label_names(self, table: csvtable.Table, index: int, dtype: str, column: str) -> None:
        values = [r.values[index] for r in table.rows]
        # Non-negative integer classes keep their numbers as indices; anything else
        # is numbered in sorted order of its distinct values.
        self._integer_labels = dtype == "int64" and min(int(v) for v in values) >= 0
        if self._integer_labels:
            top, distinct = max(int(v) for v in values), len(set(values))
            if top >= MAX_SPARSE_LABEL and top + 1 > 4 * distinct:
                raise SourceError(
                    f"{table.path}: --label-column {column}: integers up to {top} but only {distinct} distinct "
                    f"values; as class indices that is {top + 1} class names. Leave out --label-column to keep "
                    f"{column} as a plain integer feature"
                )
        names = (
            [str(i) for i in range(max(int(v) for v in values) + 1)] if self._integer_labels else sorted(set(values))
        )
        self.label_feature = column
        self.labels = {column: names}
        self._label_lookup = {n: i for i, n in enumerate(names)}

    def _label_index(self, value: str) -> int:
        return int(value) if self._integer_labels else self._label_lookup[value]
