"""converters/table/rows.py: local Parquet files read a column or a run of rows at a time
give what the whole table in memory gives — the same Arrow values, the same nulls, the
same encoded bytes — and a damaged file is an error naming it."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

from tfr_convert.converters.table import files as table_files  # noqa: E402
from tfr_convert.converters.table.converter import TableConverter, TableOptions  # noqa: E402
from tfr_convert.converters.table.rows import (  # noqa: E402
    ParquetColumns,
    ParquetFileTable,
    ParquetRows,
    lazy_parquet,
)
from tfr_convert.dataset.rows import RowNumbers  # noqa: E402
from tfr_convert.engine.encode import encode_items  # noqa: E402
from tfr_convert.errors import SourceError  # noqa: E402


def _parts(tmp_path, sizes=(7, 1, 12), groups=(3, 1, 5), statistics=True):
    """Files of `sizes` rows in row groups of `groups` rows; the whole table they make."""
    tables, paths, at = [], [], 0
    for n, (size, group) in enumerate(zip(sizes, groups, strict=True)):
        rows = range(at, at + size)
        table = pa.table(
            {
                "i": pa.array([r * 7 - 40 for r in rows], pa.int64()),
                "f": pa.array([r / 3 for r in rows], pa.float32()),
                "s": pa.array([None if r % 4 == 1 else "x" * (r % 5) for r in rows]),
                "l": pa.array([[r] * (r % 3) for r in rows], pa.list_(pa.int64())),
            }
        )
        path = tmp_path / f"part{n}.parquet"
        pq.write_table(table, path, row_group_size=group, write_statistics=statistics)
        tables.append(table)
        paths.append(str(path))
        at += size
    return paths, pa.concat_tables(tables).combine_chunks()


def test_every_run_of_rows_read_by_row_group_equals_the_whole_tables(tmp_path):
    paths, whole = _parts(tmp_path)
    rows = ParquetRows([ParquetFileTable(p) for p in paths], ["s", "i", "l"])
    expected = whole.select(["s", "i", "l"])
    n = whole.num_rows
    for first in range(n + 1):
        for count in (0, 1, 2, 4, 9, n - first):
            if first + count <= n:
                got = rows.slice(first, count)
                assert got.equals(expected.slice(first, count)), (first, count)
                assert all(c.num_chunks <= 1 for c in got.columns)


def test_rows_taken_in_any_order_equal_the_whole_tables(tmp_path):
    paths, whole = _parts(tmp_path)
    rows = ParquetRows([ParquetFileTable(p) for p in paths], ["i", "f"])
    order = list(range(whole.num_rows))
    random.Random(3).shuffle(order)
    assert rows.take(order).equals(whole.select(["i", "f"]).take(pa.array(order)))
    assert rows.slice(5, 3).equals(whole.select(["i", "f"]).slice(5, 3))  # a slice after a take


@pytest.mark.parametrize("statistics", [True, False], ids=["statistics", "no-statistics"])
def test_a_columns_nulls_and_values_are_the_whole_tables(tmp_path, statistics):
    paths, whole = _parts(tmp_path, statistics=statistics)
    columns = ParquetColumns([ParquetFileTable(p) for p in paths])
    assert list(columns) == whole.column_names
    for name in whole.column_names:
        assert columns.type_of(name) == whole.schema.field(name).type
        assert columns.null_count(name) == whole.column(name).null_count
        assert columns[name].equals(whole.column(name))


def test_nulls_are_counted_from_the_values_where_one_file_has_no_statistics(tmp_path):
    paths, whole = _parts(tmp_path)
    pq.write_table(pq.read_table(paths[1]), paths[1], write_statistics=False)
    tables = [ParquetFileTable(p) for p in paths]
    assert tables[1].null_count("s") is None and tables[0].null_count("s") is not None
    assert ParquetColumns(tables).null_count("s") == whole.column("s").null_count == 5


def test_only_local_parquet_files_of_one_flat_schema_are_read_when_asked(tmp_path):
    paths, _ = _parts(tmp_path)
    tables = [ParquetFileTable(p) for p in paths]
    assert lazy_parquet(tables)
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"i": pa.array([1], pa.int32())}), other)
    assert not lazy_parquet([*tables, ParquetFileTable(str(other))])  # joined in memory, types promoted
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"a": [{"b": 1}]}), nested)
    assert not lazy_parquet([ParquetFileTable(str(nested))])
    assert not lazy_parquet([*tables, pa.table({"i": [1]})])


def test_a_converter_reading_parquet_when_asked_encodes_the_bytes_of_the_table_in_memory(tmp_path):
    paths, _ = _parts(tmp_path)
    for nulls in ("omit", "fill"):
        lazy = TableConverter(paths, TableOptions(nulls=nulls))
        held = TableConverter(
            table_files.in_memory([(None, pq.read_table(p)) for p in paths], "table"), TableOptions(nulls=nulls)
        )
        assert isinstance(lazy._held, ParquetRows) and not isinstance(held._held, ParquetRows)
        n = 20
        assert lazy.source_splits() == {"train": range(n)}
        order = list(range(n))
        random.Random(nulls).shuffle(order)
        for batch in (list(range(n)), list(range(2, 11)), [19], order, order[:6]):
            assert bytes(encode_items(lazy, batch).blob) == bytes(encode_items(held, batch).blob), (nulls, batch)


def test_rows_left_out_by_their_nulls_leave_an_array_of_the_others_not_a_range(tmp_path):
    from tfr_convert.converters.base import SourceContext
    from tfr_convert.dataset.splits import RowNumbers

    paths, _ = _parts(tmp_path)
    assert TableConverter(paths, TableOptions(nulls="omit")).source_splits() == {"train": range(20)}
    skipping = TableConverter(paths, TableOptions(columns=("i", "s")), SourceContext(on_error="skip"))
    rows = skipping.source_splits()["train"]
    assert isinstance(rows, RowNumbers) and rows == [r for r in range(20) if r % 4 != 1]


def test_a_damaged_row_group_is_an_error_naming_the_file_and_the_group(tmp_path):
    paths, _ = _parts(tmp_path, sizes=(30,), groups=(10,))
    footer = pq.ParquetFile(paths[0]).metadata
    chunk = footer.row_group(1).column(0)
    data = bytearray(open(paths[0], "rb").read())
    start = chunk.data_page_offset
    data[start : start + 8] = b"\xff" * 8  # the page header of the second group's first column
    open(paths[0], "wb").write(bytes(data))
    rows = ParquetRows([ParquetFileTable(paths[0])], ["i"])
    assert rows.slice(0, 10).num_rows == 10  # the first group is whole
    with pytest.raises(SourceError) as caught:
        rows.slice(5, 10)
    assert str(caught.value).startswith(f"{paths[0]}: row group 1: ")


def test_a_damaged_parquet_file_is_exit_1_naming_it_and_writes_nothing(cli, tmp_path):
    paths, _ = _parts(tmp_path, sizes=(30,), groups=(10,))
    start = pq.ParquetFile(paths[0]).metadata.row_group(2).column(0).data_page_offset
    data = bytearray(open(paths[0], "rb").read())
    data[start : start + 8] = b"\xff" * 8
    open(paths[0], "wb").write(bytes(data))
    result = cli.convert("table", paths[0], "--out", tmp_path / "out", "--quiet", "--columns", "i", "--no-shuffle")
    assert result.exit_code == 1, result.stderr
    assert f"{paths[0]}: row group 2: " in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def _in_parts_here(parts):
    """An fill_in_parts that runs each part here, one after the other (where forking is
    allowed depends on the threads other tests left running)."""
    import itertools

    def fill_in_parts(fill, n):
        bounds = [n * i // parts for i in range(parts + 1)]
        return [fill(lo, hi) for lo, hi in itertools.pairwise(bounds)]

    return fill_in_parts


@pytest.mark.parametrize("parts", [None, 3, "forked"], ids=["whole", "in 3 parts", "in forked parts"])
def test_rows_laid_out_in_a_shuffled_plan_encode_the_bytes_of_the_table_in_memory(tmp_path, monkeypatch, parts):
    """Two splits shuffled, a row left out; spill files of 4 rows, so batches begin and
    end inside them and span several. Laid out here, or by parts of the row groups on
    forked processes, each writing its pieces of the files (joined when read)."""
    import os

    from tfr_convert.converters.base import SourceContext
    from tfr_convert.converters.table import rows as table_rows
    from tfr_convert.dataset import splits
    from tfr_convert.engine.workers import forked_filler

    monkeypatch.setattr(table_rows, "SPILL_ROWS", 4)
    paths, _ = _parts(tmp_path)
    held = TableConverter(
        table_files.in_memory([(None, pq.read_table(p)) for p in paths], "table"), TableOptions(nulls="omit")
    )
    fill_in_parts = forked_filler(3) if parts == "forked" else _in_parts_here(parts) if parts else None
    lazy = TableConverter(paths, TableOptions(nulls="omit"), SourceContext(fill_in_parts=fill_in_parts))
    source = {"train": range(0, 13), "test": [13, 14, 16, 17, 18, 19]}  # row 15 is not written
    plan = splits.assign(source, str, seed=4, shuffle=True)
    assert isinstance(plan["train"], RowNumbers) and sorted(plan["train"]) == list(range(13))
    lazy.planned(plan)
    spill = lazy._held
    assert isinstance(spill, table_rows.SpilledRows) and sorted(spill._pieces) == list(range(5))  # 19 rows, 4 a file
    pieces = sorted(len(written) for written in spill._pieces.values())
    assert len(os.listdir(spill._folder)) == sum(pieces)
    # (9 row groups shuffled: some file has a piece from every part; forked parts when no thread but this one runs)
    assert pieces[-1] in ((1, 3) if parts == "forked" else (parts or 1,))
    for items in plan.values():
        for size in (1, 3, 5, len(items)):
            for at in range(0, len(items), size):
                batch = list(items[at : at + size])
                got = encode_items(lazy, batch).blob
                assert bytes(got) == bytes(encode_items(held, batch).blob), batch
    odd = [3, 1, 2]  # not a run of the plan: read whole, still the same values
    assert bytes(encode_items(lazy, odd).blob) == bytes(encode_items(held, odd).blob)
    folder = spill._folder
    del lazy, spill
    import gc

    gc.collect()
    assert not os.path.exists(folder)


def test_a_run_in_source_order_is_not_laid_out_again(tmp_path):
    paths, _ = _parts(tmp_path)
    lazy = TableConverter(paths, TableOptions(nulls="omit"))
    lazy.planned({"train": range(20)})
    assert isinstance(lazy._held, ParquetRows)


def test_a_forked_worker_leaves_its_parents_spill_folder_alone(tmp_path):
    """A worker that reads from the spill and lets go of it (its finalizer runs there
    too) removes nothing; the parent's letting go removes the folder."""
    import gc
    import os

    from tfr_convert.dataset import splits

    paths, _ = _parts(tmp_path)
    lazy = TableConverter(paths, TableOptions(nulls="omit"))
    plan = splits.assign({"train": range(20)}, str, seed=0, shuffle=True)
    lazy.planned(plan)
    folder = lazy._held._folder
    child = os.fork()
    if child == 0:
        code = 1
        try:
            encode_items(lazy, plan["train"][:5])
            del lazy
            gc.collect()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert status == 0
    assert os.path.isdir(folder) and os.listdir(folder)
    del lazy
    gc.collect()
    assert not os.path.exists(folder)


ARROW_MEMORY = """
import time
from tfr_convert.optional import pyarrow
pa = pyarrow("the test")
import numpy as np
import pyarrow.compute as pc
def rss():
    return int([line for line in open("/proc/self/status") if line.startswith("VmRSS")][0].split()[1]) // 1024
base = pa.array(np.arange(1_000_000))
before = rss()
made = [pc.add(base, i) for i in range(25)]  # 200 MB of Arrow's own memory
held = rss()
del made
time.sleep(0.05)
print(before, held, rss(), pa.default_memory_pool().backend_name)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_arrow_gives_back_the_memory_of_columns_let_go_unless_the_caller_chose_otherwise():
    """A table's planning reads whole columns and lets them go: Arrow's allocator gives
    their pages back (no ten-million-row column held as if in use); a caller's own
    MIMALLOC_PURGE_DELAY is kept."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    *figures, allocator = _python(ARROW_MEMORY, env).split()
    if allocator != "mimalloc":
        pytest.skip(f"this pyarrow allocates with {allocator}")
    before, held, after = map(int, figures)
    assert held - before > 150 and after - before < 50
    *figures, _ = _python(ARROW_MEMORY, env | {"MIMALLOC_PURGE_DELAY": "-1"}).split()
    before, held, after = map(int, figures)
    assert held - before > 150 and after - before > 150


def _python(code: str, env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
