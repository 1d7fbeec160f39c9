"""The worker processes at their seam: order, buffers beside the pickle, errors, deaths."""

from __future__ import annotations

import mmap
import multiprocessing
import os
import pickle
import signal
from pathlib import Path

import pytest

from tfr_convert.engine.workers import (
    PARENT_RESULT_BYTES,
    PIPE_BYTES,
    RESIDENT_SLOTS,
    RESULT_BYTES_PER_WORKER,
    SLOT_BYTES,
    SLOTS,
    RemoteTraceback,
    Workers,
    fill_in_forks,
)
from tfr_convert.errors import SourceError, WorkerLost

FORK = multiprocessing.get_context("fork")
_state: dict[str, int] = {}


def _setup(salt: int) -> None:
    _state["salt"] = salt


def _payload(task: tuple[int, int]) -> tuple[int, pickle.PickleBuffer]:
    """(task number, `size` bytes that depend on it and on the initializer's salt)."""
    number, size = task
    data = bytearray(size)
    for i in range(0, size, 4096):
        data[i] = (number * 31 + _state["salt"] + i // 4096) % 256
    return number, pickle.PickleBuffer(data)


def _bytes(number: int, size: int, salt: int) -> bytes:
    data = bytearray(size)
    for i in range(0, size, 4096):
        data[i] = (number * 31 + salt + i // 4096) % 256
    return bytes(data)


def _fail_on_odd(task: int) -> int:
    if task % 2:
        raise SourceError("odd task").locate(f"item {task}")
    return task


class _Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("no pickling here")


def _raise_unpicklable(task: int) -> int:
    raise _Unpicklable(f"task {task} went wrong")


def _pid(task: int) -> int:
    if task:
        signal.pause()  # held until killed
    return os.getpid()


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_results_come_back_in_the_order_sent_with_their_buffers_whole(context):
    # sizes from empty to several times a pipe, so that reads and writes are split
    sizes = [0, 1, 4095, 70_000, PIPE_BYTES + 3, 3 * PIPE_BYTES + 17] * 3
    workers = Workers(3, _payload, _setup, (7,), multiprocessing.get_context(context))
    try:
        got = []
        for number, size in enumerate(sizes[:5]):
            workers.send((number, size))
        for number in range(len(sizes)):
            if number + 5 < len(sizes):
                workers.send((number + 5, sizes[number + 5]))
            got.append(workers.receive())
    finally:
        workers.close()
    assert [n for n, _ in got] == list(range(len(sizes)))
    for (number, data), size in zip(got, sizes, strict=True):
        assert bytes(data) == _bytes(number, size, 7)


def test_a_tasks_error_is_raised_as_itself_with_the_workers_traceback_as_cause():
    workers = Workers(2, _fail_on_odd, _setup, (0,), FORK)
    try:
        for task in range(4):
            workers.send(task)
        assert workers.receive() == 0
        with pytest.raises(SourceError, match=r"^item 1: odd task$") as caught:
            workers.receive()
        assert isinstance(caught.value.__cause__, RemoteTraceback)
        assert "_fail_on_odd" in str(caught.value.__cause__)
        assert workers.receive() == 2  # the workers go on
    finally:
        workers.close()


def test_an_error_that_cannot_be_pickled_arrives_as_its_text():
    workers = Workers(1, _raise_unpicklable, _setup, (0,), FORK)
    try:
        workers.send(5)
        with pytest.raises(RuntimeError, match=r"_Unpicklable: task 5 went wrong"):
            workers.receive()
    finally:
        workers.close()


def test_a_killed_worker_is_named_with_its_signal_instead_of_waited_for():
    workers = Workers(2, _pid, _setup, (0,), FORK)
    try:
        workers.send(0)
        workers.send(1)  # the second worker holds on to it
        first = workers.receive()
        (held,) = [p.pid for p in multiprocessing.active_children() if p.pid != first]
        os.kill(held, signal.SIGKILL)
        with pytest.raises(WorkerLost, match=rf"worker process {held} ended without sending its result: "
                                             r"killed by SIGKILL \(out of memory\?\)"):  # fmt: skip
            workers.receive()
    finally:
        workers.close()


def _in_shared_memory(view: memoryview) -> bool:
    """Whether a result's buffer lies in a worker's shared slots (not read from its pipe)."""
    owner = view.obj
    while not isinstance(owner, mmap.mmap):
        owner = owner.obj if isinstance(owner, memoryview) else owner.base  # numpy: what it views
        if owner is None:
            return False
    return True


def test_a_result_held_keeps_its_slot_and_a_slot_let_go_of_is_lent_again():
    workers = Workers(1, _payload, _setup, (3,), FORK)
    sizes = [1000, SLOT_BYTES, SLOT_BYTES + 1, 0] + [70_000] * SLOTS
    try:
        held = []
        for number, size in enumerate(sizes):
            workers.send((number, size))
            held.append(workers.receive())
        # every slot is held now: the next result comes through the pipe, and so is whole
        workers.send((99, 5000))
        held.append(workers.receive())
        through_slots = [_in_shared_memory(data) for _, data in held]
        whole = [bytes(data) == _bytes(n, len(data), 3) for n, data in held]
        del held
        workers.send((100, 5000))  # the slots were let go of with the results
        number, again = workers.receive()
    finally:
        workers.close()
    # the largest a slot holds comes through one; one byte more, or none, through the
    # pipe; then the slots run out
    assert through_slots == [True, True, False, False] + [True] * (SLOTS - 2) + [False] * 3
    assert all(whole)
    assert _in_shared_memory(again) and bytes(again) == _bytes(100, 5000, 3)


def _shared_resident() -> int:
    """Bytes of shared memory resident in this process (what the kernel counts in its RSS)."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("RssShmem:")[1].split()[0]) * 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_parent_keeps_no_more_slots_resident_than_resident_slots_however_many_workers():
    count, size = 3, SLOT_BYTES // 2
    assert count * SLOTS > RESIDENT_SLOTS  # more slots than may stay resident here
    before = _shared_resident()
    workers = Workers(count, _payload, _setup, (5,), FORK)
    try:
        for _ in range(2):  # a second round reuses the slots whose pages left this process
            for number in range(count * SLOTS):
                workers.send((number, size))
            held = [workers.receive() for _ in range(count * SLOTS)]
            assert all(_in_shared_memory(data) for _, data in held)
            # every page read here (the writer's write reads them too)
            assert all(bytes(data) == _bytes(n, size, 5) for n, data in held)
            read = _shared_resident() - before
            del held
            kept = _shared_resident() - before
            assert read >= count * SLOTS * size  # all of them were resident while read
            assert kept <= RESIDENT_SLOTS * size + (1 << 20)
    finally:
        workers.close()


@pytest.mark.parametrize("size", [1000, 4 << 20])
def test_fewer_tasks_are_in_flight_when_results_are_large(size):
    """The window holds what RESULT_BYTES_PER_WORKER holds of results the size of the
    last one (2 per worker at least); small results keep the whole window."""
    window, pulled = 16, 0

    def tasks():
        nonlocal pulled
        for number in range(48):
            pulled += 1
            yield number, size

    workers = Workers(1, _payload, _setup, (7,), FORK)
    try:
        in_flight = []  # tasks taken and not yet handed back, at each result
        for k, (number, data) in enumerate(workers.ordered(tasks(), window)):
            assert number == k and bytes(data) == _bytes(k, size, 7)
            in_flight.append(pulled - k - 1)
    finally:
        workers.close()
    expected = min(window, max(2, RESULT_BYTES_PER_WORKER // size))
    assert expected < window if size > 1000 else expected == window
    assert max(in_flight[window:-window]) == expected  # once the first window has drained


def test_spawned_workers_send_their_results_through_the_pipe():
    workers = Workers(1, _payload, _setup, (3,), multiprocessing.get_context("spawn"))
    try:
        workers.send((1, 5000))
        _, data = workers.receive()
    finally:
        workers.close()
    assert not _in_shared_memory(data) and bytes(data) == _bytes(1, 5000, 3)


_LIMITED = """
import resource, sys
import numpy  # the receiving side's views: loaded before the limit, as by the encoder of any run with workers
import test_workers as t
from tfr_convert.engine.workers import SLOT_BYTES, SLOTS, Workers
size = int([line for line in open("/proc/self/status") if line.startswith("VmSize")][0].split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + SLOTS * SLOT_BYTES // 2, resource.RLIM_INFINITY))
workers = Workers(1, t._payload, t._setup, (3,), t.FORK)
workers.send((1, 5000))
_, data = workers.receive()
workers.close()
print(t._in_shared_memory(data), bytes(data) == t._bytes(1, 5000, 3))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads its address space from /proc")
def test_workers_under_an_address_space_limit_too_small_for_their_slots_use_the_pipe():
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-c", _LIMITED], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=120
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == ["False", "True"]


def _echo_size(task: bytes) -> pickle.PickleBuffer:
    return pickle.PickleBuffer(bytearray(2 * len(task)))


def test_large_tasks_and_large_results_in_flight_together_do_not_deadlock():
    # Every task and every result is larger than a pipe holds: the parent's sends would
    # wait on workers waiting for the parent to read, were the tasks not taken off
    # their pipe as they come.
    def hung(*_):
        raise TimeoutError("deadlocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    workers = Workers(2, _echo_size, _setup, (0,), FORK)
    try:
        task = b"x" * (2 * PIPE_BYTES)
        for _ in range(8):
            workers.send(task)
        sizes = [len(workers.receive()) for _ in range(8)]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        workers.close()
    assert sizes == [4 * PIPE_BYTES] * 8


def _slow_in_workers(task: int) -> tuple[int, int]:
    import time

    time.sleep(0.01)  # a worker is slower than the parent: the parent takes tasks too
    return task, os.getpid()


def test_the_parent_works_while_it_waits_and_the_order_holds():
    workers = Workers(1, _slow_in_workers, _setup, (0,), FORK)
    try:
        got = list(workers.ordered(iter(range(40)), 4, lambda task: (task, os.getpid())))
    finally:
        workers.close()
    assert [task for task, _ in got] == list(range(40))
    by = {pid for _, pid in got}
    assert os.getpid() in by and len(by) == 2  # both processes did some of them


def _first_slow(task: int) -> int:
    import time

    if task == 0:
        time.sleep(0.3)  # so that the parent takes the next tasks itself meanwhile
    return task


def test_an_error_in_a_task_done_here_waits_its_turn():
    done_here = []

    def here(task: int) -> int:
        done_here.append(task)
        if task == 5:
            raise SourceError("five").locate("item 5")
        return task

    workers = Workers(1, _first_slow, _setup, (0,), FORK)
    got = []
    try:
        with pytest.raises(SourceError, match=r"^item 5: five$"):
            for task in workers.ordered(iter(range(40)), 4, here):
                got.append(task)
    finally:
        workers.close()
    assert 5 in done_here
    assert got == list(range(5))  # every earlier result first, whoever computed it


_served = 0


def _second_slow_mib(task: int) -> pickle.PickleBuffer:
    """A MiB for each task; the second this worker gets comes a second late."""
    import time

    global _served
    _served += 1
    if _served == 2:
        time.sleep(1)
    return pickle.PickleBuffer(bytearray(1 << 20))


def test_results_made_here_while_a_slow_worker_is_awaited_stay_within_here_bytes():
    """The parent's own results wait in its memory for their turn: while one slow worker
    result is awaited, it makes no more than PARENT_RESULT_BYTES of them, whatever the window."""
    held, most = [0], [0]

    def here(task: int) -> tuple[str, bytearray]:
        held[0] += 1
        most[0] = max(most[0], held[0])
        return ("here", bytearray(1 << 20))

    workers = Workers(1, _second_slow_mib, _setup, (0,), FORK)
    try:
        for result in workers.ordered(iter(range(200)), 64, here):
            if isinstance(result, tuple):
                held[0] -= 1
    finally:
        workers.close()
    assert most[0] <= PARENT_RESULT_BYTES // (1 << 20)


def _deaf_to_sigterm(salt: int) -> None:
    """As a worker that a SIGTERM did not reach: one sent while it was being forked is
    lost (Python clears signals that arrive before its after-fork setup)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def test_close_ends_workers_that_a_sigterm_would_not():
    def hung(*_):  # not a TimeoutError: multiprocessing's join takes any OSError for "not yet"
        raise RuntimeError("close() waited for a worker that never ends")

    before = _children()
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        workers = Workers(2, _echo_size, _deaf_to_sigterm, (0,), FORK)
        workers.send(b"x")
        assert len(workers.receive()) == 2  # the workers are up, past their setup
        workers.close()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert _children() <= before


# ---------------------------------------------------------------- fill_in_forks


def _digits(lo: int, hi: int) -> bytes:
    """Two bytes per item, from the item's number and the process that computed it
    not at all: any split into parts must join into the same bytes."""
    return b"".join(i.to_bytes(2, "big") for i in range(lo, hi))


@pytest.mark.parametrize("n, parts", [(10, 3), (1000, 4), (2, 5)])  # uneven parts; more parts than items
def test_in_forks_gives_the_parts_in_order(n, parts):
    found = fill_in_forks(_digits, n, parts)
    assert found is not None and len(found) == parts and b"".join(found) == _digits(0, n)


def _children() -> set[int]:
    """This process's child processes, zombies included (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == os.getpid():
            found.add(int(stat.parent.name))
    return found


def test_a_failing_child_gives_none_and_no_child_is_left():
    def fail_past_half(lo: int, hi: int) -> bytes:
        if lo >= 50:
            raise SourceError("a child's part")
        return _digits(lo, hi)

    before = _children()
    assert fill_in_forks(fail_past_half, 100, 4) is None
    assert _children() <= before


def test_an_error_in_this_process_s_part_is_raised_as_itself_and_the_children_are_ended():
    parent = os.getpid()

    def slow_children_failing_parent(lo: int, hi: int) -> bytes:
        if os.getpid() == parent:
            raise SourceError("the first part")
        signal.pause()  # a child would wait forever: it must be ended, not waited for
        return b""

    before = _children()
    with pytest.raises(SourceError, match="the first part"):
        fill_in_forks(slow_children_failing_parent, 100, 3)
    assert _children() <= before
