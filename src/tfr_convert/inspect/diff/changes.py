"""What changed: the features of a changed record (pictures by their pixels), the schema,
the class names."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ... import containers
from ...dataset.imageformat import sniff_format
from ...dataset.wire.example import FLOAT, ExampleDecodeError, parse
from ..summary import preview_values

if TYPE_CHECKING:
    from .matching import Entry
    from .sides import Side

_MAX_PIXELS = 25_000_000  # pictures compared pixel by pixel at most this large


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


def detail(pairs: list[tuple[Entry, Entry]]) -> Iterator[dict[str, Any]]:
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
