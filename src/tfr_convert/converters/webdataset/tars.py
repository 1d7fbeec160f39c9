"""webdataset's tar shards: the members listed from their headers alone (their data is
read later, by offset), checked, and grouped into samples as webdataset groups them.

A member's key is its path up to the first '.' of its last part, its extension the rest,
lowercased (webdataset's `base_plus_ext`); members in a row with one key are one sample.
Only regular files are read: a link, a device or a FIFO is refused, as is a name that is
absolute or climbs out (`..`). A member whose data would run past the end of the file
(a shard cut short, or a header claiming 2^40 bytes) ends the shard: its samples before
it are kept and the loss is said, as `records --on-error skip` says a salvaged loss.
"""

from __future__ import annotations

import itertools
import re
import tarfile
from typing import NamedTuple

from ...errors import SourceError
from ...storage import fs

#: brace patterns as webdataset writes shard lists: data-{000..099}.tar, {train,val}.tar
_BRACES = re.compile(r"\{(\d+)\.\.(\d+)\}")


class Member(NamedTuple):
    ext: str
    offset: int  # of its data in the shard
    size: int


class Sample(NamedTuple):
    """One sample: the shard it is in, its key, and its members (by extension). Plain
    tuples (as an engine's plan may carry them, through JSON) read the same by position."""

    shard: str
    key: str
    members: tuple[Member, ...]


def expanded(pattern: str) -> list[str]:
    """A shard list as webdataset writes one (braceexpand's): each {a,b,...} to each choice
    and each {A..B} to each number, zero-padded as A is, nested braces included."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth, commas = 0, []
    for at in range(start, len(pattern)):
        c = pattern[at]
        depth += (c == "{") - (c == "}")
        if c == "," and depth == 1:
            commas.append(at)
        if depth == 0:
            break
    else:
        return [pattern]  # an unclosed brace: a name of its own
    head, body, tail = pattern[:start], pattern[start + 1 : at], pattern[at + 1 :]
    if commas:
        bounds = [start, *commas, at]
        choices = [pattern[a + 1 : b] for a, b in itertools.pairwise(bounds)]
    else:
        match = _BRACES.fullmatch("{" + body + "}")
        if match is None:
            return [head + "{" + x for x in expanded(body + "}" + tail)]
        first, last = match.group(1), match.group(2)
        if int(last) < int(first) or int(last) - int(first) > 1_000_000:
            raise SourceError(f"{pattern}: {{{first}..{last}}} is no range of shards")
        choices = [str(n).zfill(len(first)) for n in range(int(first), int(last) + 1)]
    return [name for choice in choices for name in expanded(head + choice + tail)]


def key_and_ext(name: str) -> tuple[str, str] | None:
    """(key, extension) of a member's name as webdataset splits it; None when it has no '.'."""
    folder, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    if not dot or not stem:
        return None
    return (f"{folder}/{stem}" if folder else stem), ext.lower()


def _refused(path: str, info: tarfile.TarInfo) -> str | None:
    """Why a member cannot be read (a link, a device...; a name that leaves the sample), or None."""
    if info.isdir():
        return None
    if not info.isreg():
        kind = "a symbolic link" if info.issym() else "a hard link" if info.islnk() else "a device or FIFO"
        return f"{path}: member {info.name!r} is {kind}: a webdataset shard holds regular files only"
    parts = info.name.replace("\\", "/").split("/")
    if info.name.startswith(("/", "\\")) or ".." in parts:
        return f"{path}: member {info.name!r} is absolute or climbs out with '..': no sample's file is named so"
    return None


def samples(path: str, warnings: list[str]) -> list[Sample]:
    """The samples of one uncompressed tar shard, in order."""
    if path.endswith((".gz", ".tgz")):
        raise SourceError(f"{path}: a gzipped tar: gunzip it first (tfr-convert webdataset reads plain .tar shards)")
    size = fs.getsize(path)
    found: list[Sample] = []
    key, members, exts = None, [], set()
    try:
        with fs.open_input(path) as f, tarfile.open(fileobj=f, mode="r:") as tar:
            for info in tar:
                why = _refused(path, info)
                if why is not None:
                    raise SourceError(why)
                if not info.isreg():
                    continue
                if info.offset_data + info.size > size:
                    cut = key_and_ext(info.name)
                    if cut is not None and cut[0] == key:  # its sample lacks it: lost too
                        key = None
                    warnings.append(
                        f"{path}: member {info.name!r} claims {info.size} bytes at byte {info.offset_data}, "
                        f"past the end of the file ({size} bytes): the samples before it are kept, it, its "
                        f"sample and the rest of the shard lost"
                    )
                    break
                split = key_and_ext(info.name)
                if split is None:
                    continue  # no extension: webdataset skips it too
                if split[0] != key:
                    if key is not None:
                        found.append(Sample(path, key, tuple(members)))
                    key, members, exts = split[0], [], set()
                if split[1] in exts:
                    raise SourceError(f"{path}: member {info.name!r}: a second .{split[1]} for the sample {key!r}")
                exts.add(split[1])
                members.append(Member(split[1], info.offset_data, info.size))
    except tarfile.TarError as e:
        if not found and key is None:
            raise SourceError(f"{path}: not a tar shard webdataset reads ({e})") from None
        # the file ends inside a header or a member's padding: what came before is kept,
        # the sample being read is lost (its last members may be missing)
        warnings.append(
            f"{path}: ends inside a member or its header ({e}, {size} bytes): the samples before it are kept, "
            f"{'the sample ' + repr(key) + ' and ' if key is not None else ''}the rest of the shard lost"
        )
        key = None
    if key is not None:
        found.append(Sample(path, key, tuple(members)))
    return found
