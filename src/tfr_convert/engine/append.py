"""--append: a new version of a dataset, beside its newest, sharing that one's shards.

Datasets that grow live in TFDS's data_dir layout, ROOT/NAME/VERSION/, one folder per
version, each whole: `tfds.load(NAME, data_dir=ROOT)` reads the newest,
`tfds.load(f"{NAME}:{VERSION}", ...)` any other. An append converts only the new items;
the new version lists the newest version's shards first in each split (the same bytes,
under names that count the new total: hard links on a local disk, server-side copies
on an object store) and the new shards after them. The version appended to is only
read, so a kill at any moment leaves it whole, and the new one appears whole or not at
all (the output's own commit).

What may not change between versions is checked: the command and the options that
shape records (refused in one line naming the first that differs), the features (the
number of class names aside) and the converter's files beside the shards. Class ids
never change: the dataset's names keep their ids, a new name is added at the end, and
the encoder writes each of this run's ids as the id its name has there (`relabel`).
(A converter whose files beside the shards name classes, as detection's label map,
writes them from its `labels`, which hold the merged names.)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .. import containers
from ..converters.base import Converter
from ..dataset.existing import ExistingDataset, load_json
from ..dataset.naming import FEATURES, MANIFEST
from ..dataset.splits import ordered_splits
from ..dataset.versions import VERSION, as_tuple, named_datasets, next_minor, versions
from ..dataset.wire.entries import few_values_of
from ..errors import OptionError, OutputError, SourceError
from ..output.metadata import features_json
from ..output.shards import ShardFile, SplitResult
from ..storage import fs

#: recorded options a new version may differ in: where it is written, how much of it
#: (a trial's --limit), how bad items are handled, how the new shards are cut and indexed
MAY_DIFFER = frozenset({"name", "layout", "limit", "on_error", "shards", "index"})


def version_folder(
    root: str, name: str | None, version: str | None, default_name: str, first: Callable[[str], str]
) -> tuple[str, str]:
    """(ROOT/NAME/VERSION, NAME) of the version an --append into ROOT makes: NAME is
    `name` (--name), else the one dataset ROOT holds, else `default_name` (the
    converter's); VERSION is `version` (--version), else the next minor of the newest
    (TFDS's rule for added records), else `first(NAME)`."""
    if ExistingDataset.holds_dataset(root) and VERSION.fullmatch(fs.basename(root)):
        raise OutputError(
            f"{root}: is a version of a dataset; --append takes the folder that holds the datasets, "
            f"--out {fs.dirname(fs.dirname(root))}"
        )
    if ExistingDataset.holds_dataset(root):
        raise OutputError(
            f"{root}: holds a dataset in the flat layout, which has no place for a second version: --append adds "
            "versions in TFDS's data_dir layout (ROOT/NAME/VERSION); move it there first (mkdir -p ROOT/NAME && "
            f"mv {root} ROOT/NAME/1.0.0) and append with --out ROOT"
        )
    if name is None:
        held = named_datasets(root)
        if len(held) > 1:
            raise OptionError(f"{root} holds the datasets {', '.join(held)}: --name says which one to append to")
        name = held[0] if held else default_name
    have = versions(fs.join(root, name))
    if version is None:
        version = next_minor(have[-1]) if have else first(name)
    elif have and as_tuple(version) <= as_tuple(have[-1]):
        raise OptionError(f"--version {version}: not after {have[-1]}, the newest version of {name} in {root}")
    return fs.join(root, name, version), name


@dataclass
class Parent:
    """The version an append adds to (the newest in ROOT/NAME), read once."""

    path: str
    version: str
    manifest: dict[str, Any]

    @cached_property
    def dataset(self) -> ExistingDataset:
        return ExistingDataset(self.path)

    @cached_property
    def digest(self) -> str:
        """Its manifest's sha256: part of the append's identity, so --resume refuses a
        changed parent."""
        return hashlib.sha256(json.dumps(self.manifest, sort_keys=True).encode()).hexdigest()

    def adopt(self, converter: Converter, recorded: dict[str, Any]) -> None:
        """Refuse what may not change (`recorded`: the run's options as the manifest
        records them); number the converter's class names as this version does (new
        names at the end) and tell it how its ids map."""
        made_by = self.manifest.get("converter")
        if made_by != converter.command:
            raise OptionError(
                f"--append: {self.path} was made by `tfr-convert {made_by}`, not `tfr-convert {converter.command}`"
            )
        mine = {**recorded, **converter.recorded_options()}
        theirs = self.manifest.get("options") or {}
        for key in sorted((mine.keys() | theirs.keys()) - MAY_DIFFER - converter.input_options):
            if mine.get(key) != theirs.get(key):
                raise OptionError(
                    f"--append: option {key} is {_shown(mine.get(key))} here, {_shown(theirs.get(key))} in {self.path} "
                    "(a version shapes its records as the dataset does: give the options it was made with)"
                )
        self._number_classes(converter)
        _ = self.shards  # every shard checked there, before anything is encoded

    def _number_classes(self, converter: Converter) -> None:
        held = self.dataset.class_names()
        relabel = {}
        for feature, names in converter.labels.items():
            merged = list(held.get(feature, []))
            had = set(merged)
            merged += [n for n in names if n not in had]
            id_of = {n: i for i, n in reversed(list(enumerate(merged)))}  # (a name listed twice: its first id)
            ids = [id_of[n] for n in names]
            converter.labels[feature] = merged
            if ids != list(range(len(names))):
                relabel[feature] = ids
        if relabel and converter.serialized:
            raise OptionError(
                f"--append: the class ids of {', '.join(sorted(relabel))} differ from {self.path}'s, and this "
                "command copies records as they are: convert them with the dataset's class list"
            )
        converter.relabel = relabel or None
        self.class_counts(converter)

    @staticmethod
    def class_counts(converter: Converter) -> None:
        """The converter's class label features with as many classes as its (merged) names."""
        converter.features = {
            name: dataclasses.replace(spec, num_classes=len(converter.labels[name]))
            if spec.is_class_label and name in converter.labels
            else spec
            for name, spec in converter.features.items()
        }

    def check_features(self, converter: Converter) -> None:
        """After the run (a converter may settle its features then): the same features,
        but for the number of class names. (The converter's own files beside the shards
        follow from its options, compared already, and its class names, numbered here.)"""
        self.class_counts(converter)
        theirs = load_json(self.path, FEATURES) or {}
        mine = json.loads(features_json(converter.features, converter.nested_features))
        where = _first_difference(_without_class_counts(theirs), _without_class_counts(mine))
        if where is not None:
            raise SourceError(
                f"--append: the features differ from {fs.join(self.path, FEATURES)}'s at {where}: "
                "a new version holds records of the same features"
            )

    def deduplicated(
        self, converter: Converter, plan: dict[str, list[Hashable]], mode: str, workers: int
    ) -> tuple[dict[str, list[Hashable]], str | None]:
        """`--dedupe` against this version: an item whose file holds, byte for byte, a
        picture this version stores goes to that picture's split (exact, near: kept whole
        in one split), or is left out (drop); a line saying how many, or None. (Near
        copies are found within the new items alone: this version's pictures are not
        decoded.)"""
        feature = next((name for name, spec in converter.features.items() if spec.is_image), None)
        roots = converter.input_roots()
        if feature is None or not roots:
            return plan, None
        held = self._pictures(feature)
        listed = [(split, item) for split, items in plan.items() for item in items]

        def digest(entry: tuple[str, Hashable]) -> bytes | None:
            name = converter.item_file(entry[1])
            try:
                return hashlib.sha256(fs.read_bytes(fs.join(roots[0], name))).digest() if name else None
            except OSError:
                return None  # the run names it when it reads it

        with ThreadPoolExecutor(max(workers, 1)) as pool:
            digests = list(pool.map(digest, listed, chunksize=64))
        kept: dict[str, list[Hashable]] = {split: [] for split in plan}
        found = 0
        for (split, item), d in zip(listed, digests, strict=True):
            twin = held.get(d) if d is not None else None
            found += twin is not None
            if twin is None or mode != "drop":
                kept.setdefault(twin or split, []).append(item)
        if not found:
            return plan, None
        what = "left out" if mode == "drop" else "each put in the split its copy is in"
        return dict(ordered_splits(kept)), (
            f"--dedupe {mode}: {found} of the new pictures are in {self.path} already, byte for byte: {what}"
        )

    def _pictures(self, feature: str) -> dict[bytes, str]:
        """{sha256 of a stored picture: its split} of every record of this version."""
        dataset = self.dataset
        container = containers.get(dataset.file_format)
        held = {}
        for split in dataset.splits():
            for name in dataset.shard_names(split):
                for record in container.records(fs.join(self.path, name)):
                    values = few_values_of(record.data, [feature.encode()]).get(feature)
                    if values and values[1]:
                        held.setdefault(hashlib.sha256(values[1][0]).digest(), split)
        return held

    def shared(self, converter: Converter, results: list[SplitResult]) -> list[SplitResult]:
        """Every split's shards: this version's first (shared), then the run's new ones;
        once the converter's features are checked against this version's."""
        self.check_features(converter)
        mine = {r.split: r for r in results}
        held = self.shards
        joined = []
        for split, _ in ordered_splits(dict.fromkeys(held.keys() | mine.keys())):
            joined.append(SplitResult(split, held.get(split, []) + (mine[split].shards if split in mine else [])))
        return joined

    @cached_property
    def shards(self) -> dict[str, list[ShardFile]]:
        """This version's shards per split, each as its manifest records it: named from
        dataset_info.json (so no manifest names a file elsewhere), each there at its
        recorded size; else SourceError naming the shard."""
        dataset = self.dataset
        recorded = dataset.recorded_shards()
        where = fs.join(self.path, MANIFEST)
        shards = {}
        for split, lengths in dataset.splits().items():
            shards[split] = []
            for name, records in zip(dataset.shard_names(split), lengths, strict=True):
                entry = recorded.get(name) or {}
                size, sha256 = entry.get("bytes"), entry.get("sha256")
                if type(size) is not int or not isinstance(sha256, str) or entry.get("records") != records:
                    raise SourceError(f"{where}: no record of {name} (its bytes, sha256 and records) to share it by")
                path = fs.join(self.path, name)
                try:
                    whole = fs.getsize(path) == size
                except OSError:
                    whole = False
                if not whole:
                    raise SourceError(
                        f"{path}: missing, or not the {size} bytes {where} records: --append adds to a whole version "
                        f"(tfr-inspect {self.path} --verify says what is wrong)"
                    )
                shards[split].append(ShardFile(path, records, size, sha256, shared=True))
        return shards


def parent_of(folder: str) -> Parent | None:
    """The version an append into ROOT/NAME/VERSION adds to: the newest before it (None:
    the first version)."""
    name_folder, this = fs.dirname(folder), fs.basename(folder)
    before = [v for v in versions(name_folder) if as_tuple(v) < as_tuple(this)]
    if not before:
        return None
    path = fs.join(name_folder, before[-1])
    manifest = load_json(path, MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("tool") != "tfr-convert":
        raise SourceError(f"{path}: no tfr-convert manifest: --append adds to datasets this tool made")
    return Parent(path, before[-1], manifest)


@dataclass
class Append:
    """An --append run: the version folder it writes, the version it adds to (None: the
    first version) and its run's digest, which the manifest records."""

    folder: str
    parent: Parent | None
    run: str = ""  # the sha256 of what shapes the run's output (its identity), the parent aside

    def identify(self, identity: dict[str, Any]) -> None:
        """Take the run's identity (resume.run_identity): its digest, which the manifest
        records; and the identity gets the parent's, so that --resume adds to the very
        version the first run read."""
        self.run = run_digest(identity)
        if self.parent is not None:
            identity["appended_to"] = {"version": self.parent.version, "manifest": self.parent.digest}

    @property
    def done_before(self) -> bool:
        """Whether the version appended to is this very run's (the same job run again,
        or resumed after its commit): then there is nothing to add."""
        return self.parent is not None and (self.parent.manifest.get("version") or {}).get("run") == self.run

    def joined(self, converter: Converter, results: list[SplitResult]) -> list[SplitResult]:
        """The new version's shards: the parent's first in each split (Parent.shared)."""
        return self.parent.shared(converter, results) if self.parent is not None else results

    def record(self, results: list[SplitResult]) -> dict[str, Any]:
        """What the manifest says of the new version (its shards named): which version it
        adds to, which of that one's shards it holds and what it adds, per split."""
        return {
            "number": fs.basename(self.folder),
            "parent": self.parent.version if self.parent is not None else None,
            "shared_shards": {r.split: [s.final_name for s in r.shards if s.shared] for r in results},
            "added": {r.split: sum(s.records for s in r.shards if not s.shared) for r in results},
            "run": self.run,
        }


def run_digest(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _without_class_counts(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_class_counts(v) for k, v in node.items() if k != "numClasses"}
    if isinstance(node, list):
        return [_without_class_counts(v) for v in node]
    return node


def _first_difference(a: Any, b: Any, at: str = "") -> str | None:
    """Where two JSON documents first differ, as a path of keys ('' when the roots do)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            if key not in a or key not in b:
                return f"{at}/{key}"
            deeper = _first_difference(a[key], b[key], f"{at}/{key}")
            if deeper is not None:
                return deeper
        return None
    return None if a == b else at or "/"
