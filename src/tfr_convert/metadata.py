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
from dataclasses import dataclass
from typing import Any

from . import __version__
from .shards import ShardName, SplitResult

DATASET_VERSION = "1.0.0"
MANIFEST = "manifest.json"
_TFDS = "tensorflow_datasets.core.features."


@dataclass(frozen=True)
class FeatureSpec:
    """One feature as the reader should see it.

    kind: "tensor" (dtype int64 / float32 / string, fixed shape), "image"
    (encoded PNG/JPEG bytes with a shape), or "class_label" (int64 with names).
    """

    kind: str
    dtype: str = "int64"
    shape: tuple[int | None, ...] = ()
    encoding: str | None = None
    num_classes: int | None = None

    @classmethod
    def tensor(cls, dtype: str, shape: tuple[int | None, ...] = ()) -> FeatureSpec:
        return cls("tensor", dtype, shape)

    @classmethod
    def image(cls, shape: tuple[int | None, ...], encoding: str) -> FeatureSpec:
        return cls("image", "uint8", shape, encoding)

    @classmethod
    def class_label(cls, num_classes: int) -> FeatureSpec:
        return cls("class_label", "int64", (), None, num_classes)

    def to_tfds(self) -> dict[str, Any]:
        dims = {"dimensions": [str(-1 if d is None else d) for d in self.shape]} if self.shape else {}
        if self.kind == "class_label":
            return {
                "pythonClassName": _TFDS + "class_label_feature.ClassLabel",
                "classLabel": {"numClasses": str(self.num_classes)},
            }
        if self.kind == "image":
            image: dict[str, Any] = {"shape": dims, "dtype": self.dtype}
            if self.encoding:  # absent: mixed or other formats, decoded by content
                image["encodingFormat"] = self.encoding
            return {"pythonClassName": _TFDS + "image_feature.Image", "image": image}
        return {
            "pythonClassName": _TFDS + "tensor_feature.Tensor",
            "tensor": {"shape": dims, "dtype": self.dtype, "encoding": "none"},
        }


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def features_json(features: dict[str, FeatureSpec]) -> bytes:
    return _json(
        {
            "pythonClassName": _TFDS + "features_dict.FeaturesDict",
            "featuresDict": {"features": {name: spec.to_tfds() for name, spec in features.items()}},
        }
    )


def dataset_info_json(name: str, description: str, results: list[SplitResult]) -> bytes:
    return _json(
        {
            "name": name,
            "version": DATASET_VERSION,
            "fileFormat": "tfrecord",
            "description": description,
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


def labels_txt(names: list[str]) -> bytes:
    return "".join(n + "\n" for n in names).encode("utf-8")


def manifest_json(
    name: str,
    converter: str,
    options: dict[str, Any],
    sources: list[dict[str, Any]],
    results: list[SplitResult],
    skipped: list[dict[str, str]],
    warnings: list[str],
) -> bytes:
    return _json(
        {
            "tool": "tfr-convert",
            "skipped": skipped,
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
    features: dict[str, FeatureSpec],
    labels: dict[str, list[str]],
    options: dict[str, Any],
    sources: list[dict[str, Any]],
    results: list[SplitResult],
    skipped: list[dict[str, str]],
    warnings: list[str],
) -> dict[str, bytes]:
    """All metadata files in write order; dataset_info.json last, as TFDS's marker of completeness."""
    files = {f"{feature}.labels.txt": labels_txt(names) for feature, names in sorted(labels.items())}
    files["features.json"] = features_json(features)
    files[MANIFEST] = manifest_json(name, converter, options, sources, results, skipped, warnings)
    files["dataset_info.json"] = dataset_info_json(name, description, results)
    return files
