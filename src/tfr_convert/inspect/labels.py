"""--verify of a dataset's labels against their ClassLabel: every value of a feature the
metadata declares a ClassLabel of N names must be one of 0..N-1. A value past them is a
problem (its records read as no class, or as another one); -1 is a note, not a problem:
TFDS's own ClassLabel encodes it as "no label" (GLUE's test splits hold it), though
`tfr-convert` refuses to write it. Each shard is tallied where it is verified (`tally`,
in verify's pool), the findings put together per dataset (`label_findings`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .. import containers
from ..dataset.existing import ExistingDataset
from ..dataset.wire.entries import INT64, few_values_of
from ..errors import RecordError, SourceError

NO_LABEL = -1  # TFDS's ClassLabel: the example has no label


def class_counts(directory: str) -> dict[str, int]:
    """{record key: how many names} of every ClassLabel a dataset's metadata declares
    ({} where it declares none, or cannot be read: verify_dataset reports that)."""
    counts = {}
    try:
        described = ExistingDataset(directory).flat_features
    except (SourceError, KeyError, TypeError, ValueError, AttributeError):
        return {}
    for name, (description, _, _) in described.items():
        declared = description.get("classLabel") if isinstance(description, dict) else None
        try:
            counts[name] = int((declared or {})["numClasses"])
        except (KeyError, TypeError, ValueError):
            continue
    return counts


def tally(path: str, counts: dict[str, int]) -> dict[str, Any]:
    """{feature: [{value: records}, index of the first record]} of the labels of one
    file outside their names."""
    names = {name.encode(): n for name, n in counts.items()}
    tallied: dict[str, Any] = {}
    try:
        for record in containers.of_file(path).records(path):
            try:
                labels = few_values_of(record.data, names)
            except ValueError:  # example.ExampleDecodeError: no Example (the summary counts those)
                continue
            for feature, (kind, values) in labels.items():
                n = counts[feature]
                if kind == INT64 and any(not 0 <= v < n for v in values):
                    entry = tallied.setdefault(feature, [Counter(), record.index])
                    entry[0].update(v for v in values if not 0 <= v < n)
    except (RecordError, SourceError):
        pass  # a record past the container's checks: the framing problems name it
    return tallied


def label_findings(
    counts: dict[str, int], tallies: list[tuple[str, str, dict[str, Any]]]
) -> tuple[list[dict[str, str]], list[str]]:
    """(problems, notes) of a dataset's labels from its shards' (split, file, tally): a
    value outside 0..N-1 a problem, -1 a note."""
    by_split: dict[tuple[str, str], Counter[int]] = {}
    first: dict[tuple[str, str], str] = {}
    for split, file, tallied in tallies:
        for feature, (values, index) in tallied.items():
            by_split.setdefault((split, feature), Counter()).update(values)
            first.setdefault((split, feature), f"{file} record {index}")
    problems, notes = [], []
    for (split, feature), tallied in by_split.items():
        n, where = counts[feature], first[(split, feature)]
        named = f"ClassLabel {feature!r} ({n} name{'s' if n != 1 else ''})"
        past = {v: c for v, c in tallied.items() if v != NO_LABEL}
        if past:
            values = ", ".join(str(v) for v in sorted(past)[:5]) + (", ..." if len(past) > 5 else "")
            message = (
                f"split {split}: {sum(past.values())} values of {named} outside 0..{n - 1} ({values}; first in {where})"
            )
            problems.append({"kind": "label_outside_names", "file": where.split(" record ")[0], "message": message})
        if tallied.get(NO_LABEL):
            notes.append(
                f"split {split}: {tallied[NO_LABEL]} records hold {feature!r} -1, no class of {named}: TFDS's "
                "'no label' (as GLUE's test splits), read by TFDS; not a class to train on"
            )
    return problems, notes
