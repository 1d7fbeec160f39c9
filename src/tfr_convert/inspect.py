"""tfr-inspect: what is inside TFRecord files, without TensorFlow.

Reads every record through the checking reader (so a summary is also a CRC
verification), infers the schema from the examples themselves, and keeps the
first few examples to show.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import Any

from .errors import SourceError
from .example import ExampleDecodeError, parse
from .shards import ShardName
from .splits import SPLIT_ORDER
from .tfrecord import detect_compression, read_records

_METADATA_SUFFIXES = (".json", ".txt", ".png", ".md")


def _shard_sort_key(path: str) -> tuple:
    s = ShardName.parse(path)
    assert s is not None
    order = SPLIT_ORDER.index(s.split) if s.split in SPLIT_ORDER else len(SPLIT_ORDER)
    return (s.name, order, s.split, s.index)


def resolve_paths(paths: list[str]) -> list[str]:
    """Files named by PATH arguments: files, directories (their shards) or globs."""
    found: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            entries = sorted(os.path.join(p, e) for e in os.listdir(p) if not e.startswith("."))
            files = [e for e in entries if os.path.isfile(e)]
            shards = [e for e in files if ShardName.parse(e)]
            chosen = sorted(shards, key=_shard_sort_key) or [e for e in files if not e.endswith(_METADATA_SUFFIXES)]
            if not chosen:
                raise SourceError(f"{p}: directory holds no TFRecord files")
            found += chosen
        elif os.path.exists(p):
            found.append(p)
        else:
            matches = sorted(m for m in glob.glob(p) if os.path.isfile(m))
            if not matches:
                raise SourceError(f"{p}: no such file, directory or glob match")
            found += matches
    return found


@dataclass
class FeatureStats:
    kinds: set[str | None] = field(default_factory=set)
    min_values: int | None = None
    max_values: int = 0
    records: int = 0

    def add(self, kind: str | None, n: int) -> None:
        self.kinds.add(kind)
        self.min_values = n if self.min_values is None else min(self.min_values, n)
        self.max_values = max(self.max_values, n)
        self.records += 1

    def to_dict(self, total: int) -> dict[str, Any]:
        kinds = sorted(k or "unset" for k in self.kinds)
        return {
            "kind": kinds[0] if len(kinds) == 1 else kinds,
            "min_values": self.min_values,
            "max_values": self.max_values,
            "present_in": self.records,
            "missing_in": total - self.records,
        }


def preview(value: Any, limit: int = 24) -> Any:
    """A JSON-friendly, abbreviated form of one feature value."""
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
            if text.isprintable() and len(text) <= limit * 2:
                return text
        except UnicodeDecodeError:
            pass
        head = value[:limit].hex()
        return f"<{len(value)} bytes: {head}{'...' if len(value) > limit else ''}>"
    return value


def preview_values(values: list[Any], limit: int = 10) -> list[Any]:
    shown = [preview(v) for v in values[:limit]]
    if len(values) > limit:
        shown.append(f"... ({len(values)} values)")
    return shown


def summarize(paths: list[str], head: int = 1, count_only: bool = False) -> dict[str, Any]:
    """Count, size, compression, schema and the first `head` examples of files."""
    files = []
    schema: dict[str, FeatureStats] = {}
    examples: list[dict[str, Any]] = []
    total = undecodable = 0
    for path in resolve_paths(paths):
        with open(path, "rb") as f:
            compression = detect_compression(f.read(12))
        records = 0
        for record in read_records(path, compression):
            records += 1
            if count_only:
                continue
            try:
                example = parse(record.data)
            except ExampleDecodeError:
                # Framing is intact (CRCs passed) but the payload is some other
                # message: worth reporting, not a reason to stop.
                undecodable += 1
                continue
            for name, (kind, values) in example.items():
                schema.setdefault(name, FeatureStats()).add(kind, len(values))
            if len(examples) < head:
                examples.append(
                    {
                        "file": path,
                        "record": record.index,
                        "features": {
                            n: {"kind": k, "values": preview_values(v)} for n, (k, v) in sorted(example.items())
                        },
                    }
                )
        total += records
        files.append({"path": path, "records": records, "bytes": os.path.getsize(path), "compression": compression})
    report: dict[str, Any] = {
        "files": files,
        "records": total,
        "bytes": sum(f["bytes"] for f in files),
    }
    if not count_only:
        report["schema"] = {name: stats.to_dict(total) for name, stats in sorted(schema.items())}
        report["examples"] = examples
        report["undecodable_records"] = undecodable
    return report


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def format_report(report: dict[str, Any]) -> str:
    """The human-readable form of `summarize`'s report."""
    lines = []
    width = max(len(os.path.basename(f["path"])) for f in report["files"])
    for f in report["files"]:
        lines.append(
            f"{os.path.basename(f['path']):<{width}}  {f['records']:>9} records  "
            f"{human_bytes(f['bytes']):>10}  {f['compression']}"
        )
    lines.append(f"total: {report['records']} records in {len(report['files'])} files, {human_bytes(report['bytes'])}")
    if "schema" in report:
        lines.append("schema:")
        nw = max([len(n) for n in report["schema"]] + [4])
        for name, s in report["schema"].items():
            counts = (
                str(s["min_values"]) if s["min_values"] == s["max_values"] else f"{s['min_values']}..{s['max_values']}"
            )
            missing = f"  (missing in {s['missing_in']})" if s["missing_in"] else ""
            lines.append(f"  {name:<{nw}}  {s['kind']!s:<10}  {counts} value(s){missing}")
        if report["undecodable_records"]:
            lines.append(f"undecodable records (not tf.train.Example): {report['undecodable_records']}")
        for ex in report["examples"]:
            lines.append(f"example: {os.path.basename(ex['file'])} record {ex['record']}")
            for name, feat in ex["features"].items():
                lines.append(f"  {name}: {feat['values']}")
    return "\n".join(lines)
