"""A remote output never shows a half-written dataset: real SIGKILLs after every change
a run makes to a real S3 store (kill_at_store.py), --resume there, and the lock that
lets one run at a time write a prefix."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import pytest
from helpers import TESTS, write_class_folders, write_mnist
from object_stores import download_tree

HERE = TESTS
SCRIPTS = Path(sysconfig.get_path("scripts"))
WORK = ".tfr-convert/"


def run(env, command: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPTS / command), *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip


def killed_at(n: int, env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HERE / "kill_at_store.py"), *map(str, args)], capture_output=True,
                          text=True, env={**env, "KILL_AT": str(n)}, timeout=300)  # fmt: skip


def dataset(s3, prefix: str) -> dict[str, bytes]:
    """The files under prefix, the work folder left out."""
    return {k: v for k, v in download_tree(s3.fs, prefix).items() if not k.startswith(WORK)}


def local(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir()}


@pytest.fixture
def overwrite(s3, tmp_path):
    """(args of the new run, the old dataset's files, the new one's), as written locally."""
    src = tmp_path / "src"
    write_mnist(src, n_train=60, n_test=20)
    old = ["mnist", src, "--num-shards", 2, "--quiet"]
    new = ["mnist", src, "--num-shards", 2, "--validation-size", 6, "--quiet"]
    assert run(s3.env, "tfr-convert", *old, "--out", tmp_path / "old").returncode == 0
    assert run(s3.env, "tfr-convert", *new, "--out", tmp_path / "new").returncode == 0
    return new, local(tmp_path / "old"), local(tmp_path / "new")


def test_a_kill_after_any_store_change_of_an_overwrite_leaves_old_none_or_new_and_the_next_run_finishes(
    s3, overwrite, tmp_path
):
    new_args, old_files, new_files = overwrite
    theirs = {"notes.txt": b"mine", "other-train.tfrecord-00000-of-00001": b"another dataset's shard"}
    counted = f"{s3.name}/counted"
    for name, data in {**old_files, **theirs}.items():
        s3.fs.pipe_file(f"{counted}/{name}", data)
    count = subprocess.run([sys.executable, str(HERE / "kill_at_store.py"), *map(str, new_args), "--out",
                            f"s3://{counted}", "--overwrite"], capture_output=True, text=True,
                           env={**s3.env, "KILL_AT": "0", "COUNT_TO": str(tmp_path / "count")}, timeout=300)  # fmt: skip
    assert count.returncode == 0, count.stderr
    total = int((tmp_path / "count").read_text())
    assert total > 20  # lock, journal lines, shards, the record, copies, removals, metadata, the tidying

    def kill_and_finish(n: int) -> str:
        prefix = f"{s3.name}/at-{n}"
        for name, data in {**old_files, **theirs}.items():
            s3.fs.pipe_file(f"{prefix}/{name}", data)
        killed = killed_at(n, s3.env, *new_args, "--out", f"s3://{prefix}", "--overwrite")
        assert killed.returncode == -signal.SIGKILL, (n, killed.stderr)
        seen = {k: v for k, v in dataset(s3, prefix).items() if k not in theirs}
        if "dataset_info.json" in seen:  # a dataset that claims to be complete is whole: old or new
            assert seen in (old_files, new_files), n
            state = "old" if seen == old_files else "new"
        else:
            state = "none"  # the commit's window: no dataset_info.json, and the inspector says why
            inspected = run(s3.env, "tfr-inspect", f"s3://{prefix}")
            assert inspected.returncode == 1 and "commit into this directory is under way" in inspected.stderr, n
        # the next run (the same command, told to go on) finishes what the killed one left
        finished = run(s3.env, "tfr-convert", *new_args, "--out", f"s3://{prefix}", "--overwrite", "--resume")
        assert finished.returncode == 0, (n, finished.stderr)
        assert download_tree(s3.fs, prefix) == {**new_files, **theirs}, n  # and no work folder is left
        return state

    with ThreadPoolExecutor(3) as pool:  # each kill is its own prefix: three at a time (they wait on the store)
        futures = [pool.submit(kill_and_finish, n) for n in range(1, total + 1)]
        for future in as_completed(futures):
            if future.exception() is not None:  # the first failure is the answer: the kills not begun are not
                pool.shutdown(cancel_futures=True)
                raise future.exception()
        states = [future.result() for future in futures]
    # the kills fell before the commit, inside its window, and after it
    assert states[0] == "old" and "none" in states and states[-1] == "new", states


def test_resume_on_s3_after_a_kill_gives_the_uninterrupted_bytes(s3, overwrite, tmp_path):
    new_args, _, new_files = overwrite
    out = f"s3://{s3.name}/out"
    killed = killed_at(8, s3.env, *new_args, "--out", out)  # after the lock, the journal's first line and shards
    assert killed.returncode == -signal.SIGKILL
    assert not s3.fs.exists(f"{s3.name}/out/dataset_info.json")
    journaled = [k for k in s3.fs.find(f"{s3.name}/out/.tfr-convert/journal")]
    assert len(journaled) >= 2
    again = run(s3.env, "tfr-convert", *new_args, "--out", out)
    assert again.returncode == 1 and "--resume" in again.stderr  # a plain rerun is refused, both choices named
    resumed = run(s3.env, "tfr-convert", *new_args, "--out", out, "--resume", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert dataset(s3, f"{s3.name}/out") == new_files
    kept = json.loads(resumed.stdout)["resumed"]["kept_shards"]  # read back whole: not written again
    assert 0 < kept <= len(journaled)
    done = run(s3.env, "tfr-convert", *new_args, "--out", out, "--resume")
    assert done.returncode == 0  # a finished run is reported as done
    other = run(s3.env, "tfr-convert", *new_args[:-1], "--seed", 3, "--out", f"s3://{s3.name}/o2")
    assert other.returncode == 0


def test_resume_on_s3_refuses_a_shard_changed_since_it_was_journaled(s3, overwrite, tmp_path):
    new_args, _, new_files = overwrite
    out = f"s3://{s3.name}/out"
    assert killed_at(12, s3.env, *new_args, "--out", out).returncode == -signal.SIGKILL
    lines = [json.loads(s3.fs.cat_file(k)) for k in s3.fs.find(f"{s3.name}/out/.tfr-convert/journal")]
    journaled = [line["shard"]["file"] for line in lines if "shard" in line]  # in the order written
    assert len(journaled) >= 2, lines
    temporaries = [f"{s3.name}/out/.tfr-convert/new/{name}" for name in journaled]
    # the first: one that reads, as many records, but of another size (the resume stops at the
    # first shard it cannot keep, so this one is asked about first); the next: another object
    from tfr_convert.containers.framing import frame
    from tfr_convert.containers.tfrecord import read_records

    local_copy = tmp_path / "shard"
    local_copy.write_bytes(s3.fs.cat_file(temporaries[0]))
    s3.fs.pipe_file(temporaries[0], b"".join(frame(r.data + b"\x00") for r in read_records(str(local_copy))))
    s3.fs.pipe_file(temporaries[1], b"not what was written")  # same name, another object
    resumed = run(s3.env, "tfr-convert", *new_args, "--out", out, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert dataset(s3, f"{s3.name}/out") == new_files  # the changed shard was written again


def _work_left(s3, prefix: str) -> set[str]:
    """What a run's work folder under prefix holds: 'journal', 'new' (each if it holds objects)."""
    work = f"{s3.name}/{prefix}/.tfr-convert/"
    return {k[len(work) :].split("/")[0] for k in s3.fs.find(f"{s3.name}/{prefix}") if k.startswith(work)} - {"lock"}


def test_on_s3_an_interrupted_run_keeps_its_work_for_resume(s3, tmp_path):
    """Ctrl-C (SIGINT) while shards are being written: the finished ones stay for --resume."""
    src = tmp_path / "src"
    write_mnist(src, n_train=3000, n_test=10)
    args = ["mnist", src, "--examples-per-shard", 100, "--image-format", "png", "--quiet"]
    out = f"s3://{s3.name}/out"
    # (SIGINT's default restored: a shell's background job, and what it starts, ignore it)
    running = subprocess.Popen([str(SCRIPTS / "tfr-convert"), *map(str, args), "--out", out], env=s3.env,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not {"journal", "new"} <= _work_left(s3, "out"):
            assert running.poll() is None and time.monotonic() < deadline, "no shard was finished"
            time.sleep(0.05)
    finally:
        running.send_signal(signal.SIGINT)
    assert running.wait(120) == 130, running.stderr.read()
    assert {"journal", "new"} <= _work_left(s3, "out")  # kept for --resume
    resumed = run(s3.env, "tfr-convert", *args, "--out", out, "--resume", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["resumed"]["kept_shards"] > 0
    assert run(s3.env, "tfr-convert", *args, "--out", tmp_path / "whole").returncode == 0
    assert dataset(s3, f"{s3.name}/out") == local(tmp_path / "whole")


def test_on_s3_a_run_that_fails_leaves_no_work_behind(s3, overwrite, tmp_path):
    new_args, _, _ = overwrite
    out = f"s3://{s3.name}/out"
    failed = killed_at(8, {**s3.env, "HOW": "FAIL"}, *new_args, "--out", out)  # a request fails mid-way
    assert failed.returncode == 1 and "injected" in failed.stderr, failed.stderr
    assert _work_left(s3, "out") == set()
    again = run(s3.env, "tfr-convert", *new_args, "--out", out)  # nothing left in the way
    assert again.returncode == 0, again.stderr


def test_an_overwrite_on_s3_after_an_interrupted_run_starts_over_and_leaves_none_of_its_work(s3, overwrite, tmp_path):
    new_args, _, _ = overwrite
    out = f"s3://{s3.name}/out"
    assert killed_at(8, s3.env, *new_args, "--out", out).returncode == -signal.SIGKILL
    fewer = [*new_args[:2], "--num-shards", 2, "--quiet"]  # fewer shards than the interrupted run
    assert run(s3.env, "tfr-convert", *fewer, "--out", tmp_path / "fewer").returncode == 0
    # the overwrite killed in turn, after its first shard, and resumed: none of the first run's work in it
    assert killed_at(5, s3.env, *fewer, "--out", out, "--overwrite").returncode == -signal.SIGKILL
    again = run(s3.env, "tfr-convert", *fewer, "--out", out, "--overwrite", "--resume")
    assert again.returncode == 0, again.stderr
    assert dataset(s3, f"{s3.name}/out") == local(tmp_path / "fewer") and _work_left(s3, "out") == set()


def test_a_run_into_an_s3_prefix_holding_other_files_is_refused_without_overwrite(s3, tmp_path):
    src = tmp_path / "src"
    write_mnist(src, n_train=20, n_test=5)
    s3.fs.pipe_file(f"{s3.name}/out/notes.txt", b"not a dataset")
    refused = run(s3.env, "tfr-convert", "mnist", src, "--out", f"s3://{s3.name}/out")
    assert refused.returncode == 1 and "not empty (use --overwrite" in refused.stderr, refused.stderr
    assert s3.fs.cat_file(f"{s3.name}/out/notes.txt") == b"not a dataset"


def test_an_overwrite_on_s3_by_shards_of_the_same_names_leaves_the_new_dataset(s3, tmp_path):
    """The old dataset's files the new one does not write again go; those it does stay."""
    src = tmp_path / "src"
    write_mnist(src, n_train=40, n_test=10)
    out = f"s3://{s3.name}/out"
    args = ["mnist", src, "--num-shards", 2, "--quiet"]
    assert run(s3.env, "tfr-convert", *args, "--out", out).returncode == 0
    assert run(s3.env, "tfr-convert", *args, "--seed", 3, "--out", tmp_path / "new").returncode == 0
    again = run(s3.env, "tfr-convert", *args, "--seed", 3, "--out", out, "--overwrite")
    assert again.returncode == 0, again.stderr
    assert dataset(s3, f"{s3.name}/out") == local(tmp_path / "new")


def test_two_runs_into_one_prefix_one_refuses_naming_the_holder(s3, tmp_path):
    src = tmp_path / "src"
    write_mnist(src, n_train=3000, n_test=10)
    out = f"s3://{s3.name}/out"
    args = ["mnist", src, "--out", out, "--examples-per-shard", 100, "--image-format", "png", "--quiet"]
    first = subprocess.Popen([str(SCRIPTS / "tfr-convert"), *map(str, args)], env=s3.env, stderr=subprocess.PIPE,
                             text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not s3.fs.exists(f"{s3.name}/out/.tfr-convert/lock"):
            assert first.poll() is None and time.monotonic() < deadline, "the first run never took the lock"
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGSTOP)  # held while the second run tries
        second = run(s3.env, "tfr-convert", *args)
        assert second.returncode == 1, second.stderr
        assert f"another tfr-convert run (pid {first.pid} on " in second.stderr
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert first.wait(120) == 0, first.stderr.read()
    assert s3.fs.exists(f"{s3.name}/out/dataset_info.json")
    assert not s3.fs.exists(f"{s3.name}/out/.tfr-convert/lock")


def test_a_lock_not_renewed_for_a_lease_is_taken_over(s3, tmp_path):
    """A holder on another machine that died: its lock is taken over once its lease ran out."""

    src = tmp_path / "src"
    write_mnist(src)
    out = f"s3://{s3.name}/out"
    lock = {"run": "elsewhere", "host": "another-host", "boot": "x", "pid": 1, "pid_start": "1", "since": 0}
    s3.fs.pipe_file(f"{s3.name}/out/.tfr-convert/lock", json.dumps(lock).encode())
    env = {**s3.env, "TFR_CONVERT_LOCK_LEASE": "2"}
    held = run(env, "tfr-convert", "mnist", src, "--out", out)
    assert held.returncode == 1 and "pid 1 on another-host" in held.stderr
    time.sleep(3)
    taken = run(env, "tfr-convert", "mnist", src, "--out", out)
    assert taken.returncode == 0, taken.stderr
    assert not s3.fs.exists(f"{s3.name}/out/.tfr-convert/lock")


def test_resume_refuses_an_s3_image_rewritten_since_the_interrupted_run_naming_it(s3, tmp_path):
    from object_stores import upload_tree
    from PIL import Image

    for c in ("a", "b"):
        (tmp_path / "src" / c).mkdir(parents=True)
        for i in range(8):
            Image.new("RGB", (8, 8 + i), (i * 30, 9, ord(c))).save(tmp_path / "src" / c / f"{i}.png")
    upload_tree(s3.fs, tmp_path / "src", f"{s3.name}/images")
    args = ["images", f"s3://{s3.name}/images", "--examples-per-shard", 2, "--workers", 1, "--quiet"]
    out = f"s3://{s3.name}/out"
    assert killed_at(6, s3.env, *args, "--out", out).returncode == -signal.SIGKILL
    victim = f"{s3.name}/images/a/3.png"
    other = (tmp_path / "src" / "b" / "3.png").read_bytes()  # another picture of the same size
    assert len(other) == s3.fs.size(victim) and other != s3.fs.cat_file(victim)
    s3.fs.pipe_file(victim, other)
    resumed = run(s3.env, "tfr-convert", *args, "--out", out, "--resume")
    assert resumed.returncode == 1
    assert f"cannot --resume: s3://{victim} changed (" in resumed.stderr and "version)" in resumed.stderr
    assert run(s3.env, "tfr-convert", *args, "--out", out, "--overwrite").returncode == 0


def test_a_kill_after_any_store_change_of_an_append_leaves_every_version_whole_and_resume_finishes_it(s3, tmp_path):
    first, second, base = tmp_path / "b1", tmp_path / "b2", tmp_path / "base"
    write_class_folders(first, ["a", "b"], 4, seed=0)
    write_class_folders(second, ["b", "c"], 3, seed=1)
    args = ["images", second, "--append", "--quiet", "--workers", "1"]
    assert run(s3.env, "tfr-convert", "images", first, "--out", base, "--append", "--name", "d").returncode == 0
    old = local(base / "d" / "1.0.0")
    reference = tmp_path / "reference"
    shutil.copytree(base, reference)
    assert run(s3.env, "tfr-convert", *args, "--out", reference).returncode == 0
    new = local(reference / "d" / "1.1.0")
    counted = f"{s3.name}/counted"
    for name, data in old.items():
        s3.fs.pipe_file(f"{counted}/d/1.0.0/{name}", data)
    count = subprocess.run([sys.executable, str(HERE / "kill_at_store.py"), *map(str, args), "--out",
                            f"s3://{counted}"], capture_output=True, text=True,
                           env={**s3.env, "KILL_AT": "0", "COUNT_TO": str(tmp_path / "count")}, timeout=300)  # fmt: skip
    assert count.returncode == 0, count.stderr
    assert dataset(s3, f"{counted}/d/1.1.0") == new  # the same bytes as the local append
    total = int((tmp_path / "count").read_text())
    assert total > 10

    def kill_and_finish(n: int) -> None:
        prefix = f"{s3.name}/at-{n}"
        for name, data in old.items():
            s3.fs.pipe_file(f"{prefix}/d/1.0.0/{name}", data)
        killed = killed_at(n, s3.env, *args, "--out", f"s3://{prefix}")
        assert killed.returncode == -signal.SIGKILL, (n, killed.stderr)
        assert download_tree(s3.fs, f"{prefix}/d/1.0.0") == old, n  # the version appended to: as it was
        seen = dataset(s3, f"{prefix}/d/1.1.0")
        assert "dataset_info.json" not in seen or seen == new, n  # claimed complete only when whole
        finished = run(s3.env, "tfr-convert", *args, "--out", f"s3://{prefix}", "--resume")
        assert finished.returncode == 0, (n, finished.stderr)
        assert download_tree(s3.fs, f"{prefix}/d/1.1.0") == new, n  # and no work folder is left
        assert sorted(s3.fs.ls(f"{prefix}/d", detail=False)) == [f"{prefix}/d/1.0.0", f"{prefix}/d/1.1.0"], n

    with ThreadPoolExecutor(3) as pool:  # each kill is its own prefix: three at a time (they wait on the store)
        for future in as_completed([pool.submit(kill_and_finish, n) for n in range(1, total + 1)]):
            if future.exception() is not None:
                pool.shutdown(cancel_futures=True)
                raise future.exception()
