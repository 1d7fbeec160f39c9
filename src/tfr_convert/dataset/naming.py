"""The names of everything a run writes, shared by the writers and the readers: shard
files, the metadata files, the temporaries and the work folder.

`ShardName` is the only place that formats or parses
`{name}-{split}.{format}-{index:05d}-of-{count:05d}` (TFDS's default template; format
is tfrecord or array_record).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import SourceError

INFO, FEATURES, MANIFEST = "dataset_info.json", "features.json", "manifest.json"
#: the keypoints' names and skeleton (pairs of keypoints counted from 1, as COCO gives them)
KEYPOINTS = "keypoints.json"
#: the Hugging Face features of the columns a table from a save_to_disk folder kept whole
HF_FEATURES = "huggingface_features.json"
#: every temporary a run writes into the output directory starts with this
TEMP_PREFIX = ".tfr-convert-tmp-"
# Where a run into a remote (or mount point) DIR works, inside DIR; while its commit is
# under way (or was cut short) the folder holds this record.
WORK_FOLDER, COMMITTING = ".tfr-convert", "committing"


@dataclass(frozen=True)
class ShardName:
    name: str
    split: str
    index: int
    count: int
    file_format: str = "tfrecord"

    _PATTERN = re.compile(
        r"^(?P<name>.+)-(?P<split>[^-/]+)\.(?P<format>tfrecord|array_record)-(?P<index>\d{5,})-of-(?P<count>\d{5,})$"
    )
    TFDS_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.split}.{self.file_format}-{self.index:05d}-of-{self.count:05d}"

    @classmethod
    def parse(cls, filename: str) -> ShardName | None:
        m = cls._PATTERN.match(os.path.basename(filename))
        if not m:
            return None
        return cls(m["name"], m["split"], int(m["index"]), int(m["count"]), m["format"])


# The longest file name Linux, macOS and Windows file systems all take, in UTF-8 bytes.
NAME_MAX = 255
# A path taken from the data: deep enough for any dataset, short of PATH_MAX below OUT.
RELATIVE_MAX = 2048
_DRIVE = re.compile(r"^[A-Za-z]:")
# A name holding one is two lines to a reader of a listing, a log or a labels file.
_CONTROL = re.compile("[\x01-\x1f\x7f-\x9f\u2028\u2029]")


def component_problem(value: str) -> str | None:
    """Why `value` (a class, split or file name from the data) cannot be one component of
    a path written under OUT, or None: the one check every such name passes, so that data
    never chooses where a file goes."""
    if not value:
        return "is empty"
    if value in (".", ".."):
        return f"is {value!r}, which names a folder, not a file or folder of its own"
    if "\0" in value:
        return "holds a NUL byte"
    if _CONTROL.search(value):
        return "holds a control character (a line break, a tab...)"
    if "/" in value or "\\" in value:
        return "holds a path separator"
    if _DRIVE.match(value):
        return "starts like a Windows drive"
    if len(value.encode("utf-8", "surrogateescape")) > NAME_MAX:
        return f"is longer than {NAME_MAX} bytes, the longest name a file system takes"
    return None


def checked_component(value: str, what: str) -> str:
    """`value` as one path component; a SourceError naming `what` it is (a class name...)
    when it cannot be one."""
    problem = component_problem(value)
    if problem is not None:
        raise SourceError(f"{what} {value!r} {problem}: it cannot name a file or folder under the output")
    return value


def checked_relative(name: str, what: str = "file name") -> str:
    """A `/`-separated path from the data (a record's file name; `\\` counts as `/`),
    normalised, every component checked: nothing absolute, nothing that climbs out."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        problem: str | None = "is empty"
    elif name.startswith(("/", "\\")):
        problem = "is absolute"
    elif len(name.encode("utf-8", "surrogateescape")) > RELATIVE_MAX:
        problem = f"is longer than {RELATIVE_MAX} bytes"
    else:
        problem = next(filter(None, map(component_problem, parts)), None)
    if problem is not None:
        raise SourceError(f"{what} {name!r} is not a relative path inside the output ({problem})")
    return "/".join(parts)


# Every character str.splitlines() splits at: a name holding one is two lines to a reader.
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def holds_line_break(name: str) -> bool:
    """Whether `name` would read back from a one-per-line file as two names."""
    return _LINE_BREAKS.search(name) is not None


def lines_file(names: Iterable[str], what: str) -> bytes:
    """Names one per line, UTF-8 (TFDS ClassLabel's names file, YOLO's classes.txt); a
    name holding a line break is a SourceError naming it, as it would read back as two."""
    names = list(names)
    for number, name in enumerate(names, 1):
        if holds_line_break(name):
            raise SourceError(f"{what}: name {number} {name!r} holds a line break, and names are written one per line")
    return "".join(n + "\n" for n in names).encode("utf-8", "surrogateescape")
