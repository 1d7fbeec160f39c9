"""Salvage: every sound record of a damaged TFRecord file, and exactly what was lost.

The checking scan (scan.py) stops at the first problem it cannot step over. Here the
reading goes on past it:
- a payload that fails its CRC: its length was sound, so the record is dropped and the
  next one starts right after it;
- anything else (a length field that fails its CRC, bytes that are no record, a file
  cut short): the records go on at the next offset whose length field passes its CRC
  and whose payload then passes its own. Twelve arbitrary bytes pass the first check
  once in 2^32 offsets, and the payload's check must pass as well, so a resumption
  inside garbage or inside a broken record's payload is not a practical risk (a payload
  that itself holds a framed TFRecord file could mislead it: such a file is not salvaged
  record for record).

Each loss is a byte range [start, end) of the (uncompressed) stream and the records it
held where that is known: one for a failed payload, one for a broken header whose
payload still fits exactly before the next record, one for a record the file ends
inside; unknown for garbage. A compressed file is inflated into a temporary file first
(its offsets are those of the inflated stream, as everywhere); a stream that cannot be
inflated further loses what follows the last byte that could.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zlib
from collections.abc import Generator, Iterator

from .. import fs
from .base import MAX_RECORD_BYTES, Loss, Problem, Record
from .compression import detect_compression
from .crc import crc32c, unmask
from .framing import FOOTER_SIZE, HEADER_SIZE, header_struct, u32, u64
from .scan import scan_records

_WINDOW = 1 << 20  # bytes searched per read while looking for the next record
_CHUNK = 8 << 20  # bytes per read when checking a long payload


def salvage_records(path: str, max_record: int = MAX_RECORD_BYTES) -> Iterator[Record | Loss]:
    """The sound records of a TFRecord file (indexes count them), each loss between
    them, in order. Records carry their payloads."""
    with fs.open_input(path) as f:
        compression = detect_compression(f.read(HEADER_SIZE))
    if compression == "none":
        yield from _salvage_plain(path, max_record)
        return
    folder = tempfile.mkdtemp(prefix="tfr-convert-salvage-")
    try:
        inflated = os.path.join(folder, "stream")
        stream_error = _inflate(path, compression, inflated)
        size = os.path.getsize(inflated)
        why = f"the {compression} stream is corrupt from here on ({stream_error})" if stream_error else None
        tail_lost = yield from _salvage_plain(inflated, max_record, why)
        if why and not tail_lost:  # the stream broke off between two records
            yield Loss(size, size, None, why, inflated)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _inflate(path: str, compression: str, target: str) -> str | None:
    """The inflated stream written to `target`, every byte that can be (zlib directly: a
    file reader would drop the last block it was inflating when the stream breaks off);
    why it stopped early, or None."""
    wbits = 31 if compression == "gzip" else 15
    z = zlib.decompressobj(wbits)
    with fs.open_input(path) as raw, open(target, "wb") as out:
        while True:
            chunk = z.unused_data or raw.read(1 << 16)
            if not chunk:
                return None if z.eof else "it ends before its end-of-stream marker"
            if z.eof:  # another gzip member follows (a concatenated file)
                z = zlib.decompressobj(wbits)
            try:
                out.write(z.decompress(chunk))
            except zlib.error as e:
                return str(e)


def _salvage_plain(path: str, max_record: int, cut_short: str | None = None) -> Generator[Record | Loss, None, bool]:
    """The records and losses of a plain file; whether a loss reached its end. `cut_short`:
    why the file ends where it does, if not by design (an inflated stream that broke off)."""
    size = fs.getsize(path)
    index = start = 0
    with fs.open_input(path) as f:
        while True:
            problem = None
            for item in scan_records(path, "none", max_record=max_record, start=start):
                if isinstance(item, Record):
                    yield Record(index, item.offset, item.data)
                    index += 1
                elif item.kind == "data_crc":  # its length was sound: the next record follows it
                    assert item.offset is not None
                    end = item.offset + HEADER_SIZE + _length_at(f, item.offset) + FOOTER_SIZE
                    yield Loss(item.offset, end, 1, "payload fails its CRC", path)
                else:
                    problem = item
                    break
            if problem is None:
                return False
            at = problem.offset
            assert at is not None
            if problem.kind == "too_large":  # its header is sound: the record is skipped whole
                resumes = at + HEADER_SIZE + _length_at(f, at) + FOOTER_SIZE
            else:
                resumes = _next_record(f, at + 1, size, max_record)
            end = size if resumes is None else resumes
            records = _records_in(f, at, end, problem)
            reason = cut_short if resumes is None and cut_short else _why(problem, records)
            yield Loss(at, end, records, reason, path)
            if resumes is None:
                return True
            start = resumes


def _length_at(f, offset: int) -> int:
    f.seek(offset)
    return u64.unpack(f.read(8))[0]


def _payload_sound(f, body: int, length: int) -> bool:
    """Whether the `length` bytes at `body` pass the CRC in the 4 bytes after them."""
    f.seek(body)
    crc = 0
    left = length
    while left > 0:
        chunk = f.read(min(left, _CHUNK))
        if not chunk:
            return False
        crc = crc32c(chunk, crc)
        left -= len(chunk)
    footer = f.read(FOOTER_SIZE)
    return len(footer) == FOOTER_SIZE and crc == unmask(u32.unpack(footer)[0])


def _next_record(f, start: int, size: int, max_record: int) -> int | None:
    """The first offset at or after `start` where a sound record begins, or None."""
    pos = start
    while pos + HEADER_SIZE + FOOTER_SIZE <= size:
        f.seek(pos)
        window = f.read(min(_WINDOW + HEADER_SIZE, size - pos))
        last = len(window) - HEADER_SIZE
        for i in range(last + 1):
            length, length_crc = header_struct.unpack_from(window, i)
            if crc32c(window[i : i + 8]) != unmask(length_crc):
                continue
            at = pos + i
            if length <= max_record and at + HEADER_SIZE + length + FOOTER_SIZE <= size:
                if _payload_sound(f, at + HEADER_SIZE, length):
                    return at
        pos += last + 1
    return None


def _records_in(f, start: int, end: int, problem: Problem) -> int | None:
    """How many records the lost bytes held, where the framing tells."""
    if problem.kind in ("truncated_payload", "length_past_eof", "too_large"):
        return 1  # a sound header: one record, cut short (or too large to take)
    if end - start >= HEADER_SIZE + FOOTER_SIZE and _payload_sound(
        f, start + HEADER_SIZE, end - start - HEADER_SIZE - FOOTER_SIZE
    ):
        return 1  # a broken header, then a payload that fits exactly and passes its CRC
    return None


def _why(problem: Problem, records: int | None) -> str:
    if problem.kind == "length_crc":
        if records == 1:
            return "a record's length field fails its CRC"
        return "bytes that are no record (garbage, or records whose framing is broken)"
    if problem.kind in ("length_past_eof", "truncated_payload"):
        return "the file ends inside a record"
    if problem.kind == "partial_header":
        return "trailing bytes, too few for a record"
    return problem.message
