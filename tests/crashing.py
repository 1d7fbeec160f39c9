"""Real SIGKILLs for the crash suites: kill_at.py runs tfr-convert and kills it at its Nth filesystem change."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = Path(sys.executable).parent


def files(directory: Path) -> dict[str, bytes]:
    """Every file under a directory (relative path -> bytes), {} if it is gone."""
    if not directory.exists():
        return {}
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def killed_at(n: int, *args, mode: str = "KILL_AT", **env_vars: str) -> subprocess.CompletedProcess:
    env = {**os.environ, mode: str(n), **env_vars}
    return subprocess.run(
        [sys.executable, str(HERE / "kill_at.py"), *map(str, args)], capture_output=True, env=env, timeout=120
    )


def failed_at(n: int, *args, failed_on: Path) -> subprocess.CompletedProcess:
    """Run tfr-convert with its Nth filesystem change failing with ENOSPC (the path that
    change was to be made on written to `failed_on`)."""
    failed_on.unlink(missing_ok=True)
    return killed_at(n, *args, mode="FAIL_AT", FAILED_ON=str(failed_on))


def changes_made(*args, count_file: Path) -> int:
    """How many filesystem changes a whole run makes (as kill_at.py counts them)."""
    env = {**os.environ, "KILL_AT": "0", "COUNT_TO": str(count_file)}
    cmd = [sys.executable, str(HERE / "kill_at.py"), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return int(count_file.read_text())


def work_dir(out: Path) -> Path:
    return out.parent / f".{out.name}.tfr-convert"


def killed_fresh(n: int, args: list, out: Path, expected: dict[str, bytes]) -> None:
    """A run into a fresh `out` killed at its Nth filesystem change leaves nothing at `out`,
    or the whole `expected` dataset: never part of it."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work_dir(out), ignore_errors=True)
    run = killed_at(n, *args, "--out", out)
    assert run.returncode == -signal.SIGKILL, (n, run.stderr)
    assert files(out) in ({}, expected), n
