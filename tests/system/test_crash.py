"""Never lose a dataset: real SIGKILLs at every filesystem change, --resume, the lock, SIGTERM.

The kills are real: `kill_at.py` runs tfr-convert in a child process that sends
itself SIGKILL right after its Nth filesystem change (create, write-open,
rename, link, remove...), for every N the run makes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import write_class_folders, write_mnist

from crashing import HERE, SCRIPTS, changes_made, failed_at, files, killed_at, killed_fresh, work_dir


@pytest.fixture
def mnist(tmp_path):
    src = tmp_path / "src"
    write_mnist(src)
    return src


def test_resume_after_a_kill_at_any_filesystem_change_gives_the_uninterrupted_bytes(cli, mnist, tmp_path):
    args = ["mnist", mnist, "--examples-per-shard", "5"]
    reference = tmp_path / "reference"
    assert cli.convert(*args, "--out", reference).exit_code == 0
    expected = files(reference)
    out = tmp_path / "out"
    total = changes_made(*args, "--out", tmp_path / "counted", count_file=tmp_path / "count")
    assert total > 20  # shards, journal, metadata, swap: every step is a kill point
    resumed_with_shards_kept = 0
    for n in range(1, total + 1):
        killed_fresh(n, args, out, expected)
        journal = work_dir(out) / "journal"
        kept = journal.exists() and journal.read_text().count('"shard"')
        result = cli.convert(*args, "--out", out, "--resume", "--json")
        assert result.exit_code == 0, (n, result.output)
        assert files(out) == expected, n
        resumed = json.loads(result.stdout)["resumed"]
        if kept and "kept_shards" in resumed:  # (not a run that had finished but for tidying up)
            # every shard journaled is found, under its temporary name or, a commit begun, its final one
            assert resumed["kept_shards"] == kept, n
        assert not work_dir(out).exists(), n
        resumed_with_shards_kept += bool(kept)
    assert resumed_with_shards_kept > 5  # the resumes did go on from finished shards


@pytest.fixture
def overwrite(cli, mnist, tmp_path):
    """An old dataset in `old`, and an --overwrite run that gives another one:
    (old, that run's arguments, the old files, the files it gives)."""
    old_args = ["mnist", mnist, "--examples-per-shard", "5"]
    new_args = ["mnist", mnist, "--examples-per-shard", "7", "--seed", "1", "--overwrite"]
    old, new = tmp_path / "old", tmp_path / "new"
    assert cli.convert(*old_args, "--out", old).exit_code == 0
    assert cli.convert(*new_args, "--out", new).exit_code == 0
    assert files(old) != files(new)
    return old, new_args, files(old), files(new)


def test_a_kill_at_any_step_of_an_overwrite_leaves_the_old_or_the_new_dataset(cli, overwrite, tmp_path):
    old, new_args, old_files, new_files = overwrite
    theirs = {  # the user's files beside the dataset: --overwrite must not touch them
        "notes.txt": b"mine",
        "mine.labels.txt": b"a\nb\n",
        "other-train.tfrecord-00000-of-00001": b"another dataset's shard",
        "sub/deep.txt": b"in a folder",
    }
    pristine = tmp_path / "pristine"
    shutil.copytree(old, pristine)
    for name, data in theirs.items():
        (pristine / name).parent.mkdir(exist_ok=True)
        (pristine / name).write_bytes(data)
    out = tmp_path / "out"
    counted = shutil.copytree(pristine, tmp_path / "counted")
    total = changes_made(*new_args, "--out", counted, count_file=tmp_path / "count")
    for n in range(1, total + 1):
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work_dir(out), ignore_errors=True)
        shutil.copytree(pristine, out)
        run = killed_at(n, *new_args, "--out", out)
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        seen = files(out)
        dataset = {k: v for k, v in seen.items() if k not in theirs}
        assert dataset in (old_files, new_files), n
        # the user's files stay in place throughout (linked into the new tree before the swap);
        # only a folder of theirs is away, briefly, between the swap and its moving back
        assert all(seen.get(k) == v for k, v in theirs.items() if "/" not in k), n
        # the next run finishes or discards what the killed one left, and the user's files are all there
        result = cli.convert(*new_args, "--out", out, "--resume")
        assert result.exit_code == 0, (n, result.output)
        assert files(out) == {**new_files, **theirs}, n
        assert not work_dir(out).exists()


@pytest.fixture
def mount_point(tmp_path):
    """A tmpfs mounted at tmp_path/mounted: an output there is a mount point, so a run
    cannot build beside it and commits in place (the test runs as root, as CI does)."""
    point = tmp_path / "mounted"
    point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(point)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (not root?): {done.stderr.decode().strip()}")
    yield point
    subprocess.run(["umount", "-l", str(point)], check=False)


def _emptied(directory: Path) -> Path:
    for entry in directory.iterdir():
        shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    return directory


def _listed_shards_present(out: Path) -> list[str]:
    """The shards dataset_info.json lists that are absent or of another size (none: the
    dataset it describes is whole, or there is no dataset_info.json)."""
    import json

    if not (out / "dataset_info.json").exists():
        return []
    info = json.loads((out / "dataset_info.json").read_text())
    name, wrong = info["name"], []
    for split in info["splits"]:
        count = len(split["shardLengths"])
        for i in range(count):
            shard = out / f"{name}-{split['name']}.{info.get('fileFormat', 'tfrecord')}-{i:05d}-of-{count:05d}"
            if not shard.exists():
                wrong.append(shard.name)
    return wrong


def test_a_kill_at_any_step_of_an_in_place_overwrite_never_leaves_metadata_naming_absent_shards(
    cli, overwrite, mount_point, tmp_path
):
    old, new_args, _, new_files = overwrite
    theirs = {"notes.txt": b"mine", "sub/deep.txt": b"in a folder"}
    pristine = tmp_path / "pristine"
    shutil.copytree(old, pristine)
    for name, data in theirs.items():
        (pristine / name).parent.mkdir(exist_ok=True)
        (pristine / name).write_bytes(data)
    out = mount_point
    shutil.copytree(pristine, out, dirs_exist_ok=True)
    total = changes_made(*new_args, "--out", out, count_file=tmp_path / "count")
    assert files(out) == {**new_files, **theirs} and total > 20
    in_place = out / ".tfr-convert"
    for n in range(1, total + 1):
        shutil.copytree(pristine, _emptied(out), dirs_exist_ok=True)
        run = killed_at(n, *new_args, "--out", out)
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        assert _listed_shards_present(out) == [], n  # metadata never names a shard that is not there
        for name, data in theirs.items():
            assert (out / name).read_bytes() == data, n
        result = cli.convert(*new_args, "--out", out, "--resume")
        assert result.exit_code == 0, (n, result.output)
        assert {k: v for k, v in files(out).items() if not k.startswith(".tfr-convert")} == {**new_files, **theirs}, n
        assert not in_place.exists() or not any(in_place.iterdir()), n


def test_an_output_mounted_in_place_is_refused_when_it_holds_other_files_and_its_own_work_does_not_count(
    cli, mnist, mount_point
):
    assert cli.convert("mnist", mnist, "--out", mount_point).exit_code == 0  # empty: its lock's folder aside
    assert cli.convert("mnist", mnist, "--out", mount_point, "--overwrite").exit_code == 0
    _emptied(mount_point)
    (mount_point / "notes.txt").write_text("mine")
    refused = cli.convert("mnist", mnist, "--out", mount_point)
    assert refused.exit_code == 1 and "not empty (use --overwrite" in refused.output
    assert sorted(p.name for p in mount_point.iterdir()) == ["notes.txt"]


def test_an_output_whose_parent_the_user_cannot_write_keeps_its_work_inside_it():
    """Where a run cannot build beside OUT (its parent is not writable), it works in OUT."""
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("takes another user's rights: needs root")
    top = Path(tempfile.mkdtemp(prefix="tfr-rights-"))  # /tmp: a user other than root can reach it
    try:
        top.chmod(0o755)
        (top / "parent" / "out").mkdir(parents=True)
        (top / "parent").chmod(0o555)
        code = (
            "import os, sys\nfrom tfr_convert.output.local import LocalOutput\nos.setuid(65534)\n"
            "print(LocalOutput._work_of(sys.argv[1]))"
        )
        found = subprocess.run(
            [sys.executable, "-c", code, str(top / "parent" / "out")], capture_output=True, text=True
        )
        assert found.returncode == 0, found.stderr
        assert found.stdout.strip() == str((True, str(top / "parent" / "out" / ".tfr-convert")))
    finally:
        (top / "parent").chmod(0o755)
        shutil.rmtree(top)


def test_a_lock_file_released_while_it_was_being_taken_is_taken_anew(tmp_path, monkeypatch):
    """The holder before unlinks its lock file between this run's open and lock: the file
    locked then is no longer the lock, and a run after would take the new one alongside."""
    import fcntl

    from tfr_convert.output.local import Lock

    path = str(tmp_path / "lock")
    real, calls = fcntl.lockf, []

    def released_meanwhile(fd, operation):
        if not calls:
            os.unlink(path)
        calls.append(operation)
        return real(fd, operation)

    monkeypatch.setattr(fcntl, "lockf", released_meanwhile)
    first = Lock(path)
    first.acquire("out")
    assert len(calls) == 2  # the unlinked file given up, the new one locked
    code = "import sys\nfrom tfr_convert.output.local import Lock\nLock(sys.argv[1]).acquire('out')"
    second = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True)
    assert second.returncode == 1 and "another tfr-convert run" in second.stderr, second.stderr
    first.release()


def test_a_swap_that_fails_for_a_reason_of_its_own_says_which(tmp_path):
    from tfr_convert.output.local import exchange

    (tmp_path / "a").mkdir()
    with pytest.raises(FileNotFoundError):
        exchange(str(tmp_path / "a"), str(tmp_path / "absent"))


def test_a_swap_the_kernel_cannot_make_says_so_and_the_commit_falls_back(tmp_path, monkeypatch):
    """EINVAL (here: a folder swapped with one inside it) is renameat2's answer for a swap
    it cannot make, as where a filesystem lacks RENAME_EXCHANGE; and a C library without
    renameat2, or none loadable: no swap either."""
    import ctypes

    from tfr_convert.output.local import exchange

    (tmp_path / "a" / "b").mkdir(parents=True)
    assert exchange(str(tmp_path / "a"), str(tmp_path / "a" / "b")) is False
    assert (tmp_path / "a" / "b").is_dir()

    class Without:  # a C library of an older system: no renameat2 in it
        def __init__(self, *args, **kwargs):
            pass

    monkeypatch.setattr(ctypes, "CDLL", Without)
    assert exchange(str(tmp_path / "a"), str(tmp_path / "c")) is False

    def unloadable(*args, **kwargs):
        raise OSError("no C library")

    monkeypatch.setattr(ctypes, "CDLL", unloadable)
    assert exchange(str(tmp_path / "a"), str(tmp_path / "c")) is False


def test_a_lock_file_is_made_readable_by_all_and_writable_by_its_owner_only(tmp_path):
    import stat

    from tfr_convert.output.local import Lock

    lock = Lock(str(tmp_path / "work" / "lock"))
    old = os.umask(0)
    try:
        lock.acquire("out")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(lock.path).st_mode) == 0o644
    assert (tmp_path / "work" / "lock").read_text() == f"{os.getpid()}\n"
    lock.release()


def test_a_lock_whose_folder_is_removed_as_it_is_opened_is_taken_in_a_new_one(tmp_path, monkeypatch):
    """A run that just ended removes the work folder between this one's making it and
    opening the lock file in it: made again, and the lock taken."""
    from tfr_convert.output.local import Lock

    path = str(tmp_path / "work" / "lock")
    real, removed = os.open, []

    def folder_gone_first(name, *args, **kwargs):
        if name == path and not removed:
            removed.append(name)
            shutil.rmtree(tmp_path / "work")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", folder_gone_first)
    lock = Lock(path)
    lock.acquire("out")
    assert removed and os.path.exists(path)
    lock.release()


def test_a_lock_it_cannot_write_its_pid_into_is_let_go(tmp_path):
    """Writing the holder's pid fails (a file size limit of 0 bytes here): the error is
    raised and the lock file is gone, not left locked by a run that failed to take it."""
    code = (
        "import resource, signal, sys\n"
        "from tfr_convert.output.local import Lock\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
        "try:\n"
        "    Lock(sys.argv[1]).acquire('out')\n"
        "except OSError as e:\n"
        "    print(e.errno)\n"
    )
    path = tmp_path / "work" / "lock"
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == str(__import__("errno").EFBIG), done.stderr
    assert not path.exists()


def test_an_output_whose_parent_cannot_be_made_is_named_in_the_error(cli, mnist, tmp_path):
    (tmp_path / "file").write_text("a file where a folder of the output's path goes")
    result = cli.convert("mnist", mnist, "--out", tmp_path / "file" / "out")
    assert result.exit_code == 1
    assert f"{tmp_path / 'file'}: cannot create the output's parent directory" in result.output


def test_a_work_folder_that_cannot_be_made_is_named_in_the_error(cli, mnist, tmp_path):
    (tmp_path / ".out.tfr-convert").write_text("a file where the work folder goes")
    result = cli.convert("mnist", mnist, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{tmp_path / '.out.tfr-convert'}: cannot create the work directory" in result.output


def test_an_overwrite_after_an_interrupted_run_starts_over_and_leaves_none_of_its_work(cli, mnist, tmp_path):
    out, reference = tmp_path / "out", tmp_path / "reference"
    args = ["mnist", mnist, "--examples-per-shard", "5"]
    fewer = ["mnist", mnist, "--examples-per-shard", "50", "--seed", "3"]  # fewer shards than the interrupted run
    assert cli.convert(*fewer, "--out", reference).exit_code == 0
    assert killed_at(10, *args, "--out", out).returncode == -signal.SIGKILL
    assert cli.convert(*fewer, "--out", out, "--overwrite").exit_code == 0
    assert files(out) == files(reference) and not work_dir(out).exists()


def test_resume_rewrites_a_finished_shard_replaced_by_a_valid_one_of_its_size(cli, mnist, tmp_path):
    """A shard whose records all read (CRCs right) but whose bytes are not those journaled."""
    from tfr_convert.containers.framing import frame
    from tfr_convert.containers.tfrecord import read_records

    out, reference = tmp_path / "out", tmp_path / "reference"
    args = ["mnist", mnist, "--examples-per-shard", "5"]
    assert cli.convert(*args, "--out", reference).exit_code == 0
    assert killed_at(10, *args, "--out", out).returncode == -signal.SIGKILL
    shard = sorted((work_dir(out) / "new").glob(".tfr-convert-tmp-train-*"))[0]
    records = [bytearray(r.data) for r in read_records(str(shard))]
    records[0][-1] ^= 1  # the last byte of the first record's payload, framed anew
    replaced = b"".join(frame(bytes(r)) for r in records)
    assert len(replaced) == shard.stat().st_size and replaced != shard.read_bytes()
    shard.write_bytes(replaced)
    assert cli.convert(*args, "--out", out, "--resume").exit_code == 0
    assert files(out) == files(reference)


def test_a_repair_run_killed_at_its_commit_then_resumed_leaves_the_whole_dataset(cli, mnist, tmp_path):
    """DIR holds this very command's output with a shard deleted, so the repair run's new
    manifest equals the damaged dataset's byte for byte: the commit's recovery must tell the
    two sides of the swap apart by something else than their contents."""
    args = ["mnist", mnist, "--examples-per-shard", "5", "--overwrite"]
    whole = tmp_path / "whole"
    assert cli.convert(*args, "--out", whole).exit_code == 0
    expected = files(whole)
    damaged = tmp_path / "damaged"
    shutil.copytree(whole, damaged)
    next(damaged.glob("mnist-train.tfrecord-00003-*")).unlink()
    out = tmp_path / "out"
    counted = shutil.copytree(damaged, tmp_path / "counted")
    total = changes_made(*args, "--out", counted, count_file=tmp_path / "count")
    for n in range(1, total + 1):
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work_dir(out), ignore_errors=True)
        shutil.copytree(damaged, out)
        run = killed_at(n, *args, "--out", out)
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        assert files(out) in (files(damaged), expected), n
        result = cli.convert(*args, "--out", out, "--resume")
        assert result.exit_code == 0, (n, result.output)
        assert files(out) == expected, n
        assert not work_dir(out).exists(), n


def test_recovery_tells_an_unswapped_commit_by_the_trees_inode_not_by_the_manifest(cli, mnist, tmp_path):
    """Killed after the commit's marker was written and before the swap, with the damaged old
    dataset's manifest equal to the new one: the new build is kept (for --resume), DIR untouched."""
    from tfr_convert.output.local import LocalOutput

    args = ["mnist", mnist, "--examples-per-shard", "5"]
    out = tmp_path / "out"
    assert cli.convert(*args, "--out", out).exit_code == 0
    whole = files(out)
    next(out.glob("mnist-train.tfrecord-00003-*")).unlink()
    damaged = files(out)
    work = work_dir(out)
    shutil.copytree(tmp_path / "out", work / "new")
    missing = next(name for name in whole if name not in damaged)
    (work / "new" / missing).write_bytes(whole[missing])  # the build: the whole dataset again
    built = os.stat(work / "new")
    (work / "committing").write_text(f"{built.st_dev}:{built.st_ino}")  # as the commit writes it
    with LocalOutput(str(out), overwrite=True, resume=True):
        assert files(out) == damaged  # not taken for swapped
        assert files(work / "new") == whole  # kept
        assert not (work / "committing").exists()


def test_a_write_failing_at_any_step_of_an_overwrite_is_reported_and_leaves_a_whole_dataset(cli, overwrite, tmp_path):
    old, new_args, old_files, new_files = overwrite
    out = tmp_path / "out"
    total = changes_made(*new_args, "--out", shutil.copytree(old, tmp_path / "counted"), count_file=tmp_path / "n")
    outcomes = set()
    for n in range(1, total + 1):
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work_dir(out), ignore_errors=True)
        shutil.copytree(old, out)
        run = failed_at(n, *new_args, "--out", out, failed_on=tmp_path / "failed-on")
        stderr = run.stderr.decode()
        assert "Traceback" not in stderr, (n, stderr)
        dataset = files(out)
        # exit 0: a failure the run may ignore (a mkdir of a folder that exists)
        assert run.returncode == 0 or (run.returncode == 1 and "No space left on device" in stderr), (n, stderr)
        if run.returncode == 0 or "the new dataset is in place" in stderr:  # only tidying up after the swap failed
            assert dataset == new_files, n
            if run.returncode:  # the error names what could not be tidied, not only the work folder
                failed = (tmp_path / "failed-on").read_text()
                assert f"{failed}: No space left on device: the new dataset is in place" in stderr, (n, stderr)
        else:
            assert dataset == old_files, n  # nothing of the failed run is final
        outcomes.add(dataset == new_files)
        assert cli.inspect(out, "--verify").exit_code == 0, n
        result = cli.convert(*new_args, "--out", out)  # the next run finishes or clears what is left
        assert result.exit_code == 0, (n, result.output)
        assert files(out) == new_files and not work_dir(out).exists(), n
    assert outcomes == {True, False}


def test_overwrite_replaces_only_the_old_datasets_files_and_a_folder_in_the_way_stops_it(cli, mnist, tmp_path):
    out = tmp_path / "out"
    assert cli.convert("mnist", mnist, "--out", out, "--examples-per-shard", "5").exit_code == 0
    (out / "user.labels.txt").write_text("mine\n")
    (out / "notes").mkdir()
    (out / "notes" / "n.txt").write_bytes(b"x")
    before = files(out)
    (out / "mnist-train.tfrecord-00000-of-00002").mkdir()  # where the new dataset's first shard goes
    result = cli.convert("mnist", mnist, "--out", out, "--examples-per-shard", "30", "--overwrite")
    assert result.exit_code == 1
    assert "mnist-train.tfrecord-00000-of-00002: a folder is in the way" in result.output
    assert files(out) == before  # the old dataset, whole
    assert not work_dir(out).exists()
    (out / "mnist-train.tfrecord-00000-of-00002").rmdir()
    (out / "mnist-train.tfrecord-00001-of-00002").write_text("a file named like a new shard: replaced")
    (out / "link").symlink_to("notes/n.txt")  # the user's symlink stays one
    assert cli.convert("mnist", mnist, "--out", out, "--examples-per-shard", "30", "--overwrite").exit_code == 0
    assert (out / "link").is_symlink() and os.readlink(out / "link") == "notes/n.txt"
    after = files(out)
    assert after["user.labels.txt"] == b"mine\n" and after["notes/n.txt"] == b"x"
    assert not [name for name in after if name.startswith("mnist-train.tfrecord-") and name.endswith("-of-00008")]
    assert cli.inspect(out, "--verify").exit_code == 0


def test_resume_refuses_another_runs_work_naming_what_differs(cli, mnist, tmp_path):
    out = tmp_path / "out"
    args = ["mnist", mnist, "--out", out, "--examples-per-shard", "5"]
    assert killed_at(25, *args).returncode == -signal.SIGKILL
    result = cli.convert(*args, "--resume", "--seed", "3")
    assert result.exit_code == 1
    assert "cannot --resume" in result.output and "options.seed: 0 then, 3 now" in result.output
    plain = cli.convert(*args)
    assert plain.exit_code == 1 and "--resume to finish it, or with --overwrite to start over" in plain.output
    assert cli.convert(*args, "--resume").exit_code == 0
    assert cli.inspect(out, "--verify").exit_code == 0


def test_resume_rewrites_a_finished_shard_that_was_damaged(cli, mnist, tmp_path):
    out, reference = tmp_path / "out", tmp_path / "reference"
    args = ["mnist", mnist, "--examples-per-shard", "5"]
    assert cli.convert(*args, "--out", reference).exit_code == 0
    assert killed_at(10, *args, "--out", out).returncode == -signal.SIGKILL  # 4 train shards written
    shards = sorted((work_dir(out) / "new").glob(".tfr-convert-tmp-train-*"))
    assert len(shards) >= 3
    data = bytearray(shards[1].read_bytes())
    data[100] ^= 1
    shards[1].write_bytes(bytes(data))
    assert cli.convert(*args, "--out", out, "--resume").exit_code == 0
    assert files(out) == files(reference)


def _start(*args) -> subprocess.Popen:
    # SIGINT as a terminal gives it: a suite started in the background by a shell without
    # job control has it ignored, and a child would inherit that
    return subprocess.Popen(
        [str(SCRIPTS / "tfr-convert"), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.fixture
def slow_images(tmp_path):
    """A folder of PNGs that takes a run some seconds to re-encode (to catch it mid-run)."""
    import numpy as np
    from PIL import Image

    root = tmp_path / "images"
    rng = np.random.default_rng(0)
    for c in ("a", "b"):
        (root / c).mkdir(parents=True)
        for i in range(60):
            Image.fromarray(rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)).save(root / c / f"{i}.png")
    return root


def test_a_second_run_into_a_held_output_is_refused_and_the_first_finishes(cli, slow_images, tmp_path):
    out = tmp_path / "out"
    args = ["images", slow_images, "--out", out, "--image-format", "png", "--workers", "1", "--quiet"]
    first = _start(*args)
    lock = work_dir(out) / "lock"
    _wait_for(lambda: lock.exists() and lock.read_text().strip() == str(first.pid))
    first.send_signal(signal.SIGSTOP)  # hold it mid-run
    try:
        second = cli.convert(*args)
        overwrite = cli.convert(*args, "--overwrite")
    finally:
        first.send_signal(signal.SIGCONT)
    for result in (second, overwrite):
        assert result.exit_code == 1
        assert f"another tfr-convert run (pid {first.pid}) is writing this output" in result.output
    assert first.wait(timeout=120) == 0
    assert cli.inspect(out, "--verify").exit_code == 0
    assert not work_dir(out).exists()


@pytest.mark.parametrize("command", ["images", "records", "mnist"])
def test_the_lock_is_held_before_the_first_input_is_read_and_refuses_a_second_run_then(
    cli, mnist, slow_images, tmp_path, command
):
    if command == "records":
        assert cli.convert("mnist", mnist, "--out", tmp_path / "digits", "--quiet").exit_code == 0
    src = {"images": slow_images, "records": tmp_path / "digits", "mnist": mnist}[command]
    out, order = tmp_path / "out", tmp_path / "order"
    args = [command, src, "--out", out, "--quiet"]
    env = {**os.environ, "INPUT": str(src), "ORDER_TO": str(order)}
    first = subprocess.Popen([sys.executable, str(HERE / "first_read.py"), *map(str, args)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        _wait_for(lambda: order.exists() and order.read_text().endswith("\n"), timeout=60)
        assert order.read_text() == "locked\n"  # stopped at its first read of an input, holding the lock
        second = cli.convert(*args, "--overwrite")
    finally:
        first.send_signal(signal.SIGCONT)
    assert second.exit_code == 1
    assert f"another tfr-convert run (pid {first.pid}) is writing this output" in second.output
    _, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert cli.inspect(out, "--verify").exit_code == 0
    assert not work_dir(out).exists()


def test_a_dead_runs_lock_does_not_block(cli, mnist, tmp_path):
    out = tmp_path / "out"
    work_dir(out).mkdir()
    (work_dir(out) / "lock").write_text("999999\n")  # its holder is gone: the kernel holds no lock
    assert cli.convert("mnist", mnist, "--out", out).exit_code == 0
    assert not work_dir(out).exists()


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_a_run_keeping_its_shards_exit_128_plus_it_and_resume_finishes_it(
    cli, slow_images, tmp_path, sent, code
):
    out, reference = tmp_path / "out", tmp_path / "reference"
    args = ["images", slow_images, "--image-format", "png", "--workers", "2", "--examples-per-shard", "4", "--quiet"]
    run = _start(*args, "--out", out)
    journal = work_dir(out) / "journal"
    _wait_for(lambda: journal.exists() and journal.read_text().count('"shard"') >= 2)
    run.send_signal(sent)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == code  # as a shell reports a process ended by that signal
    assert b"interrupted; the finished shards are kept in" in stderr and b"Traceback" not in stderr
    assert not out.exists()
    left = os.listdir(work_dir(out) / "new")
    assert left and all(name.startswith(".tfr-convert-tmp-") for name in left)
    assert not (work_dir(out) / "lock").exists()
    assert cli.convert(*args, "--out", out, "--resume").exit_code == 0
    assert cli.convert(*args, "--out", reference).exit_code == 0
    assert files(out) == files(reference)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:  # a thread that ended (a shard's hashing thread) since the listing
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_workers_do_not_outlive_a_killed_parent(slow_images, tmp_path):
    # --workers 3: two worker processes (the parent is the third)
    run = _start("images", slow_images, "--out", tmp_path / "out", "--image-format", "png", "--workers", "3")
    _wait_for(lambda: len(_children(run.pid)) >= 2)
    workers = _children(run.pid)
    run.kill()
    run.wait(timeout=30)
    deadline = time.monotonic() + 5
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_killed_worker_ends_the_run_with_its_signal_named_and_resume_finishes_it(cli, slow_images, tmp_path):
    out, whole = tmp_path / "out", tmp_path / "whole"
    args = ["images", slow_images, "--image-format", "png", "--workers", "2", "--examples-per-shard", "10", "--quiet"]
    run = _start(*args, "--out", out)
    journal = work_dir(out) / "journal"
    _wait_for(lambda: journal.exists() and b'"shard"' in journal.read_bytes())  # a shard is finished
    os.kill(_children(run.pid)[0], signal.SIGKILL)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 1
    message = stderr.decode()
    assert message.startswith("error: worker process ") and message.count("\n") == 1, message
    assert "killed by SIGKILL (out of memory?)" in message and "--resume" in message
    assert not out.exists()  # nothing at the final name
    assert cli.convert(*args, "--out", out, "--resume").exit_code == 0
    assert cli.convert(*args, "--out", whole).exit_code == 0
    assert files(out) == files(whole)


def _small_images(root: Path, seed: int) -> None:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    for c in ("a", "b"):
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(12):
            size = 8 + seed  # another seed, another size: a new file is not mistaken for the old
            Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(root / c / f"{i}.png")


def test_resume_refuses_images_replaced_since_the_interrupted_run_naming_the_first(cli, tmp_path):
    root, out = tmp_path / "images", tmp_path / "out"
    _small_images(root, seed=0)
    args = ["images", root, "--out", out, "--examples-per-shard", "2", "--workers", "1"]
    assert killed_at(8, *args).returncode == -signal.SIGKILL
    assert list((work_dir(out) / "new").glob(".tfr-convert-tmp-*"))  # shards of the old images kept
    _small_images(root, seed=1)  # every image: new bytes, size and modification time
    result = cli.convert(*args, "--resume")
    assert result.exit_code == 1, result.output
    assert "cannot --resume: " in result.output and "changed (size " in result.output
    named = result.output.split("cannot --resume: ")[1].split(" changed")[0]
    assert Path(named).parent.parent == root and Path(named).exists()
    assert "Traceback" not in result.output and not out.exists()
    assert cli.convert(*args, "--overwrite").exit_code == 0
    assert cli.inspect(out, "--verify").exit_code == 0


def test_resume_names_an_image_replaced_with_one_of_its_size_and_time(cli, tmp_path):
    """A file moved over another (its size and modification time copied) is told by its inode."""
    root, out, reference = tmp_path / "images", tmp_path / "out", tmp_path / "reference"
    _small_images(root, seed=0)
    args = ["images", root, "--examples-per-shard", "2", "--workers", "1"]
    assert killed_at(8, *args, "--out", out).returncode == -signal.SIGKILL
    victim, other = root / "b" / "7.png", root / "b" / "6.png"
    data = other.read_bytes()  # another picture of the same size (noise compresses to a fixed size)
    assert len(data) == victim.stat().st_size and data != victim.read_bytes()
    stat = victim.stat()
    fresh = tmp_path / "fresh.png"
    fresh.write_bytes(data)
    os.utime(fresh, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(fresh, victim)
    result = cli.convert(*args, "--out", out, "--resume")
    assert result.exit_code == 1
    assert f"cannot --resume: {victim} changed (inode)" in result.output
    assert cli.convert(*args, "--out", out, "--overwrite").exit_code == 0
    assert cli.convert(*args, "--out", reference).exit_code == 0
    assert files(out) == files(reference)


def test_resume_over_unchanged_images_gives_the_uninterrupted_bytes(cli, tmp_path):
    root, out, reference = tmp_path / "images", tmp_path / "out", tmp_path / "reference"
    _small_images(root, seed=0)
    args = ["images", root, "--examples-per-shard", "2", "--workers", "1"]
    assert killed_at(8, *args, "--out", out).returncode == -signal.SIGKILL
    assert cli.convert(*args, "--out", out, "--resume").exit_code == 0
    assert cli.convert(*args, "--out", reference).exit_code == 0
    assert files(out) == files(reference)


def test_resume_of_a_detection_run_refuses_an_image_changed_since(cli, tmp_path):
    from PIL import Image

    images, out = tmp_path / "images", tmp_path / "out"
    images.mkdir()
    rows = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
    for i in range(8):
        Image.new("RGB", (20, 10 + i), (i * 20, 5, 5)).save(images / f"{i}.png")
        rows.append(f"{i}.png,20,{10 + i},cat,1,1,9,9")
    (tmp_path / "boxes.csv").write_text("\n".join(rows) + "\n")
    args = ["detection", images, "--annotations", tmp_path / "boxes.csv", "--out", out, "--examples-per-shard", "1"]
    assert killed_at(8, *args, "--workers", "1").returncode == -signal.SIGKILL
    Image.new("RGB", (20, 15), (0, 0, 0)).save(images / "5.png")  # redrawn, same size in pixels
    result = cli.convert(*args, "--workers", "1", "--resume")
    assert result.exit_code == 1
    assert f"cannot --resume: {images / '5.png'} changed (" in result.output


def _interrupted_segmentation(tmp_path: Path) -> tuple[Path, Path, list]:
    """(pictures, masks, the arguments of a segmentation run killed after its 8th change);
    the pictures are JPEGs, the masks PNGs: a picture and its mask have two names."""
    from PIL import Image

    images, masks, out = tmp_path / "images", tmp_path / "masks", tmp_path / "out"
    images.mkdir()
    masks.mkdir()
    for i in range(8):
        Image.new("RGB", (6, 5 + i), (i * 20, 5, 5)).save(images / f"{i}.jpg")
        Image.new("L", (6, 5 + i), i % 2).save(masks / f"{i}.png")
    args = ["segmentation", images, "--masks", masks, "--out", out, "--examples-per-shard", "1", "--workers", "1"]
    assert killed_at(8, *args).returncode == -signal.SIGKILL
    return images, masks, args


def test_resume_of_a_segmentation_run_refuses_a_picture_changed_since(cli, tmp_path):
    """Its items' files are the pictures, under the first of its two roots (the masks' is the other)."""
    from PIL import Image

    images, _, args = _interrupted_segmentation(tmp_path)
    Image.new("RGB", (6, 10), (0, 0, 0)).save(images / "5.jpg")  # redrawn, same size in pixels
    result = cli.convert(*args, "--resume")
    assert result.exit_code == 1, result.output
    assert f"cannot --resume: {images / '5.jpg'} changed (" in result.output
    Image.new("RGB", (6, 10), (5 * 20, 5, 5)).save(images / "5.jpg")  # as it was, but for its time
    os.utime(images / "5.jpg", ns=(0, 0))
    result = cli.convert(*args, "--resume")
    assert f"cannot --resume: {images / '5.jpg'} changed (modification time)" in result.output


def test_resume_of_a_segmentation_run_refuses_a_mask_changed_since(cli, tmp_path):
    """A mask is read with its picture: one redrawn since the interrupted run (same size
    in pixels, other classes) would otherwise be mixed with the shards kept."""
    from PIL import Image

    _, masks, args = _interrupted_segmentation(tmp_path)
    Image.new("L", (6, 5), 1).save(masks / "0.png")  # its shard was written before the kill
    result = cli.convert(*args, "--resume")
    assert result.exit_code == 1, result.output
    assert f"cannot --resume: {masks / '0.png'} changed (" in result.output
    assert cli.convert(*args, "--overwrite").exit_code == 0  # starting over takes the new mask


def _edit_journal(out: Path, line: int, edit) -> None:
    import json

    journal = work_dir(out) / "journal"
    lines = journal.read_text().splitlines()
    entry = json.loads(lines[line])
    edit(entry)
    lines[line] = json.dumps(entry, sort_keys=True)
    journal.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    "edit",
    [
        lambda e: e.update(shard="mnist-train-00001"),  # a string where the shard's record was
        lambda e: e["shard"].update(records=e["shard"]["records"] - 1),  # one record fewer claimed
        lambda e: e["shard"].update(records="5"),
        lambda e: e.update(cutter=[1, 2]),
        lambda e: e.update(tally=[]),
    ],
    ids=["shard-a-string", "records-one-fewer", "records-a-string", "cutter-short", "tally-a-list"],
)
def test_resume_does_not_believe_an_edited_journal_line(cli, mnist, tmp_path, edit):
    out, reference = tmp_path / "out", tmp_path / "reference"
    # one worker: its shards are journaled as they close (with more, a shard's line waits
    # for its hash on the write pool, so which lines a kill leaves depends on timing)
    args = ["mnist", mnist, "--examples-per-shard", "5", "--workers", "1"]
    assert cli.convert(*args, "--out", reference).exit_code == 0
    assert killed_at(10, *args, "--out", out).returncode == -signal.SIGKILL  # 4 train shards journaled
    _edit_journal(out, 2, edit)  # the second shard's line
    result = cli.convert(*args, "--out", out, "--resume")  # an exception would propagate here
    assert result.exit_code == 0, result.output
    assert files(out) == files(reference)  # the metadata's counts too
    assert cli.inspect(out, "--verify").exit_code == 0


def test_a_resumed_run_says_how_many_shards_it_kept_and_a_finished_one_that_it_was(cli, mnist, tmp_path):
    import json
    import re

    out = tmp_path / "out"
    args = [
        "mnist",
        mnist,
        "--out",
        out,
        "--examples-per-shard",
        "5",
        "--workers",
        "1",
    ]  # (as above: lines as shards close)
    assert killed_at(10, *args).returncode == -signal.SIGKILL
    kept = len([line for line in (work_dir(out) / "journal").read_text().splitlines() if '"shard"' in line])
    resumed = cli.convert(*args, "--resume")
    assert resumed.exit_code == 0
    m = re.search(r"\(resumed: (\d+) of (\d+) shards kept from the interrupted run\)", resumed.stdout)
    assert m and int(m[1]) == kept > 0 and int(m[2]) == len(list(out.glob("*.tfrecord-*")))
    again = cli.convert(*args, "--resume", "--json")
    assert json.loads(again.stdout)["resumed"] == {"already_complete": True}
    assert "(already complete: nothing written)" in cli.convert(*args, "--resume").stdout
    assert "resumed" not in json.loads(cli.convert(*args, "--overwrite", "--json").stdout)


def test_resume_with_nothing_to_resume_says_so_and_converts_from_the_start(cli, mnist, tmp_path):
    out, reference = tmp_path / "out", tmp_path / "reference"
    result = cli.convert("mnist", mnist, "--out", out, "--resume")
    assert result.exit_code == 0, result.output
    assert f"note: --resume found no interrupted run to finish in {out}: converted from the start" in result.stderr
    assert cli.convert("mnist", mnist, "--out", reference).exit_code == 0
    assert files(out) == files(reference)
    as_json = cli.convert("mnist", mnist, "--out", tmp_path / "json", "--resume", "--json")
    assert json.loads(as_json.stdout)["resumed"] == {"nothing_to_resume": True}


def test_a_kill_at_any_step_of_an_append_leaves_every_version_whole_and_resume_finishes_it(cli, tmp_path):
    first, second, base = tmp_path / "b1", tmp_path / "b2", tmp_path / "base"
    write_class_folders(first, ["a", "b"], 6, seed=0)
    write_class_folders(second, ["b", "c"], 5, seed=1)  # c: a new class, numbered after a and b
    shards = ["--examples-per-shard", "3", "--split", "train=0.6,test=0.4"]
    assert cli.convert("images", first, "--out", base, "--append", "--name", "d", *shards).exit_code == 0
    args = ["images", second, "--append", *shards, "--workers", "1"]
    reference = shutil.copytree(base, tmp_path / "reference")
    assert cli.convert(*args, "--out", reference).exit_code == 0
    old, new = files(base / "d" / "1.0.0"), files(reference / "d" / "1.1.0")
    total = changes_made(*args, "--out", shutil.copytree(base, tmp_path / "counted"), count_file=tmp_path / "count")
    assert total > 10
    out = tmp_path / "out"
    for n in range(1, total + 1):
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(base, out)
        run = killed_at(n, *args, "--out", out)
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        assert files(out / "d" / "1.0.0") == old, n  # the version appended to: as it was, at every step
        assert files(out / "d" / "1.1.0") in ({}, new), n  # the new one: absent or whole
        result = cli.convert(*args, "--out", out, "--resume")
        assert result.exit_code == 0, (n, result.output)
        assert files(out / "d") == files(reference / "d"), n
        assert sorted(p.name for p in (out / "d").iterdir()) == ["1.0.0", "1.1.0"], n  # nothing left over
