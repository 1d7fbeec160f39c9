"""The resume journal at its seam (output/journal.py): which lines it believes, what a
refusal names, where reopening cuts it, and the same on an object store."""

from __future__ import annotations

import copy
import json
import os
import re
from collections import Counter

import pytest

from tfr_convert.errors import OutputError
from tfr_convert.output.journal import Journal, ShardEntry, Tally, replay, shard_of
from tfr_convert.output.shards import Checkpoint
from tfr_convert.storage import fs


def shard(n: int) -> ShardEntry:
    return ShardEntry(f"tmp-{n}", 10 + n, 100 + n, f"{n:064x}")


def written(path: str, identity=None) -> Journal:
    """A journal of two shards of train (the first with a tally), train done, one of test."""
    journal = Journal(path)
    journal.open(identity or {"seed": 0})
    tally = Tally()
    tally.add(Counter({("png", (1, 2)): 3}), [{"item": "a.png", "reason": "broken"}], ["warned"])
    journal.shard_done("train", shard(0), Checkpoint(2, 5, (10, 1, 100)), tally)
    journal.shard_done("train", shard(1), Checkpoint(4, 0, (21, 1, 201)), Tally())
    journal.split_done("train", Tally())
    journal.shard_done("test", shard(2), Checkpoint(1, 3, (12, 0, 102)), Tally())
    journal.flush()
    journal.close()
    return journal


@pytest.fixture(params=["local", "store"])
def where(request, tmp_path):
    return str(tmp_path / "journal") if request.param == "local" else f"memory://journal-{os.getpid()}-{id(tmp_path)}/j"


def test_a_journal_reads_back_its_steps_and_replays_them(where):
    journal = written(where)
    assert journal.exists()
    steps = journal.read({"seed": 0})
    assert [e["split"] for e, _ in steps] == ["train", "train", "train", "test"]
    assert [shard_of(e) for e, _ in steps] == [shard(0), shard(1), None, shard(2)]
    progress = replay(steps)
    assert progress.shards == {"train": [shard(0), shard(1)], "test": [shard(2)]}
    assert progress.done == ["train"] and progress.at == {"test": Checkpoint(1, 3, (12, 0, 102))}
    assert progress.tally.observations == Counter({("png", (1, 2)): 3})  # tuples come back as tuples
    assert progress.tally.warnings == ["warned"] and progress.tally.skipped.total == 1
    journal.remove()
    assert not journal.exists()


def test_reopening_keeps_the_steps_given_and_appends_after_them(where):
    journal = written(where)
    kept = journal.read({"seed": 0})[:2]
    journal.open({"seed": 0}, kept)
    journal.split_done("train", Tally())
    journal.flush()
    journal.close()
    assert [(e["split"], "done" in e) for e, _ in journal.read({"seed": 0})] == [
        ("train", False),
        ("train", False),
        ("train", True),
    ]
    journal.open({"seed": 0}, [])  # nothing kept: the identity stays, every step goes
    journal.close()
    assert journal.read({"seed": 0}) == [] and journal.exists()
    journal.open({"seed": 1})  # anew
    journal.close()
    assert journal.read({"seed": 1}) == []
    with pytest.raises(OutputError):
        journal.read({"seed": 0})


def test_a_refusal_names_each_difference_shortened_and_at_most_five(tmp_path):
    identity = {"options": {"a": 1, "b": "x" * 100, "c": [1, 2]}, "tool": "1.0", "n": 0}
    journal = written(str(tmp_path / "j"), identity)
    changed = copy.deepcopy(identity)
    changed["options"]["b"] = "y" * 100
    changed["options"]["a"] = 2
    with pytest.raises(OutputError) as caught:
        journal.read(changed)
    quoted = '"' + "x" * 56 + "..."
    assert f"options.a: 1 then, 2 now; options.b: {quoted} then, " in str(caught.value)
    assert "run the same command, or use --overwrite to start over" in str(caught.value)
    many = {f"k{i}": i for i in range(8)}
    journal = written(str(tmp_path / "k"), many)
    with pytest.raises(OutputError, match=r"k0: 0 then, 1 now; .*k4: 4 then, 5 now; 3 more\)"):
        journal.read({k: v + 1 for k, v in many.items()})
    six = {f"k{i}": i for i in range(6)}  # one past the five named
    journal = written(str(tmp_path / "s"), six)
    with pytest.raises(OutputError, match=r"k4: 4 then, 5 now; 1 more\)"):
        journal.read({k: v + 1 for k, v in six.items()})
    with pytest.raises(OutputError, match=r"extra: null then, 1 now"):
        journal.read({**many, "extra": 1})


GOOD = {
    "split": "train",
    "shard": {"file": "f", "records": 1, "bytes": 2, "sha256": "0" * 64},
    "batch": 0,
    "offset": 0,
    "cutter": [0, 0, 0],
    "tally": Tally().to_json(),
}


def _edits():
    yield "split is not text", lambda e: e.update(split=3)
    yield "no tally", lambda e: e.pop("tally")
    yield "a tally that is not one", lambda e: e.update(tally={"observations": 5})
    yield "observations that are no list", lambda e: e["tally"].update(observations=5)
    yield "an observation of three parts", lambda e: e["tally"].update(observations=[["png", 1, 2]])
    yield "an observation counted in words", lambda e: e["tally"].update(observations=[["png", "one"]])
    yield "skips counted in words", lambda e: e["tally"]["skipped"].update(total="many")
    yield "skips that are no table", lambda e: e["tally"].update(skipped=[1])
    yield "warnings that are a number", lambda e: e["tally"].update(warnings=5)
    yield "a shard with more fields", lambda e: e["shard"].update(more=1)
    yield "a file name that is not text", lambda e: e["shard"].update(file=5)
    yield "a sha256 too short", lambda e: e["shard"].update(sha256="0" * 63)
    yield "a sha256 in capitals", lambda e: e["shard"].update(sha256="A" * 64)
    for field in ("records", "bytes"):
        yield f"{field} negative", lambda e, f=field: e["shard"].update({f: -1})
        yield f"{field} a truth value", lambda e, f=field: e["shard"].update({f: True})
        yield f"{field} text", lambda e, f=field: e["shard"].update({f: "1"})
    for field in ("batch", "offset"):
        yield f"{field} missing", lambda e, f=field: e.pop(f)
        yield f"{field} negative", lambda e, f=field: e.update({f: -1})
    yield "a cutter of two", lambda e: e.update(cutter=[0, 0])
    yield "a cutter of four", lambda e: e.update(cutter=[0, 0, 0, 0])
    yield "a cutter with a negative count", lambda e: e.update(cutter=[0, -1, 0])
    yield "a cutter that is no list", lambda e: e.update(cutter="000")
    yield "no shard", lambda e: e.pop("shard")
    yield "not done but true-ish", lambda e: (e.pop("shard"), e.update(done=1))


@pytest.mark.parametrize("edit", [f for _, f in _edits()], ids=[name for name, _ in _edits()])
def test_a_line_of_the_wrong_shape_is_not_believed_nor_any_after_it(tmp_path, edit):
    path = tmp_path / "j"
    journal = Journal(str(path))
    journal.open({"seed": 0})
    journal.close()
    bad = copy.deepcopy(GOOD)
    edit(bad)
    done = {"split": "train", "done": True, "tally": GOOD["tally"]}
    with open(path, "a") as f:
        for line in (GOOD, bad, GOOD, done):
            f.write(json.dumps(line) + "\n")
    assert [e for e, _ in journal.read({"seed": 0})] == [GOOD]


def test_a_torn_or_garbled_line_ends_what_is_believed_and_reopening_cuts_there(tmp_path):
    path = tmp_path / "j"
    journal = written(str(path))
    whole = path.read_bytes()
    lines = whole.split(b"\n")
    path.write_bytes(b"\n".join(lines[:3]) + b"\n{garbled\n" + lines[3] + b"\n")
    steps = journal.read({"seed": 0})
    assert len(steps) == 2 and steps[-1][1] == len(b"\n".join(lines[:3])) + 1  # where the last kept line ends
    journal.open({"seed": 0}, steps)
    journal.close()
    assert path.read_bytes() == b"\n".join(lines[:3]) + b"\n"
    path.write_bytes(b"not json at all\n")
    assert journal.read({"seed": 0}) == []
    path.write_bytes(b'{"no identity": 1}\n')
    assert journal.read({"seed": 0}) == []


def test_a_store_journal_believes_lines_up_to_the_first_gap_and_reopening_removes_the_rest(tmp_path):
    path = f"memory://gap-{os.getpid()}/j"
    journal = written(path)
    names = sorted(fs.listdir(path))
    assert names == [f"{n:08d}.json" for n in range(5)]
    fs.remove(fs.join(path, "00000002.json"))
    assert len(journal.read({"seed": 0})) == 1
    fs.put_bytes(fs.join(path, "00000002.json"), b"{torn")
    assert len(journal.read({"seed": 0})) == 1
    kept = journal.read({"seed": 0})
    journal.open({"seed": 0}, kept)
    journal.split_done("train", Tally())
    journal.flush()
    journal.close()
    assert sorted(fs.listdir(path)) == ["00000000.json", "00000001.json", "00000002.json"]
    assert [("done" in e) for e, _ in journal.read({"seed": 0})] == [False, True]


def test_a_run_without_a_journal_does_nothing(tmp_path):
    journal = Journal(None)
    journal.open({"seed": 0})
    journal.shard_done("train", shard(0), Checkpoint(), Tally())
    journal.flush()
    journal.close()
    journal.remove()
    assert not journal.exists() and list(tmp_path.iterdir()) == []


def test_a_value_of_60_characters_is_shown_whole_and_five_differences_all_named(tmp_path):
    sixty = "v" * 58  # 60 characters quoted
    journal = written(str(tmp_path / "j"), {"a": sixty, **{f"k{i}": i for i in range(4)}})
    with pytest.raises(OutputError) as caught:
        journal.read({"a": "w" * 58, **{f"k{i}": i + 1 for i in range(4)}})
    message = str(caught.value)
    assert f'a: "{sixty}" then, "{"w" * 58}" now' in message
    assert "k3: 3 then, 4 now)" in message and "more" not in message  # five differences: no "more"
    journal = written(str(tmp_path / "k"), {"a": "v" * 59})  # 61 characters quoted: shortened
    with pytest.raises(OutputError, match=re.escape('a: "' + "v" * 56 + "... then, 1 now")):
        journal.read({"a": 1})


def test_a_setting_that_was_a_table_and_is_now_a_value_is_shown_whole_with_sorted_keys(tmp_path):
    journal = written(str(tmp_path / "j"), {"o": {"b": 1, "a": 2}})
    with pytest.raises(OutputError, match=re.escape('o: {"a": 2, "b": 1} then, 5 now')):
        journal.read({"o": 5})
    with pytest.raises(OutputError, match=re.escape('o: 5 then, {"a": 2, "b": 1} now')):
        written(str(tmp_path / "k"), {"o": 5}).read({"o": {"b": 1, "a": 2}})


def test_the_stored_input_stats_are_believed_only_when_they_are_clean_base64():
    from tfr_convert.output.journal import _stored_stats

    assert _stored_stats({"inputs": "QUJD"}) == b"ABC"
    assert _stored_stats({"inputs": "QUJD!!"}) == b""  # edited: not believed
    assert _stored_stats({"inputs": 5}) == b"" and _stored_stats({}) == b""


def test_closing_a_store_journal_lets_the_lines_under_way_finish(tmp_path):
    path = f"memory://closing-{os.getpid()}/j"
    journal = Journal(path)
    journal.open({"seed": 0})
    for n in range(20):
        journal.shard_done("train", shard(n), Checkpoint(n + 1, 0, (1, 0, 1)), Tally())
    journal.close()  # no flush: close waits for them
    assert len(journal.read({"seed": 0})) == 20
