"""Shard naming and policies, atomic output, seeded splits."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import TESTS, shards_by_record
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tfr_convert.containers import get as container
from tfr_convert.containers.framing import frame
from tfr_convert.dataset.naming import ShardName
from tfr_convert.dataset.splits import assign, carve, rank_order, seeded_order
from tfr_convert.errors import OutputError, SourceError
from tfr_convert.output.local import LocalOutput
from tfr_convert.output.shards import ShardPolicy, SplitWriter


def test_shard_name_formats_and_parses():
    s = ShardName("mnist", "train", 3, 12)
    assert s.filename == "mnist-train.tfrecord-00003-of-00012"
    assert ShardName.parse("/x/y/" + s.filename) == s
    assert ShardName.parse("fashion_mnist-validation.tfrecord-00000-of-00001") == ShardName(
        "fashion_mnist", "validation", 0, 1
    )
    assert ShardName.parse("mnist-train.tfrecord") is None
    assert ShardName.parse("dataset_info.json") is None


def test_num_shards_balances_counts():
    assert shards_by_record(ShardPolicy(num_shards=3), [1] * 10) == [3, 3, 4]
    assert shards_by_record(ShardPolicy(num_shards=4), [1] * 4) == [1, 1, 1, 1]
    assert shards_by_record(ShardPolicy(num_shards=10), [1] * 4) == [1, 1, 1, 1]  # never an empty shard


def test_examples_per_shard_is_exact():
    assert shards_by_record(ShardPolicy(examples_per_shard=4), [1] * 10) == [4, 4, 2]


def test_shard_size_gives_shards_of_at_least_the_size():
    assert shards_by_record(ShardPolicy(shard_size=100), [10] * 9) == [9]  # small data: one shard
    counts = shards_by_record(ShardPolicy(shard_size=100), [10] * 35)
    assert counts == [10, 10, 15]  # the remainder (5 records, 50 bytes) joins the last shard
    assert all(c * 10 >= 100 for c in counts)


def test_policy_rejects_two_rules():
    with pytest.raises(ValueError):
        ShardPolicy(num_shards=2, examples_per_shard=3)


def test_seeded_order_is_a_stable_permutation():
    items = list(range(100))
    a = seeded_order(items, str, 1, "shuffle")
    assert sorted(a) == items and a != items
    assert a == seeded_order(items, str, 1, "shuffle")
    assert a != seeded_order(items, str, 2, "shuffle")


@pytest.mark.parametrize("high", [2**64 - 1, 50, 1])  # distinct ranks; many ties; all equal
@pytest.mark.parametrize("n", [0, 1, 2, 1000])
def test_rank_order_equals_the_stable_argsort_with_or_without_ties(n, high):
    import numpy as np

    ranks = np.random.default_rng(n).integers(0, high, n, dtype=np.uint64, endpoint=True)
    assert rank_order(ranks).tolist() == np.argsort(ranks, kind="stable").tolist()


def test_carve_takes_exactly_n_and_keeps_source_order():
    items = list(range(50))
    picked, rest = carve(items, 7, str, 0, "validation")
    assert len(picked) == 7 and sorted(picked + rest) == items
    assert picked == sorted(picked) and rest == sorted(rest)
    with pytest.raises(SourceError, match="only 50"):
        carve(items, 51, str, 0, "validation")


def test_assign_orders_splits_and_carves_validation():
    splits = assign({"test": [1, 2], "train": list(range(10, 20))}, str, seed=0, shuffle=False, validation_size=3)
    assert list(splits) == ["train", "validation", "test"]
    assert len(splits["train"]) == 7 and len(splits["validation"]) == 3 and splits["test"] == [1, 2]


def test_output_dir_refuses_non_empty_and_cleans_up_on_failure(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(OutputError, match=r"not empty \(use --overwrite"):
        LocalOutput(str(out), overwrite=False, resume=False)
    fresh = tmp_path / "fresh"
    with pytest.raises(RuntimeError), LocalOutput(str(fresh), overwrite=False, resume=False) as od:
        writer = SplitWriter(od, "train", 3, ShardPolicy(examples_per_shard=1), container("tfrecord"), "none")
        writer.write_chunk(frame(b"a"), [len(frame(b"a"))], 0, 0)
        writer.write_chunk(frame(b"b"), [len(frame(b"b"))], 0, 1)
        assert len(os.listdir(od.build)) == 2 and not fresh.exists()  # built beside --out
        raise RuntimeError("boom")
    assert sorted(os.listdir(tmp_path)) == ["out"]  # the work beside it is gone too


def test_split_writer_counts_must_match(tmp_path):
    with LocalOutput(str(tmp_path / "o"), overwrite=False, resume=False) as od:
        writer = SplitWriter(od, "train", 2, ShardPolicy(), container("tfrecord"), "none")
        writer.write_chunk(frame(b"a"), [len(frame(b"a"))], 0, 0)
        with pytest.raises(OutputError, match="wrote 1 examples, expected 2"):
            writer.close()


def test_default_policy_is_one_shard_for_small_data_else_at_least_64_mib():
    mib = 1 << 20
    assert shards_by_record(ShardPolicy(), [mib] * 127) == [127]  # under 2 x 64 MiB: one shard
    counts = shards_by_record(ShardPolicy(), [mib] * 200)
    assert counts == [64, 64, 72] and all(c * mib >= 64 * mib for c in counts)


@settings(max_examples=300, deadline=None)
@given(
    policy=st.one_of(
        st.integers(1, 12).map(lambda n: ShardPolicy(num_shards=n)),
        st.integers(1, 12).map(lambda n: ShardPolicy(examples_per_shard=n)),
        st.integers(1, 400).map(lambda n: ShardPolicy(shard_size=n)),
    ),
    sizes=st.lists(st.integers(16, 60), min_size=1, max_size=60),
    chunk=st.integers(1, 17),
    skips=st.integers(0, 3),
)
# a shard begun in one chunk and closed in the next (its bytes so far count toward the size)
@example(policy=ShardPolicy(shard_size=45), sizes=[20] * 10, chunk=2, skips=0)
def test_split_writer_cuts_exactly_where_the_policy_says(tmp_path_factory, policy, sizes, chunk, skips):
    out = tmp_path_factory.mktemp("w")
    with LocalOutput(str(out / "o"), overwrite=False, resume=False) as od:
        writer = SplitWriter(od, "train", len(sizes) + skips, policy, container("tfrecord"), "none")
        records = [frame(bytes(s - 16)) for s in sizes]
        for i in range(0, len(records), chunk):
            part = records[i : i + chunk]
            writer.write_chunk(b"".join(part), [len(r) for r in part], 0, i)
        writer.skip(skips)
        result = writer.close()
    if skips:  # records left out at the end: everything written, nothing more
        assert sum(s.records for s in result.shards) == len(sizes)
    else:
        assert [s.records for s in result.shards] == shards_by_record(policy, sizes)


def test_a_failed_split_leaves_no_writer_thread_or_file(tmp_path):
    import threading

    before = threading.active_count()
    with pytest.raises(RuntimeError), LocalOutput(str(tmp_path / "o"), overwrite=False, resume=False) as od:
        with SplitWriter(od, "train", 5, ShardPolicy(), container("tfrecord"), "none") as writer:
            writer.write_chunk(frame(b"x"), [len(frame(b"x"))], 0, 0)
            assert threading.active_count() == before + 1  # the shard's helper, which writes and hashes
            raise RuntimeError("boom")
    assert threading.active_count() == before
    assert os.listdir(tmp_path) == []


# Run in a fresh interpreter, as the command line runs: ranks are computed in forked
# processes only where no other thread is alive, and earlier tests leave some behind.
_BARE = f"""
import json, os, sys
from pathlib import Path
sys.path.insert(0, {str(TESTS)!r})
from helpers import Given
"""

_PLAN_NUMBERS = (
    _BARE
    + """
from tfr_convert.engine.core import RANKS_PER_PROCESS, plan_splits
from tfr_convert.engine.run_options import RunOptions

class Numbers(Given):
    # n items in train and a few in test, keyed by their number; a process other than
    # the one that made it leaves a file named after its pid in `marks`
    def __init__(self, n, marks):
        super().__init__()
        self.n, self.marks, self.maker, self.marked = n, marks, os.getpid(), False

    def source_splits(self):
        return {"train": list(range(self.n)), "test": list(range(5))}

    def key(self, item):
        if not self.marked and os.getpid() != self.maker:
            self.marked = True
            (self.marks / str(os.getpid())).touch()
        return f"n{item}"

workers, validation, marks = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
n = 4 * RANKS_PER_PROCESS + 17  # parts of the train split (and of the carving) in 3 other processes
options = RunOptions(out=str(marks / "out"), workers=workers, validation_size=validation)
plan = plan_splits(Numbers(n, marks), options)
print(json.dumps({"plan": plan, "n": n, "elsewhere": len(list(marks.iterdir()))}))
"""
)


_PLAN_DIGEST = (
    _BARE
    + """
from tfr_convert.engine.run_options import RunOptions
from tfr_convert.engine.resume import DIGEST_ITEMS_PER_PROCESS, run_identity

class Num(int):
    # marshal refuses a subclass, so a block of these is hashed through repr, which here
    # leaves a file named after its pid in `marks` when a process other than the maker calls it
    def __repr__(self):
        if os.getpid() != MAKER:
            (MARKS / str(os.getpid())).touch()
        return f"Num({int(self)})"

workers, MARKS, mode = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
MAKER = os.getpid()
n = 3 * DIGEST_ITEMS_PER_PROCESS + 17
plan = {"train": [Num(i) for i in range(n)], "test": [Num(i) for i in range(5)], "validation": []}
if mode == "changed":
    plan["train"][n // 2] = Num(-1)
identity = run_identity(Given(), RunOptions(out=str(MARKS / "out"), workers=workers), plan)
print(json.dumps({"sha256": identity["items"]["sha256"], "elsewhere": len(list(MARKS.iterdir()))}))
"""
)


def test_a_large_plans_digest_is_the_same_with_its_blocks_hashed_in_forked_processes(tmp_path):
    def digest(workers: int, mode: str = "same") -> dict:
        marks = tmp_path / f"hashed-elsewhere-{workers}-{mode}"
        marks.mkdir()
        run = subprocess.run([sys.executable, "-c", _PLAN_DIGEST, str(workers), str(marks), mode],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)

    serial, forked, changed = digest(1), digest(4), digest(4, "changed")
    assert serial["elsewhere"] == 0 and forked["elsewhere"] >= 2  # the parts did run in other processes
    assert forked["sha256"] == serial["sha256"]
    assert changed["sha256"] != serial["sha256"]  # one item of a block hashed elsewhere


@pytest.mark.parametrize("validation_size", [0, 1000])
def test_a_large_split_is_planned_the_same_with_its_ranks_computed_in_forked_processes(tmp_path, validation_size):
    def plan(workers: int) -> dict:
        marks = tmp_path / f"ranked-elsewhere-{workers}"
        marks.mkdir()
        args = [sys.executable, "-c", _PLAN_NUMBERS, str(workers), str(validation_size), str(marks)]
        run = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)

    serial, forked = plan(1), plan(4)
    assert serial["elsewhere"] == 0 and forked["elsewhere"] >= 3  # the parts did run in other processes
    assert forked["plan"] == serial["plan"]
    assert sorted(serial["plan"]["train"] + serial["plan"].get("validation", [])) == list(range(serial["n"]))


@pytest.mark.parametrize("seed", range(20))
def test_grouped_and_stratified_splits_keep_each_class_in_proportion_where_groups_allow(seed):
    from collections import Counter

    from tfr_convert.dataset.splits import SplitSpec, split_by_ratio

    # 200 items in 50 groups of 4, each group of one class, classes 0 and 1 in halves:
    # 0.8 / 0.2 of each class is 20 / 5 whole groups, so the counts can be exact
    items = [(f"item{i}", i // 4, (i // 4) % 2) for i in range(200)]
    splits, said = split_by_ratio(
        items, lambda it: it[0], SplitSpec.parse("train=0.8,test=0.2"), seed,
        stratum=lambda it: it[2], groups=[f"g{it[1]}" for it in items],
    )  # fmt: skip
    counts = {name: Counter(it[2] for it in chosen) for name, chosen in splits.items()}
    assert counts == {"train": {0: 80, 1: 80}, "test": {0: 20, 1: 20}}, (seed, counts)
    groups = {name: {it[1] for it in chosen} for name, chosen in splits.items()}
    assert not groups["train"] & groups["test"]
    assert said is not None and "whole groups" in said


@pytest.mark.parametrize("seed", range(10))
def test_grouped_and_stratified_splits_stay_within_a_group_of_the_target_when_groups_are_uneven(seed):
    import random
    from collections import Counter

    from tfr_convert.dataset.splits import SplitSpec, split_by_ratio

    # groups of 1 to 6 items, each of one class (three classes, unevenly common): each
    # class's split is within its largest group of the exact share (the documented
    # best effort: a group is never cut)
    rng = random.Random(seed)
    items, g = [], 0
    while len(items) < 600:
        size, label = rng.randint(1, 6), rng.choice([0, 0, 0, 1, 1, 2])
        items += [(f"i{len(items) + k}", g, label) for k in range(size)]
        g += 1
    splits, _ = split_by_ratio(
        items, lambda it: it[0], SplitSpec.parse("train=0.7,validation=0.1,test=0.2"), seed,
        stratum=lambda it: it[2], groups=[f"g{it[1]}" for it in items],
    )  # fmt: skip
    for label in (0, 1, 2):
        total = sum(1 for it in items if it[2] == label)
        for name, fraction in (("train", 0.7), ("validation", 0.1), ("test", 0.2)):
            got = Counter(it[2] for it in splits[name])[label]
            assert abs(got - fraction * total) <= 6, (seed, label, name, got, fraction * total)


def test_two_items_with_one_key_are_refused_naming_both(tmp_path):
    from tfr_convert.converters.base import Converter
    from tfr_convert.engine.core import plan_splits
    from tfr_convert.engine.run_options import RunOptions
    from tfr_convert.errors import SourceError

    class Rows(Converter):
        command = "rows"

        def __init__(self, keys):
            self.features, self.labels, self.keys = {}, {}, keys

        def source_splits(self):
            return {"train": list(range(len(self.keys)))}

        def key(self, item):
            return self.keys[item]

        def describe(self, item):
            return f"rows.csv line {item + 2}"

        def features_of(self, item):
            return {}

        def sources(self):
            return []

    options = RunOptions(out=str(tmp_path / "out"), workers=1)
    with pytest.raises(SourceError, match=r"^rows.csv line \d and rows.csv line \d have one key, 'b'"):
        plan_splits(Rows(["a", "b", "c", "b", "d"]), options)
    assert sum(map(len, plan_splits(Rows(["a", "b", "c", "d"]), options).values())) == 4
