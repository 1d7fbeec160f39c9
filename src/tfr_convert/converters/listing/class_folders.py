"""Files labelled by their folders: ROOT/CLASS/file, or ROOT/SPLIT/CLASS/file where every
folder of ROOT names a split (TFDS's ImageFolder, Keras, ImageNet). Shared by the
converters of a folder of media files (pictures, recordings), each naming what counts as
one of its files by suffix."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from .folders import ImageFolder, folder_runs, named, split_folders


@dataclass
class Labelled:
    """The files found, each with its class index (None where ROOT has no class folders),
    the classes (sorted folder names) and, under split folders, each file's split."""

    files: list[tuple[str, int | None]]
    classes: list[str]
    split_of: dict[str, str]


def _by_class(
    parts: list[tuple[str, list[str]]], loose: Callable[[list[str], str], None]
) -> tuple[list[tuple[str, int | None]], list[str]]:
    """(file, class index) of the files of each part (ROOT, or each split folder, with its
    prefix), the classes being the folders in them all, sorted; files beside the class
    folders go to `loose` (unlabelled files, where there are no class folders at all)."""
    # (prefix, its files' runs): the class folders of ROOT or of each split folder
    inner = [(prefix, [f[len(prefix) :] for f in files]) for prefix, files in parts]
    inner_runs = [(prefix, files, folder_runs(files)) for prefix, files in inner]
    classes = sorted({top for _, _, files in inner_runs for top, _, _ in files if top is not None})
    labelled: list[tuple[str, int | None]] = []
    index = {name: i for i, name in enumerate(classes)}
    for prefix, files, found_runs in inner_runs:
        outside = [prefix + f for top, start, stop in found_runs if top is None for f in files[start:stop]]
        if not classes:
            labelled += [(f, None) for f in outside]  # unlabelled: just files
            continue
        loose(outside, "class")
        for top, start, stop in found_runs:
            if top is not None:
                labelled += [(prefix + f, index[top]) for f in files[start:stop]]
    return labelled, classes


def class_folders(
    folder: ImageFolder,
    suffixes: tuple[str, ...],
    noun: str,
    reject: Callable[[str, str], None],
    warnings: list[str],
    inside: Callable[[str, str], bool],
) -> Labelled:
    """ROOT's files by class folder. A file beside the class (or split) folders has no
    label (or no split) and is rejected when its suffix says it is one of the `noun`s,
    left out with a warning otherwise; one inside them whose suffix is none of the
    nouns' is left out with a warning; `inside(rel, where)` says whether a file really
    lies under ROOT (and rejects it if not)."""
    root = folder.root
    left_out: dict[str, list[str]] = {}
    files = folder.files(left_out)
    # A link to a folder inside ROOT adds nothing (its files are listed where they are);
    # one leading outside is refused like a file that does.
    for link in sorted(left_out.get("link", [])):
        inside(link, os.path.join(root, link))
    if left_out.get("dataset"):
        warnings.append(
            f"{root}: left out {named(left_out['dataset'], 'folder')}, holding tfr-convert output, not {noun}s"
        )

    def loose(files: list[str], kind: str) -> None:
        others = [f for f in files if not f.lower().endswith(suffixes)]
        if others:
            warnings.append(f"{root}: left out {named(others)}, beside the {kind} folders (not {noun}s)")
        why = f"{noun} outside the class folders (no label)" if kind == "class" else f"{noun} outside the split folders"
        for f in files:
            if f not in others:
                reject(os.path.join(root, f), why)

    runs = folder_runs(files)
    splits = split_folders(root, [top for top, _, _ in runs if top is not None])
    if splits is None:
        parts = [("", files)]
    else:
        loose([f for top, start, stop in runs if top is None for f in files[start:stop]], "split")
        parts = [(top + os.sep, files[start:stop]) for top, start, stop in runs if top is not None]
    labelled, classes = _by_class(parts, loose)
    # a README, a .DS_Store or a notes.txt in a class folder is no picture or recording:
    # left out by its name, as Keras, TFDS's ImageFolder and HF's imagefolder do
    others = [f for f, _ in labelled if not f.lower().endswith(suffixes)]
    if others:
        warnings.append(
            f"{root}: left out {named(others)} (by {'their' if len(others) > 1 else 'its'} name, not {noun}s)"
        )
        labelled = [(f, label) for f, label in labelled if f.lower().endswith(suffixes)]
    # Only a link can lead outside ROOT (links to folders are not entered): the other
    # files skip the realpath check, which was most of the listing's cost.
    links = set(left_out.get("file_link", ()))
    labelled = [(f, label) for f, label in labelled if f not in links or inside(f, os.path.join(root, f))]
    split_of = {} if splits is None else {f: splits[f.split(os.sep, 1)[0]] for f, _ in labelled}
    return Labelled(labelled, classes, split_of)
