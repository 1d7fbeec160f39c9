"""Keep mode's check of a plain PNG without Pillow: its size and bands, or None.

Keep mode stores a file's own bytes, so for each image it needs only to know that the
file decodes fully, and its size and bands. For a small PNG, Pillow's open and load
cost several times the inflation itself (an Image object, the format plugin, a
decoder fed through Python). A PNG in the commonest form is checked here instead, in
a few calls: its chunks' CRCs, one zlib stream that inflates to exactly the rows the
header declares, and a valid filter byte starting each row (unfiltering the rows
cannot fail, so it is not done).

`plain_png` answers only when it is sure that Pillow would decode the file to the same
size and bands, with no EXIF orientation: 8-bit grayscale, grey+alpha, RGB or RGBA,
not interlaced, nothing but IHDR, IDAT, IEND and a few chunks that change neither
(gAMA, sRGB, pHYs, each of its standard length), nothing after IEND. Anything else,
well-formed or broken, is None, and the caller asks Pillow, whose answer and error
messages stay the reference (tests/test_png_check.py holds the two side by side on
valid and damaged files).
"""

from __future__ import annotations

import struct
import zlib

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_BANDS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> channels, at 8 bits per channel
# the ancillary chunks allowed, each at the one length it has: Pillow reads them
# without changing the image's mode, size or EXIF
_HARMLESS = {b"gAMA": 4, b"sRGB": 1, b"pHYs": 9}
_HEADER = struct.Struct(">I4s")
_IHDR = struct.Struct(">IIBBBBB")
_IHDR_CHUNK_SIZE = 8 + 13 + 4
# rows held to check their filter bytes: larger images are left to Pillow, whose decode
# costs about what inflating them does
_MAX_ROWS_BYTES = 16 << 20


def plain_png(data: bytes, max_pixels: int) -> tuple[tuple[int, int], int] | None:
    """((width, height), bands) of a PNG in the plain form above that decodes fully;
    None for any other file (Pillow decides those)."""
    if not data.startswith(_SIGNATURE) or len(data) < 8 + _IHDR_CHUNK_SIZE:
        return None
    length, kind = _HEADER.unpack_from(data, 8)
    if kind != b"IHDR" or length != 13 or not _crc_ok(data, 8, 13):
        return None
    width, height, depth, colour, compression, filtering, interlace = _IHDR.unpack_from(data, 16)
    bands = _BANDS.get(colour)
    if bands is None or depth != 8 or compression or filtering or interlace:
        return None
    if not (0 < width < 1 << 31 and 0 < height < 1 << 31) or width * height > max_pixels:
        return None  # Pillow names the problem (or the --max-pixels limit)
    stride = 1 + width * bands
    expected = stride * height
    if expected > _MAX_ROWS_BYTES:
        return None
    inflater = zlib.decompressobj()
    rows = bytearray()
    pos, seen_idat, idat_ended = 8 + _IHDR_CHUNK_SIZE, False, False
    while True:
        if pos + 12 > len(data):
            return None  # cut short before IEND
        length, kind = _HEADER.unpack_from(data, pos)
        end = pos + 8 + length
        if end + 4 > len(data) or not _crc_ok(data, pos, length):
            return None
        if kind == b"IDAT":
            if idat_ended or inflater.eof:
                return None  # IDAT chunks not consecutive, or data after the stream's end
            seen_idat = True
            try:
                rows += inflater.decompress(memoryview(data)[pos + 8 : end], expected + 1 - len(rows))
            except zlib.error:
                return None
            if len(rows) > expected or inflater.unconsumed_tail:
                return None  # more rows than the header declares
        elif kind == b"IEND":
            if length or end + 4 != len(data):
                return None
            break
        elif _HARMLESS.get(kind) == length:
            idat_ended = seen_idat
        else:
            return None
        pos = end + 4
    if not inflater.eof or inflater.unused_data or len(rows) != expected:
        return None
    if max(rows[::stride]) > 4:
        return None  # an unknown filter type
    return (width, height), bands


def _crc_ok(data: bytes, pos: int, length: int) -> bool:
    """Whether the chunk at `pos` (its type and data) matches the CRC after it."""
    view = memoryview(data)
    (stored,) = struct.unpack_from(">I", data, pos + 8 + length)
    return zlib.crc32(view[pos + 4 : pos + 8 + length]) == stored
