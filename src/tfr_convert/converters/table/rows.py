"""A table's columns and rows as the table converter asks for them: held in memory, or
read from local Parquet files when asked.

Listing needs whole columns, one at a time (a label, a split, the nulls of each); a
batch needs a run of rows of every column. Tables in memory (CSV, JSON Lines, Arrow
files, Hugging Face folders, what tfr_convert.write() is handed) answer both from the
one Arrow table. Local Parquet files of one flat schema are never read whole: a
column's nulls come from the files' statistics where every row group has them, a
column is read alone when its values are needed and let go at the next, and a run of
rows is read from the row groups it spans (each process keeps the last two it read, so
a split written in source order decodes each row group once per process). A run in
another order (shuffled splits) is told its plan first (`spilled`): every row group is
read once and its rows written, uncompressed, into files of consecutive plan positions
in a temporary folder (TMPDIR), sorted by position within each record batch; a batch
finds its rows in the memory-mapped files by their positions. Rows asked
for in an order no plan said are read whole once. All give the same Arrow values, so
the same bytes.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ...dataset.rows import RowNumbers, row_array
from ...dataset.wire.example import MAX_EXAMPLE_BYTES
from ...errors import SourceError
from ...optional import pyarrow
from . import arrow_features
from .arrow_numpy import from_numpy, to_numpy

ROW_GROUPS_KEPT = 2  # per process: a batch may span the end of one and the start of the next
SPILL_ROWS = 1 << 16  # rows per file of a spilled plan, at least (a batch's rows span one or two)
SPILL_FILES = 256  # at most: each is open while the spill is written


class Joined:
    """Every part's rows as one table: read whole and joined (`join()`), or, for local
    Parquet files of one flat schema, read when asked."""

    def __init__(self, tables: list[Any], join: Callable[[], Any]) -> None:
        self._tables = tables
        self.lazy = lazy_parquet(tables)
        self._table = None if self.lazy else join()
        self.column_names: list[str] = tables[0].column_names if self.lazy else self._table.column_names

    def columns(self, whole: set[str]) -> FlatColumns:
        """The flattened columns (struct fields as `a/b`); those in `whole` as they are."""
        if self.lazy:
            return ParquetColumns(self._tables)
        return FlatColumns(arrow_features.flatten(self._table, whole=whole))

    def rows(self, columns: FlatColumns, names: list[str]) -> HeldRows | ParquetRows:
        """What a batch's rows are taken from: `names`' columns (the table's own copy is let go)."""
        if self.lazy:
            return ParquetRows(self._tables, names)
        pa = pyarrow("tfr-convert table")
        held = HeldRows(pa.table({name: columns[name] for name in names}))
        self._table = None
        return held


def joined_rows(parts: list[Any]) -> Sequence[int]:
    """Parts' increasing row numbers, one after the other, as `compact` holds them; parts
    kept whole (ranges) that follow on from each other stay one range, with no array of
    ten million row numbers made on the way."""
    if all(isinstance(p, range) for p in parts) and all(a.stop == b.start for a, b in itertools.pairwise(parts)):
        return range(parts[0].start, parts[-1].stop)
    import numpy as np

    return compact(np.concatenate([row_array(p) for p in parts]))


def compact(rows: Any) -> Sequence[int]:
    """Increasing row numbers (numpy) as a range where they are one run, else as
    RowNumbers: a table of millions of rows holds no Python int per row."""
    if len(rows) and rows[-1] - rows[0] == len(rows) - 1:
        return range(int(rows[0]), int(rows[-1]) + 1)
    return RowNumbers(row_array(rows))


class FlatColumns(Mapping):
    """{name: ChunkedArray} of a table's flattened columns, with each column's type and
    null count known without its values."""

    def __init__(self, columns: dict[str, Any]) -> None:
        self._columns = columns

    def __getitem__(self, name: str) -> Any:
        return self._columns[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def type_of(self, name: str) -> Any:
        return self._columns[name].type

    def let_go(self) -> None:
        """Drop what was read to answer (columns held in memory are the table's own)."""

    def null_count(self, name: str) -> int:
        return self._columns[name].null_count


class HeldRows:
    """Rows of a table held in memory (its columns as one chunk each)."""

    def __init__(self, table: Any) -> None:
        self._table = table.combine_chunks()

    def slice(self, first: int, count: int) -> Any:
        return self._table.slice(first, count)

    def take(self, rows: list[int]) -> Any:
        import numpy as np

        return self._table.take(from_numpy(np.asarray(rows, np.int64)))


class ParquetFileTable:
    """A local Parquet file known by its footer alone: schema, rows, row groups."""

    def __init__(self, path: str) -> None:
        pa = pyarrow("tfr-convert table")
        footer = pa.parquet.ParquetFile(path)
        self.path = path
        self.schema = footer.schema_arrow
        self.column_names = self.schema.names
        meta = footer.metadata
        self.group_rows = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        self.num_rows = meta.num_rows
        if sum(self.group_rows) != self.num_rows or any(n < 0 for n in self.group_rows):
            raise SourceError(
                f"{path}: the footer says {self.num_rows} rows, its row groups {sum(self.group_rows)}: "
                "the file is damaged"
            )
        self._nulls = _statistics_nulls(meta, self.column_names)

    def read(self, columns: list[str] | None = None) -> Any:
        return read_parquet(self.path, lambda f: f.read(columns=columns))

    def null_count(self, name: str) -> int | None:
        """From the statistics, or None where a row group has none for the column."""
        return self._nulls.get(name)


#: the most one read of a Parquet file (a column, or a row group's columns) may expand to
#: in memory, by the sizes its dictionaries declare: past it the file is refused (a few
#: hundred bytes of dictionary and indices can stand for terabytes)
MAX_READ_BYTES = 2 << 30
#: the largest single value (a string, a list's bytes) a table may hold
MAX_VALUE_BYTES = MAX_EXAMPLE_BYTES


def read_parquet(path: str, read: Callable[[Any], Any], where: str = "") -> Any:
    """read(the ParquetFile at path) (not read_table, which imports pandas), with
    dictionary-encoded text read as dictionaries and expanded only once their size is
    known; a file Arrow cannot read, or whose read would expand past MAX_READ_BYTES or
    hold a value over MAX_VALUE_BYTES, is an error naming it (and the part read)."""
    pa = pyarrow("tfr-convert table")
    prefix = f"{path}: {where + ': ' if where else ''}"
    try:
        stat = os.stat(path)
        dictionaries, schema = _footer_plan(path, stat.st_size, stat.st_mtime_ns)
        with pa.parquet.ParquetFile(path, read_dictionary=dictionaries or None) as f:
            return _expanded(read(f), schema, prefix)
    except (pa.ArrowException, OSError, MemoryError) as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SourceError(prefix + text) from None


@functools.lru_cache(maxsize=64)
def _footer_plan(path: str, size: int, mtime_ns: int) -> tuple[list[str], Any]:
    """(the columns to read as dictionaries, the file's own schema), from its footer, once
    per file (as it is: its size and time are the key) and process: a run reads a file's
    row groups one by one."""
    pa = pyarrow("tfr-convert table")
    with pa.parquet.ParquetFile(path) as plain:
        return _dictionary_columns(plain), plain.schema_arrow


def _dictionary_columns(f: Any) -> list[str]:
    """Top-level text / binary columns with a dictionary page in some row group, whose
    type in the file is no dictionary."""
    pa = pyarrow("tfr-convert table")
    meta, schema = f.metadata, f.schema_arrow
    columns = set()
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            name = chunk.path_in_schema
            if chunk.has_dictionary_page and chunk.physical_type == "BYTE_ARRAY" and name in schema.names:
                if not pa.types.is_dictionary(schema.field(name).type):
                    columns.add(name)
    return sorted(columns)


def _expanded(table: Any, schema: Any, prefix: str) -> Any:
    """`table` with each column read as a dictionary (where the file's own type is not
    one) expanded to that type, once the size it expands to is known to be bounded."""
    pa = pyarrow("tfr-convert table")
    import numpy as np
    import pyarrow.compute as pc

    columns = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        wanted = schema.field(name).type
        if _is_text(column.type) and column.num_chunks and len(column):
            longest = pc.max(pc.binary_length(column)).as_py() or 0
            if longest > MAX_VALUE_BYTES:
                raise SourceError(f"{prefix}column {name!r}: {too_large(longest)}")
        if pa.types.is_dictionary(column.type) and not pa.types.is_dictionary(wanted):
            total = 0
            for chunk in column.chunks:
                lengths = to_numpy(pc.binary_length(chunk.dictionary), 0).astype(np.int64)
                indices = to_numpy(chunk.indices.fill_null(0) if chunk.null_count else chunk.indices)
                sizes = lengths[indices] if len(lengths) else np.zeros(0, np.int64)
                total += int(sizes.sum())
                if len(sizes) and sizes.max() > MAX_VALUE_BYTES:
                    raise SourceError(f"{prefix}column {name!r}: {too_large(int(sizes.max()))}")
            if total > MAX_READ_BYTES:
                raise SourceError(
                    f"{prefix}column {name!r}: its dictionary expands to {total / 2**30:.1f} GiB, more than the "
                    f"{MAX_READ_BYTES >> 30} GiB read at once (a dictionary bomb?); if it is real, rewrite the file "
                    "with smaller row groups"
                )
            column = pc.cast(column, wanted)
        columns.append(column)
    return pa.table(columns, schema=pa.schema([schema.field(n) for n in table.column_names]))


def _is_text(t: Any) -> bool:
    types = pyarrow("tfr-convert table").types
    return types.is_string(t) or types.is_large_string(t) or types.is_binary(t) or types.is_large_binary(t)


def too_large(size: int) -> str:
    """What is said of a value over MAX_VALUE_BYTES."""
    return f"a value of {size / 2**20:.0f} MiB; one record holds at most {MAX_VALUE_BYTES >> 20} MiB"


def _statistics_nulls(meta: Any, names: list[str]) -> dict[str, int]:
    nulls: dict[str, int] = {}
    complete = set(names)
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            name = chunk.path_in_schema
            stats = chunk.statistics if chunk.is_stats_set else None
            if stats is None or not stats.has_null_count:
                complete.discard(name)
            else:
                nulls[name] = nulls.get(name, 0) + stats.null_count
    return {name: n for name, n in nulls.items() if name in complete}


def lazy_parquet(tables: list[Any]) -> bool:
    """Whether parts can be read when asked: all local Parquet files of one schema with
    no struct column (structs are flattened in memory)."""
    if not tables or not all(isinstance(t, ParquetFileTable) for t in tables):
        return False
    pa = pyarrow("tfr-convert table")
    first = tables[0].schema.remove_metadata()
    if any(pa.types.is_struct(f.type) for f in first):
        return False
    return all(t.schema.remove_metadata().equals(first) for t in tables[1:])


class ParquetColumns(FlatColumns):
    """The columns of local Parquet files, each read (from every file) when asked; the
    last one read is kept, the one before let go."""

    def __init__(self, tables: list[ParquetFileTable]) -> None:
        self._tables = tables
        self._types = {f.name: f.type for f in tables[0].schema}
        self._last: tuple[str, Any] | None = None

    def __getitem__(self, name: str) -> Any:
        if name not in self._types:
            raise KeyError(name)
        if self._last is None or self._last[0] != name:
            self._last = None  # let go before the next is read
            pa = pyarrow("tfr-convert table")
            chunks = [chunk for t in self._tables for chunk in t.read([name]).column(0).chunks]
            self._last = (name, pa.chunked_array(chunks, self._types[name]))
        return self._last[1]

    def __contains__(self, name: object) -> bool:
        return name in self._types  # Mapping's would read the column

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def type_of(self, name: str) -> Any:
        return self._types[name]

    def let_go(self) -> None:
        self._last = None

    def null_count(self, name: str) -> int:
        counts = [t.null_count(name) for t in self._tables]
        if all(n is not None for n in counts):
            return sum(counts)  # type: ignore[arg-type]
        return self[name].null_count


class ParquetRows:
    """Rows of chosen columns of local Parquet files, read by row group when asked."""

    def __init__(self, tables: list[ParquetFileTable], columns: list[str]) -> None:
        pa = pyarrow("tfr-convert table")
        self._paths = [t.path for t in tables]
        self._columns = columns
        self._schema = pa.schema([tables[0].schema.field(c) for c in columns])
        # (file, row group) of each row group in order, and the row each starts at
        self._groups = [(f, g) for f, t in enumerate(tables) for g in range(len(t.group_rows))]
        sizes = [n for t in tables for n in t.group_rows]
        self._starts = [0]
        for n in sizes:
            self._starts.append(self._starts[-1] + n)
        self._kept: dict[int, Any] = {}
        self._pid = os.getpid()
        self._whole: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__ | {"_kept": {}, "_whole": None}  # a spawned worker reads its own

    def column_names(self) -> list[str]:
        return list(self._columns)

    def _group(self, index: int) -> Any:
        if self._pid != os.getpid():  # a forked worker: its parent's row groups are not its own to keep
            self._kept, self._pid = {}, os.getpid()
        kept = self._kept.get(index)
        if kept is None:
            file, group = self._groups[index]
            kept = read_parquet(
                self._paths[file],
                lambda f: f.read_row_group(group, self._columns, use_threads=False),
                f"row group {group}",
            )
            while len(self._kept) >= ROW_GROUPS_KEPT:
                del self._kept[next(iter(self._kept))]
            self._kept[index] = kept
        return kept

    def slice(self, first: int, count: int) -> Any:
        pa = pyarrow("tfr-convert table")
        stop = first + count
        pieces = []
        index = bisect.bisect_right(self._starts, first) - 1
        while count > 0 and index < len(self._groups) and self._starts[index] < stop:
            start = self._starts[index]
            lo, hi = max(first, start) - start, min(stop, self._starts[index + 1]) - start
            pieces.append(self._group(index).slice(lo, hi - lo))
            index += 1
        if not pieces:
            return self._schema.empty_table()
        return pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces).combine_chunks()

    def take(self, rows: list[int]) -> Any:
        import numpy as np

        pa = pyarrow("tfr-convert table")
        if self._whole is None:
            tables = [read_parquet(path, lambda f: f.read(columns=self._columns)) for path in self._paths]
            self._whole = pa.concat_tables(tables).combine_chunks()
        return self._whole.take(from_numpy(np.asarray(rows, np.int64)))

    def spilled(self, plan: dict[str, Sequence[int]], total: int, fill_in_parts: Any = None) -> SpilledRows:
        """These rows laid out in the plan's order (its splits one after another);
        `fill_in_parts` (SourceContext's): where the row groups may be laid out in parts."""
        return SpilledRows(self, plan, total, fill_in_parts)

    def group_count(self) -> int:
        return len(self._groups)

    def groups(self, lo: int, hi: int) -> Iterator[tuple[int, Any]]:
        """(first row, rows) of row groups lo..hi-1, in order, each read once."""
        for index in range(lo, hi):
            yield self._starts[index], self._group(index)


class SpilledRows:
    """ParquetRows laid out in a plan's order in files of SPILL_ROWS consecutive
    positions or more: a batch of consecutive positions is read from one or two files.
    The row groups are laid out in parts (on forked processes where `fill_in_parts` allows),
    each part writing its own piece of the files it reaches; a batch gathers its rows
    from every piece."""

    def __init__(
        self, rows: ParquetRows, plan: dict[str, Sequence[int]], total: int, fill_in_parts: Any = None
    ) -> None:
        import numpy as np

        planned = sum(len(items) for items in plan.values())
        dtype = np.int32 if max(planned, total) < 2**31 else np.int64
        self._position = np.full(total, -1, dtype)  # each row's place in the plan (-1: not written)
        at = 0
        for items in plan.values():
            self._position[np.asarray(items, np.int64)] = np.arange(at, at + len(items), dtype=dtype)
            at += len(items)
        self._rows = rows
        self._size = max(SPILL_ROWS, -(-planned // SPILL_FILES))
        self._folder = tempfile.mkdtemp(prefix="tfr-convert-shuffle-")
        weakref.finalize(self, _remove, self._folder, os.getpid())
        self._kept: dict[int, Any] = {}
        self._pid = os.getpid()
        self._mark = "position"
        while self._mark in rows.column_names():
            self._mark += "_"

        def spill(lo: int, hi: int) -> bytes:  # row groups lo..hi-1: (lo, the files it wrote a piece of)
            return np.array([lo, *self._spill(rows.groups(lo, hi), lo)], np.int64).tobytes()

        count = rows.group_count()
        spilled = fill_in_parts(spill, count) if fill_in_parts is not None else None
        self._pieces: dict[int, list[int]] = {}  # file -> the parts (first row group) that wrote a piece
        for part in spilled if spilled is not None else [spill(0, count)]:
            lo, *files = np.frombuffer(part, np.int64).tolist()
            for file in files:
                self._pieces.setdefault(file, []).append(lo)

    def _spill(self, groups: Iterator[tuple[int, Any]], part: int) -> list[int]:
        """The rows of these row groups written to the pieces of part `part` of the files
        their positions fall in; which files."""
        import numpy as np

        pyarrow("tfr-convert table")  # (its absence told, and the allocator set, before ipc loads)
        from pyarrow import ipc

        writers: dict[int, Any] = {}
        try:
            for start, group in groups:
                places = self._position[start : start + group.num_rows]
                keep = np.flatnonzero(places >= 0)
                if not len(keep):
                    continue
                order = np.argsort(places[keep])  # by plan position, so by file, each file's run sorted
                files = places[keep] // self._size
                counts = np.bincount(files, minlength=1).tolist()
                laid = group.take(from_numpy(keep[order])).append_column(self._mark, from_numpy(places[keep][order]))
                at = 0
                for file, count in enumerate(counts):
                    if count:
                        if file not in writers:
                            writers[file] = ipc.new_file(self._path(file, part), laid.schema)
                        writers[file].write_table(laid.slice(at, count))
                        at += count
        except OSError as e:
            raise SourceError(
                f"cannot lay the shuffled rows out in {self._folder}: {e.strerror or e}; "
                "set TMPDIR to a folder with room for the table's columns"
            ) from None
        finally:
            for writer in writers.values():
                writer.close()
        return sorted(writers)

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__ | {"_kept": {}}

    def _path(self, file: int, part: int) -> str:
        return os.path.join(self._folder, f"{file}-{part}.arrow")

    def _file(self, file: int) -> list[tuple[Any, Any]]:
        """A file's record batches, memory-mapped (no copy): (their plan positions, in
        increasing order; their rows)."""
        if self._pid != os.getpid():
            self._kept, self._pid = {}, os.getpid()
        groups = self._kept.get(file)
        if groups is None:
            pa = pyarrow("tfr-convert table")
            from pyarrow import ipc

            groups = []
            for part in self._pieces[file]:
                reader = ipc.open_file(pa.memory_map(self._path(file, part)))
                for i in range(reader.num_record_batches):
                    batch = reader.get_batch(i)
                    rows = pa.Table.from_batches([batch]).drop_columns([self._mark])
                    groups.append((to_numpy(batch.column(self._mark)), rows))
            while len(self._kept) >= ROW_GROUPS_KEPT:
                del self._kept[next(iter(self._kept))]
            self._kept[file] = groups
        return groups

    def _between(self, file: int, lo: int, hi: int) -> Any:
        """The rows at plan positions lo..hi-1 (all in `file`), in that order: the run of
        each record batch found by its sorted positions, the runs put in order."""
        import numpy as np

        pa = pyarrow("tfr-convert table")
        positions, pieces = [], []
        for places, rows in self._file(file):
            a, b = np.searchsorted(places, [lo, hi]).tolist()
            if b > a:
                positions.append(places[a:b])
                pieces.append(rows.slice(a, b - a))
        order = np.argsort(np.concatenate(positions))
        return pa.concat_tables(pieces).take(from_numpy(order))

    def take(self, rows: list[int]) -> Any:
        import numpy as np

        places = self._position[np.asarray(rows, np.int64)]
        if not len(places):
            return self._rows.slice(0, 0)
        first = int(places[0])
        if first < 0 or not np.array_equal(places, np.arange(first, first + len(places))):
            return self._rows.take(rows)  # not a run of the plan
        pa = pyarrow("tfr-convert table")
        pieces, stop = [], first + len(places)
        for file in range(first // self._size, (stop - 1) // self._size + 1):
            lo, hi = max(first, file * self._size), min(stop, (file + 1) * self._size)
            pieces.append(self._between(file, lo, hi))
        return pa.concat_tables(pieces).combine_chunks()

    def slice(self, first: int, count: int) -> Any:
        return self._rows.slice(first, count)


def _remove(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # a forked worker leaves its parent's folder alone
        shutil.rmtree(folder, ignore_errors=True)
