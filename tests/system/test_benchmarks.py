"""A smoke run of the benchmark: it runs end to end and reports every ratio (timings are never asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers import REPO

BENCH = REPO / "benchmarks" / "run.py"


def test_benchmark_quick_run_prints_every_ratio(tmp_path):
    out = tmp_path / "results.md"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    run = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--repeat", "1", "--work", str(tmp_path / "work"), "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    measures = [g["measure"] for g in json.loads(out.with_suffix(".json").read_text())["goals"]]
    assert measures == [
        "MNIST vs tutorial loop",
        "MNIST vs floor",
        "MNIST peak RSS / decompressed input",
        "CIFAR-10 vs tutorial loop",
        "CIFAR-10 vs floor (read + write)",
        "CIFAR-10 vs hashing floor (read + sha256 + unpickle + write + sha256)",
        "MNIST --layout tfds vs Pool(2) PNG encode",
        "CIFAR-10 --layout tfds vs Pool(2) PNG encode",
        "keep mode, tiny PNGs in 100 folders, 2 workers vs Pool(2) decode",
        "images: 2 workers vs 1",
        "images: peak RSS all / one fifth",
        "--verify speed / cat speed",
    ]
    for measure in measures:
        assert f"| {measure} |" in run.stdout and f"| {measure} |" in out.read_text()


def test_every_figure_docs_benchmarks_quotes_is_in_a_results_file():
    """docs/benchmarks.md quotes only what a benchmark script wrote: each measured figure
    (a number with a decimal point) appears in one of the files the scripts write."""
    import re

    root = REPO
    results = [*(root / "benchmarks").glob("*.md"), *(root / "benchmarks").glob("*.json")]
    results += (root / "benchmarks" / "results").glob("*.md")
    corpus = "\n".join(p.read_text() for p in results if p.name != "README.md")
    figures = set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w])", (root / "docs" / "benchmarks.md").read_text()))
    assert len(figures) > 50  # the scan reads the page
    assert sorted(f for f in figures if f not in corpus) == []
