"""Which files a tfr-inspect PATH names: a file, a dataset directory or a glob, local or
remote (read in place, through fs)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from ..dataset.existing import ExistingDataset
from ..dataset.naming import COMMITTING, WORK_FOLDER, ShardName
from ..dataset.splits import SPLIT_ORDER
from ..dataset.versions import versions
from ..errors import SourceError
from ..storage import fs

_METADATA_SUFFIXES = (".json", ".txt", ".png", ".md", ".index")


@dataclass
class Inputs:
    files: list[str]
    datasets: list[str] = field(default_factory=list)  # directories holding a dataset_info.json


def _shard_sort_key(path: str) -> tuple:
    s = ShardName.parse(path)
    assert s is not None
    order = SPLIT_ORDER.index(s.split) if s.split in SPLIT_ORDER else len(SPLIT_ORDER)
    return (s.name, order, s.split, s.index)


def _regular(path: str) -> str:
    """The path, if it is a regular file; a FIFO or device would block or never end."""
    if fs.is_remote(path):
        return path  # an object store holds objects only
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "special"
        )
        raise SourceError(f"{path}: not a regular file ({kind}); tfr-inspect reads regular files only")
    return path


def _directory(p: str, inputs: Inputs) -> None:
    if fs.exists(fs.join(p, WORK_FOLDER, COMMITTING)):
        raise SourceError(
            f"{p}: a tfr-convert commit into this directory is under way, or was cut short "
            f"({fs.join(p, WORK_FOLDER, COMMITTING)}); its files are a mixture until it ends. "
            "A run into the directory (any tfr-convert command with this --out) finishes it"
        )
    files = sorted(fs.join(p, e) for e in fs.files_in(p) if not e.startswith("."))
    shards = [e for e in files if ShardName.parse(e)]
    chosen = sorted(shards, key=_shard_sort_key) or [e for e in files if not e.endswith(_METADATA_SUFFIXES)]
    if not chosen:
        held = versions(p)
        if held:
            raise SourceError(
                f"{p}: holds versions of a dataset ({', '.join(held)}), no TFRecord files: "
                f"name one, e.g. {fs.join(p, held[-1])} (tfr-inspect {p} alone lists them)"
            )
        raise SourceError(f"{p}: directory holds no TFRecord files")
    inputs.files += [_regular(c) for c in chosen]
    if ExistingDataset.holds_dataset(p):
        inputs.datasets.append(p)


def resolve(paths: list[str]) -> Inputs:
    inputs = Inputs([])
    for p in paths:
        if fs.isdir(p):
            _directory(p, inputs)
        elif fs.isfile(p) if fs.is_remote(p) else os.path.lexists(p):
            inputs.files.append(_regular(p))
        else:
            matches = sorted(fs.glob(p))
            if not matches:
                raise SourceError(f"{p}: no such file, directory or glob match")
            inputs.files += [_regular(m) for m in matches if not fs.isdir(m)]
    return inputs


def split_of(path: str) -> str | None:
    shard = ShardName.parse(path)
    return shard.split if shard else None
