"""One exception family for everything a user can get wrong.

The CLI maps any `TfrConvertError` to exit code 1 in a single place, so library
code raises these (never prints, never exits) and puts the file and the
position (row, record index, byte offset) into the message itself.
"""

from __future__ import annotations


class TfrConvertError(Exception):
    """Base class: a data or I/O problem the user can fix. Exit code 1.

    `where` (set by `locate`) names the item the error happened in; it is put
    before the message, so an error raised deep inside a converter can be given
    its file and row on the way up without building a new exception.
    """

    where: str = ""

    def locate(self, where: str) -> TfrConvertError:
        """Name where this happened (the innermost location is kept); returns self, to re-raise."""
        if not self.where:
            self.where = where
        return self

    def __str__(self) -> str:
        message = super().__str__()
        return f"{self.where}: {message}" if self.where else message

    def __reduce__(self):  # keeps `where` (and subclasses' fields) across worker processes
        return (type(self), self.args, self.__dict__)


class SourceError(TfrConvertError):
    """An input file is missing, malformed or inconsistent."""


class FeatureError(TfrConvertError):
    """A value cannot be represented as a tf.train.Feature."""


class RecordError(TfrConvertError):
    """A TFRecord file is corrupt: bad CRC, truncated, or an impossible length."""

    def __init__(self, path: str, index: int, offset: int, problem: str) -> None:
        self.path, self.index, self.offset, self.problem = path, index, offset, problem
        super().__init__(f"{path}: record {index} at byte offset {offset}: {problem}")

    def __reduce__(self):  # its __init__ takes the fields, not the message
        return (type(self), (self.path, self.index, self.offset, self.problem), self.__dict__)


class Interrupted(TfrConvertError):
    """The run was interrupted (SIGINT, SIGTERM); what it finished is kept for --resume."""


class OutputError(TfrConvertError):
    """The output directory cannot be written as asked (exists, not writable...)."""


class DownloadError(TfrConvertError):
    """A download failed, or its size or checksum does not match the reference."""


def shown(value: object, limit: int = 40) -> str:
    """A value from an untrusted file, for a message: short, and never raising (a
    4,300-digit integer or a 5,000-deep nesting cannot be repr'd)."""
    if type(value) is int and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = repr(value)
    except (RecursionError, ValueError, MemoryError):
        return f"a deeply nested or oversized {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
