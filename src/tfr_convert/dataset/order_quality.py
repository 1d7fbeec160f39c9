"""How well an order of records mixes their labels: the longest run of one label, beside
what random orders of the same labels give.

Training reads records in (about) the order they were written; a class-sorted order
shows as runs as long as a class, a shuffled one as runs of a few records. The figure
compares the longest run found with the median longest run of seeded random orders of
the very same labels (cut into the same windows), so it means the same for two classes
or a thousand: a ratio near 1 is as mixed as random; far above 1, clumped.

A conversion reads the labels of a sample (WINDOWS windows of WINDOW consecutive records
per split, spread evenly: a bounded cost whatever the size); `tfr-inspect --stats`, which
decodes every record anyway, measures whole splits.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

WINDOWS = 16
WINDOW = 256
TRIALS = 9  # random orders whose median is the reference


def sample_windows(n: int, windows: int = WINDOWS, size: int = WINDOW) -> list[range]:
    """Positions to read labels at: everything when n is small, else `windows` runs of
    `size` consecutive positions spread evenly over n."""
    if n <= windows * size:
        return [range(n)] if n else []
    return [range(i * n // windows, i * n // windows + size) for i in range(windows)]


def _longest(codes: np.ndarray, starts: np.ndarray) -> int:
    """The longest run of equal codes, runs broken at each window start too. (Edges are
    marked in one array, not merged with np.union1d, whose np.unique imports numpy.ma:
    a cost every conversion with labels would pay at its end.)"""
    n = len(codes)
    if not n:
        return 0
    edge = np.zeros(n + 1, bool)
    edge[np.flatnonzero(codes[1:] != codes[:-1]) + 1] = True
    edge[np.asarray(starts, np.int64)] = True
    edge[[0, n]] = True
    return int(np.max(np.diff(np.flatnonzero(edge))))


def figure(labels: Sequence[Hashable], window_sizes: Sequence[int] | None = None, seed: int = 0) -> dict[str, Any]:
    """{longest_run, random_longest_run, ratio, records} of labels read in windows of
    these sizes, one after another (None: one window of all)."""
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(label, len(index)) for label in labels), np.int64, len(labels))
    sizes = [len(labels)] if window_sizes is None else list(window_sizes)
    starts = np.cumsum([0, *sizes[:-1]]) if sizes else np.zeros(0, np.int64)
    longest = _longest(codes, starts)
    rng = np.random.default_rng(seed)
    random = float(np.median([_longest(rng.permutation(codes), starts) for _ in range(TRIALS)])) if len(codes) else 0
    return {
        "longest_run": longest,
        "random_longest_run": random,
        "ratio": round(longest / random, 2) if random else None,
        "records": len(labels),
    }


def of_splits(plan: dict[str, Sequence[Hashable]], label_of: Callable[[Hashable], Hashable | None]) -> dict[str, Any]:
    """The figure of each split of a plan (items in their written order) from a sample of
    labels; {} when the items have no label."""
    first = next((items[0] for items in plan.values() if items), None)
    if first is None or label_of(first) is None:  # no label known: nothing read
        return {}
    figures = {}
    for split, items in plan.items():
        windows = sample_windows(len(items))
        labels = [label_of(items[i]) for window in windows for i in window]
        if not labels or any(label is None for label in labels):
            return {}
        figures[split] = figure(labels, [len(w) for w in windows])
    return figures


def verdict(entry: dict[str, Any]) -> str:
    """A figure in words."""
    ratio = entry["ratio"]
    said = f"longest run of one label {entry['longest_run']} (random order: {entry['random_longest_run']:g})"
    if ratio is None:
        return said
    if ratio <= 2:
        return f"{said}: as mixed as a random order"
    return f"{said}: {ratio:g}x a random order's; the records are clumped by label (shuffle them)"
