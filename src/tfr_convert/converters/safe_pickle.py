"""Load untrusted pickles that may hold only plain data and numeric numpy arrays.

`pickle.load` imports and calls whatever a file names (os.system, eval, ...).
Here a global resolves only if its exact (module, name) pair is on a short
allowlist: what reconstructing a numpy array takes (`_reconstruct`, and
`_frombuffer` for protocol 5), in both the `numpy.core` and `numpy._core`
spellings, plus `_codecs.encode`, which Python 3 uses for bytes at protocol 2. Never a prefix match and never a dotted-name walk, so
`numpy._core._internal` + `sys.modules` stays out of reach.

Even the allowed pieces are narrowed: dtypes are plain numeric (no object
arrays, no structured types), `_codecs.encode` is latin-1 only, and every
BUILD (the opcode that sets an object's state) is checked before numpy sees
it — an array's declared size must match the bytes it carries, so a header
claiming 2**40 elements fails without allocating anything.
"""

from __future__ import annotations

import io
import pickle
import struct
from typing import Any, ClassVar

import numpy as np

# Plain numeric dtypes a data file can legitimately hold; 'O' (object),
# structured and void types are absent on purpose.
_NUMERIC_DTYPES = frozenset(
    [f"{kind}{size}" for kind, sizes in (("u", (1, 2, 4, 8)), ("i", (1, 2, 4, 8)), ("f", (2, 4, 8))) for size in sizes]
    + ["b1"]
)
_ENDIANS = ("|", "<", ">", "=")


class UnsafePickleError(ValueError):
    """The pickle is malformed or reaches for something not on the allowlist."""


def _text(value: Any) -> Any:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _numeric_dtype(spec: Any, align: Any = False, copy: Any = True) -> np.dtype:
    name = _text(spec)
    if not isinstance(name, str) or name not in _NUMERIC_DTYPES:
        raise UnsafePickleError(f"refused dtype {spec!r}: only plain numeric arrays are accepted")
    # Always a copy: the BUILD that follows must never touch numpy's shared singletons.
    return np.dtype(name, align=False, copy=True)


def _latin1_encode(text: Any, encoding: Any = "latin-1") -> bytes:
    if _text(encoding) not in ("latin1", "latin-1") or not isinstance(text, str):
        raise UnsafePickleError(f"refused _codecs.encode(..., {encoding!r})")
    return text.encode("latin-1")


def _reconstruct(subtype: Any, shape: Any, typecode: Any) -> np.ndarray:
    # numpy pickles always start from an empty array; its real shape and dtype
    # arrive in the BUILD state, which _check_array_state vets.
    if subtype is not np.ndarray or tuple(shape) != (0,):
        raise UnsafePickleError("refused array reconstruction with a subtype or a non-empty start shape")
    return np.empty(0, np.uint8)


def _frombuffer(buf: Any, dtype: Any, shape: Any, order: Any) -> np.ndarray:
    # Protocol 5 (Python 3.14's default) pickles arrays as one buffer + dtype + shape.
    if not isinstance(buf, (bytes, bytearray, pickle.PickleBuffer)) or _text(order) not in ("C", "F"):
        raise UnsafePickleError("refused array buffer")
    data = bytes(buf)
    _check_array_state((1, tuple(shape) if isinstance(shape, (tuple, list)) else shape, dtype, False, data))
    return np.frombuffer(data, dtype=dtype).reshape(shape, order=_text(order)).copy()


_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _numeric_dtype,
    ("_codecs", "encode"): _latin1_encode,
}


def _check_dtype_state(state: Any) -> None:
    # (version, endian, subarray, names, fields, elsize, alignment, flags[, metadata])
    if not (isinstance(state, tuple) and len(state) in (8, 9) and state[0] in (3, 4)):
        raise UnsafePickleError("refused dtype state of an unknown form")
    if _text(state[1]) not in _ENDIANS or any(x is not None for x in (*state[2:5], *state[8:])):
        raise UnsafePickleError("refused dtype state with fields, subarrays or metadata")


def _check_array_state(state: Any) -> None:
    # (version, shape, dtype, is_fortran, raw data)
    if not (isinstance(state, tuple) and len(state) == 5):
        raise UnsafePickleError("refused array state of an unknown form")
    _, shape, dtype, _, data = state
    if not (isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape)):
        raise UnsafePickleError(f"refused array shape {shape!r}")
    if not isinstance(dtype, np.dtype) or dtype.fields is not None or dtype.hasobject or dtype.kind not in "uifb":
        raise UnsafePickleError(f"refused array dtype {dtype!r}")
    if not isinstance(data, bytes):
        raise UnsafePickleError("refused array whose data is not a byte string")
    elements = 1
    for d in shape:
        elements *= d
    if elements * dtype.itemsize != len(data):
        raise UnsafePickleError(
            f"array declares shape {shape} ({elements} elements, {elements * dtype.itemsize} bytes) "
            f"but carries {len(data)} bytes"
        )


class _AllowlistUnpickler(pickle._Unpickler):
    """The pure-Python unpickler (pickle._Unpickler), because only it lets us
    check each BUILD before it runs; its speed is plenty for a few large arrays."""

    dispatch: ClassVar[dict] = dict(pickle._Unpickler.dispatch)

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[module, name]
        except KeyError:
            raise UnsafePickleError(f"refused global {module}.{name} (not on the allowlist)") from None

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("refused persistent id")

    def load_build(self) -> None:
        state = self.stack.pop()
        target = self.stack[-1]
        if isinstance(target, np.dtype):
            _check_dtype_state(state)
        elif type(target) is np.ndarray:
            _check_array_state(state)
        else:
            raise UnsafePickleError(f"refused to set the state of a {type(target).__name__}")
        target.__setstate__(state)

    dispatch[pickle.BUILD[0]] = load_build


def safe_load(data: bytes) -> Any:
    """Unpickle bytes written by Python 2 or 3 that hold only data and numeric arrays.

    Python 2 `str` values come back as `bytes` (encoding="bytes", as in the
    CIFAR tutorial). Any failure becomes UnsafePickleError.
    """
    try:
        return _AllowlistUnpickler(io.BytesIO(data), encoding="bytes").load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            OverflowError, MemoryError, RecursionError, struct.error) as e:  # fmt: skip
        # Untrusted bytes can fail anywhere inside pickle or numpy; each of
        # these means "not a valid data pickle", never a bug of ours.
        raise UnsafePickleError(f"{type(e).__name__}: {e}") from None
