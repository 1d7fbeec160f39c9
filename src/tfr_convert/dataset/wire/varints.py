"""Base-128 varints, protobuf's integers and lengths: one at a time (`varint`, small ones
ready-made), a column of them as a matrix (`varints`, with numpy), a long int64 list
packed back to back (`packed_int64s`). tests/dataset/test_example.py holds them to TensorFlow's bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a column is packed: a reader that parses records needs none of it
    import numpy as np

# Varints below 2**14 (one or two bytes) are precomputed: that covers the
# lengths of most fields and records, labels and sizes, the hot path of every
# conversion, without the encoding loop.
_SMALL_VARINTS = [bytes([i]) if i < 128 else bytes([(i & 0x7F) | 0x80, i >> 7]) for i in range(1 << 14)]


def varint(n: int) -> bytes:
    """Unsigned base-128 varint; negative int64s arrive here as n + 2**64."""
    if 0 <= n < 16384:
        return _SMALL_VARINTS[n]
    out = bytearray()
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Base-128 varints of unsigned 64-bit values: ((m, w) uint8, padded to the longest
    one's w bytes; lengths (m,))."""
    import numpy as np

    v = values.astype(np.uint64, copy=False)
    m = len(v)
    top = int(v.max()) if m else 0
    width = max(1, (top.bit_length() + 6) // 7)  # the longest varint here: no wider matrix
    if width == 1:  # every value below 128 (lengths, small ints): each is its own byte
        return v.astype(np.uint8).reshape(m, 1), np.ones(m, np.int64)
    # Byte k is the low byte of v >> 7k with its top bit set where more bytes follow
    # (v >> 7k >= 128); where none does, v >> 7k < 128 has that bit clear already.
    # Built a byte column at a time into reused buffers, rows contiguous.
    groups = np.empty((width, m), np.uint8)
    lengths = np.ones(m, np.int64)
    shifted = np.empty(m, np.uint64)
    more = np.empty(m, bool)
    for k in range(width):  # (the last byte is below 128: width is the widest value's)
        np.right_shift(v, np.uint64(7 * k), out=shifted)
        np.copyto(groups[k], shifted, casting="unsafe")
        np.greater_equal(shifted, np.uint64(128), out=more)
        lengths += more
        groups[k] |= more.view(np.uint8) << np.uint8(7)
    return np.ascontiguousarray(groups.T), lengths


# A long int64 list of small integers (16-bit samples of raw audio, negatives included:
# 10 bytes each) is packed from a table of every varint from -2**15 to 2**15 - 1, made
# once by `varints`, instead of computed one byte column at a time.
_SMALL_RANGE = 1 << 15
_SMALL_RANGE_AT = 256  # fewer values than this: the table's passes cost more than they save
_SMALL_TABLE: tuple[np.ndarray, np.ndarray] | None = None


def _in_small_range(signed: np.ndarray) -> bool:
    """Whether int64 values are packed through the table."""
    if len(signed) < _SMALL_RANGE_AT:
        return False
    return -_SMALL_RANGE <= int(signed.min()) and int(signed.max()) < _SMALL_RANGE


def _small_table() -> tuple[np.ndarray, np.ndarray]:
    """(every varint of the range, 10 bytes a row, zero-padded; which bytes of each row are
    the varint's, the same shape, bool)."""
    import numpy as np

    global _SMALL_TABLE
    if _SMALL_TABLE is None:
        every = np.arange(-_SMALL_RANGE, _SMALL_RANGE, dtype=np.int64)
        groups, lengths = varints(every.view(np.uint64))
        table = np.zeros((len(every), 10), np.uint8)
        table[:, : groups.shape[1]] = groups
        _SMALL_TABLE = table, np.arange(10)[None, :] < lengths[:, None]
    return _SMALL_TABLE


def packed_int64s(values: np.ndarray) -> bytes:
    """The varints of int64 values back to back (negatives as their two's complement, 10 bytes)."""
    import numpy as np

    signed = values.astype(np.int64, copy=False)
    if _in_small_range(signed):
        # each value's row of the table and of its mask; the mask keeps the varint's bytes,
        # in order (the rows exist by the range check: "clip" skips numpy's index checks)
        table, mask = _small_table()
        at = signed + _SMALL_RANGE
        return np.take(table, at, axis=0, mode="clip")[np.take(mask, at, axis=0, mode="clip")].tobytes()
    groups, lengths = varints(signed.view(np.uint64))
    return groups[np.arange(groups.shape[1])[None, :] < lengths[:, None]].tobytes()
