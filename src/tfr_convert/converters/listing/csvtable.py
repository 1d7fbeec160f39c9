"""Label CSVs: read defensively, type columns by their values.

The file must be UTF-8 (a leading BOM, as Excel writes, is accepted and
dropped); every problem names the CSV and its line. Row-level problems are
returned, not raised, so that `--on-error skip` can leave those rows out.

The separator is detected from the first lines (`,` `;` tab `|`: the one that
splits them all into the same number of fields, the most), unless given.
Spreadsheets set to a locale with decimal commas write `;`-separated files
with `1,5` for 1.5: with any separator but `,`, such numbers are floats.
"""

from __future__ import annotations

import csv
import gzip
import itertools
import math
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from ...errors import SourceError
from ...storage import fs

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INT64_MAX = (1 << 63) - 1
_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")


@dataclass(frozen=True)
class Row:
    line: int  # 1-based line of the CSV where the row starts
    values: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    path: str
    header: tuple[str, ...]
    rows: list[Row]
    problems: list[tuple[int, str]]  # (line, what is wrong) of rows left out
    delimiter: str = ","

    @property
    def decimal_comma(self) -> bool:
        return self.delimiter != ","

    def column_type(self, values: list[str]) -> str:
        return column_type(values, self.decimal_comma)

    def typed(self, value: str, dtype: str) -> int | float | str:
        return typed(value, dtype, self.decimal_comma)


DELIMITERS = (",", ";", "\t", "|")


def delimiter_name(delimiter: str) -> str:
    return "tab" if delimiter == "\t" else repr(delimiter)


def detect_delimiter(text: str, lines: int = 20) -> str:
    """The separator that splits the first lines into one number (> 1) of fields, the
    largest such number; `,` when none does (a one-column file)."""
    head = [line for line in text.splitlines()[: lines * 2] if line.strip()][:lines]
    best, best_width = ",", 1
    for delimiter in DELIMITERS:
        try:
            widths = {len(record) for record in csv.reader(head, delimiter=delimiter)}
        except csv.Error:
            continue
        if len(widths) == 1 and (width := widths.pop()) > best_width:
            best, best_width = delimiter, width
    return best


#: the longest line read: a longer one is refused before it is held (with the csv
#: module's own limit of a field, 128 KiB, a line this long is mostly fields)
MAX_LINE = 16 << 20
_BOM = b"\xef\xbb\xbf"
_LONE_CR = re.compile(r"(?<=\r)(?!\n|$)")  # old Mac line ends: a line break too, as csv reads them


def read(path: str, header: bool = True, delimiter: str | None = None) -> Table:
    """Rows of a CSV (gzipped where its name ends in .gz, as pandas reads it); with
    header=False a one-column headerless file (header ()). `delimiter`: the separator,
    detected when None. Read a line at a time: no line longer than MAX_LINE is ever held."""
    with fs.open_input(path) as raw:
        f = gzip.GzipFile(fileobj=raw, mode="rb") if path.lower().endswith(".gz") else raw
        try:
            lines = _lines(path, f)
            head = list(itertools.islice(lines, 40))  # what the separator is detected from
            while head and not any(line.strip() for line in head):  # blank so far: on to the first line that is not
                more = list(itertools.islice(lines, 40))
                if not more:
                    break
                head += more
            if not any(line.strip() for line in head):
                raise SourceError(f"{path}: the CSV is empty")
            return _records(path, itertools.chain(head, lines), header, delimiter, "".join(head))
        except EOFError:
            raise SourceError(f"{path}: truncated gzip stream (it ends before its end-of-stream marker)") from None
        except (gzip.BadGzipFile, zlib.error) as e:
            raise SourceError(f"{path}: corrupt gzip data: {e}") from None


def _lines(path: str, f: IO[bytes]) -> Iterator[str]:
    """The file's lines, decoded: UTF-8 (a leading BOM dropped), no NUL byte, none longer
    than MAX_LINE; each problem names its line."""
    number, offset = 0, 0
    while raw := f.readline(MAX_LINE + 1):
        number += 1
        if len(raw) > MAX_LINE:
            raise SourceError(
                f"{path}: line {number}: longer than {MAX_LINE >> 20} MiB (is this a CSV, with line breaks?)"
            )
        if number == 1 and raw.startswith(_BOM):
            raw, offset = raw[len(_BOM) :], len(_BOM)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SourceError(
                f"{path}: line {number}: not UTF-8 (byte {offset + e.start}: {raw[e.start : e.start + 1]!r})"
            ) from None
        nul = text.find("\0")
        if nul >= 0:  # no path, label or value holds one; it means a binary or mis-encoded (UTF-16?) file
            raise SourceError(
                f"{path}: line {number}: a NUL byte at column {nul + 1} (is this a UTF-16 or binary file?)"
            )
        offset += len(raw)
        yield from _LONE_CR.split(text) if "\r" in text else (text,)


def _records(path: str, lines: Iterator[str], header: bool, delimiter: str | None, head: str) -> Table:
    detected = delimiter is None
    delimiter = detect_delimiter(head) if delimiter is None else delimiter
    seen = f"read with separator {delimiter_name(delimiter)}{' (detected)' if detected else ''}"
    # strict: a quote that is never closed is an error, not the rest of the file read into one field
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    rows: list[Row] = []
    problems: list[tuple[int, str]] = []
    names: tuple[str, ...] = ()
    start = 1
    try:
        for record in reader:
            line, start = start, reader.line_num + 1
            if not record or all(not v.strip() for v in record):
                continue  # blank line
            values = tuple(v.strip() for v in record)
            if header and not names:
                names = values
                _check_header(path, line, names)
                continue
            width = len(names) if header else 1
            if len(values) != width:
                problems.append((line, f"{len(values)} fields, expected {width} ({seen}; --delimiter sets it)"))
                continue
            rows.append(Row(line, values))
    except csv.Error as e:
        if "unexpected end of data" in str(e):
            raise SourceError(f"{path}: line {start}: a quote opened here is never closed") from None
        raise SourceError(f"{path}: line {reader.line_num}: malformed CSV: {e}") from None
    if not rows and not problems:
        raise SourceError(f"{path}: the CSV has {'a header but ' if names else ''}no rows")
    return Table(path, names, rows, problems, delimiter)


def _check_header(path: str, line: int, names: tuple[str, ...]) -> None:
    for i, name in enumerate(names):
        if not name:
            raise SourceError(f"{path}: line {line}: column {i + 1} has no name")
        if "\ufeff" in name:
            raise SourceError(
                f"{path}: line {line}: column {i + 1}'s name holds a byte-order mark (U+FEFF; was the file "
                "saved with two, or two files joined?): remove it"
            )
    duplicates = sorted(n for n, count in Counter(names).items() if count > 1)
    if duplicates:
        raise SourceError(f"{path}: line {line}: duplicate column names {', '.join(duplicates)}")


def column_type(values: list[str], decimal_comma: bool = False) -> str:
    """int64 if every value is an integer that fits, float32 if every value is a number
    (`1,5` too, with `decimal_comma`), else string."""
    present = [v for v in values if v != ""]
    if present and len(present) == len(values):
        # (the length test first: int() refuses strings of more than 4,300 digits)
        if all(len(v) <= 20 and _INT.fullmatch(v) and abs(int(v)) <= _INT64_MAX for v in present):
            return "int64"
        if decimal_comma:
            present = [_point(v) for v in present]
        if all(_FLOAT.fullmatch(v) and math.isfinite(float(v)) for v in present):  # 1e999 or 5,000 digits: text
            return "float32"
    return "string"


def _point(value: str) -> str:
    """`1,5` -> `1.5` (one comma, digits around it); anything else as it is."""
    return value.replace(",", ".") if _DECIMAL_COMMA.fullmatch(value) else value


def typed(value: str, dtype: str, decimal_comma: bool = False) -> int | float | str:
    if dtype == "int64":
        return int(value)
    if dtype == "float32":
        return float(_point(value) if decimal_comma else value)
    return value
