"""The install variants of the README: the size of the virtual environment and the install time.

    python benchmarks/bench_install.py [--extras ",tf"] [--out benchmarks/install.md]

For each extra ("" is the light install), from scratch: `python -m venv V`, then
`V/bin/pip install -q REPO[extra]` (pip's own cache is used, as on a machine that has
installed packages before; nothing else is shared), timed; then the size of V on disk.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, machine


def tree_bytes(root: Path) -> int:
    return sum(os.lstat(os.path.join(d, f)).st_size for d, _, files in os.walk(root) for f in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default=",tf")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "install.md")
    args = parser.parse_args()
    lines = [f"# Install variants ({machine()}; pip's cache warm)", "",
             "| install | venv size | install time |", "|---|---|---|"]  # fmt: skip
    for extra in args.extras.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            venv = Path(tmp) / "V"
            target = f"{REPO}[{extra}]" if extra else str(REPO)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "pip"), "install", "-q", target], check=True)
            seconds = time.perf_counter() - start
            size = tree_bytes(venv)
        label = f'pip install "tfr-convert[{extra}]"' if extra else "pip install tfr-convert (light)"
        lines.append(f"| `{label}` | {size / 1e6:,.0f} MB | {seconds:.0f} s |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
