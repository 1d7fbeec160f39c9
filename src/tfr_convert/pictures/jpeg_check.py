"""Keep mode's check of a plain JPEG without decoding it: its size, bands and EXIF
orientation, or None.

Keep mode stores a file's own bytes, so for each photo it needs only to know that the
file decodes fully (not cut short), and its size, bands and orientation. Pillow learns
that by decoding (at 1/8 scale, still every entropy-coded block); this walks the markers
instead, checking what libjpeg itself checks before it decodes, and finds the end of
each scan's entropy-coded data without a Huffman decode (`scan_end`):

- SOI first; APPn, COM, DQT, DHT, DRI segments each within the file and of the length
  its contents need; DQT tables of precision 0 or 1, DHT tables whose code counts fit
  their lengths (libjpeg's "bogus Huffman table" check) and DC symbols up to 15;
- one frame: SOF0, SOF1 or SOF2 (baseline, extended, progressive: what TensorFlow
  decodes) of 8-bit samples, 1 or 3 components (L, RGB) with sampling factors of 1 or
  2 (the chroma's 1), quantization tables defined, at most --max-pixels;
- scans naming the frame's components and defined tables, with the spectral and
  successive-approximation bounds libjpeg requires (one scan of every component for a
  sequential frame), each followed by its entropy-coded data up to the next marker
  (RSTn and stuffed 0xFF00 inside it);
- EOI after the last scan (bytes after it are ignored, as every decoder does).

EXIF orientation is read as Pillow reads it: the first APP1 Exif segment's IFD0 tag
0x0112 (a SHORT), else an XMP packet's tiff:Orientation. Anything else, well-formed or
broken: lossless, hierarchical or arithmetic-coded frames, 12-bit samples, CMYK or
YCCK, restart markers or a second SOI outside a scan, DNL, multi-picture (MPF) files,
a second Exif segment, an Exif it cannot read cleanly, a file that ends before EOI, is
None, and the caller asks Pillow, whose answer and messages stay the reference
(tests/test_jpeg_check.py holds the two, and TensorFlow, side by side on valid, odd and
damaged files).
"""

from __future__ import annotations

import functools
import re
import struct

import numpy as np

_U16 = struct.Struct(">H")
# the end of a scan's entropy-coded data: 0xFF, then anything but a stuffed zero or RSTn
_SCAN_END = re.compile(rb"\xff[^\x00\xd0-\xd7]")
_XMP = b"http://ns.adobe.com/xap/1.0/\x00"
_XMP_ORIENTATION = re.compile(rb'tiff:Orientation(="|>)([0-9])')
_SEQUENTIAL, _PROGRESSIVE = (0xC0, 0xC1), 0xC2
# a frame's (component id, (horizontal, vertical sampling, quantization table)), in order
_Components = tuple[tuple[int, tuple[int, int, int]], ...]


def plain_jpeg(data: bytes, max_pixels: int) -> tuple[tuple[int, int], int, int] | None:
    """((width, height), bands, EXIF orientation) of a JPEG in the plain form above that
    decodes fully; None for any other file (Pillow decides those)."""
    if not data.startswith(b"\xff\xd8"):
        return None
    try:
        return _walk(data, max_pixels)
    except (struct.error, IndexError):  # a segment that claims more than the file holds
        return None


def _walk(data: bytes, max_pixels: int) -> tuple[tuple[int, int], int, int] | None:
    """The markers in order, each segment checked as the module's docstring lists.

    Long on purpose: one loop over the segments with the walk's state in locals; a call
    per segment is a real share of a photo's check, which keep mode makes for every photo."""
    quant: frozenset[int] = frozenset()
    huffman: frozenset[tuple[int, int]] = frozenset()  # (class: 0 DC / 1 AC, id)
    frame: tuple[int, int, int, _Components] | None = None  # kind, width, height, components
    scans = 0
    exif: bytes | None = None
    xmp: bytes | None = None
    pos, end = 2, len(data)
    while True:
        if pos + 2 > end or data[pos] != 0xFF:
            return None  # cut short, or junk where a marker belongs
        while data[pos + 1] == 0xFF:  # fill bytes before a marker
            pos += 1
            if pos + 2 > end:
                return None
        marker = data[pos + 1]
        if marker == 0xD9:  # EOI
            if frame is None or not scans or (frame[0] in _SEQUENTIAL and scans != 1):
                return None
            break
        length = _U16.unpack_from(data, pos + 2)[0]
        body, after = pos + 4, pos + 2 + length
        if length < 2 or after > end:
            return None
        segment = data[body:after]
        if 0xE0 <= marker <= 0xEF:
            if marker == 0xE1 and segment.startswith(b"Exif\x00\x00"):
                if exif is not None or frame is not None:
                    return None  # a second Exif (Pillow joins them), or one Pillow never reads
                exif = segment
            elif marker == 0xE1 and segment.startswith(_XMP):
                xmp = segment.split(b"\x00", 1)[1]
            elif marker == 0xE2 and segment.startswith(b"MPF\x00"):
                return None  # a multi-picture file: Pillow opens it as MPO
        elif marker == 0xFE:  # COM
            pass
        elif marker == 0xDB:
            tables = _dqt(segment)
            if tables is None:
                return None
            quant = quant | tables
        elif marker == 0xC4:
            tables = _dht(segment)
            if tables is None:
                return None
            huffman = huffman | tables
        elif marker == 0xDD:
            if length != 4:
                return None
        elif marker in (*_SEQUENTIAL, _PROGRESSIVE):
            if frame is not None:
                return None
            frame = _sof(marker, segment, quant, max_pixels)
            if frame is None:
                return None
        elif marker == 0xDA:
            if frame is None or not _sos(segment, frame[0], frame[3], huffman):
                return None
            scans += 1
            end_of_scan = scan_end(data, after, frame[0] in _SEQUENTIAL)
            if end_of_scan is None:
                return None  # the file ends inside the scan: cut short
            pos = end_of_scan
            continue
        else:
            # SOF3/5-15 (lossless, hierarchical, arithmetic), DAC, DNL, DHP, EXP, JPGn; and
            # TEM, a second SOI or RSTn outside a scan, which have no length of their own
            return None
        pos = after
    assert frame is not None
    _, width, height, comps = frame
    orientation = _orientation(exif, xmp)
    if orientation is None:
        return None
    return (width, height), len(comps), orientation if orientation in range(1, 9) else 1


def scan_end(data: bytes, start: int, last_scan: bool = False) -> int | None:
    """Where the entropy-coded data from `start` ends: at the first 0xFF that is neither a
    stuffed 0xFF00 nor a restart marker (RSTn); None if the file ends first.

    `last_scan`: the scan is expected to run to the EOI at the file's end (a sequential
    frame's one scan), and that is checked first by counting, a few numpy passes at
    memory speed: the last EOI ends the scan when every 0xFF before it starts a
    stuffed or RSTn pair. Otherwise, or if that count fails, a regular expression
    searches byte by byte, as fast as it goes."""
    if last_scan:
        last = data.rfind(b"\xff\xd9", start)
        if last > start:
            n = last - start
            everything = np.count_nonzero(np.frombuffer(data, np.uint8, n, start) == 0xFF)
            # each pair (little-endian: the 0xFF in the low byte), starting at even and odd offsets
            pairs = [np.frombuffer(data, "<u2", (n - k) // 2, start + k) for k in (0, 1)]
            stuffed = sum(np.count_nonzero(p == 0x00FF) for p in pairs)
            if stuffed != everything:
                stuffed += sum(np.count_nonzero((p & 0xF8FF) == 0xD0FF) for p in pairs)
            if stuffed == everything:
                return last
    match = _SCAN_END.search(data, start)
    return None if match is None else match.start()


# An encoder writes the same tables into every file it makes: each distinct segment is
# checked once.
@functools.lru_cache(maxsize=256)
def _dqt(segment: bytes) -> frozenset[int] | None:
    """The quantization tables a DQT segment defines, or None if it is malformed."""
    at, tables = 0, set()
    while at < len(segment):
        precision, table = segment[at] >> 4, segment[at] & 15
        size = 64 * (precision + 1)
        if precision > 1 or table > 3 or at + 1 + size > len(segment):
            return None
        tables.add(table)
        at += 1 + size
    return frozenset(tables) if tables else None


@functools.lru_cache(maxsize=256)
def _dht(segment: bytes) -> frozenset[tuple[int, int]] | None:
    """The (class, id) of the Huffman tables a DHT segment defines, or None if it is
    malformed or holds a table libjpeg refuses."""
    at, tables = 0, set()
    while at < len(segment):
        kind, table = segment[at] >> 4, segment[at] & 15
        if kind > 1 or table > 3 or at + 17 > len(segment):
            return None
        counts = segment[at + 1 : at + 17]
        total = sum(counts)
        if total > 256 or at + 17 + total > len(segment):
            return None
        code = 0
        last = max((i for i, c in enumerate(counts) if c), default=-1)
        for bits in range(last + 1):  # libjpeg's jpeg_make_d_derived_tbl check
            code += counts[bits]
            if code >= 1 << (bits + 1):
                return None
            code <<= 1
        if kind == 0 and any(s > 15 for s in segment[at + 17 : at + 17 + total]):
            return None
        tables.add((kind, table))
        at += 17 + total
    return frozenset(tables) if tables else None


def _sof(
    marker: int, segment: bytes, quant: frozenset[int], max_pixels: int
) -> tuple[int, int, int, _Components] | None:
    if len(segment) < 6:
        return None
    precision, height, width = segment[0], *struct.unpack_from(">HH", segment, 1)
    if precision != 8 or not height or not width:
        return None
    if width * height > max_pixels:
        return None  # Pillow names the limit
    comps = _components(segment[5:], quant)
    return None if comps is None else (marker, width, height, comps)


# A frame's components and a scan's header are the same in every file an encoder makes
# (only the size differs, and it is read above): each distinct one is checked once.
@functools.lru_cache(maxsize=256)
def _components(spec: bytes, quant: frozenset[int]) -> _Components | None:
    count = spec[0]
    if count not in (1, 3) or len(spec) != 1 + 3 * count:
        return None
    comps: dict[int, tuple[int, int, int]] = {}
    for i in range(count):
        ident, sampling, table = spec[1 + 3 * i : 4 + 3 * i]
        h, v = sampling >> 4, sampling & 15
        if ident in comps or h not in (1, 2) or v not in (1, 2) or table not in quant:
            return None
        if i and (h, v) != (1, 1):
            # chroma sampled as finely as luma or finer: left to Pillow. So an MCU holds
            # at most 2x2 + 1 + 1 blocks, within libjpeg's limit of 10
            return None
        comps[ident] = (h, v, table)
    return tuple(comps.items())


@functools.lru_cache(maxsize=256)
def _sos(segment: bytes, kind: int, components: _Components, huffman: frozenset[tuple[int, int]]) -> bool:
    comps = dict(components)
    if not segment:
        return False
    count = segment[0]
    if count < 1 or len(segment) != 4 + 2 * count:
        return False
    spectral_start, spectral_end, approximation = segment[1 + 2 * count : 4 + 2 * count]
    high, low = approximation >> 4, approximation & 15
    named = [segment[1 + 2 * i] for i in range(count)]
    tables = [(segment[2 + 2 * i] >> 4, segment[2 + 2 * i] & 15) for i in range(count)]
    if len(set(named)) != count or any(c not in comps for c in named):
        return False
    if kind in _SEQUENTIAL:
        if (spectral_start, spectral_end, approximation) != (0, 63, 0) or count != len(comps):
            return False
        limit = 1 if kind == 0xC0 else 3
        return all(dc <= limit and ac <= limit and (0, dc) in huffman and (1, ac) in huffman for dc, ac in tables)
    dc_band = spectral_start == 0
    if dc_band and spectral_end != 0:
        return False
    if not dc_band and (spectral_start > spectral_end or spectral_end > 63 or count != 1):
        return False
    if (high and low != high - 1) or low > 13:
        return False
    if dc_band:
        return high > 0 or all((0, dc) in huffman for dc, _ in tables)
    return all((1, ac) in huffman for _, ac in tables)


def _orientation(exif: bytes | None, xmp: bytes | None) -> int | None:
    """The orientation Pillow's getexif() finds (1 without one), or None where the Exif
    cannot be read cleanly."""
    if exif is not None:
        orientation = _exif_orientation(exif[6:])
        if orientation is None or orientation != 0:
            return orientation
    if xmp is not None:
        match = _XMP_ORIENTATION.search(xmp)
        if match:
            return int(match[2])
    return 1


def _exif_orientation(tiff: bytes) -> int | None:
    """IFD0's orientation (0: none), or None where the TIFF structure is not clean."""
    if tiff[:4] == b"II*\x00":
        order = "<"
    elif tiff[:4] == b"MM\x00*":
        order = ">"
    else:
        return None
    if len(tiff) < 8:
        return None
    (ifd,) = struct.unpack_from(order + "I", tiff, 4)
    if ifd < 8 or ifd + 2 > len(tiff):
        return None
    (entries,) = struct.unpack_from(order + "H", tiff, ifd)
    if ifd + 2 + 12 * entries > len(tiff):
        return None
    orientation = 0
    for i in range(entries):
        tag, kind, count = struct.unpack_from(order + "HHI", tiff, ifd + 2 + 12 * i)
        if tag == 0x0112:
            if orientation or kind != 3 or count != 1:
                return None
            (orientation,) = struct.unpack_from(order + "H", tiff, ifd + 10 + 12 * i)
            if orientation == 0:
                return None  # a zero Pillow would report as is
    return orientation
