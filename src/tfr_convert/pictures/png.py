"""PNG files of a stack of small uint8 arrays, byte for byte what Pillow writes with its defaults.

For a small image Pillow spends most of its time around zlib, not in it: an Image
object, the format plugin, an encoder fed one row at a time. Here the rows' filters
are computed and chosen for a whole stack of images in a few numpy operations, and
zlib compresses each image in one call (MNIST's and CIFAR's `features_of_each`). One image
alone gains nothing, and a large one loses: numpy's filter arrays cost more than
Pillow's C loop. The output must stay Pillow's (tests/test_png.py holds
the two side by side), so this follows what Pillow's encoder does:
  - each row gets the filter whose bytes, read as signed, have the least sum of
    absolute values, trying none, up, sub and Paeth in that order and switching only
    to a strictly smaller sum (average is tried only by `optimize`, which we never set);
  - the filters predict from the unfiltered row above (zeros above the first row);
  - zlib at level 6, window 15, memory level 9, strategy Z_FILTERED;
  - the stream is cut into IDAT chunks of max(65536, 4 * width) bytes, the last shorter;
  - no chunks but IHDR, IDAT and IEND (an array carries no ICC profile or resolution).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 3: 2}  # channels -> PNG colour type: grayscale, RGB
_FILTER_CODES = np.array([0, 2, 1, 4], np.uint8)  # in the order they are tried: none, up, sub, Paeth
_MAXBLOCK = 65536
_SLICE_BYTES = 1 << 18  # pixels filtered at once: the filters' arrays take ~24 bytes per pixel byte


def _chunk(kind: bytes, data: bytes | memoryview) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def _filtered(rows: np.ndarray, bpp: int) -> np.ndarray:
    """(N, H, 1 + W * bpp) of (N, H, W * bpp) images' rows: each row's chosen filter
    code, then the row filtered by it."""
    count, height, width = rows.shape
    padded = np.zeros((count, height + 1, width + bpp), np.int16)  # a row of zeros above, bpp columns left
    padded[:, 1:, bpp:] = rows
    x, above, left, above_left = padded[:, 1:, bpp:], padded[:, :-1, bpp:], padded[:, 1:, :-bpp], padded[:, :-1, :-bpp]
    pa, pb, pc = np.abs(above - above_left), np.abs(left - above_left), np.abs(left + above - 2 * above_left)
    paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, above, above_left))
    candidates = np.stack([x, x - above, x - left, x - paeth]).astype(np.uint8)  # wraps mod 256, as PNG's bytes do
    magnitude = np.minimum(candidates, 0 - candidates)  # |byte read as signed| (uint8: -128 is 128)
    choice = magnitude.sum(axis=3, dtype=np.int32).argmin(axis=0)  # (N, H); the first of equal sums wins
    out = np.empty((count, height, width + 1), np.uint8)
    out[..., 0] = _FILTER_CODES[choice]
    n, h = np.ogrid[:count, :height]
    out[..., 1:] = candidates[choice, n, h]
    return out


_IEND = _chunk(b"IEND", b"")


def encode_pngs(stack: np.ndarray) -> list[bytes]:
    """The PNG file Pillow's `Image.fromarray(image).save(f, "PNG")` writes, for each
    image of a uint8 (N, H, W) or (N, H, W, 1 or 3) stack: the filters of all of them
    chosen at once, in slices of a bounded size. For a stack of small images; one
    image, or a large one, Pillow encodes faster."""
    count, height, width = stack.shape[:3]
    channels = 1 if stack.ndim == 3 else stack.shape[3]
    header = _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0))
    block = max(_MAXBLOCK, 4 * width)
    step = max(1, _SLICE_BYTES // max(stack[0].size, 1))
    out = []
    for at in range(0, count, step):
        for rows in _filtered(stack[at : at + step].reshape(-1, height, width * channels), channels):
            compressor = zlib.compressobj(6, zlib.DEFLATED, 15, 9, zlib.Z_FILTERED)
            stream = memoryview(compressor.compress(rows) + compressor.flush())
            idat = b"".join(_chunk(b"IDAT", stream[i : i + block]) for i in range(0, len(stream), block))
            out.append(_SIGNATURE + header + idat + _IEND)
    return out
