"""Split specs and assignment: which item goes to which split, in which order.

Every choice is a function of (seed, purpose, item key) through a keyed hash,
never of a random generator's state, a clock or a pid: the same items and seed
give the same splits on any machine, for any worker count, and a future
distributed engine can compute the same assignment item by item.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ..errors import SourceError
from .rows import GroupCodes, RowNumbers, RowStrata, group_strata, index_type, is_rows, positions_by_code, row_array

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

# Output order of the well-known splits; any other split follows, sorted.
SPLIT_ORDER = ("train", "validation", "test")
#: folder names that say which split the files below belong to (ImageNet's, Keras'
#: image_dataset_from_directory's, TFDS ImageFolder's ROOT/SPLIT/...), lowercased, and
#: the name TFDS gives that split
SPLIT_FOLDERS = {
    "train": "train",
    "training": "train",
    "val": "validation",
    "valid": "validation",
    "validation": "validation",
    "dev": "validation",
    "test": "test",
    "testing": "test",
}
#: what a split may be called (a file name carries it: `NAME-SPLIT.tfrecord-...`)
SPLIT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _rank_prefix(seed: int, purpose: str) -> hashlib.blake2b:
    """The hash of what every rank for (seed, purpose) starts with: copied per key, not redone."""
    return hashlib.blake2b(f"{seed}\x00{purpose}\x00".encode(), digest_size=8)


def _ranker(seed: int, purpose: str) -> Callable[[str], bytes]:
    """rank(seed, purpose, .) with the common prefix hashed once (copying a hash is cheap)."""
    base = _rank_prefix(seed, purpose)

    def rank_key(key: str) -> bytes:
        h = base.copy()
        h.update(key.encode())
        return h.digest()

    return rank_key


def rank(seed: int, purpose: str, key: str) -> bytes:
    """A stable pseudo-random rank of one item for one purpose: blake2b-64 of "seed NUL purpose NUL key"."""
    return _ranker(seed, purpose)(key)


#: how ranks are computed: (items, key, seed, purpose) -> the 8-byte big-endian ranks,
#: concatenated (bytes or a bytearray). rank_bytes here; an engine may run the same
#: function in parts elsewhere.
Ranker = Callable[[Sequence[T], Callable[[T], str], int, str], bytes | bytearray]


def rank_bytes(items: Sequence[T], key: Callable[[T], str], seed: int, purpose: str) -> bytearray:
    """rank(seed, purpose, key(item)) of every item, concatenated (the buffer itself: a
    copy as bytes would double the memory of ten million ranks)."""
    base = _rank_prefix(seed, purpose)
    out = bytearray(8 * len(items))  # filled in place: no bytes object kept per item
    view = memoryview(out)  # (a memoryview's slice takes exactly as many bytes as it holds)
    at = 0
    for item in items:  # rank_key inlined: a million calls fewer for a million items
        h = base.copy()
        h.update(key(item).encode())
        view[at : at + 8] = h.digest()
        at += 8
    view.release()
    return out


class SharedKey(SourceError):
    """Two items of one split with one key: a key names one example (it seeds where the
    example goes), so the source is wrong; the engine names both items."""

    def __init__(self, key: str, first: object, second: object) -> None:
        super().__init__(f"two items have the key {key!r}")
        self.key, self.first, self.second = key, first, second

    def __reduce__(self):
        return type(self), (self.key, self.first, self.second)


def _ranked_indices(
    items: Sequence[T], key: Callable[[T], str], seed: int, purpose: str, ranker: Ranker = rank_bytes
) -> list[int]:
    return _ranked(items, key, seed, purpose, ranker).tolist()


def _ranked(
    items: Sequence[T], key: Callable[[T], str], seed: int, purpose: str, ranker: Ranker = rank_bytes
) -> np.ndarray:
    """Indices of the items in rank order; ties keep source order (a stable sort).

    The 8-byte ranks are sorted as big-endian integers, which orders them as bytes:
    one numpy array instead of a million bytes objects and a sort key list."""
    import numpy as np

    ranks = np.frombuffer(ranker(items, key, seed, purpose), ">u8").astype(np.uint64)
    order, ordered = _sorted(ranks)
    del ranks  # (ten million ranks: 80 MB, let go before the ties are looked at)
    for at in np.flatnonzero(ordered[1:] == ordered[:-1]).tolist():  # equal keys rank alike
        first, second = items[order[at]], items[order[at + 1]]
        if key(first) == key(second):
            raise SharedKey(key(first), first, second)
    return order


def rank_order(ranks: np.ndarray) -> np.ndarray:
    """argsort(ranks, kind="stable") of a 1-D uint64 array, the fast way when no two ranks tie.

    numpy's default sort of 64-bit integers is several times faster than its stable one,
    and 64-bit hash ranks almost never tie; the sorted ranks show whether two did, and
    only then is the stable sort needed to keep tied items in source order.
    """
    return _sorted(ranks)[0]


def _sorted(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank_order(ranks), the ranks in that order)."""
    import numpy as np

    order = np.argsort(ranks)
    ordered = ranks[order]
    if bool((ordered[1:] == ordered[:-1]).any()):
        order = np.argsort(ranks, kind="stable")
        ordered = ranks[order]
    return order, ordered


def seeded_order(
    items: Sequence[T], key: Callable[[T], str], seed: int, purpose: str, ranker: Ranker = rank_bytes
) -> list[T]:
    """The items sorted by their rank: a shuffle fixed by the seed. A range (a table's
    rows) gives RowNumbers: one array, not a Python int per row."""
    order = _ranked(items, key, seed, purpose, ranker)
    if isinstance(items, (range, RowNumbers)):
        return RowNumbers(row_array(items)[order])  # type: ignore[return-value]
    return list(map(items.__getitem__, order.tolist()))


def carve(
    items: Sequence[T], n: int, key: Callable[[T], str], seed: int, purpose: str, ranker: Ranker = rank_bytes
) -> tuple[list[T], list[T]]:
    """(n items chosen by the seed, the rest); both keep the source order."""
    if not 0 <= n <= len(items):
        raise SourceError(f"cannot take {n} examples for {purpose}: the source split has only {len(items)}")
    if is_rows(items):  # the same choice, as arrays
        import numpy as np

        values = row_array(items)  # type: ignore[arg-type]
        picked_mask = np.zeros(len(values), bool)
        if n:
            picked_mask[_ranked(items, key, seed, purpose, ranker)[:n]] = True
        return RowNumbers(values[picked_mask]), RowNumbers(values[~picked_mask])  # type: ignore[return-value]
    chosen = set(_ranked_indices(items, key, seed, purpose, ranker)[:n]) if n else set()
    picked = [x for i, x in enumerate(items) if i in chosen]
    rest = [x for i, x in enumerate(items) if i not in chosen]
    return picked, rest


def ordered_splits(splits: dict[str, T]) -> list[tuple[str, T]]:
    known = [(s, splits[s]) for s in SPLIT_ORDER if s in splits]
    return known + sorted((s, v) for s, v in splits.items() if s not in SPLIT_ORDER)


def assign(
    source_splits: dict[str, Sequence[T]],
    key: Callable[[T], str],
    *,
    seed: int,
    shuffle: bool,
    validation_size: int = 0,
    ranker: Ranker = rank_bytes,
) -> dict[str, list[T]]:
    """Final splits from a dataset's own splits.

    `validation_size` examples are carved out of train (chosen by the seed);
    with `shuffle` each split is then put in seeded order, otherwise it keeps
    the source order. `ranker` computes the ranks (any ranker gives the same).
    """
    # integer rows stay an array (a table's): a copy of them would be a list of millions
    splits = {name: items if is_rows(items) else list(items) for name, items in source_splits.items()}
    if validation_size:
        if "train" not in splits:
            raise SourceError("--validation-size needs a train split to carve from")
        if "validation" in splits:
            raise SourceError("the source already has a validation split; --validation-size would replace it")
        splits["validation"], splits["train"] = carve(splits["train"], validation_size, key, seed, "validation", ranker)
    if shuffle:
        splits = {name: seeded_order(items, key, seed, f"shuffle:{name}", ranker) for name, items in splits.items()}
    return dict(ordered_splits(splits))


# ---------------------------------------------------------------- ratio splits


@dataclass(frozen=True)
class SplitSpec:
    """`train=0.8,validation=0.1,test=0.1`: named fractions summing to 1."""

    ratios: tuple[tuple[str, float], ...]

    @classmethod
    def parse(cls, text: str) -> SplitSpec:
        ratios = []
        for part in text.split(","):
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
                raise ValueError(f"{part.strip()!r} is not NAME=FRACTION")
            try:
                fraction = float(value)
            except ValueError:
                raise ValueError(f"{value.strip()!r} is not a number") from None
            if not 0 < fraction <= 1:
                raise ValueError(f"fraction {value.strip()} of {name} is not in (0, 1]")
            ratios.append((name, fraction))
        names = [n for n, _ in ratios]
        if len(set(names)) != len(names):
            raise ValueError("a split is named twice")
        if abs(sum(f for _, f in ratios) - 1) > 1e-6:
            raise ValueError(f"fractions add up to {sum(f for _, f in ratios):g}, not 1")
        return cls(tuple(ratios))

    def describe(self) -> dict[str, float]:
        return dict(self.ratios)


def exact_counts(n: int, fractions: Sequence[float]) -> list[int]:
    """Split n into whole counts proportional to fractions (largest remainder, ties to the first)."""
    raw = [n * f for f in fractions]
    counts = [int(x) for x in raw]
    by_remainder = sorted(range(len(raw)), key=lambda i: (-(raw[i] - counts[i]), i))
    for i in by_remainder[: n - sum(counts)]:
        counts[i] += 1
    return counts


def assign_by_ratio(
    items: Sequence[T],
    key: Callable[[T], str],
    spec: SplitSpec,
    seed: int,
    group: Callable[[T], Hashable] | None = None,
) -> dict[str, list[T]]:
    """Exact-count splits from a seeded ranking; with `group`, within each group
    (stratification: every split keeps the groups' proportions). Each split keeps
    the source order."""
    if is_rows(items):
        return _rows_by_ratio(items, key, spec, seed, group)  # type: ignore[arg-type,return-value]
    groups: dict[Hashable, list[int]] = {}
    for i, item in enumerate(items):
        groups.setdefault(group(item) if group else None, []).append(i)
    chosen: dict[str, list[int]] = {name: [] for name, _ in spec.ratios}
    for _, members in sorted(groups.items(), key=lambda g: repr(g[0])):
        ranked = _ranked_indices([items[i] for i in members], key, seed, "split")
        counts = exact_counts(len(members), [f for _, f in spec.ratios])
        start = 0
        for (name, _), count in zip(spec.ratios, counts, strict=True):
            chosen[name] += [members[j] for j in ranked[start : start + count]]
            start += count
    return {name: [items[i] for i in sorted(indices)] for name, indices in chosen.items()}


def _rows_by_ratio(
    items: range | RowNumbers,
    key: Callable[[int], str],
    spec: SplitSpec,
    seed: int,
    group: Callable[[int], Hashable] | None,
) -> dict[str, RowNumbers]:
    """assign_by_ratio of integer rows (a table's), with arrays where it holds lists: the
    same splits, with no Python int per row."""
    import numpy as np

    values = row_array(items)
    n = len(values)
    if group is None:  # one stratum of every row: ranked as they are, no array of positions
        strata: list[tuple[Hashable, np.ndarray | None]] = [(None, None)]
    elif isinstance(group, RowStrata) and (held := group.values[values]).min(initial=0) >= 0:
        # each row's stratum an int already: the strata below, with arrays
        by_stratum = positions_by_code(held, int(held.max()) + 1 if n else 0)
        strata = [(stratum, positions) for stratum, positions in enumerate(by_stratum) if len(positions)]
        del held, by_stratum
    else:
        codes: dict[Hashable, int] = {}
        coded = np.fromiter((codes.setdefault(group(row), len(codes)) for row in items), np.int64, n)
        strata = list(zip(codes, positions_by_code(coded, len(codes)), strict=True))
        del coded
    position = index_type(n)  # (ten million positions as int64 are 80 MB)
    chosen: dict[str, list[np.ndarray]] = {name: [] for name, _ in spec.ratios}
    for _, members in sorted(strata, key=lambda g: repr(g[0])):
        ranked = _ranked(items if members is None else RowNumbers(values[members]), key, seed, "split")
        counts = exact_counts(len(ranked), [f for _, f in spec.ratios])
        start = 0
        for (name, _), count in zip(spec.ratios, counts, strict=True):
            taken = ranked[start : start + count]
            chosen[name].append((taken if members is None else members[taken]).astype(position, copy=False))
            start += count
    strata = members = None  # (their positions: as many as the rows, let go before the splits are made)
    splits = {}
    for name in list(chosen):
        picked = np.concatenate(chosen.pop(name) or [np.zeros(0, position)])
        picked.sort()
        splits[name] = RowNumbers(values[picked])
    return splits


def assign_groups_by_ratio(
    items: Sequence[T],
    group_of: Sequence[str],
    spec: SplitSpec,
    seed: int,
    stratum_of: Callable[[list[int]], Hashable] | None = None,
) -> dict[str, list[T]]:
    """Splits of whole groups (items sharing `group_of[i]` go to one split), each split's
    size as close to its exact count as whole groups allow: groups are placed largest
    first (equal sizes in seeded order), each into the split furthest below its target.
    With `stratum_of` (a group's item indices -> its class), targets are set per
    stratum and the same placement runs within each: best effort, since a group holds
    one class or several and is never cut. Each split keeps the source order."""
    members: dict[str, list[int]] = {}
    for i, g in enumerate(group_of):
        members.setdefault(g, []).append(i)
    strata: dict[Hashable, list[str]] = {}
    for g, indices in members.items():
        strata.setdefault(stratum_of(indices) if stratum_of else None, []).append(g)
    rank_key = _ranker(seed, "group split")
    names = [name for name, _ in spec.ratios]
    chosen: dict[str, list[int]] = {name: [] for name in names}
    for _, groups in sorted(strata.items(), key=lambda s: repr(s[0])):
        targets = exact_counts(sum(len(members[g]) for g in groups), [f for _, f in spec.ratios])
        placed = dict.fromkeys(names, 0)
        for g in sorted(groups, key=lambda g: (-len(members[g]), rank_key(g))):
            # furthest below target; ties to the split named first
            split = max(names, key=lambda s: (targets[names.index(s)] - placed[s], -names.index(s)))
            placed[split] += len(members[g])
            chosen[split] += members[g]
    return {name: [items[i] for i in sorted(indices)] for name, indices in chosen.items()}


def _rows_by_groups(
    items: range | RowNumbers, groups: GroupCodes, spec: SplitSpec, seed: int, strata: np.ndarray | None = None
) -> dict[str, RowNumbers]:
    """assign_groups_by_ratio of integer rows whose groups are codes: the same placement,
    group by group, with arrays where it holds lists. `strata`: each group's stratum
    (group_strata), whose groups are placed against targets of their own."""
    import numpy as np

    values = row_array(items)
    sizes = np.bincount(groups.codes, minlength=len(groups.names))
    present = np.flatnonzero(sizes)
    ranks = np.frombuffer(rank_bytes([groups.names[c] for c in present.tolist()], str, seed, "group split"), ">u8")
    # largest first, equal sizes by rank (as bytes: big-endian integers), as the list path sorts them
    order = present[np.lexsort((ranks.astype(np.uint64), -sizes[present]))]
    # a stratum's groups in that order, each stratum on its own
    blocks = [order] if strata is None else [order[strata[order] == s] for s in np.unique(strata[order]).tolist()]
    names = [name for name, _ in spec.ratios]
    split_of = np.zeros(len(groups.names), np.min_scalar_type(len(names)))  # a byte a row, for a few splits
    for block in blocks:
        targets = exact_counts(int(sizes[block].sum()), [f for _, f in spec.ratios])
        placed = [0] * len(names)
        for code, size in zip(block.tolist(), sizes[block].tolist(), strict=True):
            # furthest below target; ties to the split named first
            split = max(range(len(names)), key=lambda i: (targets[i] - placed[i], -i))
            placed[split] += size
            split_of[code] = split
    of_row = split_of[groups.codes]
    return {name: RowNumbers(values[of_row == i]) for i, name in enumerate(names)}


def assign_per_item(
    items: Sequence[T], key: Callable[[T], str], spec: SplitSpec, seed: int, groups: Sequence[str] | GroupCodes | None
) -> dict[str, list[T]]:
    """Each item's split from its own seeded rank (of its group's name, with `groups`)
    read as a fraction in [0, 1) against the splits' cumulative fractions: an item's
    split depends on nothing else that is there, so items added later land as they
    would have landed then. The counts follow the fractions on average, not exactly.
    Each split keeps the source order."""
    import numpy as np

    if groups is None:
        ranks = rank_bytes(items, key, seed, "split")
    else:
        named = groups.as_list() if isinstance(groups, GroupCodes) else groups
        ranks = rank_bytes(named, str, seed, "group split")
    fractions = np.frombuffer(ranks, ">u8").astype(np.float64) / 2.0**64
    edges = np.cumsum([f for _, f in spec.ratios])
    edges[-1] = np.inf  # the last split takes what rounding leaves
    which = np.searchsorted(edges, fractions, side="right")
    if is_rows(items):
        values = row_array(items)
        return {name: RowNumbers(values[which == k]) for k, (name, _) in enumerate(spec.ratios)}  # type: ignore[misc]
    return {name: [items[i] for i in np.flatnonzero(which == k).tolist()] for k, (name, _) in enumerate(spec.ratios)}


def achieved(splits: dict[str, list[T]], spec: SplitSpec, groups: int) -> str:
    """What a split of whole groups achieved, beside what was asked."""
    total = sum(len(v) for v in splits.values())
    got = ", ".join(f"{name} {len(splits[name]) / (total or 1):.3f}" for name, _ in spec.ratios)
    asked = ", ".join(f"{f:g}" for _, f in spec.ratios)
    return f"split {total} examples in {groups} whole groups: {got} (asked {asked})"


def split_by_ratio(
    items: Sequence[T],
    key: Callable[[T], str],
    spec: SplitSpec,
    seed: int,
    stratum: Callable[[T], Hashable] | None = None,
    groups: Sequence[str] | GroupCodes | None = None,
    per_item: bool = False,
) -> tuple[dict[str, list[T]], str | None]:
    """A converter's --split: (the splits, a line saying what whole groups achieved, or
    None). Items one by one (assign_by_ratio), or, with `groups` (items that must share
    a split share a value), whole groups (assign_groups_by_ratio), a group's stratum
    then being its most frequent item stratum. `per_item` (an --append's): each item's
    split from its own rank alone (assign_per_item)."""
    if per_item:
        return assign_per_item(items, key, spec, seed, groups), None
    if groups is None:
        return assign_by_ratio(items, key, spec, seed, stratum), None
    if isinstance(groups, GroupCodes):
        if is_rows(items) and (stratum is None or isinstance(stratum, RowStrata)):
            of_group = None if stratum is None else group_strata(groups, stratum.values[row_array(items)])
            if stratum is None or of_group is not None:
                drawn = _rows_by_groups(items, groups, spec, seed, of_group)  # type: ignore[arg-type]
                return drawn, achieved(drawn, spec, groups.count())  # type: ignore[arg-type]
        groups = groups.as_list()

    def of_group(indices: list[int]) -> Hashable:
        return Counter(stratum(items[i]) for i in indices).most_common(1)[0][0]  # type: ignore[misc]

    splits = assign_groups_by_ratio(items, groups, spec, seed, of_group if stratum else None)
    return splits, achieved(splits, spec, len(set(groups)))
