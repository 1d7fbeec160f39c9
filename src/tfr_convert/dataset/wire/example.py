"""The one serializer: a features dict <-> `tf.train.Example` wire bytes.

Written against the protobuf wire format directly so that the conversion path
never imports TensorFlow (2 s and 0.5 GB). The bytes equal
`tf.train.Example(...).SerializeToString(deterministic=True)`: map entries are
sorted by key (see `serialize` for upb's order), int64 and float lists are packed, every map entry carries both
its key and its value. tests/dataset/test_example.py holds this to TensorFlow's own
output, byte for byte.

Field numbers (tensorflow/core/example/{example,feature}.proto):
  Example.features = 1; Features.feature = 1 (map: key = 1, value = 2);
  Feature.bytes_list = 1, float_list = 2, int64_list = 3; each list's value = 1.
"""

from __future__ import annotations

import numbers
import struct
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where values are classified: parsing records needs none of it
    import numpy as np

from ...containers import MAX_RECORD_BYTES
from ...errors import FeatureError, shown
from .varints import packed_int64s, varint

BYTES, FLOAT, INT64 = "bytes_list", "float_list", "int64_list"

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_FEATURE_TAG = {BYTES: b"\x0a", FLOAT: b"\x12", INT64: b"\x1a"}
_TAG_KIND = {1: BYTES, 2: FLOAT, 3: INT64}
# An int64 list of at least this many values is packed with numpy (below, one varint at a time)
#: the largest example a source may make: what every reader here takes whole by default
#: (a larger one would convert, then be refused by tfr-inspect, tfr-export and records)
MAX_EXAMPLE_BYTES = MAX_RECORD_BYTES
PACK_WITH_NUMPY = 32


def delimited(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited protobuf field: its tag, the payload's length, the payload."""
    return tag + varint(len(payload)) + payload


# ---------------------------------------------------------------- classify


def _scalar(name: str, value: Any) -> tuple[str, Any]:
    """(kind, python value) of one scalar, or FeatureError naming the feature."""
    import numpy as np

    if isinstance(value, (bytes, bytearray, memoryview)):
        return BYTES, bytes(value)
    if isinstance(value, str):
        try:
            return BYTES, value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise FeatureError(f"feature {name!r}: string is not valid Unicode ({e.reason})") from None
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        as_int = int(value)
        if not _INT64_MIN <= as_int <= _INT64_MAX:
            raise FeatureError(f"feature {name!r}: integer {shown(as_int)} does not fit in int64")
        return INT64, as_int
    if isinstance(value, (float, np.floating)):
        return FLOAT, float(value)
    raise FeatureError(f"feature {name!r}: unsupported value of type {type(value).__name__}")


def _array(name: str, arr: np.ndarray) -> tuple[str, list[Any] | np.ndarray]:
    import numpy as np

    kind = arr.dtype.kind
    if arr.dtype == np.uint8:
        # A uint8 array is pixel data: one bytes value, row-major, like the
        # tutorials' `image.tobytes()`.
        return BYTES, [np.ascontiguousarray(arr).tobytes()]
    if kind in "iub":
        flat = arr.ravel()
        if kind == "u" and flat.size and int(flat.max()) > _INT64_MAX:
            raise FeatureError(f"feature {name!r}: integer {int(flat.max())} does not fit in int64")
        return INT64, flat.astype(np.int64)
    if kind == "f":
        return FLOAT, arr.ravel().astype(np.float32)
    if kind in "SUO":
        return _list(name, arr.ravel().tolist(), allow_empty=True)
    raise FeatureError(f"feature {name!r}: unsupported array dtype {arr.dtype}")


def _list(name: str, values: list[Any] | tuple[Any, ...], allow_empty: bool = False) -> tuple[str, list[Any]]:
    import numpy as np

    if not values:
        if allow_empty:
            return BYTES, []
        raise FeatureError(
            f"feature {name!r}: an empty list has no type; use a typed numpy array, e.g. np.zeros(0, np.int64)"
        )
    kinds = set()
    out = []
    for v in values:
        if isinstance(v, (list, tuple, dict, np.ndarray)) or v is None:
            raise FeatureError(f"feature {name!r}: lists must hold scalars, found {type(v).__name__}")
        kind, scalar = _scalar(name, v)
        kinds.add(kind)
        out.append(scalar)
    if len(kinds) > 1:
        raise FeatureError(f"feature {name!r}: mixed list of {', '.join(sorted(kinds))} values")
    return kinds.pop(), out


def classify(name: str, value: Any) -> tuple[str, list[Any] | np.ndarray]:
    """The Feature kind and the list of values a Python value maps to."""
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            value = value[()]
        else:
            return _array(name, value)
    if isinstance(value, (list, tuple)):
        return _list(name, value)
    kind, scalar = _scalar(name, value)  # None, a dict and the like are refused there
    return kind, [scalar]


# ---------------------------------------------------------------- serialize


def _list_message(kind: str, values: list[Any] | np.ndarray) -> bytes:
    import numpy as np

    if kind == BYTES:
        return b"".join([b"\x0a" + varint(len(v)) + v for v in values])
    if len(values) == 0:  # proto3 omits an empty packed field
        return b""
    if kind == FLOAT:
        # Out-of-range values become +-inf, as protobuf's float fields do.
        with np.errstate(over="ignore"):
            packed = np.asarray(values, dtype=np.float64).astype("<f4").tobytes()
    else:
        if isinstance(values, np.ndarray) and len(values) >= PACK_WITH_NUMPY:
            packed = packed_int64s(values)
        else:
            packed = b"".join([varint(v if v >= 0 else v + (1 << 64)) for v in map(int, values)])
    return delimited(b"\x0a", packed)


def feature_bytes(name: str, value: Any) -> bytes:
    """One serialized `tf.train.Feature`."""
    kind = type(value)
    # Fast paths for the values converters produce on every record (an int,
    # a bytes blob); anything else takes the general route through classify().
    if kind is bytes:
        payload = b"\x0a" + varint(len(value)) + value
        return b"\x0a" + varint(len(payload)) + payload
    if kind is str and value.isascii():  # a file name, a format: no encoding to refuse
        payload = b"\x0a" + varint(len(value)) + value.encode("ascii")
        return b"\x0a" + varint(len(payload)) + payload
    if kind is int and 0 <= value <= _INT64_MAX:
        if value < 128:
            return _SMALL_INT_FEATURES[value]
        packed = varint(value)  # at most 10 bytes: every length below fits one byte
        return b"\x1a" + bytes((len(packed) + 2, 0x0A, len(packed))) + packed
    kind, values = classify(name, value)
    return delimited(_FEATURE_TAG[kind], _list_message(kind, values))


# int64 features of 0..127 (labels, sizes, channel counts) as ready-made bytes
_SMALL_INT_FEATURES = [b"\x1a\x03\x0a\x01" + bytes([i]) for i in range(128)]
_KEY_CACHE: dict[str, tuple[bytes, bytes]] = {}


def _key(name: Any) -> tuple[bytes, bytes]:
    """(sort key, serialized map-entry key field) of a feature name; cached, names repeat."""
    cached = _KEY_CACHE.get(name) if isinstance(name, str) else None
    if cached is None:
        if not isinstance(name, str) or not name:
            raise FeatureError(f"feature name {name!r}: must be a non-empty string")
        encoded = name.encode("utf-8")
        # The order of `SerializeToString(deterministic=True)` under protobuf's
        # default Python backend (upb): bytewise, except that a key sorts *after*
        # every longer key it is a prefix of ("image_raw" before "image"). UTF-8
        # never contains 0xFF, so appending it gives exactly that order.
        # (The C++ and pure-Python backends put the prefix first; all are valid.)
        cached = (encoded + b"\xff", delimited(b"\x0a", encoded))
        if len(_KEY_CACHE) < 4096:
            _KEY_CACHE[name] = cached
    return cached


def key_order(names: Collection[str]) -> list[str]:
    """Feature names in the order `serialize` writes their map entries."""
    return sorted(names, key=lambda name: _key(name)[0])


def key_field(name: str) -> bytes:
    """A map entry's serialized key field (tag, length, the name's UTF-8)."""
    return _key(name)[1]


def serialize(features: Mapping[str, Any]) -> bytes:
    """A features dict -> `tf.train.Example` bytes (deterministic, key-sorted)."""
    return b"".join(serialized_parts(features)[0])


# A bytes value at least this long (an image) is never concatenated into its
# feature's framing: it is one of the parts as it is, copied once, by the join.
_LARGE = 256
# Whole map entries of the small values that recur from record to record (a label, a
# size, a format name), by (feature name, value); ints and short strings only, whose
# type the key tells apart (True and 1.0 are not ints here).
_ENTRIES: dict[tuple[str, int | str], tuple[bytes, bytes]] = {}
_ENTRIES_MAX = 1 << 16
_SHORT = 8


def _entry(name: str, value: Any) -> tuple[bytes, bytes, bytes]:
    """(sort key, the map entry up to its value's large bytes, those bytes or b"")."""
    sort_key, key_field = _key(name)
    if type(value) is bytes and len(value) >= _LARGE:
        inner = b"\x0a" + varint(len(value))
        head, tail = b"\x0a" + varint(len(inner) + len(value)) + inner, value
    else:
        head, tail = feature_bytes(name, value), b""
    length = len(head) + len(tail)
    entry = len(key_field) + 1 + len(varint(length)) + length
    return sort_key, b"\x0a" + varint(entry) + key_field + b"\x12" + varint(length) + head, tail


def serialized_parts(features: Mapping[str, Any]) -> tuple[list[bytes], int]:
    """`serialize`'s bytes as parts to be joined, and their total length.

    Each entry's framing is built around its value's length alone, so a large bytes
    value (a photo) appears among the parts unchanged instead of being copied into
    every enclosing message: a caller laying many examples into one buffer copies
    it once."""
    entries = []
    for name, value in features.items():
        kind = type(value)
        if (kind is int or (kind is str and len(value) <= _SHORT)) and type(name) is str:
            cached = _ENTRIES.get((name, value))
            if cached is None:
                sort_key, head, _ = _entry(name, value)
                cached = (sort_key, head)
                if len(_ENTRIES) < _ENTRIES_MAX:
                    _ENTRIES[name, value] = cached
            entries.append((*cached, b""))
        else:
            entries.append(_entry(name, value))
    entries.sort()  # names are distinct: only the sort keys are compared
    parts = [b""]
    body = 0
    for _, head, tail in entries:
        parts += (head, tail)
        body += len(head) + len(tail)
    parts[0] = b"\x0a" + varint(body)
    return parts, len(parts[0]) + body


# ---------------------------------------------------------------- parse


class ExampleDecodeError(ValueError):
    """Bytes that are not a valid tf.train.Example; `offset` is within the record."""

    def __init__(self, offset: int, problem: str) -> None:
        self.offset, self.problem = offset, problem
        super().__init__(f"byte {offset} of the example: {problem}")


_MAX_FIELD = (1 << 29) - 1  # protobuf's largest field number: a key beyond it is damage


def _readvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise ExampleDecodeError(start, "truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & ((1 << 64) - 1), pos
        shift += 7
        if shift >= 70:
            raise ExampleDecodeError(start, "varint longer than 10 bytes")


def _fields(buf: bytes, pos: int, end: int):
    """Yield (field number, wire type, value or (start, stop)) of one message."""
    while pos < end:
        field_at = pos
        key, pos = _readvarint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:  # protobuf has no field 0: not a message (a run of zeros ends here, not 512K fields later)
            raise ExampleDecodeError(field_at, "field number 0 (not a protobuf message)")
        if number > _MAX_FIELD:
            raise ExampleDecodeError(field_at, f"field number {number} is beyond protobuf's {_MAX_FIELD}")
        if wire == 0:
            value, pos = _readvarint(buf, pos, end)
            yield number, wire, value
        elif wire == 2:
            length, pos = _readvarint(buf, pos, end)
            if pos + length > end:
                raise ExampleDecodeError(field_at, f"field {number} declares {length} bytes, only {end - pos} remain")
            yield number, wire, (pos, pos + length)
            pos += length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > end:
                raise ExampleDecodeError(field_at, f"field {number} is truncated")
            yield number, wire, (pos, pos + width)
            pos += width
        else:
            raise ExampleDecodeError(field_at, f"unsupported wire type {wire} for field {number}")


def _signed(n: int) -> int:
    return n - (1 << 64) if n > _INT64_MAX else n


def _parse_list(buf: bytes, kind: str, start: int, end: int, keep: int | None = None) -> tuple[list[Any], int]:
    """(the values of one list, or its first `keep`; how many it holds). Counting a long
    packed list does not decode it: a varint ends at each byte below 0x80."""
    values: list[Any] = []
    count = 0

    def room() -> int:
        return (1 << 62) if keep is None else keep - len(values)

    for number, wire, value in _fields(buf, start, end):
        if number != 1:
            continue
        if kind == BYTES and wire == 2:
            if room() > 0:
                values.append(bytes(buf[value[0] : value[1]]))
            count += 1
        elif kind == INT64 and wire == 0:
            if room() > 0:
                values.append(_signed(value))
            count += 1
        elif kind == INT64 and wire == 2:  # packed
            pos, stop = value
            while pos < stop and room() > 0:
                v, pos = _readvarint(buf, pos, stop)
                values.append(_signed(v))
                count += 1
            if pos < stop:  # the rest only counted
                if buf[stop - 1] & 0x80:
                    raise ExampleDecodeError(pos, "truncated varint")
                count += _varints_in(buf, pos, stop)
        elif kind == FLOAT and wire == 5:
            if room() > 0:
                values.append(struct.unpack_from("<f", buf, value[0])[0])
            count += 1
        elif kind == FLOAT and wire == 2:  # packed
            a, b = value
            if (b - a) % 4:
                raise ExampleDecodeError(a, "packed float list length is not a multiple of 4")
            n = (b - a) // 4
            values.extend(struct.unpack_from(f"<{max(0, min(n, room()))}f", buf, a))
            count += n
        else:
            raise ExampleDecodeError(start, f"{kind} value has wire type {wire}")
    return values, count


def _varints_in(buf: bytes, start: int, stop: int) -> int:
    """How many varints a packed span holds (each ends at a byte below 0x80)."""
    return (stop - start) - len(bytes(buf[start:stop]).translate(None, _BELOW_0X80))


_BELOW_0X80 = bytes(range(0x80))


def parse(data: bytes) -> dict[str, tuple[str | None, list[Any]]]:
    """Example bytes -> {name: (kind, values)}; kind is None for an unset Feature.

    Accepts everything a protobuf parser accepts (packed or unpacked lists,
    repeated or unknown fields), raises ExampleDecodeError otherwise.
    """
    return {name: (kind, values) for name, (kind, values, _) in outline(data).items()}


def values_of(data: bytes, names: Collection[str]) -> dict[str, tuple[str | None, list[Any]]]:
    """The named features of an Example bytes, {name: (kind, values)}; the others are
    stepped over, not decoded (a split by one feature reads every record)."""
    found_values = {}
    for number, wire, span in _fields(data, 0, len(data)):
        if wire != 2 or number != 1:
            continue
        for name, value in _map_entries(data, span):
            if name in names:
                kind, values, _ = _feature(data, value, None)
                found_values[name] = (kind, values)
    return found_values


class Outline(dict):
    """outline's result: {name: (kind, values, how many)}; `cut_at`: the map entries read
    before `max_entries` stopped it (None: the whole record was read)."""

    cut_at: int | None = None


def outline(
    data: bytes, keep: int | None = None, max_entries: int | None = None
) -> dict[str, tuple[str | None, list[Any], int]]:
    """Example bytes -> {name: (kind, values, how many)}: the values all, or the first
    `keep` of each list (a schema needs counts, not a million decoded integers).
    `max_entries`: at most that many features read (map entries, repeated or empty ones
    included), the Outline's `cut_at` then saying so: a record of a few megabytes can
    hold millions of them, each a step of Python here.

    A tf.train.SequenceExample reads the same way: its context is field 1, as an
    Example's features; each of its feature lists (field 2) comes out as
    (`feature_list[KIND]`, the values of each step, how many steps).
    """
    out = Outline()
    entries = 0
    for number, wire, span in _fields(data, 0, len(data)):
        if wire != 2 or number not in (1, 2):
            continue
        for name, value in _map_entries(data, span):
            entries += 1
            if max_entries is not None and entries > max_entries:
                out.cut_at = max_entries
                return out
            if number == 1:
                out[name] = _feature(data, value, keep)
                continue
            steps = [_feature(data, step, keep) for n, w, step in _fields(data, *value) if n == 1 and w == 2]
            kinds = {k for k, _, _ in steps if k is not None}
            kind = f"feature_list[{kinds.pop() if len(kinds) == 1 else 'mixed' if kinds else 'unset'}]"
            shown = steps if keep is None else steps[:keep]
            out[name] = (kind, [values for _, values, _ in shown], len(steps))
    return out


def _map_entries(data: bytes, span: tuple[int, int]):
    """(key, value span) of each entry of a protobuf map<string, message> field. An entry
    holding any other field is no entry of the map: protobuf keeps it as an unknown field
    of the message around the map."""
    for fnum, fwire, entry in _fields(data, *span):
        if fnum != 1 or fwire != 2:
            continue
        name, value, plain = "", (0, 0), True
        for enum, ewire, part in _fields(data, *entry):
            if enum == 1 and ewire == 2:
                try:
                    name = bytes(data[part[0] : part[1]]).decode("utf-8")
                except UnicodeDecodeError:
                    raise ExampleDecodeError(part[0], "feature name is not UTF-8") from None
            elif enum == 2 and ewire == 2:
                value = part
            else:
                plain = False
        if plain:
            yield name, value


def _feature(data: bytes, span: tuple[int, int], keep: int | None) -> tuple[str | None, list[Any], int]:
    """(kind, values, count) of one tf.train.Feature; kind None when it is unset."""
    kind, values, count = None, [], 0
    for knum, kwire, lst in _fields(data, *span):
        if knum in _TAG_KIND and kwire == 2:
            kind = _TAG_KIND[knum]
            values, count = _parse_list(data, kind, *lst, keep=keep)
    return kind, values, count
