"""The progress bar every command draws on stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def progress_bar(
    quiet: bool, desc: str, unit: str, opening: str
) -> tuple[Callable[[int, int | None], None] | None, Callable[[], None]]:
    """(a `progress(n, total)` callback drawing a tqdm bar on stderr, or None; a closer).

    On a terminal only. The phases are labelled: an `opening` status line ("checking
    sources...") until the first call, then the bar, `desc`, which stays on screen when
    done (also in a `script` log). The bar is made at the first call, not before: work
    started before it (worker processes forked from this one) must not meet its thread."""
    if quiet or not sys.stderr.isatty():
        return None, lambda: None
    from tqdm import tqdm

    sys.stderr.write(f"{opening}...")
    sys.stderr.flush()
    bars = []

    def update(n: int, total: int | None) -> None:
        if not bars:  # created on the first call, when the total is known
            sys.stderr.write("\r\033[K")  # the status line gives way to the bar
            try:  # a pseudo-terminal without a size (`script` run from a pipe) says 0x0,
                sized = os.get_terminal_size(sys.stderr.fileno()).columns > 0  # and tqdm then hides its bar
            except OSError:
                sized = False
            shape = {"dynamic_ncols": True} if sized else {"ncols": 80, "nrows": 24}
            bars.append(tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, **shape))
        bars[0].update(n)

    def close() -> None:
        if bars:
            bars[0].close()
        else:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()

    return update, close
