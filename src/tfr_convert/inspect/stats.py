"""--stats: per-feature statistics in the spirit of TensorFlow Data Validation.

Numbers: min / max / mean / std / zeros (and NaNs). Strings and bytes: unique
count, top values, lengths. Integer labels: a histogram. Image bytes: the
format histogram (from magic bytes) and width / height ranges (from headers,
without decoding). On a dataset directory: image bytes that occur in more
than one split (train/test leakage).

Memory is bounded per feature: distinct values are tracked as 16-byte digests
up to MAX_DISTINCT, after which the unique count is reported as a lower bound.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import math
import os
from array import array
from collections import Counter
from typing import Any

from ..containers import MAX_RECORD_BYTES
from ..dataset import order_quality
from ..dataset.existing import ExistingDataset, class_names
from ..dataset.imageformat import sniff_format
from ..dataset.near_duplicates import THRESHOLD, fingerprint, near_pairs
from ..dataset.wire.example import BYTES, FLOAT, INT64
from .kinds.boxes import BoxStats, format_boxes
from .kinds.distribution import Distribution
from .kinds.masks import InstanceStats, MaskStats
from .kinds.roles import is_instance_mask, is_mask
from .paths import resolve, split_of
from .summary import examples_of, preview

MAX_DISTINCT = 100_000
TOP = 5
_SHORT = 64  # values longer than this are not candidates for "top values"
LISTED_NEAR = 20  # near-duplicate pairs listed (all are counted)


def _digest(value: bytes) -> bytes:
    return hashlib.blake2b(value, digest_size=16).digest()


def _image_size(value: bytes) -> tuple[int, int] | None:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(value)) as im:  # reads the header only
            return im.size
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None  # an unreadable header simply has no size


class NumberStats:
    def __init__(self, integer: bool = True) -> None:
        self.count = self.zeros = self.nans = 0
        self.total = self.squares = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.spread = Distribution(integer)  # the values' histogram

    def add(self, values: list[float]) -> None:
        for v in values:
            if v != v:
                self.nans += 1
                continue
            self.count += 1
            self.total += v
            self.squares += float(v) * v
            self.zeros += v == 0
            self.min = min(self.min, v)
            self.max = max(self.max, v)
            self.spread.add(v)

    def to_dict(self) -> dict[str, Any]:
        if not self.count:
            return {"values": 0, "nans": self.nans}
        mean = self.total / self.count
        var = max(self.squares / self.count - mean * mean, 0.0)
        return {
            "values": self.count,
            "min": self.min,
            "max": self.max,
            "mean": mean,
            "std": math.sqrt(var),
            "zeros": self.zeros,
            "nans": self.nans,
            "distribution": self.spread.to_dict(),
        }


class BytesStats:
    def __init__(self, image_like: bool) -> None:
        self.image_like = image_like
        self.count = 0
        self.min_len, self.max_len, self.total_len = math.inf, 0, 0
        self.distinct: set[bytes] = set()
        self.saturated = False
        self.top: Counter[bytes] = Counter()
        self.formats: Counter[str] = Counter()
        self.widths: list[int] = []
        self.heights: list[int] = []
        self.sizes = {"width": Distribution(), "height": Distribution(), "aspect": Distribution(integer=False)}

    def add(self, values: list[bytes]) -> None:
        for v in values:
            self.count += 1
            n = len(v)
            self.min_len, self.max_len, self.total_len = min(self.min_len, n), max(self.max_len, n), self.total_len + n
            if not self.saturated:
                self.distinct.add(_digest(v))
                self.saturated = len(self.distinct) >= MAX_DISTINCT
            if n <= _SHORT and len(self.top) < MAX_DISTINCT:
                self.top[v] += 1
            fmt = sniff_format(v)
            if fmt is not None:
                self.formats[fmt] += 1
                size = _image_size(v)
                if size is not None:
                    w, h = size
                    self.widths = [min(self.widths[0], w), max(self.widths[1], w)] if self.widths else [w, w]
                    self.heights = [min(self.heights[0], h), max(self.heights[1], h)] if self.heights else [h, h]
                    self.sizes["width"].add(w)
                    self.sizes["height"].add(h)
                    if h > 0:
                        self.sizes["aspect"].add(w / h)
            elif self.image_like:
                self.formats["raw"] += 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "values": self.count,
            "unique": len(self.distinct),
            "unique_is_lower_bound": self.saturated,
            "length": {
                "min": self.min_len if self.count else 0,
                "max": self.max_len,
                "mean": self.total_len / self.count if self.count else 0,
            },
            "top": [{"value": preview(v), "count": c} for v, c in self.top.most_common(TOP)],
        }
        if self.formats:
            out["image"] = {
                "formats": dict(sorted(self.formats.items())),
                "width": self.widths,
                "height": self.heights,
                "distribution": {k: d.to_dict() for k, d in self.sizes.items()},
            }
        return out


def _image_like(name: str) -> bool:
    """Bytes that are pixels when they are no known format: `image`, `image_raw`,
    `image/encoded`, but not `image/filename`."""
    last = name.rsplit("/", 1)[-1]
    return "image" in last or last == "encoded"


def _filename(example: dict[str, Any]) -> str | None:
    kind, values = example.get("filename", (None, []))
    return values[0].decode("utf-8", "replace") if kind == BYTES and values else None


def stats(paths: list[str], max_record: int = MAX_RECORD_BYTES, sound_only: bool = False) -> dict[str, Any]:
    """The figures of every record (`sound_only`: of every sound record of damaged files)."""
    inputs = resolve(paths)
    names: dict[str, list[str]] = {}  # class names of the label features that have them
    label_features: set[str] = set()
    for d in inputs.datasets:
        names.update(class_names(d))
        label_features |= set(class_names(d))
        label_features |= {
            n for n, f in ExistingDataset(d).features.items() if isinstance(f, dict) and "classLabel" in f
        }
    in_dataset = {p for d in inputs.datasets for p in inputs.files if p.startswith(d.rstrip("/") + "/")}
    figures = _Figures(names, label_features, several_splits=len({split_of(p) for p in in_dataset}) > 1)
    for path in inputs.files:
        split = split_of(path) if path in in_dataset else None
        if split:
            figures.per_split.setdefault(split, {"records": 0, "histograms": {}})  # listed, even empty
        for record, example in examples_of(path, max_record, sound_only=sound_only):
            figures.add(path, split, record.index, len(record.data), example)
    report: dict[str, Any] = {
        "mode": "stats",
        "records": figures.records,
        "undecodable_records": figures.undecodable,
        "record_bytes": figures.record_bytes.to_dict(),
        "features": {name: figures.feature(name) for name in sorted(figures.kinds)},
    }
    if figures.boxes.images:
        report["boxes"] = figures.boxes.to_dict()
    if figures.orders:  # how well the reading order mixes each label (a class-sorted file shows as long runs)
        report["order"] = {}
        for (split, name), labels in figures.orders.items():
            report["order"].setdefault(split or "all", {})[name] = order_quality.figure(labels)
    if inputs.datasets:
        report["splits"] = figures.splits()
        report["leakage"] = figures.leakage()
    return report


class _Figures:
    """What `stats` gathers, record by record: per feature (kinds, numbers, strings, masks,
    label histograms, steps), per split, and the image values seen in several splits."""

    def __init__(self, names: dict[str, list[str]], label_features: set[str], several_splits: bool) -> None:
        self.names, self.label_features, self.several_splits = names, label_features, several_splits
        self.records = self.undecodable = 0
        self.record_bytes = Distribution()
        self.boxes = BoxStats()
        self.kinds: dict[str, set[str | None]] = {}
        self.present: Counter[str] = Counter()  # records holding at least one value of each feature
        self.numbers: dict[str, NumberStats] = {}
        self.strings: dict[str, BytesStats] = {}
        self.masks: dict[str, MaskStats] = {}
        self.instances: dict[str, InstanceStats] = {}
        self.histograms: dict[str, Counter[int]] = {}
        self.steps: dict[str, NumberStats] = {}  # a SequenceExample's feature lists: steps per record
        self.per_split: dict[str, dict[str, Any]] = {}  # split -> {records, histograms}, for a dataset directory
        # (split, or None for files outside a dataset; feature) -> its single labels in reading order
        self.orders: dict[tuple[str | None, str], array] = {}
        # leakage: digest of an image value -> {split: first (file, record, its filename feature)}
        self.seen_in: dict[tuple[str, bytes], dict[str, tuple[str, int, str | None]]] = {}
        # near-duplicate candidates: (hash, split, file, record, filename, digest) of each image value
        self.perceptual: list[tuple[int, str, str, int, str | None, bytes]] = []

    def add(self, path: str, split: str | None, index: int, size: int, example: dict[str, Any] | None) -> None:
        """One record of `path` (of `split`, for a dataset's file), `example` None if it does not decode."""
        self.records += 1
        self.record_bytes.add(size)
        split_stats = self.per_split[split] if split else None
        if split_stats is not None:
            split_stats["records"] += 1
        if example is None:
            self.undecodable += 1
            return
        self.boxes.add(example, self.names)
        for name, (kind, values) in example.items():
            self.kinds.setdefault(name, set()).add(kind)
            if values:
                self.present[name] += 1
            if kind in (INT64, FLOAT):
                self.numbers.setdefault(name, NumberStats(kind == INT64)).add(values)
                if kind == INT64 and (name in self.label_features or "label" in name):
                    self._add_labels(name, values, split, split_stats)
            elif kind is not None and kind.startswith("feature_list"):
                self.steps.setdefault(name, NumberStats()).add([len(values)])
            elif kind == BYTES:
                self._add_bytes(name, values, split, path, index, example)

    def _add_labels(self, name: str, values: list[int], split: str | None, split_stats: dict[str, Any] | None) -> None:
        self.histograms.setdefault(name, Counter()).update(values)
        if len(values) == 1:
            self.orders.setdefault((split, name), array("q")).append(values[0])
        if split_stats is not None:
            split_stats["histograms"].setdefault(name, Counter()).update(values)

    def _add_bytes(
        self, name: str, values: list[bytes], split: str | None, path: str, index: int, example: dict[str, Any]
    ) -> None:
        acc = self.strings.setdefault(name, BytesStats(_image_like(name)))
        acc.add(values)
        if is_instance_mask(name):
            self.instances.setdefault(name, InstanceStats()).add(values)
        elif is_mask(name):
            self.masks.setdefault(name, MaskStats()).add(values)
        if split is None or not acc.formats or is_mask(name):  # masks repeat by nature
            return
        filename = _filename(example)
        for v in values:
            digest = _digest(v)
            refs = self.seen_in.setdefault((name, digest), {})
            refs.setdefault(split, (path, index, filename))
            if self.several_splits and sniff_format(v):
                h = fingerprint(v)
                if h is not None:
                    self.perceptual.append((h, split, path, index, filename, digest))

    def feature(self, name: str) -> dict[str, Any]:
        """One feature's entry of the report."""
        entry: dict[str, Any] = {"kind": sorted(k or "unset" for k in self.kinds[name])}
        if len(entry["kind"]) == 1:
            entry["kind"] = entry["kind"][0]
        decoded = self.records - self.undecodable
        # records without a value: the feature absent (a null left out) or an empty list
        entry["missing"] = decoded - self.present[name]
        entry["missing_share"] = round((decoded - self.present[name]) / decoded, 6) if decoded else 0.0
        if name in self.numbers:
            entry.update(self.numbers[name].to_dict())
        if name in self.steps:
            entry["steps"] = {k: v for k, v in self.steps[name].to_dict().items() if k in ("min", "max", "mean")}
        if name in self.strings:
            entry.update(self.strings[name].to_dict())
        known = self.names.get(name, [])
        if name in self.masks:  # pixels per class index, and images showing each
            mask = entry["mask"] = self.masks[name].to_dict()
            if known:
                mask["class_names"] = {k: known[int(k)] for k in mask["pixels"] if int(k) < len(known)}
        if name in self.instances:  # masks per image
            entry["instances"] = self.instances[name].to_dict()
        if name in self.histograms:
            entry["histogram"] = {str(k): v for k, v in sorted(self.histograms[name].items())}
            if name in self.names:  # index -> class name, for the indices that have one
                entry["class_names"] = {str(k): known[k] for k in sorted(self.histograms[name]) if 0 <= k < len(known)}
        return entry

    def splits(self) -> dict[str, Any]:
        return {
            split: {
                "records": s["records"],
                "histograms": {
                    n: {str(k): v for k, v in sorted(h.items())} for n, h in sorted(s["histograms"].items())
                },
            }
            for split, s in self.per_split.items()
        }

    def leakage(self) -> dict[str, Any]:
        """The image values found in several splits, exactly and near."""
        leaks = [
            {
                "feature": name,
                "splits": sorted(refs),
                "records": [
                    {"file": f, "record": i, **({"filename": n} if n is not None else {})} for f, i, n in refs.values()
                ],
            }
            for (name, _), refs in self.seen_in.items()
            if len(refs) > 1
        ]
        near_count, near = near_duplicate_pairs(self.perceptual)
        return {
            "images_in_several_splits": len(leaks),
            "examples": leaks[:10],
            "near_duplicate_pairs": near_count,
            "near_duplicates": near,
        }


def near_duplicate_pairs(
    pairs: list[tuple[tuple[int, bytes], str, str, int, str | None, bytes]],
) -> tuple[int, list[dict[str, Any]]]:
    """(how many, the first LISTED_NEAR) pairs of images in different splits whose hashes
    are close and whose colours agree but whose bytes differ (identical ones are the exact
    leaks), closest first, then in record order. Images sharing one fingerprint are looked
    up in the index once and
    their pairs counted from how many lie in each split and have each digest, so a
    thousand copies of a picture do not make a million comparisons."""
    groups: dict[tuple[int, bytes], list[int]] = {}
    for position, entry in enumerate(pairs):
        groups.setdefault(entry[0], []).append(position)
    prints = list(groups)
    linked = [(p, p, 0) for p in prints if len(groups[p]) > 1]
    linked += [(prints[a], prints[b], d) for a, b, d in near_pairs(prints)]
    total, listed = 0, []
    for first, second, distance in linked:
        one, other = groups[first], groups[second]
        count = _pairs_apart(pairs, one, other if first != second else None)
        if count:
            total += count
            listed += [(distance, i, j) for i, j in _first_pairs_apart(pairs, one, other, first == second)]
    listed.sort()
    return total, [
        {
            "distance": distance,
            "records": [
                {"split": s, "file": f, "record": r, **({"filename": n} if n is not None else {})}
                for _, s, f, r, n, _ in (pairs[i], pairs[j])
            ],
        }
        for distance, i, j in listed[:LISTED_NEAR]
    ]


def _pairs_apart(pairs: list[tuple], one: list[int], other: list[int] | None) -> int:
    """Pairs of one group's records (other None) or across two groups that lie in different
    splits and have different bytes: all pairs, less those sharing a split or bytes, plus
    those sharing both (taken away twice)."""

    def tally(members: list[int]) -> tuple[Counter, Counter, Counter]:
        return (
            Counter(pairs[m][1] for m in members),
            Counter(pairs[m][5] for m in members),
            Counter((pairs[m][1], pairs[m][5]) for m in members),
        )

    if other is None:
        n = len(one)
        by = tally(one)
        same = [sum(c * (c - 1) // 2 for c in counts.values()) for counts in by]
        return n * (n - 1) // 2 - same[0] - same[1] + same[2]
    mine, theirs = tally(one), tally(other)
    same = [sum(c * theirs[i][k] for k, c in mine[i].items()) for i in range(3)]
    return len(one) * len(other) - same[0] - same[1] + same[2]


def _first_pairs_apart(
    near: list[tuple], one: list[int], other: list[int], within: bool, budget: int = 200_000
) -> list[tuple[int, int]]:
    """The first LISTED_NEAR such pairs (i < j) in record order: for each record in turn,
    its partners (the other group's records, or its own group's) that lie later in other
    splits, bytes compared. `budget` bounds the records looked at (a group of thousands
    of byte-identical copies is passed over at that cost, not a quadratic one)."""
    sides = {id(one): one, id(other): other}
    by_split: dict[int, dict[str, list[int]]] = {}
    for key, members in sides.items():
        split_lists: dict[str, list[int]] = {}
        for m in sorted(members):
            split_lists.setdefault(near[m][1], []).append(m)
        by_split[key] = split_lists
    own = set(one)
    pairs: list[tuple[int, int]] = []
    for i in sorted(own | set(other)):
        partners = by_split[id(other)] if i in own and not within else by_split[id(one)]
        mine: list[tuple[int, int]] = []
        for split, members in partners.items():
            if split == near[i][1]:
                continue
            for j in members[bisect.bisect_right(members, i) :]:
                budget -= 1
                if budget < 0:
                    return sorted(pairs + mine)[:LISTED_NEAR]
                if near[j][5] != near[i][5]:
                    mine.append((i, j))
                    if len(mine) == LISTED_NEAR:
                        break
        pairs += sorted(mine)
        if len(pairs) >= LISTED_NEAR:
            return pairs[:LISTED_NEAR]
    return pairs


def format_stats(report: dict[str, Any]) -> str:
    lines = [f"{report['records']} records"]
    for name, f in report["features"].items():
        lines += _feature_lines(name, f)
    for name, f in report["features"].items():
        lines += _mask_lines(name, f)
    if "boxes" in report:
        lines.append(format_boxes(report["boxes"]))
    for split, figures in report.get("order", {}).items():
        for name, figure in figures.items():
            lines.append(f"order of {name} in {split}: {order_quality.verdict(figure)}")
    for split, s in report.get("splits", {}).items():
        parts = [f"{split}: {s['records']} records"]
        for name, histogram in s["histograms"].items():
            named = report["features"].get(name, {}).get("class_names", {})
            parts.append(f"{name} " + ", ".join(f"{named.get(k, k)}: {v}" for k, v in histogram.items()))
        lines.append("; ".join(parts))
    if "leakage" in report:
        lines += _leakage_lines(report["leakage"])
    return "\n".join(lines)


def _feature_lines(name: str, f: dict[str, Any]) -> list[str]:
    lines = [f"{name} ({f['kind']}):"]
    if "mean" in f:
        lines.append(
            f"  min {f['min']:g}  max {f['max']:g}  mean {f['mean']:.4g}  std {f['std']:.4g}  "
            f"zeros {f['zeros']}  nans {f['nans']}"
        )
    if "steps" in f:
        lines.append(f"  steps per record {f['steps']['min']}..{f['steps']['max']} (mean {f['steps']['mean']:.4g})")
    if f.get("missing"):
        records = "record" if f["missing"] == 1 else "records"
        lines.append(f"  missing in {f['missing']} {records} ({f['missing_share']:.1%})")
    if "histogram" in f:
        named = f.get("class_names", {})
        lines.append("  histogram: " + ", ".join(f"{named.get(k, k)}: {v}" for k, v in f["histogram"].items()))
    if "unique" in f:
        bound = "+" if f["unique_is_lower_bound"] else ""
        length = f["length"]
        lines.append(
            f"  unique {f['unique']}{bound}  length {length['min']}..{length['max']} (mean {length['mean']:.1f})"
        )
        if f["top"] and not f.get("image"):
            lines.append("  top: " + ", ".join(f"{t['value']!r} x{t['count']}" for t in f["top"]))
    if f.get("image"):
        image = f["image"]
        formats = ", ".join(f"{k} {v}" for k, v in image["formats"].items())
        size = (
            f"  width {image['width'][0]}..{image['width'][1]}  height {image['height'][0]}..{image['height'][1]}"
            if image["width"]
            else ""
        )
        lines.append(f"  images: {formats}{size}")
    return lines


def _mask_lines(name: str, f: dict[str, Any]) -> list[str]:
    lines = []
    if "mask" in f:
        mask = f["mask"]
        total = sum(mask["pixels"].values())
        named = mask.get("class_names", {})
        shares = ", ".join(
            f"{named.get(k, k)} {n / total:.1%} (in {mask['images_with'][k]}, {mask['images_share'][k]:.0%})"
            for k, n in mask["pixels"].items()
        )
        lines.append(f"{name}: pixels per class in {mask['masks']} masks (images with it): {shares}")
    if "instances" in f:
        seen = f["instances"]
        lines.append(
            f"{name}: {seen['instances']} instance masks in {seen['images']} images "
            f"({seen['images_without']} without any), per image up to {seen['per_image']['max']} "
            f"(mean {seen['per_image']['mean']:.2f})"
        )
    return lines


def _leakage_lines(leak: dict[str, Any]) -> list[str]:
    lines = [f"leakage: {leak['images_in_several_splits']} images appear in more than one split"]
    for ex in leak["examples"]:
        refs = "; ".join(
            r.get("filename") or f"{os.path.basename(r['file'])} record {r['record']}" for r in ex["records"]
        )
        lines.append(f"  {ex['feature']} in {', '.join(ex['splits'])}: {refs}")
    lines.append(
        f"near-duplicates: {leak['near_duplicate_pairs']} pairs of similar images in different splits "
        f"(perceptual hash within {THRESHOLD} of 64 bits)"
    )
    for pair in leak["near_duplicates"]:
        refs = " ~ ".join(
            f"{r['split']}:" + (r.get("filename") or f"{os.path.basename(r['file'])} record {r['record']}")
            for r in pair["records"]
        )
        lines.append(f"  {refs} (distance {pair['distance']})")
    return lines
