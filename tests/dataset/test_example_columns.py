"""The columnar serializer (dataset/example_columns.py) against the one serializer: for
any rows, each Example it lays out is `example.serialize`'s bytes of that row."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tfr_convert.dataset.wire.example import BYTES, FLOAT, INT64, serialize
from tfr_convert.dataset.wire.example_columns import FeatureColumn, serialize_rows, varints
from tfr_convert.dataset.wire.varints import varint

INTS = st.integers(-(1 << 63), (1 << 63) - 1)
FLOATS = st.floats(width=32, allow_nan=False)
# mostly short, and some at the lengths where a varint grows a byte (drawn too rarely otherwise)
BLOBS = st.one_of(
    st.binary(max_size=20),
    st.builds(lambda n, b: bytes([b]) * n, st.sampled_from([127, 128, 300, 16383, 16384]), st.integers(0, 255)),
)


def column_of(name, kind, cells, scalar):
    """A FeatureColumn of per-row cells (None: the row lacks the feature; else a list)."""
    present = np.array([c is not None for c in cells])
    lists = [c if c is not None else [] for c in cells]
    flat = [v for cell in lists for v in cell]
    offsets = None if scalar else np.cumsum([0] + [len(c) for c in lists])
    if scalar:  # one value per row, an absent row's a placeholder that must not be written
        flat = [cell[0] if cell else {INT64: 7, FLOAT: 7.0, BYTES: b"zz"}[kind] for cell in lists]
    if kind == BYTES:
        value_offsets = np.cumsum([0] + [len(v) for v in flat])
        values = np.frombuffer(b"".join(flat), np.uint8)
        return FeatureColumn(name, kind, values, offsets, value_offsets, present if not present.all() else None)
    dtype = np.int64 if kind == INT64 else np.float32
    values = np.array(flat, dtype)
    return FeatureColumn(name, kind, values, offsets, None, present if not present.all() else None)


@st.composite
def tables(draw):
    n = draw(st.integers(1, 12))
    names = draw(st.lists(st.sampled_from(["a", "ab", "image", "image_raw", "x/y", "é", "label", "z" * 130]),
                          min_size=1, max_size=5, unique=True))  # fmt: skip
    columns, rows = [], [{} for _ in range(n)]
    for name in names:
        kind = draw(st.sampled_from([INT64, FLOAT, BYTES]))
        scalar = draw(st.booleans())
        values = {INT64: INTS, FLOAT: FLOATS, BYTES: BLOBS}[kind]
        cell = st.lists(values, min_size=1, max_size=1) if scalar else st.lists(values, max_size=6)
        cells = draw(st.lists(st.none() | cell, min_size=n, max_size=n))
        columns.append(column_of(name, kind, cells, scalar))
        for row, c in zip(rows, cells, strict=True):
            if c is not None:
                row[name] = np.array(c, {INT64: np.int64, FLOAT: np.float32, BYTES: object}[kind])
                if kind == BYTES and not c:
                    row[name] = np.zeros(0, object)
    return columns, rows


@settings(max_examples=300, deadline=None)
@given(tables(), st.integers(0, 12), st.integers(0, 4))
def test_every_row_is_the_serializers_example(table, head, tail):
    columns, rows = table
    blob, sizes = serialize_rows(columns, len(rows), head, tail)
    assert len(blob) == int(sizes.sum())
    at = 0
    for row, size in zip(rows, sizes.tolist(), strict=True):
        assert bytes(blob[at + head : at + size - tail]) == serialize(row)
        at += size


def test_varints_are_protobufs():
    values = np.array([0, 1, 127, 128, 300, 16383, 16384, (1 << 63) - 1, (1 << 64) - 1], np.uint64)
    groups, lengths = varints(values)
    expected = [b"\x00", b"\x01", b"\x7f", b"\x80\x01", b"\xac\x02", b"\xff\x7f", b"\x80\x80\x01",
                b"\xff" * 8 + b"\x7f", b"\xff" * 9 + b"\x01"]  # fmt: skip
    assert [bytes(g[:n]) for g, n in zip(groups, lengths, strict=True)] == expected
    small, ones = varints(np.array([0, 5, 127], np.uint64))  # one byte each: a one-column matrix
    assert small.shape == (3, 1) and small.ravel().tolist() == [0, 5, 127] and ones.tolist() == [1, 1, 1]


# values on each side of every varint width's edge (2**7k), and anywhere in between
_EDGE_VALUES = [e + d for k in range(1, 10) for e in (1 << (7 * k),) for d in (-1, 0, 1)] + [0, (1 << 64) - 1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_EDGE_VALUES), st.integers(0, (1 << 64) - 1)), min_size=1, max_size=40))
def test_varints_matrix_rows_are_each_values_own_varint(values):
    groups, lengths = varints(np.array(values, np.uint64))
    assert groups.flags.c_contiguous and groups.shape[1] == max(len(varint(v)) for v in values)
    assert [bytes(g[:n]) for g, n in zip(groups, lengths.tolist(), strict=True)] == [varint(v) for v in values]


EDGES = [0, 1, 127, 128, 16383, 16384, (1 << 21) - 1, 1 << 21]


def test_lengths_and_integers_at_each_varint_edge_lay_out_as_the_serializer_writes_them():
    """Values, lists and whole Examples whose lengths cross each varint width (one byte to
    four), in rows of unlike lengths, beside rows of one short value."""
    blobs = [[b"b" * n] for n in EDGES] + [[b"b" * n for n in EDGES[:6]], [b"s"]]
    ints = [[v] for v in EDGES] + [[-1, 1 << 62, (1 << 63) - 1, -(1 << 63)], [5]]
    lists = [[1] * n for n in (0, 1, 127, 128, 16384, 3, 2, 40, 1, 0)]
    columns = [
        column_of("blob", BYTES, blobs, False),
        column_of("one", BYTES, [c[:1] for c in blobs], True),
        column_of("int", INT64, ints, False),
        column_of("ints", INT64, lists, False),
        column_of("floats", FLOAT, [[0.5] * len(c) for c in lists], False),
    ]
    rows = [
        {"blob": np.array(b, object), "one": b[0], "int": np.array(i, np.int64), "ints": np.array(li, np.int64),
         "floats": np.array([0.5] * len(li), np.float32)}
        for b, i, li in zip(blobs, ints, lists, strict=True)
    ]  # fmt: skip
    for head, tail in ((0, 0), (3, 2)):
        blob, sizes = serialize_rows(columns, len(rows), head, tail)
        at = 0
        for row, size in zip(rows, sizes.tolist(), strict=True):
            assert bytes(blob[at + head : at + size - tail]) == serialize(row)
            at += size


def test_one_integer_a_row_of_every_varint_width_lays_out_within_the_containers_margins():
    """Single integers from one byte to ten (negatives), some rows without the feature,
    before and after other features and as the last: placed whole where the margins
    between rows hold a varint's padding (TFRecord's 12 + 4 bytes), value by value where
    they do not; every row the serializer's Example either way."""
    values = [0, 5, 127, 128, 16384, 1 << 21, 1 << 28, 1 << 35, 1 << 42, 1 << 49, 1 << 56, (1 << 63) - 1, -1, -300]
    n = len(values)
    cells = [[v] for v in values]
    sparse = [None if i % 3 == 1 else [v] for i, v in enumerate(values[::-1])]
    assert sparse[-1] is None  # the last row's padding starts where the buffer ends
    columns = [
        column_of("a", INT64, cells, True),
        column_of("b", FLOAT, [[float(i)] for i in range(n)], True),
        column_of("c", INT64, cells[::-1], True),
        column_of("z", INT64, sparse, True),
    ]
    rows = [
        {"a": np.array(a, np.int64), "b": np.array([float(i)], np.float32), "c": np.array(c, np.int64)}
        | ({} if z is None else {"z": np.array(z, np.int64)})
        for i, (a, c, z) in enumerate(zip(cells, cells[::-1], sparse, strict=True))
    ]
    for head, tail in ((12, 4), (6, 4), (5, 4), (0, 0), (10, 0), (3, 7)):
        blob, sizes = serialize_rows(columns, n, head, tail)
        assert len(blob) == int(sizes.sum())
        at = 0
        for row, size in zip(rows, sizes.tolist(), strict=True):
            assert bytes(blob[at + head : at + size - tail]) == serialize(row), (head, tail)
            at += size
    # the widest matrix a length with rows lacking the feature (their padding starts where
    # the row ends): placed whole only where both margins hold all of it
    texts = [None if i % 2 else [b"t" * (100 + 20 * i)] for i in range(6)]
    rows = [{} if t is None else {"t": np.array(t, object)} for t in texts]
    for head, tail in ((1, 0), (2, 0), (0, 3)):
        blob, sizes = serialize_rows([column_of("t", BYTES, texts, True)], len(rows), head, tail)
        at = 0
        for row, size in zip(rows, sizes.tolist(), strict=True):
            assert bytes(blob[at + head : at + size - tail]) == serialize(row), (head, tail)
            at += size
