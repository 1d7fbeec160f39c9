"""A schema for records that come without one: feature names, kinds, and whether each
holds a fixed number of values, from the first records, as `tfr-inspect` shows them.

What TFDS and `load()` then read: a feature holding one value in every record is a
scalar; n values in every record, a vector of n; any other count, a vector of unknown
length. Records that are not tf.train.Examples, a feature absent from some records, or
one of two kinds cannot be described to a reader that parses fixed features: the
records are still copied, with no schema, and the reason said.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import SourceError
from .features import FeatureSpec
from .wire.example import ExampleDecodeError, outline

#: records whose features decide the schema (the rest are copied unread)
SAMPLE = 1000

_DTYPES = {"int64_list": "int64", "float_list": "float32", "bytes_list": "string"}


@dataclass
class _Seen:
    kinds: set[str | None] = field(default_factory=set)
    counts: set[int] = field(default_factory=set)
    records: int = 0


class NoSchema(SourceError):
    """The records cannot be described by one schema; the message says why."""


Outlines = list[tuple[str, "dict[str, tuple[str | None, list, int]] | ExampleDecodeError"]]


def outlined(payloads: Iterable[tuple[str, bytes]], past_errors: bool = True) -> Outlines:
    """Each record's outline (its features' kinds and value counts, no values), or the
    error saying it is no tf.train.Example: all a schema is inferred from, small enough
    to keep for another inference of the same records. Without `past_errors`, nothing
    after the first such error is read (a schema of all records ends there)."""
    found: Outlines = []
    for where, payload in payloads:
        try:
            found.append((where, outline(payload, keep=0)))
        except ExampleDecodeError as e:
            found.append((where, e))
            if not past_errors:
                break
    return found


def infer_schema(
    payloads: Iterable[tuple[str, bytes]], majority: bool = False, absent: bool = False
) -> dict[str, FeatureSpec]:
    """FeatureSpecs of records given as (where, payload) pairs: schema_of their outlines."""
    return schema_of(outlined(payloads, past_errors=majority), majority, absent)


def schema_of(outlines: Outlines, majority: bool = False, absent: bool = False) -> dict[str, FeatureSpec]:
    """FeatureSpecs of records given by their outlines: NoSchema names the first record
    that is not a tf.train.Example, or the feature no schema can hold.

    `majority`: the schema of most records, for a reader that leaves out the others:
    what is not a tf.train.Example is passed over, and a feature missing from some
    records is kept when more than half hold it (else left out).
    `absent`: a feature missing from some records (a table's null under --nulls omit) is
    kept, as one a record may lack (FeatureSpec.of_absent), for a reader with nulls."""
    seen: dict[str, _Seen] = {}
    total = 0
    for where, example in outlines:
        if isinstance(example, ExampleDecodeError):
            if majority:
                continue
            raise NoSchema(f"{where}: not a tf.train.Example ({example}), so no schema can be inferred") from None
        total += 1
        for name, (kind, _, count) in example.items():
            entry = seen.setdefault(name, _Seen())
            entry.kinds.add(kind)
            entry.counts.add(count)
            entry.records += 1
    features = {}
    for name, entry in sorted(seen.items()):
        kinds = entry.kinds - {None}
        if len(kinds) != 1 or None in entry.kinds:
            raise NoSchema(f"feature {name!r} has kinds {sorted(k or 'unset' for k in entry.kinds)} across records")
        optional = entry.records != total and absent
        if entry.records != total and not absent:
            if not majority:
                raise NoSchema(f"feature {name!r} is missing from {total - entry.records} of the first {total} records")
            if entry.records * 2 <= total:
                continue
        dtype = _DTYPES[kinds.pop()]
        counts = entry.counts
        shape: tuple[int | None, ...] = () if counts == {1} else (counts.pop(),) if len(counts) == 1 else (None,)
        features[name] = FeatureSpec.tensor(dtype, shape).of_absent() if optional else FeatureSpec.tensor(dtype, shape)
    return features
