"""Integers a JSON Lines file holds past int64, which pyarrow's reader turns into floats
(18446744073709551615 becomes 1.8446744073709552e19, then a float32): found so that
they are refused by line, not stored changed.

Candidates are found by a pattern over the raw bytes (19 or more digits, not part of a
decimal or exponent), read in pieces cut at line ends; only a line holding one is parsed
(by Python's json, whose integers are exact), so digits inside a string are no finding.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

PIECE = 4 << 20
INT64 = (-(1 << 63), (1 << 63) - 1)
_LONG = re.compile(rb"(?<![\d.eE])-?\d{19,}(?![\d.eE])")


def past_int64(f: IO[bytes], piece: int = PIECE) -> tuple[int, str, int] | None:
    """(1-based line, the value's place in it, the integer) of the first integer of the
    JSON Lines file `f` outside int64, or None."""
    line, carried = 1, b""
    while True:
        chunk = f.read(piece)
        data = carried + chunk
        end = data.rfind(b"\n") + 1 if chunk else len(data)
        whole, carried = data[:end], data[end:]
        match = _LONG.search(whole)
        while match is not None:
            start = whole.rfind(b"\n", 0, match.start()) + 1
            stop = whole.find(b"\n", match.end())
            stop = len(whole) if stop < 0 else stop
            hit = _outside_int64(whole[start:stop])
            if hit is not None:
                return line + whole.count(b"\n", 0, start), *hit
            match = _LONG.search(whole, stop)
        line += whole.count(b"\n")
        if not chunk:
            return None


def _outside_int64(text: bytes) -> tuple[str, int] | None:
    try:
        document = json.loads(text)
    except ValueError:
        return None  # pyarrow's reader names a line it cannot parse
    return _walk(document, "")


def _walk(value: Any, where: str) -> tuple[str, int] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return (where, value) if not INT64[0] <= value <= INT64[1] else None
    if isinstance(value, dict):
        items = ((f"{where}.{key}" if where else str(key), v) for key, v in value.items())
    elif isinstance(value, list):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for place, inner in items:
        place_found = _walk(inner, place)
        if place_found is not None:
            return place_found
    return None
