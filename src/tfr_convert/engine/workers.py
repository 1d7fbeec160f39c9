"""Worker processes for the local engine, each with its own pair of pipes.

Tasks go to the workers in turn and their results are read back in the order the
tasks were sent, by the one thread that consumes them. There is no manager thread,
no queue shared by every worker behind a lock, and no copy of a result's large
buffers inside a pickle: a result is pickled with protocol 5 and its buffers
(`pickle.PickleBuffer`) travel beside the pickle. A forked worker puts them in
memory it shares with the parent, in a free slot of its own, which the parent marks
free again once nothing refers to them any more (no pipe to copy them through,
twice); a result larger than a slot, or one made while every slot is held, comes
through the pipe, read straight into memory of its own. A worker that dies is
named, not waited for.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import mmap
import os
import pickle
import queue
import signal
import struct
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import WorkerLost
from ..storage import fs

_HEAD = struct.Struct("<BIQb")  # ok (1) or error (0), buffer count, pickle length, slot of the buffers or -1
_LENGTH = struct.Struct("<Q")
PIPE_BYTES = 1 << 20  # asked of each result pipe, so that a worker seldom waits for the reader
# Shared memory per forked worker: slots for the results the parent holds (received
# and not yet written), then a byte per slot, 1 while it is held. The worker takes the
# first free one, so that only as many are ever touched as are held at once.
SLOTS, SLOT_BYTES = 6, 8 << 20
# The parent reads every slot it is sent, so its memory would grow with its workers'
# slots; past RESIDENT_SLOTS of them, a slot let go of leaves its memory (the pages
# stay the worker's). Not every one: pages given back are faulted in again when read.
RESIDENT_SLOTS = SLOTS
# Result bytes in flight per worker process: the window of tasks in flight shrinks to
# what that holds of results the size of the last one (still 2 per process at least),
# so that batches of large records (5 MiB of photos) keep a worker's memory to about as
# many results as it holds slots, while small ones keep the whole window.
RESULT_BYTES_PER_WORKER = 24 << 20
# Results made by the parent itself (`ordered`'s `in_parent`), held until their turn: bytes.
PARENT_RESULT_BYTES = 16 << 20
_FLAGS = SLOTS * SLOT_BYTES
_SENT, _END = object(), object()  # to `ordered`: a task sent to a worker; the end of the tasks


class RemoteTraceback(Exception):
    """The traceback of an error raised in a worker, as its cause."""

    def __str__(self) -> str:
        return str(self.args[0])


class Workers:
    """`count` processes running `fn(task)` after `initializer(*initargs)`."""

    def __init__(
        self,
        count: int,
        fn: Callable[[Any], Any],
        initializer: Callable[..., None],
        initargs: Sequence[Any],
        context: Any,
    ) -> None:
        """`context`: multiprocessing's; with "fork" the workers share memory with this process."""
        self._procs: list[Any] = []
        self._tasks: list[Any] = []  # the parent's end of each worker's task pipe
        self._results: list[Any] = []  # and of its result pipe
        self._areas: list[mmap.mmap | None] = []  # each worker's shared slots (fork only)
        self._resident: set[tuple[int, int]] = set()  # (worker, slot) whose pages this process has read
        self._sent = self._received = 0
        self._last_bytes = 0  # of the last result received: its buffers
        try:
            for _ in range(count):
                task_out, task_in = context.Pipe(duplex=False)
                result_out, result_in = context.Pipe(duplex=False)
                _widen(result_out.fileno())
                area = _shared_area() if context.get_start_method() == "fork" else None
                self._areas.append(area)
                proc = context.Process(
                    target=_serve,
                    args=(task_out, result_in, fn, initializer, tuple(initargs), os.getpid(), area),
                    daemon=True,
                )
                proc.start()
                task_out.close()  # the child's ends: only the child may hold them, so that
                result_in.close()  # its death reads as the end of its result pipe
                self._procs.append(proc)
                self._tasks.append(task_in)
                self._results.append(result_out)
        except BaseException:
            self.close()
            raise

    def send(self, task: Any) -> None:
        self._tasks[self._sent % len(self._procs)].send(task)
        self._sent += 1

    def receive(self) -> Any:
        """The result of the oldest task sent and not yet received; raises its error."""
        assert self._received < self._sent, "no task in flight"
        w = self._received % len(self._procs)
        fd = self._results[w].fileno()
        try:
            ok, count, size, slot = _HEAD.unpack(_read(fd, _HEAD.size))
            head = _read(fd, _LENGTH.size * count + size)
        except EOFError:
            raise self._lost(w) from None
        lengths = [_LENGTH.unpack_from(head, i * _LENGTH.size)[0] for i in range(count)]
        self._last_bytes = sum(lengths)
        buffers = self._in_slot(w, slot, lengths) if slot >= 0 else [_read(fd, n) for n in lengths]
        self._received += 1
        value = pickle.loads(memoryview(head)[_LENGTH.size * count :], buffers=buffers)
        if ok:
            return value
        error, text = value
        error.__cause__ = RemoteTraceback(text)
        raise error

    def _in_slot(self, w: int, slot: int, lengths: list[int]) -> list[memoryview]:
        """Views of the buffers a worker put in its slot; the slot is free again once
        nothing holds any of them."""
        import numpy as np  # here: a run that never starts a worker (an export in one process) does without it

        area = self._areas[w]
        assert area is not None
        whole = np.frombuffer(area, np.uint8, sum(lengths), slot * SLOT_BYTES)
        self._resident.add((w, slot))
        weakref.finalize(whole, self._release, w, slot).atexit = False
        bounds = [0, *itertools.accumulate(lengths)]
        return [memoryview(whole[a:b]) for a, b in itertools.pairwise(bounds)]

    def _release(self, w: int, slot: int) -> None:
        """The slot is free again. Where more slots than RESIDENT_SLOTS have been read here,
        its pages also leave this process's memory (the worker's stay: shared memory keeps
        them), so that many workers do not add up here."""
        area = self._areas[w]
        assert area is not None
        if len(self._resident) > RESIDENT_SLOTS and hasattr(mmap, "MADV_DONTNEED"):
            self._resident.discard((w, slot))
            area.madvise(mmap.MADV_DONTNEED, slot * SLOT_BYTES, SLOT_BYTES)
        area[_FLAGS + slot] = 0

    def ordered(
        self, tasks: Iterator[Any], window: int, in_parent: Callable[[Any], Any] | None = None
    ) -> Iterator[Any]:
        """The result of each task, in the order of `tasks`, with at most `window` tasks
        sent and not yet received (fewer where results are large: RESULT_BYTES_PER_WORKER):
        memory stays flat however many tasks there are.

        `in_parent(task)`: this process works too. Whenever the oldest result has not come
        yet, it takes the next task itself instead of waiting (so with one worker, two
        processes encode, and only half the results cross a pipe); that result, or its
        error, waits its turn like the others, so the order is the same."""
        queued: collections.deque[Any] = collections.deque()  # per task: _SENT, or (ok, value) from in_parent
        ahead = 0  # tasks done in this process and not yet yielded

        def top_up() -> None:
            while len(queued) < self._window(window):
                task = next(tasks, _END)
                if task is _END:
                    return
                self.send(task)
                queued.append(_SENT)

        top_up()
        while queued:
            head = queued.popleft()
            if head is _SENT:
                if in_parent is not None and ahead < self._ahead(window) and not self._ready():
                    task = next(tasks, _END)
                    if task is not _END:
                        queued.appendleft(_SENT)
                        try:
                            queued.append((True, in_parent(task)))
                        except Exception as e:
                            queued.append((False, e))
                        ahead += 1
                        continue
                result = self.receive()
            else:
                ok, result = head
                ahead -= 1
                if not ok:
                    raise result
            top_up()
            yield result

    def _window(self, most: int) -> int:
        """Tasks that may be in flight: `most`, or as many as RESULT_BYTES_PER_WORKER holds
        of results as large as the last, from 2 per worker process up."""
        if not self._last_bytes:
            return most
        procs = len(self._procs)
        return min(most, max(2 * procs, RESULT_BYTES_PER_WORKER * procs // self._last_bytes))

    def _ahead(self, most: int) -> int:
        """Results made in this process that may wait for their turn: `most`, or as many as PARENT_RESULT_BYTES
        holds of results as large as the workers' last (2 before the first). They are this
        process's own memory, which would otherwise grow with the window when many slow
        workers keep it waiting for the oldest result."""
        if not self._last_bytes:
            return min(most, 2)
        return max(1, min(most, PARENT_RESULT_BYTES // self._last_bytes))

    def _ready(self) -> bool:
        """Whether the oldest result in flight has begun to arrive."""
        return self._results[self._received % len(self._procs)].poll(0)

    def _lost(self, w: int) -> WorkerLost:
        proc = self._procs[w]
        proc.join(1)
        code = proc.exitcode
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
            how += " (out of memory?)" if code == -signal.SIGKILL else ""
        else:
            how = f"exit status {code}" if code is not None else "its pipe closed"
        return WorkerLost(f"worker process {proc.pid} ended without sending its result: {how}")

    def close(self) -> None:
        """Stop the workers now (a result not yet read is dropped).

        With SIGKILL: a SIGTERM that reaches a worker still being forked is lost (Python
        clears the signals that arrive before its after-fork setup), and the join below
        would then wait forever."""
        for proc in self._procs:
            if proc.exitcode is None:
                proc.kill()
        for conn in self._tasks + self._results:
            conn.close()
        for proc in self._procs:
            proc.join()
        self._procs = []


def _shared_area() -> mmap.mmap | None:
    """A worker's slots, or None where the address space is limited (`ulimit -v`) short
    of them: its results then all come through its pipe."""
    try:
        return mmap.mmap(-1, _FLAGS + SLOTS)
    except OSError:
        return None


def _widen(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, or over the user's limit: the default size
        pass


def _read(fd: int, n: int) -> memoryview:
    """Exactly n bytes from fd, into memory nothing else holds (not zeroed first: the
    read fills it); EOFError if the writer is gone first."""
    import numpy as np

    view = memoryview(np.empty(n, np.uint8)).cast("B")
    got = 0
    while got < n:
        step = os.readv(fd, [view[got:]])
        if step == 0:
            raise EOFError
        got += step
    return view


def _write(fd: int, parts: list[Any]) -> None:
    """All of parts, in order, however the pipe splits the writes."""
    views = [memoryview(p).cast("B") for p in parts]
    while views:
        done = os.writev(fd, views)
        while views and done >= len(views[0]):
            done -= len(views[0])
            views.pop(0)
        if views:
            views[0] = views[0][done:]


# ---------------------------------------------------------------- in the worker


def _serve(
    tasks: Any,
    results: Any,
    fn: Callable[[Any], Any],
    initializer: Callable[..., None],
    initargs: tuple,
    parent: int,
    area: mmap.mmap | None,
) -> None:
    _die_with(parent)
    initializer(*initargs)
    # A thread takes the tasks off their pipe as they come: the parent's send then
    # never waits on a worker that is itself waiting for the parent to read a result.
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    threading.Thread(target=_take, args=(tasks, inbox), daemon=True).start()
    # And one puts the results into their pipe: the next task is worked on meanwhile,
    # not after the parent has made room for the whole result (it may be busy).
    outbox: queue.SimpleQueue = queue.SimpleQueue()
    sender = threading.Thread(target=_send, args=(results.fileno(), outbox, area), daemon=True)
    sender.start()
    while (task := inbox.get()) is not None:
        try:
            value, ok = fn(task), 1
        except Exception as e:
            value, ok = (e, traceback.format_exc()), 0
        buffers: list[pickle.PickleBuffer] = []
        try:
            data = pickle.dumps(value, 5, buffer_callback=buffers.append)
        except Exception as e:  # what does not pickle is told as text
            failed = e if ok else value[0]
            buffers, ok = [], 0
            data = pickle.dumps((RuntimeError(f"{type(failed).__name__}: {failed}"), traceback.format_exc()), 5)
        outbox.put((ok, data, [b.raw() for b in buffers]))
    outbox.put(None)
    sender.join()


def _send(fd: int, outbox: queue.SimpleQueue, area: mmap.mmap | None) -> None:
    """Each result: its buffers into a free slot, then its pickle; or both through the pipe."""
    try:
        while (job := outbox.get()) is not None:
            ok, data, raws = job
            total = sum(r.nbytes for r in raws)
            flag = area.find(b"\x00", _FLAGS) if area is not None and 0 < total <= SLOT_BYTES else -1
            slot = flag - _FLAGS if flag >= 0 else -1
            head = _HEAD.pack(ok, len(raws), len(data), slot) + b"".join(_LENGTH.pack(r.nbytes) for r in raws)
            if slot < 0:
                _write(fd, [head, data, *raws])
                continue
            assert area is not None
            area[flag] = 1
            at = slot * SLOT_BYTES
            for raw in raws:
                area[at : at + raw.nbytes] = raw
                at += raw.nbytes
            _write(fd, [head, data])
    except OSError:  # the parent is gone, or stopped reading: nothing is left to do
        os._exit(1)


def _take(tasks: Any, inbox: queue.SimpleQueue) -> None:
    try:
        while True:
            inbox.put(tasks.recv())
    except (EOFError, OSError):
        inbox.put(None)


def fill_in_forks(fill: Callable[[int, int], bytes], n: int, parts: int) -> list[bytes] | None:
    """fill(lo, hi) over 0..n-1 cut into `parts` contiguous parts: the first here, each
    other in a process forked from this one (which must run no other thread), which
    sends its bytes back through a pipe.

    Each part's bytes, in order; None when a child failed, so that the caller can
    compute serially and have an error raised here, as itself."""
    bounds = [n * i // parts for i in range(parts + 1)]
    parent, children = os.getpid(), []  # (pid, the read end of its pipe)
    try:
        for lo, hi in itertools.pairwise(bounds[1:]):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: its part, then out without this process's exit handlers
                code = 1
                try:
                    _die_with(parent)
                    _write(write, [fill(lo, hi)])
                    code = 0
                finally:
                    os._exit(code)
            os.close(write)
            children.append((pid, read))
        filled, failed = [fill(bounds[0], bounds[1])], False
        while children:  # each child computed its part already; it only waits to send it
            pid, read = children[0]
            pieces = []
            while piece := os.read(read, 1 << 20):
                pieces.append(piece)
            os.close(read)
            _, status = os.waitpid(pid, 0)
            children.pop(0)
            filled.append(b"".join(pieces))
            failed = failed or status != 0
        return None if failed else filled
    finally:
        for pid, read in children:  # left only when this process was interrupted or failed
            os.close(read)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _die_with(parent: int) -> None:
    """Make this worker exit when its parent does, however the parent ends (a SIGKILL
    runs no cleanup): orphans would hold the caller's stdout and stderr open.

    Interrupts are the parent's to handle: a Ctrl-C reaches the whole process group."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: a thread watches instead
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


@contextlib.contextmanager
def main_not_rerun() -> Iterator[None]:
    """While spawned workers start: they do not run the caller's main module again.

    multiprocessing's spawn imports the parent's `__main__` in every child (by its name
    or its file), which runs a plain script's top level once more in each: its prints,
    its own call of tfr_convert.write() (which finds this run's lock), all of it. The
    workers need nothing from it (the converter and the worker's functions are this
    package's), so while they start, `__main__` says neither."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


# ---------------------------------------------------------------- forked parts


def may_fork() -> bool:
    """Whether this process may fork children that run Python: fork exists, and no
    thread but this one runs (a child would inherit the others' locks in whatever
    state they were)."""
    import multiprocessing  # here: slow to import, and inline runs never need it

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def can_fork(roots: list[str]) -> bool:
    """Whether a forked process may work on a converter reading `roots`: may_fork, and
    none of them is remote (a remote filesystem's client threads do not survive fork)."""
    return may_fork() and not any(fs.is_remote(root) for root in roots)


def forked_filler(workers: int) -> Callable[[Callable[[int, int], bytes], int], list[bytes] | None]:
    """For a converter's independent work (listing folders): fill_in_parts(fill, n) gives
    fill's bytes over 0..n-1 in up to `workers` parts on forked processes, or None
    where this engine would not fork (one worker or part, other threads alive, a
    child failed): the converter then does the work itself."""

    def fill_in_parts(fill: Callable[[int, int], bytes], n: int) -> list[bytes] | None:
        parts = min(workers, n)
        if parts < 2 or not may_fork():
            return None
        return fill_in_forks(fill, n, parts)

    return fill_in_parts


def filled_in_parts(roots: list[str], fill: Callable[[int, int], bytes], n: int, parts: int) -> bytes:
    """fill(0, n), computed in `parts` parts on forked processes where that is worth it and
    allowed; here for one part, where no fork is allowed, or when a child failed (its
    error is then raised here, as itself)."""
    joined = forked_filler(parts)(fill, n) if parts > 1 and can_fork(roots) else None
    return fill(0, n) if joined is None else b"".join(joined)
