"""Integer rows held as numpy arrays, not a Python int each: a table's rows (ten million
of them are 360 MB as a list of ints, 40 MB as int32), their parts, and per-row codes
(a group, a stratum) that splits.py places without a Python object per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeVar

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")


def row_array(rows: range | RowNumbers | Sequence[int]) -> np.ndarray:
    """Integer rows as one numpy array: int32 where every value fits (half the memory)."""
    import numpy as np

    if isinstance(rows, range):
        ends = sorted((rows[0], rows[-1])) if rows else (0, 0)
        return np.arange(rows.start, rows.stop, rows.step, dtype=np.int32 if _fits_int32(*ends) else np.int64)
    values = rows.values if isinstance(rows, RowNumbers) else np.asarray(rows, dtype=np.int64)
    if values.dtype != np.int32 and len(values) and _fits_int32(int(values.min()), int(values.max())):
        return values.astype(np.int32)
    return values


def _fits_int32(low: int, high: int) -> bool:
    return -(2**31) <= low and high < 2**31


def index_type(n: int) -> type:
    """The numpy integer type of positions among n items: int32 where they fit (half the
    memory of int64)."""
    import numpy as np

    return np.int32 if n < 2**31 else np.int64


FEW_CODES = 16  # positions_by_code of this many codes at most: found code by code


def positions_by_code(codes: np.ndarray, count: int) -> list[np.ndarray]:
    """For each code 0..count-1, the positions that hold it, in order (negative codes: in
    none): a pass per code for a few, else one stable sort."""
    import numpy as np

    if count <= FEW_CODES:  # a pass per code: no sort, whose index and workspace are 16 bytes a position
        return [np.flatnonzero(codes == code).astype(index_type(len(codes))) for code in range(count)]
    by_code = np.argsort(codes, kind="stable")  # the positions left out first, then code by code
    sizes = np.bincount(codes[codes >= 0], minlength=count)
    ends = int((codes < 0).sum()) + np.cumsum(sizes)
    return [by_code[end - size : end] for end, size in zip(ends.tolist(), sizes.tolist(), strict=True)]


def is_rows(items: object) -> bool:
    """Whether items are integer rows held without a Python int each (a range, RowNumbers)."""
    return isinstance(items, (range, RowNumbers))


def part_of(items: Sequence[T], start: int, stop: int) -> Sequence[T]:
    """items[start:stop], still without a Python int per row where the items are rows (a
    slice of RowNumbers is a list, which for ten million rows would take 360 MB)."""
    if isinstance(items, RowNumbers):
        return RowNumbers(items.values[start:stop])  # type: ignore[return-value]
    return items[start:stop]


class RowNumbers(Sequence[int]):
    """Integer items held in one numpy array, read as Python ints; a slice is a list, as
    a list's slice would be, so a plan of these digests and batches as a list does."""

    def __init__(self, values: np.ndarray) -> None:
        self._values = values

    @property
    def values(self) -> np.ndarray:
        return self._values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, at):  # type: ignore[override]
        if isinstance(at, slice):
            return self._values[at].tolist()
        return int(self._values[at])

    def __iter__(self):
        for start in range(0, len(self._values), 1 << 16):
            yield from self._values[start : start + (1 << 16)].tolist()

    def __array__(self, dtype=None, copy=None):
        return self._values if dtype is None else self._values.astype(dtype)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, range, RowNumbers)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class GroupCodes(NamedTuple):
    """Each item's group as a code into `names` (distinct texts): a table's group column
    without a Python string per row."""

    codes: np.ndarray  # one per item
    names: list[str]

    def as_list(self) -> list[str]:
        return [self.names[code] for code in self.codes.tolist()]

    def count(self) -> int:
        """How many groups the items are in."""
        import numpy as np

        return int(np.count_nonzero(np.bincount(self.codes)))


class RowStrata(NamedTuple):
    """Each row number's stratum (a class index), one array indexed by row: a table's
    --stratify without a Python call per row. Called with a row, it gives that row's
    stratum, as any stratum function does."""

    values: np.ndarray  # non-negative integers, indexed by row number

    def __call__(self, row: int) -> int:
        return int(self.values[row])


MAX_STRATUM_CELLS = 1 << 24  # groups x strata counted in one table at most (a few hundred MB past it)


def group_strata(groups: GroupCodes, strata: np.ndarray) -> np.ndarray | None:
    """Each group's most frequent stratum among its items (`strata`: an int per item, as
    groups.codes has a code per item), ties to the stratum its items hold first, as
    Counter.most_common tells; None where a stratum is negative or the table of groups x
    strata would be too large (the caller then counts item by item)."""
    import numpy as np

    n, count = len(strata), len(groups.names)
    kinds = int(strata.max()) + 1 if n else 1
    if count * kinds > MAX_STRATUM_CELLS or (n and int(strata.min()) < 0):
        return None
    cell = groups.codes.astype(np.int32) * kinds + strata.astype(np.int32)  # < 2**24: fits
    counts = np.bincount(cell, minlength=count * kinds)
    first = np.full(count * kinds, n, np.int64)  # where each (group, stratum) first appears
    np.minimum.at(first, cell, np.arange(n, dtype=index_type(n)))
    del cell
    # the most items first, then the earliest: a count is worth more than any position
    return (counts * (n + 1) - first).reshape(count, kinds).argmax(axis=1)
