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
