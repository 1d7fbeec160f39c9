"""--diff: which records two datasets hold differently (two versions, two conversions, a
folder against a bucket), matched by a key feature, and which features changed.

Each side's shards are grouped by split: a dataset directory's from its metadata, other
files by their shard names (a file of no shard name is in split ""). A shard whose sha256
both manifests list alike, in the same split, holds the same records on both sides: it
is not read at all. Every other record is read once, on every core, and its payload
hashed. Within each split, records of equal hashes are unchanged (as many as both sides
hold); only the records left over are read again, by their offsets, for their key
feature (a key is in the payload, so equal payloads have equal keys: a diff of two
similar datasets reads few keys). Those are matched by key (a key found twice on a side
in order of appearance): a match is a changed record, the rest added or removed. The
first DETAILED changed records of each split are decoded on both sides to name the
features that differ. A key removed from one split and added to another moved. Without
a key feature (`KEYS`, or --key), records are matched by content alone: a change is then
one removal and one addition.

Memory: the old side's hashes in a table, about 100 bytes a record, the rest 24 bytes a
record; objects only for the records left over.
"""

from __future__ import annotations

import struct
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import containers
from ..containers import MAX_RECORD_BYTES
from ..dataset.existing import ExistingDataset
from ..dataset.imageformat import sniff_format
from ..dataset.wire.entries import few_values_of
from ..dataset.wire.example import FLOAT, ExampleDecodeError, outline, parse
from ..errors import OptionError, RecordError
from ..storage import fs
from .cores import each_file
from .paths import resolve, split_of
from .summary import counted, preview_values

# The features converters name a record by, the first both sides have.
KEYS = ("filename", "image/filename", "id")
DETAILED = 1000  # changed records of a split decoded to name their changed features
LISTED = 1000  # keys listed per split and kind (added, removed, changed, moved) in the report
SHOWN = 10  # of those, in the text
_DIGEST = 16  # bytes of a record's sha256 kept to tell it from another
_FEW = 1000  # keys of at most this many records are read in this process
_MAX_PIXELS = 25_000_000  # pictures compared pixel by pixel at most this large


@dataclass
class Shard:
    path: str
    sha256: str | None = None  # as the manifest lists it
    records: int | None = None


@dataclass
class Side:
    path: str
    splits: dict[str, list[Shard]]
    features: dict[str, Any] = field(default_factory=dict)  # features.json's, {} if none
    labels: dict[str, list[str]] = field(default_factory=dict)


def side(path: str) -> Side:
    """The shards PATH names, by split (a dataset directory: as its metadata lists them)."""
    inputs = resolve([path])
    if len(inputs.datasets) == 1 and fs.normpath(inputs.datasets[0]) == fs.normpath(path):
        dataset = ExistingDataset(path)
        recorded = dataset.recorded_shards()
        splits = {}
        for split in dataset.splits():
            shards = []
            for name in dataset.shard_names(split):
                entry = recorded.get(name, {})
                sha256, records = entry.get("sha256"), entry.get("records")
                shards.append(
                    Shard(
                        fs.join(path, name),
                        sha256 if isinstance(sha256, str) else None,
                        records if type(records) is int else None,
                    )
                )
            splits[split] = shards
        return Side(path, splits, dataset.features, dataset.class_names())
    grouped: dict[str, list[Shard]] = {}
    for file in inputs.files:
        grouped.setdefault(split_of(file) or "", []).append(Shard(file))
    return Side(path, grouped)


# ---------------------------------------------------------------- reading


def _key_text(values: list[Any]) -> str:
    return ",".join(v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v) for v in values)


def file_entries(path: str, max_record: int) -> tuple[bytes, array]:
    """(the payload hashes of every record of one file, _DIGEST bytes each back to back;
    their offsets, -1 where the container has none), each record checked as it is read."""
    digests, offsets = bytearray(), array("q")
    for record in containers.of_file(path).digests(path, max_record):
        digests += record.data[:_DIGEST]
        offsets.append(-1 if record.offset is None else record.offset)
    return bytes(digests), offsets


def file_keys(path: str, key: str, wanted: list[tuple[int, int | None]]) -> list[str]:
    """The key of each wanted record (index, offset) of one file."""
    names = {key.encode("utf-8")}
    keys = []
    payloads = containers.of_file(path).records_at(path, wanted)
    for (index, offset), data in zip(wanted, payloads, strict=True):
        try:
            value = few_values_of(data, names).get(key)
        except ExampleDecodeError as e:
            raise RecordError(path, index, offset or 0, f"not a tf.train.Example: {e}") from None
        if value is None:
            raise RecordError(
                path,
                index,
                offset or 0,
                f"no feature {key!r}, which --diff matches records by (--key FEATURE names another)",
            )
        keys.append(_key_text(value[1]))
    return keys


def keyed(entries: list[Entry], key: str | None, max_record: int) -> None:
    """Give these entries their keys (their hashes where records are matched by content)."""
    if key is None:
        for entry in entries:
            entry.key = entry.digest.hex()
        return
    by_file: dict[str, list[Entry]] = {}
    for entry in entries:
        by_file.setdefault(entry.path, []).append(entry)
    jobs = [(path, key, [(e.index, e.offset) for e in mine]) for path, mine in by_file.items()]
    # a few records are read here: starting processes would cost more than reading them
    found = each_file(file_keys, jobs) if len(entries) > _FEW else [file_keys(*job) for job in jobs]
    for mine, keys in zip(by_file.values(), found, strict=True):
        for entry, text in zip(mine, keys, strict=True):
            entry.key = text


def _first_names(shards: list[Shard], max_record: int) -> set[str] | None:
    """The feature names of the first record of these shards (none for a record that is no
    tf.train.Example: such records are matched by content); None if they hold none."""
    for shard in shards:
        for record in containers.of_file(shard.path).records(shard.path, max_record):
            try:
                return set(outline(record.data, keep=0))
            except ExampleDecodeError:
                return set()
    return None


def chosen_key(names: list[tuple[Side, set[str] | None]], asked: str | None) -> str | None:
    """The feature records are matched by: --key's (which both sides must have), else the
    first of KEYS both sides have, else None (matched by content). `names`: each side and
    its first record's feature names."""
    if asked is not None:
        for one, found in names:
            if found is not None and asked not in found:
                raise OptionError(
                    f"--key {asked!r}: the records of {one.path} have no such feature "
                    f"(they have {', '.join(sorted(found))})"
                )
        return asked
    present = [found for _, found in names if found is not None]
    return next((k for k in KEYS if present and all(k in found for found in present)), None)


# ---------------------------------------------------------------- matching


@dataclass(slots=True)
class Entry:
    """One record left over once equal payloads are matched: where it is, and its key."""

    key: str
    digest: bytes
    path: str
    index: int
    offset: int | None


@dataclass
class Records:
    """One side's records of a split, file by file: (path, hashes, offsets) as file_entries
    gives them. No object a record: a side of millions of records is a few bytes each."""

    files: list[tuple[str, bytes, array]] = field(default_factory=list)

    def __len__(self) -> int:
        return sum(len(offsets) for _, _, offsets in self.files)

    def digests(self) -> Iterator[bytes]:
        for _, digests, _ in self.files:
            for at in range(0, len(digests), _DIGEST):
                yield digests[at : at + _DIGEST]

    def entries(self, chosen: list[int]) -> list[Entry]:
        """The records at these positions (counted over the files in order), as Entries."""
        out, base, files = [], 0, iter(self.files)
        path, digests, offsets = next(files, ("", b"", array("q")))
        for position in chosen:
            while position - base >= len(offsets):
                base += len(offsets)
                path, digests, offsets = next(files)
            i = position - base
            offset = offsets[i]
            out.append(Entry("", digests[i * _DIGEST : (i + 1) * _DIGEST], path, i, None if offset < 0 else offset))
        return out


@dataclass
class SplitDiff:
    split: str
    old: int = 0
    new: int = 0
    unchanged: int = 0
    shards_shared: int = 0
    added: list[Entry] = field(default_factory=list)
    removed: list[Entry] = field(default_factory=list)
    changed: list[tuple[Entry, Entry]] = field(default_factory=list)


def shared_shards(old: list[Shard], new: list[Shard]) -> tuple[list[Shard], list[Shard], list[Shard]]:
    """(old shards to read, new shards to read, shards both list with one sha256)."""

    def listed(shards: list[Shard]) -> Counter[str]:
        return Counter(s.sha256 for s in shards if s.sha256 and s.records is not None)

    common = listed(old) & listed(new)
    shared: list[Shard] = []
    left: list[list[Shard]] = []
    for shards, keep_shared in ((old, True), (new, False)):
        budget = Counter(common)
        rest = []
        for shard in shards:
            if shard.sha256 and shard.records is not None and budget[shard.sha256] > 0:
                budget[shard.sha256] -= 1
                if keep_shared:
                    shared.append(shard)
            else:
                rest.append(shard)
        left.append(rest)
    return left[0], left[1], shared


def match(split: str, old: Records, new: Records, keys: Callable[[list[Entry]], None]) -> SplitDiff:
    """Equal payloads first, as many of each as both sides hold, the first of a repeated
    one first (their keys are equal too: a key is in the payload); then the records left
    over by key, in order of appearance where a key repeats. `keys` gives those their keys.
    Only the old side's hashes are held in a table; the new side's are streamed past it."""
    result = SplitDiff(split, len(old), len(new))
    waiting = Counter(old.digests())
    new_left = []
    for position, digest in enumerate(new.digests()):
        if waiting[digest] > 0:
            waiting[digest] -= 1
            result.unchanged += 1
        else:
            new_left.append(position)
    remaining = {digest: n for digest, n in waiting.items() if n > 0}
    del waiting
    old_left = []
    if remaining:  # of a payload repeated on the old side, its last ones are those left over
        total = Counter(digest for digest in old.digests() if digest in remaining)
        matched = {digest: total[digest] - n for digest, n in remaining.items()}
        for position, digest in enumerate(old.digests()):
            if digest in matched:
                if matched[digest] > 0:
                    matched[digest] -= 1
                else:
                    old_left.append(position)
    left_old, left_new = old.entries(old_left), new.entries(new_left)
    keys(left_old + left_new)
    by_key: dict[str, list[int]] = {}
    for i, entry in enumerate(left_old):
        by_key.setdefault(entry.key, []).append(i)
    for entry in left_new:
        queue = by_key.get(entry.key)
        if not queue:
            result.added.append(entry)
            continue
        result.changed.append((left_old[queue.pop(0)], entry))
        if not queue:
            del by_key[entry.key]
    result.removed = [left_old[i] for i in sorted(i for queue in by_key.values() for i in queue)]
    return result


def moved(splits: list[SplitDiff]) -> list[dict[str, Any]]:
    """Keys removed from one split and added to another, taken out of both lists."""
    gone: dict[str, list[tuple[SplitDiff, Entry]]] = {}
    for s in splits:
        for entry in s.removed:
            gone.setdefault(entry.key, []).append((s, entry))
    found: list[dict[str, Any]] = []
    taken: set[int] = set()
    for s in splits:
        kept = []
        for entry in s.added:
            candidates = [c for c in gone.get(entry.key, ()) if c[0] is not s and id(c[1]) not in taken]
            if not candidates:
                kept.append(entry)
                continue
            origin, before = candidates[0]
            taken.add(id(before))
            found.append(
                {"key": entry.key, "from": origin.split, "to": s.split, "changed": before.digest != entry.digest}
            )
        s.added = kept
    for s in splits:
        s.removed = [e for e in s.removed if id(e) not in taken]
    return found


# ---------------------------------------------------------------- what changed in a record


def _same(a: tuple[str | None, list[Any]] | None, b: tuple[str | None, list[Any]] | None) -> bool:
    if a is None or b is None or a[0] != b[0] or a[0] != FLOAT:
        return a == b
    return struct.pack(f"<{len(a[1])}f", *a[1]) == struct.pack(f"<{len(b[1])}f", *b[1])  # NaN equals itself


def _shown(value: tuple[str | None, list[Any]] | None) -> Any:
    if value is None:
        return "absent"
    kind, values = value
    if kind == FLOAT:  # as float32 holds them: 0.52, not 0.5199999809265137
        import numpy as np

        values = [float(str(np.float32(v))) for v in values]
    if len(values) == 1 and isinstance(values[0], bytes) and len(values[0]) > 64:
        return f"{len(values[0])} bytes"
    return preview_values(values)


def _pixels(old: bytes, new: bytes) -> str | None:
    """How two encoded pictures differ in their pixels, or None if either is none."""
    if not (sniff_format(old) and sniff_format(new)):
        return None
    import io

    import numpy as np
    from PIL import Image

    try:
        pictures = [Image.open(io.BytesIO(data)) for data in (old, new)]
        if any(p.width * p.height > _MAX_PIXELS for p in pictures):
            return None
        a, b = (np.asarray(p.convert("RGBA")) for p in pictures)
    except (OSError, ValueError, SyntaxError):
        return None
    if a.shape != b.shape:
        return f"size {a.shape[1]}x{a.shape[0]} -> {b.shape[1]}x{b.shape[0]}"
    differ = int(np.count_nonzero((a != b).any(axis=2)))
    total = a.shape[0] * a.shape[1]
    return f"{differ} of {total} pixels differ" if differ else "same pixels, other bytes (encoded again)"


def changed_features(old: bytes, new: bytes) -> dict[str, dict[str, Any]]:
    """{feature: {old, new[, pixels]}} of the features two Example payloads hold differently."""
    a, b = parse(old), parse(new)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(a.keys() | b.keys()):
        before, after = a.get(name), b.get(name)
        if _same(before, after):
            continue
        out[name] = {"old": _shown(before), "new": _shown(after)}
        if before and after and len(before[1]) == len(after[1]) == 1 and isinstance(before[1][0], bytes):
            pixels = _pixels(before[1][0], after[1][0])
            if pixels is not None:
                out[name]["pixels"] = pixels
    return out


def _detail(pairs: list[tuple[Entry, Entry]]) -> Iterator[dict[str, Any]]:
    """Each changed record's key and changed features, its two payloads read by file."""
    by_file: dict[str, list[Entry]] = {}
    for pair in pairs:
        for entry in pair:
            by_file.setdefault(entry.path, []).append(entry)
    payloads: dict[int, bytes] = {}
    for path, mine in by_file.items():
        found = containers.of_file(path).records_at(path, [(e.index, e.offset) for e in mine])
        payloads.update((id(e), data) for e, data in zip(mine, found, strict=True))
    for before, after in pairs:
        try:
            features = changed_features(payloads[id(before)], payloads[id(after)])
        except ExampleDecodeError as e:
            features = {"(record)": {"old": "", "new": f"not a tf.train.Example: {e}"}}
        yield {"key": after.key, "features": features}


# ---------------------------------------------------------------- the two sides' metadata


def _names_diff(old: list[str], new: list[str]) -> dict[str, Any] | None:
    if old == new:
        return None
    if new[: len(old)] == old:
        return {"added": new[len(old) :]}
    return {"old": old, "new": new, "renumbered": True}


def schema_diff(old: Side, new: Side, old_names: set[str] | None, new_names: set[str] | None) -> dict[str, Any]:
    """Features added, removed or described differently (features.json where both have one,
    else the first records' feature names)."""
    if old.features and new.features:
        a, b = old.features, new.features
        changed = sorted(n for n in a.keys() & b.keys() if a[n] != b[n])
        names_a, names_b = set(a), set(b)
    else:
        names_a, names_b, changed = old_names or set(), new_names or set(), []
        if old_names is None or new_names is None:  # a side without records says nothing of its features
            names_a = names_b = set()
    out = {"added": sorted(names_b - names_a), "removed": sorted(names_a - names_b), "changed": changed}
    return {k: v for k, v in out.items() if v}


def labels_diff(old: Side, new: Side) -> dict[str, Any]:
    out = {}
    for feature in sorted(old.labels.keys() | new.labels.keys()):
        change = _names_diff(old.labels.get(feature, []), new.labels.get(feature, []))
        if change is not None:
            out[feature] = change
    return out


# ---------------------------------------------------------------- the report


def diff(old_path: str, new_path: str, key: str | None = None, max_record: int = MAX_RECORD_BYTES) -> dict[str, Any]:
    old, new = side(old_path), side(new_path)
    if set(old.splits) == {""} or set(new.splits) == {""}:
        # files of no split on a side: the two sides are compared whole
        old.splits, new.splits = ({"": [s for shards in one.splits.values() for s in shards]} for one in (old, new))
    splits = list(old.splits) + [s for s in new.splits if s not in old.splits]
    plan = {split: shared_shards(old.splits.get(split, []), new.splits.get(split, [])) for split in splits}
    # from the shards read anyway: a shared one is never opened
    names = [
        (one, _first_names([s for split in splits for s in plan[split][k]], max_record))
        for k, one in enumerate((old, new))
    ]
    key = chosen_key(names, key)
    reads = [shard for split in splits for shard in plan[split][0] + plan[split][1]]
    results = each_file(file_entries, [(shard.path, max_record) for shard in reads])
    entries = {shard.path: result for shard, result in zip(reads, results, strict=True)}

    def listed(shards: list[Shard]) -> Records:
        return Records([(shard.path, *entries[shard.path]) for shard in shards])

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


def _report(diffs: list[SplitDiff], moves: list[dict], schema: dict, labels: dict) -> dict[str, Any]:
    """The figures of the matched splits, and the changed records' features (decoded here)."""
    changed = [{"split": s.split, **found} for s in diffs for found in _detail(s.changed[:DETAILED])]
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
