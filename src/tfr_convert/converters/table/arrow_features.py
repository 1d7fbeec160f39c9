"""Arrow columns as Example features: which feature each column becomes, and its values.

Integers and booleans -> int64; floats -> float (float32 on disk: float64 values that
change are counted); strings and binary -> bytes (TFDS: a string Tensor); lists ->
lists, a fixed-size list a fixed shape, a list of fixed-size lists shape (None, k);
structs -> one feature per field, named `a/b`. The rest is a documented choice each:
timestamps, durations and times -> int64 in the column's own unit, date32 -> int64
days since 1970-01-01, date64 -> int64 milliseconds, decimals -> bytes of their exact
text, dictionary-encoded columns -> their values' feature. A map, a list of ragged
lists or of structs, or a column of nulls only is an OptionError naming the column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...dataset.features import FeatureSpec
from ...errors import OptionError
from ...optional import pyarrow
from .arrow_numpy import to_numpy

#: how deep types may nest (structs in lists in structs...): past it a table is refused
#: before any walk of its types, which recurse once per level
MAX_NESTING = 64

#: what a scalar of each kind becomes: (FeatureSpec dtype, numpy dtype of a list of them)
KINDS = {"int": ("int64", np.int64), "float": ("float32", np.float32), "bytes": ("string", object)}


@dataclass(frozen=True)
class Column:
    """One feature from one (flattened) column."""

    name: str  # the feature's name (after --rename, struct fields joined by '/')
    source: str  # the column as the table names it (struct fields joined by '/')
    kind: str  # int, float, bytes (of each value)
    shape: tuple[int | None, ...]  # () a scalar; (None,) a list; (k,) / (None, k) fixed inner sizes

    @property
    def dtype(self) -> str:
        return KINDS[self.kind][0]

    def spec(self, absent_allowed: bool = False) -> FeatureSpec:
        """The TFDS Tensor; `absent_allowed` (nulls left out): a leading unknown dimension, so
        that a missing feature reads as an empty list (a present scalar as one value)."""
        shape = self.shape
        if absent_allowed and (not shape or shape[0] is not None):
            shape = (None, *shape)
        return FeatureSpec.tensor(self.dtype, shape)

    def empty(self) -> Any:
        """The typed default of --nulls fill: 0, 0.0, b"", an empty list or zeros of a fixed shape."""
        if not self.shape:
            return {"int": 0, "float": 0.0, "bytes": b""}[self.kind]
        if self.shape[0] is None:
            return np.zeros((0,), KINDS[self.kind][1])
        size = int(np.prod([d for d in self.shape if d is not None]))
        return np.zeros((size,), KINDS[self.kind][1]) if self.kind != "bytes" else [b""] * size


def nesting(t: Any) -> int:
    """How deep an Arrow type nests (a scalar 0, a list of scalars 1...), found without recursion."""
    deepest, todo = 0, [(t, 0)]
    while todo:
        t, depth = todo.pop()
        deepest = max(deepest, depth)
        todo += [(t.field(i).type, depth + 1) for i in range(t.num_fields)]
    return deepest


def flatten(table: Any, whole: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """{name: ChunkedArray}: struct columns replaced by their fields, `parent/field`, at
    any depth (a null struct makes its fields null); the columns in `whole` as they are."""
    pa = pyarrow("tfr-convert table")
    flat: dict[str, Any] = {}

    def walk(name: str, column: Any) -> None:
        if pa.types.is_struct(column.type):
            for field, child in zip(column.type, column.flatten(), strict=True):
                walk(f"{name}/{field.name}", child)
        else:
            flat[name] = column

    for name, column in zip(table.column_names, table.columns, strict=True):
        if name in whole:
            flat[name] = column
        else:
            walk(name, column)
    return flat


def scalar_kind(t: Any) -> str | None:
    pa = pyarrow("tfr-convert table")
    types = pa.types
    if types.is_dictionary(t):
        return scalar_kind(t.value_type)
    if types.is_boolean(t) or types.is_integer(t):
        return "int"
    if types.is_temporal(t):  # timestamps, dates, times, durations: the number Arrow stores
        return "int"
    if types.is_floating(t):
        return "float"
    if types.is_string(t) or types.is_large_string(t) or types.is_binary(t) or types.is_large_binary(t):
        return "bytes"
    if types.is_fixed_size_binary(t) or types.is_decimal(t):
        return "bytes"
    if hasattr(types, "is_string_view") and (types.is_string_view(t) or types.is_binary_view(t)):
        return "bytes"
    return None


def _is_list(t: Any) -> bool:
    types = pyarrow("tfr-convert table").types
    return types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t)


def column_of(name: str, source: str, t: Any) -> Column:
    """The feature an Arrow type becomes, or an OptionError naming the column."""
    pa = pyarrow("tfr-convert table")
    kind = scalar_kind(t)
    if kind is not None:
        return Column(name, source, kind, ())
    if _is_list(t):
        outer = t.list_size if pa.types.is_fixed_size_list(t) else None
        inner = t.value_type
        kind = scalar_kind(inner)
        if kind is not None:
            return Column(name, source, kind, (outer,))
        if pa.types.is_fixed_size_list(inner) and scalar_kind(inner.value_type) is not None:
            return Column(name, source, scalar_kind(inner.value_type), (outer, inner.list_size))  # type: ignore[arg-type]
        if _is_list(inner):
            raise OptionError(
                f"column {source!r} holds lists of lists of varying length ({t}): a feature has one "
                "shape; --drop it, or store the inner lists at one fixed size"
            )
        raise OptionError(f"column {source!r} holds lists of {inner}: no feature holds those; --drop it")
    if pa.types.is_map(t):
        raise OptionError(f"column {source!r} is a map ({t}): no feature holds one; --drop it, or make it a struct")
    if pa.types.is_null(t):
        raise OptionError(f"column {source!r} holds no values (every one is null): --drop it")
    raise OptionError(f"column {source!r} is of type {t}, which no feature holds: --drop it")


def values(column: Column, array: Any) -> list[Any]:
    """The feature values of a (taken) column, None for a null: Python ints, floats,
    bytes / str, or typed numpy arrays for lists."""
    pa = pyarrow("tfr-convert table")
    import pyarrow.compute as pc

    t = array.type
    if pa.types.is_dictionary(t):
        array = pc.cast(array, t.value_type)
        t = t.value_type
    if column.shape:
        return _lists(column, array)
    if column.kind == "int":
        if pa.types.is_temporal(t):  # the number Arrow stores, through the integer of its width
            array = pc.cast(array, pa.int32() if t.bit_width == 32 else pa.int64())
        return pc.cast(array, pa.int64()).to_pylist()
    if column.kind == "float":
        return pc.cast(array, pa.float64()).to_pylist()
    if pa.types.is_decimal(t):
        return [None if v is None else str(v).encode() for v in array.to_pylist()]
    return array.to_pylist()


def _lists(column: Column, array: Any) -> list[Any]:
    lists = []
    for value in array.to_pylist():
        if value is None:
            lists.append(None)
            continue
        if len(column.shape) == 2:
            value = [v for inner in value for v in (inner if inner is not None else [None])]
        if any(v is None for v in value):
            lists.append(_NULL_INSIDE)
            continue
        if column.kind == "bytes":
            lists.append([v.encode() if isinstance(v, str) else v for v in value] if value else np.zeros(0, object))
        elif column.kind == "int":
            lists.append(np.array([int(v) for v in value], np.int64))
        else:
            lists.append(np.array(value, np.float64))
    return lists


class NullInside:
    """A list holding a null: no feature list can (the row is an error, or skipped)."""


_NULL_INSIDE = NullInside()


def float32_losses(array: Any) -> int:
    """How many float64 values of a column change when stored as float32 (NaN aside)."""
    pa = pyarrow("tfr-convert table")
    if not pa.types.is_float64(array.type):
        return 0
    values = to_numpy(array.drop_null() if array.null_count else array)
    finite = values[~np.isnan(values)]
    with np.errstate(over="ignore"):
        return int(np.count_nonzero(finite.astype(np.float32).astype(np.float64) != finite))
