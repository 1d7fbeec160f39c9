"""`tfr_convert.write()` called from a plain script, as a notebook user's script calls it.

    python benchmarks/bench_write.py [--rows 1000] [--repeat 5]

A script builds --rows dict rows (an int, a text, a float) and times `write(rows, OUT)`
around the call, in two states of the process: no other thread (workers may fork) and
another thread alive (as tqdm's monitor or `datasets` leave one: workers must then not
re-run the script). Each is a fresh process, interleaved, medians of --repeat; the
script's start and imports are not counted. Writes benchmarks/results/write.md.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from common import bench_parser, machine, median, write_results

SCRIPT = """
import sys, threading, time
if sys.argv[3] == "thread":
    threading.Thread(target=threading.Event().wait, daemon=True).start()
import tfr_convert
rows = [{"id": i, "text": f"row {i}", "score": i / 3} for i in range(int(sys.argv[2]))]
start = time.perf_counter()
tfr_convert.write(rows, sys.argv[1])
print(time.perf_counter() - start)
"""


def main() -> None:
    parser = bench_parser(__doc__, "write")
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    script = work / "plain.py"
    script.write_text(SCRIPT)
    times: dict[str, list[float]] = {"no other thread": [], "a thread alive": []}
    for _ in range(args.repeat):
        for state, word in (("no other thread", "none"), ("a thread alive", "thread")):
            out = work / "out"
            shutil.rmtree(out, ignore_errors=True)
            run = subprocess.run([sys.executable, str(script), str(out), str(args.rows), word],
                                 capture_output=True, text=True, check=True, cwd=work)  # fmt: skip
            times[state].append(float(run.stdout.strip().splitlines()[-1]))
    lines = [
        f"Machine: {machine()}. `write()` of {args.rows:,} rows from a plain script, medians of {args.repeat}.",
        "",
        "| process state | write() | goal | met |",
        "|---|---|---|---|",
    ]
    for state, found in times.items():
        seconds = median(found)
        lines.append(f"| {state} | {seconds:.2f} s | <= 0.5 s | {'yes' if seconds <= 0.5 else 'no'} |")
    write_results(args.out, [*lines, ""])


if __name__ == "__main__":
    main()
