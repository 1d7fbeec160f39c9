"""tfr-convert: datasets people download -> sharded, verified TFRecord files."""

from __future__ import annotations

__version__ = "0.1.0"


def load(directory: str, split: str = "train", **kwargs):
    """A `tf.data.Dataset` of a converted dataset's split (see tfr_convert.dataset.loader.load).

    TensorFlow is imported when this is called, not when tfr_convert is imported.
    """
    from .dataset.loader import load as _load

    return _load(directory, split, **kwargs)
