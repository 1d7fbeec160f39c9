"""The fast path of scripts/mutants.py: one pytest session per worker collects the module's
tests once, then runs each mutant's tests in a child forked from it, with the mutated
function's code put into the live function objects.

A mutant run by a fresh `pytest.main` pays for the conftest's imports and the collection
of its test files, most of a second even when its tests take a few milliseconds. Here a
worker's session has imported the unmutated module and collected the items; a child forked
for a mutant sets `__code__` of every function object made from the changed function (the
module's own, those other modules imported by name, decorated or cached ones alike: all
share one function object) to the same function compiled from the mutated source, and runs
the chosen items through pytest's own run-test protocol. The mutated file is on disk as well,
for the subprocesses the tests start.

That is the module's behaviour as the mutated source defines it only when the change is
inside a function body that had not run before the tests: code run at import or while the
tests were collected (module-level tables, a factory's closures, class bodies, default
values) has already left its results behind. Those mutants take the simple path (a fresh
session), which scripts/mutants.py chooses from the coverage run: a function any of whose
lines ran outside a test is never swapped. When the session never imported the module, the
child imports the mutated file itself and nothing needs swapping.
"""

from __future__ import annotations

import ast
import gc
import os
import signal
import sys
import time
import types
from pathlib import Path

# Where a swap is possible: (qualified name, first line as the code object counts it: the
# first decorator's), and the lines of its body
Target = tuple[str, int, range]


def swap_target(tree: ast.Module, line: int, column: int) -> Target | None:
    """The outermost function (a module's or a class's, also inside a module-level if/try/with)
    whose body holds the position, or None: a change there cannot be swapped in."""

    def visit(body: list[ast.stmt], prefix: str) -> Target | None:
        for node in body:
            if not node.lineno <= line <= (node.end_lineno or node.lineno):
                continue
            if isinstance(node, ast.ClassDef):
                return visit(node.body, f"{prefix}{node.name}.")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = node.body[0]
                if (line, column) < (first.lineno, first.col_offset):  # its decorators, defaults, signature
                    return None
                start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                return f"{prefix}{node.name}", start, range(first.lineno, (node.end_lineno or first.lineno) + 1)
            if isinstance(node, (ast.If, ast.Try, ast.With)) and not prefix:
                handlers = [h.body for h in getattr(node, "handlers", [])]
                for part in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []), *handlers):
                    found = visit(part, prefix)
                    if found is not None:
                        return found
            return None
        return None

    return visit(tree.body, "")


def find_code(code: types.CodeType, qualname: str, first: int) -> types.CodeType | None:
    """The code object of the function `qualname` defined at line `first`, among those
    `code` (a module's) holds, or None."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_qualname == qualname and const.co_firstlineno == first:
                return const
            found = find_code(const, qualname, first)
            if found is not None:
                return found
    return None


def live_functions(path: str) -> dict[tuple[str, int], list[types.FunctionType]]:
    """Every function object made from the file at `path`, by (qualified name, first line)."""
    found: dict[tuple[str, int], list[types.FunctionType]] = {}
    for thing in gc.get_objects():
        if type(thing) is types.FunctionType and thing.__code__.co_filename == path:
            found.setdefault((thing.__code__.co_qualname, thing.__code__.co_firstlineno), []).append(thing)
    return found


def swap(functions: list[types.FunctionType], mutated: types.CodeType) -> None:
    for function in functions:
        function.__code__ = mutated


class Server:
    """A pytest plugin that, instead of running the collected tests, serves mutants: it
    sends ("ready", module imported?, the (name, line) of its live functions, the items'
    node ids), then for each request (source, node ids, each one's timeout, target or None)
    writes the source to the module's file, runs the items in a forked child and answers
    whether a test failed (or one ran past its timeout)."""

    def __init__(self, conn, path: str):
        self.conn = conn
        self.path = path

    def pytest_runtestloop(self, session):
        items = {item.nodeid: item for item in session.items}
        loaded = any(getattr(m, "__file__", None) == self.path for m in list(sys.modules.values()))
        functions = live_functions(self.path) if loaded else {}
        self.conn.send(("ready", loaded, sorted(functions), sorted(items)))
        while (request := self.conn.recv()) is not None:
            source, chosen, timeouts, target = request
            Path(self.path).write_text(source)
            started, tell = os.pipe()  # the child writes a byte as it starts each test
            pid = os.fork()
            if pid == 0:
                os.close(started)
                mutated = functions.get(target[:2]) if target else None
                _run_mutant(session, items, chosen, source, self.path, mutated, tell)
            os.close(tell)
            try:
                self.conn.send(_waited(pid, timeouts, started))
            finally:
                os.close(started)
        return True


def _run_mutant(session, items, chosen, source, path, functions, tell: int) -> None:
    """In the forked child: swap the mutated function in, run the items (a byte written to
    `tell` as each begins), exit 1 at the first failure."""
    try:
        os.setpgid(0, 0)  # a timeout kills the subprocesses its tests start too
        if functions:
            qualname, first = functions[0].__code__.co_qualname, functions[0].__code__.co_firstlineno
            mutated = find_code(compile(source, path, "exec"), qualname, first)
            if mutated is None:
                os._exit(97)
            swap(functions, mutated)
        code = 0
        for i, nodeid in enumerate(chosen):
            os.write(tell, b".")
            following = items[chosen[i + 1]] if i + 1 < len(chosen) else None
            items[nodeid].ihook.pytest_runtest_protocol(item=items[nodeid], nextitem=following)
            if session.testsfailed:
                code = 1
                break
    except BaseException:  # whatever happens, the child must not return into the server's loop
        code = 99
    sys.stdout.flush()  # what the tests printed, to the worker's log
    os._exit(code)


def _waited(pid: int, timeouts: list[float], started: int) -> int:
    """The child's exit code, or -9 once one of its tests ran past its timeout (read from
    `started`: a byte as each test begins) and it was killed. A mutant that loops for ever
    is caught as a kill, and as soon as the test it loops in has had its time."""
    os.set_blocking(started, False)
    begun, deadline = 0, float("inf")
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        try:
            news = len(os.read(started, 4096))
        except BlockingIOError:
            news = 0
        if news:
            begun += news
            deadline = time.monotonic() + timeouts[min(begun, len(timeouts)) - 1]
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.002)
