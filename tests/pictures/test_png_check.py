"""Keep mode's PNG check without Pillow (pictures/png_check.py) against Pillow's:
it answers only for files Pillow decodes, with Pillow's size and bands, and leaves
every other file, well-formed or damaged, to Pillow."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image, PngImagePlugin

from tfr_convert.errors import SourceError
from tfr_convert.pictures.imaging import probe, probe_with_pillow
from tfr_convert.pictures.png_check import plain_png

LIMIT = 10**8
SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_bytes(array: np.ndarray, **save) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG", **save)
    return buffer.getvalue()


def pillow_says(data: bytes):
    """((width, height), bands) as Pillow's probe finds them, or the SourceError it raises."""
    try:
        info = probe_with_pillow(data, LIMIT)
    except SourceError as e:
        return e
    return info.source_size, info.source_channels


def chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def assembled(
    width: int,
    height: int,
    colour: int,
    rows: bytes,
    *,
    before: bytes = b"",
    between: bytes = b"",
    after: bytes = b"",
    interlace: int = 0,
) -> bytes:
    """A PNG with valid CRCs around any rows (for damage below the chunks' checks), its
    stream in two IDAT chunks; `before`, `between`, `after` go before, between, after them."""
    stream = zlib.compress(rows)
    half = len(stream) // 2
    return (
        SIGNATURE
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, interlace))
        + before
        + chunk(b"IDAT", stream[:half])
        + between
        + chunk(b"IDAT", stream[half:])
        + chunk(b"IEND", b"")
        + after
    )


rng = np.random.default_rng(7)
PLAIN = {
    "L 28x28": png_bytes(rng.integers(0, 256, (28, 28), dtype=np.uint8)),
    "L 1x1": png_bytes(np.zeros((1, 1), np.uint8)),
    "RGB 37x5": png_bytes(rng.integers(0, 256, (5, 37, 3), dtype=np.uint8)),
    "RGBA 20x30": png_bytes(rng.integers(0, 256, (30, 20, 4), dtype=np.uint8)),
    "LA 9x9": png_bytes(rng.integers(0, 256, (9, 9, 2), dtype=np.uint8)),
    # several IDAT chunks (Pillow cuts at 64 KiB), stored and best compression
    "RGB 300x200": png_bytes(rng.integers(0, 256, (200, 300, 3), dtype=np.uint8)),
    "RGB stored": png_bytes(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8), compress_level=0),
    "L optimized": png_bytes(np.tile(np.arange(64, dtype=np.uint8), (64, 1)), optimize=True),
    # pHYs (dpi) and gAMA / sRGB chunks, which change nothing a probe reports
    "L with dpi": png_bytes(rng.integers(0, 256, (16, 16), dtype=np.uint8), dpi=(300, 300)),
    "RGB with gAMA and sRGB": assembled(
        4, 3, 2, bytes(1 + 12) * 3, before=chunk(b"gAMA", struct.pack(">I", 45455)) + chunk(b"sRGB", b"\x00")
    ),
}


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_a_plain_png_is_answered_as_pillow_answers_it(name):
    data = PLAIN[name]
    assert plain_png(data, LIMIT) == pillow_says(data)
    assert probe(data, LIMIT) == probe_with_pillow(data, LIMIT)


def other_forms() -> dict[str, bytes]:
    gray = rng.integers(0, 256, (12, 12), dtype=np.uint8)
    text = PngImagePlugin.PngInfo()
    text.add_text("comment", "hello")
    exif = Image.Exif()
    exif[0x0112] = 6
    return {
        "palette": _palette(gray),
        "16-bit": png_bytes(gray.astype(np.uint16) * 257),
        "1-bit": png_bytes(gray > 128),
        "interlaced": assembled(1, 1, 0, b"\x00\x7f", interlace=1),  # Adam7: a 1x1 image is its first pass
        "text chunk": png_bytes(gray, pnginfo=text),
        "EXIF orientation": png_bytes(gray, exif=exif),
        "transparency": png_bytes(gray, transparency=0),
        "ICC profile": png_bytes(gray, icc_profile=b"not really a profile, but a chunk"),
    }


def _palette(gray: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(gray).convert("P").save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("name", sorted(other_forms()))
def test_any_other_form_is_left_to_pillow(name):
    data = other_forms()[name]
    assert plain_png(data, LIMIT) is None
    assert not isinstance(pillow_says(data), SourceError)  # each a PNG Pillow reads
    assert probe(data, LIMIT) == probe_with_pillow(data, LIMIT)


def agrees_or_defers(data: bytes) -> None:
    """The one rule: an answer is Pillow's answer; a file Pillow refuses is never answered."""
    answer = plain_png(data, LIMIT)
    if answer is not None:
        assert answer == pillow_says(data), data


@pytest.mark.parametrize("name", ["L 28x28", "RGB 37x5", "LA 9x9", "L with dpi"])
def test_a_cut_or_flipped_byte_anywhere_is_never_answered_unlike_pillow(name):
    data = PLAIN[name]
    answered = 0
    for cut in range(len(data)):
        agrees_or_defers(data[:cut])
        answered += plain_png(data[:cut], LIMIT) is not None
    for at in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            damaged = bytearray(data)
            damaged[at] ^= flip
            agrees_or_defers(bytes(damaged))
    assert answered == 0  # no prefix of a PNG is a whole one


def test_damage_under_valid_checksums_is_refused_where_pillow_refuses_it():
    width, height, colour = 6, 5, 2
    stride = 1 + 3 * width
    rows = bytearray(rng.integers(0, 256, stride * height, dtype=np.uint8).tobytes())
    for r in range(height):
        rows[r * stride] = r % 5  # every filter type
    good = assembled(width, height, colour, bytes(rows))
    assert plain_png(good, LIMIT) == pillow_says(good) == ((6, 5), 3)
    for bad_filter in (5, 17, 255):
        for r in range(height):
            damaged = bytearray(rows)
            damaged[r * stride] = bad_filter
            data = assembled(width, height, colour, bytes(damaged))
            assert plain_png(data, LIMIT) is None
            assert isinstance(pillow_says(data), SourceError)
    for data in (
        assembled(width, height, colour, bytes(rows[:-1])),  # a byte short
        assembled(width, height, colour, bytes(rows[: stride * (height - 1)])),  # a row short
        assembled(width, height, colour, bytes(rows) + bytes(stride)),  # a row too many
        assembled(width, height, colour, bytes(rows), after=b"junk after IEND"),
        assembled(width, height, colour, bytes(rows), between=chunk(b"gAMA", b"\x00\x00\xb1\x8f")),  # IDATs apart
        assembled(width, height, colour, bytes(rows), between=chunk(b"zzZz", b"unknown")),
    ):
        assert plain_png(data, LIMIT) is None
        agrees_or_defers(data)


def test_the_pixel_limit_is_left_to_pillows_path_and_its_message():
    data = PLAIN["RGB 300x200"]
    assert plain_png(data, 300 * 200 - 1) is None
    with pytest.raises(SourceError, match="exceeds --max-pixels"):
        probe(data, 300 * 200 - 1)
    assert plain_png(data, 300 * 200) == ((300, 200), 3)  # at the limit: still answered


def test_rows_up_to_the_held_size_are_checked_and_larger_images_left_to_pillow():
    """16 MiB of rows (filter bytes included) is the most the check holds: a grey image of
    exactly that is answered, one row more is left to Pillow (which reads it alike)."""
    width = 4095  # 1 + 4095 bytes a row, 4096 rows: 16 MiB
    for height, answered in ((4096, True), (4097, False)):
        data = assembled(width, height, 0, bytes(1 + width) * height)
        assert plain_png(data, LIMIT) == (((width, height), 1) if answered else None)
        assert pillow_says(data) == ((width, height), 1)


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_a_stream_cut_into_many_idat_chunks_is_answered_as_one(piece):
    rows = b"".join(b"\x00" + rng.integers(0, 256, 3 * 37, dtype=np.uint8).tobytes() for _ in range(23))
    stream = zlib.compress(rows)
    idats = b"".join(chunk(b"IDAT", stream[i : i + piece]) for i in range(0, len(stream), piece))
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", 37, 23, 8, 2, 0, 0, 0))
    data = SIGNATURE + header + idats + chunk(b"IEND", b"")
    assert plain_png(data, LIMIT) == ((37, 23), 3) == pillow_says(data)
    # the same stream with one row too few, or one byte more, is refused
    for wrong in (rows[: -(1 + 3 * 37)], rows + b"\x00"):
        short = SIGNATURE + header + chunk(b"IDAT", zlib.compress(wrong)) + chunk(b"IEND", b"")
        assert plain_png(short, LIMIT) is None


def _with_header(width: int, height: int, idat: bytes, *, depth=8, colour=0, compression=0, filtering=0) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, depth, colour, compression, filtering, 0)
    return SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


@pytest.mark.parametrize(
    "case",
    [
        "no columns",
        "no rows",
        "compression method 1",
        "filter method 1",
        "not a deflate stream",
        "no end marker",
        "a stream after the end",
    ],
)
def test_headers_and_streams_the_format_does_not_allow_are_never_answered(case):
    rows = b"\x00\x10\x20" * 2  # 2 rows of 2 grey pixels
    unended = zlib.compressobj()
    data = {
        "no columns": _with_header(0, 2, zlib.compress(b"\x00\x00")),
        "no rows": _with_header(2, 0, zlib.compress(b"")),
        "compression method 1": _with_header(2, 2, zlib.compress(rows), compression=1),
        "filter method 1": _with_header(2, 2, zlib.compress(rows), filtering=1),
        "not a deflate stream": _with_header(2, 2, b"\x78\x9c\xff\xff\xff\xff"),
        "no end marker": _with_header(2, 2, unended.compress(rows) + unended.flush(zlib.Z_SYNC_FLUSH)),
        "a stream after the end": _with_header(2, 2, zlib.compress(rows) + b"\x00"),
    }[case]
    assert plain_png(data, LIMIT) is None
    agrees_or_defers(data)
