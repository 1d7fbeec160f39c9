"""The serializer's bytes equal TensorFlow's, and the parser reads them back."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from tfr_convert.dataset.wire.example import ExampleDecodeError, outline, parse, serialize, serialized_parts
from tfr_convert.errors import FeatureError

INT64 = st.integers(-(2**63), 2**63 - 1)
FLOAT32 = st.floats(width=32, allow_nan=False)
TEXT = st.text(max_size=20)
BINARY = st.binary(max_size=40)
# photo-sized values, across serialized_parts' size for a part of its own and the
# lengths where a varint grows a byte
LARGE = st.builds(
    lambda n, b: bytes([b]) * n, st.sampled_from([255, 256, 257, 16371, 16384, 70000]), st.integers(0, 255)
)


def tf_example(features: dict[str, tf.train.Feature]) -> bytes:
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString(deterministic=True)


def int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def bytes_feature(values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


# (python value we serialize, the tf.train.Feature TensorFlow is given for it)
VALUE_AND_FEATURE = st.one_of(
    INT64.map(lambda v: (v, int64_feature([v]))),
    st.booleans().map(lambda v: (v, int64_feature([int(v)]))),
    FLOAT32.map(lambda v: (v, float_feature([v]))),
    TEXT.map(lambda v: (v, bytes_feature([v.encode()]))),
    BINARY.map(lambda v: (v, bytes_feature([v]))),
    LARGE.map(lambda v: (v, bytes_feature([v]))),
    st.lists(INT64, min_size=1, max_size=8).map(lambda v: (v, int64_feature(v))),
    st.lists(FLOAT32, min_size=1, max_size=8).map(lambda v: (v, float_feature(v))),
    st.lists(TEXT, min_size=1, max_size=5).map(lambda v: (v, bytes_feature([s.encode() for s in v]))),
    st.lists(BINARY, min_size=1, max_size=5).map(lambda v: (tuple(v), bytes_feature(v))),
    st.lists(INT64, max_size=8).map(lambda v: (np.array(v, dtype=np.int64), int64_feature(v))),
    st.lists(st.integers(0, 2**32 - 1), max_size=8).map(lambda v: (np.array(v, dtype=np.uint32), int64_feature(v))),
    st.lists(FLOAT32, max_size=8).map(lambda v: (np.array(v, dtype=np.float32), float_feature(v))),
    st.lists(FLOAT32, max_size=8).map(lambda v: (np.array(v, dtype=np.float64), float_feature(v))),
    BINARY.map(lambda v: (np.frombuffer(v, np.uint8).reshape(1, -1), bytes_feature([v]))),
    INT64.map(lambda v: (np.int64(v), int64_feature([v]))),
    FLOAT32.map(lambda v: (np.float32(v), float_feature([v]))),
    st.booleans().map(lambda v: (np.bool_(v), int64_feature([int(v)]))),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), VALUE_AND_FEATURE, max_size=6))
def test_bytes_equal_tensorflow_deterministic_serialization(pairs):
    ours = serialize({name: value for name, (value, _) in pairs.items()})
    theirs = tf_example({name: feature for name, (_, feature) in pairs.items()})
    assert ours == theirs
    # and the parser reads back what TensorFlow would
    parsed = parse(ours)
    for name, (_, feature) in pairs.items():
        kind = feature.WhichOneof("kind")
        assert parsed[name][0] == kind
        expected = list(getattr(feature, kind).value)
        got = parsed[name][1]
        if kind == "float_list":
            assert np.array_equal(np.array(got, np.float32), np.array(expected, np.float32))
        else:
            assert got == expected


def test_exact_bytes_of_a_single_int():
    # Example{features{feature{key:"a" value{int64_list{value:1}}}}}, assembled by hand:
    int64_list = bytes.fromhex("0a0101")  # packed: tag 1/len, 1 byte, varint 1
    feature = b"\x1a" + bytes([len(int64_list)]) + int64_list  # Feature.int64_list = 3
    entry = b"\x0a\x01a" + b"\x12" + bytes([len(feature)]) + feature  # map entry key=1, value=2
    features = b"\x0a" + bytes([len(entry)]) + entry  # Features.feature = 1
    example = b"\x0a" + bytes([len(features)]) + features  # Example.features = 1
    assert serialize({"a": 1}) == example == bytes.fromhex("0a0c0a0a0a0161120 51a030a0101".replace(" ", ""))


def test_exact_bytes_of_negative_int_float_and_bytes():
    assert serialize({"n": -1}) == bytes.fromhex("0a150a130a016e120e1a0c0a0aff" + "ff" * 8 + "01")
    assert serialize({"f": 1.5}) == bytes.fromhex("0a0f0a0d0a01661208120 60a040000c03f".replace(" ", ""))
    assert serialize({"b": b"xy"}) == bytes.fromhex("0a0d0a0b0a016212060a040a027879")


def test_keys_are_sorted_bytewise_and_empty_example():
    assert serialize({"b": 1, "a": 2}) == serialize({"a": 2, "b": 1})
    assert serialize({}) == tf_example({}) == b"\x0a\x00"


def test_uint8_array_is_one_bytes_value_in_row_major_order():
    image = np.arange(12, dtype=np.uint8).reshape(3, 4)
    assert serialize({"image_raw": image}) == tf_example({"image_raw": bytes_feature([image.tobytes()])})
    # a non-contiguous view is serialized as its values, not its memory
    assert serialize({"image_raw": image.T}) == tf_example({"image_raw": bytes_feature([image.T.copy().tobytes()])})


def test_empty_typed_arrays_give_empty_lists():
    assert serialize({"x": np.zeros(0, np.int64)}) == tf_example({"x": int64_feature([])})
    assert serialize({"x": np.zeros(0, np.float32)}) == tf_example({"x": float_feature([])})


@pytest.mark.parametrize(
    ("features", "message"),
    [
        ({"v": None}, "feature 'v': unsupported value of type NoneType"),
        ({"v": {"a": 1}}, "feature 'v': unsupported value of type dict"),
        ({"v": [1, 2.0]}, "feature 'v': mixed list of float_list, int64_list values"),
        ({"v": [b"a", 1]}, "feature 'v': mixed list"),
        ({"v": 2**63}, "feature 'v': integer 9223372036854775808 does not fit in int64"),
        ({"v": -(2**63) - 1}, "does not fit in int64"),
        ({"v": [1, [2]]}, "feature 'v': lists must hold scalars"),
        ({"v": []}, "feature 'v': an empty list has no type"),
        ({"v": np.array([2**64 - 1], np.uint64)}, "feature 'v': integer 18446744073709551615 does not fit"),
        ({"v": np.array([1 + 2j])}, "feature 'v': unsupported array dtype complex128"),
        ({"v": object()}, "feature 'v': unsupported value of type object"),
        ({"v": "\ud800"}, "feature 'v': string is not valid Unicode"),
        ({"": 1}, "feature name '': must be a non-empty string"),
    ],
)
def test_unsupported_values_name_the_feature(features, message):
    with pytest.raises(FeatureError, match=None) as info:
        serialize(features)
    assert message in str(info.value)


def test_parse_accepts_unpacked_lists_from_other_writers():
    # int64 value 5 unpacked (wire type 0) and float 2.0 unpacked (wire type 5)
    int_feature = b"\x1a\x02\x08\x05"
    float_feature_ = b"\x12\x05\x0d" + np.float32(2.0).tobytes()
    entry_i = b"\x0a\x01i\x12" + bytes([len(int_feature)]) + int_feature
    entry_f = b"\x0a\x01f\x12" + bytes([len(float_feature_)]) + float_feature_
    features = b"\x0a" + bytes([len(entry_i)]) + entry_i + b"\x0a" + bytes([len(entry_f)]) + entry_f
    parsed = parse(b"\x0a" + bytes([len(features)]) + features)
    assert parsed == {"i": ("int64_list", [5]), "f": ("float_list", [2.0])}
    reference = tf.train.Example.FromString(b"\x0a" + bytes([len(features)]) + features)
    assert list(reference.features.feature["i"].int64_list.value) == [5]


def test_parse_rejects_garbage_with_an_offset():
    with pytest.raises(ExampleDecodeError, match="byte 0 of the example: field 1 declares 127 bytes"):
        parse(b"\x0a\x7f")  # declares 127 bytes, none follow
    with pytest.raises(ExampleDecodeError, match="wire type 7"):
        parse(b"\x0f")


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), VALUE_AND_FEATURE, max_size=6), st.integers(0, 4))
def test_an_outline_is_the_parse_cut_to_its_first_values_with_their_count(pairs, keep):
    data = serialize({name: value for name, (value, _) in pairs.items()})
    full = parse(data)
    assert {n: (k, v) for n, (k, v, _) in outline(data).items()} == full
    for name, (kind, values, count) in outline(data, keep).items():
        assert (kind, count) == (full[name][0], len(full[name][1]))
        assert values == full[name][1][:keep] or np.array_equal(values, full[name][1][:keep])


def test_an_outline_counts_a_long_packed_list_without_decoding_it():
    values = np.arange(-500_000, 500_000, dtype=np.int64)
    kind, first, count = outline(serialize({"n": values}), keep=3)["n"]
    assert (kind, first, count) == ("int64_list", [-500_000, -499_999, -499_998], 1_000_000)


def test_a_run_of_zeros_is_refused_at_its_first_byte():
    with pytest.raises(ExampleDecodeError, match="byte 0 of the example: field number 0"):
        parse(bytes(1 << 20))


def test_float_rounding_and_overflow_follow_protobuf():
    for v in (0.1, 1e40, -1e40, 1e-50, math.pi):
        assert serialize({"f": v}) == tf_example({"f": float_feature([v])})


def test_prefix_keys_follow_tensorflows_order():
    keys = ["a", "ab", "b", "abc", "aa", "image", "image_raw"]
    ours = serialize({k: 1 for k in keys})
    assert ours == tf_example({k: int64_feature([1]) for k in keys})
    assert list(parse(ours)) == ["aa", "abc", "ab", "a", "b", "image_raw", "image"]


def test_a_photo_sized_value_is_one_of_the_parts_as_it_is():
    photo = bytes(range(256)) * 40
    features = {"image": photo, "label": 3, "name": "a.jpg"}
    parts, length = serialized_parts(features)
    assert any(part is photo for part in parts)  # framed around, not copied
    assert b"".join(parts) == serialize(features) and length == len(serialize(features))


EDGES = [0, 1, 127, 128, 255, 256, 16383, 16384, 2**21 - 1, 2**21, 2**63 - 1, -1, -128, -(2**63)]


@pytest.mark.parametrize("value", EDGES)
def test_ints_at_every_varint_edge_equal_tensorflows_bytes_alone_in_lists_and_arrays(value):
    expected = tf_example({"v": int64_feature([value])})
    assert serialize({"v": value}) == expected
    assert serialize({"v": np.int64(value)}) == expected
    assert serialize({"v": [value, value]}) == tf_example({"v": int64_feature([value, value])})
    assert serialize({"v": np.array([value], np.int64)}) == expected
    assert parse(expected) == {"v": ("int64_list", [value])}


@pytest.mark.parametrize("size", [0, 1, 127, 128, 255, 256, 257, 16371, 16383, 16384, 16385, 70000])
def test_bytes_and_text_of_lengths_at_every_varint_edge_equal_tensorflows(size):
    blob, text = bytes([7]) * size, "a" * size
    assert serialize({"b": blob}) == tf_example({"b": bytes_feature([blob])})
    assert serialize({"t": text}) == tf_example({"t": bytes_feature([text.encode()])})
    assert serialize({"t": "é" * size}) == tf_example({"t": bytes_feature(["é".encode() * size])})
    assert serialize({"b": [blob, b"x"]}) == tf_example({"b": bytes_feature([blob, b"x"])})
    parts, length = serialized_parts({"b": blob, "n": 3})
    assert b"".join(parts) == serialize({"b": blob, "n": 3}) and len(b"".join(parts)) == length


def test_thousands_of_names_and_values_past_every_cache_serialize_as_tensorflow_does():
    """The caches of keys and of whole entries are bounded: past their bounds the bytes
    are the same (and a name never seen before is still sorted rightly)."""
    for i in range(0, 70_000, 7):
        name = f"f{i % 5000}"
        assert serialize({name: i, "s": f"v{i % 97}"}) == tf_example(
            {name: int64_feature([i]), "s": bytes_feature([f"v{i % 97}".encode()])}
        ), i


def test_unsigned_arrays_up_to_int64s_largest_are_written_and_larger_ones_named():
    big = np.array([2**63 - 1, 0], np.uint64)
    assert serialize({"u": big}) == tf_example({"u": int64_feature([2**63 - 1, 0])})
    with pytest.raises(FeatureError, match="'u': integer 9223372036854775808 does not fit in int64"):
        serialize({"u": np.array([2**63], np.uint64)})
    with pytest.raises(FeatureError, match="does not fit in int64"):
        serialize({"i": 2**63})
    with pytest.raises(FeatureError, match="does not fit in int64"):
        serialize({"i": -(2**63) - 1})
    assert serialize({"u": np.zeros(0, np.uint64)}) == tf_example({"u": int64_feature([])})


def test_values_alike_as_keys_are_each_written_in_their_own_kind_whichever_came_first():
    """1, 1.0, True and "1" are equal or alike as dict keys; the cache of small recurring
    entries keeps them apart."""
    import itertools

    values = [(1, int64_feature([1])), (1.0, float_feature([1.0])), (True, int64_feature([1])),
              ("1", bytes_feature([b"1"]))]  # fmt: skip
    for n, order in enumerate(itertools.permutations(values)):
        name = f"alike{n}"  # the cache is by name and value: each order starts it afresh
        for value, feature in order:
            assert serialize({name: value}) == tf_example({name: feature}), (order, value)


def test_arrays_of_no_strings_and_of_no_dimensions_are_written_as_their_values_are():
    assert serialize({"s": np.array([], dtype=str)}) == tf_example({"s": bytes_feature([])})
    assert serialize({"o": np.array([], dtype=object)}) == tf_example({"o": bytes_feature([])})
    # a 0-d array is its one value: a uint8 one an integer, not a picture's bytes
    assert serialize({"u": np.array(7, np.uint8)}) == tf_example({"u": int64_feature([7])})
    assert serialize({"f": np.array(1.5)}) == tf_example({"f": float_feature([1.5])})


@pytest.mark.parametrize("value", [0, 1, 126, 127, 128, 129, 255, 16383, 16384, 16385, 2**63 - 1, -1, -128, -(2**63)])
def test_integers_at_the_edges_of_the_ready_made_encodings_are_written_as_tensorflow_writes_them(value):
    """Small integers and short lengths take ready-made bytes; the values at their edges
    (one-byte and two-byte varints, the int64 limits) are written as protobuf writes them."""
    assert serialize({"v": value}) == tf_example({"v": int64_feature([value])})
    assert serialize({"v": [value, value]}) == tf_example({"v": int64_feature([value, value])})
    blob = bytes(value % 20000)  # a length at the same edges
    assert serialize({"b": blob}) == tf_example({"b": bytes_feature([blob])})


def test_key_order_and_key_field_are_the_order_and_key_bytes_serialize_writes():
    from tfr_convert.dataset.wire.example import key_field, key_order

    names = ["image", "image_raw", "b", "aa", "label", "z", "imag"]
    data = serialize({name: 1 for name in names})
    assert key_order(names) == list(parse(data))
    for name in names:
        assert key_field(name) == b"\x0a" + bytes([len(name)]) + name.encode()
        assert key_field(name) + b"\x12" in data


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3 * 32), st.integers(0, 2**32 - 1), st.sampled_from([np.int16, np.int32, np.int64, np.uint32]))
def test_an_int_array_long_enough_to_be_packed_with_numpy_gives_tensorflows_bytes(length, seed, dtype):
    """Arrays below and past the length packed with numpy (PACK_WITH_NUMPY), values from
    every varint width, negatives (ten bytes each) included."""
    from tfr_convert.dataset.wire.example import PACK_WITH_NUMPY

    assert PACK_WITH_NUMPY <= 3 * 32
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    whole = rng.integers(info.min, info.max, length, dtype=dtype, endpoint=True)
    array = (whole >> rng.integers(0, info.bits, length).astype(dtype)).astype(dtype)  # every width
    expected = tf.train.Example(
        features=tf.train.Features(
            feature={"x": tf.train.Feature(int64_list=tf.train.Int64List(value=array.astype(np.int64).tolist()))}
        )
    ).SerializeToString(deterministic=True)
    assert serialize({"x": array}) == expected
    if length:  # (an empty list has no type: refused)
        assert serialize({"x": array.tolist()}) == expected  # a list of Python ints: one varint at a time


@pytest.mark.parametrize(
    "low, high, dtype",
    [
        (-(2**15), 2**15 - 1, np.int16),  # raw audio's samples: every width, negatives 10 bytes each
        (0, 127, np.int16),
        (0, 2**15 - 1, np.int64),
        (-5, 300, np.int32),
        (-(2**15), 2**15, np.int64),  # one past the table's range: computed instead
        (-(2**15) - 1, 0, np.int64),
    ],
)
def test_a_long_array_of_small_integers_packed_from_the_table_gives_tensorflows_bytes(low, high, dtype):
    """An int64 list of at least _SMALL_RANGE_AT values within 16 bits is packed from a
    table of ready-made varints; its bytes are protobuf's, as are those of a run with a
    value just past the range (computed column by column)."""
    from tfr_convert.dataset.wire.varints import _SMALL_RANGE_AT

    rng = np.random.default_rng(high - low)
    array = np.concatenate([[low, high], rng.integers(low, high, 4 * _SMALL_RANGE_AT, endpoint=True)]).astype(dtype)
    assert serialize({"x": array}) == tf_example({"x": int64_feature(array.astype(np.int64).tolist())})
