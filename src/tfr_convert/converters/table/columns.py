"""A batch of a table's rows as FeatureColumns (dataset/example_columns.py): the Arrow
buffers as numpy arrays, no Python object per row or value. What it cannot describe
exactly (a null fixed-shape list, a null list holding values under --nulls fill) is
None: the batch then goes value by value, through the one serializer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dataset.wire.example import BYTES, FLOAT, INT64
from ...dataset.wire.example_columns import FeatureColumn
from ...optional import pyarrow
from .arrow_features import Column
from .arrow_numpy import to_numpy

_KIND = {"int": INT64, "float": FLOAT, "bytes": BYTES}


def feature_column(column: Column, array: Any, fill: bool) -> FeatureColumn | None:
    """One column of taken rows (a ChunkedArray) as a FeatureColumn; `fill`: nulls are
    written as the typed default (else a null row lacks the feature)."""
    pa = pyarrow("tfr-convert table")
    import pyarrow.compute as pc

    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    if pa.types.is_dictionary(array.type):
        array = pc.cast(array, array.type.value_type)
    valid = to_numpy(array.is_valid()) if array.null_count else None
    present = None if valid is None or fill else valid
    if not column.shape:
        values, value_offsets = _scalars(column, array, fill)
        return FeatureColumn(column.name, _KIND[column.kind], values, None, value_offsets, present)
    if valid is not None and column.shape[0] is not None:
        return None  # a null of fixed shape: filled with zeros, or left out, value by value
    offsets, values = _unnested(array)
    if valid is not None and fill and (np.diff(offsets)[~valid] != 0).any():
        return None  # a null list with values behind it, to be written empty
    if len(column.shape) == 2:  # lists of fixed-size lists: the inner values, flat
        inner, values = _unnested(values)
        offsets = inner[offsets]
    if values.null_count:
        return None
    flat, value_offsets = _scalars(column, values, False)
    return FeatureColumn(column.name, _KIND[column.kind], flat, offsets, value_offsets, present)


def _unnested(array: Any) -> tuple[np.ndarray, Any]:
    """(where each list starts in its values, from 0, and one more entry; those values)
    of a list array, a slice of one included."""
    pa = pyarrow("tfr-convert table")
    n = len(array)
    if pa.types.is_fixed_size_list(array.type):
        size = array.type.list_size
        return np.arange(n + 1, dtype=np.int64) * size, array.values.slice(array.offset * size, n * size)
    wide = array.offsets.type.bit_width == 64
    offsets = np.frombuffer(array.offsets.buffers()[1], np.int64 if wide else np.int32)
    offsets = offsets[array.offsets.offset : array.offsets.offset + n + 1].astype(np.int64)
    return offsets - offsets[0], array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))


def _scalars(column: Column, array: Any, fill: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, value offsets for bytes) of an array of scalars, nulls as zeros / empty."""
    pa = pyarrow("tfr-convert table")
    import pyarrow.compute as pc

    t = array.type
    if column.kind == "int":
        if pa.types.is_temporal(t):  # the number Arrow stores, through the integer of its width
            array = pc.cast(array, pa.int32() if t.bit_width == 32 else pa.int64())
        return to_numpy(pc.cast(array, pa.int64()), 0), None
    if column.kind == "float":
        return to_numpy(pc.cast(array, pa.float64()), 0.0), None
    if pa.types.is_decimal(t):
        array = pc.cast(array, pa.string())
    array = pc.cast(array, pa.large_binary())
    if array.null_count:
        array = array.fill_null(b"")
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], np.int64)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    return data, offsets
