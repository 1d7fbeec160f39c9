"""--verify: every record's framing and both CRCs, and a dataset directory against its metadata
(its shards, their counts and sha256s; its labels against their ClassLabels: labels.py).

Every problem is reported (not just the first): after a data-CRC mismatch the
scan goes on to the next record; any other framing problem ends that file's
scan, since where the next record starts is then unknown.
"""

from __future__ import annotations

from typing import Any

from .. import containers
from ..dataset.existing import ExistingDataset, compressed_note
from ..dataset.naming import MANIFEST, ShardName
from ..errors import SourceError
from ..storage import fs
from .cores import each_file
from .labels import class_counts, label_findings, tally
from .paths import resolve
from .summary import counted


def verify_file(path: str, with_sha256: bool = False, labels: dict[str, int] | None = None) -> dict[str, Any]:
    """Problems of one file, found by its container's own checks; its sha256 too when
    asked (a manifest lists one to compare); its labels outside their ClassLabels' names
    (`labels`: {feature: how many names}) where its records are sound."""
    container = containers.of_file(path)
    checked = container.verify(path, with_sha256)
    result: dict[str, Any] = {
        "path": path,
        "format": container.name,
        "compression": checked["compression"],
        "records": checked["records"],
        "bytes": fs.getsize(path),
        "problems": [
            {"record": p.index, "offset": p.offset, "kind": p.kind, "message": p.message} for p in checked["problems"]
        ],
    }
    if "sha256" in checked:
        result["sha256"] = checked["sha256"]
    if labels and not result["problems"]:
        result["labels"] = tally(path, labels)
    return result


def _problem(kind: str, file: str, message: str) -> dict[str, str]:
    return {"kind": kind, "file": file, "message": message}


def verify_dataset(directory: str, checked: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    """Shards of a dataset directory against dataset_info.json and manifest.json."""
    dataset = ExistingDataset(directory)
    try:
        names = {
            split: list(zip(dataset.shard_names(split), lengths, strict=True))
            for split, lengths in dataset.splits().items()
        }
    except (SourceError, KeyError, TypeError, ValueError, AttributeError) as e:
        # untrusted JSON of any shape: whatever it lacks, the report says so instead of failing
        detail = str(e) if isinstance(e, SourceError) else f"{type(e).__name__}: {e}"
        return [_problem("metadata", "dataset_info.json", f"no readable splits in dataset_info.json ({detail})")]
    problems: list[dict[str, str]] = []
    recorded = dataset.recorded_shards()
    present = fs.listdir(directory)  # one listing, not a request per shard
    expected = set()
    for shards in names.values():
        for name, length in shards:
            expected.add(name)
            if name not in present:
                problems.append(_problem("missing_shard", name, "listed in dataset_info.json, absent"))
                continue
            result = checked.get(fs.normpath(fs.join(directory, name)))
            if result is None:
                continue
            framing_ok = not any(p["kind"] != "data_crc" for p in result["problems"])
            if framing_ok and result["records"] != length:
                problems.append(
                    _problem("record_count", name, f"{result['records']} records, dataset_info.json says {length}")
                )
            entry = recorded.get(name)
            if entry is not None:
                if entry.get("bytes") != result["bytes"]:
                    problems.append(
                        _problem(
                            "byte_count", name, f"{result['bytes']} bytes, manifest.json says {entry.get('bytes')}"
                        )
                    )
                if entry.get("sha256") != result.get("sha256"):
                    problems.append(_problem("sha256", name, "sha256 differs from manifest.json"))
    for entry in sorted(present):
        shard = ShardName.parse(entry)
        if shard and shard.name == dataset.name and entry not in expected:
            problems.append(_problem("unexpected_shard", entry, "not in dataset_info.json"))
    return problems


def shard_set_problems(paths: list[str], covered: list[str]) -> dict[str, list[dict[str, str]]]:
    """{directory: problems} of shard sets incomplete by their names alone: for one dataset
    and split, indices missing from 0..N-1, or two different `-of-N` counts. Directories in
    `covered` are left out: their dataset_info.json lists every shard (verify_dataset)."""
    sets: dict[tuple[str, str, str, str], dict[int, set[int]]] = {}
    done = {fs.normpath(d) for d in covered}
    for path in paths:
        shard = ShardName.parse(path)
        directory = fs.normpath(fs.dirname(path) or ".")
        if shard is None or directory in done:
            continue
        key = (directory, shard.name, shard.split, shard.file_format)
        sets.setdefault(key, {}).setdefault(shard.count, set()).add(shard.index)
    listed: dict[str, list[dict[str, str]]] = {}
    for (directory, name, split, file_format), by_count in sorted(sets.items()):
        problems = listed.setdefault(directory, [])
        if len(by_count) > 1:
            counts = ", ".join(f"-of-{n:05d}" for n in sorted(by_count))
            problems.append(
                _problem(
                    "mixed_shard_counts",
                    f"{name}-{split}.{file_format}-*",
                    f"shards of one split name different totals: {counts}",
                )
            )
        for count, indices in sorted(by_count.items()):
            missing = sorted(set(range(count)) - indices)
            for index in missing[:10]:
                file = ShardName(name, split, index, count, file_format).filename
                problems.append(_problem("missing_shard", file, f"shard {index} of {count} is absent"))
            if len(missing) > 10:
                problems.append(
                    _problem(
                        "missing_shard",
                        f"{name}-{split}.{file_format}-*-of-{count:05d}",
                        f"{len(missing) - 10} more of {count} shards absent",
                    )
                )
    return {d: p for d, p in listed.items() if p}


def verify(paths: list[str]) -> dict[str, Any]:
    inputs = resolve(paths)
    # sha256 costs more than reading and CRC together: only where a manifest has one to compare
    with_manifest = [d.rstrip("/") + "/" for d in inputs.datasets if fs.exists(fs.join(d, MANIFEST))]
    counts = {d: class_counts(d) for d in inputs.datasets}  # each dataset's ClassLabels, read once
    files = _verified(inputs.files, with_manifest, {fs.join(fs.normpath(d), ""): c for d, c in counts.items() if c})
    by_path = {fs.normpath(f["path"]): f for f in files}
    datasets = []
    for d in inputs.datasets:
        wrong, said = [], []
        if counts[d]:
            mine = [(split, name, by_path.get(fs.normpath(fs.join(d, name)))) for split, name in _shards(d)]
            tallies = [(split, name, f.pop("labels", {})) for split, name, f in mine if f is not None]
            wrong, said = label_findings(counts[d], tallies)
        datasets.append({"path": d, "problems": verify_dataset(d, by_path) + wrong, "notes": _notes(d, files) + said})
    for f in files:
        f.pop("labels", None)
    # without metadata, the names alone still show a shard set with gaps
    datasets += [{"path": d, "problems": p} for d, p in shard_set_problems(inputs.files, inputs.datasets).items()]
    count = sum(len(f["problems"]) for f in files) + sum(len(d["problems"]) for d in datasets)
    return {
        "mode": "verify",
        "ok": count == 0,
        "files": files,
        "datasets": datasets,
        "records": sum(f["records"] for f in files),
        "problems": count,
    }


def _shards(directory: str) -> list[tuple[str, str]]:
    """(split, file name) of each shard a dataset's metadata lists ([] where it cannot be read)."""
    try:
        dataset = ExistingDataset(directory)
        return [(split, name) for split in dataset.splits() for name in dataset.shard_names(split)]
    except (SourceError, KeyError, TypeError, ValueError, AttributeError):
        return []


def _verified(paths: list[str], with_manifest: list[str], labelled: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """verify_file of every path, in order, on every core. A file of a dataset in
    `labelled` ({directory/: its ClassLabels' sizes}) has its labels tallied too."""

    def counts(path: str) -> dict[str, int]:
        inside = fs.join(fs.normpath(fs.dirname(path) or "."), "")
        return labelled.get(inside, {})

    return each_file(verify_file, [(p, any(p.startswith(d) for d in with_manifest), counts(p)) for p in paths])


def _notes(directory: str, files: list[dict[str, Any]]) -> list[str]:
    """What is worth saying about a dataset: compressed shards TFDS cannot read; shards of
    another dataset beside it (verified, and counted among the files, but not its own)."""
    inside = fs.join(fs.normpath(directory), "")
    mine = [f for f in files if fs.normpath(f["path"]).startswith(inside)]
    kinds = {f["compression"] for f in mine} - {"none"}
    notes = [compressed_note(kind) for kind in sorted(kinds)]
    try:
        name = ExistingDataset(directory).name
    except (SourceError, KeyError, TypeError, ValueError, AttributeError):
        return notes  # unreadable metadata: a problem verify_dataset reports
    others: dict[str, list[str]] = {}
    for f in mine:
        shard = ShardName.parse(f["path"])
        if shard is not None and shard.name != name:
            others.setdefault(shard.name, []).append(f)
    for other, theirs in sorted(others.items()):
        records = sum(f["records"] for f in theirs)
        notes.append(
            f"{counted(len(theirs), 'file')} of another dataset, {other!r} ({counted(records, 'record')}), "
            f"lie beside {name!r}: verified and counted above, not against its metadata"
        )
    return notes


def format_verify(report: dict[str, Any]) -> str:
    lines = []
    for f in report["files"]:
        if not f["problems"]:
            lines.append(f"OK    {f['path']}  {f['records']} records")
        for p in f["problems"]:
            at = f" at byte offset {p['offset']}" if p["offset"] is not None else ""
            lines.append(f"FAIL  {f['path']}: record {p['record']}{at}: {p['kind']}: {p['message']}")
    for d in report["datasets"]:
        for p in d["problems"]:
            lines.append(f"FAIL  {fs.join(d['path'], p['file'])}: {p['kind']}: {p['message']}")
        lines += [f"NOTE  {d['path']}: {note}" for note in d.get("notes", [])]
    n = report["problems"]
    lines.append(
        f"verified {counted(len(report['files']), 'file')}, {counted(report['records'], 'record')}: "
        + ("no problems" if n == 0 else f"{n} problem{'s' if n > 1 else ''}")
    )
    return "\n".join(lines)
