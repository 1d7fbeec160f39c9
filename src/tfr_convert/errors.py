"""One exception family for everything a user can get wrong.

The CLI maps any `TfrConvertError` to exit code 1 in a single place, so library
code raises these (never prints, never exits) and puts the file and the
position (row, record index, byte offset) into the message itself.
"""

from __future__ import annotations


class TfrConvertError(Exception):
    """Base class: a data or I/O problem the user can fix. Exit code 1."""


class SourceError(TfrConvertError):
    """An input file is missing, malformed or inconsistent."""


class FeatureError(TfrConvertError):
    """A value cannot be represented as a tf.train.Feature."""


class RecordError(TfrConvertError):
    """A TFRecord file is corrupt: bad CRC, truncated, or an impossible length."""

    def __init__(self, path: str, index: int, offset: int, problem: str) -> None:
        self.path, self.index, self.offset, self.problem = path, index, offset, problem
        super().__init__(f"{path}: record {index} at byte offset {offset}: {problem}")

    def __reduce__(self):  # keeps it picklable across worker processes
        return (type(self), (self.path, self.index, self.offset, self.problem))


class OutputError(TfrConvertError):
    """The output directory cannot be written as asked (exists, not writable...)."""


class DownloadError(TfrConvertError):
    """A download failed, or its size or checksum does not match the reference."""
