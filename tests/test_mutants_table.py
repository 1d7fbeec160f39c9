"""scripts/mutants.py's own seams: each explained survivor names a line its module still
has, and a mutant is run against the tests that reach the statement it changes."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

mutants = pytest.importorskip("mutants", reason="scripts/mutants.py needs cosmic-ray (the dev extra)")
from mutants_equivalent import EQUIVALENT  # noqa: E402


def test_every_explained_survivor_names_a_line_its_module_still_has():
    lines = {name: {line.strip() for line in (mutants.REPO / module).read_text().splitlines()}
             for name, (module, _) in mutants.TARGETS.items()}  # fmt: skip
    stale = [(name, line) for name, line, _ in EQUIVALENT if line not in lines.get(name, ())]
    assert stale == []


def test_a_mutant_is_run_against_the_tests_that_reach_its_statement():
    source = "x = 1\n\n\ndef f(a):\n    if (a >\n            2):\n        return [\n            a + 1]\n    return 0\n"
    tree = ast.parse(source)
    assert mutants._statement_lines(tree, 6) == {5, 6}  # an if's condition, its header only
    assert mutants._statement_lines(tree, 8) == {7, 8}  # a statement across lines
    assert mutants._statement_lines(tree, 9) == {9}
    assert mutants._statement_lines(tree, 1) == {1}
    took = {"t::fast": 0.1, "t::slow": 2.0, "t::other": 1.0}

    class Data:  # coverage's CoverageData, as much as Selection reads
        def measured_files(self):
            return {"/x/src/pkg/m.py"}

        def contexts_by_lineno(self, path):
            return {1: [""], 5: ["t::slow", "t::fast"], 7: ["t::other"], 9: ["t::slow|run_test"]}

    chosen = mutants.Selection(Data(), "pkg/m.py", took, source)
    assert chosen.tests(6) == ["t::fast", "t::slow"]  # fastest first
    assert chosen.tests(8) == ["t::other"]
    assert chosen.tests(9) == ["t::slow"]  # a subprocess's lines count for the test that started it
    assert chosen.tests(1) == ["t::fast", "t::other", "t::slow"]  # run at import: every test
    assert chosen.tests(3) == ["t::fast", "t::other", "t::slow"]  # reached by none: every test
