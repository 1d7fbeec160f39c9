"""The local output at its seams: the lock it holds, the user's files at the swap, and a
commit a killed run left for the next one to finish (output/local.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import write_mnist

from tfr_convert.dataset.naming import COMMITTING, WORK_FOLDER
from tfr_convert.output import local
from tfr_convert.output.local import LocalOutput, release


def _work(out: Path) -> Path:
    return out.parent / f".{out.name}{WORK_FOLDER}"


def test_an_output_releases_the_lock_it_took_and_leaves_one_it_was_given(tmp_path):
    own = tmp_path / "own"
    out = LocalOutput(str(own), overwrite=False, resume=False)
    assert (_work(own) / "lock").exists()
    out.close()
    assert not (_work(own) / "lock").exists()
    out.close()  # a second close has nothing left to let go of
    given = tmp_path / "given"
    lock = LocalOutput.claim(str(given))  # as the command line takes it, before reading any input
    LocalOutput(str(given), overwrite=False, resume=False, lock=lock).close()
    assert Path(lock.path).exists()  # its taker releases it
    release(lock)
    assert not Path(lock.path).exists()


def test_the_users_files_are_in_the_new_tree_when_it_is_swapped_in_even_beside_one_named_like_a_new_file(
    tmp_path, monkeypatch
):
    """Each of DIR's other files is linked into the new tree before the swap, so none is
    ever missing from DIR; one named like a file of the new dataset is replaced, and the
    linking goes on past it (names listed after it in any order the filesystem gives)."""
    out = tmp_path / "out"
    out.mkdir()
    theirs = {f"notes-{i:02d}.txt": f"note {i}".encode() for i in range(40)}
    for i, (name, data) in enumerate(theirs.items()):
        (out / name).write_bytes(data)
        if i == 20:
            (out / "features.json").write_bytes(b"the user's, named like the new dataset's")
    at_swap: list[set[str]] = []
    swap = local.exchange

    def watched(a: str, b: str) -> bool:
        at_swap.append(set(os.listdir(a)))
        return swap(a, b)

    monkeypatch.setattr(local, "exchange", watched)
    with LocalOutput(str(out), overwrite=True, resume=False) as output:
        output.commit([], {"features.json": b"{}", "dataset_info.json": b"{}"})
    assert len(at_swap) == 1 and set(theirs) <= at_swap[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {
        **theirs,
        "features.json": b"{}",
        "dataset_info.json": b"{}",
    }
    assert not _work(out).exists()


def test_a_run_into_an_output_removed_after_a_killed_commit_starts_afresh(cli, tmp_path):
    """Killed after its swap, while tidying up, a run leaves its commit's record; the user
    then removes OUT (and the old tree is already gone): nothing is left to finish, and the
    next run converts as into a new output."""
    src, out = tmp_path / "src", tmp_path / "out"
    write_mnist(src)
    _work(out).mkdir()
    (_work(out) / COMMITTING).write_text("2049:123456")  # the identity of a tree no longer there
    result = cli.convert("mnist", src, "--out", out)
    assert result.exit_code == 0, result.output
    assert (out / "dataset_info.json").exists() and not _work(out).exists()
    assert cli.inspect(out, "--verify").exit_code == 0


def test_a_file_of_the_users_that_cannot_be_linked_is_moved_back_after_the_swap():
    """With protected hard links (fs.protected_hardlinks = 1) a user may not link a file
    they can neither read and write nor own: such a file is left out of the new tree and
    moved back into DIR after the swap, as a folder is."""
    if os.geteuid() != 0:
        pytest.skip("takes another user's rights: needs root")
    if Path("/proc/sys/fs/protected_hardlinks").read_text().strip() != "1":
        pytest.skip("hard links are not protected here")
    top = Path(tempfile.mkdtemp(prefix="tfr-links-"))  # /tmp: a user other than root can reach it
    try:
        top.chmod(0o755)
        out = top / "parent" / "out"
        out.mkdir(parents=True)
        (out / "root-owned.txt").write_bytes(b"root's")
        (out / "root-owned.txt").chmod(0o644)  # others may read it, not write it: no link for them
        for path in (top / "parent", out):
            os.chown(path, 65534, 65534)
        code = (  # what it imports is imported first: this interpreter's files may be root's only
            "import ctypes, encodings.ascii, fcntl, os, sys\nfrom tfr_convert.output.local import LocalOutput\n"
            "os.setgid(65534)\nos.setuid(65534)\n"
            "with LocalOutput(sys.argv[1], overwrite=True, resume=False) as out:\n"
            "    out.commit([], {'features.json': b'{}'})\n"
        )
        done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert sorted(p.name for p in out.iterdir()) == ["features.json", "root-owned.txt"]
        assert (out / "root-owned.txt").read_bytes() == b"root's" and (out / "root-owned.txt").stat().st_uid == 0
    finally:
        shutil.rmtree(top)
