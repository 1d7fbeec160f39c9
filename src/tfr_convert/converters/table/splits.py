"""A table's split and group columns read by their distinct values: each row's value a
code into the distinct texts (one Python string per distinct value, not per row), and
a split column's rows per split name, checked against what a split may be called; an
integer label column's values in as few bytes a row as they need."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...dataset.rows import positions_by_code
from ...dataset.splits import SPLIT_NAME
from ...errors import SourceError
from . import rows as table_rows
from .arrow_numpy import chunks_of, to_numpy


def cell_text(value: Any) -> str:
    """A cell's value as the text that names a split, a group or a key."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


def coded(column: Any) -> tuple[np.ndarray, list[str]]:
    """A column's values as codes, one per row (-1 where it is null), into their texts
    (one per distinct text, in the order the rows first hold them): its distinct values
    read once each, not a Python string per row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks, kind = chunks_of(column), column.type
    if pa.types.is_dictionary(kind):  # its values, not its codes (each chunk has its own)
        kind = kind.value_type
        chunks = [chunk.cast(kind) for chunk in chunks]
    whole = pa.chunked_array(chunks, kind)
    distinct = whole.unique().drop_null()
    texts: dict[str, int] = {}
    code_of = [texts.setdefault(cell_text(value), len(texts)) for value in distinct.to_pylist()]
    mapping = np.array([*code_of, -1], np.int32)  # (index -1: the appended -1)
    # the distinct values looked up in one call (each call builds a table of them), each
    # chunk's positions then made codes on their own
    indices = pc.index_in(whole, value_set=distinct)
    codes = _filled(indices.chunks, len(column), np.int32, lambda c: mapping[to_numpy(c, -1)])
    return codes, list(texts)


def narrow_ints(column: Any) -> np.ndarray:
    """An integer column's values, -1 where null, in the narrowest numpy type that holds
    them and -1 (a byte a row for class indices below 128), filled a chunk at a time:
    no column-long int64 array on the way."""
    import pyarrow as pa
    import pyarrow.compute as pc

    bounds = pc.min_max(column)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    low, high = min(-1, low if low is not None else -1), max(0, high if high is not None else 0)
    fits = (t for t in (np.int8, np.int16, np.int32) if np.iinfo(t).min <= low and high <= np.iinfo(t).max)
    dtype = next(fits, np.int64)
    # (cast first: an unsigned column holds no -1)
    return _filled(chunks_of(column), len(column), dtype, lambda c: to_numpy(pc.cast(c, pa.int64()), -1))


def _filled(chunks: list[Any], length: int, dtype: Any, values_of: Callable[[Any], np.ndarray]) -> np.ndarray:
    """values_of(chunk) of each chunk, one after another, in one array of `length`: a
    chunk at a time, no column-long temporary beside it."""
    out, at = np.empty(length, dtype), 0
    for chunk in chunks:
        values = values_of(chunk)
        out[at : at + len(values)] = values
        at += len(values)
    return out


def named_splits(column: Any, ok: np.ndarray, describe: Callable[[int], str], option: str) -> dict[str, Sequence[int]]:
    """--split-column: the rows (where `ok`) of each split the column names; a value that
    is no split name is an error naming the first row that holds it (`describe`)."""
    codes, texts = coded(column)
    rows_of = positions_by_code(np.where(ok, codes, -1), len(texts))
    named: dict[str, Sequence[int]] = {}
    # in the order the rows first name them, so that the first row in error is named
    for k in sorted((k for k in range(len(texts)) if len(rows_of[k])), key=lambda k: rows_of[k][0]):
        if not SPLIT_NAME.fullmatch(texts[k]):
            raise SourceError(
                f"{describe(int(rows_of[k][0]))}: {option} is {texts[k]!r}, "
                "not a split name like train, validation or test"
            )
        named[texts[k]] = table_rows.compact(rows_of[k])
    return named
