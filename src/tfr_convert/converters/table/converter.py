"""Tables in (`tfr-convert table`): one Example per row of CSV / TSV, Parquet, JSON
Lines, Arrow / Feather files or Hugging Face `save_to_disk` folders.

Every SRC is opened while listing (files.py): read whole and the parts joined
into one Arrow table, or, local Parquet files, read a column or a run of rows at a time
(rows.py). Each column becomes a feature by its Arrow type (arrow_features.py).
Whatever can be known before writing is checked then, so a bad table writes nothing:
a null where --nulls error forbids one, a label, split or key that is missing, a key
seen twice, a label outside its names. Items are row numbers (a split in source order
is a range); a batch of rows is taken at once and turned into features column by column.

Options name columns as the table names them (`a/b` for a struct's field); --rename
changes the feature's name only.
"""

from __future__ import annotations

import bisect
import json
import os
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...dataset.features import FeatureSpec
from ...dataset.naming import HF_FEATURES
from ...dataset.rows import GroupCodes, RowNumbers, RowStrata, row_array
from ...dataset.splits import SplitSpec, split_by_ratio
from ...dataset.wire.example import INT64
from ...dataset.wire.example_columns import FeatureColumn
from ...errors import OptionError, SourceError
from ...optional import pyarrow
from ..base import ColumnBatch, Converter, Options, SourceContext
from . import arrow_features
from . import files as table_files
from . import rows as table_rows
from .arrow_features import Column, NullInside
from .arrow_numpy import from_numpy, strings, to_numpy
from .columns import feature_column
from .pictures import ImagePolicy, TableImages, image_column
from .splits import cell_text, coded, named_splits, narrow_ints

NULLS = ("error", "omit", "fill")
COLUMNAR_BATCH = 16384  # rows per batch when they are encoded column by column
WIDE_TABLE = 8  # columns per row in a batch past which its rows are encoded one by one
# Integer labels from this value up must be dense enough (a quarter of 0..max present)
# to be class indices, as for an images CSV's labels.
MAX_SPARSE_LABEL = 1000


@dataclass(frozen=True)
class TableOptions(Options):
    """What `tfr-convert table` takes besides its sources and the shared options."""

    delimiter: str | None = None  # a CSV's separator (None: detected)
    columns: tuple[str, ...] = ()  # only these columns become features (() all)
    drop: tuple[str, ...] = ()  # these do not
    rename: tuple[tuple[str, str], ...] = ()  # (column, feature name)
    nulls: str = "error"  # error, omit (the feature absent in that Example), fill (a typed default)
    label_column: str | None = None  # becomes a ClassLabel
    label_names: tuple[str, ...] | None = None  # the names of an integer label column's classes
    split: SplitSpec | None = None
    stratify: bool = False  # --split keeps the label column's proportions
    group_column: str | None = None  # --split keeps rows sharing this column's value together
    split_column: str | None = None  # each row's split (the column is not written)
    key_column: str | None = None  # each row's unique key (default: its position)
    image_columns: tuple[str, ...] = ()  # columns of pictures (Hugging Face Image features are, unnamed)
    images: ImagePolicy = field(default_factory=ImagePolicy)

    def problem(self) -> str | None:
        if self.images.problem() is not None:
            return self.images.problem()
        if self.nulls not in NULLS:
            return f"--nulls {self.nulls}: choose {', '.join(NULLS)}"
        if self.stratify and self.label_column is None:
            return "--stratify keeps the label column's proportions: give --label-column"
        if self.split is not None and self.split_column is not None:
            return "--split and --split-column both say where rows go: give one"
        if self.group_column is not None and self.split is None:
            return "--group-column keeps groups whole in --split's fractions: give --split"
        if self.label_names is not None and self.label_column is None:
            return "--label-names names the classes of --label-column: give it"
        if self.columns and self.drop:
            return "--columns and --drop both choose columns: give one"
        return None


def _some(names: Sequence[str] | dict[str, Any], most: int = 20) -> str:
    """Names for a message: the first `most`, and how many more."""
    names = list(names)
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


#: what planning a row holds in memory, at most (its place in the plan, its split, its
#: rank, its key, its label): a table whose row count would need more than the machine's
#: memory is refused before anything is allocated
BYTES_PER_ROW = 64
INT64_MAX = (1 << 63) - 1


def _check_rows(parts: list[table_files.Part]) -> None:
    """A row count no machine here could plan (a footer that claims more rows than the
    file holds) is an error naming the file, not an allocation of terabytes."""
    rows = sum(p.table.num_rows for p in parts)
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if rows * BYTES_PER_ROW > memory:
        largest = max(parts, key=lambda p: p.table.num_rows)
        raise SourceError(
            f"{largest.path}: {largest.table.num_rows} rows{f' ({rows} in all)' if len(parts) > 1 else ''}: "
            f"planning them takes about "
            f"{rows * BYTES_PER_ROW / 2**30:.0f} GiB, more than this machine's {memory / 2**30:.0f} GiB of memory "
            "(does the file claim more rows than it holds?)"
        )


def _unsigned_64(t: Any) -> bool:
    """A uint64 column, or a list (of lists) of them."""
    pa = pyarrow("tfr-convert table")
    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        t = t.value_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_uint64(t)


def _pandas_index(schema: Any, options: TableOptions) -> list[str]:
    """The columns a pandas DataFrame's index became (to_parquet, pa.Table.from_pandas:
    `__index_level_0__`, or the index's name), by the schema's pandas metadata; none that
    an option names."""
    try:
        index = json.loads((schema.metadata or {}).get(b"pandas", b"{}")).get("index_columns") or []
    except (ValueError, AttributeError, RecursionError):
        return []
    named = {*options.columns, options.label_column, options.split_column, options.group_column, options.key_column}
    return (
        [c for c in index if isinstance(c, str) and c in schema.names and c not in named]
        if isinstance(index, list)
        else []
    )


def _check_nesting(part: table_files.Part) -> None:
    """A column nested past MAX_NESTING is refused before anything walks its type."""
    for column in part.table.schema:
        depth = arrow_features.nesting(column.type)
        if depth > arrow_features.MAX_NESTING:
            raise SourceError(
                f"{part.path}: column {column.name!r} nests {depth} levels deep; a table holds at most "
                f"{arrow_features.MAX_NESTING}"
            )


class TableConverter(Converter):
    command = "table"
    description = "Rows of a table, one Example each."

    def __init__(
        self,
        paths: list[str] | table_files.Opened,
        options: TableOptions | None = None,
        context: SourceContext | None = None,
    ):
        """`paths`: the SRCs, or tables already opened (in memory, from tfr_convert.write())."""
        pyarrow("tfr-convert table")
        self._o = options = self.begin(options or TableOptions(), context)
        opened = (
            paths if isinstance(paths, table_files.Opened) else table_files.open_all(list(paths), options.delimiter)
        )
        self._read_parts(opened.parts)
        source = table_rows.Joined([part.table for part in self._parts], lambda: table_files.joined(self._parts))
        exported = [p.exported for p in self._parts]
        self.dataset_name = "table" if isinstance(paths, table_files.Opened) else table_files.dataset_name_of(paths[0])
        if all(exported):  # tfr-export's Parquet files: the dataset comes back as it was
            self.keeps_order = True
            self.dataset_name = exported[0].get("name") or self.dataset_name
        flat = self._lay_out_columns(source, opened.hf_features)
        self._hf_carried = self._carried(list(flat), opened.hf_features)
        _check_rows(self._parts)
        ok = np.ones(self._starts[-1], bool)  # rows kept (under --on-error skip a bad one is not)
        ok &= self._labels_checked(flat, opened.hf_features, exported[0] if all(exported) else None)
        ok &= self._values_checked(flat)
        self._declare_features()
        if all(exported):
            self._carry_features(exported[0].get("features"))
        self._keys = self._key_values(flat, ok)
        sources = [c.source for c in self._columns] + [p.source for p in self._images.columns]
        self._held = source.rows(flat, sources)
        # what the manifest says of each input, now: their tables are let go (the rows
        # written are in self._held, one copy, or in the Parquet files)
        self._sources = [table_files.described(part) for part in self._parts]
        for part in self._parts:
            part.table = None
        flat.let_go()  # (a label column read whole: not held while the rows are planned)
        self._splits = self._split(flat, ok)
        # rows encoded column by column cost little each: large batches spread a batch's
        # fixed cost; a row with pictures is a picture's work
        self.chunk_size = 64 if self._images.columns else COLUMNAR_BATCH

    def _carried(self, flat: list[str], hf_features: dict[str, Any]) -> dict[str, Any]:
        """The Hugging Face features of the columns that become features whole, under their
        own names (every field of a struct kept, none renamed), for `tfr-export --to hf`
        to give back; not those of the label or split column or of a renamed column."""
        kept = {c.source: c.name for c in self._columns} | {p.source: p.name for p in self._images.columns}
        carried = {}
        for top, feature in hf_features.items():
            under = [s for s in flat if s == top or s.startswith(top + "/")]
            if under and all(kept.get(s) == s for s in under):
                carried[top] = feature
        return carried

    def _read_parts(self, parts: list[Any]) -> None:
        """The tables' parts, checked for nesting, their pandas index left out (said), where
        each starts among the rows, and the rows their reader rejected."""
        self._parts = parts
        for part in parts:
            _check_nesting(part)
        self._index_columns = _pandas_index(parts[0].table.schema, self._o)
        if self._index_columns:
            self.warnings.append(
                f"{parts[0].path}: left out the pandas index ({', '.join(self._index_columns)}): an index is "
                "no column of the data (df.reset_index() before writing keeps it as one)"
            )
        self._starts = np.cumsum([0] + [p.table.num_rows for p in parts]).tolist()
        for part in parts:
            for line, why in part.problems:
                self.reject(f"{part.path}: line {line}", why)

    def _lay_out_columns(self, source: table_rows.Joined, hf_features: Any) -> Any:
        """The table's columns, flattened: which are pictures, which become features under
        which names (--rename); the flat columns."""
        options = self._o
        pictures = self._picture_columns(source.column_names, hf_features)
        flat = source.columns(set(pictures))
        self._check_named(flat)
        renamed = dict(options.rename)
        self._images = TableImages(
            [image_column(s, renamed.get(s, s), flat.type_of(s), options.images.root) for s in pictures],
            options.images,
        )
        self._columns = [
            arrow_features.column_of(renamed.get(source, source), source, flat.type_of(source))
            for source in self._chosen(flat)
            if source not in (options.split_column, options.label_column, *pictures)
        ]
        self.nested_features = any("/" in c.name for c in self._columns)
        return flat

    def _labels_checked(self, flat: Any, hf_features: Any, exported: dict[str, Any] | None) -> np.ndarray:
        """The rows whose class labels are sound: ClassLabel columns (of a Hugging Face
        dataset, or of our own export) within their names, and the --label-column's."""
        self.labels: dict[str, list[str]] = {}
        self._class_labels = {}  # feature -> names, for ClassLabel features
        self._label_values: np.ndarray | None = None  # the label column's class index per row
        ok = np.ones(self._starts[-1], bool)
        self._hf_labels(hf_features)
        for name, names in (exported.get("class_names") or {}).items() if exported else ():
            if name in {c.name for c in self._columns if c.kind == "int" and not c.shape}:
                self._class_labels[name] = [str(n) for n in names]
        for column in self._columns:
            if column.name in self._class_labels:
                ok &= self._named_classes(column, flat[column.source], len(self._class_labels[column.name]))
        if self._o.label_column is not None:
            ok &= self._label(flat[self._o.label_column], self._o.label_column, hf_features)
        return ok

    def _values_checked(self, flat: Any) -> np.ndarray:
        """The rows whose values each feature can hold (nulls as --nulls says, no null inside
        a list, unsigned 64-bit within int64), and which features may be absent; float64
        values float32 changes are said."""
        pa = pyarrow("tfr-convert table")
        options = self._o
        ok = np.ones(self._starts[-1], bool)
        absent_allowed = set()
        for column in self._columns:
            nulls = flat.null_count(column.source)
            if nulls and options.nulls == "omit":
                absent_allowed.add(column.name)
            elif nulls and options.nulls == "error":
                ok &= self._no_nulls(flat[column.source], column.source, "--nulls omit or fill keeps the row")
            if column.shape:
                ok &= self._no_null_inside(column, flat[column.source])
            if _unsigned_64(flat.type_of(column.source)):
                ok &= self._fits_int64(column, flat[column.source])
            lost = (
                arrow_features.float32_losses(flat[column.source])
                if pa.types.is_float64(flat.type_of(column.source))
                else 0
            )
            if lost:
                self.warnings.append(
                    f"column {column.source!r}: {lost} float64 value{'s' if lost > 1 else ''} changed when stored "
                    "as float32 (a TFRecord float list is 32-bit)"
                )
        for picture in self._images.columns:
            nulls = flat.null_count(picture.source)
            if nulls and options.nulls == "omit":
                absent_allowed.add(picture.name)
            elif nulls:
                ok &= self._no_nulls(
                    flat[picture.source], picture.source, "--nulls omit leaves the picture out of the row's Example"
                )
        self._absent_allowed = frozenset(absent_allowed)
        self.optional_features = self._absent_allowed
        return ok

    def _declare_features(self) -> None:
        """Each column's feature (a ClassLabel where it has class names), the pictures', the
        label column's; and the labels' names."""
        self.features: dict[str, FeatureSpec] = {}
        for column in self._columns:
            if column.name in self._class_labels:
                self.features[column.name] = FeatureSpec.class_label(len(self._class_labels[column.name]))
            else:
                self.features[column.name] = column.spec(column.name in self._absent_allowed)
        self.features |= {
            name: spec.of_absent() if name in self._absent_allowed else spec
            for name, spec in self._images.features().items()
        }
        if self._o.label_column is not None:
            name = dict(self._o.rename).get(self._o.label_column, self._o.label_column)
            self.features[name] = FeatureSpec.class_label(len(self._class_labels[name]))
            self._label_name = name
        self.labels = dict(self._class_labels)

    # ------------------------------------------------------------ listing

    def _carry_features(self, described: Any) -> None:
        """The exported dataset's own feature descriptions (an Image, a Text...), where each
        is one column as it is (a nested FeaturesDict's keys are not: those keep the table's)."""
        if not isinstance(described, dict) or set(described) != set(self.features):
            return
        if any(not isinstance(d, dict) or "featuresDict" in d or "sequence" in d for d in described.values()):
            return
        self.features = {name: FeatureSpec.from_tfds(described[name]) for name in self.features}

    def _picture_columns(self, names: list[str], hf_features: dict[str, Any]) -> list[str]:
        """--image-column's columns, and every Hugging Face Image feature not left out."""
        o = self._o
        named = list(o.image_columns)
        for name in names:
            described = hf_features.get(name)
            if isinstance(described, dict) and described.get("_type") == "Image" and name not in named:
                if name not in o.drop and (not o.columns or name in o.columns):
                    named.append(name)
        for name in named:
            if name not in names:
                raise OptionError(f"no column {name!r} in {self._parts[0].path} (its columns: {', '.join(names)})")
        return named

    def _chosen(self, flat: dict[str, Any]) -> list[str]:
        o = self._o
        if o.columns:
            wanted = set(o.columns) | {c for c in (o.label_column,) if c}
            return [name for name in flat if name in wanted or name.split("/")[0] in wanted]
        dropped = {*o.drop, *self._index_columns}
        return [name for name in flat if name not in dropped and name.split("/")[0] not in dropped]

    def _check_named(self, flat: dict[str, Any]) -> None:
        o = self._o
        tops = {name.split("/")[0] for name in flat}
        named = [*o.columns, *o.drop, *(old for old, _ in o.rename)]
        named += [c for c in (o.label_column, o.split_column, o.group_column, o.key_column) if c]
        for name in named:
            if name not in flat and name not in tops:
                raise OptionError(f"no column {name!r} in {self._parts[0].path} (its columns: {_some(flat)})")
        renamed = dict(o.rename)
        features = Counter(renamed.get(s, s) for s in self._chosen(flat) if s != o.split_column)
        twice = sorted(f for f, n in features.items() if n > 1)
        if twice:
            raise OptionError(f"--rename gives two columns the feature name {twice[0]!r}")

    def _hf_labels(self, hf_features: dict[str, Any]) -> None:
        """A Hugging Face ClassLabel keeps its names."""
        renamed = dict(self._o.rename)
        for column in self._columns:
            described = hf_features.get(column.source)
            if isinstance(described, dict) and described.get("_type") == "ClassLabel" and column.kind == "int":
                names = [str(n) for n in described.get("names") or []]
                if names and not column.shape:
                    self._class_labels[renamed.get(column.source, column.source)] = names

    def _label(self, array: Any, source: str, hf_features: dict[str, Any]) -> np.ndarray:
        """The label column's class indices (kept in _label_values); the rows it leaves usable."""
        pa = pyarrow("tfr-convert table")
        import pyarrow.compute as pc

        name = dict(self._o.rename).get(source, source)
        t = array.type.value_type if pa.types.is_dictionary(array.type) else array.type
        if pa.types.is_dictionary(array.type):
            array = pc.cast(array, t)
        ok = self._no_nulls(array, source, "a label names a class: give every row one")
        described = hf_features.get(source)
        hf_names = described.get("names") if isinstance(described, dict) else None
        if pa.types.is_integer(t):
            values = narrow_ints(array)
            if hf_names and self._o.label_names is None:
                names = [str(n) for n in hf_names]
                ok &= self._no_nulls(from_numpy(values, values >= 0), source, "")
            elif self._o.label_names is not None:
                names = list(self._o.label_names)
            else:
                # (no copy of the kept rows' labels: at ten million rows each is 80 MB)
                top = int(values.max(initial=np.iinfo(values.dtype).min, where=ok)) if ok.any() else 0
                if top >= MAX_SPARSE_LABEL and (distinct := len(np.unique(values[ok]))) * 4 < top + 1:
                    raise SourceError(
                        f"--label-column {source}: integers up to {top} but only {distinct} distinct values; as "
                        f"class indices that is {top + 1} class names: give --label-names, or leave out --label-column"
                    )
                names = [str(i) for i in range(top + 1)]
            bad = ok & ((values < 0) | (values >= len(names)))
            for row in np.flatnonzero(bad).tolist():
                self.reject(self.describe(row), f"label {values[row]} is not a class index 0..{len(names) - 1}")
            ok &= ~bad
            self._label_values = np.where(ok, values, 0)
        elif pa.types.is_boolean(t):
            if self._o.label_names is not None:
                raise OptionError(f"--label-names names integer labels; --label-column {source} holds booleans")
            names = ["false", "true"]
            self._label_values = to_numpy(pc.cast(array, pa.int64()), 0)
        elif arrow_features.scalar_kind(t) == "bytes" and not pa.types.is_decimal(t):
            if self._o.label_names is not None:
                raise OptionError(f"--label-names names integer labels; --label-column {source} holds text")
            texts = pc.cast(array, pa.string()) if not pa.types.is_string(t) else array
            empty = to_numpy(pc.binary_length(texts), -1) == 0  # (pc.equal with a str would import pandas)
            for row in np.flatnonzero(empty & ok).tolist():  # a class has a name: an empty cell names none
                self.reject(
                    self.describe(row), f"column {source!r} is empty: a label names a class: give every row one"
                )
            ok &= ~empty
            names = sorted(v for v in pc.unique(texts).to_pylist() if v is not None and v != "")
            self._label_values = to_numpy(pc.index_in(texts, value_set=strings(names)), 0)
        else:
            raise OptionError(f"--label-column {source} is of type {t}: a label is an integer, a boolean or a text")
        self._class_labels[name] = names
        # held the whole run, one per row: as narrow as the class count allows
        self._label_values = self._label_values.astype(np.min_scalar_type(max(len(names) - 1, 0)), copy=False)
        return ok

    def _no_nulls(self, array: Any, source: str, hint: str) -> np.ndarray:
        """The rows where a column has a value; each null row rejected (naming the column)."""
        valid = to_numpy(array.is_valid()) if array.null_count else np.ones(len(array), bool)
        for row in np.flatnonzero(~valid).tolist():
            self.reject(self.describe(row), f"column {source!r} is null{': ' + hint if hint else ''}")
        return valid

    def _no_null_inside(self, column: Column, array: Any) -> np.ndarray:
        import pyarrow.compute as pc

        flat = pc.list_flatten(array)
        if column.shape and len(column.shape) == 2:
            flat = pc.list_flatten(flat)
        if not flat.null_count:
            return np.ones(len(array), bool)
        ok = np.ones(len(array), bool)
        for row, value in enumerate(arrow_features.values(column, array)):
            if isinstance(value, NullInside):
                self.reject(self.describe(row), f"column {column.source!r} holds a list with a null in it")
                ok[row] = False
        return ok

    def _named_classes(self, column: Column, array: Any, count: int) -> np.ndarray:
        """Rows whose class index (a ClassLabel's, kept from the source) names one of its
        `count` classes; each other one rejected, naming its value (a GLUE-style split
        holds -1 for "no label")."""
        values = narrow_ints(array)
        valid = to_numpy(array.is_valid()) if array.null_count else np.ones(len(array), bool)
        bad = valid & ((values < 0) | (values >= count))
        for row in np.flatnonzero(bad).tolist():
            self.reject(
                self.describe(row),
                f"column {column.source!r} holds {values[row]}, which is none of its {count} class names "
                f"(0..{count - 1})",
            )
        return ~bad

    def _fits_int64(self, column: Column, array: Any) -> np.ndarray:
        """Rows whose uint64 values all fit int64, the widest integer a feature holds;
        each other one rejected, naming its value."""
        import pyarrow.compute as pc

        values, rows = array, None
        if column.shape:
            rows = to_numpy(pc.list_parent_indices(array))
            values = pc.list_flatten(array)
            if len(column.shape) == 2:
                rows = rows[to_numpy(pc.list_parent_indices(values))]
                values = pc.list_flatten(values)
        pa = pyarrow("tfr-convert table")
        if pa.types.is_dictionary(values.type):
            values = pc.cast(values, values.type.value_type)
        over = to_numpy(pc.fill_null(pc.greater(values, pa.scalar(INT64_MAX, pa.uint64())), False))
        ok = np.ones(len(array), bool)
        for at in np.flatnonzero(over):
            row = int(at if rows is None else rows[at])
            if ok[row]:
                value = values[int(at)].as_py()
                self.reject(
                    self.describe(row),
                    f"column {column.source!r} holds {value}, past int64 (the widest integer a feature holds): "
                    "--drop the column, or store it as text",
                )
                ok[row] = False
        return ok

    def _key_values(self, flat: dict[str, Any], ok: np.ndarray) -> list[str] | None:
        """Each row's --key-column value as text, after checking they are unique (None: keys are positions)."""
        source = self._o.key_column
        if source is None:
            return None
        ok &= self._no_nulls(flat[source], source, "a key names one row")
        keys = [cell_text(v) for v in flat[source].to_pylist()]
        first: dict[str, int] = {}
        for row, key in enumerate(keys):
            if not ok[row]:
                continue
            seen = first.setdefault(key, row)
            if seen != row:
                raise SourceError(
                    f"{self.describe(seen)} and {self.describe(row)} have one --key-column {source} value, {key!r}: "
                    "a key names one row"
                )
        return keys

    def _split(self, flat: dict[str, Any], ok: np.ndarray) -> dict[str, Sequence[int]]:
        o = self._o
        if o.split_column is not None:
            ok &= self._no_nulls(flat[o.split_column], o.split_column, "each row needs a split")
            return named_splits(flat[o.split_column], ok, self.describe, f"--split-column {o.split_column}")
        runs: dict[str, list[range | np.ndarray]] = {}
        for number, part in enumerate(self._parts):
            start, stop = self._starts[number], self._starts[number + 1]
            kept = ok[start:stop]
            runs.setdefault(part.split or "train", []).append(
                range(start, stop) if kept.all() else np.flatnonzero(kept) + start
            )
        splits = {split: table_rows.joined_rows(split_rows) for split, split_rows in runs.items()}
        del runs
        if o.split is None:
            return splits
        if len(splits) > 1:
            self.warnings.append(f"--split re-splits the rows of the source's splits ({', '.join(splits)})")
        rows: Sequence[int] = (
            next(iter(splits.values()))
            if len(splits) == 1
            else RowNumbers(np.concatenate([row_array(split_rows) for split_rows in splits.values()]))
        )
        labels = self._label_values
        groups = None
        if o.group_column is not None:
            ok_groups = self._no_nulls(flat[o.group_column], o.group_column, "each row needs a group")
            codes, texts = coded(flat[o.group_column])
            if not (isinstance(rows, range) and rows == range(len(codes)) and ok_groups.all()):  # (else: as they are)
                held = row_array(rows)
                held = held[ok_groups[held]]
                rows, codes = RowNumbers(held), codes[held]
            groups = GroupCodes(codes, texts)
        stratum = RowStrata(labels) if o.stratify and labels is not None else None
        split_rows, said = split_by_ratio(
            rows, self.key, o.split, self.context.seed, stratum, groups, self.context.per_item_splits
        )
        self.warnings += [said] if said else []
        return split_rows

    # ------------------------------------------------------------ the Converter interface

    def source_splits(self) -> dict[str, list[Hashable]]:
        return self._splits

    def key(self, item: Hashable) -> str:
        return self._keys[item] if self._keys is not None else str(item)  # type: ignore[index]

    def describe(self, item: Hashable) -> str:
        row = int(item)  # type: ignore[call-overload]
        number = bisect.bisect_right(self._starts, row) - 1
        part = self._parts[number]
        within = row - self._starts[number]
        if part.lines is not None:
            return f"{part.path}: line {part.lines[within]}"
        return f"{part.path}: row {within}"

    def features_of(self, item: Hashable) -> dict[str, Any]:
        row = self._rows([item])[0]
        if self._images.columns:
            pictures = self._held.slice(int(item), 1).select([p.source for p in self._images.columns])  # type: ignore[call-overload]
            row |= self._images.values(pictures.to_pylist()[0])
        return row

    def planned(self, plan: dict[str, Sequence[Hashable]]) -> None:
        if isinstance(self._held, table_rows.ParquetRows) and not all(isinstance(i, range) for i in plan.values()):
            self._held = self._held.spilled(plan, self._starts[-1], self.context.fill_in_parts)  # type: ignore[arg-type]

    def columns_of(self, items: list[Hashable]) -> ColumnBatch | None:
        """The batch column by column (no Python object per row), where every column allows;
        row by row where the table is far wider than the batch is long (a column's fixed
        cost, a few numpy calls, is then more than its values')."""
        if self._images.columns or len(items) * WIDE_TABLE < len(self._columns):
            return None
        taken = self._taken(items)
        fill = self._o.nulls == "fill"
        batch_columns = []
        for column in self._columns:
            described = feature_column(column, taken.column(column.source), fill)
            if described is None:
                return None
            batch_columns.append(described)
        if self._label_values is not None:
            labels = self._label_values[np.asarray(items, np.int64)]
            batch_columns.append(FeatureColumn(self._label_name, INT64, labels.astype(np.int64)))
        return ColumnBatch(batch_columns, len(items))

    def _taken(self, items: list[Hashable]) -> Any:
        """The rows of a batch: a slice where they are a run (an unshuffled split), else taken."""
        first = int(items[0]) if items else 0  # type: ignore[call-overload]
        if items and list(items) == list(range(first, first + len(items))):
            return self._held.slice(first, len(items))
        return self._held.take(items)  # type: ignore[arg-type]

    def features_of_each(self, items: list[Hashable]) -> list[dict[str, Any]] | None:
        # pictures one row at a time: what was stored of each is observed right after it
        return None if self._images.columns else self._rows(items)

    def observe(self, features: dict[str, Any]) -> Hashable | None:
        return self._images.observed() if self._images.columns else None

    def finish(self, observations: Counter[Hashable]) -> list[str] | None:
        return self._images.finish(self.features, observations) if self._images.columns else None

    def _rows(self, items: list[Hashable]) -> list[dict[str, Any]]:
        """The features of rows but their pictures', taken from the table together."""
        taken = self._taken(items)
        rows: list[dict[str, Any]] = [{} for _ in items]
        fill = self._o.nulls == "fill"
        for column in self._columns:
            name = column.name
            column_values = arrow_features.values(column, taken.column(column.source))
            default = column.empty() if fill else None
            for row, value in zip(rows, column_values, strict=True):
                if value is None:
                    if default is not None:
                        row[name] = default
                    elif name not in self._absent_allowed:
                        raise SourceError(f"column {column.source!r} is null (changed since it was listed?)")
                elif isinstance(value, NullInside):
                    raise SourceError(f"column {column.source!r} holds a list with a null in it")
                else:
                    row[name] = value
        if self._label_values is not None:
            for row, item in zip(rows, items, strict=True):
                row[self._label_name] = int(self._label_values[item])  # type: ignore[index]
        return rows

    def label_of(self, item: Hashable) -> Hashable | None:
        return None if self._label_values is None else int(self._label_values[item])  # type: ignore[index]

    def input_roots(self) -> list[str]:
        return [part.path for part in self._parts if part.kind != "python"]

    def sources(self) -> list[dict[str, Any]]:
        return self._sources

    def extra_files(self) -> dict[str, bytes]:
        if not self._hf_carried:
            return {}
        document = {"features": self._hf_carried}
        return {HF_FEATURES: (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8")}

    def recorded_options(self) -> dict[str, Any]:
        o = self._o
        return {
            "delimiter": o.delimiter,
            "columns": list(o.columns),
            "drop": list(o.drop),
            "rename": dict(o.rename),
            "nulls": o.nulls,
            "label_column": o.label_column,
            "split": o.split.describe() if o.split else None,
            "stratify": o.stratify,
            "group_column": o.group_column,
            "split_column": o.split_column,
            "key_column": o.key_column,
        }
