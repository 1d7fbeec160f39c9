"""The versions of a dataset in TFDS's data_dir layout: ROOT/NAME/VERSION/, each a whole
dataset (its dataset_info.json written last). Read by --append (which version is the
newest, which comes next) and by tfr-inspect (which versions a folder holds).
"""

from __future__ import annotations

import re

from ..storage import fs
from .naming import INFO

#: a version folder's name, as TFDS writes versions: MAJOR.MINOR.PATCH
VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")


def as_tuple(version: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in version.split("."))
    return major, minor, patch


def next_minor(version: str) -> str:
    """The version after `version` when records are added: its next minor (TFDS's rule:
    a minor version changes what a dataset holds, not what its features are)."""
    major, minor, _ = as_tuple(version)
    return f"{major}.{minor + 1}.0"


def versions(folder: str) -> list[str]:
    """The complete versions in ROOT/NAME (folders named like a version that hold a
    dataset_info.json), oldest first."""
    if not fs.isdir(folder):
        return []
    found = [e for e in fs.listdir(folder) if VERSION.fullmatch(e) and fs.isfile(fs.join(folder, e, INFO))]
    return sorted(found, key=as_tuple)


def named_datasets(root: str) -> list[str]:
    """The names of the datasets ROOT holds in TFDS's data_dir layout (ROOT/NAME/VERSION)."""
    if not fs.isdir(root):
        return []
    return sorted(e for e in fs.listdir(root) if not e.startswith(".") and versions(fs.join(root, e)))
