"""A distribution of numbers (image widths, bytes per record, boxes per image...) kept in
bounded memory and reported as equal-width bins, which is what a histogram draws."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

# Distinct values kept exactly; past this, values are rounded to fewer significant digits
# (a histogram of a few dozen bins cannot show the difference).
MAX_KEYS = 10_000
BINS = 20


def _round(value: float, digits: int) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


class Distribution:
    def __init__(self, integer: bool = True) -> None:
        self.integer = integer
        self.counts: Counter[float] = Counter()
        self.digits = 0  # 0: exact; else significant digits kept

    def add(self, value: float, n: int = 1) -> None:
        if not math.isfinite(value):
            return
        if not self.integer:
            value = round(value, 4)
        if self.digits:
            value = _round(value, self.digits)
        self.counts[value] += n
        if len(self.counts) > MAX_KEYS:
            self._coarsen()

    def _coarsen(self) -> None:
        self.digits = self.digits - 1 if self.digits else 4
        coarse: Counter[float] = Counter()
        for value, n in self.counts.items():
            coarse[_round(value, self.digits)] += n
        self.counts = coarse

    def to_dict(self, bins: int = BINS) -> dict[str, Any]:
        """{values, min, max, bins: [{from, to, count}]}: `to` is exclusive, but the last
        bin's includes the maximum; integer bins span whole numbers."""
        if not self.counts:
            return {"values": 0, "bins": []}
        low, high = min(self.counts), max(self.counts)
        if self.integer:
            width = max(1, math.ceil((high - low + 1) / bins))
            edges = [low + i * width for i in range(math.ceil((high - low + 1) / width) + 1)]
        else:
            width = (high - low) / bins or 1.0
            edges = [low + i * width for i in range(bins + 1)] if high > low else [low, low + width]
        counts = [0] * (len(edges) - 1)
        for value, n in self.counts.items():
            index = min(int((value - low) // width), len(counts) - 1)
            counts[index] += n
        out = [{"from": edges[i], "to": edges[i + 1], "count": c} for i, c in enumerate(counts)]
        if self.integer:
            for entry in out:
                entry["from"], entry["to"] = int(entry["from"]), int(entry["to"])
        return {"values": sum(self.counts.values()), "min": low, "max": high, "bins": out}
