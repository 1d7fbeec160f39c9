"""What every converter provides to the pipeline.

A converter finds and validates its sources up front (before anything is
written), lists its items per source split, and turns one item into a
features dict with `encode`. Items are small (an index, a path, a row) and
`encode` is a pure function of the item, so the pipeline may call it in any
process and still write byte-identical output.
"""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Hashable
from concurrent.futures import Future
from typing import Any

from ..metadata import FeatureSpec


class Converter(ABC):
    #: registry name, the `tfr-convert` subcommand
    command: str = ""
    #: default dataset name (--name), used in shard file names
    dataset_name: str = ""
    description: str = ""
    #: feature name -> how readers should see it
    features: dict[str, FeatureSpec]
    #: feature name -> class names, written to {feature}.labels.txt
    labels: dict[str, list[str]]
    #: items per worker task: large enough to amortize IPC, small enough that
    #: the chunks in flight stay small (images are bigger than MNIST rows)
    chunk_size: int = 256
    #: True when frame_batch does all the work in numpy, so cheaply that worker
    #: processes would only add copying: the pipeline then runs in one process
    inline: bool = False
    #: True when encode reads remote files (through TensorFlow's gfile): worker
    #: processes are then spawned, not forked, since TensorFlow does not survive fork
    remote: bool = False
    #: items dropped while listing sources (under on_error="skip"), {"item", "reason"}
    skipped: list[dict[str, str]] = []  # noqa: RUF012  (never mutated; converters assign their own)

    @abstractmethod
    def source_splits(self) -> dict[str, list[Hashable]]:
        """Items of each split the dataset itself defines, in source order."""

    @abstractmethod
    def key(self, item: Hashable) -> str:
        """A stable, unique name of the item; seeds its split and shuffle rank."""

    @abstractmethod
    def describe(self, item: Hashable) -> str:
        """Where the item comes from, for error messages (file and position)."""

    @abstractmethod
    def encode(self, item: Hashable) -> dict[str, Any]:
        """The item's features dict (serialized by example.serialize)."""

    @abstractmethod
    def sources(self) -> list[dict[str, Any]]:
        """Fingerprints of the input files for the manifest."""

    def options(self) -> dict[str, Any]:
        """Converter-specific options recorded in the manifest."""
        return {}

    def frame_batch(self, items: list[Hashable]) -> tuple[bytes, list[int]] | None:
        """Framed records of a whole batch at once (a numpy fast path), or None to
        encode item by item. Must give exactly the bytes of the per-item path."""
        return None

    def for_workers(self) -> Converter:
        """What Beam ships to its workers: enough to encode items, without what only
        the launcher needs (the item lists, which the workers get from plan files)."""
        return self

    def observe(self, features: dict[str, Any]) -> Hashable | None:
        """A small fact about one encoded example, counted across the run for `finish`."""
        return None

    def finish(self, observations: Counter[Hashable]) -> None:
        """Called after every example is written, before the metadata: may refine
        `features` from what was seen, or raise if the examples cannot form one dataset."""
        return None


def fingerprint(path: str, data: bytes) -> dict[str, Any]:
    return {"file": os.path.basename(path), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def settle(pending: dict[str, Any], key: str) -> Any:
    """The value at `key`, waiting for it if a thread is still computing it (a Future),
    and keeping it: converters load arrays on threads while the splits are planned."""
    value = pending[key]
    if isinstance(value, Future):
        value = pending[key] = value.result()
    return value


def settle_all(pending: dict[str, Any]) -> None:
    """Wait for every value (before Beam pickles the converter: no futures in it)."""
    for key in pending:
        settle(pending, key)
