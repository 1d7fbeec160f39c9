"""What a resumed run is compared by (engine/resume.py's run identity): the digest of the
planned items changes with any one item, in any block of any split, and with an item
moved between splits; it does not change with the items' own order of hashing."""

from __future__ import annotations

from helpers import Given

from tfr_convert.engine.resume import PLAN_BLOCK, run_identity
from tfr_convert.engine.run_options import RunOptions


def _digest(plan: dict, tmp_path) -> str:
    return run_identity(Given(), RunOptions(out=str(tmp_path / "out"), workers=1), plan)["items"]["sha256"]


def test_the_plans_digest_changes_with_any_one_item_and_with_the_split_an_item_is_in(tmp_path):
    n = 2 * PLAN_BLOCK + 5  # two whole blocks and a short one
    plan = {"train": list(range(n)), "test": list(range(n, n + 3)), "validation": []}
    base = _digest(plan, tmp_path)
    assert base == _digest({k: list(v) for k, v in plan.items()}, tmp_path)
    for at in (0, PLAN_BLOCK - 1, PLAN_BLOCK, 2 * PLAN_BLOCK, n - 1):
        changed = {**plan, "train": [*plan["train"][:at], -1, *plan["train"][at + 1 :]]}
        assert _digest(changed, tmp_path) != base, at
    assert _digest({**plan, "test": [n, n + 1, -1]}, tmp_path) != base
    moved = {"train": plan["train"][:-1], "test": [plan["train"][-1], *plan["test"]], "validation": []}
    assert _digest(moved, tmp_path) != base
    renamed = {"train": plan["train"], "tests": plan["test"], "validation": []}
    assert _digest(renamed, tmp_path) != base
    assert _digest({**plan, "train": plan["train"] + [n + 10]}, tmp_path) != base  # one more, a block of its own
    assert _digest({**plan, "validation": [n + 10]}, tmp_path) != base


def test_items_marshal_cannot_write_are_digested_by_their_repr(tmp_path):
    class Item(int):  # marshal refuses a subclass of int
        pass

    plan = {"train": [Item(i) for i in range(10)]}
    changed = {"train": [Item(i) for i in range(9)] + [Item(99)]}
    assert _digest(plan, tmp_path) != _digest(changed, tmp_path)
    assert _digest(plan, tmp_path) == _digest({"train": [Item(i) for i in range(10)]}, tmp_path)


def test_the_plans_digest_tells_which_split_holds_a_block(tmp_path):
    """The same blocks under other splits: a block moved whole, an empty split before it."""
    items = list(range(2 * PLAN_BLOCK))  # two whole blocks: their digests alike wherever they are
    block = items[:PLAN_BLOCK]
    assert _digest({"a": [], "b": block}, tmp_path) != _digest({"a": block, "b": []}, tmp_path)
    assert _digest({"a": block, "b": items[PLAN_BLOCK:]}, tmp_path) != _digest({"a": items, "b": []}, tmp_path)


def test_the_plans_digest_is_the_same_hashed_in_any_number_of_parts(tmp_path, monkeypatch):
    from tfr_convert.engine import resume

    monkeypatch.setattr(resume, "PLAN_BLOCK", 3)
    monkeypatch.setattr(resume, "DIGEST_ITEMS_PER_PROCESS", 4)  # 10 items: 2.5 parts' worth
    plan = {"train": list(range(7)), "test": list(range(7, 10))}

    def digest(workers: int) -> str:
        options = RunOptions(out=str(tmp_path / "out"), workers=workers)
        return run_identity(Given(), options, plan)["items"]["sha256"]

    assert len({digest(workers) for workers in (1, 2, 3, 4)}) == 1


def test_the_input_files_stats_are_the_same_taken_in_any_number_of_parts(tmp_path, monkeypatch):
    from tfr_convert.engine import resume

    for i in range(10):
        (tmp_path / f"f{i}").write_bytes(b"x" * i)

    class Files(Given):
        def input_roots(self):
            return [str(tmp_path)]

        def item_file(self, item):
            return f"f{item}"

    monkeypatch.setattr(resume, "STATS_PER_PROCESS", 4)  # 10 files: 2.5 parts' worth
    plan = {"train": list(range(7)), "test": list(range(7, 10))}
    found = {resume.input_files(Files(), plan, workers).stats for workers in (1, 2, 3, 4)}
    assert len(found) == 1 and len(next(iter(found))) > 0


def test_equal_plans_give_one_digest_however_their_items_share_objects(tmp_path):
    """A resumed run lists its items afresh: equal values, other objects (or one shared)."""
    big, name = 10**6, "x" * 20
    shared = {"train": [big, big, (name, 1), (name, 2)]}
    fresh = {"train": [int(str(big)), int(str(big)), ("".join(["x"] * 20), 1), ("".join(["x"] * 20), 2)]}
    assert _digest(shared, tmp_path) == _digest(fresh, tmp_path)


def test_the_plans_digest_does_not_follow_the_order_its_splits_are_listed_in(tmp_path):
    assert _digest({"a": [], "b": []}, tmp_path) == _digest({"b": [], "a": []}, tmp_path)
    assert _digest({"a": [2], "b": [1]}, tmp_path) == _digest({"b": [1], "a": [2]}, tmp_path)


def test_an_empty_plan_has_no_input_files_to_compare(tmp_path):
    from tfr_convert.engine import resume

    class Files(Given):
        def input_roots(self):
            return [str(tmp_path)]

        def item_file(self, item):
            return f"f{item}"

    assert resume.input_files(Files(), {"train": [], "test": []}, 1) is None


def test_a_split_planned_as_a_range_has_the_digest_of_the_list_it_stands_for(tmp_path):
    """A table in source order is planned as a range of rows (no int per row); resuming
    compares it with the same rows however they were held."""
    n = PLAN_BLOCK + 7
    assert _digest({"train": range(n), "test": range(n, n + 2)}, tmp_path) == _digest(
        {"train": list(range(n)), "test": [n, n + 1]}, tmp_path
    )
    assert _digest({"train": range(n)}, tmp_path) != _digest({"train": range(1, n + 1)}, tmp_path)


def test_the_input_files_of_a_plan_begin_with_its_first_splits_first_item(tmp_path):
    from tfr_convert.engine import resume

    asked = []

    class Files(Given):
        def input_roots(self):
            return [str(tmp_path)]

        def item_file(self, item):
            asked.append(item)
            return None

    assert resume.input_files(Files(), {"train": [5, 6], "test": [], "b": [7, 8]}, 1) is None
    assert asked == [7]  # "b" sorts first; the empty "test" has none
