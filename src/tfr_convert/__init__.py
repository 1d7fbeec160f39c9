"""tfr-convert: datasets people download -> sharded, verified TFRecord files."""

from __future__ import annotations

from .errors import TfrConvertError
from .version import __version__

__all__ = ["TfrConvertError", "__version__", "load", "write"]


def load(directory: str, split: str = "train", **kwargs):
    """A `tf.data.Dataset` of a converted dataset's split (see tfr_convert.dataset.loader.load).

    TensorFlow is imported when this is called, not when tfr_convert is imported.
    """
    from .dataset.loader import load as _load

    return _load(directory, split, **kwargs)


def write(data, out: str, **options) -> dict:
    """Convert data held in Python (a pandas DataFrame, a pyarrow Table or RecordBatchReader,
    a Hugging Face Dataset or DatasetDict, or dicts) as `tfr-convert table` converts a
    file; options are the command line's long options in snake_case (`split="train=0.8,
    test=0.2"`, `label_column="y"`, `workers=2`). Returns the run's summary (as `--json`
    prints it); raises the TfrConvertError family (see tfr_convert.writing.write)."""
    from .writing import write as _write

    return _write(data, out, **options)
