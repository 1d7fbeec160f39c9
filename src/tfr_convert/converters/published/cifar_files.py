"""CIFAR's published files: the layouts of both versions (python pickles and binary),
and where the files are: a folder, a folder holding one, or the downloaded archive read
member by member (nothing extracted), each file's size bounded before it is read."""

from __future__ import annotations

import os
import tarfile
import zlib
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...errors import SourceError
from ...storage.reading import HashingReader

# No real CIFAR file comes near these (a batch is 31 MB, CIFAR-100's train 155 MB, a
# whole variant under 190 MB); they bound what a hostile archive or folder makes us hold.
MAX_MEMBER_BYTES = 256 << 20
MAX_TOTAL_BYTES = 512 << 20


@dataclass(frozen=True)
class LabelKind:
    feature_prefix: str  # "" -> label_index / label_name; "coarse_" -> coarse_label_index / ...
    labels_key: str  # in each batch
    names_key: str  # in the meta file
    num_classes: int


@dataclass(frozen=True)
class Layout:
    folder: str
    archive: str
    train: tuple[str, ...]
    test: tuple[str, ...]
    meta: str
    label_kinds: tuple[LabelKind, ...]
    #: the binary version: records of label bytes (in `label_order`, indices into
    #: label_kinds) then 3072 planar pixels; class names in text files, one per line
    binary: bool = False
    label_order: tuple[int, ...] = (0,)
    names_files: tuple[str, ...] = ()  # per label kind; `meta` is the first

    @property
    def members(self) -> tuple[str, ...]:
        return (*self.train, *self.test, self.meta, *self.names_files[1:])


LAYOUTS = {
    "cifar10": Layout(
        folder="cifar-10-batches-py",
        archive="cifar-10-python.tar.gz",
        train=tuple(f"data_batch_{i}" for i in range(1, 6)),
        test=("test_batch",),
        meta="batches.meta",
        label_kinds=(LabelKind("", "labels", "label_names", 10),),
    ),
    "cifar100": Layout(
        folder="cifar-100-python",
        archive="cifar-100-python.tar.gz",
        train=("train",),
        test=("test",),
        meta="meta",
        label_kinds=(
            LabelKind("", "fine_labels", "fine_label_names", 100),
            LabelKind("coarse_", "coarse_labels", "coarse_label_names", 20),
        ),
    ),
}


VARIANTS = tuple(LAYOUTS)


# The same datasets as the binary version (what TensorFlow Datasets downloads).
BINARY_LAYOUTS = {
    "cifar10": Layout(
        folder="cifar-10-batches-bin",
        archive="cifar-10-binary.tar.gz",
        train=tuple(f"data_batch_{i}.bin" for i in range(1, 6)),
        test=("test_batch.bin",),
        meta="batches.meta.txt",
        label_kinds=LAYOUTS["cifar10"].label_kinds,
        binary=True,
        names_files=("batches.meta.txt",),
    ),
    "cifar100": Layout(
        folder="cifar-100-binary",
        archive="cifar-100-binary.tar.gz",
        train=("train.bin",),
        test=("test.bin",),
        meta="fine_label_names.txt",
        label_kinds=LAYOUTS["cifar100"].label_kinds,
        binary=True,
        label_order=(1, 0),  # a record starts with the coarse label, then the fine one
        names_files=("fine_label_names.txt", "coarse_label_names.txt"),
    ),
}


# (variant, layout), pickles first: what a folder or an archive is searched for
ALL_LAYOUTS = [*LAYOUTS.items(), *BINARY_LAYOUTS.items()]


class Member(NamedTuple):
    where: str  # for messages: the file's path, or archive:member
    data: bytes | None  # an archive member's bytes; None: a folder's file, read when it is parsed
    size: int


def list_folder(folder: str) -> dict[str, Member]:
    """{member name: member} of every known file in a folder (each file is read once,
    when it is parsed)."""
    wanted = {m for _, layout in ALL_LAYOUTS for m in layout.members}
    by_name = {}
    budget = _SizeBudget()
    for name in sorted(wanted):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            size = os.path.getsize(path)
            budget.take(path, size)
            by_name[name] = Member(path, None, size)
    return by_name


class _SizeBudget:
    """What the CIFAR files of one source may hold: each, and all together."""

    def __init__(self) -> None:
        self.total = 0

    def take(self, where: str, size: int) -> None:
        if size > MAX_MEMBER_BYTES:
            raise SourceError(f"{where}: larger than any CIFAR file ({size} bytes; at most {MAX_MEMBER_BYTES})")
        self.total += size
        if self.total > MAX_TOTAL_BYTES:
            raise SourceError(
                f"{where}: the CIFAR files reach {self.total} bytes with this one, more than any CIFAR "
                f"variant holds (at most {MAX_TOTAL_BYTES})"
            )


def read_archive(archive: str) -> tuple[dict[str, Member], dict[str, Any]]:
    """The same, streamed member by member from a .tar.gz in one pass; also the
    archive's own fingerprint, hashed on the way."""
    folders = {layout.folder: layout for _, layout in ALL_LAYOUTS}
    by_name: dict[str, Member] = {}
    budget = _SizeBudget()
    current = None
    try:
        with open(archive, "rb") as f:
            reader = HashingReader(f)
            with tarfile.open(fileobj=reader, mode="r|*") as tar:  # type: ignore[call-overload]
                for member in tar:
                    folder, _, name = member.name.rstrip("/").rpartition("/")
                    layout = folders.get(folder.removeprefix("./"))
                    if not member.isfile() or layout is None or name not in layout.members:
                        continue
                    current = f"{archive}:{member.name}"
                    if name in by_name:
                        raise SourceError(
                            f"{current}: a second {name} in the archive (the first is {by_name[name].where})"
                        )
                    budget.take(current, member.size)
                    stream = tar.extractfile(member)
                    assert stream is not None  # a regular file always has one
                    data = stream.read()
                    if len(data) != member.size:
                        raise SourceError(f"{current}: truncated archive ({len(data)} of {member.size} bytes)")
                    by_name[name] = Member(current, data, len(data))
                    current = None
            reader.drain()
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        where = current or archive
        raise SourceError(f"{where}: truncated or corrupt archive ({e or type(e).__name__})") from None
    return by_name, {"file": os.path.basename(archive), "bytes": reader.size, "sha256": reader.hash.hexdigest()}


def locate(src: str) -> str:
    """The folder or archive inside SRC that holds the batches."""
    if os.path.isfile(src):
        return src
    names = set(os.listdir(src))
    if any(m in names for _, layout in ALL_LAYOUTS for m in layout.members):
        return src
    for _, layout in ALL_LAYOUTS:
        if layout.folder in names and os.path.isdir(os.path.join(src, layout.folder)):
            return os.path.join(src, layout.folder)
    for _, layout in ALL_LAYOUTS:
        if layout.archive in names:
            return os.path.join(src, layout.archive)
    folders = "/".join(layout.folder for _, layout in ALL_LAYOUTS)
    raise SourceError(f"{src}: no CIFAR batches, {folders} folder or archive")


def detect(members: dict[str, Any], where: str, variant: str | None) -> tuple[str, Layout]:
    """(variant, layout) of what was found: the pickles if they are there, else the binaries."""
    for name, layout in ALL_LAYOUTS:
        if layout.meta in members and variant in (None, name):
            return name, layout
    raise SourceError(
        f"{where}: neither batches.meta / batches.meta.txt (CIFAR-10) nor meta / fine_label_names.txt (CIFAR-100) found"
    )
