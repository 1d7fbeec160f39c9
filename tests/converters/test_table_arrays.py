"""Arrow arrays to numpy and back through their buffers (converters/table/arrow_numpy.py): the
values pyarrow's own conversions give, and a table conversion that never imports pandas."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tfr_convert.converters.table.arrow_numpy import from_numpy, strings, to_numpy

NUMERIC = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
NUMERIC += [pa.float32(), pa.float64(), pa.bool_()]


def _arrays(t: pa.DataType, nulls: bool) -> list:
    """One chunk, a slice of one (an offset into its buffers, not a multiple of 8), several
    chunks, none, and an empty one."""
    rng = np.random.default_rng(3)
    values = [None if nulls and i % 7 == 3 else v for i, v in enumerate(rng.integers(0, 100, 40).tolist())]
    if pa.types.is_boolean(t):
        values = [None if v is None else v % 2 == 0 for v in values]
    whole = pa.array(values, t)
    return [
        whole,
        whole.slice(5, 29),
        pa.chunked_array([whole.slice(0, 13), whole.slice(13, 3), whole.slice(16)]),
        pa.chunked_array([], t),
        pa.array([], t),
    ]


@pytest.mark.parametrize("t", NUMERIC, ids=str)
def test_values_without_nulls_are_pyarrows_own(t):
    for array in _arrays(t, nulls=False):
        found = to_numpy(array)
        expected = array.to_numpy(zero_copy_only=False)
        assert found.dtype == expected.dtype and found.tolist() == expected.tolist()


@pytest.mark.parametrize("t", NUMERIC, ids=str)
def test_nulls_take_the_fill_as_fill_null_gives_them(t):
    fill = True if pa.types.is_boolean(t) else 9
    for array in _arrays(t, nulls=True):
        found = to_numpy(array, fill)
        expected = array.fill_null(fill).to_numpy(zero_copy_only=False)
        assert found.dtype == expected.dtype and found.tolist() == expected.tolist()


def test_one_chunk_without_nulls_is_a_view_of_its_buffer():
    array = pa.array(np.arange(10, dtype=np.int64)).slice(2, 5)
    found = to_numpy(array)
    assert not found.flags.owndata and found.tolist() == [2, 3, 4, 5, 6]


def test_other_types_and_unfilled_nulls_go_through_pyarrow():
    texts = pa.array(["a", None, "c"])
    assert to_numpy(texts).tolist() == ["a", None, "c"]
    with_nulls = pa.array([1, None, 3], pa.int64())
    assert np.isnan(to_numpy(with_nulls)[1])  # pyarrow's own answer: floats with NaN


def test_from_numpy_shares_memory_and_widens_to_64_bits():
    values = np.arange(6, dtype=np.int64)
    array = from_numpy(values)
    assert array.type == pa.int64() and array.to_pylist() == values.tolist()
    assert array.buffers()[1].address == values.ctypes.data
    assert from_numpy(np.array([3, 1], np.int32)).type == pa.int64()
    assert from_numpy(np.arange(10, dtype=np.int64)[::3]).to_pylist() == [0, 3, 6, 9]
    assert from_numpy(np.array([1.5], np.float32)).to_pylist() == [1.5]
    assert from_numpy(np.array([7], np.uint16)).type == pa.uint64()


def test_from_numpy_with_nulls_equals_pa_array_of_nones():
    for values in ([1, None, 3, None, 5, 6, 7, 8, 9], [None] * 3, [2.5, None], [4, 5]):
        valid = np.array([v is not None for v in values])
        dtype = np.float64 if any(isinstance(v, float) for v in values) else np.int64
        numbers = np.array([0 if v is None else v for v in values], dtype)
        expected = pa.array(values, pa.float64() if dtype == np.float64 else pa.int64())
        assert from_numpy(numbers, valid).equals(expected)


def test_strings_equal_pa_array():
    for texts in (["b", "", "ä€", "long" * 50], []):
        assert strings(texts).equals(pa.array(texts, pa.string()))


def test_a_table_conversion_never_imports_pandas(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    table = pa.table(
        {
            "x": rng.integers(-5, 100, n),
            "f": rng.standard_normal(n),
            "label": pa.array([None if i % 97 == 0 else i % 5 for i in range(n)], pa.int64()),
            "name": pa.array([f"c{i % 7}" for i in range(n)]),
            "g": rng.integers(0, 50, n),
            "s": pa.array(["train" if i % 5 else "test" for i in range(n)]),
        }
    )
    src = tmp_path / "t.parquet"
    pq.write_table(table, src, row_group_size=700)
    csv = tmp_path / "t.csv"
    csv.write_text("x,f,s\n" + "".join(f"{i if i % 9 else ''},{i / 4 if i % 7 else ''},t{i}\n" for i in range(50)))
    runs = [
        [],
        ["--no-shuffle"],
        ["--split", "train=0.8,test=0.2", "--label-column", "label", "--stratify", "--on-error", "skip"],
        ["--split", "train=0.8,test=0.2", "--group-column", "name", "--label-column", "name"],
        ["--split-column", "s", "--workers", "2"],
    ]
    probe = (
        "import sys\n"
        "from tfr_convert.cli.convert import convert\n"
        "try:\n    convert(sys.argv[1:])\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "print('pandas' in sys.modules)\n"
    )
    runs.append([str(csv)])  # (a second source: the CSV read alone)
    for k, options in enumerate(runs):
        source = [] if options[:1] == [str(csv)] else [str(src)]
        args = ["table", *source, "--out", str(tmp_path / f"out{k}"), "--quiet", "--nulls", "fill", *options]
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "False", options
