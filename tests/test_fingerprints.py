"""The stats --resume compares item files by (fingerprints.py), and the journal naming
the first changed file."""

from __future__ import annotations

import os

import pytest

from tfr_convert.errors import OutputError
from tfr_convert.output.journal import Journal
from tfr_convert.storage.fingerprints import InputFiles, stat_local


def serial(fill, n):
    return fill(0, n)


def files(tmp_path, names=("a.png", "b.png", "c.png")):
    for name in names:
        (tmp_path / name).write_bytes(name.encode() * 10)
    return InputFiles.of(str(tmp_path), list(names), serial)


def test_unchanged_files_show_no_change(tmp_path):
    before = files(tmp_path)
    assert InputFiles.of(str(tmp_path), list(before.names), serial).first_change(before.stats) is None


def test_the_first_changed_file_in_plan_order_is_named_with_what_changed(tmp_path):
    before = files(tmp_path, ("c.png", "a.png", "b.png"))
    os.utime(tmp_path / "b.png", ns=(0, 10**9))
    (tmp_path / "a.png").write_bytes(b"longer than it was, and new")
    now = InputFiles.of(str(tmp_path), list(before.names), serial)
    assert now.first_change(before.stats) == f"{tmp_path / 'a.png'} changed (size 50 then, 27 now; modification time)"


def test_a_removed_file_is_said_to_be_gone(tmp_path):
    before = files(tmp_path)
    (tmp_path / "b.png").unlink()
    now = InputFiles.of(str(tmp_path), list(before.names), serial)
    assert now.first_change(before.stats) == f"{tmp_path / 'b.png'} is gone"


def test_stats_in_parts_join_into_the_stats_of_the_whole(tmp_path):
    names = [f"{i}.png" for i in range(7)]
    for name in names:
        (tmp_path / name).write_bytes(name.encode())

    def in_three(fill, n):
        return b"".join(fill(lo, min(lo + 3, n)) for lo in range(0, n, 3))

    assert InputFiles.of(str(tmp_path), names, in_three).stats == stat_local(str(tmp_path), names)


def test_the_journal_names_a_changed_file_only_when_nothing_else_differs(tmp_path):
    before = files(tmp_path)
    identity = {"options": {"seed": 0}, "inputs": before.digest()}
    journal = Journal(str(tmp_path / "journal"))
    journal.open(identity, None, before)
    journal.close()
    assert journal.read(identity, before) == []
    (tmp_path / "c.png").write_bytes(b"new")
    now = InputFiles.of(str(tmp_path), list(before.names), serial)
    with pytest.raises(OutputError, match=r"cannot --resume: .*c\.png changed \(size 50 then, 3 now"):
        journal.read({**identity, "inputs": now.digest()}, now)
    with pytest.raises(OutputError, match=r"options\.seed: 0 then, 1 now"):  # the run differs: said as such
        journal.read({"options": {"seed": 1}, "inputs": now.digest()}, now)
