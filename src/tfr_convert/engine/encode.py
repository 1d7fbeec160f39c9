"""Features -> serialized `tf.train.Example`s: the one encoder both engines call.

`encode_items` turns a batch of a converter's items into records laid back to
back in one buffer, each payload with `head` free bytes before it and `tail`
after it: the room the container's `seal` fills in place (TFRecord's length
header and CRCs), so no record is copied to be framed. Errors name the item;
under on_error="skip" a failing item is listed and left out instead; converters'
`warnings.warn` calls are collected.

The columnar fast path: when a converter describes a batch as `Columns` — groups
of examples equal but for fixed-width values (pixels of one size, a label below
128) — there is no Python object per example. The layout is found by
serializing a prototype through the one serializer and diffing it against
variants, so the bytes are the serializer's by construction; then one numpy
pass fills every row. A test holds it byte-identical to the per-item path.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..converters.base import ColumnBatch, Columns, Converter
from ..dataset.wire.example import serialize, serialized_parts
from ..dataset.wire.example_columns import serialize_rows
from ..errors import SourceError, TfrConvertError

_MAX_ONE_BYTE_VARINT = 127


class Encoded(NamedTuple):
    """A batch's records (what a worker sends back: one buffer, cheap to pickle)."""

    blob: bytearray | memoryview  # record slots back to back: head margin, payload, tail margin
    sizes: list[int]  # of each slot, margins included
    observations: list[Hashable]  # converter.observe(features) per record, for converter.finish
    skipped: list[dict[str, str]]  # {"item", "reason"} of items dropped under on_error="skip"
    warnings: list[str]


def encode_items(
    converter: Converter, items: Sequence[Hashable], on_error: str = "fail", head: int = 0, tail: int = 0
) -> Encoded:
    """Records of items, in order, each with head/tail bytes of room around its payload.
    A converter with ids to relabel (an --append's) goes item by item: the columnar
    paths write its ids as they are."""
    relabel = converter.relabel
    columns = None if relabel else converter.columns_of(list(items))
    if isinstance(columns, ColumnBatch):
        blob, sizes = serialize_rows(columns.columns, columns.count, head, tail)
        return Encoded(memoryview(blob).cast("B"), sizes.tolist(), [], [], [])
    if columns is not None:
        encoded = encode_columns(columns, head, tail)
        if encoded is not None:
            return encoded
    try:
        together = None if converter.serialized else converter.features_of_each(list(items))
    except TfrConvertError:  # encode() item by item then names the item that fails
        together = None
    expected = converter.features.keys()
    optional = converter.optional_features
    before, after = bytes(head), bytes(tail)
    parts: list[bytes] = []
    sizes, observations, skipped = [], [], []
    seen: dict[Hashable, Hashable] = {}
    # Converters report oddities (an animation's later frames dropped...) with
    # warnings.warn, naming the item in the message; collected once per batch.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # an unclosed file collected during the batch (say, one a Ctrl-C cut short) is
        # Python's diagnostic, not the data's: it must not reach the manifest
        warnings.simplefilter("ignore", ResourceWarning)
        for k, item in enumerate(items):
            try:
                if converter.serialized:  # a record copied as it is
                    payload = converter.features_of(item)
                    features, pieces, length = None, [payload], len(payload)
                else:
                    features = converter.features_of(item) if together is None else together[k]
                    if relabel:
                        features = relabelled(features, relabel)
                    if features.keys() != expected and not _optional_only(features.keys(), expected, optional):
                        raise SourceError(f"features {sorted(features)} differ from the declared {sorted(expected)}")
                    pieces, length = serialized_parts(features)
            except TfrConvertError as e:
                if on_error != "skip":
                    e.skippable = True
                    raise e.locate(converter.describe(item)) from None
                skipped.append({"item": converter.describe(item), "reason": str(e)})
                continue
            parts.append(before)
            parts += pieces
            parts.append(after)
            sizes.append(head + length + tail)
            if features is None:
                continue
            observed = converter.observe(features)
            # equal observations as one object: pickled once per batch to the parent, then referenced
            observations.append(seen.setdefault(observed, observed))
    return Encoded(bytearray().join(parts), sizes, observations, skipped, [str(w.message) for w in caught])


def relabelled(features: dict[str, Any], relabel: dict[str, list[int]]) -> dict[str, Any]:
    """The features with each class label id (one, or one per object) as `relabel` maps it."""
    features = dict(features)
    for name, ids in relabel.items():
        value = features.get(name)
        if value is None:
            continue
        if isinstance(value, (int, np.integer)):
            features[name] = ids[value]
        else:
            features[name] = [ids[v] for v in np.asarray(value).tolist()]
    return features


def _optional_only(present: Any, expected: Any, optional: frozenset[str]) -> bool:
    """Whether `present` lacks only features the converter may leave out."""
    return present <= expected and expected - present <= optional


# ---------------------------------------------------------------- the columnar path


def encode_columns(columns: Columns, head: int = 0, tail: int = 0) -> Encoded | None:
    """A Columns batch as records in item order, or None if a group does not fit one layout."""
    if len(columns.groups) == 1 and columns.groups[0].positions is None:
        group = columns.groups[0]
        rows = uniform_rows(group.prototype, group.varying, head, tail)
        if rows is None:
            return None
        return Encoded(memoryview(rows).cast("B"), [rows.shape[1]] * len(rows), [], [], [])  # no copy
    layouts = []
    widths = np.zeros(columns.count, np.int64)
    for group in columns.groups:
        layout = _layout(group.prototype, group.varying)
        if layout is None or group.positions is None:
            return None
        layouts.append(layout)
        widths[group.positions] = head + len(layout[0]) + tail
    starts = np.zeros(columns.count, np.int64)
    np.cumsum(widths[:-1], out=starts[1:])
    blob = np.empty(int(widths.sum()), np.uint8)
    # Each group's rows go straight to their places in item order: the template, then
    # the varying values over it, through a view whose row k starts at byte k of the
    # blob (rows overlap, but only rows that start records are written, and records
    # do not overlap), so a whole column is one fancy-indexed copy.
    for group, (template, spots) in zip(columns.groups, layouts, strict=True):
        at = starts[group.positions] + head
        _rows_at(blob, (len(template),))[at] = np.frombuffer(template, np.uint8)
        for name, values in group.varying.items():
            if values.ndim > 1:
                _rows_at(blob, values.shape[1:])[at + spots[name]] = values
            else:
                blob[at + spots[name]] = values
    return Encoded(memoryview(blob).cast("B"), widths.tolist(), [], [], [])


def _rows_at(blob: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A view of a 1-D uint8 array in which "row" k is blob[k:] laid out as a C-order
    array of `shape` (so a strided value, say a transposed one, is written in C order)."""
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    rows = max(len(blob) - math.prod(shape) + 1, 0)
    return np.lib.stride_tricks.as_strided(blob, (rows, *shape), (1, *strides))


def _layout(prototype: dict[str, Any], varying: dict[str, np.ndarray]) -> tuple[bytes, dict[str, int]] | None:
    """The prototype's serialized bytes and where each varying value sits in them, or
    None when the values do not fit one layout (an int past one varint byte, lengths
    that vary)."""
    n = len(next(iter(varying.values())))
    for values in varying.values():
        if len(values) != n:
            raise ValueError("varying arrays differ in length")
        if values.ndim == 1 and n and (values.min() < 0 or values.max() > _MAX_ONE_BYTE_VARINT):
            return None
    base = {**prototype}
    for name, values in varying.items():
        base[name] = bytes(_width(values)) if values.ndim > 1 else 0
    template = serialize(base)
    spots = {}
    for name, values in varying.items():
        width = _width(values)
        changed = {**base, name: b"\xff" * width if values.ndim > 1 else 1}
        other = serialize(changed)
        if len(other) != len(template):
            return None
        diff = np.flatnonzero(np.frombuffer(template, np.uint8) != np.frombuffer(other, np.uint8))
        if len(diff) != width or diff[-1] - diff[0] != width - 1:
            return None
        spots[name] = int(diff[0])
    return template, spots


def uniform_rows(
    prototype: dict[str, Any], varying: dict[str, np.ndarray], head: int = 0, tail: int = 0
) -> np.ndarray | None:
    """Serialized examples, one row each, for N examples equal to `prototype` but for `varying`.

    varying: name -> uint8 array (N, ...) for a bytes feature whose value i is
    `values[i].tobytes()` (C order, whatever the array's strides), or an integer
    array (N,) with values in 0..127 for an int64 feature. Row i is
    `head` unset bytes, exactly example.serialize({**prototype, name: value_i, ...}),
    then `tail` unset bytes. None when the values do not fit one layout.
    """
    layout = _layout(prototype, varying)
    if layout is None:
        return None
    template, spots = layout
    n = len(next(iter(varying.values())))
    rows = np.empty((n, head + len(template) + tail), np.uint8)
    rows[:, head : head + len(template)] = np.frombuffer(template, np.uint8)
    for name, values in varying.items():
        at = head + spots[name]
        if values.ndim > 1:
            rows[:, at : at + _width(values)] = values.reshape(n, -1)
        else:
            rows[:, at] = values
    return rows


def _width(values: np.ndarray) -> int:
    """Bytes per row of a varying array: 1 for an int64 feature's value, else the row's size."""
    return math.prod(values.shape[1:])
