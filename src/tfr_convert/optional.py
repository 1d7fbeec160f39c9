"""Optional dependencies: imported where used, or one line saying which extra installs them.

Conversion and inspection of local files need none of them. TensorFlow is the
`tf` extra: `tfr_convert.load()` and remote paths (gs://, s3://, hdfs://, ram://,
through tf.io.gfile) use it.
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
