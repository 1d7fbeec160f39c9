"""Mutation testing of the modules whose bugs lose or corrupt data, with cosmic-ray.

    .venv/bin/python scripts/mutants.py                  # every module below
    .venv/bin/python scripts/mutants.py naming framing    # some of them, by name

Each module is mutated on its own with cosmic-ray's core operators (of the binary and
comparison replacements, the few BINARY and COMPARISON keep) and each mutant is run
against those of the module's tests that reach the statement it changes, fastest first,
with `-x`: one run of the unmutated tests under coverage tells, per test, which lines
it ran (its subprocesses' too); lines run at import, or by no test, get them all. The
checkout is never touched: each worker (one per core) has its own copy of src/ where
the mutant is written, and a test session that collected the tests once; each mutant's
tests run in a child forked from that session with the mutated function swapped into the
live one (mutants_fork.py), or, where the change ran before the tests (at import, while
collecting), in a child forked from this process that starts pytest afresh (`--simple`:
every mutant so). A mutant costs its tests, not an interpreter's start nor a collection;
its subprocesses see the copy through PYTHONPATH. A mutant one of whose tests runs past
twice that test's time and 5 s (in a fresh session: past twice all its tests' time and
10 s) is killed, and counts as caught (a timeout). Mutants inside
annotations are skipped (`from __future__ import annotations`: never evaluated). A
mutant the tests let through is listed in benchmarks/results/mutants.md with its line,
unless EQUIVALENT (mutants_equivalent.py) explains it (a mutant that cannot change
behaviour); the goal is zero unexplained survivors. An explained mutant that the module's last run
saw survive (the same change to the same line) is listed without being run again, as
cosmic-ray's filters leave out the mutants one has marked (it would cost every test that
reaches its line, for a result known); `--run-explained` runs them too, and names any
that a test kills (an explanation wrong, or no longer needed). Each module's last run is kept in
mutants.json beside it (with its date and command), so a run of some modules updates
their rows and leaves the others' as they were measured. CONTRIBUTING says when to run it.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import builtins
import compileall
import contextlib
import datetime
import importlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from multiprocessing import Pipe
from multiprocessing.connection import wait
from pathlib import Path
from typing import NamedTuple

import mutants_fork
from mutants_equivalent import EQUIVALENT

REPO = Path(__file__).resolve().parent.parent

# Of cosmic-ray's replacements of one binary or comparison operator by each other, the one
# or two a slip of the hand makes (mutmut's choice): the rest rarely fail a test these miss
# and would triple the run.
BINARY = {"Add_Sub", "Sub_Add", "Mul_Div", "Div_Mul", "FloorDiv_Div", "FloorDiv_Mul", "Mod_FloorDiv", "Pow_Mul",
          "LShift_RShift", "RShift_LShift", "BitOr_BitAnd", "BitAnd_BitOr", "BitXor_BitOr", "BitXor_BitAnd"}  # fmt: skip
COMPARISON = {"Eq_NotEq", "NotEq_Eq", "Lt_LtE", "Lt_GtE", "LtE_Lt", "LtE_Gt", "Gt_GtE", "Gt_LtE", "GtE_Gt",
              "GtE_Lt", "Is_IsNot", "IsNot_Is"}  # fmt: skip
# Targets whose tests need the S3 server (tests/object_stores.py): started once, before
# the first of them, and shared by every child
S3_TARGETS = {"remote_commit"}
# Targets whose tests SIGKILL the tool: what a killed process ran is never measured, so
# the tests that reach a line may be more than coverage says, and a survivor is run
# again against every test of its target before it counts (unless EQUIVALENT explains it)
CONFIRM = {"remote_lock", "remote_commit", "journal", "resume", "commit"}
# Imported once by the parent, before any mutant's child is forked from it
PRELOAD = ("pytest", "numpy", "click", "PIL.Image", "hypothesis", "pyarrow", "tensorflow")

# name -> (module, the tests that cover it: fast ones, no TensorFlow where possible)
TARGETS: dict[str, tuple[str, list[str]]] = {
    "naming": ("src/tfr_convert/dataset/naming.py", ["tests/dataset/test_naming.py"]),
    "framing": (
        "src/tfr_convert/containers/framing.py",
        ["tests/containers/test_tfrecord.py", "tests/engine/test_encode.py"],
    ),
    "crc": ("src/tfr_convert/containers/crc.py", ["tests/containers/test_tfrecord.py"]),
    "example": (
        "src/tfr_convert/dataset/wire/example.py",
        [
            "tests/dataset/test_example.py",
            "tests/dataset/test_example_parse.py",
            "tests/dataset/test_example_columns.py",
        ],
    ),
    # (shared with the columnar serializer, which holds them to every width)
    "varints": (
        "src/tfr_convert/dataset/wire/varints.py",
        ["tests/dataset/test_example.py", "tests/dataset/test_example_columns.py"],
    ),
    "salvage": (
        "src/tfr_convert/containers/salvage.py",
        [
            "tests/containers/test_salvage.py",
            "-k",
            "not huge_record",
        ],  # a 1 GiB record: slow, and what it shows others do
    ),
    "coco_rle": (
        "src/tfr_convert/dataset/coco_rle.py",
        # in this process; the CLI's memory-bound runs of hostile masks are slow and test no more of it
        [
            "tests/dataset/test_coco_rle.py",
            "tests/system/test_hostile_masks.py",
            "-k",
            "not bounded_memory and not claims_too_many",
        ],
    ),
    "jpeg_check": ("src/tfr_convert/pictures/jpeg_check.py", ["tests/pictures/test_jpeg_check.py"]),
    "png_check": ("src/tfr_convert/pictures/png_check.py", ["tests/pictures/test_png_check.py"]),
    "splits": (
        "src/tfr_convert/dataset/splits.py",
        ["tests/system/test_seams.py", "tests/output/test_shards_splits.py", "tests/converters/test_records_split.py"],
    ),
    "rows": ("src/tfr_convert/dataset/rows.py", ["tests/system/test_seams.py", "tests/converters/test_table_rows.py"]),
    "shards": (
        "src/tfr_convert/output/shards.py",
        ["tests/output/test_cutter.py", "tests/output/test_shards_splits.py"],
    ),
    "example_columns": ("src/tfr_convert/dataset/wire/example_columns.py", ["tests/dataset/test_example_columns.py"]),
    "fingerprints": ("src/tfr_convert/storage/fingerprints.py", ["tests/storage/test_fingerprints.py"]),
    "remote_lock": ("src/tfr_convert/output/remote_lock.py", ["tests/storage/test_stores.py"]),
    "remote_commit": (
        "src/tfr_convert/output/remote.py",
        # a real S3 server (one for the whole run: S3_TARGETS); of the conversions to a
        # store, one per container and store: the rest write through the same calls
        ["tests/storage/test_stores.py", "tests/system/test_remote_crash.py"]
        + [
            f"tests/system/test_remote.py::test_{name}"
            for name in (
                "mnist_from_and_to_s3_gives_the_local_runs_bytes",
                "array_record_to_s3_and_index_files_beside_remote_shards",
                "mnist_to_gcs_and_inspected_there",
            )
        ],
    ),
    "grouping": (
        "src/tfr_convert/converters/listing/grouping.py",
        ["tests/converters/test_grouping.py", "tests/dataset/test_dedupe.py"],
    ),
    "journal": (
        "src/tfr_convert/output/journal.py",
        [
            "tests/output/test_journal.py",
            "tests/storage/test_fingerprints.py",
            "tests/system/test_crash.py",
            "-k",
            "test_journal or test_fingerprints or resume and not signal and not worker",
        ],
    ),
    "resume": (
        "src/tfr_convert/engine/resume.py",
        ["tests/engine/test_plan_digest.py"]
        + [
            f"tests/system/test_crash.py::test_{name}"
            for name in (
                "resume_refuses_another_runs_work_naming_what_differs",
                "resume_does_not_believe_an_edited_journal_line",
                "resume_rewrites_a_finished_shard_that_was_damaged",
                "resume_refuses_images_replaced_since_the_interrupted_run_naming_the_first",
                "resume_names_an_image_replaced_with_one_of_its_size_and_time",
                "resume_over_unchanged_images_gives_the_uninterrupted_bytes",
                "resume_of_a_detection_run_refuses_an_image_changed_since",
                "a_resumed_run_says_how_many_shards_it_kept_and_a_finished_one_that_it_was",
                "resume_with_nothing_to_resume_says_so_and_converts_from_the_start",
                "resume_after_a_kill_at_any_filesystem_change_gives_the_uninterrupted_bytes",
                "a_repair_run_killed_at_its_commit_then_resumed_leaves_the_whole_dataset",  # final names
                "resume_of_a_segmentation_run_refuses_a_picture_changed_since",  # two roots
                "resume_of_a_segmentation_run_refuses_a_mask_changed_since",  # a file under the second root
            )
        ],  # fast ones first: most mutants fail one of them
    ),
    "commit": (
        "src/tfr_convert/output/local.py",
        [
            "tests/output/test_local_commit.py",
            "tests/output/test_shards_splits.py::test_output_dir_refuses_non_empty_and_cleans_up_on_failure",
        ]
        + [
            f"tests/system/test_crash.py::test_{name}"
            for name in (
                "resume_rewrites_a_finished_shard_that_was_damaged",  # the output tells a whole shard
                "resume_does_not_believe_an_edited_journal_line",
                "overwrite_replaces_only_the_old_datasets_files_and_a_folder_in_the_way_stops_it",
                "recovery_tells_an_unswapped_commit_by_the_trees_inode_not_by_the_manifest",
                "a_dead_runs_lock_does_not_block",
                "the_lock_is_held_before_the_first_input_is_read_and_refuses_a_second_run_then",
                "a_second_run_into_a_held_output_is_refused_and_the_first_finishes",
                "a_kill_at_any_step_of_an_in_place_overwrite_never_leaves_metadata_naming_absent_shards",
                "a_kill_at_any_step_of_an_overwrite_leaves_the_old_or_the_new_dataset",
                "a_repair_run_killed_at_its_commit_then_resumed_leaves_the_whole_dataset",
                "a_write_failing_at_any_step_of_an_overwrite_is_reported_and_leaves_a_whole_dataset",
                "an_output_mounted_in_place_is_refused_when_it_holds_other_files_and_its_own_work_does_not_count",
                "an_output_whose_parent_the_user_cannot_write_keeps_its_work_inside_it",
                "resume_rewrites_a_finished_shard_replaced_by_a_valid_one_of_its_size",
                "a_resumed_run_says_how_many_shards_it_kept_and_a_finished_one_that_it_was",
                "a_lock_file_released_while_it_was_being_taken_is_taken_anew",
                "a_swap_that_fails_for_a_reason_of_its_own_says_which",
                "a_work_folder_that_cannot_be_made_is_named_in_the_error",
                "an_overwrite_after_an_interrupted_run_starts_over_and_leaves_none_of_its_work",
                "a_signal_stops_a_run_keeping_its_shards_exit_128_plus_it_and_resume_finishes_it[SIGINT]",
                "a_swap_the_kernel_cannot_make_says_so_and_the_commit_falls_back",
                "a_lock_file_is_made_readable_by_all_and_writable_by_its_owner_only",
                "a_lock_whose_folder_is_removed_as_it_is_opened_is_taken_in_a_new_one",
                "a_lock_it_cannot_write_its_pid_into_is_let_go",
                "an_output_whose_parent_cannot_be_made_is_named_in_the_error",
            )
        ],
    ),
}


def _annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """((line, column), (end line, end column)) of every annotation: mutating inside one
    changes nothing (`from __future__ import annotations`: they are never evaluated)."""
    annotations = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            annotations += [a.annotation for a in every if a is not None and a.annotation is not None]
            if node.returns is not None:
                annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    return [((a.lineno, a.col_offset), (a.end_lineno or a.lineno, a.end_col_offset or 0)) for a in annotations]


def _inside(position: tuple[int, int], spans: list[tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    return any(start <= position < end for start, end in spans)


class Mutant(NamedTuple):
    line: int
    column: int
    operator: str
    code: str  # the whole mutated source


def _mutants(name: str, work: Path) -> list[Mutant]:
    """Every mutant of the module: cosmic-ray's core operators less those BINARY and
    COMPARISON leave out, none inside an annotation."""
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator
    from cosmic_ray.work_db import WorkDB, use_db

    module = TARGETS[name][0]
    config = work / f"{name}.toml"
    session = work / f"{name}.sqlite"
    config.write_text(
        f'[cosmic-ray]\nmodule-path = "{module}"\ntimeout = 1\nexcluded-modules = []\ntest-command = "true"\n'
        '[cosmic-ray.distributor]\nname = "local"\n'
    )
    session.unlink(missing_ok=True)
    cosmic = [str(REPO / ".venv" / "bin" / "cosmic-ray")]
    subprocess.run([*cosmic, "init", str(config), str(session)], check=True, cwd=REPO, capture_output=True)
    source = (REPO / module).read_text()
    annotations = _annotation_spans(source)
    found = []
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in db.work_items:
            m = item.mutations[0]
            if not _kept(m.operator_name) or _inside(tuple(m.start_pos), annotations):
                continue
            try:
                code = mutate_code(source, get_operator(m.operator_name)(**m.operator_args), m.occurrence)
            except (AttributeError, AssertionError):  # the operator cannot rewrite this form (`except (A, B) as e`)
                continue
            if code is not None and code != source:
                found.append(Mutant(*m.start_pos, m.operator_name.split("/")[-1], code))
    return found


def _kept(operator: str) -> bool:
    kind, _, pair = operator.split("/")[-1].partition("_")
    family = {"ReplaceBinaryOperator": BINARY, "ReplaceComparisonOperator": COMPARISON}.get(kind)
    return family is None or pair in family


_SITECUSTOMIZE = """import builtins
import os


class CosmicRayTestingException(Exception):
    pass


builtins.CosmicRayTestingException = CosmicRayTestingException
if os.environ.get("COVERAGE_PROCESS_START"):  # the coverage run: the tests' subprocesses are measured too
    import coverage

    coverage.process_startup()  # (coverage's own .pth file may have started it already)
    measuring = coverage.Coverage.current()
    if measuring is not None:  # os._exit skips the atexit hook that saves what it measured
        leave = os._exit

        def _saved_then_exit(code, leave=leave, measuring=measuring):
            try:
                measuring.stop()
                measuring.save()
            finally:
                leave(code)

        os._exit = _saved_then_exit
"""

# Read by every measured process: a subprocess's lines are told to the test that started
# it by the variable, which the parent sets to the running test's node id
_COVERAGE_RC = """[run]
parallel = true
data_file = {data}
include = {module}
context = ${{TFR_MUTANTS_TEST}}
concurrency = thread,multiprocessing
"""


def _child(src: Path, log: Path) -> None:
    """In a forked child, before its tests: its own process group (a timeout kills the
    subprocesses its tests start too), output to `log`, the package imported from `src`."""
    os.setpgid(0, 0)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # the mutant is read from its source each time
    sys.dont_write_bytecode = True
    from cosmic_ray.exceptions import CosmicRayTestingException

    # An except clause the operator rewrote names this: it exists, and nothing raises it
    # (the copy's sitecustomize.py does the same in the subprocesses the tests start)
    builtins.CosmicRayTestingException = CosmicRayTestingException  # type: ignore[attr-defined]
    sys.path.insert(0, str(src))
    # the package and the tests as the copy has them, even where this process (a test of
    # this script) had imported them from the checkout; but the servers' helper stays, and
    # with it the S3 server the parent started for every child (SeaweedS3.shared): a child
    # that started its own would pay for its start, and leave it running if killed
    for module_name, module in list(sys.modules.items()):
        if module_name == "object_stores":
            continue
        if str(getattr(module, "__file__", None) or "").startswith((str(REPO / "src"), str(REPO / "tests"))):
            del sys.modules[module_name]
    os.chdir(REPO)


def _test(src: Path, tests: list[str], log: Path) -> None:
    """In a forked child: run the tests against the package under `src`, exit with pytest's code."""
    try:
        _child(src, log)
        import pytest

        code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", *tests]))
    except BaseException:  # whatever happens, the child must not return into the parent's loop
        code = 99
    os._exit(code)


def _cover(src: Path, tests: list[str], log: Path, rc: Path, durations: Path) -> None:
    """In a forked child: run the unmutated tests under coverage, each test's lines (its
    subprocesses' included) under its node id, and write each test's time; exit with pytest's code."""
    try:
        _child(src, log)
        os.environ["COVERAGE_PROCESS_START"] = str(rc)
        os.environ["TFR_MUTANTS_TEST"] = ""
        import coverage
        import pytest

        cov = coverage.Coverage(config_file=str(rc))
        took: dict[str, float] = {}

        class Contexts:
            @pytest.hookimpl(hookwrapper=True)
            def pytest_runtest_protocol(self, item, nextitem):
                os.environ["TFR_MUTANTS_TEST"] = item.nodeid
                cov.switch_context(item.nodeid)
                began = time.monotonic()
                yield
                took[item.nodeid] = time.monotonic() - began
                os.environ["TFR_MUTANTS_TEST"] = ""
                cov.switch_context("")

        cov.start()
        code = int(pytest.main(["-q", "-p", "no:cacheprovider", *tests], plugins=[Contexts()]))
        cov.stop()
        cov.save()
        durations.write_text(json.dumps(took))
    except BaseException:
        code = 99
    os._exit(code)


def _split_tests(tests: list[str], parts: int) -> list[list[str]]:
    """A target's tests in `parts` (its files and node ids dealt out in turn; its options,
    such as `-k EXPR`, given to every part)."""
    paths, options, i = [], [], 0
    while i < len(tests):
        if tests[i].startswith("-"):
            options += tests[i : i + 2] if tests[i] in ("-k", "-m") else [tests[i]]
            i += 2 if tests[i] in ("-k", "-m") else 1
        else:
            paths.append(tests[i])
            i += 1
    return [[*paths[k::parts], *options] if paths[k::parts] else [] for k in range(max(parts, 1))]


def _statement_lines(tree: ast.Module, line: int) -> set[int]:
    """The lines whose execution runs the mutated code on `line`: the innermost statement
    holding it (a compound one's header only, not its body), and the line itself."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or (node.lineno >= best.lineno and node.end_lineno <= best.end_lineno):
                best = node
    if best is None:
        return {line}
    body = getattr(best, "body", None)
    end = body[0].lineno - 1 if isinstance(body, list) and body and isinstance(body[0], ast.stmt) else best.end_lineno
    return {line, *range(best.lineno, max(best.lineno, end or best.lineno) + 1)}


class Selection:
    """Which of the module's tests reach each line, fastest first, from one run of the
    unmutated tests under coverage: a mutant is run against those only. Lines run at import
    (no test's) and lines no test reaches get every test."""

    def __init__(self, data, module: str, took: dict[str, float], source: str):
        self.took = took
        self.every = sorted(took, key=took.get)
        self.tree = ast.parse(source)
        measured = [f for f in data.measured_files() if f.endswith(module)]
        self.by_line: dict[int, set[str]] = {}
        for f in measured:
            for line, labels in data.contexts_by_lineno(f).items():
                tests = {next((p for p in label.split("|") if p), "") for label in labels}
                self.by_line.setdefault(line, set()).update(tests)

    def tests(self, line: int) -> list[str]:
        reached = set().union(*(self.by_line.get(n, set()) for n in _statement_lines(self.tree, line)))
        if not reached or "" in reached or not reached <= set(self.took):
            return self.every
        return sorted(reached, key=self.took.get)

    def ran_outside_tests(self, lines) -> bool:
        """Whether any of the lines ran at import or while the tests were collected."""
        return any("" in self.by_line.get(n, ()) for n in lines)

    def seconds(self, tests: list[str]) -> float:
        return sum(self.took[t] for t in tests)


def _serve(src: Path, tests: list[str], log: Path, conn, path: str) -> None:
    """In a forked child: collect the tests once and serve mutants (mutants_fork.Server)."""
    try:
        _child(src, log)
        import pytest

        code = int(pytest.main(["-q", "-p", "no:cacheprovider", *tests], plugins=[mutants_fork.Server(conn, path)]))
    except BaseException:
        code = 99
    os._exit(code)


def _run(name: str, work: Path, workers: int, simple: bool = False, seen: set | None = None, every: int = 1) -> dict:
    """Each mutant against the tests that reach its line, `workers` at a time. Every worker
    has its own copy of src/ (bytecode compiled but the module's), the parent has imported
    the heavy libraries once, and each mutant runs in a child forked from a worker's session
    that collected the tests once (mutants_fork), or, where its change cannot be swapped
    into live functions (or `simple`), in a child forked from this process that runs
    pytest afresh: the cost of a mutant is its tests, not an interpreter's start. A mutant
    EQUIVALENT explains that an earlier run saw survive, the same change to the same line
    (in `seen`: `_survived`), is not run again: it would cost every test that reaches its
    line, for a result known (an explanation covers a line's mutants of one operator, and
    another of them, never seen surviving, is run). `every`: only every Nth mutant (a
    sample, for the test that holds the fast path to the simple one)."""
    import coverage

    module, tests = TARGETS[name]
    relative = Path(module).relative_to("src")
    slots = []
    for i in range(workers):
        src = work / f"{name}-w{i}" / "src"
        shutil.rmtree(src.parent, ignore_errors=True)
        shutil.copytree(REPO / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
        compileall.compile_dir(src, quiet=2)
        (src / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        for compiled in (src / relative).parent.glob(f"__pycache__/{relative.stem}.*.pyc"):
            compiled.unlink()
        slots.append(src)
    source = (REPO / module).read_text()
    mutants = _mutants(name, work)[::every]

    rc = work / f"{name}.coveragerc"
    rc.write_text(_COVERAGE_RC.format(data=work / f"{name}.coverage", module=slots[0] / relative))
    # the unmutated tests under coverage, split between the cores (one copy of src/, so
    # that every part measures the same file)
    parts = [part for part in _split_tests(tests, workers) if part]
    children = []
    for i, part in enumerate(parts):
        took = work / f"{name}.durations-{i}.json"
        pid = os.fork()
        if pid == 0:
            _cover(slots[0], part, work / f"{name}-coverage-{i}.log", rc, took)
        children.append((pid, took))
    took_all: dict[str, float] = {}
    for i, (pid, took) in enumerate(children):
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{name}: the tests fail on the unmutated module (see {work / f'{name}-coverage-{i}.log'})")
        took_all |= json.loads(took.read_text())
    measured = coverage.Coverage(config_file=str(rc))
    measured.combine()
    selection = Selection(measured.get_data(), str(relative), took_all, source)

    servers = []  # (pid, connection) of each worker's session
    for slot in range(workers):
        ours, theirs = Pipe()
        pid = os.fork()
        if pid == 0:
            _serve(slots[slot], tests, work / f"{name}-w{slot}.log", theirs, str(slots[slot] / relative))
        servers.append((pid, ours))
    try:
        ready = [conn.recv() for _, conn in servers]
    except EOFError:
        sys.exit(f"{name}: a worker's test session did not start (see {work / f'{name}-w0.log'})")
    _, loaded, live, _ = ready[0]
    live = set(map(tuple, live))
    tree = ast.parse(source)

    def fast(mutant: Mutant) -> tuple | None:
        """How the mutant goes to a worker's session: ("file",) when the session has not
        imported the module, ("swap", target) when its function can be swapped in, None
        when it must take the simple path."""
        if simple:
            return None
        if not loaded:
            return ("file",)
        target = mutants_fork.swap_target(tree, mutant.line, mutant.column)
        if target is None or target[:2] not in live or selection.ran_outside_tests(target[2]):
            return None
        try:
            code = compile(mutant.code, str(slots[0] / relative), "exec")
        except SyntaxError:  # an operator's rewrite Python cannot read: fails at import, the simple way
            return None
        if mutants_fork.find_code(code, *target[:2]) is None:
            return None
        return ("swap", target[:2])

    source_lines = source.splitlines()

    def explained(index: int) -> bool:
        m = mutants[index]
        return (name, source_lines[m.line - 1].strip(), m.operator) in EQUIVALENT

    def known(index: int) -> bool:
        m = mutants[index]
        return explained(index) and (source_lines[m.line - 1].strip(), m.operator, _changed(source, m.code)) in seen

    seen = seen or set()
    # mutant's index -> killed by a test (k), by the timeout (t), survived (s), explained and not run (e)
    outcomes: dict[int, str] = {i: "e" for i in range(len(mutants)) if known(i)}
    pending = [i for i in range(len(mutants)) if i not in outcomes]
    asked: dict[int, int] = {}  # worker -> the mutant its session runs
    running: dict[int, tuple[int, int, float, float]] = {}  # pid -> (slot, mutant, started, timeout) on the simple path
    free = list(range(workers))
    counts = {"swapped": 0, "file": 0, "simple": 0}  # how each mutant went first
    confirming: set[int] = set()  # unexplained survivors run again against every test (CONFIRM)

    def done(slot: int, index: int, code: int) -> None:
        free.append(slot)
        m = mutants[index]
        chosen = selection.tests(m.line)
        if (
            code == 0
            and name in CONFIRM
            and not explained(index)
            and index not in confirming
            and chosen != selection.every
        ):
            confirming.add(index)
            pending.insert(0, index)
            return
        outcomes[index] = "s" if code == 0 else "t" if code == -signal.SIGKILL else "k"
        killed = code != 0
        if len(outcomes) % 50 == 0:
            print(f"  {name}: {len(outcomes)}/{len(mutants)} run", flush=True)
        if not killed:
            print(f"  {name}: survived: line {m.line} ({m.operator}): {_changed(source, m.code)}", flush=True)
        elif explained(index):  # the explanation is wrong for this one of its line's mutants
            print(f"  {name}: killed, though explained: line {m.line} ({m.operator}): {_changed(source, m.code)}")

    while pending or running or asked:
        while free and pending:
            slot, index = free.pop(), pending.pop(0)
            mutant = mutants[index]
            chosen = selection.every if index in confirming else selection.tests(mutant.line)
            # past twice the tests' time under coverage (itself well past their time without):
            # a mutant that loops is stopped, not one slowed by a run beside it
            timeout = 2 * selection.seconds(chosen) + 10
            how = fast(mutant)
            first = index not in confirming
            if how is not None:
                counts["swapped" if how[0] == "swap" else "file"] += first
                # each test its own time: a mutant that loops is stopped once the test it loops in had its time
                timeouts = [2 * selection.seconds([t]) + 5 for t in chosen]
                servers[slot][1].send((mutant.code, chosen, timeouts, how[1] if how[0] == "swap" else None))
                asked[slot] = index
                continue
            counts["simple"] += first
            (slots[slot] / relative).write_text(mutant.code)
            pid = os.fork()
            if pid == 0:
                _test(slots[slot], chosen, work / f"{name}-simple-w{slot}.log")
            running[pid] = (slot, index, time.monotonic(), timeout)
        for conn in wait([servers[slot][1] for slot in asked], timeout=0.005 if running else None):
            slot = next(s for s in asked if servers[s][1] is conn)
            code = conn.recv()
            if code == 97:
                sys.exit(f"{name}: mutant {asked[slot]}'s function was not found in its own source")
            done(slot, asked.pop(slot), code)
        for pid, (slot, index, began, timeout) in list(running.items()):
            finished, status = os.waitpid(pid, os.WNOHANG)
            if finished:
                del running[pid]
                done(slot, index, os.waitstatus_to_exitcode(status))
            elif time.monotonic() - began > timeout:  # a mutant that loops for ever is caught, as a kill
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
    for pid, conn in servers:
        conn.send(None)
        os.waitpid(pid, 0)
    lines = source.splitlines()
    found = {"module": module, "tests": tests, "mutants": len(mutants), "killed": 0, "survivors": [], "explained": []}
    found["paths"] = {**counts, "explained, not run": sum(o == "e" for o in outcomes.values())}
    found["as_mutated"] = []  # (survivor, its mutated line): which of a line's mutants it was
    found["outcomes"] = "".join(outcomes[i] for i in range(len(mutants)))
    found["timeouts"] = found["outcomes"].count("t")
    for index, m in enumerate(mutants):
        if outcomes[index] in "kt":
            found["killed"] += 1
        else:
            found["survivors"].append(f"line {m.line}: `{lines[m.line - 1].strip()}` ({m.operator})")
            found["as_mutated"].append([found["survivors"][-1], _changed(source, m.code)])
    _explain(name, found)
    return found


def _survived(found: dict) -> set[tuple[str, str, str]]:
    """(line as it reads, operator, the line as mutated) of each mutant a run's results
    (mutants.json) saw survive."""
    pairs = ((_SURVIVOR.match(entry), changed) for entry, changed in found.get("as_mutated", []))
    return {(m[1], m[2], changed) for m, changed in pairs if m}


def _changed(source: str, code: str) -> str:
    """The lines of the mutant that differ from the source, stripped (the mutation as it reads)."""
    old, new = source.splitlines(), code.splitlines()
    if len(old) != len(new):
        return f"({len(old) - len(new)} lines removed)"
    return "; ".join(b.strip() for a, b in zip(old, new, strict=True) if a != b)


_SURVIVOR = re.compile(r"line \d+: `(.*)` \(([A-Za-z_]+)\)$")


def _explain(name: str, found: dict) -> None:
    """Move the survivors EQUIVALENT explains to `explained`, with the reason."""
    still = []
    for entry in found["survivors"]:
        m = _SURVIVOR.match(entry)
        why = EQUIVALENT.get((name, m[1], m[2])) if m else None
        if why:
            found["explained"].append(f"{entry}: {why}")
        else:
            still.append(entry)
    found["survivors"] = still


def _write(results: dict, kept: Path, out_path: Path) -> str:
    """Write the results (json) and their table (md): after every module, so an
    interrupted run keeps what it measured."""
    results = {name: results[name] for name in TARGETS if name in results}
    kept.write_text(json.dumps(results, indent=1) + "\n")
    out = [
        "# Mutation testing",
        "",
        f"`python scripts/mutants.py [MODULE...]`: cosmic-ray's core operators (of the binary and comparison "
        f"replacements, the few a slip of the hand makes), each mutant in a child forked from a test session that "
        f"collected the tests once, its function swapped in (or from a fresh session where the change ran before the "
        f"tests), against those of the tests listed that reach the statement it changes (coverage per test, the "
        f"tests' subprocesses included; fastest first, `-x`; a test past twice its time + 5 s, or a "
        f"fresh session past twice its tests' time + 10 s, counts as a kill), "
        f"one mutant per core; a mutant mutants_equivalent.py explains that the module's last run saw survive is listed, "
        f"not run again (`--run-explained` runs them, to check the explanations); each row is its module's last run, dated in the "
        f"last column (rows run together shared the cores). Modules not yet run: "
        f"{', '.join(n for n in TARGETS if n not in results) or 'none'}. The whole run: "
        f"{sum(r['seconds'] for r in results.values()) / 60:.0f} minutes.",
        "",
        "| module | tests | mutants | killed | of them timed out | explained | unexplained survivors | time | run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results.values():
        out.append(
            f"| `{r['module']}` | `{shlex.join(r['tests'])}` | {r['mutants']} | {r['killed']} | {r.get('timeouts', '')} "
            f"| {len(r['explained'])} | {len(r['survivors'])} | {r['seconds']:.0f} s | {r.get('run', '')} |"
        )
    for name, r in results.items():
        if r["survivors"] or r["explained"]:
            out += ["", f"## {name}", ""]
            out += [f"- survived: {s}" for s in r["survivors"]]
            out += [f"- equivalent: {s}" for s in r["explained"]]
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("\n".join(out) + "\n")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", choices=[[], *TARGETS], default=[], metavar="MODULE")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="mutants tested at once")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "mutants.md"))
    parser.add_argument(
        "--explain-only",
        action="store_true",
        help="run nothing: apply EQUIVALENT to the survivors kept in mutants.json and write the results again",
    )
    parser.add_argument(
        "--simple",
        action="store_true",
        help="every mutant in a fresh pytest session (no swapping into a collected one): slower, the reference",
    )
    parser.add_argument(
        "--run-explained",
        action="store_true",
        help="run the mutants mutants_equivalent.py explains too (each a survivor, unless its explanation is wrong)",
    )
    args = parser.parse_args()
    # started in the background (`... &`), this process and what it starts would ignore
    # SIGINT, and a test that interrupts a run could not
    signal.signal(signal.SIGINT, signal.default_int_handler)
    names = [] if args.explain_only else args.modules or list(TARGETS)
    work = Path(tempfile.mkdtemp(prefix="tfr-mutants-"))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for library in PRELOAD if names else ():
        with contextlib.suppress(ImportError):
            importlib.import_module(library)
    if S3_TARGETS & set(names):
        sys.path.insert(0, str(REPO / "tests"))
        from object_stores import SeaweedS3

        SeaweedS3.shared = SeaweedS3()
        atexit.register(SeaweedS3.shared.stop)
    kept = Path(args.out).with_suffix(".json")
    results = json.loads(kept.read_text()) if kept.exists() else {}
    results = {name: r for name, r in results.items() if name in TARGETS}  # modules no longer targeted go
    flags = [f for f, on in (("--simple", args.simple), ("--run-explained", args.run_explained)) if on]
    command = shlex.join(["python", "scripts/mutants.py", *flags, *args.modules])
    if args.explain_only:
        for name, r in results.items():
            _explain(name, r)
    for name in names:
        started = datetime.datetime.now()
        seen = set() if args.run_explained or name not in results else _survived(results[name])
        results[name] = _run(name, work, args.workers, args.simple, seen)
        results[name]["seconds"] = (datetime.datetime.now() - started).total_seconds()
        results[name]["run"] = f"{datetime.date.today()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        results[name]["command"] = command
        r = results[name]
        print(f"{name}: {r['killed']}/{r['mutants']} killed, {len(r['survivors'])} unexplained survivors, "
              f"{r['seconds']:.0f} s", flush=True)  # fmt: skip
        _write(results, kept, Path(args.out))
    print(_write(results, kept, Path(args.out)))
    results = {name: results[name] for name in TARGETS if name in results}
    sys.exit(1 if any(r["survivors"] for r in results.values()) else 0)


if __name__ == "__main__":
    main()
