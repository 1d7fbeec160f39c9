"""JSON Lines integers past int64: pyarrow reads them as floats (2^64 - 1 becomes 2^64),
so they are found by line and refused, not stored changed; digits inside strings and
integers that fit are no finding, wherever the pieces of the scan are cut."""

from __future__ import annotations

import io
import json

import pytest

from tfr_convert.converters.table.json_numbers import past_int64

LINES = [
    {"id": 1, "note": "12345678901234567890123 in a string", "x": 0.5},
    {"id": -(2**63), "x": 2**63 - 1},
    {"id": 3, "nested": {"values": [1, 2, 99999999999999999999]}},
    {"id": 4, "x": 2**64 - 1},
]


@pytest.mark.parametrize("piece", [7, 64, 1 << 20])
def test_the_first_integer_past_int64_is_found_by_line_and_place_wherever_pieces_are_cut(piece):
    text = "".join(json.dumps(line) + "\n" for line in LINES).encode()
    assert past_int64(io.BytesIO(text), piece) == (3, "nested.values[2]", 99999999999999999999)
    without = "".join(json.dumps(line) + "\n" for line in LINES[:2]).encode()
    assert past_int64(io.BytesIO(without), piece) is None
    last = json.dumps(LINES[3]).encode()  # no line break at the end
    assert past_int64(io.BytesIO(without + last), piece) == (3, "x", 2**64 - 1)


def test_decimals_and_exponents_of_many_digits_are_floats_as_written(tmp_path):
    text = b'{"a": 12345678901234567890.5}\n{"a": 1e25}\n{"a": 123456789012345678901e-3}\n'
    assert past_int64(io.BytesIO(text)) is None


def test_an_integer_past_int64_in_json_lines_is_exit_1_naming_line_and_column(cli, tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"id": 1, "count": 3}\n{"id": 2, "count": 18446744073709551615}\n')
    result = cli.convert("table", tmp_path / "rows.jsonl", "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert "rows.jsonl: line 2: count is 18446744073709551615, an integer past int64" in result.stderr
    assert "write it as a string" in result.stderr and not (tmp_path / "out").exists()
    (tmp_path / "fine.jsonl").write_text('{"id": 1, "count": 9223372036854775807, "note": "99999999999999999999"}\n')
    assert cli.convert("table", tmp_path / "fine.jsonl", "--out", tmp_path / "fine").exit_code == 0
