"""One job per file, several files at once, on every core (--verify, --diff)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..storage import fs


def each_file(fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]]) -> list[Any]:
    """fn(*job) of every job, in order; a job's first element is the file it reads.

    Local files go to forked processes (a scan's per-record work holds the GIL; its
    reading, sha256 and CRC32C would not), remote ones to threads (their time is the
    store's). A process forked here sees what the caller built before the call."""
    cores = min(len(jobs), os.cpu_count() or 1)
    if cores < 2:
        return [fn(*job) for job in jobs]
    import multiprocessing  # (with the pools: not imported for one file)
    from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor

    local = not any(fs.is_remote(job[0]) for job in jobs) and "fork" in multiprocessing.get_all_start_methods()
    pool: Executor = (
        ProcessPoolExecutor(cores, mp_context=multiprocessing.get_context("fork"))
        if local
        else ThreadPoolExecutor(cores)
    )
    with pool:
        return list(pool.map(fn, *zip(*jobs, strict=True)))
