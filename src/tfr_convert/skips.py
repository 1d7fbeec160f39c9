"""Items left out under --on-error skip, reported in proportion.

A CSV of a million bad rows must not become a million stderr lines, a manifest
of a hundred megabytes, or a list that grows with every row: the first LISTED
items are kept whole (in the order they were met, which is the same for any
worker count and after --resume), and every item is counted under its reason's
kind — the reason with its quoted values, paths and numbers taken out, so
"duplicate row: 'a.png' is already on line 2" and "duplicate row: 'b.png' is
already on line 7" count as one kind.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

LISTED = 100

# a number is a word of its own ("line 7", "(3 bands)", "=12:"): digits inside a name or
# a path (imagenet10/train/0042.jpg, 1024x768) are left as they are
_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|(?<![\w.])/[^\s,]+|(?<![^\s(\[{=:,])-?\d+(?:\.\d+)?(?![^\s)\]},:;])")


def kind_of(reason: str) -> str:
    """A reason with what varies from item to item replaced: quoted values, absolute
    paths, numbers standing alone."""
    return _VARYING.sub(lambda m: "PATH" if m[0][0] == "/" else "'…'" if m[0][0] in "'\"" else "N", reason)


class Skips:
    """The first LISTED skipped items ({"item", "reason"}), and counts of all by kind."""

    def __init__(self) -> None:
        self.listed: list[dict[str, str]] = []
        self.total = 0
        self.by_kind: Counter[str] = Counter()

    def add(self, item: str, reason: str) -> None:
        self.extend([{"item": item, "reason": reason}])

    def extend(self, entries: Iterable[dict[str, str]]) -> None:
        for entry in entries:
            self.total += 1
            self.by_kind[kind_of(entry["reason"])] += 1
            if len(self.listed) < LISTED:
                self.listed.append(entry)

    def merge(self, other: Skips) -> None:
        """`other`'s items after this one's."""
        room = LISTED - len(self.listed)
        self.listed += other.listed[: max(room, 0)]
        self.total += other.total
        self.by_kind.update(other.by_kind)

    def clear(self) -> None:
        self.listed.clear()
        self.total = 0
        self.by_kind.clear()

    def __len__(self) -> int:
        return self.total

    def to_json(self) -> dict[str, Any]:
        return {"listed": self.listed, "total": self.total, "by_kind": dict(sorted(self.by_kind.items()))}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Skips:
        skips = cls()
        skips.listed, skips.total = list(data["listed"]), int(data["total"])
        skips.by_kind.update(data["by_kind"])
        return skips


def skipped_fields(skips: Skips) -> dict[str, Any]:
    """How manifest.json and --json report skipped items: `skipped` lists the first
    LISTED (as before there were counts), then the totals."""
    return {
        "skipped": skips.listed,
        "skipped_total": skips.total,
        "skipped_by_kind": dict(sorted(skips.by_kind.items())),
    }


def from_fields(report: dict[str, Any]) -> Skips:
    """The Skips a manifest's skipped_fields describe (an older manifest: its list)."""
    listed = report.get("skipped") or []
    total = report.get("skipped_total", len(listed))
    by_kind = report.get("skipped_by_kind")
    return Skips.from_json(
        {
            "listed": listed,
            "total": total,
            "by_kind": by_kind if by_kind is not None else Counter(kind_of(s["reason"]) for s in listed),
        }
    )
