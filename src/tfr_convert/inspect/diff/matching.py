"""Records matched across the two sides of a split: equal payloads first, then by key;
keys moved between splits."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

DIGEST = 16  # bytes of a record's sha256 kept to tell it from another


@dataclass(slots=True)
class Entry:
    """One record left over once equal payloads are matched: where it is, and its key."""

    key: str
    digest: bytes
    path: str
    index: int
    offset: int | None


@dataclass
class Records:
    """One side's records of a split, file by file: (path, hashes, offsets) as file_entries
    gives them. No object a record: a side of millions of records is a few bytes each."""

    files: list[tuple[str, bytes, array]] = field(default_factory=list)
    keys: dict[str, list[str]] = field(default_factory=dict)  # by path, of files whose keys were read with them

    def __len__(self) -> int:
        return sum(len(offsets) for _, _, offsets in self.files)

    def digests(self) -> Iterator[bytes]:
        for _, digests, _ in self.files:
            for at in range(0, len(digests), DIGEST):
                yield digests[at : at + DIGEST]

    def entries(self, chosen: list[int]) -> list[Entry]:
        """The records at these positions (counted over the files in order), as Entries."""
        out, base, files = [], 0, iter(self.files)
        path, digests, offsets = next(files, ("", b"", array("q")))
        for position in chosen:
            while position - base >= len(offsets):
                base += len(offsets)
                path, digests, offsets = next(files)
            i = position - base
            offset = offsets[i]
            key = self.keys[path][i] if path in self.keys else ""
            out.append(Entry(key, digests[i * DIGEST : (i + 1) * DIGEST], path, i, None if offset < 0 else offset))
        return out


@dataclass
class SplitDiff:
    split: str
    old: int = 0
    new: int = 0
    unchanged: int = 0
    shards_shared: int = 0
    added: list[Entry] = field(default_factory=list)
    removed: list[Entry] = field(default_factory=list)
    changed: list[tuple[Entry, Entry]] = field(default_factory=list)


def match(split: str, old: Records, new: Records, keys: Callable[[list[Entry]], None]) -> SplitDiff:
    """Equal payloads first, as many of each as both sides hold, the first of a repeated
    one first (their keys are equal too: a key is in the payload); then the records left
    over by key, in order of appearance where a key repeats. `keys` gives those their keys.
    Only the old side's hashes are held in a table; the new side's are streamed past it."""
    result = SplitDiff(split, len(old), len(new))
    waiting = Counter(old.digests())
    new_left = []
    for position, digest in enumerate(new.digests()):
        if waiting[digest] > 0:
            waiting[digest] -= 1
            result.unchanged += 1
        else:
            new_left.append(position)
    remaining = {digest: n for digest, n in waiting.items() if n > 0}
    del waiting
    old_left = []
    if remaining:  # of a payload repeated on the old side, its last ones are those left over
        total = Counter(digest for digest in old.digests() if digest in remaining)
        matched = {digest: total[digest] - n for digest, n in remaining.items()}
        for position, digest in enumerate(old.digests()):
            if digest in matched:
                if matched[digest] > 0:
                    matched[digest] -= 1
                else:
                    old_left.append(position)
    left_old, left_new = old.entries(old_left), new.entries(new_left)
    keys(left_old + left_new)
    by_key: dict[str, list[int]] = {}
    for i, entry in enumerate(left_old):
        by_key.setdefault(entry.key, []).append(i)
    for entry in left_new:
        queue = by_key.get(entry.key)
        if not queue:
            result.added.append(entry)
            continue
        result.changed.append((left_old[queue.pop(0)], entry))
        if not queue:
            del by_key[entry.key]
    result.removed = [left_old[i] for i in sorted(i for queue in by_key.values() for i in queue)]
    return result


def moved(splits: list[SplitDiff]) -> list[dict[str, Any]]:
    """Keys removed from one split and added to another, taken out of both lists."""
    gone: dict[str, list[tuple[SplitDiff, Entry]]] = {}
    for s in splits:
        for entry in s.removed:
            gone.setdefault(entry.key, []).append((s, entry))
    found: list[dict[str, Any]] = []
    taken: set[int] = set()
    for s in splits:
        kept = []
        for entry in s.added:
            candidates = [c for c in gone.get(entry.key, ()) if c[0] is not s and id(c[1]) not in taken]
            if not candidates:
                kept.append(entry)
                continue
            origin, before = candidates[0]
            taken.add(id(before))
            found.append(
                {"key": entry.key, "from": origin.split, "to": s.split, "changed": before.digest != entry.digest}
            )
        s.added = kept
    for s in splits:
        s.removed = [e for e in s.removed if id(e) not in taken]
    return found
