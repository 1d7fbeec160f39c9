"""One reader of a dataset directory's metadata, for the loader and the inspector alike.

dataset_info.json (name, file format, splits and their shard lengths),
features.json, manifest.json (options, per-shard bytes and sha256) and the
{feature}.labels.txt files. Paths may be remote (read through `fs`).
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from ..errors import SourceError, shown
from ..storage import fs
from .features import LABELS_SUFFIX, flatten_tfds
from .naming import FEATURES, HF_FEATURES, INFO, KEYPOINTS, MANIFEST, ShardName, checked_component


def load_json(directory: str, name: str) -> Any:
    """A metadata file of a dataset directory, or None if absent; unreadable -> SourceError."""
    path = fs.join(directory, name)
    if not fs.exists(path):
        return None
    try:
        return json.loads(fs.read_bytes(path).decode("utf-8"))
    except (OSError, ValueError) as e:
        raise SourceError(f"{path}: unreadable metadata: {e}") from None
    except RecursionError:  # json's parser recurses once per level
        raise SourceError(f"{path}: unreadable metadata: nested too deep") from None


def class_names(directory: str) -> dict[str, list[str]]:
    """{feature: names} from the {feature}.labels.txt files of a dataset directory."""
    feature_of = {labels_file: name for name, (_, _, labels_file) in ExistingDataset(directory).flat_features.items()}
    names = {}
    for entry in sorted(fs.listdir(directory)):
        if entry.endswith(LABELS_SUFFIX):
            try:
                text = fs.read_bytes(fs.join(directory, entry)).decode("utf-8")
            except UnicodeDecodeError as e:
                raise SourceError(f"{fs.join(directory, entry)}: byte {e.start}: not UTF-8 text") from None
            names[feature_of.get(entry, entry[: -len(LABELS_SUFFIX)])] = text.splitlines()
    return names


class ExistingDataset:
    """A dataset directory; each file is read when first asked for."""

    def __init__(self, path: str) -> None:
        self.path = path

    @staticmethod
    def holds_dataset(path: str) -> bool:
        return fs.isfile(fs.join(path, INFO))

    @cached_property
    def info(self) -> dict[str, Any]:
        info = load_json(self.path, INFO)
        if info is None:
            raise SourceError(f"{self.path}: not a tfr-convert dataset (no {INFO})")
        where = fs.join(self.path, INFO)
        if (
            not isinstance(info, dict)
            or not isinstance(info.get("splits"), list)
            or not isinstance(info.get("name"), str)
        ):
            raise SourceError(f"{where}: no name or splits in it")
        for i, split in enumerate(info["splits"]):
            lengths = split.get("shardLengths", []) if isinstance(split, dict) else None
            if not isinstance(split, dict) or not isinstance(split.get("name"), str) or not isinstance(lengths, list):
                raise SourceError(f"{where}: splits[{i}] is not a split (a name and its shardLengths)")
            for n in lengths:
                if not (isinstance(n, (int, str)) and str(n).isdigit() and int(n) < 1 << 63):
                    raise SourceError(f"{where}: splits[{i}]: shard length {shown(n)} is not a count of records")
        return info

    @cached_property
    def features(self) -> dict[str, Any]:
        """features.json's features (name -> TFDS feature description), {} if absent."""
        content = load_json(self.path, FEATURES)
        features = (content.get("featuresDict") or {}).get("features") if isinstance(content, dict) else None
        return features if isinstance(features, dict) else {}

    @cached_property
    def flat_features(self) -> dict[str, tuple[dict[str, Any], bool, str]]:
        """{record key: (TFDS description, per object, labels file)}, nesting undone."""
        return flatten_tfds(self.features)

    @cached_property
    def manifest(self) -> dict[str, Any]:
        manifest = load_json(self.path, MANIFEST)
        return manifest if isinstance(manifest, dict) else {}

    @cached_property
    def hf_features(self) -> dict[str, Any]:
        """The Hugging Face features the dataset carries from its source ({} if none)."""
        content = load_json(self.path, HF_FEATURES)
        features = content.get("features") if isinstance(content, dict) else None
        return features if isinstance(features, dict) else {}

    @cached_property
    def skeleton(self) -> list[tuple[int, int]]:
        """The keypoints' limbs as pairs of 0-based indices into each object's keypoints, [] if none."""
        content = load_json(self.path, KEYPOINTS)
        pairs = content.get("skeleton") if isinstance(content, dict) else None
        if not isinstance(pairs, list):
            return []
        return [
            (p[0] - 1, p[1] - 1)
            for p in pairs
            if isinstance(p, list) and len(p) == 2 and all(type(k) is int and k >= 1 for k in p)
        ]

    @property
    def name(self) -> str:
        return self.info["name"]

    @property
    def file_format(self) -> str:
        return self.info.get("fileFormat") or "tfrecord"

    @property
    def options(self) -> dict[str, Any]:
        options = self.manifest.get("options")
        return options if isinstance(options, dict) else {}

    def splits(self) -> dict[str, list[int]]:
        """{split: shard lengths}, in the order dataset_info.json lists them."""
        return {s["name"]: [int(n) for n in s.get("shardLengths", [])] for s in self.info["splits"]}

    def shard_names(self, split: str) -> list[str]:
        """The split's shard files, named from the metadata: its dataset and split names
        pass the one path check, so no metadata names a file outside the directory."""
        where = fs.join(self.path, INFO)
        checked_component(self.name, f"{where}: dataset name")
        checked_component(split, f"{where}: split name")
        lengths = self.splits()[split]
        return [ShardName(self.name, split, i, len(lengths), self.file_format).filename for i in range(len(lengths))]

    def recorded_shards(self) -> dict[str, dict[str, Any]]:
        """{file: {records, bytes, sha256}} of every shard the manifest lists."""
        splits = self.manifest.get("splits")
        return {
            shard["file"]: shard
            for split in (splits.values() if isinstance(splits, dict) else ())
            if isinstance(split, dict) and isinstance(split.get("shards"), list)
            for shard in split["shards"]
            if isinstance(shard, dict) and isinstance(shard.get("file"), str)
        }

    def class_names(self) -> dict[str, list[str]]:
        return class_names(self.path)


def compressed_note(compression: str) -> str:
    """What a dataset of compressed shards says about itself (conversion warning, --verify note)."""
    return (
        f"{compression}-compressed shards: TensorFlow Datasets cannot read them (builder_from_directory "
        "fails with DataLossError at the first record); tfr_convert.load() and "
        f"tf.data.TFRecordDataset(..., compression_type='{compression.upper()}') can."
    )
