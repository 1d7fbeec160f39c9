"""The default report (records, bytes, compression, schema, first examples) and --count.

Counts come from the framing (as --count); the schema is inferred from the
examples themselves, the first SAMPLE of each file (every one with --all), so
the report's time follows --count's on big inputs. Records are read through
the checking reader.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import containers
from ..containers import MAX_RECORD_BYTES, Record
from ..errors import RecordError
from ..storage import fs
from .paths import resolve

# Records decoded per file for the schema, unless --all: enough to see every feature
# of a converter's output (they all write every feature) at a bounded cost.
SAMPLE = 100
PREVIEW = 10  # values shown of a list
# Features read of one record for the summary: real examples hold a few hundred at most;
# the cap bounds the time a record crafted with millions of empty ones can take.
MAX_FEATURES = 100_000


@dataclass
class FeatureStats:
    kinds: set[str | None] = field(default_factory=set)
    min_values: int | None = None
    max_values: int = 0
    total_values: int = 0
    records: int = 0

    def add(self, kind: str | None, n: int) -> None:
        self.kinds.add(kind)
        self.min_values = n if self.min_values is None else min(self.min_values, n)
        self.max_values = max(self.max_values, n)
        self.total_values += n
        self.records += 1

    def to_dict(self, total: int) -> dict[str, Any]:
        kinds = sorted(k or "unset" for k in self.kinds)
        return {
            "kind": kinds[0] if len(kinds) == 1 else kinds,
            "min_values": self.min_values,
            "max_values": self.max_values,
            "mean_values": round(self.total_values / self.records, 4) if self.records else 0,
            "present_in": self.records,
            "fraction": round(self.records / total, 6) if total else 0,
        }


def preview(value: Any, limit: int = 24) -> Any:
    """A JSON-friendly, abbreviated form of one feature value (a list: one step of a
    SequenceExample's feature list)."""
    if isinstance(value, list):
        return preview_values(value)
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


def preview_values(values: list[Any], limit: int = PREVIEW, total: int | None = None) -> list[Any]:
    """The first `limit` values, then how many there are (`total`: of a list cut short already)."""
    total = len(values) if total is None else total
    shown = [preview(v) for v in values[:limit]]
    if total > limit:
        shown.append(f"... ({total} values)")
    return shown


def examples_of(
    path: str,
    max_record: int = MAX_RECORD_BYTES,
    keep: int | None = None,
    max_entries: int | None = None,
    sound_only: bool = False,
) -> Iterator[tuple[Record, dict | None]]:
    """(record, parsed example) of every record of one file (of any container), checked
    as it is read; the example is None when the payload is not a tf.train.Example
    (worth counting, not fatal). A record above `max_record` bytes raises RecordError,
    and so does damage, unless `sound_only`: then the sound records are read past it
    (the container's salvage; what was lost is --verify's to report).
    With `keep`, examples are outlines ({name: (kind, first `keep` values, count)}), of at
    most `max_entries` features each (example.outline)."""
    from ..dataset.wire.example import ExampleDecodeError, outline, parse  # numpy: not needed by --count

    container = containers.of_file(path)
    items = container.salvage(path, max_record) if sound_only else container.records(path, max_record)
    for record in items:
        if not isinstance(record, Record):
            continue  # a loss
        try:
            yield record, parse(record.data) if keep is None else outline(record.data, keep, max_entries)
        except ExampleDecodeError:
            yield record, None


def file_kind(path: str) -> tuple[containers.Container, str]:
    """(the file's container, its compression: gzip / zlib for TFRecord, else none)."""
    container = containers.of_file(path)
    return container, container.compression(path)


def _file_entry(path: str, records: int, kind: tuple[containers.Container, str]) -> dict[str, Any]:
    return {"path": path, "records": records, "bytes": fs.getsize(path), "compression": kind[1], "format": kind[0].name}


def count(paths: list[str]) -> dict[str, Any]:
    """Records per file from the framing alone (length CRCs checked, payloads skipped)."""
    files = []
    for path in resolve(paths).files:
        kind = file_kind(path)
        files.append(_file_entry(path, kind[0].count(path), kind))
    return {
        "mode": "count",
        "files": files,
        "records": sum(f["records"] for f in files),
        "bytes": sum(f["bytes"] for f in files),
    }


def summarize(
    paths: list[str],
    head: int = 1,
    every: bool = False,
    max_record: int = MAX_RECORD_BYTES,
    sound_only: bool = False,
) -> dict[str, Any]:
    """Count, size, compression, schema and the first `head` examples of files; the
    schema from the first SAMPLE records of each file, or from all (`every`). With
    `sound_only`, damaged files are read for their sound records (examples_of)."""
    files = []
    schema: dict[str, FeatureStats] = {}
    examples: list[dict[str, Any]] = []
    total = undecodable = decoded = 0
    cut: list[dict[str, Any]] = []  # records read only in part
    for path in resolve(paths).files:
        file = file_kind(path)
        records = 0
        for record, example in examples_of(path, max_record, PREVIEW, MAX_FEATURES, sound_only):
            records += 1
            if not every and records > max(SAMPLE, head):
                records = _count(path, file[0], sound_only)  # the rest from the framing alone
                break
            decoded += 1
            if example is None:
                undecodable += 1
                continue
            if getattr(example, "cut_at", None) is not None:
                cut.append({"file": path, "record": record.index, "features_read": example.cut_at})
            for name, (kind, _, n) in example.items():
                schema.setdefault(name, FeatureStats()).add(kind, n)
            if len(examples) < head:
                examples.append(
                    {
                        "file": path,
                        "record": record.index,
                        "features": {
                            n: {"kind": k, "values": preview_values(v, total=c)}
                            for n, (k, v, c) in sorted(example.items())
                        },
                    }
                )
        total += records
        files.append(_file_entry(path, records, file))
    return {
        "mode": "summary",
        "files": files,
        "records": total,
        "bytes": sum(f["bytes"] for f in files),
        "schema": {name: stats.to_dict(decoded) for name, stats in sorted(schema.items())},
        "schema_from_records": decoded,
        "examples": examples,
        "undecodable_records": undecodable,
        "records_read_in_part": cut,
    }


def _count(path: str, container: containers.Container, sound_only: bool) -> int:
    """Records of a file from its framing; with `sound_only`, framing damage does not
    stop the count: the sound records are counted past it."""
    try:
        return container.count(path)
    except RecordError:
        if not sound_only:
            raise
        return sum(isinstance(item, Record) for item in container.salvage(path))


def counted(n: int, noun: str) -> str:
    """'1 file', '2 files'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def format_files(report: dict[str, Any]) -> list[str]:
    lines = []
    width = max(len(os.path.basename(f["path"])) for f in report["files"])
    for f in report["files"]:
        lines.append(
            f"{os.path.basename(f['path']):<{width}}  {f['records']:>9} records  "
            f"{human_bytes(f['bytes']):>10}  {f['format'] if f['format'] != 'tfrecord' else f['compression']}"
        )
    lines.append(
        f"total: {counted(report['records'], 'record')} in {counted(len(report['files']), 'file')}, "
        f"{human_bytes(report['bytes'])}"
    )
    return lines


def format_summary(report: dict[str, Any]) -> str:
    lines = format_files(report)
    if "schema" in report:
        sampled = report["schema_from_records"] < report["records"]
        of = f"from {report['schema_from_records']} records; --all for every one" if sampled else "every record"
        lines.append(f"schema ({of}):")
        nw = max([len(n) for n in report["schema"]] + [4])
        for name, s in report["schema"].items():
            lo, hi = s["min_values"], s["max_values"]
            counts = str(lo) if lo == hi else f"{lo}..{hi} (mean {s['mean_values']:g})"
            present = f"  in {s['fraction']:.1%} of records" if s["fraction"] < 1 else ""
            unit = "step(s)" if str(s["kind"]).startswith("feature_list") else "value(s)"
            lines.append(f"  {name:<{nw}}  {s['kind']!s:<10}  {counts} {unit}{present}")
        if report["undecodable_records"]:
            lines.append(f"undecodable records (not tf.train.Example): {report['undecodable_records']}")
        for part in report.get("records_read_in_part", []):
            lines.append(
                f"{part['file']} record {part['record']}: only its first {part['features_read']} features "
                "read for the schema (it holds more)"
            )
        for ex in report["examples"]:
            lines.append(f"example: {os.path.basename(ex['file'])} record {ex['record']}")
            for name, feat in ex["features"].items():
                lines.append(f"  {name}: {feat['values']}")
    return "\n".join(lines)
