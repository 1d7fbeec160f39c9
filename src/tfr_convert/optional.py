"""Optional dependencies: imported where used, or one line saying which extra installs them.

Conversion and inspection need none of them. TensorFlow is the `tf` extra, which
`tfr_convert.load()` uses; remote paths need their fsspec backend (stores.py says which).
"""

from __future__ import annotations

from types import ModuleType

from .errors import MissingExtra


def tensorflow(what: str) -> ModuleType:
    """The tensorflow module; `what` (e.g. "tfr_convert.load()") names what needs it."""
    try:
        import tensorflow as tf
    except ImportError:
        raise MissingExtra(f"{what} needs TensorFlow: pip install 'tfr-convert[tf]'") from None
    return tf


def pyarrow(what: str) -> ModuleType:
    """The pyarrow module (with pyarrow.parquet loaded); `what` names what needs it."""
    try:
        import pyarrow
        import pyarrow.parquet  # a submodule: loaded here, so that its absence is told here too
    except ImportError:
        raise MissingExtra(f"{what} needs pyarrow: pip install 'tfr-convert[parquet]'") from None
    return pyarrow
