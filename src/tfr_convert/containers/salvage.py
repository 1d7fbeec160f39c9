"""Salvage: every sound record of a damaged TFRecord file, and exactly what was lost.

The checking scan (scan.py) stops at the first problem it cannot step over. Here the
reading goes on past it:
- a payload that fails its CRC: its length was sound, so the record is dropped and the
  next one starts right after it;
- a sound header whose length is above what is read whole: the record is stepped over;
- anything else (a length field that fails its CRC, bytes that are no record, a file
  cut short): the records go on at the next offset whose length field passes its CRC
  and whose payload then passes its own. Twelve arbitrary bytes pass the first check
  once in 2^32 offsets, and the payload's check must pass as well, so a resumption
  inside garbage or inside a broken record's payload is not a practical risk (a payload
  that itself holds a framed TFRecord file could mislead it: such a file is not salvaged
  record for record).

The file is read forward once, compressed or not, through a buffer that holds at most
one record (or one record's worth of look-ahead while searching): no inflated copy is
written anywhere, and a damaged stream costs the time to inflate it. Garbage is searched
a window at a time with numpy (header_candidates), not an offset at a time.

Each loss is a byte range [start, end) of the (uncompressed) stream and the records it
held where that is known: one for a failed payload, one for a broken header whose
payload still fits exactly before the next record, one for a record the file ends
inside or one too large to take; unknown for garbage. A loss keeps its first
QUARANTINE_BYTES bytes (what --quarantine writes). A stream that cannot be inflated
further loses what follows the last byte that could.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from ..storage import fs
from .base import MAX_RECORD_BYTES, Loss, Record
from .compression import detect_compression
from .crc import crc32c, unmask
from .framing import FOOTER_SIZE, HEADER_SIZE, header_struct, u32

QUARANTINE_BYTES = 16 << 20  # of each loss, kept for --quarantine
_READ = 1 << 20  # bytes read (or inflated) at a time
_WINDOW = 1 << 20  # bytes searched at once for the next record


class _Stream:
    """The file's (inflated) bytes, forward only: `buf` holds [base, base + len(buf))."""

    def __init__(self, raw: BinaryIO, compression: str) -> None:
        self.raw = raw
        self.wbits = 31 if compression == "gzip" else 15
        self.inflater = None if compression == "none" else zlib.decompressobj(self.wbits)
        self.compression = compression
        self.buf = bytearray()
        self.base = 0
        self.eof = False
        self.broken: str | None = None  # why a compressed stream ended early

    @property
    def end(self) -> int:
        """The offset just past the bytes read so far."""
        return self.base + len(self.buf)

    def fill(self, upto: int) -> bool:
        """Read until the buffer reaches offset `upto`; whether it does."""
        while self.end < upto and not self.eof:
            self.buf += self._more()
        return self.end >= upto

    def _more(self) -> bytes:
        """The next bytes of the stream (b"" at its end, or where it breaks off)."""
        if self.inflater is None:
            chunk = self.raw.read(_READ)
            self.eof = not chunk
            return chunk
        z = self.inflater
        if z.eof:  # a member ended: another may follow (a concatenated gzip file)
            chunk = z.unused_data or self.raw.read(1 << 16)
            if not chunk:
                self.eof = True
                return b""
            z = self.inflater = zlib.decompressobj(self.wbits)
        else:
            chunk = z.unconsumed_tail or self.raw.read(1 << 16)
            if not chunk:
                self.eof, self.broken = True, "it ends before its end-of-stream marker"
                return b""
        try:
            return z.decompress(chunk, _READ)  # bounded: what it leaves is unconsumed_tail
        except zlib.error as e:
            self.eof, self.broken = True, str(e)
            return b""

    def take(self, start: int, stop: int) -> bytes:
        """A copy of bytes [start, stop), which the buffer holds."""
        return bytes(self.buf[start - self.base : stop - self.base])

    def drop(self, upto: int) -> None:
        """Forget the bytes before `upto` (which the buffer holds, or has passed)."""
        if upto >= self.end:
            self.base, self.buf = upto, bytearray()
            return
        del self.buf[: upto - self.base]
        self.base = upto

    def skip(self, upto: int, keep: bytearray) -> None:
        """Move on to `upto` (or the end of the stream), a read at a time, keeping the
        first bytes passed in `keep`, up to QUARANTINE_BYTES."""
        while True:
            stop = min(upto, self.end)
            room = QUARANTINE_BYTES - len(keep)
            if room > 0 and stop > self.base:
                keep += self.buf[: min(stop - self.base, room)]
            self.drop(stop)
            if stop >= upto or self.eof:
                return
            self.buf += self._more()


def salvage_records(path: str, max_record: int = MAX_RECORD_BYTES) -> Iterator[Record | Loss]:
    """The sound records of a TFRecord file (indexes count them), each loss between
    them, in order. Records carry their payloads."""
    with fs.open_input(path) as f:
        compression = detect_compression(f.read(HEADER_SIZE))
        f.seek(0)
        yield from _salvage(_Stream(f, compression), max_record)


def _salvage(stream: _Stream, max_record: int) -> Iterator[Record | Loss]:
    index = at = 0
    while True:
        stream.drop(at)
        if not stream.fill(at + HEADER_SIZE):
            if stream.end > at:  # 1-11 bytes, or a stream that broke off inside a header
                kept = bytearray()
                stream.skip(stream.end, kept)
                yield _loss(stream, at, stream.end, None, "trailing bytes, too few for a record", kept)
            elif stream.broken:  # the stream broke off between two records
                yield _loss(stream, at, at, None, "", bytearray())
            return
        length, length_crc = header_struct.unpack_from(stream.buf, at - stream.base)
        if crc32c(stream.take(at, at + 8)) == unmask(length_crc):
            end = at + HEADER_SIZE + length + FOOTER_SIZE
            if length > max_record:
                kept = bytearray()
                stream.skip(end, kept)
                reason = (
                    f"a record of {length} bytes, above the {max_record} read whole (--max-record-size raises it)"
                    if stream.end >= end
                    else "the file ends inside a record"
                )
                yield _loss(stream, at, min(end, stream.end), 1, reason, kept)
                at = min(end, stream.end)
                continue
            if not stream.fill(end):
                kept = bytearray()
                stream.skip(stream.end, kept)
                yield _loss(stream, at, stream.end, 1, "the file ends inside a record", kept)
                return
            data = stream.take(at + HEADER_SIZE, end - FOOTER_SIZE)
            if crc32c(data) == unmask(u32.unpack_from(stream.buf, end - FOOTER_SIZE - stream.base)[0]):
                yield Record(index, at, data)
                index += 1
            else:
                yield _loss(stream, at, end, 1, "payload fails its CRC", bytearray(stream.take(at, end)))
            at = end
            continue
        kept = bytearray()
        resumes = _next_record(stream, at, max_record, kept)
        end = stream.end if resumes is None else resumes
        records = 1 if _one_record(kept, end - at) else None
        if records == 1:
            reason = "a record's length field fails its CRC"
        else:
            reason = "bytes that are no record (garbage, or records whose framing is broken)"
        yield _loss(stream, at, end, records, reason, kept)
        if resumes is None:
            return
        at = resumes


def _loss(stream: _Stream, start: int, end: int, records: int | None, reason: str, kept: bytearray) -> Loss:
    """A loss; where the stream broke off inside it, the break is its reason."""
    if stream.broken and end >= stream.end and stream.eof:
        reason = f"the {stream.compression} stream is corrupt from here on ({stream.broken})"
    return Loss(start, end, records, reason, bytes(kept))


def _one_record(kept: bytearray, size: int) -> bool:
    """Whether lost bytes (all of them kept) are one record whose header alone is broken:
    its payload fits exactly and passes its CRC."""
    if len(kept) != size or size < HEADER_SIZE + FOOTER_SIZE:
        return False
    payload = bytes(kept[HEADER_SIZE:-FOOTER_SIZE])
    return crc32c(payload) == unmask(u32.unpack_from(kept, size - FOOTER_SIZE)[0])


def _next_record(stream: _Stream, broken: int, max_record: int, kept: bytearray) -> int | None:
    """The first offset past `broken` where a sound record begins (header and payload
    pass their CRCs), or None; the bytes passed, from `broken` on, go to `kept` (up to
    QUARANTINE_BYTES)."""
    at = broken + 1
    while True:
        stream.fill(at + _WINDOW + HEADER_SIZE)
        window = stream.take(at, min(stream.end, at + _WINDOW + HEADER_SIZE))
        for i in header_candidates(window, max_record).tolist():
            length = header_struct.unpack_from(window, i)[0]
            end = at + i + HEADER_SIZE + length + FOOTER_SIZE
            if not stream.fill(end):
                continue  # a record the file cannot hold
            body = stream.take(at + i + HEADER_SIZE, end)
            if crc32c(body[:-FOOTER_SIZE]) == unmask(u32.unpack_from(body, length)[0]):
                stream.skip(at + i, kept)
                return at + i
        if len(window) < _WINDOW + HEADER_SIZE:  # it reached the end: every start was tried
            stream.skip(stream.end, kept)
            return None
        at += _WINDOW + 1  # the next header start not yet tried
        stream.skip(at, kept)


def header_candidates(window: bytes, max_record: int) -> np.ndarray:
    """The offsets i in `window` (i + 12 <= its length) where a TFRecord header could
    start: a length up to `max_record` whose masked CRC32C is the next four bytes.

    A numpy search, a window at a time: a window of one repeated byte (zeros: a zero
    length whose CRC field is not its CRC; any other byte: a length past any record)
    holds none; elsewhere the length's high bytes must be zero, which few offsets of
    any other data pass, and only those are CRC'd, as the XOR of per-byte tables (a
    CRC is affine in its input bits)."""
    n = len(window) - HEADER_SIZE + 1
    if n <= 0 or window.count(window[:1]) == len(window):
        return np.zeros(0, np.int64)
    b = np.frombuffer(window, np.uint8)
    top = max(1, (max_record.bit_length() + 7) // 8)  # bytes of the length that may be nonzero
    plausible = b[top - 1 : top - 1 + n] <= (max_record >> (8 * (top - 1)))
    for k in range(top, 8):
        plausible &= b[k : k + n] == 0
    if np.count_nonzero(plausible) > n // 64:  # mostly zeros, say: leave out windows of twelve equal bytes
        changes = np.zeros(len(b), np.int32)  # changes[j + 1]: how many of b[0..j+1] differ from the byte before
        np.cumsum(b[1:] != b[:-1], out=changes[1:])
        plausible &= changes[HEADER_SIZE - 1 : HEADER_SIZE - 1 + n] != changes[:n]
    candidates = np.flatnonzero(plausible)
    crc = np.full(len(candidates), _ZERO_CRC, np.uint32)
    for k in range(8):
        crc ^= _BYTE_CRCS[k][b[candidates + k]]
    masked = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(0xA282EAD8)
    stored = b[candidates + 8].astype(np.uint32)
    for k in (9, 10, 11):
        stored |= b[candidates + k].astype(np.uint32) << np.uint32(8 * (k - 8))
    candidates = candidates[masked == stored]
    # the top byte's bound let through lengths up to the next multiple of 256**(top - 1): the few
    # headers left are held to the limit itself
    lengths = [int.from_bytes(window[i : i + 8], "little") for i in candidates.tolist()]
    return candidates[np.array([n <= max_record for n in lengths], bool)] if lengths else candidates


def _byte_tables() -> tuple[int, list]:
    """CRC32C of 8 zero bytes, and for each of the 8 places and each byte value, what
    that byte there changes in it."""
    zero = crc32c(bytes(8))
    tables = []
    for k in range(8):
        column = bytearray(8)
        row = []
        for v in range(256):
            column[k] = v
            row.append(crc32c(bytes(column)) ^ zero)
        tables.append(np.array(row, np.uint32))
    return zero, tables


_ZERO_CRC, _BYTE_CRCS = _byte_tables()
