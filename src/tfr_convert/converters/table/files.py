"""Tables in: each SRC of `tfr-convert table` opened as Arrow tables, one per part.

CSV / TSV (read defensively by csvtable: the separator detected, every problem naming
its line; columns typed by their values, an empty cell a null), Parquet files and
dataset folders, JSON Lines, Arrow IPC / Feather files, and Hugging Face `datasets`
folders written by `save_to_disk` (a Dataset, or a DatasetDict whose splits become
the output's), local or remote. pyarrow alone reads them all.

A part's split: a DatasetDict's own, else a split word as a file's name or its last
`-word.` (`train.csv`, `data-test.parquet`), else none (the converter says train).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...dataset.naming import component_problem
from ...dataset.splits import SPLIT_FOLDERS
from ...errors import SourceError, shown
from ...optional import pyarrow
from ...storage import fs
from ..listing import csvtable
from ..listing.folders import dataset_name
from . import json_nesting, json_numbers
from .arrow_features import MAX_NESTING
from .arrow_numpy import from_numpy, strings
from .rows import ParquetFileTable

CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz")  # gzipped as pandas reads them
PARQUET_SUFFIXES = (".parquet", ".pq")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")
SUFFIXES = CSV_SUFFIXES + PARQUET_SUFFIXES + JSONL_SUFFIXES + ARROW_SUFFIXES
#: what pyarrow's CSV reader takes for a missing value (its null_values; pandas' list
#: but for <NA> and None): R's and pandas' NA among them
NA_VALUES = frozenset(
    ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "N/A", "NA",
     "NULL", "NaN", "n/a", "nan", "null"]
)  # fmt: skip
_SPLIT_WORD = re.compile(r"(?:^|[-_.])([A-Za-z]+)$")


@dataclass
class Part:
    """One input's rows: where they come from, the split they say, the Arrow table."""

    path: str
    split: str | None
    table: (
        Any  # pyarrow.Table, or a local Parquet file's ParquetFileTable (None once the converter has joined the parts)
    )
    kind: str  # csv, parquet, jsonl, arrow, huggingface, python (tables handed to write())
    lines: list[int] | None = None  # a CSV's line of each row, for messages
    #: what `tfr-export --to parquet` wrote into the file's metadata (a dataset's name,
    #: splits, features, class names), else {}
    exported: dict[str, Any] = field(default_factory=dict)
    problems: list[tuple[int, str]] = field(default_factory=list)  # CSV rows left unread: (line, why)


@dataclass
class Opened:
    parts: list[Part]
    hf_features: dict[str, Any]  # a Hugging Face dataset's features (dataset_info.json), else {}


@dataclass
class FromPython:
    """Tables handed over by tfr_convert.write() (the `table` command's `ctx.obj`): the
    command reads these instead of its SRC, and leaves its Summary here."""

    opened: Opened
    summary: Any = None


def in_memory(tables: list[tuple[str | None, Any]], kind: str, hf_features: dict[str, Any] | None = None) -> Opened:
    """Opened from Arrow tables in memory: (split or None, table) each."""
    parts = [Part(f"(python {kind}{f' {split}' if split else ''})", split, t, "python") for split, t in tables]
    return Opened(parts, hf_features or {})


def open_all(paths: list[str], delimiter: str | None = None) -> Opened:
    parts: list[Part] = []
    hf_features: dict[str, Any] = {}
    for path in paths:
        if fs.isdir(path):
            if fs.exists(fs.join(path, "dataset_dict.json")) or fs.exists(fs.join(path, "state.json")):
                opened, features = _huggingface(path)
                parts += opened
                hf_features = hf_features or features
            else:
                parts += _parquet_folder(path)
        elif fs.isfile(path):
            parts.append(open_file(path, delimiter))
        else:
            matches = sorted(m for m in fs.glob(path) if not fs.isdir(m))
            if not matches:
                raise SourceError(f"{path}: no such file, folder or glob match")
            parts += [open_file(m, delimiter) for m in matches]
    return Opened(parts, hf_features)


def split_in_name(path: str) -> str | None:
    """`train.csv`, `data-val.parquet` -> train, validation; None when the name says none."""
    stem = fs.basename(path).split(".")[0]
    match = _SPLIT_WORD.search(stem)
    return SPLIT_FOLDERS.get(match[1].lower()) if match else None


def open_file(path: str, delimiter: str | None = None) -> Part:
    name = fs.basename(path).lower()
    if name.endswith(CSV_SUFFIXES):
        return _csv(path, "\t" if name.endswith((".tsv", ".tsv.gz")) and delimiter is None else delimiter)
    pa = pyarrow("tfr-convert table")
    split = split_in_name(path)
    try:
        if name.endswith(PARQUET_SUFFIXES):
            return _parquet(path)
        if name.endswith(JSONL_SUFFIXES):
            return Part(path, split, _json_lines(path), "jsonl")
        if name.endswith(ARROW_SUFFIXES):
            return Part(path, split, _arrow_file(path), "arrow")
    except pa.ArrowException as e:
        raise SourceError(f"{path}: {_arrow_message(e)}") from None
    raise SourceError(
        f"{path}: not a table this command reads (by its name: {', '.join(SUFFIXES)}, "
        "a Parquet folder or a Hugging Face save_to_disk folder)"
    )


def _json_lines(path: str) -> Any:
    """A JSON Lines file as an Arrow table, its nesting bounded before pyarrow's parser
    (which recurses once per level) sees it."""
    from pyarrow import json as arrow_json

    local = _local(path)
    with open(local, "rb") as f:
        nesting = json_nesting.deepest(f)
    if nesting.depth > MAX_NESTING:
        raise SourceError(
            f"{path}: line {nesting.line}: nested {nesting.depth} levels deep; a table holds at most {MAX_NESTING}"
        )
    table = arrow_json.read_json(local)
    if any(_floating(field.type) for field in table.schema):  # where pyarrow put an integer past int64
        with open(local, "rb") as f:
            past = json_numbers.past_int64(f)
        if past is not None:
            line, place, value = past
            raise SourceError(
                f"{path}: line {line}: {place or 'the value'} is {value}, an integer past int64 (which an Example's "
                "int64 list cannot hold, and pyarrow reads as a float, losing digits): write it as a string "
                '("...") to keep every digit as text, or as a decimal (1.8e19) where a float will do'
            )
    return table


def _floating(kind: Any) -> bool:
    """Whether an Arrow type is, or holds, floats."""
    if pyarrow("tfr-convert table").types.is_floating(kind):
        return True
    return any(_floating(kind.field(i).type) for i in range(kind.num_fields))


def _local(path: str) -> str:
    return fs.local_copy(path)


def _arrow_message(e: Exception) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text


def _arrow_file(path: str) -> Any:
    """An Arrow IPC file (Feather v2) or stream, memory-mapped where local."""
    pa = pyarrow("tfr-convert table")
    from pyarrow import ipc

    local = _local(path)
    try:
        return ipc.open_file(pa.memory_map(local)).read_all()
    except pa.ArrowInvalid:  # not the file format: the stream format (a Hugging Face dataset's)
        return ipc.open_stream(pa.memory_map(local)).read_all()


def _parquet_folder(path: str) -> list[Part]:
    """A Parquet dataset folder (files at any depth, hive partitions not read as columns)."""
    files = sorted(
        fs.join(d, name)
        for d, dirs, names in fs.walk(path)
        for name in names
        if name.lower().endswith(PARQUET_SUFFIXES) and not name.startswith((".", "_"))
    )
    if not files:
        raise SourceError(f"{path}: a folder with no Parquet files (nor a Hugging Face dataset's state.json)")
    return [_parquet(f) for f in files]


def _parquet(path: str) -> Part:
    """A Parquet file; one that tfr-export wrote names its split and its dataset."""
    pa = pyarrow("tfr-convert table")
    table: Any
    try:
        if fs.is_remote(path):  # in ranges, through fsspec
            with fs.open_input(path) as f:
                table = pa.parquet.read_table(f)
        else:  # by its footer: its rows are read when asked, by pyarrow's own reader
            table = ParquetFileTable(path)
    except pa.ArrowException as e:
        raise SourceError(f"{path}: {_arrow_message(e)}") from None
    exported = _exported(path, (table.schema.metadata or {}).get(b"tfr_convert"))
    split = split_in_name(path)
    stem = fs.basename(path).split(".")[0]
    if stem in (exported.get("splits") or []):
        split = stem
    return Part(path, split, table, "parquet", exported=exported)


def _exported(path: str, text: bytes | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        exported = json.loads(text)
    except (ValueError, RecursionError):
        raise SourceError(f"{path}: its tfr_convert metadata is not JSON (or nests too deep)") from None
    return exported if isinstance(exported, dict) else {}


def _json_object(path: str) -> dict[str, Any]:
    """A JSON file that must hold an object (a Hugging Face folder's metadata)."""
    try:
        document = json.loads(fs.read_bytes(path))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise SourceError(f"{path}: not JSON ({type(e).__name__ if isinstance(e, RecursionError) else e})") from None
    if not isinstance(document, dict):
        raise SourceError(f"{path}: holds a JSON {type(document).__name__}, where a Hugging Face dataset has an object")
    return document


def _huggingface(path: str) -> tuple[list[Part], dict[str, Any]]:
    """A `save_to_disk` folder: a Dataset (state.json: its Arrow stream files) or a
    DatasetDict (dataset_dict.json: {"splits": [...]}, one Dataset folder each)."""
    if fs.exists(fs.join(path, "dataset_dict.json")):
        listing = fs.join(path, "dataset_dict.json")
        splits = _json_object(listing).get("splits")
        if not isinstance(splits, list) or not all(isinstance(s, str) for s in splits):
            raise SourceError(f"{listing}: no list of splits")
        for split in splits:  # each names a folder beside it: checked before any is opened
            problem = component_problem(split)
            if problem is not None:
                raise SourceError(f"{listing}: the split {split!r} {problem}: it cannot name a folder inside {path}")
        parts, features = [], {}
        for split in splits:
            info, features = _hf_dataset(fs.join(path, split), split)
            parts += info
        return parts, features
    return _hf_dataset(path, None)


def _hf_dataset(path: str, split: str | None) -> tuple[list[Part], dict[str, Any]]:
    pa = pyarrow("tfr-convert table")
    state_path = fs.join(path, "state.json")
    state = _json_object(state_path)
    listed = state.get("_data_files")
    files = [f.get("filename") for f in listed if isinstance(f, dict)] if isinstance(listed, list) else []
    if not files or not all(isinstance(f, str) and component_problem(f) is None for f in files):
        raise SourceError(f"{state_path}: no list of data files")
    own_split = state.get("_split")
    if split is None and own_split is not None and (not isinstance(own_split, str) or component_problem(own_split)):
        raise SourceError(f"{state_path}: _split {shown(own_split)} is not a split's name")
    info_path = fs.join(path, "dataset_info.json")
    info = _json_object(info_path) if fs.exists(info_path) else {}
    features = info.get("features") if isinstance(info.get("features"), dict) else {}
    parts = []
    for name in files:
        file = fs.join(path, name)
        try:
            table = _arrow_file(file)
            exported = _exported(file, (table.schema.metadata or {}).get(b"tfr_convert"))  # tfr-export --to hf's
            parts.append(Part(file, split or own_split, table, "huggingface", exported=exported))
        except pa.ArrowException as e:
            raise SourceError(f"{file}: {_arrow_message(e)}") from None
    return parts, features


def _csv(path: str, delimiter: str | None) -> Part:
    """A CSV as an Arrow table: each column int64, float64 or string by its values
    (csvtable's rules), as pyarrow's CSV reader types them: a missing-value marker
    (NA_VALUES: an empty cell, NA, NaN, NULL, #N/A...) is a null in a column of numbers,
    and text as it stands in a column of text."""
    pa = pyarrow("tfr-convert table")
    table = csvtable.read(path, delimiter=delimiter)
    decimal_comma = table.delimiter != ","
    columns = {}
    for i, name in enumerate(table.header):
        values = [row.values[i] for row in table.rows]
        present = [v for v in values if v not in NA_VALUES]
        dtype = csvtable.column_type(present, decimal_comma) if present else "string"
        if dtype == "string":
            columns[name] = strings(values)
        else:
            valid = np.array([v not in NA_VALUES for v in values], bool)
            numbers = [
                csvtable.typed(v, dtype, decimal_comma) if ok else 0 for v, ok in zip(values, valid, strict=True)
            ]
            columns[name] = from_numpy(np.array(numbers, np.int64 if dtype == "int64" else np.float64), valid)
    return Part(
        path,
        split_in_name(path),
        pa.table(columns),
        "csv",
        lines=[row.line for row in table.rows],
        problems=list(table.problems),
    )


def joined(parts: list[Part]) -> Any:
    """One table of every part's rows; parts whose columns differ are an error naming both."""
    pa = pyarrow("tfr-convert table")
    first = parts[0]
    for part in parts[1:]:
        if part.table.column_names != first.table.column_names:
            raise SourceError(
                f"{part.path} has columns {', '.join(part.table.column_names)}; {first.path} has "
                f"{', '.join(first.table.column_names)}: give tables of one schema"
            )
    tables = [p.table.read() if isinstance(p.table, ParquetFileTable) else p.table for p in parts]
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise SourceError(f"{first.path} and the other tables have columns of different types ({e})") from None


def described(part: Part) -> dict[str, Any]:
    """An input as the manifest names it: its file's size and sha256 (or, for a table
    handed over in memory, its rows' digest, so that --resume knows other data)."""
    if part.kind == "python":
        return {"data": part.path, "rows": part.table.num_rows, "sha256": rows_digest(part.table)}
    digest, size = hashlib.sha256(), 0
    with fs.open_input(part.path) as f:  # in pieces: a large file is never held whole
        while chunk := f.read(8 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {
        "file": part.path,
        "kind": part.kind,
        "split": part.split,
        "rows": part.table.num_rows,
        "bytes": size,
        "sha256": digest.hexdigest(),
    }


def rows_digest(table: Any) -> str:
    """sha256 of a table as an Arrow stream: its schema and every value."""
    pa = pyarrow("tfr-convert table")
    from pyarrow import ipc

    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue()).hexdigest()


def dataset_name_of(path: str) -> str:
    """The default dataset name: a file's name without its suffix, or its folder's when the
    name is a split's (train.csv); a folder's name."""
    base = fs.basename(path.rstrip("/"))
    stem = base.split(".")[0]
    if fs.isdir(path) or split_in_name(path) is not None:
        return dataset_name(path if fs.isdir(path) else fs.dirname(path) or ".")
    name = re.sub(r"\W+", "_", stem).strip("_").lower()
    return name if re.match(r"[a-z]", name) else f"table_{name}" if name else "table"
