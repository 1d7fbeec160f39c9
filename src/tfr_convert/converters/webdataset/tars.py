"""webdataset's tar shards: the members listed from their headers alone (their data is
read later, by offset), checked, and grouped into samples as webdataset groups them.

A member's key is its path up to the first '.' of its last part, its extension the rest,
lowercased (webdataset's `base_plus_ext`); members in a row with one key are one sample.
Only regular files are read: a link, a device or a FIFO is refused, as is a name that is
absolute or climbs out (`..`). A member whose data would run past the end of the file
(a shard cut short, or a header claiming 2^40 bytes) ends the shard: its samples before
it are kept and the loss is said, as `records --on-error skip` says a salvaged loss.

A gzipped shard (`.tar.gz`, `.tgz`) is inflated once, streaming, into a local file that is
then read like a plain one; one that would inflate past GUNZIP_RATIO times its size (and
GUNZIP_FLOOR) is refused as the gzip bomb it looks like, and a gzip stream cut short keeps
what came before the cut, like a tar cut short.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator
from typing import IO, Any, NamedTuple

from ...dataset.naming import checked_relative
from ...errors import SourceError
from ...storage import fs

#: brace patterns as webdataset writes shard lists: data-{000..099}.tar, {train,val}.tar
_BRACES = re.compile(r"\{(\d+)\.\.(\d+)\}")


class Member(NamedTuple):
    ext: str
    offset: int  # of its data in the shard
    size: int
    # a small member's bytes (INLINE), read with the listing; as latin-1 text, which an
    # engine's plan carries through JSON as it is
    data: str | None = None


#: members of at most this many bytes (class ids, captions) are read as the shard is listed
INLINE = 256


class Sample(NamedTuple):
    """One sample: the shard it is in, its key, and its members (by extension). `samples`
    gives them as plain tuples of this shape (and of Member's): marshal, which carries a
    listing's parts between processes and digests the plan, takes no named tuple, and
    an engine's plan may carry them through JSON; read by position, they are the same."""

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


class Entry(NamedTuple):
    """A tar member, from its header: its name, type flag, data offset and size."""

    name: str
    kind: bytes
    offset: int
    size: int


class Truncated(Exception):
    """The file ends inside a header: what it says."""


_BLOCK = 512
_KINDS = {b"1": "a hard link", b"2": "a symbolic link", b"3": "a device", b"4": "a device", b"6": "a FIFO",
          b"S": "a sparse file"}  # fmt: skip


_ZEROS = bytes(_BLOCK)


def _reader(f: IO[bytes]) -> Callable[[int, int], bytes]:
    """read_at(offset, n): one pread where `f` is a local file (no buffer filled ahead of a
    512-byte header), else a seek and a read."""
    try:
        fd = f.fileno()
    except (AttributeError, OSError, ValueError):  # a remote file
        fd = None
    if fd is not None:
        return lambda at, n: os.pread(fd, n, at)

    def seek_and_read(at: int, n: int) -> bytes:
        f.seek(at)
        return f.read(n)

    return seek_and_read


def _number(field: bytes) -> int:
    """A header's number: octal digits, or GNU's base-256 (the first byte's top bit set)."""
    if field[:1] and field[0] & 0x80:
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    digits = field.split(b"\0", 1)[0].strip()
    return int(digits, 8) if digits else 0


def _pax(data: bytes) -> dict[str, str]:
    """A PAX header's records ("LENGTH key=value\n" each)."""
    found, at = {}, 0
    while at < len(data):
        space = data.find(b" ", at)
        if space < 0:
            break
        length = int(data[at:space] or b"0")
        if length <= 0:
            break
        key, _, value = data[space + 1 : at + length - 1].partition(b"=")
        found[key.decode("utf-8", "replace")] = value.decode("utf-8", "surrogateescape")
        at += length
    return found


def entries(f: IO[bytes], size: int, path: str) -> Iterator[Entry]:
    """The members of a tar, from their headers (GNU long names and PAX paths and sizes
    taken in), their data passed over; Truncated where the file ends inside a header."""
    at, name_next, size_next = 0, None, None
    read_at = _reader(f)
    while at + _BLOCK <= size:
        header = read_at(at, _BLOCK)
        if len(header) < _BLOCK:
            raise Truncated(f"a header at byte {at} cut short")
        if header == _ZEROS:
            return  # the end-of-archive block
        checksum = _number(header[148:156])
        if checksum != sum(header) - sum(header[148:156]) + 256:  # its own field counted as spaces
            raise SourceError(f"{path}: byte {at}: not a tar header (its checksum is wrong)")
        kind, length = header[156:157], _number(header[124:136])
        name = header[:100].split(b"\0", 1)[0]
        if header[257:263] == b"ustar\0" and header[345:500].strip(b"\0"):
            name = header[345:500].split(b"\0", 1)[0] + b"/" + name
        data_at = at + _BLOCK
        at = data_at + -(-length // _BLOCK) * _BLOCK
        if kind in (b"L", b"x", b"g", b"K"):
            if data_at + length > size or length > 1 << 20:
                raise Truncated(f"an extended header at byte {data_at} claims {length} bytes")
            data = read_at(data_at, length)
            if kind == b"L":
                name_next = data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
            elif kind == b"x":
                pax = _pax(data)
                name_next = pax.get("path", name_next)
                size_next = int(pax["size"]) if pax.get("size", "").isdigit() else size_next
            continue
        text = name_next if name_next is not None else name.decode("utf-8", "surrogateescape")
        if size_next is not None:
            length = size_next
            at = data_at + -(-length // _BLOCK) * _BLOCK
        name_next = size_next = None
        yield Entry(text.rstrip("/") if kind == b"5" else text, kind, data_at, length)
    # no end-of-archive block: the file ends inside a header or a member's padding
    raise Truncated(f"no end-of-archive block before byte {size}")


_EXTENSION = re.compile(r"\.[A-Za-z0-9_-][A-Za-z0-9_.-]{0,59}")


def _same_sample(name: str, key: str) -> bool:
    """Whether `name` is `key` (of a name that passed the path check) and a plain extension:
    its last part then is the key's (no dot in it, not empty) and that extension, which no
    check can refuse but for its length."""
    last = key.rpartition("/")[2]
    rest = name[len(key) :]
    return (
        bool(last)
        and name.startswith(key)
        and _EXTENSION.fullmatch(rest) is not None
        and len((last + rest).encode("utf-8", "surrogateescape")) <= 255
    )


def _refused(path: str, entry: Entry, key: str | None) -> str | None:
    """Why a member cannot be read (a link, a device...; a name that leaves the sample), or
    None. A member of the sample `key`, whose name passed the check, differs from it only
    in its extension, within its last part: only that part's length is left to check."""
    if entry.kind == b"5":
        return None
    if entry.kind not in (b"0", b"\0", b"7"):
        what = _KINDS.get(entry.kind, f"of type {entry.kind!r}")
        return f"{path}: member {entry.name!r} is {what}: a webdataset shard holds regular files only"
    if key is not None and _same_sample(entry.name, key):
        return None
    try:
        checked_relative(entry.name, "its name")
    except SourceError as e:
        return f"{path}: member {entry.name!r}: {e}"
    return None


GZIPPED = (".gz", ".tgz")
GUNZIP_RATIO, GUNZIP_FLOOR = 100, 256 << 20
_GUNZIP_PIECE = 1 << 20


def gunzipped(path: str, spool: str, warnings: list[str]) -> str:
    """A local file holding the gzipped shard `path` inflated (`spool`: its path), read a
    piece at a time; SourceError past GUNZIP_RATIO times its size, or if it is no gzip."""
    import zlib

    size = fs.getsize(path)
    limit = max(GUNZIP_RATIO * size, GUNZIP_FLOOR)
    inflater, written, read, members = zlib.decompressobj(wbits=31), 0, 0, 0
    with fs.open_input(path) as f, open(spool, "wb") as out:
        while piece := f.read(_GUNZIP_PIECE):
            read += len(piece)
            while piece:
                try:
                    data = inflater.decompress(piece, _GUNZIP_PIECE)
                except zlib.error as e:
                    if not written:
                        raise SourceError(f"{path}: not a gzip stream ({e})") from None
                    if members == 0 or piece.strip(b"\0"):  # (zeros after the last member: padding)
                        warnings.append(
                            f"{path}: its gzip stream is damaged before byte {read} ({e}): read up to there"
                        )
                    return spool
                written += len(data)
                if written > limit:
                    raise SourceError(
                        f"{path}: inflates past {limit} bytes, over {GUNZIP_RATIO} times its {size} bytes: a gzip "
                        "bomb? gunzip it yourself if it is meant to be read"
                    )
                out.write(data)
                piece = inflater.unconsumed_tail
                if inflater.eof:  # another gzip member may follow (concatenated gzips)
                    members += 1
                    piece, inflater = inflater.unused_data, zlib.decompressobj(wbits=31)
    if not written:
        raise SourceError(f"{path}: not a gzip stream (nothing inflates from it)")
    if members == 0:
        warnings.append(f"{path}: its gzip stream ends before its end (the file is cut short): read up to there")
    return spool


def samples(path: str, warnings: list[str], named: str | None = None) -> list[Any]:
    """The samples of one uncompressed tar shard, in order; `named`: the shard their items
    and messages name (the gzipped one `path` was inflated from)."""
    if path.endswith(GZIPPED):
        raise SourceError(f"{path}: a gzipped tar is inflated first (gunzipped)")
    shown = named or path
    size = fs.getsize(path)
    found: list[Any] = []  # Sample's shape
    key, members, exts = None, [], set()
    try:
        with fs.open_input(path) as f:
            read_at = _reader(f)
            for entry in entries(f, size, shown):
                why = _refused(shown, entry, key)
                if why is not None:
                    raise SourceError(why)
                if entry.kind == b"5":
                    continue
                if entry.offset + entry.size > size:
                    cut = key_and_ext(entry.name)
                    if cut is not None and cut[0] == key:  # its sample lacks it: lost too
                        key = None
                    warnings.append(
                        f"{shown}: member {entry.name!r} claims {entry.size} bytes at byte {entry.offset}, "
                        f"past the end of the file ({size} bytes): the samples before it are kept, it, its "
                        f"sample and the rest of the shard lost"
                    )
                    break
                split = key_and_ext(entry.name)
                if split is None:
                    continue  # no extension: webdataset skips it too
                if split[0] != key:
                    if key is not None:
                        found.append((shown, key, tuple(members)))
                    key, members, exts = split[0], [], set()
                if split[1] in exts:
                    raise SourceError(f"{shown}: member {entry.name!r}: a second .{split[1]} for the sample {key!r}")
                exts.add(split[1])
                small = None
                if entry.size <= INLINE:
                    small = read_at(entry.offset, entry.size).decode("latin-1")
                members.append((split[1], entry.offset, entry.size, small))
    except Truncated as e:
        if not found and key is None:
            raise SourceError(f"{shown}: not a tar shard webdataset reads ({e})") from None
        # the file ends inside a header: what came before is kept, the sample being read is
        # lost (its last members may be missing)
        warnings.append(
            f"{shown}: ends inside a member or its header ({e}, {size} bytes): the samples before it are kept, "
            f"{'the sample ' + repr(key) + ' and ' if key is not None else ''}the rest of the shard lost"
        )
        key = None
    if key is not None:
        found.append((shown, key, tuple(members)))
    return found
