"""What each input file looked like when a run began, so that `--resume` can tell,
and name, one that changed since.

A converter whose items are files (an image folder) names each item's file; the
engine records, in plan order, three numbers per file: its size, its modification
time (nanoseconds) and its inode. Any rewrite of a file changes at least one of
them (a file copied over another keeps neither its mtime nor, replaced by rename,
its inode), and taking them costs one stat per file instead of reading it. On an
object store the three are the size, the last-modified time and a number made from
the object's version tag (ETag, generation), all from one listing of the root.

Content digests would be stronger, but reading every image twice is the cost the
journal exists to avoid; sources a converter reads whole anyway (a CSV, annotations)
are digested in its `sources`.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import fs, stores

_ENTRY = struct.Struct("<qqq")  # size, mtime_ns, inode (or version number)
_MISSING = (-1, -1, -1)
FIELDS = ("size", "modification time", "inode")
REMOTE_FIELDS = ("size", "modification time", "version")


def stat_local(root: str, names: Sequence[str]) -> bytes:
    """The packed (size, mtime_ns, inode) of each file root/name (a link's target)."""
    out = bytearray(_ENTRY.size * len(names))
    pack, join, stat = _ENTRY.pack_into, os.path.join, os.stat
    for i, name in enumerate(names):
        try:
            st = stat(join(root, name))
            pack(out, i * _ENTRY.size, st.st_size, st.st_mtime_ns, st.st_ino)
        except (OSError, ValueError):
            pack(out, i * _ENTRY.size, *_MISSING)
    return bytes(out)


def stat_remote(root: str, names: Sequence[str]) -> bytes:
    """As stat_local, from one listing of a remote root."""
    top = root.rstrip("/")
    store, key = stores.filesystem(top)
    with stores.translated(top):
        listing = store.find(key.rstrip("/"), detail=True)
    by_name = {name.rstrip("/")[len(key.rstrip("/")) :].strip("/"): info for name, info in listing.items()}
    out = bytearray()
    for name in names:
        info = by_name.get(name.replace(os.sep, "/"))
        if info is None:
            out += _ENTRY.pack(*_MISSING)
            continue
        modified = stores.modified_of(info)
        version = (stores.version_of(info) or "").encode()
        out += _ENTRY.pack(
            int(info.get("size") or 0),
            round(modified * 1e9) if modified is not None else -1,
            int.from_bytes(hashlib.blake2b(version, digest_size=8).digest(), "little", signed=True),
        )
    return bytes(out)


@dataclass
class InputFiles:
    """The files of a run's items, in plan order, and their packed stats: under one root,
    or under several (`joined`), each root's files after the one's before."""

    roots: tuple[str, ...]
    names: Sequence[str]
    stats: bytes
    ends: tuple[int, ...]  # where each root's files end in `names`

    @classmethod
    def of(
        cls, root: str, names: Sequence[str], filled: Callable[[Callable[[int, int], bytes], int], bytes]
    ) -> InputFiles:
        """filled(fill, n): fill(0, n), possibly computed in parts elsewhere."""
        if fs.is_remote(root):
            return cls((root,), names, stat_remote(root, names), (len(names),))
        return cls((root,), names, filled(lambda lo, hi: stat_local(root, names[lo:hi]), len(names)), (len(names),))

    @classmethod
    def joined(cls, groups: Sequence[InputFiles]) -> InputFiles:
        """The files of several roots (a picture's and its mask's), one group after another."""
        ends = tuple(sum(len(g.names) for g in groups[: i + 1]) for i in range(len(groups)))
        names = [name for g in groups for name in g.names]
        return cls(tuple(r for g in groups for r in g.roots), names, b"".join(g.stats for g in groups), ends)

    def digest(self) -> str:
        return hashlib.sha256(self.stats).hexdigest()

    def sizes(self) -> list[int]:
        """The size of each file under the first root, in order (0 for one that is gone)."""
        return [max(size, 0) for size, _, _ in _ENTRY.iter_unpack(self.stats[: self.ends[0] * _ENTRY.size])]

    def first_change(self, before: bytes) -> str | None:
        """The first file whose stats differ from `before` (the same files, in the same
        order, when the run began), said as a user reads it; None if none differs."""
        if before == self.stats or len(before) != len(self.stats):
            return None
        size = _ENTRY.size
        i = next(i for i in range(0, len(before), size) if before[i : i + size] != self.stats[i : i + size])
        then, now = _ENTRY.unpack_from(before, i), _ENTRY.unpack_from(self.stats, i)
        root = self.roots[bisect.bisect_right(self.ends, i // size)]
        path = fs.join(root, self.names[i // size])
        if now == _MISSING:
            return f"{path} is gone"
        what = [
            f"{field} {a} then, {b} now" if field == "size" else field
            for field, a, b in zip(REMOTE_FIELDS if fs.is_remote(root) else FIELDS, then, now, strict=True)
            if a != b
        ]
        return f"{path} changed ({'; '.join(what)})"
