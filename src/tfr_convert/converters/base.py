"""What every converter provides to the pipeline.

A converter finds and validates its sources up front (before anything is
written), lists its items per source split, and turns one item into a
features dict with `features_of` (or a whole batch into `Columns`). Items are small
(an index, a path, a row) and `features_of` is a pure function of the item, so an
engine may call it in any process and still write byte-identical output.
"""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..dataset.features import FeatureSpec
from ..errors import OptionError, SourceError
from ..skips import Skips

if TYPE_CHECKING:
    import numpy as np

    from ..dataset.wire.example_columns import FeatureColumn

#: how the published datasets' converters (mnist, cifar) store pixels: uint8 bytes or PNG
PUBLISHED_FORMATS = ("raw", "png")
#: their layouts. "tutorial": image_raw / image + label + height, width, depth, as the
#: notebooks read them; "tfds": exactly the features of TFDS's catalog builders.
PUBLISHED_LAYOUTS = ("tutorial", "tfds")
#: the TensorFlow Datasets catalog's version of each published dataset: a `--layout tfds`
#: output goes to OUT/NAME/VERSION, where `tfds.load(NAME, data_dir=OUT)` looks for it
#: (other datasets in that layout: OUT/NAME/1.0.0)
CATALOG_VERSIONS = {
    "mnist": "3.0.1",
    "fashion_mnist": "3.0.1",
    "kmnist": "3.0.1",
    "cifar10": "3.0.2",
    "cifar100": "3.0.2",
}


OptionsT = TypeVar("OptionsT", bound="Options")


class Options:
    """What every converter's options class shares: `problem()`, the one home of its rules
    (a command shows it as a usage error before reading anything), and `checked()`, the
    first thing a converter does with them: the options, or an OptionError saying why they
    cannot be, in the command line's words."""

    def problem(self, *context: Any) -> str | None:
        return None

    def checked(self, *context: Any) -> Any:
        """These options, or an OptionError naming their problem (`context`: what their
        `problem` asks of the run, e.g. records' --on-error)."""
        problem = self.problem(*context)
        if problem is not None:
            raise OptionError(problem)
        return self


@dataclass(frozen=True)
class PublishedOptions(Options):
    """What `tfr-convert mnist` and `cifar` take besides their source and the options
    every converter shares; `problem()` is the one home of their rules (the command line
    shows it as a usage error, the converters raise it as an OptionError)."""

    variant: str | None = None  # None: detected from the files
    image_format: str | None = None  # None: raw, or png for --layout tfds
    layout: str = "tutorial"

    def problem(self) -> str | None:
        """What makes these options impossible together, in the command line's words, or None."""
        if self.layout not in PUBLISHED_LAYOUTS:
            return f"--layout {self.layout}: choose {', '.join(PUBLISHED_LAYOUTS)}"
        if self.image_format not in (None, *PUBLISHED_FORMATS):
            return f"--image-format {self.image_format}: choose {', '.join(PUBLISHED_FORMATS)}"
        if self.layout == "tfds" and self.image_format == "raw":
            return "--layout tfds stores PNG images, as TFDS's catalog does: drop --image-format raw"
        return None

    @property
    def pixels(self) -> str:
        """The image format in effect."""
        return self.image_format or ("png" if self.layout == "tfds" else "raw")


#: runs fill(lo, hi) -> bytes over 0..n-1 in parts elsewhere (an engine's forked
#: processes), giving each part's bytes in order, or None: then the caller does it
PartsFiller = Callable[[Callable[[int, int], bytes], int], "list[bytes] | None"]


@dataclass(frozen=True)
class SourceContext:
    """What a run tells every converter besides its source and its options. Every
    built-in converter is made the same way, `XConverter(source, options, context)`:
    the source (a folder, a file, a list of files), the frozen options of its command,
    and this."""

    out: str | None = None  # this run's output: never listed as an input
    seed: int = 0  # seeds the splits a converter draws by ratio
    on_error: str = "fail"  # "skip": an item that cannot be used is listed in `skipped`, left out
    fill_in_parts: PartsFiller | None = None  # where independent listing work may run (folders.list_files)
    # ratio splits drawn item by item (an --append's: an item lands where it would have
    # landed whatever else is there), not as exact counts of the whole
    per_item_splits: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        # listing is done where the converter is made: fill_in_parts (a closure over that
        # process) does not travel with the converter to workers or Beam
        return SourceContext, (self.out, self.seed, self.on_error, None, self.per_item_splits)


@dataclass(frozen=True)
class Group:
    """Examples equal to `prototype` but for the `varying` values (one row each).

    varying: feature name -> uint8 array (N, ...) for a bytes feature of fixed length
    whose value i is `values[i].tobytes()` (C order: a transposed view is read as
    transposed), or an integer array (N,) for an int64 feature. positions: where each
    row sits in the batch (None: the rows are the whole batch, in order).
    """

    prototype: dict[str, Any]
    varying: dict[str, np.ndarray]
    positions: np.ndarray | None = None


@dataclass(frozen=True)
class Columns:
    """A batch described column-wise: a few groups of near-identical examples."""

    groups: list[Group]
    count: int


@dataclass(frozen=True)
class ColumnBatch:
    """A batch described as one column per feature (a table's rows): what
    example_columns.serialize_rows lays out."""

    columns: list[FeatureColumn]
    count: int


class Converter(ABC):
    """A source: lists items, assigns splits, declares features, turns items into features.

    It never frames records, picks a container, or decides how it is run: the
    engines do (inline or on worker processes, fork or spawn, on Beam).
    """

    #: registry name, the `tfr-convert` subcommand
    command: str = ""
    #: default dataset name (--name), used in shard file names; the command's without one
    dataset_name: str = ""
    description: str = ""
    #: feature name -> how readers should see it
    features: dict[str, FeatureSpec]
    #: what the run told the converter (its constructor sets its own)
    context: SourceContext = SourceContext()
    #: a hint for the engines: items per batch, large enough to amortize a batch's
    #: overhead, small enough that the batches in flight stay small
    chunk_size: int = 256

    @property
    def skipped(self) -> Skips:
        """Items dropped while listing sources (under on_error="skip"). Each converter's
        own, made when first asked for: a class-level default would be one list shared
        by every instance of every converter that did not make its own."""
        kept = self.__dict__.get("_skipped")
        if kept is None:
            kept = self.__dict__["_skipped"] = Skips()
        return kept

    @skipped.setter
    def skipped(self, value: Skips) -> None:
        self.__dict__["_skipped"] = value

    @property
    def labels(self) -> dict[str, list[str]]:
        """Feature name -> class names, written to {feature}.labels.txt; none unless the
        converter sets them (each converter's own dict, made when first asked for)."""
        kept = self.__dict__.get("_Converter__labels")
        if kept is None:
            kept = self.__dict__["_Converter__labels"] = {}
        return kept

    @labels.setter
    def labels(self, value: dict[str, list[str]]) -> None:
        self.__dict__["_Converter__labels"] = value

    #: what listing the sources found worth saying (the engines report them first)
    warnings: tuple[str, ...] | list[str] = ()
    #: features an Example may lack (a table's nulls left out); their schema reads a missing
    #: one as an empty list
    optional_features: frozenset[str] = frozenset()
    #: the source is a dataset already in its order (a tfr-export of one): without an
    #: explicit --shuffle it is written in that order, so that it comes back as it was
    keeps_order: bool = False
    #: the '/'s of feature names separate levels of nested TFDS FeaturesDicts (the
    #: Object Detection API's `image/object/...` keys); per-object features form a Sequence
    nested_features: bool = False
    #: dataset_info.json's supervisedKeys as another dataset had them ({}: none); None:
    #: found from the features (one image and one class label)
    supervised_keys: dict[str, Any] | None = None
    #: `features_of` returns the record's bytes as they are to be written (records copied
    #: from existing files, byte for byte), not a features dict
    serialized: bool = False
    #: written in TFDS's own layout (`--layout tfds`): under OUT/NAME/VERSION, as
    #: `tfds.load(NAME, data_dir=OUT)` and `tfds.builder(NAME, data_dir=OUT)` look for it
    tfds_layout: bool = False
    #: (TFDS catalog name, its version) when the output is that catalog dataset's very
    #: layout: its VERSION is the catalog's, written in its metadata too (else 1.0.0)
    catalog: tuple[str, str] | None = None
    #: names of `recorded_options` entries that say what this run's inputs were or held (a
    #: masks folder, the split folders found), not how they are converted: a version
    #: --append adds may differ from the dataset's in them
    input_options: frozenset[str] = frozenset()
    #: {class label feature: the id each of this converter's ids is written as}: set by an
    #: --append whose dataset numbered the class names first (the encoder applies it)
    relabel: dict[str, list[int]] | None = None

    def begin(self, options: OptionsT, context: SourceContext | None, *about: Any) -> OptionsT:
        """The first step of a built-in converter's constructor: the run's context (or the
        default one), no warnings yet, and the options checked (an OptionError naming their
        problem; `about`: what their `problem` asks of the run, e.g. records' --on-error)."""
        self.context = context or SourceContext()
        self.warnings = []
        return options.checked(*about)

    @abstractmethod
    def source_splits(self) -> dict[str, list[Hashable]]:
        """Items of each split the dataset itself defines, in source order.

        Called once, by the engine, which keeps the lists from then on: a converter
        need not hold on to them (what engines ship to workers stays small).
        """

    @abstractmethod
    def key(self, item: Hashable) -> str:
        """A stable, unique name of the item; seeds its split and shuffle rank."""

    def describe(self, item: Hashable) -> str:
        """Where the item comes from, for error messages (file and position); its key
        unless the converter says more."""
        return self.key(item)

    @abstractmethod
    def features_of(self, item: Hashable) -> dict[str, Any]:
        """The item's features dict (serialized by example.serialize)."""

    def sources(self) -> list[dict[str, Any]]:
        """Fingerprints of the input files read whole, for the manifest (and for `--resume`
        to tell a changed one); none unless the converter lists them."""
        return []

    def recorded_options(self) -> dict[str, Any]:
        """The converter's own options, recorded in the manifest (and compared by
        `--resume`); `self.options` stays free for the converter's options object."""
        return {}

    def label_of(self, item: Hashable) -> Hashable | None:
        """The item's class label, for the figure of how well the written order mixes
        labels (order_quality); None: no label known, no figure."""
        return None

    def columns_of(self, items: list[Hashable]) -> Columns | ColumnBatch | None:
        """A whole batch column-wise (the encoder's numpy fast paths: groups of
        near-identical examples, or one column per feature), or None to encode item by
        item. Must describe exactly the features of `features_of`."""
        return None

    def features_of_each(self, items: list[Hashable]) -> list[dict[str, Any]] | None:
        """The features of every item, computed together where that is cheaper than one
        at a time (images compressed in one numpy pass), or None to call `features_of` per item.
        Must equal `[self.features_of(item) for item in items]`; on an error the encoder
        falls back to `features_of`, which names the item."""
        return None

    def input_roots(self) -> list[str]:
        """The files or folders `features_of` reads (engines spawn, not fork, for remote ones)."""
        return []

    def reject(self, where: str, reason: str) -> None:
        """An item or source row that cannot be used: SourceError, or, where the converter
        was made with on_error="skip", listed in its `skipped` and left out."""
        if self.context.on_error != "skip":
            error = SourceError(f"{where}: {reason}")
            error.skippable = True
            raise error
        self.skipped.add(where, reason)

    def item_file(self, item: Hashable) -> str | None:
        """The file `features_of` reads for the item, relative to input_roots()[0], where items are
        files: the engine records their stats so that --resume notices one that changed.
        None where `sources` fingerprints every input."""
        return None

    def item_files(self, item: Hashable) -> tuple[str | None, ...]:
        """Every file `features_of` reads for the item, one per input root, relative to it
        (None: none there): `item_file`'s, and where an item has files under other roots
        too (a picture's mask) those, all recorded for --resume alike."""
        return (self.item_file(item),)

    def item_sizes(self, items: Sequence[Hashable]) -> list[int] | None:
        """The bytes each item is read from, where the listing knows them without a stat
        (a tar member's size): --shard-size plans its cuts from them (engine/planned.py).
        None: the engine takes the sizes of the item files, where items are files."""
        return None

    def finish_loading(self) -> None:
        """Finish any loading running in the background (threads), so that the
        converter can be copied into worker processes. Engines call it first."""
        return None

    def planned(self, plan: dict[str, Sequence[Hashable]]) -> None:
        """The run's plan (each split's items in the order they are written), told once
        before any batch is encoded and before workers start: a converter may lay its
        reads out in that order. Nothing may rely on it being called (a dry run, Beam)."""
        return None

    def observe(self, features: dict[str, Any]) -> Hashable | None:
        """A small fact about one encoded example, counted across the run for `finish`.
        Called right after `features_of` of the same item, in the same process."""
        return None

    def summarized(self, observations: Counter[Hashable]) -> Counter[Hashable]:
        """Of some observations (a shard's, a batch's), the ones `finish` needs, so that
        finish(summarized(a) + b) says what finish(a + b) says for any b: the engines keep
        and journal these instead of every distinct one. All of them unless a converter
        knows better (a converter whose observations vary with every item should)."""
        return observations

    def extra_files(self) -> dict[str, bytes]:
        """Files of the converter's own to put beside the shards (a label map), by name."""
        return {}

    def finish(self, observations: Counter[Hashable]) -> list[str] | None:
        """Called after every example is written, before the metadata: may refine
        `features` from what was seen, or raise if the examples cannot form one dataset;
        returns warnings worth reporting about the whole run (or None)."""
        return None


def items_per_chunk(sizes: list[int], chunk_bytes: int, least: int, most: int) -> int:
    """Items per chunk where an item's record is about as large as `sizes` say (a sample of
    the first items, so the same input gives the same chunks): about `chunk_bytes` by the
    median, from `least` to `most`; `least` without a sample."""
    if not sizes:
        return least
    median = sorted(sizes)[len(sizes) // 2]
    return max(least, min(most, chunk_bytes // max(median, 1)))


def fingerprint(path: str, data: bytes) -> dict[str, Any]:
    return {"file": os.path.basename(path), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


class Background:
    """Values computed on one helper thread while the caller goes on (arrays inflated
    or transposed while the splits are planned): `get` waits for one, `finish_loading` for all
    and ends the thread."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(1)
        self._values: dict[str, Any] = {}

    def submit(self, key: str, fn: Callable[..., Any], *args: Any) -> None:
        assert self._pool is not None, "settled already"
        self._values[key] = self._pool.submit(fn, *args)

    def run(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Run fn(*args) on the thread after everything submitted before (the order is
        the thread's queue), under no key: the caller keeps the future if it cares."""
        assert self._pool is not None, "settled already"
        return self._pool.submit(fn, *args)

    def get(self, key: str) -> Any:
        """The value, waiting for it if the thread is still computing it (its error is raised here)."""
        value = self._values[key]
        if isinstance(value, Future):
            value = self._values[key] = value.result()
        return value

    def finish_loading(self) -> None:
        for key in self._values:
            self.get(key)
        if self._pool is not None:
            self._pool.shutdown(wait=True)  # the thread is gone before anyone forks
            self._pool = None

    def __getstate__(self) -> dict[str, Any]:
        self.finish_loading()
        return {"_pool": None, "_values": self._values}
