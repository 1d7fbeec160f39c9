"""A few int64 or bytes features of many records (a label, a file name a record), read
without numpy and without decoding the rest: the record's map entries are stepped over by
their lengths where it has the plain shape every writer gives it (one Features, entries
of a name then a Feature, one-byte tags, an int64 list packed). Any other shape, and any
other kind of list, is read by example.values_of, the one parser (imported then only: a
--verify of plain records never imports numpy)."""

from __future__ import annotations

import struct
from collections.abc import Collection
from typing import Any

INT64 = "int64_list"  # example.INT64, the kind values_of names an int64 list by
BYTES = "bytes_list"  # example.BYTES
FLOAT = "float_list"  # example.FLOAT
_INT64_MAX = (1 << 63) - 1


def few_values_of(data: bytes, names: Collection[bytes]) -> dict[str, tuple[str | None, list[Any]]]:
    """example.values_of(data, names) for `names` as UTF-8 bytes."""
    spans = _plain_entries(data, names)
    values = {}
    for name, span in (spans or {}).items():
        found = _packed_int64s(data, *span)
        kind = INT64
        if found is None:
            found, kind = _bytes_values(data, *span), BYTES
        if found is None:
            spans = None
            break
        values[name.decode()] = (kind, found)
    if spans is None:
        from .example import values_of

        return values_of(data, {name.decode() for name in names})
    return values


def all_values_of(data: bytes, views: Collection[str] = ()) -> dict[str, tuple[str | None, list[Any]]]:
    """example.parse(data): every feature of a record of the plain shape read here, by
    lengths; any other record by the one parser. The bytes values of the features named
    in `views` come as read-only views of `data` where it is read here, not as copies:
    for a writer that only moves them on (a picture's bytes into a tar or an Arrow
    column), which saves copying every picture once more."""
    spans = _plain_entries(data, None)
    values: dict[str, tuple[str | None, list[Any]]] = {}
    for name, (start, stop) in (spans or {}).items():
        try:
            decoded = name.decode("utf-8")
        except UnicodeDecodeError:
            spans = None
            break
        found = _list_of(data, start, stop, decoded in views)
        if found is None:
            spans = None
            break
        values[decoded] = found
    if spans is None:
        from .example import parse

        return parse(data)
    return values


def _list_of(data: bytes, start: int, stop: int, view: bool = False) -> tuple[str | None, list[Any]] | None:
    """(kind, values) of a Feature of one list (int64 packed, float packed, bytes: as views
    of `data` with `view`), or of none (an unset Feature); None for any other shape."""
    if start == stop:
        return None, []
    tag = data[start]
    if tag == 0x1A:
        found = _packed_int64s(data, start, stop)
        return (INT64, found) if found is not None else None
    if tag == 0x12:
        return _packed_floats(data, start, stop)
    if tag == 0x0A:
        found = _bytes_values(data, start, stop, view)
        if found is None and stop - start == 2 and data[start + 1] == 0:
            return BYTES, []  # an empty bytes list
        return (BYTES, found) if found is not None else None
    return None


def _packed_floats(data: bytes, start: int, stop: int) -> tuple[str, list[float]] | None:
    try:
        at = _only(data, start, stop, 0x12)  # the Feature: its float_list
        if at == stop:
            return FLOAT, []
        at = _only(data, at, stop, 0x0A)  # the list: its packed values
    except ValueError:
        return None
    if (stop - at) % 4:
        return None
    return FLOAT, list(struct.unpack_from(f"<{(stop - at) // 4}f", data, at))


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, position after) of the varint at `pos`; ValueError past `end` or 10 bytes."""
    result = shift = 0
    while pos < end and shift < 70:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & ((1 << 64) - 1), pos
        shift += 7
    raise ValueError("no varint")


def _plain_entries(data: bytes, names: Collection[bytes] | None) -> dict[bytes, tuple[int, int]] | None:
    """{name: its Feature's span} of the named entries (None: of every entry), or None
    where the record is not of the plain shape (then nothing is assumed of it)."""
    end = len(data)
    if not end or data[0] != 0x0A:
        return None
    try:
        length, pos = _varint(data, 1, end)
        if pos + length != end:
            return None
        entries = {}
        while pos < end:  # one-byte lengths read inline: most entries and names are short
            if data[pos] != 0x0A or pos + 1 >= end:
                return None
            length = data[pos + 1]
            length, pos = (length, pos + 2) if length < 0x80 else _varint(data, pos + 1, end)
            stop = pos + length
            if stop > end or pos + 1 >= stop or data[pos] != 0x0A:
                return None
            size = data[pos + 1]
            size, at = (size, pos + 2) if size < 0x80 else _varint(data, pos + 1, stop)
            name = data[at : at + size]
            if names is None or name in names:
                at += size
                if at >= stop or data[at] != 0x12:
                    return None
                size, at = _varint(data, at + 1, stop)
                if at + size != stop or name in entries:
                    return None
                entries[bytes(name)] = (at, stop)
            pos = stop
        return entries
    except ValueError:
        return None


def _only(data: bytes, start: int, stop: int, tag: int) -> int:
    """Where the one field of a message spanning [start, stop) begins its contents, the
    field being `tag`'s and filling the message; ValueError for any other shape."""
    if start + 1 >= stop or data[start] != tag:
        raise ValueError("another shape")
    size = data[start + 1]  # a one-byte length read inline: most fields are short
    size, at = (size, start + 2) if size < 0x80 else _varint(data, start + 1, stop)
    if at + size != stop:
        raise ValueError("another shape")
    return at


def _packed_int64s(data: bytes, start: int, stop: int) -> list[int] | None:
    """A Feature's values where it is one int64 list, packed (or empty), else None."""
    try:
        at = _only(data, start, stop, 0x1A)  # the Feature: its int64_list
        if at == stop:
            return []
        at = _only(data, at, stop, 0x0A)  # the list: its packed values
        values = data[at:stop]
        if values.isascii():  # one-byte varints: small labels, the common case
            return list(values)
        out = []
        while at < stop:
            value, at = _varint(data, at, stop)
            out.append(value - (1 << 64) if value > _INT64_MAX else value)
        return out
    except ValueError:
        return None


def _bytes_values(data: bytes, start: int, stop: int, view: bool = False) -> list[Any] | None:
    """A Feature's values where it is one bytes list (not empty), else None; with `view`,
    read-only views of `data` instead of copies."""
    whole = memoryview(data).toreadonly() if view else None
    try:
        at = _only(data, start, stop, 0x0A)  # the Feature: its bytes_list
        if at == stop:
            return None
        out = []
        while at < stop:
            if data[at] != 0x0A or at + 1 >= stop:
                return None
            size = data[at + 1]
            size, at = (size, at + 2) if size < 0x80 else _varint(data, at + 1, stop)
            if at + size > stop:
                return None
            out.append(whole[at : at + size] if whole is not None else bytes(data[at : at + size]))
            at += size
        return out
    except ValueError:
        return None
