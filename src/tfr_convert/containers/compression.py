"""gzip and zlib streams around TFRecord files, as TensorFlow writes and reads them."""

from __future__ import annotations

import gzip
import io
import zlib
from typing import BinaryIO

from .crc import masked_crc
from .framing import HEADER_SIZE, u32

COMPRESSIONS = ("none", "gzip", "zlib")
# TensorFlow's writers use zlib's default level for both gzip and zlib.
_COMPRESS_LEVEL = 6


class _ZlibWriter(io.RawIOBase):
    """A write-only zlib stream, the format of TF's `compression_type='ZLIB'`."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._z = zlib.compressobj(_COMPRESS_LEVEL)

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        self._raw.write(self._z.compress(data))
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._raw.write(self._z.flush())
        super().close()


def open_compressed_writer(raw: BinaryIO, compression: str) -> BinaryIO:
    """Wrap a binary file for writing; `close()` of the wrapper leaves `raw` open."""
    if compression == "none":
        return raw
    if compression == "gzip":
        # mtime=0 and no file name keep the gzip header, and so the shard, reproducible.
        return gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=_COMPRESS_LEVEL, mtime=0)
    if compression == "zlib":
        return _ZlibWriter(raw)  # type: ignore[return-value]
    raise ValueError(f"unknown compression {compression!r}; expected one of {COMPRESSIONS}")


def detect_compression(head: bytes) -> str:
    """Guess a file's compression from its first bytes.

    A valid plain header wins (its CRC proves it), then the gzip magic, then a
    zlib header; anything else is read as plain so the reader can report the
    broken header precisely.
    """
    if len(head) >= HEADER_SIZE and masked_crc(head[:8]) == u32.unpack_from(head, 8)[0]:
        return "none"
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and (head[0] << 8 | head[1]) % 31 == 0:
        return "zlib"
    return "none"


class _ZlibReader(io.RawIOBase):
    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._z = zlib.decompressobj()
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while not self._pending:
            if self._z.eof:
                return 0
            chunk = self._z.unconsumed_tail or self._raw.read(1 << 16)
            if not chunk:
                raise EOFError("zlib stream ended before its end-of-stream marker")
            self._pending = self._z.decompress(chunk, 1 << 20)
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def open_reader(raw: BinaryIO, compression: str) -> BinaryIO:
    if compression == "none":
        return raw
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if compression == "zlib":
        return io.BufferedReader(_ZlibReader(raw), 1 << 20)  # type: ignore[return-value]
    raise ValueError(f"unknown compression {compression!r}; expected one of {COMPRESSIONS}")
