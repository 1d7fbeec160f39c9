"""The parent's stages of one conversion: wall and CPU seconds of its main thread in each.

    python benchmarks/stage_times.py images PHOTOS --out OUT --workers 16 2>>times.jsonl
    python benchmarks/stage_times.py --table times.jsonl > benchmarks/results/stage-times.md

Runs `tfr-convert ARGS...` in this process with the parent's stages wrapped: listing the
sources (the converter made), planning, the fingerprints of the inputs, receiving a
worker's result, sending a task, handing a batch to the shard writer (waiting for the
write threads included), journaling a shard, the metadata. A stage whose wall time is
far above its CPU time waited (for workers, for the write threads); one whose CPU time
is close to the whole run's wall time is the one more workers cannot shorten. Stages
nest (`run` holds the others): read each against the whole. Prints one line of JSON on
stderr; `--table` makes the results file of such lines: per command, the median of
each figure over its runs.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import json
import statistics
import sys
import time
from collections import Counter

STAGES = [
    ("tfr_convert.cli.running", "converted"),  # the converter made (sources listed), then run
    ("tfr_convert.engine.local", "run"),
    ("tfr_convert.engine.local", "plan_splits"),
    ("tfr_convert.engine.local", "input_files"),
    ("tfr_convert.engine.local", "run_identity"),
    ("tfr_convert.engine.local", "split_policies"),  # the cuts planned: a few items encoded per split
    ("tfr_convert.engine.local", "write_whole_shard"),  # shards written whole by the parent itself
    ("tfr_convert.engine.local", "encode_sealed"),  # batches encoded by the parent itself
    ("tfr_convert.engine.local", "commit_with_metadata"),
    ("tfr_convert.engine.workers", "Workers.__init__"),
    ("tfr_convert.engine.workers", "Workers.send"),
    ("tfr_convert.engine.workers", "Workers.receive"),
    ("tfr_convert.engine.workers", "Workers.close"),
    ("tfr_convert.output.shards", "SplitWriter.write_chunk"),
    ("tfr_convert.output.shards", "SplitWriter.close"),
    ("tfr_convert.output.journal", "Journal.shard_done"),
    ("tfr_convert.storage.pooled_writes", "WritePool.write"),
]

cpu: Counter[str] = Counter()
wall: Counter[str] = Counter()
calls: Counter[str] = Counter()


def _wrap(module: str, qualname: str) -> None:
    owner = importlib.import_module(module)
    *path, name = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        c, t = time.thread_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            cpu[qualname] += time.thread_time() - c
            wall[qualname] += time.perf_counter() - t
            calls[qualname] += 1

    setattr(owner, name, timed)


def table(lines: list[str]) -> str:
    """Markdown: a table per command, each stage's calls, wall and CPU seconds (medians)."""
    runs: dict[str, list[dict]] = {}
    for line in lines:
        if line.strip():
            found = json.loads(line)
            runs.setdefault(found["command"], []).append(found)
    out = ["# Stages of the parent (benchmarks/stage_times.py; medians of each command's runs)", ""]
    for command, found in runs.items():
        out += [f"## `tfr-convert {command}` ({len(found)} runs)", ""]
        out += ["| stage | calls | wall | CPU |", "|---|---|---|---|"]
        rows = [("whole (in this process)", {"calls": 1, **found[0]["whole"]}, [f["whole"] for f in found])]
        rows += [(k, v, [f["stages"].get(k, v) for f in found]) for k, v in found[0]["stages"].items()]
        for name, first, each in rows:
            wall_s = statistics.median(e["wall_s"] for e in each)
            cpu_s = statistics.median(e["cpu_s"] for e in each)
            out.append(f"| {name} | {first['calls']} | {wall_s:.3f} s | {cpu_s:.3f} s |")
        out.append("")
    return "\n".join(out)


def main() -> None:
    if sys.argv[1:2] == ["--table"]:
        with open(sys.argv[2]) as f:
            print(table(f.readlines()))
        return
    started, started_cpu = time.perf_counter(), time.thread_time()

    def report() -> None:
        stages = {k: {"calls": calls[k], "wall_s": round(wall[k], 3), "cpu_s": round(cpu[k], 3)} for k in wall}
        whole = {"wall_s": round(time.perf_counter() - started, 3), "cpu_s": round(time.thread_time() - started_cpu, 3)}
        print(json.dumps({"command": " ".join(sys.argv[1:]), "whole": whole, "stages": stages}), file=sys.stderr)

    for module, qualname in STAGES:
        _wrap(module, qualname)
    atexit.register(report)
    from tfr_convert.cli.convert import convert

    sys.argv = ["tfr-convert", *sys.argv[1:]]
    convert()


if __name__ == "__main__":
    main()
