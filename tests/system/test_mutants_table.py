"""scripts/mutants.py's own seams: each explained survivor names a line its module still
has, and a mutant is run against the tests that reach the statement it changes."""

from __future__ import annotations

import ast
import sys

import pytest
from helpers import REPO

SCRIPTS = REPO / "scripts"
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


fork = pytest.importorskip("mutants_fork")

MODULE = """import functools

LIMIT = 3


def outer(a, b=LIMIT + 1):
    return a + b


class Box:
    @functools.lru_cache(maxsize=None)
    def grow(self, n):
        def inner(k):
            return k * 2
        return inner(n) + LIMIT


if LIMIT > 2:
    def chosen(n):
        return n - 1
"""


def test_a_change_inside_a_function_body_is_swapped_and_one_outside_it_is_not():
    tree = ast.parse(MODULE)
    assert fork.swap_target(tree, 7, 13) == ("outer", 6, range(7, 8))
    assert fork.swap_target(tree, 6, 20) is None  # a default value: evaluated once, at import
    assert fork.swap_target(tree, 3, 8) is None  # a module-level constant
    assert fork.swap_target(tree, 14, 22)[:2] == (
        "Box.grow",
        11,
    )  # a nested function: its outer one, from its decorator
    assert fork.swap_target(tree, 11, 30) is None  # the decorator's argument
    assert fork.swap_target(tree, 20, 17)[:2] == ("chosen", 19)  # a def inside a module-level if


def test_a_swapped_function_behaves_as_the_mutated_module_imported_afresh(tmp_path):
    import importlib.util

    def load(name, source):
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module, str(path)

    live, path = load("live", MODULE)
    alias, method = live.outer, live.Box.grow  # held elsewhere, as `from m import f` holds them
    mutated = MODULE.replace("a + b", "a - b").replace("k * 2", "k * 3").replace("n - 1", "n + 1")
    fresh, _ = load("fresh", mutated)
    functions = fork.live_functions(path)
    for qualname, first in (("outer", 6), ("Box.grow", 11), ("chosen", 19)):
        fork.swap(functions[qualname, first], fork.find_code(compile(mutated, path, "exec"), qualname, first))
    assert alias(10) == live.outer(10) == fresh.outer(10) == 6
    assert method(live.Box(), 5) == fresh.Box().grow(5) == 18  # through the cache's wrapper
    assert live.chosen(1) == fresh.chosen(1) == 2


_RUN = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import mutants
found = mutants._run("naming", Path(sys.argv[2]), 2, simple=sys.argv[3] == "simple", every=3)
print(json.dumps({"paths": found["paths"], "mutants": found["mutants"], "outcomes": found["outcomes"]}, default=str))
"""


def _mutants_run(work, how: str) -> dict:
    """mutants._run in an interpreter of its own, as scripts/mutants.py runs it: forked from
    this test session, its children would each copy a process holding the whole suite."""
    import json
    import subprocess

    run = subprocess.run([sys.executable, "-c", _RUN, str(SCRIPTS), str(work), how], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_fast_path_kills_the_mutants_the_simple_path_kills(tmp_path):
    """A third of one module's mutants (every third, spread over its lines), once swapped
    into a collected session, once in a fresh session: the same mutants killed (pins the
    fast path to the simple one)."""
    fast = _mutants_run(tmp_path, "fast")
    simple = _mutants_run(tmp_path, "simple")
    assert fast["paths"]["swapped"] > 0 and simple["paths"]["simple"] == simple["mutants"]
    assert fast["outcomes"] == simple["outcomes"]


def _child_starting_tests(pauses: list[float]) -> tuple[int, int]:
    """(pid, the read end of its pipe): a forked child that says it starts a test (a byte)
    and then takes the pause given for it, test after test, then exits 0."""
    import os
    import time

    started, tell = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        for pause in pauses:
            os.write(tell, b".")
            time.sleep(pause)
        os._exit(0)
    os.close(tell)
    return pid, started


def test_a_mutant_is_stopped_once_the_test_it_loops_in_has_had_its_time_and_not_before():
    import os
    import time

    mutants_fork = pytest.importorskip("mutants_fork")
    pid, started = _child_starting_tests([0.05, 60])  # the second test "loops"
    began = time.monotonic()
    assert mutants_fork._waited(pid, [30.0, 0.5], started) == -9  # killed: a timeout
    assert time.monotonic() - began < 10  # at the second test's own timeout, not the first's
    os.close(started)
    pid, started = _child_starting_tests([0.6, 0.6])  # slower than nothing, within each test's time
    assert mutants_fork._waited(pid, [2.0, 2.0], started) == 0
    os.close(started)


def test_a_targets_tests_are_dealt_between_the_coverage_runs_each_with_the_options():
    split = mutants._split_tests
    assert split(["a.py", "b.py::t", "c.py", "-k", "not slow", "-x"], 2) == [
        ["a.py", "c.py", "-k", "not slow", "-x"],
        ["b.py::t", "-k", "not slow", "-x"],
    ]
    assert split(["only.py", "-k", "x"], 2) == [["only.py", "-k", "x"], []]  # (an empty part is not run)
    assert split(["a.py", "b.py"], 1) == [["a.py", "b.py"]]
