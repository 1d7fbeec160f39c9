"""--verify: every record's framing and both CRCs, and a dataset directory against its metadata.

Every problem is reported (not just the first): after a data-CRC mismatch the
scan goes on to the next record; any other framing problem ends that file's
scan, since where the next record starts is then unknown.
"""

from __future__ import annotations

import os
from typing import Any

from ..shards import ShardName
from ..tfrecord import HashingReader, Problem, scan_records
from .paths import compression_of, load_json, resolve


def verify_file(path: str, with_sha256: bool = False) -> dict[str, Any]:
    """Problems of one file; its sha256 too when asked (a manifest lists one to compare)."""
    compression = compression_of(path)
    problems, records = [], 0
    with open(path, "rb", buffering=8 << 10) as f:
        reader = HashingReader(f) if with_sha256 else None
        for item in scan_records(path, compression, payload="check", raw=reader):  # type: ignore[arg-type]
            records += 1
            if isinstance(item, Problem):
                problems.append(
                    {"record": item.index, "offset": item.offset, "kind": item.kind, "message": item.message}
                )
                if item.kind != "data_crc":
                    records -= 1  # the damaged record was not a record
        if reader is not None:
            reader.drain()
    result: dict[str, Any] = {
        "path": path,
        "compression": compression,
        "records": records,
        "bytes": os.path.getsize(path),
        "problems": problems,
    }
    if reader is not None:
        result["sha256"] = reader.hash.hexdigest()
    return result


def verify_dataset(directory: str, checked: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    """Shards of a dataset directory against dataset_info.json and manifest.json."""
    problems: list[dict[str, str]] = []
    info = load_json(directory, "dataset_info.json")
    manifest = load_json(directory, "manifest.json") or {}
    if not isinstance(info, dict) or "splits" not in info:
        return [{"kind": "metadata", "file": "dataset_info.json", "message": "no splits in dataset_info.json"}]
    recorded = {
        shard["file"]: shard
        for split in (manifest.get("splits") or {}).values()
        for shard in split.get("shards", [])
        if isinstance(shard, dict) and "file" in shard
    }
    expected = set()
    for split in info["splits"]:
        lengths = [int(n) for n in split.get("shardLengths", [])]
        for i, length in enumerate(lengths):
            name = ShardName(info["name"], split["name"], i, len(lengths)).filename
            expected.add(name)
            path = os.path.join(directory, name)
            result = checked.get(os.path.normpath(path))
            if not os.path.exists(path):
                problems.append(
                    {"kind": "missing_shard", "file": name, "message": "listed in dataset_info.json, absent"}
                )
                continue
            if result is None:
                continue
            framing_ok = not any(p["kind"] != "data_crc" for p in result["problems"])
            if framing_ok and result["records"] != length:
                problems.append(
                    {
                        "kind": "record_count",
                        "file": name,
                        "message": f"{result['records']} records, dataset_info.json says {length}",
                    }
                )
            entry = recorded.get(name)
            if entry is not None:
                if entry.get("bytes") != result["bytes"]:
                    problems.append(
                        {
                            "kind": "byte_count",
                            "file": name,
                            "message": f"{result['bytes']} bytes, manifest.json says {entry.get('bytes')}",
                        }
                    )
                if entry.get("sha256") != result.get("sha256"):
                    problems.append({"kind": "sha256", "file": name, "message": "sha256 differs from manifest.json"})
    for entry in sorted(os.listdir(directory)):
        shard = ShardName.parse(entry)
        if shard and shard.name == info["name"] and entry not in expected:
            problems.append({"kind": "unexpected_shard", "file": entry, "message": "not in dataset_info.json"})
    return problems


def verify(paths: list[str]) -> dict[str, Any]:
    inputs = resolve(paths)
    # sha256 costs more than reading and CRC together: only where a manifest has one to compare
    with_manifest = [d.rstrip("/") + "/" for d in inputs.datasets if os.path.exists(os.path.join(d, "manifest.json"))]
    files = [verify_file(p, any(p.startswith(d) for d in with_manifest)) for p in inputs.files]
    by_path = {os.path.normpath(f["path"]): f for f in files}
    datasets = [{"path": d, "problems": verify_dataset(d, by_path)} for d in inputs.datasets]
    count = sum(len(f["problems"]) for f in files) + sum(len(d["problems"]) for d in datasets)
    return {
        "mode": "verify",
        "ok": count == 0,
        "files": files,
        "datasets": datasets,
        "records": sum(f["records"] for f in files),
        "problems": count,
    }


def format_verify(report: dict[str, Any]) -> str:
    lines = []
    for f in report["files"]:
        if not f["problems"]:
            lines.append(f"OK    {f['path']}  {f['records']} records")
        for p in f["problems"]:
            lines.append(
                f"FAIL  {f['path']}: record {p['record']} at byte offset {p['offset']}: {p['kind']}: {p['message']}"
            )
    for d in report["datasets"]:
        for p in d["problems"]:
            lines.append(f"FAIL  {os.path.join(d['path'], p['file'])}: {p['kind']}: {p['message']}")
    n = report["problems"]
    lines.append(
        f"verified {len(report['files'])} files, {report['records']} records: "
        + ("no problems" if n == 0 else f"{n} problem{'s' if n > 1 else ''}")
    )
    return "\n".join(lines)
