"""Unit tests at the remote seams: storage options, remote path helpers, the lock's idea of
a stale holder, background uploads (on fsspec's in-memory filesystem, which lives in this
process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tfr_convert.errors import OptionError, OutputError
from tfr_convert.storage import fs, stores

pytest.importorskip("fsspec")


def test_storage_options_apply_to_every_scheme_and_per_scheme_ones_win(monkeypatch):
    stores.configure({"anon": False, "s3": {"endpoint_url": "http://x:9000", "anon": True}, "gs": {"project": "p"}})
    try:
        assert stores.options_for("s3") == {"anon": True, "endpoint_url": "http://x:9000"}
        assert stores.options_for("gs") == {"anon": False, "project": "p"}
        assert stores.options_for("az") == {"anon": False}
    finally:
        stores.configure(None)
    monkeypatch.setenv(stores.OPTIONS_ENV, "[1]")
    with pytest.raises(OptionError, match="JSON object"):
        stores.options_for("s3")


def test_an_emulator_means_anonymous_gcs_unless_a_token_is_given(monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:1")
    assert stores.options_for("gs")["token"] == "anon"
    monkeypatch.setenv(stores.OPTIONS_ENV, json.dumps({"gs": {"token": "/key.json"}}))
    assert stores.options_for("gs")["token"] == "/key.json"


def test_remote_paths_keep_their_scheme_through_the_path_helpers():
    assert fs.normpath("s3://b/a/./c//d/../e") == "s3://b/a/c/e"
    assert fs.normpath("a/./b") == "a/b"
    assert fs.join("gs://b/x", "y", "z") == "gs://b/x/y/z"
    assert fs.dirname("s3://b/x/y/") == "s3://b/x"
    assert fs.basename("s3://b/x/y/") == "y"
    assert fs.is_remote("memory://x") and not fs.is_remote("/tmp/x") and not fs.is_remote("rel/s3:/x")


def test_a_memory_tree_is_walked_from_one_listing_with_implied_folders():
    root = f"memory://walk-{os.getpid()}"
    for name in ("a/1.png", "a/b/2.png", "c/3.png", "top.csv"):
        fs.put_bytes(f"{root}/{name}", b"x")
    walked = [(d[len(root) :], dirs, files) for d, dirs, files in fs.walk(root)]
    assert walked == [("", ["a", "c"], ["top.csv"]), ("/a", ["b"], ["1.png"]), ("/a/b", [], ["2.png"]),
                      ("/c", [], ["3.png"])]  # fmt: skip
    assert sorted(fs.listdir(root)) == ["a", "c", "top.csv"]
    assert fs.files_in(root) == ["top.csv"]
    assert fs.read_range(f"{root}/top.csv", 0, 1) == b"x"
    fs.rmtree(root)
    assert not fs.exists(f"{root}/top.csv")


def test_the_local_and_the_remote_implementation_offer_the_same_methods():
    import inspect

    from tfr_convert.storage.local import LocalFiles
    from tfr_convert.storage.remote import RemoteFiles

    def methods(cls):
        return {n: inspect.signature(f) for n, f in vars(cls).items() if callable(f) and not n.startswith("_")}

    assert methods(LocalFiles) == methods(RemoteFiles)
    assert isinstance(fs.files_for("/tmp/x"), LocalFiles) and isinstance(fs.files_for("gs://b/x"), RemoteFiles)


def test_a_local_and_a_memory_tree_answer_every_call_alike(tmp_path):
    """The same calls on the same tree, once on disk and once in memory://, give the same
    answers (names relative to each root)."""
    memory = f"memory://alike-{os.getpid()}"

    def run(root):
        answers = []
        for name in ("a/1.png", "a/b/2.png", "top.csv"):
            fs.makedirs(fs.dirname(fs.join(root, name)))
            fs.put_bytes(fs.join(root, name), name.encode())
        fs.put_new(fs.join(root, "new.bin"), b"n")
        with pytest.raises(FileExistsError):
            fs.put_new(fs.join(root, "new.bin"), b"m")
        fs.put_many({fs.join(root, "m1"): b"1", fs.join(root, "m2"): b"22"})
        with fs.open_file(fs.join(root, "w.bin")) as f:
            f.write(b"written")
        with fs.open_input(fs.join(root, "w.bin")) as f:
            answers.append(f.read())
        fs.copy_many([(fs.join(root, "m2"), fs.join(root, "m3"))])
        fs.rename(fs.join(root, "m1"), fs.join(root, "m4"))
        fs.remove(fs.join(root, "m4"))
        fs.remove_many([fs.join(root, "m3"), fs.join(root, "absent")])
        answers += [
            fs.read_bytes(fs.join(root, "a/b/2.png")),
            fs.read_range(fs.join(root, "top.csv"), 1, 2),
            fs.read_range(fs.join(root, "top.csv"), 1, 0),
            fs.getsize(fs.join(root, "m2")),
            fs.info(fs.join(root, "m2"))["size"],
            fs.info(fs.join(root, "a"))["type"],
            [fs.exists(fs.join(root, n)) for n in ("a", "m2", "m1", "nope")],
            [fs.isdir(fs.join(root, n)) for n in ("a", "m2", "nope")],
            [fs.isfile(fs.join(root, n)) for n in ("a", "m2", "nope")],
            sorted(fs.listdir(root)),
            sorted(fs.files_in(root)),
            sorted(fs.basename(p) for p in fs.glob(fs.join(root, "*"), files_only=True)),
            [(d[len(root) :], sorted(ds), sorted(fl)) for d, ds, fl in fs.walk(root)],
            fs.within(fs.join(root, "a/b"), fs.join(root, "a")),
            fs.within(fs.join(root, "ab"), fs.join(root, "a")),
            fs.basename(fs.join(root, "a/b")),
        ]
        fs.rmtree(fs.join(root, "a"))
        answers.append(fs.exists(fs.join(root, "a")))
        return answers

    local, remote = run(str(tmp_path)), run(memory)
    fs.rmtree(memory)
    assert local == remote
    assert local[0] == b"written" and local[2] == b"op" and local[-1] is False


def test_background_uploads_land_whole_and_a_failed_one_is_raised():
    from tfr_convert.output.uploads import Uploads

    uploads = Uploads(pending=2)
    root = f"memory://uploads-{os.getpid()}"
    for i in range(5):  # more than the spool holds at once: opening waits for a slot
        with uploads.open(f"{root}/shard-{i}") as f:
            f.write(bytes([i]) * 1000)
            f.write(memoryview(b"end"))
    uploads.wait()
    assert [fs.read_bytes(f"{root}/shard-{i}") for i in range(5)] == [bytes([i]) * 1000 + b"end" for i in range(5)]
    with uploads.open("nosuchscheme://x/y") as f:  # its upload fails on the helper thread
        f.write(b"x")
    with pytest.raises(OptionError):
        uploads.wait()
    uploads.close()


def test_a_remote_journal_is_written_in_order_behind_the_run_and_read_up_to_a_gap():
    from tfr_convert.output.journal import Journal, ShardEntry, Tally
    from tfr_convert.output.shards import Checkpoint

    root = f"memory://journal-{os.getpid()}"
    journal = Journal(root)
    journal.open({"seed": 0})
    for n in range(6):
        entry = ShardEntry(f"tmp-{n}", n, n, f"{n:064x}")
        journal.shard_done("train", entry, Checkpoint(n + 1, 0, (n, 0, n)), Tally())
    journal.flush()
    assert [e["shard"]["file"] for e, _ in journal.read({"seed": 0})] == [f"tmp-{n}" for n in range(6)]
    journal.close()
    fs.remove(f"{root}/00000003.json")  # a line missing: those after it are not believed
    assert [e["shard"]["file"] for e, _ in journal.read({"seed": 0})] == ["tmp-0", "tmp-1"]
    fs.rmtree(root)


def test_a_lock_held_by_a_dead_process_here_is_stale_and_a_live_ones_is_not(tmp_path):
    from tfr_convert.output.remote_lock import RemoteLock

    lock = RemoteLock("memory://locks/lock")
    alive = dict(lock.me, run="other")
    assert not lock._stale(alive, {})  # this very process: alive
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = dict(lock.me, pid=child.pid, pid_start="1", run="other")
    assert lock._stale(dead, {})  # that pid is gone (or is another process now)
    elsewhere = dict(alive, host="another-host")
    fresh = {"LastModified": time.time()}
    assert not lock._stale(elsewhere, fresh)
    assert lock._stale(elsewhere, {"LastModified": time.time() - lock.lease - 1})


def test_only_one_of_two_takes_a_memory_lock_and_release_frees_it():
    from tfr_convert.errors import OutputError
    from tfr_convert.output.remote_lock import RemoteLock

    first, second = RemoteLock("memory://held/lock"), RemoteLock("memory://held/lock")
    first.acquire("memory://held")
    try:
        with pytest.raises(OutputError, match=f"another tfr-convert run \\(pid {os.getpid()} on "):
            second.acquire("memory://held")
    finally:
        first.release()
    second.acquire("memory://held")
    second.release()
    assert not fs.exists("memory://held/lock")


def test_the_lease_comes_from_the_environment_at_least_a_second_else_the_default(monkeypatch):
    from tfr_convert.output.remote_lock import DEFAULT_LEASE, LEASE_ENV, lease_seconds

    assert DEFAULT_LEASE == 120.0
    monkeypatch.delenv(LEASE_ENV, raising=False)
    assert lease_seconds() == 120.0
    for value, lease in (("30", 30.0), ("0.1", 1.0), ("soon", 120.0)):
        monkeypatch.setenv(LEASE_ENV, value)
        assert lease_seconds() == lease


def test_a_process_is_named_by_its_pid_and_start_and_the_machine_by_its_boot(tmp_path):
    from tfr_convert.output.remote_lock import _boot_id, _process_start

    mine = _process_start(os.getpid())
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])  # seconds since boot, as the child starts
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        theirs = _process_start(child.pid)
    finally:
        child.kill()
        child.wait()
    assert mine.isdigit() and theirs.isdigit() and int(theirs) > int(mine)  # clock ticks since boot
    assert abs(int(theirs) / os.sysconf("SC_CLK_TCK") - uptime) < 5
    assert _process_start(child.pid) is None  # gone
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert _boot_id() == f.read().strip() != ""
    assert _boot_id(str(tmp_path / "no-proc")) == ""  # a system without one


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_this_machines_dead_holders_are_stale_at_once_others_when_their_lease_is_out():
    from tfr_convert.output.remote_lock import RemoteLock

    lock = RemoteLock("memory://stale/lock")
    dead = dict(lock.me, pid=dead_pid(), run="other")
    fresh, unknown = {"created": time.time()}, {}
    assert lock._stale(dead, fresh)
    assert not lock._stale(dict(dead, boot="another boot"), fresh)  # rebooted since: by its lease only
    assert not lock._stale(dict(dead, boot=""), fresh)
    assert not lock._stale(dict(dead, host="elsewhere"), fresh)
    assert not lock._stale(dict(dead, host=""), fresh)  # a name that sorts first is no more this machine's
    assert not lock._stale(dict(dead, pid=str(dead["pid"])), fresh)  # not a pid: by its lease only
    assert not lock._stale(dict(dead, host="elsewhere"), unknown)  # no time known: never stale
    assert lock._stale(dict(dead, host="elsewhere"), {"created": time.time() - lock.lease - 5})


def test_a_dead_runs_lock_is_taken_over_and_a_garbled_lock_is_held_by_someone(monkeypatch):
    from tfr_convert.errors import OutputError
    from tfr_convert.output.remote_lock import RemoteLock

    path = f"memory://takeover-{os.getpid()}/lock"
    lock = RemoteLock(path)
    fs.put_bytes(path, json.dumps(dict(lock.me, pid=dead_pid(), run="killed")).encode())
    lock.acquire("out")
    try:
        assert json.loads(fs.read_bytes(path))["run"] == lock.me["run"]
    finally:
        lock.release()
    assert not fs.exists(path)
    epoch = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(0))
    for garbled in (b"not json", b"[1, 2]"):
        fs.put_bytes(path, garbled)
        with pytest.raises(OutputError) as refused:
            RemoteLock(path).acquire("out")
        assert f"another tfr-convert run (pid ? on ?, since {epoch})" in str(refused.value)
    fs.remove(path)


def test_a_held_lock_is_renewed_and_one_taken_over_is_noticed_and_left_alone(monkeypatch):
    from tfr_convert.errors import OutputError
    from tfr_convert.output.remote_lock import LEASE_ENV, RemoteLock

    monkeypatch.setenv(LEASE_ENV, "1")  # renewed every quarter second
    path = f"memory://renewed-{os.getpid()}/lock"
    lock = RemoteLock(path)
    lock.acquire("out")
    first = json.loads(fs.read_bytes(path))
    deadline = time.time() + 5
    while json.loads(fs.read_bytes(path))["renewed"] == first["renewed"] and time.time() < deadline:
        time.sleep(0.1)
    assert json.loads(fs.read_bytes(path))["renewed"] > first["renewed"]
    lock.check()  # still this run's
    other = dict(first, run="")  # a run id that sorts before any
    fs.put_bytes(path, json.dumps(other).encode())
    while lock.lost is None and time.time() < deadline + 5:
        time.sleep(0.05)
    with pytest.raises(OutputError, match="another run took this output's lock over"):
        lock.check()
    lock.release()
    assert json.loads(fs.read_bytes(path))["run"] == ""  # not removed: not ours
    fs.remove(path)


def writes_of(path: str, seconds: float) -> int:
    """How many times an object was written in the next `seconds` (its creation time changes)."""
    import fsspec

    memory, seen, stop = fsspec.filesystem("memory"), set(), time.time() + seconds
    while time.time() < stop:
        seen.add(memory.info(path.removeprefix("memory://"))["created"])
        time.sleep(0.01)
    return len(seen) - 1


def test_a_lock_is_renewed_four_times_a_lease(monkeypatch):
    """A lease of 1 s (the least): renewals every 0.25 s, by the median of the gaps
    between the lock's writes (every third or fifth of a lease would be 0.33 or 0.2 s)."""
    import itertools
    import statistics

    import fsspec

    from tfr_convert.output.remote_lock import LEASE_ENV, RemoteLock

    monkeypatch.setenv(LEASE_ENV, "0.1")  # below the least: 1 s
    path = f"memory://quarters-{os.getpid()}/lock"
    memory = fsspec.filesystem("memory")
    lock = RemoteLock(path)
    lock.acquire("out")
    written = set()
    try:
        stop = time.time() + 2.2
        while time.time() < stop:
            written.add(memory.info(path.removeprefix("memory://"))["created"])
            time.sleep(0.005)
    finally:
        lock.release()
    times = sorted(written)
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert len(gaps) >= 6 and 0.23 <= statistics.median(gaps) <= 0.29, gaps


def test_a_lock_removed_by_someone_is_lost_and_release_leaves_another_runs_lock(monkeypatch):
    from tfr_convert.errors import OutputError
    from tfr_convert.output.remote_lock import LEASE_ENV, RemoteLock

    monkeypatch.setenv(LEASE_ENV, "1")
    path = f"memory://removed-{os.getpid()}/lock"
    lock = RemoteLock(path)
    lock.acquire("out")
    fs.remove(path)
    deadline = time.time() + 5
    while lock.lost is None and time.time() < deadline:
        time.sleep(0.05)
    with pytest.raises(OutputError, match="took this output's lock over"):
        lock.check()
    lock.release()
    for other in ("", "~" * 40):  # run ids that sort before and after any of ours
        mine = RemoteLock(path)
        mine.acquire("out")
        fs.put_bytes(path, json.dumps(dict(mine.me, run=other)).encode())
        deadline = time.time() + 5
        while mine.lost is None and time.time() < deadline:
            time.sleep(0.05)
        assert mine.lost is not None, other
        mine.release()
        assert json.loads(fs.read_bytes(path))["run"] == other
        fs.remove(path)


def test_a_process_that_ends_holding_a_lock_is_not_kept_alive_by_its_renewals():
    code = "from tfr_convert.output.remote_lock import RemoteLock\nRemoteLock('memory://exit/lock').acquire('out')\n"
    ended = subprocess.run([sys.executable, "-c", code], timeout=60, capture_output=True)
    assert ended.returncode == 0, ended.stderr


def test_a_lock_released_between_a_refused_create_and_the_read_is_taken_next_time(monkeypatch):
    from tfr_convert.output.remote_lock import RemoteLock
    from tfr_convert.storage import stores

    path = f"memory://race-{os.getpid()}/lock"
    real, calls = stores.create_exclusive, []

    def refused_once(p, data):  # another run held it at that instant, and let it go before the read
        calls.append(p)
        return False if len(calls) == 1 else real(p, data)

    monkeypatch.setattr(stores, "create_exclusive", refused_once)
    lock = RemoteLock(path)
    lock.acquire("out")
    lock.release()
    assert len(calls) == 2


def test_five_tries_then_a_clear_error_when_other_runs_keep_taking_the_lock(monkeypatch):
    from tfr_convert.errors import OutputError
    from tfr_convert.output.remote_lock import RemoteLock
    from tfr_convert.storage import stores

    path = f"memory://busy-{os.getpid()}/lock"
    lock = RemoteLock(path)
    stale = json.dumps(dict(lock.me, pid=dead_pid(), run="dead")).encode()
    calls = []

    def always_taken(p, data):  # each time, a dead run's lock is there again
        calls.append(p)
        fs.put_bytes(p, stale)
        return False

    monkeypatch.setattr(stores, "create_exclusive", always_taken)
    with pytest.raises(OutputError, match="cannot take the lock \\(other runs keep taking it\\)"):
        lock.acquire("out")
    assert len(calls) == 5
    fs.rmtree(f"memory://busy-{os.getpid()}")


def test_a_passing_store_failure_does_not_stop_the_renewals(monkeypatch):
    from tfr_convert.output.remote_lock import LEASE_ENV, RemoteLock

    monkeypatch.setenv(LEASE_ENV, "1")
    path = f"memory://flaky-{os.getpid()}/lock"
    real, failures = fs.put_bytes, []

    def failing_once(p, data):
        if not failures:
            failures.append(p)
            raise OSError(5, "the store blinked", p)
        return real(p, data)

    lock = RemoteLock(path)
    lock.acquire("out")
    monkeypatch.setattr(fs, "put_bytes", failing_once)
    try:
        renewals = writes_of(path, 1.2)
    finally:
        lock.release()
    assert failures and renewals >= 1 and lock.lost is None


def test_a_process_whose_name_holds_a_parenthesis_is_still_named_by_its_start(tmp_path):
    """/proc/PID/stat puts the name between parentheses: the fields are read after the last ')'."""
    from tfr_convert.output.remote_lock import _process_start

    odd = tmp_path / "py) S 1 2"
    odd.symlink_to(sys.executable)
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    child = subprocess.Popen([str(odd), "-c", "import time; time.sleep(5)"])
    try:
        time.sleep(0.2)
        start = _process_start(child.pid)
    finally:
        child.kill()
        child.wait()
    assert start is not None and start.isdigit() and abs(int(start) / os.sysconf("SC_CLK_TCK") - uptime) < 5


def test_a_remote_output_releases_the_lock_it_took_and_leaves_one_it_was_given():
    from tfr_convert.output.remote import RemoteOutput

    own = f"memory://own-lock-{os.getpid()}/out"
    out = RemoteOutput(own, overwrite=False, resume=False, identity=None, inputs=None)
    assert fs.exists(f"{own}/.tfr-convert/lock")
    out.close()
    assert not fs.exists(f"{own}/.tfr-convert/lock")
    given = f"memory://given-lock-{os.getpid()}/out"
    lock = RemoteOutput.claim(given)  # as the command line takes it, before reading any input
    RemoteOutput(given, overwrite=False, resume=False, identity=None, inputs=None, lock=lock).close()
    assert fs.exists(f"{given}/.tfr-convert/lock")  # its taker releases it
    lock.release()
    assert not fs.exists(f"{given}/.tfr-convert/lock")
    refused = f"memory://refused-lock-{os.getpid()}/out"
    fs.put_bytes(f"{refused}/notes.txt", b"not a dataset")
    with pytest.raises(OutputError, match="not empty"):
        RemoteOutput(refused, overwrite=False, resume=False, identity=None, inputs=None)
    assert not fs.exists(f"{refused}/.tfr-convert/lock")  # a start refused lets go of the lock it took


@pytest.mark.parametrize("left", ["journal", "build"])
def test_a_remote_output_holding_part_of_an_interrupted_runs_work_is_not_taken_for_a_fresh_one(left):
    """A run killed before its journal's first line leaves shards but no journal; one
    killed before its first shard, a journal alone: either is an interrupted run's work."""
    from tfr_convert.output.journal import Journal
    from tfr_convert.output.remote import RemoteOutput

    out = f"memory://half-work-{left}-{os.getpid()}/out"
    if left == "journal":
        journal = Journal(f"{out}/.tfr-convert/journal")
        journal.open({"seed": 0})
        journal.close()
    else:
        fs.put_bytes(f"{out}/.tfr-convert/new/.tfr-convert-tmp-train-00000", b"part of a shard")
    with pytest.raises(OutputError, match="an interrupted run's unfinished work is in"):
        RemoteOutput(out, overwrite=False, resume=False, identity=None, inputs=None)
    RemoteOutput(out, overwrite=True, resume=False, identity=None, inputs=None).close()  # starts over
    assert not fs.exists(f"{out}/.tfr-convert/journal") and not fs.exists(f"{out}/.tfr-convert/new")
    fs.rmtree(f"memory://half-work-{left}-{os.getpid()}")
