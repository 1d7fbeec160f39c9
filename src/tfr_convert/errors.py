"""One exception family for everything a user can get wrong.

The CLI maps any `TfrConvertError` to exit code 1 in a single place, so library
code raises these (never prints, never exits) and puts the file and the
position (row, record index, byte offset) into the message itself.
"""

from __future__ import annotations

import base64
import io
import pickle
import re


class TfrConvertError(Exception):
    """Base class: a data or I/O problem the user can fix. Exit code 1.

    `where` (set by `locate`) names the item the error happened in; it is put
    before the message, so an error raised deep inside a converter can be given
    its file and row on the way up without building a new exception.
    """

    where: str = ""
    exit_code = 1
    #: the problem is one item's (an image, a row): --on-error skip would leave it out
    skippable = False
    #: what the command line adds to the message, where it knows better (an option to try)
    hint = ""

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


def signal_number(interrupt: BaseException) -> int:
    """The signal a KeyboardInterrupt stands for: SIGTERM's (Terminated), else SIGINT's."""
    return getattr(interrupt, "signum", 2)


class SourceError(TfrConvertError):
    """An input file is missing, malformed or inconsistent."""


class FeatureError(TfrConvertError):
    """A value cannot be represented as a tf.train.Feature."""


class RecordError(TfrConvertError):
    """A TFRecord file is corrupt: bad CRC, truncated, or an impossible length."""

    def __init__(self, path: str, index: int, offset: int, problem: str, kind: str = "") -> None:
        self.path, self.index, self.offset, self.problem = path, index, offset, problem
        self.kind = kind  # the scan's name for the problem (containers.scan.PROBLEMS), where known
        super().__init__(f"{path}: record {index} at byte offset {offset}: {problem}")

    def __reduce__(self):  # its __init__ takes the fields, not the message
        return (type(self), (self.path, self.index, self.offset, self.problem, self.kind), self.__dict__)


class Interrupted(TfrConvertError):
    """The run was interrupted (SIGINT, SIGTERM), or lost a worker; what it finished is
    kept for --resume. Made with the signal, it exits as a shell reports a process that
    signal ended: 128 + its number (130 for Ctrl-C, 143 for SIGTERM)."""

    def __init__(self, message: str, signum: int | None = None) -> None:
        super().__init__(message)
        if signum is not None:
            self.exit_code = 128 + signum


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be (the CLI turns it into one), so that a run
    ends as an interrupted one does; `signum` tells the two apart."""

    signum = 15


class WorkerLost(TfrConvertError):
    """A worker process ended without sending its result (killed by a signal, most
    often the kernel's out-of-memory killer)."""


class OutputError(TfrConvertError):
    """The output directory cannot be written as asked (exists, not writable...)."""


class OptionError(TfrConvertError):
    """An option names something the input does not have (a CSV column, say): a usage
    error found only once the input is read. Exit code 2."""

    exit_code = 2


class MissingExtra(TfrConvertError):
    """An optional dependency is not installed; the message names the extra. Exit code 2,
    as for a usage error: the command cannot run here as asked, whatever the data."""

    exit_code = 2


class DownloadError(TfrConvertError):
    """A download failed, or its size or checksum does not match the reference."""


# An error crossing a channel that carries only text (a Beam runner's failure message,
# perhaps between machines), as the runner's own words around one marked token.
_MARK, _END = "<<tfr-convert error ", ">>"
_MARKED = re.compile(re.escape(_MARK) + r"([A-Za-z0-9+/=]+)" + re.escape(_END))


def as_text(error: TfrConvertError) -> str:
    """The error's message, for whoever reads the runner's log, then the error itself
    (its class, fields and `where`, pickled) in a marked token that `from_text` finds."""
    packed = io.BytesIO()
    pickler = pickle.Pickler(packed)
    # the classes' own __reduce__, whatever a library registered for exceptions in
    # copyreg (tblib, which Dask installs, pickles them with their tracebacks)
    pickler.dispatch_table = {}
    pickler.dump(error)
    return f"{error} {_MARK}{base64.b64encode(packed.getvalue()).decode('ascii')}{_END}"


class _ErrorsOnly(pickle.Unpickler):
    """Unpickles this module's error classes and plain data, nothing else: the token
    passed through a runner's messages, which this process does not control."""

    def find_class(self, module: str, name: str) -> type:
        cls = globals().get(name) if module == __name__ else None
        if isinstance(cls, type) and issubclass(cls, TfrConvertError):
            return cls
        raise pickle.UnpicklingError(f"{module}.{name} is not an error of tfr-convert's")


def from_text(text: str) -> TfrConvertError | None:
    """The error `as_text` marked somewhere in `text`, as it was raised; None if none is."""
    marked = _MARKED.search(text)
    if marked is None:
        return None
    try:
        error = _ErrorsOnly(io.BytesIO(base64.b64decode(marked[1], validate=True))).load()
    except (ValueError, TypeError, EOFError, pickle.UnpicklingError):
        return None
    return error if isinstance(error, TfrConvertError) else None


def shown(value: object, limit: int = 40) -> str:
    """A value from an untrusted file, for a message: at most `limit` characters, built
    without ever forming the whole repr (a list of ten references to a list of ten...,
    ten levels deep, has a repr of 10**10 items; a 4,300-digit integer has none)."""
    parts: list[str] = []
    room = [limit + 1]

    def emit(text: str) -> None:
        parts.append(text[: room[0]])
        room[0] -= len(parts[-1])

    def walk(v: object, depth: int) -> None:
        if room[0] <= 0:
            return
        if isinstance(v, (list, tuple, dict, set, frozenset)):
            if depth > 20:
                emit("...")
                return
            opening, closing = {list: ("[", "]"), tuple: ("(", ")"), dict: ("{", "}")}.get(
                type(v), (f"{type(v).__name__}({{", "})")
            )
            emit(opening)
            for i, item in enumerate(v.items() if isinstance(v, dict) else v):
                if room[0] <= 0:
                    return
                if i:
                    emit(", ")
                if isinstance(v, dict):
                    walk(item[0], depth + 1)
                    emit(": ")
                    walk(item[1], depth + 1)
                else:
                    walk(item, depth + 1)
            emit(closing)
        elif type(v) is int and v.bit_length() > 64:
            emit(f"an integer of {v.bit_length()} bits")
        elif isinstance(v, (bytes, bytearray, str)):
            emit(repr(v[: limit + 1]))
        else:
            try:
                emit(repr(v))
            except Exception:  # an untrusted object's repr may fail in any way
                emit(f"<{type(v).__name__}>")

    walk(value, 0)
    text = "".join(parts)
    return text if len(text) <= limit else text[: limit - 3] + "..."
