"""The parser reads what protobuf reads: Examples written field by field (packed and
unpacked lists, unknown fields at every level, empty and repeated features), the same
bytes damaged, and SequenceExamples; held to TensorFlow's own protobuf classes."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from tfr_convert.dataset.wire.entries import all_values_of, few_values_of
from tfr_convert.dataset.wire.example import ExampleDecodeError, outline, parse, serialize, values_of


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key = _varint(number << 3 | wire)
    return key + (_varint(len(payload)) + payload if wire == 2 else payload)


def _unknown(draw) -> bytes:
    """An unknown field (numbers 20..40), of any wire type protobuf keeps."""
    number = draw(st.integers(20, 40))
    wire = draw(st.sampled_from([0, 1, 2, 5]))
    payload = {
        0: lambda: _varint(draw(st.integers(0, 2**64 - 1))),
        1: lambda: draw(st.binary(min_size=8, max_size=8)),
        2: lambda: draw(st.binary(max_size=12)),
        5: lambda: draw(st.binary(min_size=4, max_size=4)),
    }[wire]()
    return _field(number, wire, payload)


def _with_unknowns(draw, fields: list[bytes]) -> bytes:
    out = list(fields)
    for _ in range(draw(st.integers(0, 2))):
        out.insert(draw(st.integers(0, len(out))), _unknown(draw))
    return b"".join(out)


@st.composite
def _feature(draw) -> tuple[bytes, tuple[str | None, list]]:
    """(a tf.train.Feature's bytes, what it holds) written as some other writer might."""
    kind = draw(st.sampled_from(["bytes_list", "int64_list", "float_list", None]))
    if kind is None:
        return _with_unknowns(draw, []), (None, [])
    if kind == "bytes_list":
        values = draw(st.lists(st.binary(max_size=10), max_size=4))
        items = [_field(1, 2, v) for v in values]
        tag = 1
    elif kind == "int64_list":
        values = draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5))
        tag = 3
        if draw(st.booleans()):  # packed, as TensorFlow writes
            items = [_field(1, 2, b"".join(_varint(v) for v in values))] if values else []
        else:
            items = [_field(1, 0, _varint(v)) for v in values]
    else:
        values = [float(np.float32(v)) for v in draw(st.lists(st.floats(width=32, allow_nan=False), max_size=5))]
        tag = 2
        if draw(st.booleans()):
            items = [_field(1, 2, np.array(values, "<f4").tobytes())] if values else []
        else:
            items = [_field(1, 5, struct.pack("<f", v)) for v in values]
    the_list = _with_unknowns(draw, items)
    return _with_unknowns(draw, [_field(tag, 2, the_list)]), (kind, values)


@st.composite
def _example(draw) -> tuple[bytes, dict, int]:
    """(an Example's bytes, {name: (kind, values)}, how many map entries it has); a name
    written twice keeps its last."""
    names = draw(st.lists(st.text(max_size=6), max_size=5))
    entries, expected = [], {}
    for name in names:
        feature, held = draw(_feature())
        key, value = _field(1, 2, name.encode()), _field(2, 2, feature)
        entry = value + key if draw(st.integers(0, 4)) == 0 else key + value  # protobuf allows either order
        entries.append(_field(1, 2, entry))  # (protobuf drops a map entry holding an unknown field)
        expected[name] = held
    features = _with_unknowns(draw, entries)
    return _with_unknowns(draw, [_field(1, 2, features)]), expected, len(names)


def _protobuf(data: bytes) -> dict:
    parsed = tf.train.Example.FromString(data)
    out = {}
    for name, feature in parsed.features.feature.items():
        kind = feature.WhichOneof("kind")
        out[name] = (kind, list(getattr(feature, kind).value) if kind else [])
    return out


def _same(a: dict, b: dict) -> bool:
    """Equal, floats compared by their bits (a damaged record can hold a NaN)."""

    def bits(parsed: dict) -> dict:
        return {
            n: (k, np.array(v, "<f4").view("<u4").tolist() if k == "float_list" else v) for n, (k, v) in parsed.items()
        }

    return bits(a) == bits(b)


@settings(max_examples=400, deadline=None)
@given(_example())
def test_an_example_written_by_any_writer_parses_as_protobuf_parses_it(written):
    data, expected, _ = written
    assert _same(parse(data), expected)
    assert _same(_protobuf(data), expected)


@settings(max_examples=200, deadline=None)
@given(_example(), st.integers(0, 3))
def test_an_outline_keeps_the_first_values_and_counts_them_all(written, keep):
    data, expected, _ = written
    got = outline(data, keep)
    assert set(got) == set(expected)
    for name, (kind, values) in expected.items():
        assert got[name][0] == kind and got[name][2] == len(values)
        assert _same({name: (kind, got[name][1])}, {name: (kind, values[:keep])})


@settings(max_examples=200, deadline=None)
@given(_example(), st.data())
def test_values_of_reads_the_named_features_only(written, data):
    record, expected, _ = written
    names = data.draw(st.sets(st.sampled_from([*sorted(expected), "absent"])))
    assert _same(values_of(record, names), {n: v for n, v in expected.items() if n in names})


@settings(max_examples=300, deadline=None)
@given(_example(), st.data())
def test_all_values_of_reads_as_parse_whatever_the_records_shape(written, data):
    """The fast path of a whole record against the one parser: records of every shape
    (the plain shape writers give read by lengths, any other through parse), the plain
    records of every list kind, empty lists included, and the same bytes damaged."""
    record, _, _ = written
    assert _same(all_values_of(record), parse(record))
    floats = [float(np.float32(v)) for v in data.draw(st.lists(st.floats(width=32, allow_nan=False), max_size=4))]
    plain = serialize({"f": np.array(floats, np.float32), "i": np.zeros(0, np.int64), "b": [b"", b"x"]})
    assert _same(all_values_of(plain), parse(plain))
    cut = data.draw(st.integers(0, max(0, len(record) - 1)))
    damaged = bytearray(record[:cut] + record[cut + 1 :])
    try:
        want = parse(bytes(damaged))
    except ExampleDecodeError:
        with pytest.raises(ExampleDecodeError):
            all_values_of(bytes(damaged))
    else:
        assert _same(all_values_of(bytes(damaged)), want)


@settings(max_examples=200, deadline=None)
@given(_example(), st.data())
def test_features_read_as_views_hold_the_bytes_parse_copies(written, data):
    """all_values_of(record, views): the named features' bytes as read-only views of the
    record (a picture moved on without a copy), every value equal to parse's."""
    record, expected, _ = written
    views = data.draw(st.sets(st.sampled_from([*sorted(expected), "absent"])))
    got = all_values_of(record, views)
    assert _same({n: (k, [bytes(v) if isinstance(v, memoryview) else v for v in vs]) for n, (k, vs) in got.items()},
                 parse(record))  # fmt: skip
    for name, (kind, values) in got.items():
        for value in values:
            if isinstance(value, memoryview):
                assert name in views and kind == "bytes_list" and value.readonly and value.obj is record
            elif kind == "bytes_list":
                assert type(value) is bytes


def test_a_pictures_bytes_come_as_a_view_and_the_rest_as_copies():
    record = serialize({"image": [b"\xff\xd8" + bytes(300)], "name": [b"a.jpg"], "n": [3]})
    got = all_values_of(record, {"image"})
    (picture,) = got["image"][1]
    assert isinstance(picture, memoryview) and picture.readonly and bytes(picture) == b"\xff\xd8" + bytes(300)
    assert got["name"] == ("bytes_list", [b"a.jpg"]) and got["n"] == ("int64_list", [3])


@settings(max_examples=300, deadline=None)
@given(_example(), st.data())
def test_few_values_of_reads_as_values_of_whatever_the_records_shape(written, data):
    """The fast path (plain records: entries stepped over by length) against the simple
    one, on records of every shape: unknown fields, value before key, names twice, long
    lists, negative and large integers; and on the plain records writers give (int64 and
    bytes lists)."""
    record, expected, _ = written
    names = data.draw(st.sets(st.sampled_from([*sorted(expected), "absent"])))
    want = values_of(record, names)
    assert _same(few_values_of(record, {n.encode() for n in names}), want)
    labels = data.draw(st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(0, 127), max_size=4))
    plain = serialize({"label": np.array(labels, np.int64), "other": [b"\n\x05label\x12" * 3]})
    assert few_values_of(plain, {b"label"}) == values_of(plain, {"label"}) == {"label": ("int64_list", labels)}
    names = data.draw(st.lists(st.binary(max_size=200), min_size=1, max_size=3))
    plain = serialize({"filename": names, "label": 3})
    assert few_values_of(plain, {b"filename"}) == values_of(plain, {"filename"}) == {"filename": ("bytes_list", names)}


@settings(max_examples=100, deadline=None)
@given(_example(), st.integers(0, 6))
def test_an_outline_of_a_few_entries_says_where_it_stopped(written, most):
    data, _, entries = written
    full = outline(data)
    cut = outline(data, max_entries=most)
    if entries > most:
        assert cut.cut_at == most
    else:
        assert cut.cut_at is None and cut == full


def test_an_outline_allowed_exactly_its_entries_is_whole_and_one_fewer_is_cut():
    example = tf.train.Example(
        features=tf.train.Features(
            feature={n: tf.train.Feature(int64_list=tf.train.Int64List(value=[1])) for n in "abc"}
        )
    )
    data = example.SerializeToString()
    assert outline(data, max_entries=3).cut_at is None and outline(data, max_entries=3) == outline(data)
    cut = outline(data, max_entries=2)  # (protobuf writes a map's entries in no set order)
    assert cut.cut_at == 2 and len(cut) == 2 and set(cut) < {"a", "b", "c"}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    _example(),
    st.lists(
        st.tuples(st.sampled_from("flip cut insert delete"), st.integers(0), st.binary(min_size=1, max_size=3)),
        min_size=1,
        max_size=2,
    ),
)
def test_a_damaged_record_is_refused_whenever_protobuf_refuses_it_and_reads_alike_otherwise(written, damages):
    """Bytes replaced, cut, inserted or deleted in a valid record: a record protobuf
    refuses is refused, with an offset inside it; one both accept reads alike."""
    damaged = bytearray(written[0])
    for how, at, some in damages:
        if not damaged:
            break
        at %= len(damaged)
        if how == "flip":
            damaged[at] ^= some[0] or 1
        elif how == "cut":
            del damaged[at:]
        elif how == "insert":
            damaged[at:at] = some
        else:
            del damaged[at : at + len(some)]
    data = bytes(damaged)
    try:
        reference = _protobuf(data)
    except Exception:  # protobuf's DecodeError
        reference = None
    try:
        ours = parse(data)
    except ExampleDecodeError as e:
        assert 0 <= e.offset <= len(data)
        return
    assert reference is not None, f"accepted what protobuf refuses: {data.hex()}"
    # a field 2 the damage made reads as a SequenceExample's feature lists: an Example has none
    assert _same({n: v for n, v in ours.items() if not str(v[0]).startswith("feature_list")}, reference)


@pytest.mark.parametrize(
    "data, offset, problem",
    [
        (b"\x0a\x04\x0a\x03\x0a\x01", 2, "field 1 declares 3 bytes, only 2 remain"),
        (b"\x08" + b"\xff" * 10 + b"\x01", 1, "varint longer than 10 bytes"),
        (b"\x08\xff", 1, "truncated varint"),
        (b"\x0d\x00\x00", 0, "field 1 is truncated"),
        (b"\x09" + bytes(7), 0, "field 1 is truncated"),
        (b"\x0b", 0, "unsupported wire type 3 for field 1"),
        (b"\x00", 0, "field number 0"),
        (_varint(1 << 32 | 2) + b"\x00", 0, "field number 536870912 is beyond protobuf's 536870911"),
        (_varint((1 << 29) - 1 << 3) + b"\x00", -1, ""),
    ],
)
def test_each_kind_of_damage_is_named_at_its_byte(data, offset, problem):
    if offset < 0:  # not damage: protobuf's largest field number, an unknown field
        assert parse(data) == {} == _protobuf(data)
        return
    with pytest.raises(ExampleDecodeError) as caught:
        parse(data)
    assert caught.value.offset == offset and problem in str(caught.value)
    with pytest.raises(Exception, match="Error parsing message"):
        tf.train.Example.FromString(data)


def _list_in_example(kind_tag: int, the_list: bytes) -> bytes:
    feature = _field(kind_tag, 2, the_list)
    entry = _field(1, 2, b"x") + _field(2, 2, feature)
    return _field(1, 2, _field(1, 2, entry))


@pytest.mark.parametrize(
    "kind_tag, the_list, problem",
    [
        (2, _field(1, 2, bytes(6)), "packed float list length is not a multiple of 4"),
        (3, _field(1, 5, bytes(4)), "int64_list value has wire type 5"),
        (1, _field(1, 0, b"\x01"), "bytes_list value has wire type 0"),
        (2, _field(1, 0, b"\x01"), "float_list value has wire type 0"),
    ],
)
def test_a_list_of_the_wrong_shape_is_refused(kind_tag, the_list, problem):
    with pytest.raises(ExampleDecodeError, match=problem):
        parse(_list_in_example(kind_tag, the_list))


def test_a_long_packed_list_cut_mid_varint_is_refused_even_when_only_counted():
    packed = b"".join(_varint(v) for v in range(1000, 1100))[:-1] + b"\x80"  # the last varint never ends
    data = _list_in_example(3, _field(1, 2, packed))
    for keep in (None, 2):
        with pytest.raises(ExampleDecodeError, match="truncated varint"):
            outline(data, keep)


def test_a_name_that_is_not_utf8_is_refused_at_its_first_byte():
    entry = _field(1, 2, b"\xff\xfe") + _field(2, 2, b"")
    data = _field(1, 2, _field(1, 2, entry))
    with pytest.raises(ExampleDecodeError) as caught:
        parse(data)
    assert caught.value.offset == data.index(b"\xff\xfe") and "not UTF-8" in str(caught.value)


def test_a_sequence_example_outlines_its_context_and_each_feature_list():
    seq = tf.train.SequenceExample()
    seq.context.feature["id"].bytes_list.value.append(b"a")
    steps = seq.feature_lists.feature_list["tokens"].feature
    for values in ([1, 2], [3], [4, 5, 6]):
        steps.add().int64_list.value.extend(values)
    mixed = seq.feature_lists.feature_list["mixed"].feature
    mixed.add().int64_list.value.append(1)
    mixed.add().float_list.value.append(2.0)
    seq.feature_lists.feature_list["empty"].feature.add()
    got = outline(seq.SerializeToString(), keep=2)
    assert got["id"] == ("bytes_list", [b"a"], 1)
    assert got["tokens"] == ("feature_list[int64_list]", [[1, 2], [3]], 3)
    assert got["mixed"] == ("feature_list[mixed]", [[1], [2.0]], 2)
    assert got["empty"] == ("feature_list[unset]", [[]], 1)
    assert outline(seq.SerializeToString())["tokens"][1] == [[1, 2], [3], [4, 5, 6]]


@pytest.mark.parametrize("packed", [True, False])
def test_a_ten_byte_varint_with_bits_past_the_64th_reads_as_protobuf_reads_it(packed):
    """Protobuf keeps a varint's low 64 bits: the bits the tenth byte carries above them go."""
    overlong = bytes([0xFF] * 9 + [0x7F])  # 70 bits set
    int64_list = _field(1, 2, overlong) if packed else _field(1, 0, overlong)
    entry = _field(1, 2, b"a") + _field(2, 2, _field(3, 2, int64_list))
    data = _field(1, 2, _field(1, 2, entry))
    expected = list(tf.train.Example.FromString(data).features.feature["a"].int64_list.value)
    assert expected == [-1] and parse(data) == {"a": ("int64_list", expected)}


def test_unknown_fields_inside_map_entries_and_feature_lists_are_passed_over_as_protobuf_does():
    """A map entry holding a field other than its key and value is no entry of the map
    (protobuf keeps it as an unknown field); a FeatureList's own unknown fields are no steps."""
    int64_list = _field(3, 2, _field(1, 2, _varint(7)))
    for extra in (_field(3, 2, b"\x1a\x03junk"), _field(5, 0, b"\x01")):
        entry = _field(1, 2, b"a") + _field(2, 2, int64_list) + extra
        data = _field(1, 2, _field(1, 2, entry) + _field(1, 2, _field(1, 2, b"b") + _field(2, 2, int64_list)))
        read = tf.train.Example.FromString(data).features.feature
        assert sorted(read) == ["b"] and list(read["b"].int64_list.value) == [7]
        assert parse(data) == {"b": ("int64_list", [7])}
    steps = _field(1, 2, int64_list) + _field(7, 2, int64_list) + _field(1, 2, int64_list)
    lists = _field(1, 2, _field(1, 2, b"t") + _field(2, 2, steps))
    sequence = _field(2, 2, lists)
    assert len(tf.train.SequenceExample.FromString(sequence).feature_lists.feature_list["t"].feature) == 2
    assert outline(sequence)["t"] == ("feature_list[int64_list]", [[7], [7]], 2)


def test_a_map_entry_without_a_value_is_a_feature_with_nothing_set():
    data = _field(1, 2, _field(1, 2, _field(1, 2, b"a")))
    assert "a" in tf.train.Example.FromString(data).features.feature
    assert parse(data) == {"a": (None, [])} and outline(data) == {"a": (None, [], 0)}


def test_all_values_of_reads_a_plain_record_without_the_parser(monkeypatch):
    from tfr_convert.dataset.wire import example

    record = serialize({"image": b"\xff" * 300, "label": 7, "box": np.array([0.5, 0.25], np.float32), "name": "a"})
    want = parse(record)
    monkeypatch.setattr(example, "parse", lambda data: pytest.fail("the plain record went to the parser"))
    assert all_values_of(record) == want
