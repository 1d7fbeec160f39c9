"""How deep a JSON Lines file nests, found without parsing it: before pyarrow's reader
sees a file, whose parser recurses once per level (ten thousand levels crash the
process) and whose types then nest as deep (our own walks of them recurse too).

Each line is one document (pyarrow reads them so, in blocks, in parallel): the depth
starts again at every line, so that no line's stray closing brackets hide the next
line's opening ones. A bracket counts outside strings only; a quote ends a string
unless an odd run of backslashes stands before it. The file is read in pieces, each
scanned with numpy, the state carried from one to the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

import numpy as np

PIECE = 4 << 20
# what each byte is to the scan: 0 nothing, else one of these
_QUOTE, _OPEN, _CLOSE, _NEWLINE, _BACKSLASH = 1, 2, 3, 4, 5
_KIND = np.zeros(256, np.int8)
_KIND[[ord('"'), ord("["), ord("{"), ord("]"), ord("}"), ord("\n"), ord("\\")]] = [1, 2, 2, 3, 3, 4, 5]


@dataclass
class Deepest:
    depth: int = 0  # the most brackets open at once within one line
    line: int = 0  # 1-based line where that depth is first reached (0: no bracket at all)


def deepest(f: IO[bytes], piece: int = PIECE) -> Deepest:
    """The deepest nesting of any line of the JSON Lines file `f`, and where."""
    deepest_so_far = Deepest()
    in_string, backslashes, depth, line = 0, 0, 0, 1  # the state at a piece's end
    while chunk := f.read(piece):
        kinds = _KIND[np.frombuffer(chunk, np.uint8)]
        at = np.flatnonzero(kinds)  # only these bytes matter: the scan works on them alone
        kinds = kinds[at]
        escaped, trailing = _escaped_quotes(at, kinds, backslashes, len(chunk))
        kept = (kinds != _BACKSLASH) & ~escaped
        at, kinds = at[kept], kinds[kept]
        backslashes = trailing
        if not len(kinds):
            continue
        quotes, newlines = kinds == _QUOTE, kinds == _NEWLINE
        start = np.maximum.accumulate(np.where(newlines, np.arange(len(kinds)), -1))  # each one's line began there
        strings = _within_line(np.cumsum(quotes), start, in_string) % 2  # quotes so far in the line, mod 2
        step = (kinds == _OPEN).astype(np.int64) - (kinds == _CLOSE)
        step[strings == 1] = 0  # (a quote that opens a string is no bracket either)
        within = _within_line(np.cumsum(step), start, depth)
        top = int(within.argmax())
        if within[top] > deepest_so_far.depth:
            deepest_so_far = Deepest(int(within[top]), line + int(np.count_nonzero(newlines[:top])))
        in_string, depth = int(strings[-1]), int(within[-1])
        line += int(np.count_nonzero(newlines))
    return deepest_so_far


def _escaped_quotes(at: np.ndarray, kinds: np.ndarray, carried: int, size: int) -> tuple[np.ndarray, int]:
    """(which of the bytes are quotes after an odd run of backslashes; how many backslashes
    end the piece), `carried` backslashes ending the piece before."""
    escaped = np.zeros(len(kinds), bool)
    slashes = at[kinds == _BACKSLASH]
    if not len(slashes) and not carried:
        return escaped, 0
    quotes = np.flatnonzero(kinds == _QUOTE)
    if len(slashes):
        first = np.r_[True, np.diff(slashes) != 1]  # where each run of backslashes begins
        run_start = np.maximum.accumulate(np.where(first, np.arange(len(slashes)), 0))
        lengths = np.arange(len(slashes)) - run_start + 1 + np.where(slashes[run_start] == 0, carried, 0)
        last = np.searchsorted(slashes, at[quotes]) - 1  # the last backslash before each quote
        touching = (last >= 0) & (slashes[np.maximum(last, 0)] == at[quotes] - 1)
        before = np.where(touching, lengths[np.maximum(last, 0)], 0)
        trailing = int(lengths[-1]) if slashes[-1] == size - 1 else 0
    else:
        before, trailing = np.zeros(len(quotes), np.int64), 0
    before[at[quotes] == 0] = carried  # a quote that opens the piece follows the last one's run
    escaped[quotes] = before % 2 == 1
    return escaped, trailing


def _within_line(running: np.ndarray, start: np.ndarray, carried: int) -> np.ndarray:
    """A running sum counted from each byte's line start: from the last newline before
    it, or, in the piece's first line, from the piece's start plus what was `carried`."""
    base = np.where(start >= 0, running[np.maximum(start, 0)], -carried)
    return running - base
