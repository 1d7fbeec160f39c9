"""Keep mode's structural JPEG check (converters/jpeg_check.py) against the references:
whatever it vouches for, Pillow's full probe and TensorFlow's decoder both read at the
same size and bands (and Pillow at the same EXIF orientation); what it cannot vouch for
it leaves to Pillow (None). Valid, progressive, CMYK, arithmetic-coded, lossless,
12-bit, EXIF-rotated, XMP-rotated, truncated, flipped-byte and trailing-garbage files,
and a few thousand random damages; and whole conversions give the same bytes with the
check as with --check decode."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from tfr_convert.converters.imaging import probe_with_pillow
from tfr_convert.converters.jpeg_check import plain_jpeg
from tfr_convert.errors import SourceError

LIMIT = 89_478_485


def _photo(w: int, h: int, mode: str = "RGB", seed: int = 0, **save) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = np.linspace(0, 255, w)[None, :, None] * np.ones((h, 1, 3)) + rng.normal(0, 30, (h, w, 3))
    picture = Image.fromarray(pixels.clip(0, 255).astype(np.uint8))
    out = io.BytesIO()
    (picture if mode == "RGB" else picture.convert(mode)).save(out, "JPEG", **save)
    return out.getvalue()


def _exif(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


def _with_segment(jpeg: bytes, marker: int, payload: bytes) -> bytes:
    """The JPEG with one more segment right after SOI."""
    return jpeg[:2] + bytes([0xFF, marker]) + (len(payload) + 2).to_bytes(2, "big") + payload + jpeg[2:]


def _sof_marker_replaced(jpeg: bytes, marker: int) -> bytes:
    at = next(i for i in range(2, len(jpeg) - 1) if jpeg[i] == 0xFF and jpeg[i + 1] in (0xC0, 0xC2))
    return jpeg[: at + 1] + bytes([marker]) + jpeg[at + 2 :]


def _pillow(data: bytes):
    try:
        found = probe_with_pillow(data, LIMIT)
    except SourceError:
        return None
    return found.source_size, found.source_channels, found.orientation


def _tensorflow_shape(data: bytes):
    try:
        return tuple(tf.io.decode_jpeg(data).shape)
    except (tf.errors.InvalidArgumentError, tf.errors.DataLossError):
        return None


def _held_to_the_references(data: bytes) -> tuple | None:
    """The check's answer, asserted to be Pillow's and TensorFlow's where it gives one."""
    found = plain_jpeg(data, LIMIT)
    if found is not None:
        (width, height), bands, _ = found
        assert _pillow(data) == found
        assert _tensorflow_shape(data) == (height, width, bands)
    return found


CASES = {
    "baseline": (lambda: _photo(120, 80), ((120, 80), 3, 1)),
    "grayscale": (lambda: _photo(64, 48, "L"), ((64, 48), 1, 1)),
    "progressive": (lambda: _photo(100, 70, progressive=True), ((100, 70), 3, 1)),
    "optimized tables": (lambda: _photo(90, 60, optimize=True), ((90, 60), 3, 1)),
    "4:4:4": (lambda: _photo(50, 40, subsampling=0), ((50, 40), 3, 1)),
    "4:2:2": (lambda: _photo(50, 40, subsampling=1), ((50, 40), 3, 1)),
    "EXIF orientation 6": (lambda: _photo(50, 40, exif=_exif(6)), ((50, 40), 3, 6)),
    "EXIF orientation 1": (lambda: _photo(50, 40, exif=_exif(1)), ((50, 40), 3, 1)),
    "XMP orientation 3": (
        lambda: _with_segment(_photo(30, 20), 0xE1, b'http://ns.adobe.com/xap/1.0/\x00<x tiff:Orientation="3"/>'),
        ((30, 20), 3, 3),
    ),
    "trailing garbage": (lambda: _photo(40, 30) + b"\x00garbage after EOI" * 3, ((40, 30), 3, 1)),
    "comment and APP segments": (
        lambda: _with_segment(_with_segment(_photo(40, 30), 0xFE, b"a comment"), 0xEB, b"vendor data"),
        ((40, 30), 3, 1),
    ),
    # left to Pillow
    "CMYK": (lambda: _photo(40, 30, "CMYK"), None),
    "arithmetic-coded (SOF9)": (lambda: _sof_marker_replaced(_photo(40, 30), 0xC9), None),
    "lossless (SOF3)": (lambda: _sof_marker_replaced(_photo(40, 30), 0xC3), None),
    "hierarchical (SOF5)": (lambda: _sof_marker_replaced(_photo(40, 30), 0xC5), None),
    "cut short": (lambda: _photo(120, 80)[:-500], None),
    "cut before the scan": (lambda: _photo(120, 80)[:300], None),
    "multi-picture (MPF)": (lambda: _with_segment(_photo(30, 20), 0xE2, b"MPF\x00" + bytes(20)), None),
    "two Exif segments": (lambda: _with_segment(_photo(30, 20, exif=_exif(6)), 0xE1, b"Exif\x00\x00" + _exif(3)), None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_check_answers_as_pillow_and_tensorflow_or_leaves_the_file_to_pillow(case):
    make, expected = CASES[case]
    data = make()
    assert _held_to_the_references(data) == expected


def test_a_picture_over_max_pixels_is_left_to_pillow_and_one_at_the_limit_is_not():
    data = _photo(120, 80)
    assert plain_jpeg(data, 120 * 80) is not None
    assert plain_jpeg(data, 120 * 80 - 1) is None


def test_a_12_bit_jpeg_is_left_to_pillow():
    data = bytearray(_photo(30, 20))
    at = next(i for i in range(2, len(data) - 1) if data[i] == 0xFF and data[i + 1] == 0xC0)
    data[at + 4] = 12  # the frame's sample precision
    assert plain_jpeg(bytes(data), LIMIT) is None


def test_every_random_damage_it_accepts_pillow_and_tensorflow_read_alike():
    """Bytes flipped or replaced (mostly in the headers), cuts, deletions and garbage
    appended, to every kind of valid file above: whatever the check still vouches for,
    both references read the same way."""
    sources = [make() for make, expected in CASES.values() if expected is not None]
    rng = random.Random(11)
    accepted = refused = 0
    for _ in range(3000):
        damaged = bytearray(rng.choice(sources))
        kind = rng.random()
        if kind < 0.45:
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(min(len(damaged), 700)) if rng.random() < 0.7 else rng.randrange(len(damaged))
                damaged[at] = rng.randrange(256) if rng.random() < 0.5 else damaged[at] ^ (1 << rng.randrange(8))
        elif kind < 0.7:
            damaged = damaged[: rng.randrange(len(damaged))]
        elif kind < 0.85:
            damaged += rng.randbytes(rng.randint(1, 50))
        else:
            at = rng.randrange(len(damaged))
            del damaged[at : at + rng.randint(1, 20)]
        if _held_to_the_references(bytes(damaged)) is None:
            refused += 1
        else:
            accepted += 1
    assert accepted > 500 and refused > 500  # both sides were exercised


def test_keep_mode_writes_the_same_shards_with_the_check_as_with_a_full_decode(cli, tmp_path):
    photos = tmp_path / "photos"
    for c, cls in enumerate(("cat", "dog")):
        (photos / cls).mkdir(parents=True)
        for i in range(6):
            save = [{}, {"progressive": True}, {"exif": _exif(6)}, {"subsampling": 0}][i % 4]
            (photos / cls / f"{i}.jpg").write_bytes(_photo(40 + i, 30 + c, seed=i + 10 * c, **save))
    (photos / "dog" / "cmyk.jpg").write_bytes(_photo(20, 20, "CMYK"))
    shards = {}
    for check in ("structure", "decode"):
        result = cli.convert("images", photos, "--out", tmp_path / check, "--check", check, "--quiet")
        assert result.exit_code == 0, result.output
        shards[check] = {p.name: p.read_bytes() for p in (tmp_path / check).glob("*.tfrecord-*")}
    assert shards["structure"] == shards["decode"] and shards["decode"]
