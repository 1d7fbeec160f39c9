"""The diff of two paths (`diff`), its report and its text."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...containers import MAX_RECORD_BYTES
from ..cores import each_file
from ..summary import counted
from .changes import detail, labels_diff, schema_diff
from .matching import Records, SplitDiff, match, moved
from .sides import Shard, chosen_key, file_entries, file_entries_keyed, first_names, keyed, shared_shards, side

DETAILED = 1000  # changed records of a split decoded to name their changed features
LISTED = 1000  # keys listed per split and kind (added, removed, changed, moved) in the report
SHOWN = 10  # of those, in the text


def diff(old_path: str, new_path: str, key: str | None = None, max_record: int = MAX_RECORD_BYTES) -> dict[str, Any]:
    old, new = side(old_path), side(new_path)
    if set(old.splits) == {""} or set(new.splits) == {""}:
        # files of no split on a side: the two sides are compared whole
        old.splits, new.splits = ({"": [s for shards in one.splits.values() for s in shards]} for one in (old, new))
    splits = list(old.splits) + [s for s in new.splits if s not in old.splits]
    plan = {split: shared_shards(old.splits.get(split, []), new.splits.get(split, [])) for split in splits}
    # from the shards read anyway: a shared one is never opened
    names = [
        (one, first_names([s for split in splits for s in plan[split][k]], max_record))
        for k, one in enumerate((old, new))
    ]
    key = chosen_key(names, key)
    reads = [shard for split in splits for shard in plan[split][0] + plan[split][1]]
    # a split read on one side only: its records have nothing to match, so their keys are
    # read with their hashes, in the one pass
    alone = {
        s.path for split in splits if not (plan[split][0] and plan[split][1]) for s in plan[split][0] + plan[split][1]
    }
    results = each_file(_entries, [(shard.path, max_record, key if shard.path in alone else False) for shard in reads])
    entries = {shard.path: result for shard, result in zip(reads, results, strict=True)}

    def listed(shards: list[Shard]) -> Records:
        return Records(
            [(shard.path, *entries[shard.path][:2]) for shard in shards],
            {shard.path: entries[shard.path][2] for shard in shards if len(entries[shard.path]) > 2},
        )

    diffs = []
    for split in splits:
        old_read, new_read, shared = plan[split]
        one = match(split, listed(old_read), listed(new_read), lambda left: keyed(left, key, max_record))
        common = sum(s.records or 0 for s in shared)
        one.old, one.new, one.unchanged = one.old + common, one.new + common, one.unchanged + common
        one.shards_shared = len(shared)
        diffs.append(one)
    report = _report(diffs, moved(diffs), schema_diff(old, new, names[0][1], names[1][1]), labels_diff(old, new))
    report["read"] = {
        "shards": len(reads),
        "records": sum(len(entries[s.path][1]) for s in reads),
        "shards_shared": sum(s.shards_shared for s in diffs),
    }
    return {"mode": "diff", "old": old_path, "new": new_path, "key": key, **report}


def _entries(path: str, max_record: int, key: str | bool | None) -> tuple[Any, ...]:
    """file_entries of a file (`key` False), or file_entries_keyed with `key`."""
    return file_entries(path, max_record) if key is False else file_entries_keyed(path, max_record, key)


def _report(diffs: list[SplitDiff], moves: list[dict], schema: dict, labels: dict) -> dict[str, Any]:
    """The figures of the matched splits, and the changed records' features (decoded here)."""
    changed = [{"split": s.split, **found} for s in diffs for found in detail(s.changed[:DETAILED])]
    features_changed = Counter(name for found in changed for name in found["features"])
    equal = not (moves or schema or labels) and not any(s.added or s.removed or s.changed for s in diffs)
    counts = ("old", "new", "unchanged", "shards_shared")
    return {
        "equal": equal,
        "splits": [
            {
                "split": s.split,
                **{k: getattr(s, k) for k in counts[:2]},
                **{k: len(getattr(s, k)) for k in ("added", "removed", "changed")},
                **{k: getattr(s, k) for k in counts[2:]},
            }
            for s in diffs
        ],
        "added": [{"split": s.split, "key": e.key} for s in diffs for e in s.added[:LISTED]],
        "removed": [{"split": s.split, "key": e.key} for s in diffs for e in s.removed[:LISTED]],
        "changed": changed,
        "moved": moves[:LISTED],
        "moved_total": len(moves),
        "features_changed": dict(sorted(features_changed.items())),
        "features": schema,
        "labels": labels,
    }


def _change_text(name: str, change: dict[str, Any]) -> str:
    text = f"{name}: {_inline(change['old'])} -> {_inline(change['new'])}"
    return f"{text} ({change['pixels']})" if "pixels" in change else text


def _inline(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value)) if len(value) != 1 else str(value[0])
    return str(value)


def _split_lines(report: dict[str, Any], s: dict[str, Any]) -> list[str]:
    name = s["split"] or "(files)"
    shared = f"; {counted(s['shards_shared'], 'shard')} shared, not read" if s["shards_shared"] else ""
    lines = [
        f"{name}: {s['old']} -> {s['new']} records: {s['added']} added, {s['removed']} removed, "
        f"{s['changed']} changed, {s['unchanged']} unchanged{shared}"
    ]
    for mark, kind in (("+", "added"), ("-", "removed")):
        mine = [e for e in report[kind] if e["split"] == s["split"]]
        lines += [f"  {mark} {e['key']}" for e in mine[:SHOWN]]
        if s[kind] > SHOWN:
            lines.append(f"  {mark} ... {s[kind] - SHOWN} more")
    mine = [c for c in report["changed"] if c["split"] == s["split"]]
    for c in mine[:SHOWN]:
        lines.append(f"  ~ {c['key']}: " + "; ".join(_change_text(n, v) for n, v in c["features"].items()))
    if s["changed"] > SHOWN:
        lines.append(f"  ~ ... {s['changed'] - SHOWN} more")
    return lines


def format_diff(report: dict[str, Any]) -> str:
    by = f"matched by {report['key']!r}" if report["key"] else "matched by content (no key feature: --key FEATURE)"
    lines = [f"{report['old']} -> {report['new']}: records {by}"]
    for s in report["splits"]:
        lines += _split_lines(report, s)
    for m in report["moved"][:SHOWN]:
        lines.append(f"moved: {m['key']}: {m['from']} -> {m['to']}" + (", changed" if m["changed"] else ""))
    if report["moved_total"] > SHOWN:
        lines.append(f"moved: ... {report['moved_total'] - SHOWN} more")
    if report["features_changed"]:
        counts = ", ".join(f"{n} ({k})" for n, k in report["features_changed"].items())
        lines.append(f"features changed: {counts}")
    for kind, names in report["features"].items():
        lines.append(f"schema: {kind} {', '.join(names)}")
    for feature, change in report["labels"].items():
        if "added" in change:
            lines.append(f"labels of {feature!r}: added {', '.join(change['added'])}")
        else:
            lines.append(f"labels of {feature!r}: renumbered ({len(change['old'])} -> {len(change['new'])} names)")
    if report["equal"]:
        total = sum(s["new"] for s in report["splits"])
        lines.append(f"equal: {counted(total, 'record')} in {counted(len(report['splits']), 'split')}")
    else:
        totals = {k: sum(s[k] for s in report["splits"]) for k in ("added", "removed", "changed")}
        lines.append(
            f"differ: {totals['added']} added, {totals['removed']} removed, {totals['changed']} changed, "
            f"{report['moved_total']} moved"
        )
    return "\n".join(lines)
