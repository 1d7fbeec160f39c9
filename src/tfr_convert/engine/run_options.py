"""What a run is asked to do (RunOptions), checked as a whole before any input is read.

Apart from the engine that carries it out: the command line checks its options before
it builds a converter, and building one may set the sources loading on threads while
the engine, and numpy, are imported.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .. import containers
from ..errors import OptionError
from ..optional import extra_hint
from ..output.metadata import DATASET_VERSION
from ..output.shards import ShardPolicy
from ..storage import fs

if TYPE_CHECKING:
    from ..converters.base import Converter


@dataclass(frozen=True)
class RunOptions:
    out: str
    name: str | None = None
    policy: ShardPolicy = field(default_factory=ShardPolicy)
    file_format: str = "tfrecord"
    compression: str = "none"
    seed: int = 0
    shuffle: bool = True
    validation_size: int = 0
    workers: int = 1
    overwrite: bool = False
    resume: bool = False  # go on from an interrupted run's journal (local engine)
    on_error: str = "fail"  # or "skip": leave out items that fail to encode, and list them
    index: bool = False  # write <shard>.index files (DALI / tfrecord package format)
    limit: int | None = None  # at most this many examples per split (the first of its plan): a quick trial
    append: bool = False  # a new version of the dataset at OUT/NAME, its newest version's shards shared
    version: str | None = None  # the version --append makes (else the newest's next minor)

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise OptionError(problem)

    def problem(self) -> str | None:
        """What makes these options impossible together, in the command line's words (the
        one home of these rules: the CLI turns it into a usage error), or None."""
        if self.file_format not in containers.FORMATS:
            return f"--format {self.file_format}: choose {', '.join(containers.FORMATS)}"
        container = self.container()
        if self.compression not in container.compressions:
            return (
                f"--compression {self.compression} does not apply to --format {self.file_format} "
                f"(choose {', '.join(container.compressions)})"
            )
        if not container.available():
            return f"--format {self.file_format} needs its library: {extra_hint(container.extra)}"
        if self.index and self.file_format != "tfrecord":
            return "--index is for TFRecord shards (ArrayRecord files carry their own index)"
        if self.index and self.compression != "none":
            return "--index needs --compression none (index offsets point into the file)"
        if self.version is not None and not self.append:
            return "--version names the version --append makes: it needs --append"
        if self.append and self.overwrite:
            return "--append adds a version and leaves the others as they are: it cannot --overwrite"
        if self.on_error not in ("fail", "skip"):
            return f"--on-error {self.on_error}: choose fail or skip"
        return None

    def container(self) -> containers.Container:
        return containers.get(self.file_format)

    def at_dataset_folder(self, converter: Converter) -> RunOptions:
        """These options with `out` where the converter's output belongs: OUT/NAME/VERSION
        for TFDS's layout, where `tfds.load(NAME, data_dir=OUT)` looks (VERSION: the
        catalog's for a catalog dataset under its own name, else 1.0.0); else OUT itself.
        With --append, always that layout, VERSION the one the append makes."""
        if self.append:
            from .append import version_folder

            out, name = version_folder(
                self.out,
                self.name,
                self.version,
                converter.dataset_name or converter.command,
                lambda name: catalog_version(converter, name) or DATASET_VERSION,
            )
            return replace(self, out=out, name=name)
        if not converter.tfds_layout:
            return self
        name = self.name or converter.dataset_name
        version = catalog_version(converter, name) or DATASET_VERSION
        return replace(self, out=fs.join(self.out, *name.split("/"), version))

    def recorded(self) -> dict[str, Any]:
        """The options that shape the output (worker count does not), for the manifest."""
        d = asdict(self)
        for k in ("out", "workers", "overwrite", "resume", "policy", "append", "version"):
            d.pop(k)
        return {**d, "shards": self.policy.describe()}


def catalog_version(converter: Converter, name: str) -> str | None:
    """The TFDS catalog's version of the output, when it is that catalog dataset's under
    its catalog name (another --name makes it a dataset of its own)."""
    if converter.catalog is None or name != converter.catalog[0]:
        return None
    return converter.catalog[1]


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
