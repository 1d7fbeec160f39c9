"""Write pickles the way Python 2's cPickle (protocol 2) wrote CIFAR's files.

Python 3 cannot produce them directly: it writes `bytes` through
`_codecs.encode` and text as BINUNICODE, where Python 2 wrote its `str` as
(SHORT_)BINSTRING and arrays with a plain string for the raw data. The real
CIFAR batches are such files, so the tests build them opcode by opcode.
Knobs let a test bend one detail (dtype, declared shape, module spelling).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np


class Py2Array:
    """An ndarray as Python 2 numpy pickled it; fields can be overridden to lie."""

    def __init__(self, array: np.ndarray, *, dtype: str | None = None, shape: tuple | None = None,
                 module: str = "numpy.core.multiarray") -> None:  # fmt: skip
        self.array = np.ascontiguousarray(array)
        self.dtype = dtype or self.array.dtype.str[1:]
        self.shape = self.array.shape if shape is None else shape
        self.module = module


def _string(b: bytes) -> bytes:
    if len(b) < 256:
        return b"U" + bytes([len(b)]) + b  # SHORT_BINSTRING
    return b"T" + struct.pack("<i", len(b)) + b  # BINSTRING


def _int(i: int) -> bytes:
    if 0 <= i < 256:
        return b"K" + bytes([i])  # BININT1
    if 0 <= i < 65536:
        return b"M" + struct.pack("<H", i)  # BININT2
    if -(2**31) <= i < 2**31:
        return b"J" + struct.pack("<i", i)  # BININT
    raise ValueError("python 2 would write a long")


def _tuple(items: list[bytes]) -> bytes:
    return b"(" + b"".join(items) + b"t"  # MARK ... TUPLE


def _dump(obj: Any) -> bytes:
    if isinstance(obj, bool):
        return b"\x88" if obj else b"\x89"
    if isinstance(obj, int):
        return _int(obj)
    if isinstance(obj, bytes):
        return _string(obj)
    if isinstance(obj, str):  # a Python 2 unicode object
        data = obj.encode("utf-8")
        return b"X" + struct.pack("<I", len(data)) + data
    if obj is None:
        return b"N"
    if isinstance(obj, tuple):
        return _tuple([_dump(x) for x in obj])
    if isinstance(obj, list):
        return b"](" + b"".join(_dump(x) for x in obj) + b"e"  # EMPTY_LIST MARK ... APPENDS
    if isinstance(obj, dict):
        return b"}(" + b"".join(_dump(k) + _dump(v) for k, v in obj.items()) + b"u"  # EMPTY_DICT MARK ... SETITEMS
    if isinstance(obj, np.ndarray):
        obj = Py2Array(obj)
    if isinstance(obj, Py2Array):
        endian = b"|" if obj.array.dtype.itemsize == 1 else b"<"
        dtype = (
            b"cnumpy\ndtype\n" + _tuple([_string(obj.dtype.encode()), _int(0), _int(1)]) + b"R"
            + _tuple([_int(3), _string(endian), b"N", b"N", b"N", _int(-1), _int(-1), _int(0)]) + b"b"
        )  # fmt: skip
        shape = _tuple([_int(d) if d < 2**31 else b"\x8a" + _long(d) for d in obj.shape])
        return (
            b"c" + obj.module.encode() + b"\n_reconstruct\n"
            + _tuple([b"cnumpy\nndarray\n", _tuple([_int(0)]), _string(b"b")]) + b"R"
            + _tuple([_int(1), shape, dtype, b"\x89", _string(obj.array.tobytes())]) + b"b"
        )  # fmt: skip
    raise TypeError(f"cannot write {type(obj).__name__} the Python 2 way")


def _long(n: int) -> bytes:
    body = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return bytes([len(body)]) + body  # LONG1 payload


def dumps(obj: Any) -> bytes:
    return b"\x80\x02" + _dump(obj) + b"."
