"""Arrow arrays of numbers as numpy arrays and back, through their buffers.

pyarrow's own conversions (`Array.to_numpy`, `pa.array` of a numpy array or a list, a
`take` by numpy indices, `fill_null` with a Python value; `parquet.read_table` too)
first ask whether pandas is installed, and so import it: a
quarter of a second at every start of `tfr-convert table`, longer than the whole
conversion of a small table, for a library it never uses. These read and make the
arrays' buffers instead. tests/test_table_arrays.py holds them to pyarrow's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...optional import pyarrow


def to_numpy(array: Any, fill: Any = None) -> np.ndarray:
    """The values of an Arrow array or chunked array of integers, floats or booleans (a
    view of its buffer where it is one chunk without nulls), nulls as `fill`; other
    types, or nulls and no fill, through pyarrow's own conversion."""
    dtype = _dtype(array.type)
    if dtype is None or (array.null_count and fill is None):
        return array.to_numpy(zero_copy_only=False)
    parts = [_values(chunk, dtype, fill) for chunk in chunks_of(array)]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def chunks_of(array: Any) -> list[Any]:
    """An Arrow array's chunks (an Array is its own one)."""
    pa = pyarrow("tfr-convert table")
    return array.chunks if isinstance(array, pa.ChunkedArray) else [array]


def _dtype(t: Any) -> np.dtype | None:
    pa = pyarrow("tfr-convert table")
    if pa.types.is_boolean(t):
        return np.dtype(bool)
    for kind, test in (("i", pa.types.is_signed_integer), ("u", pa.types.is_unsigned_integer)):
        if test(t):
            return np.dtype(f"<{kind}{t.bit_width // 8}")
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return np.dtype(f"<f{t.bit_width // 8}")
    return None


def _values(chunk: Any, dtype: np.dtype, fill: Any) -> np.ndarray:
    validity, data = chunk.buffers()[:2]
    if data is None or not len(chunk):
        return np.zeros(0, dtype)
    if dtype.kind == "b":
        values = _bits(data, chunk.offset, len(chunk))
    else:
        values = np.frombuffer(data, dtype)[chunk.offset : chunk.offset + len(chunk)]
    if chunk.null_count:  # (a null's own slot holds any value)
        values = np.where(_bits(validity, chunk.offset, len(chunk)), values, fill).astype(dtype, copy=False)
    return values


def _bits(buffer: Any, offset: int, count: int) -> np.ndarray:
    """Arrow's bitmap (one bit a value, the first in the lowest bit) as booleans."""
    return np.unpackbits(np.frombuffer(buffer, np.uint8), bitorder="little")[offset : offset + count].view(bool)


def from_numpy(values: np.ndarray, valid: np.ndarray | None = None) -> Any:
    """A numpy array of integers or floats as a 64-bit Arrow array sharing its memory
    (made contiguous first if it is not); null where `valid` is False."""
    pa = pyarrow("tfr-convert table")
    values = np.ascontiguousarray(values)
    kind = {"i": pa.int64, "u": pa.uint64, "f": pa.float64}[values.dtype.kind]
    if values.dtype.itemsize != 8:
        values = values.astype(f"<{values.dtype.kind}8")
    nulls = 0 if valid is None else len(valid) - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(kind(), len(values), [bitmap, pa.py_buffer(values)], nulls)


def strings(texts: list[str]) -> Any:
    """A list of texts as an Arrow string array."""
    pa = pyarrow("tfr-convert table")
    encoded = [t.encode() for t in texts]
    offsets = np.zeros(len(encoded) + 1, np.int32)
    np.cumsum(np.array([len(e) for e in encoded], np.int64), out=offsets[1:])
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )
