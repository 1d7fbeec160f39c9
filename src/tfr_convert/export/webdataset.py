"""--to webdataset: tar shards that `webdataset.WebDataset` and `wids` read, a sample per
record.

A sample's members share its key, as webdataset groups them: the picture as its stored
bytes (`KEY.jpg`, `.png`... by its format; raw pixels as `.npy`), the class label's id as
`KEY.cls` (webdataset's integer label), and every other feature in `KEY.json` (a value
for a feature of one value, else a list; text as text, other bytes as {"base64": ...}).
The key is the record's file name without its extension (a '.' left in it becomes '_',
since webdataset keys end at the first '.'), else the record's place in its split; it
becomes a member name only after the one path check, and a key repeated in a split is
refused as the other exporters refuse a repeated name. Shards are
`OUT/SPLIT-000000.tar`, ... (`data-...` for files of no split) of about --shard-size each, written here in record order (the
same bytes for any worker count: members carry no time, owner or mode of their own), and
`OUT/SPLIT.shards.json` lists them with their sample counts, as `wids` reads them.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
from dataclasses import dataclass
from typing import IO, Any

from ..dataset.features import FeatureSpec
from ..dataset.imageformat import sniff_format
from ..dataset.naming import checked_relative
from ..errors import SourceError
from ..storage import fs
from .engine import Chunk, ExportOptions, Failed, Job, run_staged
from .source import ExportSource, parsed
from .staging import Staging

SHARD_BYTES = 64 << 20
WRITE_BUFFER = 1 << 20
LARGE_MEMBER = 4096  # bytes of a member written on its own, not copied among the small pieces
#: a picture's member extension by the format its bytes are in
EXTENSIONS = {"jpeg": "jpg", "png": "png", "webp": "webp", "gif": "gif", "bmp": "bmp", "tiff": "tiff"}


@dataclass(frozen=True)
class Sample:
    where: str
    stem: str | None  # its key, from its file name (None: none, keyed by its place)
    members: list[tuple[str, bytes]]  # (extension, bytes)


@dataclass(frozen=True)
class Features:
    """Which feature is what: the picture (raw pixels of `raw_shape` when set), its class
    label, its file name; the others go to the json member."""

    image: str | None
    label: str | None
    filename: str | None
    raw_shape: tuple[int, ...] | None
    schema: dict[str, FeatureSpec]
    text: frozenset[str]


class WebdatasetJob(Job):
    parallel = False  # parsing and laying out bytes: cheaper than sending them to a worker

    def __init__(self, features: Features, staging: Staging, shard_bytes: int) -> None:
        self.features, self.shard_bytes = features, shard_bytes
        self._staging: Staging | None = staging  # parent side only
        self._file: IO[bytes] | None = None
        self._shards: list[dict[str, Any]] = []
        self._keys: set[str] = set()
        self._size = self._count = 0
        self._split = ""
        # the picture's bytes as views of each record, not copies, where the samples are
        # laid out in this process (a worker's go back through a pipe, as bytes)
        self._views = frozenset([features.image] if features.image else [])

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_staging": None, "_file": None, "_shards": [], "_keys": set()}

    def in_worker(self) -> None:
        self._views = frozenset()

    def work(self, chunk: Chunk) -> tuple[list[Any], Any]:
        results: list[Any] = []
        for where, payload in chunk.records:
            try:
                results.append(self._sample(where, parsed(payload, self._views)))
            except SourceError as e:
                results.append(Failed(where, str(e)))
        return results, None

    def _sample(self, where: str, example: dict) -> Sample:
        f = self.features
        members, rest = [], {}
        stem = None
        for name, (_, values) in sorted(example.items()):
            if name == f.image:
                members.append(_picture(values, f.raw_shape))
            elif name == f.label:
                members.append(("cls", str(values[0]).encode()))
            elif name == f.filename and values:
                stem = _stem(values[0])
            else:
                scalar = name in f.schema and f.schema[name].shape == ()
                shown = [_json_value(v, name in f.text) for v in values]
                rest[name] = shown[0] if scalar and len(shown) == 1 else shown
        if rest:
            members.append(("json", json.dumps(rest, sort_keys=True, ensure_ascii=False).encode("utf-8")))
        return Sample(where, stem, sorted(members))

    def begin(self, split: str) -> None:
        self._split, self._shards, self._keys, self._count = split, [], set(), 0

    def take(self, split: str, where: str, result: Sample) -> str | None:
        key = result.stem if result.stem is not None else f"{self._count:08d}"
        try:
            key = checked_relative(key, "its webdataset key (from its file name)")
        except SourceError as e:
            return str(e)
        if key in self._keys:
            return f"its key {key!r} (from its file name) repeats an earlier record's in {split}"
        self._keys.add(key)
        if self._file is None:
            self._open()
        assert self._file is not None
        # the small pieces (headers, paddings, labels, JSON) gathered into one write, and each
        # large member's bytes written as they are: two calls a sample, not three a member
        small = bytearray()
        for extension, data in result.members:
            member = member_header(f"{key}.{extension}", len(data))
            padding = -len(data) % BLOCK
            small += member
            if len(data) < LARGE_MEMBER:
                small += data
            else:
                self._file.write(small)
                self._file.write(data)
                small = bytearray()
            small += _ZEROS[:padding]
            self._size += len(member) + len(data) + padding
        self._file.write(small)
        self._count += 1
        self._shards[-1]["nsamples"] += 1
        if self._size >= self.shard_bytes:
            self._close_shard()
        return None

    def _open(self) -> None:
        assert self._staging is not None
        name = f"{_prefix(self._split)}-{len(self._shards):06d}.tar"
        # members and pictures gathered into large writes, not three system calls a member
        self._file = io.BufferedWriter(self._staging.open(name), WRITE_BUFFER)  # type: ignore[arg-type]
        self._shards.append({"url": name, "nsamples": 0})
        self._size = 0

    def _close_shard(self) -> None:
        if self._file is not None:
            end = self._size + 2 * BLOCK  # tar's end: two zero blocks, then zeros to a whole record
            self._file.write(bytes(2 * BLOCK + (-end % RECORD)))
            self._file.close()
            self._file = None

    def end(self, split: str) -> dict[str, Any]:
        self._close_shard()
        assert self._staging is not None
        index = {"__kind__": "wids-shard-index-v1", "wids_version": 1, "name": split, "shardlist": self._shards}
        self._staging.put(f"{_prefix(split)}.shards.json", (json.dumps(index, indent=1) + "\n").encode())
        return {"shards": [fs.join(self._staging.out, s["url"]) for s in self._shards]}

    def close(self) -> None:
        self._close_shard()


# ---------------------------------------------------------------- tar members

BLOCK, RECORD = 512, 512 * 20  # tar's block, and the record its end is padded to
_NAME = 100  # bytes of a name the header holds; a longer one comes first as a GNU long name
_LARGEST = 8**11 - 1  # the largest size the header's octal field holds


def member_header(name: str, size: int) -> bytes:
    """What `tarfile` (GNU format) writes before a regular member's bytes, for one of mode
    0444, owner and time 0: its header, after a GNU long-name entry for a name of more
    than 100 bytes. Made here, as tarfile's own is slow per member; a test holds the two
    equal."""
    raw = name.encode("utf-8", "surrogateescape")
    if size > _LARGEST:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = size, 0o444, 0
        return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
    head = b""
    if len(raw) > _NAME:
        long = raw + b"\0"
        head = _block(b"././@LongLink", 0, len(long), b"L") + long + bytes(-len(long) % BLOCK)
    return head + _block(raw[:_NAME], 0o444, size, b"0")


def _block(name: bytes, mode: int, size: int, kind: bytes) -> bytes:
    fields = b"%07o\0" % mode + _OWNER + b"%011o\0" % size + _TIME
    # the checksum counts its own field as spaces; every other byte as it is
    checksum = sum(name) + sum(fields) + _SPACES + kind[0] + _MAGIC_SUM
    return b"".join((name, bytes(100 - len(name)), fields, b"%06o\0 " % checksum, kind, _TAIL))


_OWNER, _TIME = b"0000000\0" * 2, b"00000000000\0"  # uid and gid 0; time 0
_ZEROS = bytes(BLOCK)  # a member's padding is a slice of it
_SPACES = 8 * 0x20
_MAGIC = b"ustar  \0"  # GNU's
_TAIL = bytes(100) + _MAGIC + bytes(BLOCK - 265)  # link name, magic, owner names, devices, prefix
_MAGIC_SUM = sum(_MAGIC)


def _prefix(split: str) -> str:
    """What a split's files begin with: its name, or `data` for files of no split."""
    return split or "data"


def _picture(values: list[Any], raw_shape: tuple[int, ...] | None) -> tuple[str, bytes]:
    data = values[0] if values else b""
    if raw_shape is not None:
        import numpy as np

        buffer = io.BytesIO()
        np.save(buffer, np.frombuffer(data, np.uint8).reshape(raw_shape), allow_pickle=False)
        return "npy", buffer.getvalue()
    kind = sniff_format(data)
    if kind not in EXTENSIONS:
        raise SourceError(f"its picture is {kind or 'in no format this knows'}: no webdataset extension for it")
    return EXTENSIONS[kind], data


def _stem(value: Any) -> str:
    """The key a file name gives: its extension dropped, a '.' left in its last part '_'."""
    text = value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)
    folder, _, base = text.rpartition("/")
    base = base.rsplit(".", 1)[0] if "." in base.lstrip(".") else base
    return f"{folder}/{base.replace('.', '_')}" if folder else base.replace(".", "_")


def _json_value(value: Any, text: bool) -> Any:
    if not isinstance(value, bytes):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        if text:
            raise SourceError("a feature its metadata says is text is not UTF-8") from None
        return {"base64": base64.b64encode(value).decode("ascii")}


def features_of(source: ExportSource, image: str | None, label: str | None) -> Features:
    """The roles of the features: `image` / `label` as given, else images.py's guesses
    (a record without a picture is a sample of its json alone)."""
    from .images import FILENAME_FEATURES, plan

    schema = source.schema(absent=True)
    raw = None
    try:
        found = plan(source, "csv", image, label)
        image, label, filename, raw = found.image, found.label, found.filename, found.raw_shape
    except SourceError:
        if source.first_example() is None or image is not None:
            raise  # no records, or no picture where --image-feature said
        filename = next((n for n in FILENAME_FEATURES if n in schema), None)
    return Features(image, label, filename, raw, schema, frozenset(source.text_features()))


def write(source: ExportSource, out: str, features: Features, options: ExportOptions, shard_bytes: int) -> dict:
    """Write every split; {split: {records, shards}}."""
    return run_staged(source, out, options, lambda staging: WebdatasetJob(features, staging, shard_bytes))
