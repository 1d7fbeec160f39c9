"""EMNIST (NIST's `gzip.zip`, or the idx files extracted from it) -> examples.

NIST publishes six variants in one archive, each as four MNIST-style idx files,
`emnist-{variant}-{train,test}-{images-idx3,labels-idx1}-ubyte.gz`, plus
`emnist-{variant}-mapping.txt` (`label code [code ...]` per line, character codes
in decimal). The idx files are read exactly as MNIST's; what differs is where they
are found, how many classes there are and which way up the images lie.

EMNIST's pixels are stored transposed (mirrored and turned a quarter turn). TFDS's
catalog builder keeps them so, and `--layout tfds` does too, so that code written
for `tfds.load("emnist/...")` (its own `tf.transpose` included) sees the same
arrays; the default tutorial layout stores them upright.
"""

from __future__ import annotations

import dataclasses
import os
import re
import zipfile
import zlib

import numpy as np

from ...errors import OptionError, SourceError
from ..base import PublishedOptions, SourceContext
from .idx import EMNIST_ARCHIVE, FILES
from .mnist import MnistConverter

#: variant -> its number of classes in TFDS's catalog (`emnist/letters` declares 37
#: although its labels run 1..26: the catalog's count is kept for `--layout tfds`)
TFDS_CLASSES = {"byclass": 62, "bymerge": 47, "balanced": 47, "letters": 37, "digits": 10, "mnist": 10}
VARIANTS = tuple(f"emnist/{v}" for v in TFDS_CLASSES)
ARCHIVE = EMNIST_ARCHIVE

_DIGITS, _UPPER, _LOWER = "0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
_MERGED = _DIGITS + _UPPER + "abdefghnqrt"  # lowercase letters that differ in shape from their capital
UNUSED = "(unused)"
#: the published mapping files' names, for a folder that lacks them
DEFAULT_NAMES = {
    "byclass": list(_DIGITS + _UPPER + _LOWER),
    "bymerge": list(_MERGED),
    "balanced": list(_MERGED),
    "letters": [UNUSED] + [u + lo for u, lo in zip(_UPPER, _LOWER, strict=True)],
    "digits": list(_DIGITS),
    "mnist": list(_DIGITS),
}
_IDX_NAME = re.compile(r"emnist-([a-z]+)-(train|test)-(images-idx3|labels-idx1)-ubyte(?:\.gz)?")
# The largest real member (byclass train images, gzipped) is under 200 MB; anything
# declaring more than this is refused before it is read.
MAX_MEMBER_BYTES = 1 << 30
MAX_MAPPING_BYTES = 1 << 20


def _wanted(name: str) -> bool:
    return bool(_IDX_NAME.fullmatch(name)) or (name.startswith("emnist-") and name.endswith("-mapping.txt"))


class EmnistFiles:
    """The EMNIST files under SRC: a folder of them (or its `gzip/` sub-folder), NIST's
    `gzip.zip`, or a folder holding that archive. Files are read on request, each
    bounded in size; a zip member's CRC is checked by reading it to its end."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.archive: str | None = None
        self._where: dict[str, str] = {}  # file name -> path, or member name in the archive
        if os.path.isdir(src):
            for folder in (src, os.path.join(src, "gzip")):
                names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
                self._where = {n: os.path.join(folder, n) for n in names if _wanted(n)}
                if self._where:
                    return
            if not os.path.isfile(os.path.join(src, ARCHIVE)):
                return
            src = os.path.join(src, ARCHIVE)
        self.archive = src
        try:
            with zipfile.ZipFile(src) as archive:
                members = archive.infolist()
        except (zipfile.BadZipFile, OSError) as e:
            raise SourceError(f"{src}: not a readable zip archive ({e})") from None
        for member in members:
            name = member.filename.rsplit("/", 1)[-1]
            if not _wanted(name) or member.is_dir():
                continue
            if name in self._where:
                raise SourceError(f"{src}: {name} appears twice ({self._where[name]}, {member.filename})")
            self._where[name] = member.filename

    def variants(self) -> list[str]:
        """The variants all four idx files of which are here."""
        halves: dict[str, set[tuple[str, str]]] = {}
        for name in self._where:
            m = _IDX_NAME.fullmatch(name)
            if m:
                halves.setdefault(m[1], set()).add((m[2], m[3]))
        return [v for v in TFDS_CLASSES if len(halves.get(v, ())) == 4]

    def find(self, stem: str) -> str | None:
        """The file name a stem is stored under (gzipped or not), or None."""
        return next((n for n in (stem + ".gz", stem) if n in self._where), None)

    def read(self, name: str, limit: int = MAX_MEMBER_BYTES) -> tuple[str, bytes]:
        """(where, bytes) of a file: its path, or `ARCHIVE:member`."""
        where = self._where[name]
        if self.archive is None:
            size = os.path.getsize(where)
            if size > limit:
                raise SourceError(f"{where}: {size} bytes, more than the {limit} an EMNIST file may hold")
            with open(where, "rb") as f:
                return where, f.read()
        shown = f"{self.archive}:{where}"
        try:
            with zipfile.ZipFile(self.archive) as archive:
                member = archive.getinfo(where)
                if member.file_size > limit:
                    raise SourceError(
                        f"{shown}: declares {member.file_size} bytes, more than the {limit} an EMNIST file may hold"
                    )
                with archive.open(member) as f:
                    return shown, f.read()  # zipfile stops at the declared size and checks the CRC there
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as e:
            raise SourceError(f"{shown}: corrupt zip member ({e})") from None


def looks_like_emnist(src: str) -> bool:
    """Whether SRC holds EMNIST files or archive (not a plain MNIST folder)."""
    if os.path.isfile(src):
        with open(src, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    try:
        files = EmnistFiles(src)
    except SourceError:
        return True  # an archive is there; reading it will say what is wrong
    return bool(files.archive or files.variants())


def parse_mapping(where: str, data: bytes) -> list[str]:
    """Class names from a mapping file: label i is named by the characters of its codes;
    labels the file skips (letters starts at 1) are named UNUSED."""
    named: dict[int, str] = {}
    for number, line in enumerate(data.decode("ascii", errors="replace").splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            label, *codes = (int(f) for f in fields)
            if not codes or not 0 <= label < 256 or not all(0 < c < 0x110000 for c in codes):
                raise ValueError
        except ValueError:
            raise SourceError(
                f"{where}: line {number}: expected 'label code [code ...]', found {line[:40]!r}"
            ) from None
        if label in named:
            raise SourceError(f"{where}: line {number}: label {label} is mapped twice")
        named[label] = "".join(chr(c) for c in codes)
    if not named:
        raise SourceError(f"{where}: no mappings (expected lines of 'label code')")
    return [named.get(i, UNUSED) for i in range(max(named) + 1)]


class EmnistConverter(MnistConverter):
    """MNIST's reader over EMNIST's files, for one variant."""

    description = "EMNIST handwritten characters (28x28 grayscale) with class labels."

    def __init__(self, src: str, options: PublishedOptions | None = None, context: SourceContext | None = None) -> None:
        options = self.begin(options or PublishedOptions(), context)
        variant, layout = options.variant, options.layout
        self._files = EmnistFiles(src)
        complete = self._files.variants()
        if variant is None:
            if not complete:
                raise SourceError(f"{src}: no complete EMNIST variant (four emnist-NAME-{{train,test}}-... idx files)")
            if len(complete) > 1:
                raise OptionError(f"{src}: holds EMNIST {', '.join(complete)}: choose one with --variant emnist/NAME")
            variant = f"emnist/{complete[0]}"
        self.config = variant.removeprefix("emnist/")
        if self.config not in complete:
            missing = [stem for stem in self._stems().values() if self._files.find(stem) is None]
            raise SourceError(f"{src}: missing {missing[0]} (or {missing[0]}.gz) for {variant}")
        self._names = self._mapping_names() if layout == "tutorial" else None
        self.num_classes = TFDS_CLASSES[self.config] if self._names is None else len(self._names)
        self.upright = layout == "tutorial"
        self.tfds_layout = layout == "tfds"
        super().__init__(src, dataclasses.replace(options, variant=variant), self.context)
        self.dataset_name = f"emnist_{self.config}"

    def _stems(self) -> dict[tuple[str, str], str]:
        kinds = {"images": "images-idx3", "labels": "labels-idx1"}
        return {(split, what): f"emnist-{self.config}-{split}-{kinds[what]}-ubyte" for split, what in FILES}

    def _mapping_names(self) -> list[str]:
        name = f"emnist-{self.config}-mapping.txt"
        if self._files.find(name) is None:
            return DEFAULT_NAMES[self.config]
        return parse_mapping(*self._files.read(name, MAX_MAPPING_BYTES))

    def _read_source(self, split: str, what: str) -> tuple[str, bytes]:
        stem = self._stems()[split, what]
        return self._files.read(self._files.find(stem) or stem)

    def _parse_images(self, where: str, raw: bytes) -> np.ndarray:
        images = super()._parse_images(where, raw)
        return np.ascontiguousarray(images.transpose(0, 2, 1)) if self.upright else images

    def _detect_variant(self) -> str:
        return f"emnist/{self.config}"

    def class_names(self) -> list[str]:
        # TFDS's catalog names EMNIST's classes by number
        return self._names if self._names is not None else [str(i) for i in range(self.num_classes)]

    def recorded_options(self) -> dict[str, object]:
        return {**super().recorded_options(), "upright": self.upright}
