"""What tfr-export reads: a dataset directory (ours or TFDS-prepared), or TFRecord /
ArrayRecord files and globs, as splits of records. A file's split is the one its shard
name carries (`NAME-SPLIT.tfrecord-…`), else `train`. The schema is inferred from the
records themselves (the one `tfr-inspect` shows), so a plain file exports as a dataset
does; a dataset's metadata adds which string features are text, and class names."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

from .. import containers
from ..dataset_dir import DatasetDir
from ..errors import SourceError
from ..example import parse
from ..features import FeatureSpec
from ..inspect.paths import resolve, split_of
from ..record_schema import SAMPLE, infer_schema
from ..splits import ordered_splits


def inside_output(name: str, where: str) -> str:
    """A file name from a record as a `/`-separated path inside the output; one that is
    empty, absolute or climbs out of it is a SourceError naming the record."""
    path = posixpath.normpath(name.replace("\\", "/"))
    if not name or path.startswith(("/", "../")) or path in (".", "..") or ":" in path.split("/")[0]:
        raise SourceError(f"{where}: file name {name!r} is not a relative path inside the output")
    return path


@dataclass
class ExportSource:
    splits: dict[str, list[str]]  # split -> its files, in order
    dataset: DatasetDir | None  # the metadata, when SRC is one dataset directory

    @classmethod
    def open(cls, paths: list[str]) -> ExportSource:
        inputs = resolve(paths)
        splits: dict[str, list[str]] = {}
        for path in inputs.files:
            splits.setdefault(split_of(path) or "train", []).append(path)
        dataset = DatasetDir(inputs.datasets[0]) if len(inputs.datasets) == 1 else None
        return cls(dict(ordered_splits(splits)), dataset)

    def records(self, split: str) -> Iterator[tuple[str, bytes]]:
        """(where, payload) of every record of the split, each CRC checked as it is read:
        a damaged one is a RecordError naming its file, index and offset."""
        for path in self.splits[split]:
            for record in containers.of_file(path).records(path):
                at = f", byte {record.offset}" if record.offset is not None else ""
                yield f"{path} record {record.index}{at}", record.data

    def examples(self, split: str, limit: int | None = None) -> Iterator[tuple[str, dict, int]]:
        """(where, parsed example, payload bytes) of the split's first `limit` records (all
        with None); a payload that is no tf.train.Example is a SourceError naming it."""
        for count, (where, payload) in enumerate(self.records(split)):
            if limit is not None and count >= limit:
                return
            try:
                yield where, parse(payload), len(payload)
            except ValueError as e:
                raise SourceError(f"{where}: not a tf.train.Example ({e})") from None

    def schema(self) -> dict[str, FeatureSpec]:
        """Each feature's kind and length, from the first records of the splits."""
        first = (record for split in self.splits for record in self.records(split))
        return infer_schema(islice(first, SAMPLE))

    def text_features(self) -> set[str]:
        """The string features the metadata declares as text (not images or bytes)."""
        if self.dataset is None:
            return set()
        text = set()
        for name, (description, _, _) in self.dataset.flat_features.items():
            python_class = str(description.get("pythonClassName", ""))
            tensor = description.get("tensor") or {}
            if python_class.endswith(".Text") or (python_class.endswith(".Tensor") and tensor.get("dtype") == "string"):
                text.add(name)
        return text

    def class_names(self) -> dict[str, list[str]]:
        return self.dataset.class_names() if self.dataset is not None else {}
