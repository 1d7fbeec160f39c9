"""What tfr-export reads: a dataset directory (ours or TFDS-prepared), or TFRecord /
ArrayRecord files and globs, as splits of records. A file's split is the one its shard
name carries (`NAME-SPLIT.tfrecord-…`), else `train`. The schema is inferred from the
records themselves (the one `tfr-inspect` shows), so a plain file exports as a dataset
does; a dataset's metadata adds which string features are text, and class names."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from itertools import islice

from .. import containers
from ..dataset.existing import ExistingDataset
from ..dataset.features import FeatureSpec
from ..dataset.naming import checked_component
from ..dataset.record_schema import SAMPLE, Outlines, outlined, schema_of
from ..dataset.splits import ordered_splits
from ..dataset.wire.entries import all_values_of
from ..errors import SourceError
from ..inspect.paths import resolve, split_of
from ..skips import Skips


def parsed(payload: bytes, views: Collection[str] = ()) -> dict:
    """A record's features (those named in `views`: their bytes as views of the payload,
    as entries.all_values_of gives them); a payload that is no tf.train.Example is a
    SourceError."""
    try:
        return all_values_of(payload, views)
    except ValueError as e:
        raise SourceError(f"not a tf.train.Example ({e})") from None


@dataclass
class ExportSource:
    splits: dict[str, list[str]]  # split -> its files, in order
    dataset: ExistingDataset | None  # the metadata, when SRC is one dataset directory
    salvage: bool = False  # read past damage (--on-error skip) instead of stopping at it
    max_record: int = containers.MAX_RECORD_BYTES  # the largest record read (each is held whole once)
    _schemas: dict[bool, dict[str, FeatureSpec]] = field(default_factory=dict, repr=False)  # by `absent`
    _outlines: Outlines | None = field(default=None, repr=False)  # of the first SAMPLE records

    @classmethod
    def open(
        cls, paths: list[str], salvage: bool = False, max_record: int = containers.MAX_RECORD_BYTES
    ) -> ExportSource:
        inputs = resolve(paths)
        splits: dict[str, list[str]] = {}
        for path in inputs.files:
            split = split_of(path) or "train"
            checked_component(split, f"{path}: split name")  # a folder or file name of the export
            splits.setdefault(split, []).append(path)
        dataset = ExistingDataset(inputs.datasets[0]) if len(inputs.datasets) == 1 else None
        return cls(dict(ordered_splits(splits)), dataset, salvage, max_record)

    def records(self, split: str, skips: Skips | None = None) -> Iterator[tuple[str, bytes]]:
        """(where, payload) of every record of the split, each CRC checked as it is read:
        a damaged one is a RecordError naming its file, index and offset; when salvaging,
        the sound records of damaged files, each loss reported to `skips`."""
        for path in self.splits[split]:
            container = containers.of_file(path)
            limit = self.max_record
            for record in container.salvage(path, limit) if self.salvage else container.records(path, limit):
                if isinstance(record, containers.Loss):
                    if skips is not None:
                        skips.add(f"{path}: bytes {record.start}-{record.end}", record.summary())
                    continue
                if self.salvage and record.offset is not None:  # salvage's indexes count sound records only
                    yield f"{path} record at byte {record.offset}", record.data
                    continue
                at = f", byte {record.offset}" if record.offset is not None else ""
                yield f"{path} record {record.index}{at}", record.data

    def first_example(self) -> dict | None:
        """The first record's features (when salvaging, the first record's that parses)."""
        for split in self.splits:
            for where, payload in self.records(split):
                try:
                    return parsed(payload)
                except SourceError as e:
                    if not self.salvage:
                        raise SourceError(f"{where}: {e}") from None
        return None

    def count(self, split: str) -> int:
        """How many records the split's files hold, by the containers' cheapest count (the
        sound ones, when salvaging)."""
        if self.salvage:
            return sum(1 for _ in self.records(split))
        return sum(containers.of_file(path).count(path) for path in self.splits[split])

    def schema(self, absent: bool = False) -> dict[str, FeatureSpec]:
        """Each feature's kind and length, from the first records of the splits (when
        salvaging, those of most of them: the others are left out as they are met);
        `absent`: a feature some records lack is kept, as one they may lack."""
        if absent not in self._schemas:  # asked by several parts of one export: read once
            if self._outlines is None:  # the records read once for both kinds of schema
                first = (record for split in self.splits for record in self.records(split))
                self._outlines = outlined(islice(first, SAMPLE), past_errors=self.salvage)
            self._schemas[absent] = schema_of(self._outlines, majority=self.salvage and not absent, absent=absent)
        return dict(self._schemas[absent])

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

    def exported(self) -> dict:
        """What `tfr-convert table` needs to write the dataset back as it was (its name,
        features and class names, and that its rows are in the dataset's order): the
        `tfr_convert` metadata of an exported table."""
        exported = {"class_names": self.class_names(), "splits": list(self.splits)}
        if self.dataset is not None:
            exported |= {"name": self.dataset.name, "features": self.dataset.features}
        return exported
