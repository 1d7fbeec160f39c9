"""The files beside the shards: what TFDS needs to open the directory, and ours.

- dataset_info.json: TFDS's DatasetInfo (name, version, splits with exact
  shardLengths and numBytes), as `tfds.builder_from_directory` reads it.
- features.json: TFDS's FeaturesDict, describing every feature.
- {feature}.labels.txt: class names, one per line (TFDS ClassLabel metadata).
- manifest.json: everything else a user may need to trust or reproduce the
  output: tool version, options, source fingerprints, per-shard sha256.

All of it is deterministic (sorted keys, no timestamps) so that two identical
runs give identical directories.
"""

from __future__ import annotations

import json
from typing import Any

from ..dataset.features import TFDS_FEATURES, FeatureSpec, labels_file_of
from ..dataset.naming import FEATURES, INFO, MANIFEST, ShardName, checked_component, lines_file
from ..skips import Skips, skipped_fields
from ..version import __version__
from .shards import SplitResult

DATASET_VERSION = "1.0.0"


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _features_dict(entries: dict[str, Any]) -> dict[str, Any]:
    return {"pythonClassName": TFDS_FEATURES + "features_dict.FeaturesDict", "featuresDict": {"features": entries}}


def _leaf(spec: FeatureSpec, in_sequence: bool) -> dict[str, Any]:
    """One feature's description; a per-object one outside any Sequence is a Sequence of it."""
    if spec.per_object and not in_sequence:
        return {
            "pythonClassName": TFDS_FEATURES + "sequence_feature.Sequence",
            "sequence": {"feature": spec.to_tfds(), "length": "-1"},
        }
    return spec.to_tfds()


def _nested(node: dict[str, Any], in_sequence: bool = False) -> dict[str, Any]:
    """A tree of FeatureSpecs as TFDS FeaturesDicts; the highest dict holding only
    per-object features becomes a Sequence of it."""

    def leaves(n: Any) -> list[FeatureSpec]:
        return [n] if isinstance(n, FeatureSpec) else [leaf for child in n.values() for leaf in leaves(child)]

    entries = {}
    for key, child in node.items():
        if isinstance(child, FeatureSpec):
            entries[key] = _leaf(child, in_sequence)
        elif not in_sequence and all(leaf.per_object for leaf in leaves(child)):
            inner = _nested(child, in_sequence=True)
            entries[key] = {
                "pythonClassName": TFDS_FEATURES + "sequence_feature.Sequence",
                "sequence": {"feature": inner, "length": "-1"},
            }
        else:
            entries[key] = _nested(child, in_sequence)
    return _features_dict(entries)


def features_json(features: dict[str, FeatureSpec], nested: bool = False) -> bytes:
    """features.json; `nested`: the '/'s of feature names separate levels of TFDS
    FeaturesDicts, as TFDS itself flattens nested features into record keys (so the TF
    Object Detection API's `image/object/bbox/xmin` reads back as a Sequence of boxes)."""
    if not nested:
        return _json(_features_dict({name: _leaf(spec, False) for name, spec in features.items()}))
    tree: dict[str, Any] = {}
    for name, spec in features.items():
        *parents, leaf = name.split("/")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = spec
    return _json(_nested(tree))


def supervised_keys(features: dict[str, FeatureSpec]) -> tuple[str, str] | None:
    """(image, label) when the features have one image and one class label to pair it
    with (of several labels, the one named `label` or `label_index`); else None."""
    images = [n for n, f in features.items() if f.is_image]
    labels = [n for n, f in features.items() if f.is_class_label and not f.per_object]
    if len(labels) > 1:
        labels = [n for n in labels if n in ("label", "label_index")]
    return (images[0], labels[0]) if len(images) == 1 and len(labels) == 1 else None


def dataset_info_json(
    name: str,
    description: str,
    file_format: str,
    results: list[SplitResult],
    features: dict[str, FeatureSpec],
    carried_keys: dict[str, Any] | None = None,
    version: str | None = None,
) -> bytes:
    """`carried_keys`: another dataset_info.json's supervisedKeys, kept as they are;
    else they are found from the features (supervised_keys). `version`: a TFDS catalog
    dataset's (else DATASET_VERSION)."""
    keys = supervised_keys(features)
    supervised = {"supervisedKeys": {"tuple": {"items": [{"featureKey": k} for k in keys]}}} if keys else {}
    if carried_keys is not None:
        supervised = {"supervisedKeys": carried_keys} if carried_keys else {}
    return _json(
        {
            "name": name,
            "version": version or DATASET_VERSION,
            "fileFormat": file_format,
            "description": description,
            **supervised,
            "splits": [
                {
                    "name": r.split,
                    "filepathTemplate": ShardName.TFDS_TEMPLATE,
                    "shardLengths": [str(s.records) for s in r.shards],
                    "numBytes": str(r.bytes),
                }
                for r in results
            ],
        }
    )


def manifest_json(
    name: str,
    converter: str,
    options: dict[str, Any],
    sources: list[dict[str, Any]],
    results: list[SplitResult],
    skipped: Skips,
    warnings: list[str],
    extra_files: tuple[str, ...] = (),
    order: dict[str, Any] | None = None,
    version_record: dict[str, Any] | None = None,
) -> bytes:
    """`version_record`: an --append's version (its number, the version it adds to, the
    shards it shares with that one, the examples it adds per split)."""
    return _json(
        {
            "tool": "tfr-convert",
            **({"version": version_record} if version_record else {}),
            **({"order": order} if order else {}),
            **({"extra_files": sorted(extra_files)} if extra_files else {}),
            **skipped_fields(skipped),
            "warnings": warnings,
            "tool_version": __version__,
            "dataset": name,
            "converter": converter,
            "options": options,
            "sources": sources,
            "splits": {
                r.split: {
                    "examples": r.records,
                    "bytes": r.bytes,
                    "shards": [
                        {"file": s.final_name, "records": s.records, "bytes": s.bytes, "sha256": s.sha256}
                        for s in r.shards
                    ],
                }
                for r in results
            },
        }
    )


def metadata_files(
    *,
    name: str,
    converter: str,
    description: str,
    file_format: str,
    features: dict[str, FeatureSpec],
    labels: dict[str, list[str]],
    options: dict[str, Any],
    sources: list[dict[str, Any]],
    results: list[SplitResult],
    skipped: Skips,
    warnings: list[str],
    nested: bool = False,
    extra: dict[str, bytes] | None = None,
    carried_keys: dict[str, Any] | None = None,
    order: dict[str, Any] | None = None,
    version: str | None = None,
    version_record: dict[str, Any] | None = None,
) -> dict[str, bytes]:
    """All metadata files in write order; dataset_info.json last, as TFDS's marker of
    completeness. `extra`: files of the converter's own (a label map), listed in the
    manifest; `order`: how well each split's order mixes labels (order_quality)."""
    files = {
        # a feature's name may come from the data (a table's column): its file name is checked
        checked_component(labels_file_of(feature, nested), "class names file"): lines_file(
            names, f"the class names of {feature!r}"
        )
        for feature, names in sorted(labels.items())
    }
    files |= extra or {}
    files[FEATURES] = features_json(features, nested)
    files[MANIFEST] = manifest_json(
        name, converter, options, sources, results, skipped, warnings, tuple(extra or {}), order, version_record
    )
    files[INFO] = dataset_info_json(name, description, file_format, results, features, carried_keys, version)
    return files
