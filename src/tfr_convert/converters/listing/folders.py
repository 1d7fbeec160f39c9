"""Image folders: what lies under a root, listed once, cheaply.

Shared by the converters that read a folder of images (images, detection): which
files count (hidden files and OS litter do not; a tfr-convert output inside is left
out), links to folders not followed, FIFOs and devices refused while listing, and a
large tree listed in parts on an engine's forked processes.
"""

from __future__ import annotations

import bisect
import os
import pickle
import re
from collections.abc import Hashable
from typing import Any

from ...dataset.naming import INFO, MANIFEST
from ...dataset.splits import SPLIT_FOLDERS
from ...errors import OptionError
from ...storage import fs
from ..base import PartsFiller

_JUNK_FILES = {"thumbs.db", "desktop.ini"}  # OS litter that lives in image folders
_AFTER_SEP = chr(ord(os.sep) + 1)  # sorts right after the separator: "F0" > every "F/..."
# What counts as an image when naming files a CSV leaves out, or that lie beside the
# class folders (by name: the listing reads no file).
# (a file in a class folder by any other name is left out, with a warning, as Keras,
# TFDS's ImageFolder and HF's imagefolder leave out files by extension)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".jpe", ".jif", ".jfif", ".gif", ".bmp", ".dib", ".webp", ".tif", ".tiff",
                  ".ppm", ".pgm", ".pbm", ".pnm")  # fmt: skip
_DATASET_MARKERS = (INFO, MANIFEST)  # a folder holding both is a tfr-convert output


def visible(name: str) -> bool:
    return not name.startswith(".") and name.lower() not in _JUNK_FILES


def list_files(
    root: str,
    left_out: dict[str, list[str]] | None = None,
    exclude: str | None = None,
    fill_in_parts: PartsFiller | None = None,
) -> list[str]:
    """Relative paths of every visible regular file under root, sorted. Not entered:
    links to folders (their relative paths go to left_out["link"]), folders holding a
    tfr-convert dataset (an earlier run's output: left_out["dataset"]), and the folder
    `exclude` (this run's own output, when it lies inside root). Files that are links
    are listed, and named again in left_out["file_link"] (local roots only). Each
    left_out list is sorted. `fill_in_parts`: the folders under root are listed in parts
    by it, where it takes the work."""
    if not fs.is_remote(root):
        skip = os.path.realpath(exclude) if exclude and not fs.is_remote(exclude) else None
        listed: list[str] = []
        missed: dict[str, list[str]] = {}
        if fill_in_parts is None:
            _list_local(root, "", listed, missed, skip)
        else:  # the top level here, the folders under it in parts
            folders: list[str] = []
            _list_local(root, "", listed, missed, skip, folders)
            if folders:
                listed += _list_folders(root, folders, missed, skip, fill_in_parts)
        if left_out is not None:
            for kind, paths in missed.items():
                left_out.setdefault(kind, []).extend(sorted(paths))
        return sorted(listed)
    listed = []
    top = root.rstrip("/")
    for directory, dirs, files in fs.walk(top):
        dirs[:] = sorted(d for d in dirs if visible(d))
        for name in files:
            if visible(name):
                listed.append(fs.join(directory, name)[len(top) + 1 :])
    return sorted(listed)


def _list_folders(
    root: str, folders: list[str], left_out: dict[str, list[str]], skip: str | None, fill_in_parts: PartsFiller
) -> list[str]:
    """The files under `folders` (and what they leave out, added to left_out), listed in
    parts by fill_in_parts; here when it does not take the work, or a part failed (its error
    is then raised here, as itself)."""

    def list_some(lo: int, hi: int, names: list[str], missed: dict[str, list[str]]) -> None:
        for folder in folders[lo:hi]:
            _list_local(root, folder, names, missed, skip)

    def part(lo: int, hi: int) -> bytes:
        names: list[str] = []
        missed: dict[str, list[str]] = {}
        list_some(lo, hi, names, missed)
        return pickle.dumps(("\0".join(names), missed))  # NUL: the one character no name holds

    listed = fill_in_parts(part, len(folders))
    names: list[str] = []
    if listed is None:
        list_some(0, len(folders), names, left_out)
        return names
    for data in listed:
        joined, missed = pickle.loads(data)  # this process's own children's bytes
        names += joined.split("\0") if joined else []
        for kind, paths in missed.items():
            left_out.setdefault(kind, []).extend(paths)
    return names


def _list_local(
    root: str,
    rel: str,
    listed: list[str],
    left_out: dict[str, list[str]],
    skip: str | None,
    folders: list[str] | None = None,
) -> None:
    """Appends to `listed` what os.walk would list (links to folders not followed),
    refusing what is neither a folder, a regular file nor a link: a FIFO would hang
    the run, a device never end. `folders`: the folders to go down into are appended
    there instead of being listed now."""
    with os.scandir(os.path.join(root, rel)) as listing:
        entries = list(listing)  # closed before going down: one open folder at a time, however deep
    prefix = rel + os.sep if rel else ""  # what os.path.join gives for a bare name, without its checks per file
    for entry in entries:
        name = entry.name
        if name[0] == "." or name.lower() in _JUNK_FILES:  # not visible(name): a call per file
            continue
        if entry.is_file(follow_symlinks=False):  # most entries: one question answers
            listed.append(prefix + name)
        elif entry.is_dir():
            path = prefix + name
            if entry.is_symlink():
                left_out.setdefault("link", []).append(path)
            elif skip is not None and os.path.realpath(entry.path) == skip:
                continue
            elif all(os.path.isfile(os.path.join(entry.path, m)) for m in _DATASET_MARKERS):
                left_out.setdefault("dataset", []).append(path)
            elif folders is not None:
                folders.append(path)
            else:
                _list_local(root, path, listed, left_out, skip)
        elif entry.is_symlink():
            left_out.setdefault("file_link", []).append(prefix + name)  # the only files that may lead outside
            listed.append(prefix + name)
        else:
            fs.check_regular(entry.path, entry.stat(follow_symlinks=False).st_mode)


def folder_runs(files: list[str]) -> list[tuple[str | None, int, int]]:
    """(top folder, start, stop) of each run of sorted relative paths under one top
    folder; None for a run of files at the top. The paths under a folder F are
    contiguous in sorted order, and are exactly those from "F/" up to "F" followed by
    the character after the separator: a folder's run ends where a bisection says,
    without looking at each of its paths."""
    runs: list[tuple[str | None, int, int]] = []
    start, n = 0, len(files)
    while start < n:
        folder, sep, _ = files[start].partition(os.sep)
        if sep:
            stop = bisect.bisect_left(files, folder + _AFTER_SEP, start)
        else:  # files at the top: one run up to the next folder's
            stop = start + 1
            while stop < n and os.sep not in files[stop]:
                stop += 1
        runs.append((folder if sep else None, start, stop))
        start = stop
    return runs


#: folder names that say what a folder holds, not which dataset it is: a default name
#: walks up past them (VOC2012/JPEGImages, pets/train/images, coco/train2017)
_GENERIC_FOLDER = re.compile(
    r"(?:images?|imgs?|jpegimages|pngimages|photos|pictures|pics|data|datasets?|all|raw|files|src|"
    r"sources?|inputs?|(?:train|training|val|valid|validation|test|testing|eval|evaluation)(?:_?\d+)?)"
)


def dataset_name(image_dir: str) -> str:
    """The default dataset name: IMAGE_DIR's folder name, or that of the nearest folder
    above it whose name is not a generic one (images, train, ...); made of lowercase
    letters, digits and underscores."""
    path = image_dir.split("://", 1)[-1] if fs.is_remote(image_dir) else os.path.abspath(image_dir)
    names = [re.sub(r"\W+", "_", part).strip("_").lower() for part in re.split(r"[/\\]+", path)]
    names = [name for name in names if name]
    chosen = next((name for name in reversed(names) if not _GENERIC_FOLDER.fullmatch(name)), None)
    base = chosen or (names[-1] if names else "")
    return base if re.match(r"[a-z]", base) else f"images_{base}" if base else "images"


_NAMED = 5  # files named in a message, before "..."


def split_folders(root: str, folders: list[str] | set[str]) -> dict[str, str] | None:
    """{folder: the TFDS name of its split} where every one of root's folders names a
    split (train, val, validation, test... in any case: SPLIT_FOLDERS), None where none
    does. Some of each, or two folders naming one split, is an OptionError naming them."""
    splits = {folder: SPLIT_FOLDERS.get(folder.lower()) for folder in sorted(folders)}
    named_splits = [folder for folder, split in splits.items() if split]
    if not named_splits:
        return None
    others = [folder for folder, split in splits.items() if not split]
    if others:
        raise OptionError(
            f"{root}: holds split folders ({', '.join(named_splits)}) and other folders "
            f"({', '.join(others[:_NAMED])}{', ...' if len(others) > _NAMED else ''}): put the class folders "
            "inside the split folders (ROOT/SPLIT/CLASS/...), or keep no split folder at all"
        )
    by_split: dict[str, list[str]] = {}
    for folder in named_splits:
        by_split.setdefault(splits[folder], []).append(folder)  # type: ignore[arg-type]
    for split, folders_of_split in by_split.items():
        if len(folders_of_split) > 1:
            raise OptionError(
                f"{root}: folders {' and '.join(folders_of_split)} both name the {split} split: merge them or rename one"
            )
    return splits  # type: ignore[return-value]


def named(files: list[str], what: str = "file") -> str:
    """'3 images (a.png, b.png, c.png)', naming the first few."""
    shown = ", ".join(files[:_NAMED]) + (", ..." if len(files) > _NAMED else "")
    return f"{len(files)} {what}{'s' if len(files) != 1 else ''} ({shown})"


class ImageFolder:
    """IMAGE_DIR as a converter reads it: its files (listed when first asked for),
    whether a relative path names one, whether a path stays inside it (links resolved).
    `out`: this run's output, never listed when it lies inside; `fill_in_parts`: how the
    engine lists a large tree in parts (see list_files)."""

    def __init__(self, root: str, out: str | None = None, fill_in_parts: PartsFiller | None = None) -> None:
        self.root, self.out, self.fill_in_parts = root, out, fill_in_parts
        self.remote = fs.is_remote(root)
        self.real_root = root if self.remote else os.path.realpath(root)
        self._remote_files: set[str] | None = None  # a remote folder's, listed once

    def files(self, left_out: dict[str, list[str]] | None = None) -> list[str]:
        return list_files(self.root, left_out, self.out, self.fill_in_parts)

    def is_file(self, rel: str) -> bool:
        if not self.remote:
            return os.path.isfile(os.path.join(self.root, rel))
        if self._remote_files is None:
            self._remote_files = set(list_files(self.root, fill_in_parts=self.fill_in_parts))
        return rel in self._remote_files

    def outside(self, rel: str) -> str | None:
        """Where a path leads if a link takes it outside the folder, else None."""
        if self.remote:
            return None  # object stores have no symlinks; ../ is refused before
        real = os.path.realpath(os.path.join(self.root, rel))
        return real if os.path.commonpath([real, self.real_root]) != self.real_root else None

    def listed(self) -> None:
        """Listing is over: what only it needed goes (workers get a copy of the converter)."""
        self._remote_files = self.fill_in_parts = None


class FileItems:
    """For converters whose items are tuples led by a file's path relative to `root`,
    planned into `_splits` until the engine takes them."""

    root: str
    _splits: dict[str, list[Any]]

    def source_splits(self) -> dict[str, list[Hashable]]:
        splits, self._splits = self._splits, {}  # the engine keeps them: workers get a small converter
        return splits

    def key(self, item: Hashable) -> str:
        return item[0]  # type: ignore[index]

    def item_file(self, item: Hashable) -> str:
        return item[0]  # type: ignore[index]

    def describe(self, item: Hashable) -> str:
        return fs.join(self.root, item[0])  # type: ignore[index]
