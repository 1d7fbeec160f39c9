"""Many Examples at once, from columns: `example.serialize`'s bytes built with numpy.

A table's batch of rows is described column by column (`FeatureColumn`: the values of
one feature for every row, flat, with where each row's values start, and which rows have
the feature at all), and `serialize_rows` lays the rows' Examples back to back in one
buffer, each with `head` and `tail` free bytes around it (the room a container's framing
fills), without a Python object per row or per value.

Each Example is `0x0a varint(body) body`, the body its map entries in `key_order`; an
entry is `0x0a varint(len) 0x0a varint(len key) key 0x12 varint(len feature) feature`,
a feature `tag varint(len list) list`, where an int64 or float list is one packed field
(`0x0a varint(len) values`, absent when empty, as proto3 writes it) and a bytes list one
field per value. Every part of a row is a run of bytes whose length numpy knows for all
rows at once (a constant, a varint, a row's values); `_Rows` places the parts row after
row. tests/dataset/test_example_columns.py holds the result to `serialize`, byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .example import BYTES, FLOAT, INT64, key_field, key_order
from .varints import varint, varints

_TAG = {BYTES: 0x0A, FLOAT: 0x12, INT64: 0x1A}
_MAX_VARINT = 10  # bytes of the longest varint (2**64 - 1): the widest matrix of varints


@dataclass(frozen=True)
class FeatureColumn:
    """One feature of every row of a batch.

    values: int64 / float values (flat, all rows' one after another); for BYTES the
    concatenated bytes (uint8). value_offsets (BYTES only): where each value starts in
    `values` (one more entry than there are values). offsets: where each row's values
    start (in values, or for BYTES in the list of values), n + 1 entries; None: exactly
    one value per row. present: False where the row lacks the feature (None: all have it).
    """

    name: str
    kind: str
    values: np.ndarray
    offsets: np.ndarray | None = None
    value_offsets: np.ndarray | None = None
    present: np.ndarray | None = None


def _varint_width(n: np.ndarray) -> np.ndarray:
    """Bytes of the varint of each (non-negative) length."""
    width = np.ones(len(n), np.int64)
    top = int(n.max()) if len(n) else 0
    for k in range(1, 10):
        if top < 1 << (7 * k):
            break
        width += n >= (1 << (7 * k))
    return width


class _Rows:
    """Byte runs appended to every row, then laid out row after row."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.parts: list[tuple[str, object, np.ndarray]] = []  # (how, what, length per row)
        self.lengths = np.zeros(n, np.int64)

    def constant(self, data: bytes, where: np.ndarray | None = None) -> None:
        """The same bytes in every row (`where`: only in those rows)."""
        lengths = np.full(self.n, len(data), np.int64) if where is None else np.where(where, len(data), 0)
        self._add("constant", np.frombuffer(data, np.uint8), lengths)

    def varint(self, values: np.ndarray, where: np.ndarray | None = None) -> None:
        if len(values):
            low = int(values.min())
            if low == int(values.max()):  # equal in every row (a length, often): a constant
                self.constant(varint(low), where)
                return
        groups, lengths = varints(values)
        self.matrix(groups, lengths if where is None else np.where(where, lengths, 0))

    def matrix(self, groups: np.ndarray, lengths: np.ndarray) -> None:
        """Each row's bytes: the first `lengths` of its row of `groups`."""
        self._add("matrix", groups, lengths)

    def flat(self, data: np.ndarray, lengths: np.ndarray) -> None:
        """Each row's own bytes: `data` holds them row after row, `lengths` long each."""
        self._add("flat", data, lengths)

    def extend(self, other: _Rows) -> None:
        """The other rows' runs after these (row by row)."""
        self.parts += other.parts
        self.lengths += other.lengths

    def _add(self, how: str, what: object, lengths: np.ndarray) -> None:
        self.parts.append((how, what, lengths))
        self.lengths += lengths

    def laid_out(self, head: int = 0, tail: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(the rows back to back, each with head and tail bytes around it; each row's size)."""
        sizes = self.lengths + head + tail
        starts = np.zeros(self.n, np.int64)
        np.cumsum(sizes[:-1], out=starts[1:])
        size = int(sizes.sum())
        out = np.empty(size + _MAX_VARINT, np.uint8)  # room for the last row's padding
        at = starts + head
        for how, what, lengths in self._fused():
            if how == "block":  # as long in every row: each row's bytes copied whole
                block = what  # type: ignore[assignment]
                if block.shape[1]:
                    _rows_at(out, block.shape[1])[at] = block
            elif how == "constant":
                data = what  # type: ignore[assignment]
                rows = np.flatnonzero(lengths)
                if len(rows) and len(data):
                    _rows_at(out, len(data))[at[rows]] = data
            elif how == "matrix":
                groups = what  # type: ignore[assignment]
                width = groups.shape[1]
                if width <= head + tail:
                    # each row whole: its padding spills past its varint into what later
                    # parts and the margins (filled by the container's seal) overwrite
                    _rows_at(out, width)[at] = groups
                else:
                    valid = np.arange(width)[None, :] < lengths[:, None]
                    out[(at[:, None] + np.arange(width))[valid]] = groups[valid]
            else:
                data = what  # type: ignore[assignment]
                total = int(lengths.sum())
                if total:
                    src = np.zeros(self.n, np.int64)
                    np.cumsum(lengths[:-1], out=src[1:])
                    out[np.repeat(at - src, lengths) + np.arange(total)] = data[:total]
            at = at + lengths
        return out[:size], sizes

    def _fused(self) -> list[tuple[str, object, np.ndarray]]:
        """The parts, each run of parts as long in every row made one (n, w) block:
        a constant, a varint matrix of one width, a run of values of one length."""
        fused: list[tuple[str, object, np.ndarray]] = []
        run: list[tuple[bool, np.ndarray]] = []  # (a constant?, its bytes or the (n, w) rows)

        def close() -> None:
            if run:
                block = _joined(run, self.n)
                fused.append(("block", block, np.full(self.n, block.shape[1], np.int64)))
                run.clear()

        for how, what, lengths in self.parts:
            width = int(lengths[0]) if self.n else 0
            if not self.n or (lengths != width).any():
                close()
                fused.append((how, what, lengths))
            elif width == 0:
                continue  # in no row
            elif how == "constant":
                run.append((True, what))  # type: ignore[arg-type]
            elif how == "matrix":
                run.append((False, what[:, :width]))  # type: ignore[index]
            else:
                run.append((False, what[: self.n * width].reshape(self.n, width)))  # type: ignore[index]
        close()
        return fused


def _joined(run: list[tuple[bool, np.ndarray]], n: int) -> np.ndarray:
    """Parts as long in every row side by side in one (n, w) block: the constants written
    once into a template row that fills the block, then the parts that vary by row."""
    template = np.concatenate([piece if constant else np.zeros(piece.shape[1], np.uint8) for constant, piece in run])
    block = np.empty((n, len(template)), np.uint8)
    block[:] = template
    at = 0
    for constant, piece in run:
        width = len(piece) if constant else piece.shape[1]
        if not constant:
            block[:, at : at + width] = piece
        at += width
    return block


def _rows_at(out: np.ndarray, width: int) -> np.ndarray:
    """A view of `out` in which row k is out[k : k + width]: one fancy index on its first
    axis places whole rows (they overlap, but only those that start somewhere are written)."""
    rows = max(len(out) - width + 1, 0)
    return np.lib.stride_tricks.as_strided(out, (rows, width), (1, 1))


def _counts(column: FeatureColumn, n: int) -> np.ndarray:
    return np.ones(n, np.int64) if column.offsets is None else np.diff(column.offsets).astype(np.int64)


def _row_sums(per_value: np.ndarray, offsets: np.ndarray | None) -> np.ndarray:
    """Per row, the sum of its values' figures (each row's values are a run)."""
    if offsets is None:
        return per_value
    sums = np.zeros(len(per_value) + 1, np.int64)
    np.cumsum(per_value, out=sums[1:])
    return sums[offsets[1:]] - sums[offsets[:-1]]


def _list_payload(column: FeatureColumn, n: int) -> _Rows:
    """Each row's list message."""
    rows = _Rows(n)
    count = _counts(column, n)
    present = column.present if column.present is not None else np.ones(n, bool)
    # the values of rows that lack the feature are not written
    kept = np.repeat(present, count) if column.present is not None else None
    if column.kind == BYTES:
        assert column.value_offsets is not None
        value_lengths = np.diff(column.value_offsets).astype(np.int64)
        per_value = 1 + _varint_width(value_lengths) + value_lengths
        lengths = np.where(present, _row_sums(per_value, column.offsets), 0)
        rows.flat(_bytes_fields(column, value_lengths, per_value, kept), lengths)
        return rows
    if column.kind == INT64:
        groups, widths = varints(column.values.astype(np.int64, copy=False).view(np.uint64))
        packed = np.where(present, _row_sums(widths, column.offsets), 0)
    else:
        packed = np.where(present, count * 4, 0)
    has = present & (count > 0)
    rows.constant(b"\x0a", has)
    rows.varint(packed, has)
    if column.kind == INT64 and column.offsets is None:
        rows.matrix(groups, packed)  # one value a row (a placeholder where it has none): its varint
    elif column.kind == INT64:
        valid = np.arange(groups.shape[1])[None, :] < widths[:, None]
        if kept is not None:
            valid &= kept[:, None]
        rows.flat(groups[valid], packed)
    else:
        values = column.values if kept is None else column.values[kept]
        rows.flat(values.astype("<f4").view(np.uint8), packed)
    return rows


def _bytes_fields(
    column: FeatureColumn, value_lengths: np.ndarray, per_value: np.ndarray, kept: np.ndarray | None
) -> np.ndarray:
    """A bytes list's fields, `0x0a varint(len) value` each, one after another (those of
    rows that lack the feature left out)."""
    assert column.value_offsets is not None
    fields = _Rows(len(value_lengths))
    fields.constant(b"\x0a")
    fields.varint(value_lengths)
    start, stop = int(column.value_offsets[0]), int(column.value_offsets[-1])
    fields.flat(column.values[start:stop], value_lengths)
    data, _ = fields.laid_out()
    return data if kept is None else data[np.repeat(kept, per_value)]


def _entry(rows: _Rows, column: FeatureColumn, n: int) -> None:
    """The column's map entry in every row that has the feature."""
    present = column.present
    payload = _list_payload(column, n)
    listed = payload.lengths
    feature = 1 + _varint_width(listed) + listed
    key = key_field(column.name)
    entry = len(key) + 1 + _varint_width(feature) + feature
    rows.constant(b"\x0a", present)
    rows.varint(entry, present)
    rows.constant(key + b"\x12", present)
    rows.varint(feature, present)
    rows.constant(bytes([_TAG[column.kind]]), present)
    rows.varint(listed, present)
    rows.extend(payload)


def serialize_rows(columns: list[FeatureColumn], n: int, head: int, tail: int) -> tuple[np.ndarray, np.ndarray]:
    """(n Examples back to back, each between `head` and `tail` unset bytes; each one's
    size with its margins). Row i equals example.serialize of its features."""
    by_name = {c.name: c for c in columns}
    body = _Rows(n)
    for name in key_order(by_name):
        _entry(body, by_name[name], n)
    rows = _Rows(n)
    rows.constant(b"\x0a")
    rows.varint(body.lengths)
    rows.extend(body)
    return rows.laid_out(head, tail)
