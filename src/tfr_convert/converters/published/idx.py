"""The idx files of the MNIST family: reading, checking and inflating them.

The idx format: a big-endian header `0 0 <dtype> <rank>` then one uint32 per
dimension, then the data, row-major. Images are magic 2051 (uint8, rank 3),
labels 2049 (uint8, rank 1). Every header is checked against the file's real
size instead of trusting it, and a gzip is never inflated past the size its idx
header implies (a gzip bomb fails fast, a truncated one fails clearly).

Nothing here imports numpy until an array is made: `start_images` can set a
folder's images inflating before the caller imports it.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import math
import os
import struct
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from ...errors import SourceError
from ...storage.reading import read_up_to
from ..base import Background

if TYPE_CHECKING:
    import numpy as np

IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049
SPLITS = ("train", "test")

# (split, what) -> the file stem every variant uses
FILES = {
    ("train", "images"): "train-images-idx3-ubyte",
    ("train", "labels"): "train-labels-idx1-ubyte",
    ("test", "images"): "t10k-images-idx3-ubyte",
    ("test", "labels"): "t10k-labels-idx1-ubyte",
}


EMNIST_ARCHIVE = "gzip.zip"  # NIST's one archive of EMNIST's files


def may_be_emnist(src: str) -> bool:
    """False only where SRC cannot hold EMNIST (emnist.looks_like_emnist would say no): a
    folder with no emnist-* file, in it or in its gzip/, and no gzip.zip. A plain MNIST
    folder is told so without importing the EMNIST reader."""
    if not os.path.isdir(src):
        return True
    for folder in (src, os.path.join(src, "gzip")):
        if os.path.isdir(folder) and any(name.startswith("emnist-") for name in os.listdir(folder)):
            return True
    return os.path.isfile(os.path.join(src, EMNIST_ARCHIVE))


def find_source(src_dir: str, stem: str) -> str:
    """The file for a stem: plain or gzipped, `-idx` or `.idx` spelling."""
    dotted = stem.replace("-idx", ".idx")
    for name in (stem, stem + ".gz", dotted, dotted + ".gz"):
        path = os.path.join(src_dir, name)
        if os.path.isfile(path):
            return path
    raise SourceError(f"{src_dir}: missing {stem} (or {stem}.gz)")


# deflate cannot expand data by more than 1032:1, so a gzip of n bytes holds at most this much
_MAX_INFLATION = 1032


class _Inflated(NamedTuple):
    data: bytes
    eof: bool  # the gzip member's end was reached (and its CRC and length checked)
    after: bytes  # what follows that end: empty, or its first bytes


def _inflate(raw: bytes, limit: int) -> _Inflated:
    """Up to `limit` bytes of a gzip stream, inflated in one call. zlib lets the GIL go
    while it fills each block of output, and one call fills few blocks (each larger than
    the last); a call per slice of input takes the GIL back hundreds of times, and a
    thread inflating while the caller runs Python waits for it each time."""
    inflater = zlib.decompressobj(wbits=31)  # gzip framing; zlib checks its CRC and length
    data = inflater.decompress(raw, limit)  # bounded by what the header declares
    return _Inflated(data, inflater.eof, inflater.unused_data[:2] if inflater.eof else b"")


def _read_data(path: str, stream, raw: bytes, header: int, expected: int, gzipped: bool):
    """(the data section, whether anything follows it). Plain files: a view of `raw`.
    A gzip: inflated in one call bounded by the size the header declares (+1, to see
    if there is more); the streaming reader only for lies and multi-member files."""
    if not gzipped:
        return memoryview(raw)[header : header + expected], len(raw) > header + expected
    if expected <= _MAX_INFLATION * len(raw):  # else a lie: read what there is below
        content = _inflate(raw, header + expected + 1)  # one byte more than declared, to see if there is more
        if len(content.data) <= header + expected and not content.eof:
            raise EOFError("compressed data ends before the end-of-stream marker")
        if content.after and not content.after.startswith(b"\x1f\x8b"):
            raise SourceError(f"{path}: unexpected data after the end of the gzip stream")
        if not content.after:
            return memoryview(content.data)[header : header + expected], len(content.data) > header + expected
    data = read_up_to(stream, expected)
    if len(data) < expected:
        return data, False
    try:
        return data, bool(stream.read(1))
    except EOFError:
        raise SourceError(f"{path}: truncated gzip stream (its end-of-stream marker is missing)") from None
    except (OSError, zlib.error) as e:
        raise SourceError(f"{path}: unexpected data after the end of the gzip stream ({e})") from None


def _open_idx(raw: bytes) -> tuple[bool, io.BufferedIOBase, str]:
    gzipped = raw[:2] == b"\x1f\x8b"
    stream: io.BufferedIOBase = gzip.GzipFile(fileobj=io.BytesIO(raw)) if gzipped else io.BytesIO(raw)
    return gzipped, stream, "decompressed data" if gzipped else "file"


@contextlib.contextmanager
def _gzip_errors(path: str) -> Iterator[None]:
    try:
        yield
    except EOFError:
        raise SourceError(f"{path}: truncated gzip stream (it ends before its end-of-stream marker)") from None
    except (OSError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
        raise SourceError(f"{path}: corrupt gzip data: {e}") from None


def _read_header(path: str, stream: io.BufferedIOBase, what: str, magic: int, rank: int) -> tuple[int, ...]:
    head = stream.read(4)
    if len(head) < 4:
        raise SourceError(f"{path}: {what} is {len(head)} bytes long, too short for an idx header")
    (magic_read,) = struct.unpack(">I", head)
    if magic_read != magic:
        raise SourceError(f"{path}: byte 0: magic number {magic_read}, expected {magic}")
    dims_raw = stream.read(4 * rank)
    if len(dims_raw) < 4 * rank:
        raise SourceError(f"{path}: idx header is truncated (needs {4 + 4 * rank} bytes)")
    dims = struct.unpack(f">{rank}I", dims_raw)
    if dims[0] == 0:
        raise SourceError(f"{path}: byte 4: the idx header declares 0 {'images' if rank > 1 else 'labels'}")
    if 0 in dims[1:]:
        raise SourceError(f"{path}: byte 8: image dimensions {dims[1:]} contain a zero")
    return dims


def idx_dims(path: str, raw: bytes, magic: int, rank: int) -> tuple[int, ...]:
    """The dimensions an idx file's header declares, checked against the file's size (a
    plain file holds exactly what they imply; a gzip cannot inflate past its ratio);
    only the header is inflated."""
    gzipped, stream, what = _open_idx(raw)
    with _gzip_errors(path):
        dims = _read_header(path, stream, what, magic, rank)
    header, expected = 4 + 4 * rank, math.prod(dims)
    if not gzipped and len(raw) < header + expected:
        raise SourceError(_truncated(path, dims, header, len(raw) - header))
    if gzipped and expected > _MAX_INFLATION * len(raw):
        raise SourceError(
            f"{path}: the idx header declares {'x'.join(map(str, dims))} = {expected} data bytes, more than "
            f"{len(raw)} gzip bytes can hold"
        )
    return dims


def _truncated(path: str, dims: tuple[int, ...], header: int, present: int) -> str:
    return (
        f"{path}: truncated at byte {header + present}: the header declares "
        f"{'x'.join(map(str, dims))} = {math.prod(dims)} data bytes, only {present} present"
    )


def parse_idx(path: str, raw: bytes, magic: int, rank: int) -> np.ndarray:
    """Validate and decode one idx file's bytes (gzipped or not) into an array."""
    gzipped, stream, what = _open_idx(raw)
    with _gzip_errors(path):
        dims = _read_header(path, stream, what, magic, rank)
        header = 4 + 4 * rank
        expected = math.prod(dims)  # Python ints: a product of huge dimensions cannot wrap
        data, extra = _read_data(path, stream, raw, header, expected, gzipped)
        if len(data) < expected:
            raise SourceError(_truncated(path, dims, header, len(data)))
        if extra:
            where = "expands past" if gzipped else "is longer than"
            raise SourceError(
                f"{path}: {what} {where} the {header + expected} bytes its idx header implies "
                f"(trailing data at byte {header + expected})"
            )
    import numpy as np

    return np.frombuffer(data, dtype=np.uint8).reshape(dims)


def idx_bytes(array: np.ndarray) -> bytes:
    """The idx encoding of a uint8 array (magic 0x08 << 8 | rank, e.g. 2051 for images)."""
    import numpy as np

    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(f">I{array.ndim}I", 0x0800 | array.ndim, *array.shape)
    return header + array.tobytes()


def read_file(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class ImageFiles(NamedTuple):
    """A folder's images files, read (split -> (path, bytes)), and each parsed into its
    (N, H, W) pixels on a helper thread (`arrays`, by split), in the order of SPLITS: an
    MNIST folder whose reading has begun (MnistConverter takes it as its source)."""

    folder: str
    files: dict[str, tuple[str, bytes]]
    arrays: Background


def start_images(src_dir: str) -> ImageFiles | None:
    """The images files of an MNIST-style folder, read and set inflating now; None where
    one is missing (the converter then reads the folder itself, and names what is
    missing). Checking them is the converter's: a bad file fails there, or where its
    pixels are first wanted."""
    try:
        paths = {split: find_source(src_dir, FILES[split, "images"]) for split in SPLITS}
    except SourceError:
        return None
    files: dict[str, tuple[str, bytes]] = {}
    arrays = Background()
    for split, path in paths.items():
        files[split] = path, read_file(path)
        arrays.submit(split, parse_idx, path, files[split][1], IMAGES_MAGIC, 3)  # train starts before test is read
    return ImageFiles(src_dir, files, arrays)
