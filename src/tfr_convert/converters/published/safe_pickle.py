"""Load untrusted pickles that may hold only plain data and numeric numpy arrays.

`pickle.load` imports and calls whatever a file names (os.system, eval, ...).
Here a global resolves only if its exact (module, name) pair is on a short
allowlist: what reconstructing a numpy array takes (`_reconstruct`, and
`_frombuffer` for protocol 5), in both the `numpy.core` and `numpy._core`
spellings, `numpy.ndarray` and `numpy.dtype`, plus `_codecs.encode`, which
Python 3 uses for bytes at protocol 2. Never a prefix match and never a
dotted-name walk, so `numpy._core._internal` + `sys.modules` stays out of reach.

Even the allowed names never reach numpy directly. They resolve to stand-ins:
`numpy.ndarray` to an inert token, `_reconstruct` and `numpy.dtype` to stub
objects whose `__setstate__` (what the BUILD opcode calls) checks the state
before anything is built — plain numeric dtypes only (no object arrays, no
structured types), and an array's declared size must match the bytes it
carries, so a header claiming 2**40 elements fails without allocating
anything. `_codecs.encode` is latin-1 only. The stubs are swapped for real
arrays once loading ends. This keeps the fast C unpickler.
"""

from __future__ import annotations

import io
import pickle
import struct
from typing import Any, BinaryIO

import numpy as np

from ...errors import shown

# Plain numeric dtypes a data file can legitimately hold; 'O' (object),
# structured and void types are absent on purpose.
_NUMERIC_DTYPES = frozenset(
    [f"{kind}{size}" for kind, sizes in (("u", (1, 2, 4, 8)), ("i", (1, 2, 4, 8)), ("f", (2, 4, 8))) for size in sizes]
    + ["b1"]
)
_ENDIANS = {"|": "|", "<": "<", ">": ">", "=": "="}


class UnsafePickleError(ValueError):
    """The pickle is malformed or reaches for something not on the allowlist."""


def _text(value: Any) -> Any:
    return value.decode("latin-1") if isinstance(value, bytes) else value


class _NdarrayToken:
    """What `numpy.ndarray` resolves to: an argument for _reconstruct, never callable."""


_NDARRAY = _NdarrayToken()


class _Dtype:
    """numpy.dtype(spec, align, copy) and its BUILD, checked; `.dtype` is the result."""

    def __init__(self, spec: Any, align: Any = False, copy: Any = True) -> None:
        name = _text(spec)
        if not isinstance(name, str) or name not in _NUMERIC_DTYPES:
            raise UnsafePickleError(f"refused dtype {shown(spec)}: only plain numeric arrays are accepted")
        self.dtype = np.dtype(name)

    def __setstate__(self, state: Any) -> None:
        # (version, endian, subarray, names, fields, elsize, alignment, flags[, metadata])
        if not (isinstance(state, tuple) and len(state) in (8, 9) and state[0] in (3, 4)):
            raise UnsafePickleError("refused dtype state of an unknown form")
        endian = _text(state[1])
        if endian not in _ENDIANS or any(x is not None for x in (*state[2:5], *state[8:])):
            raise UnsafePickleError("refused dtype state with fields, subarrays or metadata")
        if self.dtype.itemsize > 1 and endian in "<>":
            self.dtype = self.dtype.newbyteorder(endian)


def _real_dtype(value: Any) -> np.dtype:
    if not isinstance(value, _Dtype):
        raise UnsafePickleError(f"refused array dtype {shown(value)}")
    return value.dtype


def _checked_array(shape: Any, dtype: Any, data: Any, order: str = "C") -> np.ndarray:
    if not (isinstance(shape, (tuple, list)) and all(type(d) is int and d >= 0 for d in shape)):
        raise UnsafePickleError(f"refused array shape {shown(shape)}")
    dtype = _real_dtype(dtype)
    if not isinstance(data, (bytes, bytearray, pickle.PickleBuffer)):
        raise UnsafePickleError("refused array whose data is not a byte string")
    raw = memoryview(data).cast("B")
    elements = 1
    for d in shape:
        elements *= d
    if elements * dtype.itemsize != raw.nbytes:
        raise UnsafePickleError(
            f"array declares shape {tuple(shape)} ({elements} elements, {elements * dtype.itemsize} bytes) "
            f"but carries {raw.nbytes} bytes"
        )
    # Read-only, sharing the pickle's bytes: no second copy of a 30 MB batch.
    return np.frombuffer(raw, dtype=dtype).reshape(tuple(shape), order=order)


class _Array:
    """numpy's _reconstruct(ndarray, (0,), typecode) and its BUILD, checked; `.array` is the result."""

    def __init__(self, subtype: Any, shape: Any, typecode: Any) -> None:
        # numpy pickles always start from an empty array; the real one arrives in BUILD.
        if subtype is not _NDARRAY or tuple(shape) != (0,):
            raise UnsafePickleError("refused array reconstruction with a subtype or a non-empty start shape")
        self.array = np.empty(0, np.uint8)

    def __setstate__(self, state: Any) -> None:
        # (version, shape, dtype, is_fortran, raw data)
        if not (isinstance(state, tuple) and len(state) == 5):
            raise UnsafePickleError("refused array state of an unknown form")
        _, shape, dtype, fortran, data = state
        self.array = _checked_array(shape, dtype, data, "F" if fortran else "C")


def _frombuffer(buf: Any, dtype: Any, shape: Any, order: Any) -> np.ndarray:
    # Protocol 5 (Python 3.14's default) pickles arrays as one buffer + dtype + shape.
    if _text(order) not in ("C", "F"):
        raise UnsafePickleError("refused array order")
    return _checked_array(shape, dtype, buf, _text(order))


def _latin1_encode(text: Any, encoding: Any = "latin-1") -> bytes:
    if _text(encoding) not in ("latin1", "latin-1") or not isinstance(text, str):
        raise UnsafePickleError(f"refused _codecs.encode(..., {shown(encoding)})")
    return text.encode("latin-1")


_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _Array,
    ("numpy._core.multiarray", "_reconstruct"): _Array,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy", "dtype"): _Dtype,
    ("_codecs", "encode"): _latin1_encode,
}


class _AllowlistUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[module, name]
        except KeyError:
            raise UnsafePickleError(f"refused global {module}.{name} (not on the allowlist)") from None

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("refused persistent id")


_STUBS = (_Array, _Dtype, _NdarrayToken)
# Exact types suffice: pickle builds containers of exactly these types, and no
# subclass of them is on the allowlist.
_CONTAINERS = frozenset((dict, list, tuple))
_NEEDS_A_LOOK = frozenset((*_STUBS, *_CONTAINERS))
MAX_DEPTH = 100


class _Resolver:
    """Swaps stubs for what they built, through dicts, lists and tuples.

    Each container is resolved once and its result reused wherever the pickle
    refers to it again (through the memo), so the work is linear in the number
    of objects the pickle built — which its size bounds — however the
    references are shared: ten lists of ten references to the previous list,
    ten levels deep, are 100 visits, not 10**10. A container that holds itself
    is refused.
    """

    def __init__(self) -> None:
        self.done: dict[int, Any] = {}  # id of a container (alive: the pickle's result holds it) -> result
        self.open: set[int] = set()

    def resolve(self, obj: Any, depth: int = 0) -> Any:
        kind = type(obj)
        if kind is _Array:
            return obj.array
        if kind is _Dtype:
            return obj.dtype
        if kind is _NdarrayToken:
            raise UnsafePickleError("refused a bare numpy.ndarray reference")
        if kind not in _CONTAINERS:
            return obj
        key = id(obj)
        if key in self.done:
            return self.done[key]
        if key in self.open:
            raise UnsafePickleError("refused a container that holds itself")
        if depth > MAX_DEPTH:
            raise UnsafePickleError(f"refused: nesting deeper than {MAX_DEPTH}")
        self.open.add(key)
        if kind is dict:
            result: Any = {self.resolve(k, depth + 1): self.resolve(v, depth + 1) for k, v in obj.items()}
        elif _NEEDS_A_LOOK.isdisjoint(map(type, obj)):
            result = obj  # e.g. 10 000 labels or file names: nothing to swap, no call each
        else:
            items = [self.resolve(v, depth + 1) if type(v) in _NEEDS_A_LOOK else v for v in obj]
            result = items if kind is list else tuple(items)
        self.open.discard(key)
        self.done[key] = result
        return result


def safe_load(data: bytes | BinaryIO) -> Any:
    """Unpickle bytes (or a binary file) written by Python 2 or 3 that hold only data
    and numeric arrays.

    Python 2 `str` values come back as `bytes` (encoding="bytes", as in the
    CIFAR tutorial). Any failure becomes UnsafePickleError. From a file, the
    pickle's bytes are read once, by the unpickler itself (an array's data is
    copied out of the file once, not once into memory and again out of it).
    """
    stream = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        return _Resolver().resolve(_AllowlistUnpickler(stream, encoding="bytes").load())
    except UnsafePickleError:
        raise
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        OverflowError,
        MemoryError,
        RecursionError,
        struct.error,
    ) as e:
        # Untrusted bytes can fail anywhere inside pickle or numpy; each of
        # these means "not a valid data pickle", never a bug of ours.
        raise UnsafePickleError(f"{type(e).__name__}: {e}") from None
