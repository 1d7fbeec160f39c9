"""`tfr-inspect ROOT` or `tfr-inspect ROOT/NAME` of datasets in TFDS's data_dir layout
(ROOT/NAME/VERSION/, as --append and --layout tfds write them): each dataset's versions,
oldest first, with their examples per split, their shards and bytes, and for a version
an --append made, what it adds to which version and which shards it shares with it
(hard links or copies: the bytes it holds that the older version does not hold too).
"""

from __future__ import annotations

from typing import Any

from ..dataset.existing import ExistingDataset
from ..dataset.versions import named_datasets, versions
from ..storage import fs
from .summary import counted, human_bytes


def held_versions(path: str) -> dict[str, str] | None:
    """{NAME: its folder} of the datasets a data_dir (ROOT) or a dataset's folder
    (ROOT/NAME) holds in versions; None when `path` is neither."""
    if not fs.isdir(path) or ExistingDataset.holds_dataset(path):
        return None
    if any(not name.startswith(".") for name in fs.files_in(path)):
        return None  # files of its own (shards): no folder of versions, and no entry of it looked into
    if versions(path):
        return {fs.basename(fs.normpath(path)): path}
    names = named_datasets(path)
    return {name: fs.join(path, name) for name in names} or None


def _version(folder: str, version: str) -> dict[str, Any]:
    dataset = ExistingDataset(fs.join(folder, version))
    recorded = (dataset.manifest.get("splits") or {}) if dataset.manifest else {}
    splits = {}
    for split, lengths in dataset.splits().items():
        shards = (recorded.get(split) or {}).get("shards") or []
        size = sum(s.get("bytes", 0) for s in shards) if shards else None
        splits[split] = {"examples": sum(lengths), "shards": len(lengths), "bytes": size}
    record = dataset.manifest.get("version") if isinstance(dataset.manifest.get("version"), dict) else {}
    shared = {s for names in (record.get("shared_shards") or {}).values() for s in names}
    sizes = [s.get("bytes", 0) for split in recorded.values() for s in (split.get("shards") or [])]
    own = [
        s.get("bytes", 0) for split in recorded.values() for s in (split.get("shards") or []) if s["file"] not in shared
    ]
    return {
        "version": version,
        "splits": splits,
        "bytes": sum(sizes) if sizes else None,
        "new_bytes": sum(own) if sizes else None,
        "parent": record.get("parent"),
        "added": record.get("added"),
        "shared_shards": len(shared),
    }


def report(path: str, datasets: dict[str, str]) -> dict[str, Any]:
    return {
        "mode": "versions",
        "path": path,
        "datasets": {name: [_version(folder, v) for v in versions(folder)] for name, folder in datasets.items()},
    }


def format_versions(report: dict[str, Any]) -> str:
    lines = []
    for name, held in report["datasets"].items():
        lines.append(f"{name}: {counted(len(held), 'version')} (tfds.load('{name}', ...) reads {held[-1]['version']})")
        for v in held:
            per_split = ", ".join(f"{split} {s['examples']}" for split, s in v["splits"].items())
            shards = sum(s["shards"] for s in v["splits"].values())
            size = f", {human_bytes(v['bytes'])}" if v["bytes"] is not None else ""
            line = f"  {v['version']}  {per_split} examples in {counted(shards, 'shard')}{size}"
            if v["parent"]:
                added = sum((v["added"] or {}).values())
                line += (
                    f"  (adds {added} to {v['parent']}, shares its {counted(v['shared_shards'], 'shard')}: "
                    f"{human_bytes(v['new_bytes'] or 0)} of its own)"
                )
            lines.append(line)
    return "\n".join(lines)
