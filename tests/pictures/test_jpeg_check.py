"""Keep mode's structural JPEG check (pictures/jpeg_check.py) against the references:
whatever it vouches for, Pillow's full probe and TensorFlow's decoder both read at the
same size and bands (and Pillow at the same EXIF orientation); what it cannot vouch for
it leaves to Pillow (None). Valid, progressive, CMYK, arithmetic-coded, lossless,
12-bit, EXIF-rotated, XMP-rotated, truncated, flipped-byte and trailing-garbage files,
and a few thousand random damages; and whole conversions give the same bytes with the
check as with --check decode."""

from __future__ import annotations

import io
import random
import re
import struct

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from tfr_convert.errors import SourceError
from tfr_convert.pictures import jpeg_check
from tfr_convert.pictures.imaging import probe_with_pillow
from tfr_convert.pictures.jpeg_check import plain_jpeg, scan_end

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


# ---------------------------------------------------------------- segment by segment


def _segments(jpeg: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
    """([(marker, payload)] from after SOI through the first SOS, the bytes after it)."""
    out, pos = [], 2
    while True:
        marker, length = jpeg[pos + 1], int.from_bytes(jpeg[pos + 2 : pos + 4], "big")
        out.append((marker, jpeg[pos + 4 : pos + 2 + length]))
        pos += 2 + length
        if marker == 0xDA:
            return out, jpeg[pos:]


def _joined(segments: list[tuple[int, bytes]], rest: bytes) -> bytes:
    framed = (bytes([0xFF, m]) + (len(p) + 2).to_bytes(2, "big") + p for m, p in segments)
    return b"\xff\xd8" + b"".join(framed) + rest


def _edited(jpeg: bytes, marker: int, edit) -> bytes:
    """The JPEG with the first `marker` segment's payload passed through `edit`."""
    segments, rest = _segments(jpeg)
    at = next(i for i, (m, _) in enumerate(segments) if m == marker)
    segments[at] = (marker, edit(segments[at][1]))
    return _joined(segments, rest)


def _dht(kind: int, table: int, counts: list[int], symbols: bytes) -> bytes:
    return bytes([kind << 4 | table, *counts]) + symbols


def _tiff(order: str, entries: list[tuple[int, int, int, int]], ifd: int = 8) -> bytes:
    """A TIFF header and IFD0 of (tag, type, count, value) entries, in `order` ("<" or ">")."""
    head = (b"II*\x00" if order == "<" else b"MM\x00*") + struct.pack(order + "I", ifd) + bytes(ifd - 8)
    body = struct.pack(order + "H", len(entries))
    for tag, kind, count, value in entries:
        body += struct.pack(order + "HHI", tag, kind, count) + struct.pack(order + "HH", value, 0)
    return head + body + bytes(4)


BASE = _photo(48, 32)
EXTRA = {  # one more segment after SOI: a table no scan uses, a marker segment, ...
    "an unused quantization table 3": (0xDB, bytes([3]) + bytes(range(1, 65)), True),
    "an unused 16-bit quantization table": (0xDB, bytes([0x13]) + bytes(128), True),
    "two quantization tables in one segment": (0xDB, bytes([2]) + bytes(64) + bytes([3]) + bytes(64), True),
    "a quantization table 4": (0xDB, bytes([4]) + bytes(64), False),
    "a quantization table of precision 2": (0xDB, bytes([0x23]) + bytes(192), False),
    "a quantization table cut short": (0xDB, bytes([3]) + bytes(63), False),
    "an empty quantization segment": (0xDB, b"", False),
    "an unused Huffman table 3": (0xC4, _dht(1, 3, [1, 1] + [0] * 14, b"\x01\x02"), True),
    "a Huffman table of 256 symbols": (0xC4, _dht(1, 3, [0] * 8 + [255, 1] + [0] * 6, bytes(range(256))), True),
    "a Huffman table of 257 symbols": (0xC4, _dht(1, 3, [0] * 8 + [255, 2] + [0] * 6, bytes(257)), False),
    "a DC table with a symbol of 15": (0xC4, _dht(0, 3, [1] + [0] * 15, b"\x0f"), True),
    "a DC table with a symbol of 16": (0xC4, _dht(0, 3, [1] + [0] * 15, b"\x10"), False),
    "an AC table with a symbol of 200": (0xC4, _dht(1, 2, [1] + [0] * 15, b"\xc8"), True),
    "a Huffman table of class 2": (0xC4, _dht(2, 0, [1] + [0] * 15, b"\x01"), False),
    "a Huffman table 4": (0xC4, _dht(1, 4, [1] + [0] * 15, b"\x01"), False),
    "two codes of one bit (no code left for the rest)": (0xC4, _dht(1, 3, [2] + [0] * 15, b"\x01\x02"), False),
    "codes one short of full at 2 bits": (0xC4, _dht(1, 3, [1, 2] + [0] * 14, b"\x01\x02\x03"), False),
    "a Huffman table cut short": (0xC4, _dht(1, 3, [2, 1] + [0] * 14, b"\x01\x02"), False),
    "a Huffman table with counts cut short": (0xC4, bytes([0x13, 1, 0, 0]), False),
    "an empty Huffman segment": (0xC4, b"", False),
    "a restart interval": (0xDD, b"\x00\x00", True),
    "a restart segment of 3 bytes": (0xDD, b"\x00\x00\x00", False),
    "an empty comment": (0xFE, b"", True),
    "an APP15 segment": (0xEF, b"vendor", True),
    "an ICC profile (APP2)": (0xE2, b"ICC_PROFILE\x00\x01\x01" + bytes(20), True),
    "Exif, big-endian, orientation 8": (0xE1, b"Exif\x00\x00" + _tiff(">", [(0x0112, 3, 1, 8)]), True),
    "Exif, little-endian, orientation 3 after another tag": (
        0xE1,
        b"Exif\x00\x00" + _tiff("<", [(0x010F, 2, 1, 65), (0x0112, 3, 1, 3)]),
        True,
    ),
    "Exif with its IFD further on": (0xE1, b"Exif\x00\x00" + _tiff("<", [(0x0112, 3, 1, 5)], ifd=12), True),
    "Exif without an orientation": (0xE1, b"Exif\x00\x00" + _tiff("<", [(0x010F, 2, 1, 65)]), True),
    "Exif orientation of type LONG": (0xE1, b"Exif\x00\x00" + _tiff("<", [(0x0112, 4, 1, 6)]), False),
    "Exif orientation counted twice": (0xE1, b"Exif\x00\x00" + _tiff("<", [(0x0112, 3, 2, 6)]), False),
    "Exif orientation 0": (0xE1, b"Exif\x00\x00" + _tiff("<", [(0x0112, 3, 1, 0)]), False),
    "two Exif orientations": (0xE1, b"Exif\x00\x00" + _tiff("<", [(0x0112, 3, 1, 6), (0x0112, 3, 1, 6)]), False),
    "Exif with an IFD before its header's end": (
        0xE1,
        b"Exif\x00\x00" + _tiff("<", [(0x0112, 3, 1, 6)])[:4] + struct.pack("<I", 4) + bytes(30),
        False,
    ),
    "Exif whose IFD lies past its end": (0xE1, b"Exif\x00\x00" + b"II*\x00" + struct.pack("<I", 9) + b"\x00", False),
    "Exif whose entries run past its end": (0xE1, b"Exif\x00\x00" + _tiff("<", [(0x0112, 3, 1, 6)])[:-10], False),
    "Exif of four bytes": (0xE1, b"Exif\x00\x00II*\x00", False),
    "Exif in neither byte order": (0xE1, b"Exif\x00\x00" + b"XX*\x00" + bytes(20), False),
    "XMP orientation as an element": (
        0xE1,
        b"http://ns.adobe.com/xap/1.0/\x00<tiff:Orientation>6</tiff:Orientation>",
        True,
    ),
}


@pytest.mark.parametrize("case", list(EXTRA))
def test_each_kind_of_segment_is_answered_as_pillow_reads_it_or_left_to_pillow(case):
    marker, payload, answered = EXTRA[case]
    data = _with_segment(BASE, marker, payload)
    found = _held_to_the_references(data)
    assert (found is not None) == answered, found


def _frame_edit(offset: int, value: int):
    return lambda p: p[:offset] + bytes([value]) + p[offset + 1 :]


FRAMES = {  # the frame (SOF0) and scan (SOS) headers, each rule broken once
    "height 0 (a DNL file)": (0xC0, lambda p: p[:1] + b"\x00\x00" + p[3:]),
    "width 0": (0xC0, lambda p: p[:3] + b"\x00\x00" + p[5:]),
    "a frame header of 6 bytes": (0xC0, lambda p: p[:6]),
    "two components named alike": (0xC0, _frame_edit(9, 1)),
    "luma sampled 3 across": (0xC0, _frame_edit(7, 0x31)),
    "luma sampled 3 down": (0xC0, _frame_edit(7, 0x13)),
    "chroma sampled 2x1": (0xC0, _frame_edit(10, 0x21)),
    "a quantization table never defined": (0xC0, _frame_edit(8, 3)),
    "two components": (0xC0, lambda p: p[:5] + b"\x02" + p[6:12]),
    "an empty scan header": (0xDA, lambda p: b""),
    "a scan of no components": (0xDA, lambda p: b"\x00\x00\x3f\x00"),
    "a scan header one byte long": (0xDA, lambda p: p + b"\x00"),
    "a scan naming a component twice": (0xDA, lambda p: p[:3] + p[1:2] + p[4:]),
    "a scan naming an unknown component": (0xDA, lambda p: p[:1] + b"\x09" + p[2:]),
    "a baseline scan of part of the spectrum": (0xDA, lambda p: p[:-2] + b"\x3e\x00"),
    "a baseline scan with successive approximation": (0xDA, lambda p: p[:-1] + b"\x10"),
    "a baseline scan using Huffman table 2": (0xDA, lambda p: p[:2] + b"\x22" + p[3:]),
    "a scan using an undefined AC table": (0xDA, lambda p: p[:2] + b"\x03" + p[3:]),
}


@pytest.mark.parametrize("case", list(FRAMES))
def test_a_frame_or_scan_header_breaking_a_rule_is_left_to_pillow(case):
    marker, edit = FRAMES[case]
    assert plain_jpeg(_edited(BASE, marker, edit), LIMIT) is None


@pytest.mark.parametrize("table", [2, 3])
def test_extended_sequential_frames_may_use_tables_up_to_3_and_baseline_ones_up_to_1(table):
    segments, rest = _segments(BASE)
    assert plain_jpeg(BASE, LIMIT) is not None
    # every Huffman table moved to this id (and the scan told so): fine for SOF1, not for SOF0
    moved = [(m, bytes([p[0] | table]) + p[1:]) if m == 0xC4 else (m, p) for m, p in segments]
    moved = [
        (m, p[:1] + b"".join(bytes([p[1 + 2 * i], table * 0x11]) for i in range(p[0])) + p[1 + 2 * p[0] :])
        if m == 0xDA
        else (m, p)
        for m, p in moved
    ]
    extended = [(0xC1, p) if m == 0xC0 else (m, p) for m, p in moved]
    assert plain_jpeg(_joined(moved, rest), LIMIT) is None
    assert _held_to_the_references(_joined(extended, rest)) == ((48, 32), 3, 1)


def test_markers_that_do_not_belong_between_segments_are_left_to_pillow():
    segments, rest = _segments(BASE)
    for marker in (0x00, 0x01, 0xD0, 0xD7, 0xD8):
        data = _joined(segments[:1], b"") + bytes([0xFF, marker]) + _joined(segments[1:], rest)[2:]
        assert plain_jpeg(data, LIMIT) is None, hex(marker)
    for length in (0, 1):  # a segment shorter than its own length field
        data = b"\xff\xd8\xff\xfe" + length.to_bytes(2, "big") + BASE[2:]
        assert plain_jpeg(data, LIMIT) is None
    padded = _joined(segments[:1], b"") + b"\xff\xff\xff" + _joined(segments[1:], rest)[3:]  # fill bytes
    assert _held_to_the_references(padded) == ((48, 32), 3, 1)
    assert plain_jpeg(BASE[:2] + b"\xff\xff\xff", LIMIT) is None  # fill bytes, then the end
    assert plain_jpeg(BASE[:2] + b"\xff", LIMIT) is None


def test_a_file_with_no_scan_or_two_baseline_scans_is_left_to_pillow():
    segments, rest = _segments(BASE)
    no_scan = _joined(segments[:-1], b"") + b"\xff\xd9"
    assert plain_jpeg(no_scan, LIMIT) is None
    scan = rest[: rest.rindex(b"\xff\xd9")]
    twice = (
        _joined(segments, scan)
        + b"\xff\xda"
        + (len(segments[-1][1]) + 2).to_bytes(2, "big")
        + segments[-1][1]
        + scan
        + b"\xff\xd9"
    )
    assert plain_jpeg(twice, LIMIT) is None


def test_restart_markers_inside_the_scan_are_read_through():
    data = _photo(64, 48, restart_marker_blocks=2)
    assert b"\xff\xdd" in data and b"\xff\xd0" in data
    assert _held_to_the_references(data) == ((64, 48), 3, 1)


_SEARCH = re.compile(rb"\xff[^\x00\xd0-\xd7]")  # the plain definition of a scan's end


def _entropy_data(rng: random.Random) -> bytes:
    """Bytes as a scan holds them (stuffed 0xFF00, RSTn) with, at random, what ends a
    scan early: a lone 0xFF, fill bytes, a marker, an EOI too soon, or one at the very end."""
    pieces = []
    for _ in range(rng.randrange(0, 40)):
        pieces.append(rng.choice([b"\xff\x00", b"\xff\xd3", b"\x12\x34\x56", bytes([rng.randrange(255)])]))
        if rng.random() < 0.03:
            pieces.append(rng.choice([b"\xff", b"\xff\xff", b"\xff\xc4", b"\xff\xd9", b"\xff\x01", b"\xff\xd8"]))
    pieces.append(rng.choice([b"\xff\xd9", b"\xff\xd9" + b"garbage\xff\xd9", b"", b"\xff", b"\xff\xff\xd9"]))
    return b"".join(pieces)


def test_the_scan_end_found_by_counting_is_where_the_search_finds_it():
    rng = random.Random(5)
    for _ in range(4000):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(4))) + _entropy_data(rng)
        start = rng.randrange(len(data) + 1)
        found = _SEARCH.search(data, start)
        expected = None if found is None else found.start()
        assert scan_end(data, start, last_scan=True) == expected == scan_end(data, start), (data, start)


class _NoSearch:
    def search(self, *_):
        raise AssertionError("searched byte by byte")


@pytest.mark.parametrize("save", [{}, {"restart_marker_blocks": 2}], ids=["plain", "with restart markers"])
def test_a_sequential_photos_one_scan_is_measured_by_counting_without_a_search(monkeypatch, save):
    data = _photo(64, 48, **save)
    monkeypatch.setattr(jpeg_check, "_SCAN_END", _NoSearch())
    assert plain_jpeg(data, LIMIT) == ((64, 48), 3, 1)


# ---------------------------------------------------------------- each rule's edges

_XMP_HEAD = b"http://ns.adobe.com/xap/1.0/\x00"
EDGES = {  # more segments after SOI, at the edges of what the check reads: (segments, answered)
    "an EXP segment (0xDF)": ([(0xDF, b"\x00")], False),
    "a JPG0 segment (0xF0)": ([(0xF0, b"vendor")], False),
    "XMP whose orientation follows a NUL": ([(0xE1, _XMP_HEAD + b'<x>\x00<y tiff:Orientation="6"/>')], True),
    "XMP orientation 0": ([(0xE1, _XMP_HEAD + b'<x tiff:Orientation="0"/>')], True),
    "XMP orientation 9": ([(0xE1, _XMP_HEAD + b'<x tiff:Orientation="9"/>')], True),
    "Exif without an orientation, then XMP orientation 6": (
        [(0xE1, b"Exif\x00\x00" + _tiff("<", [(0x010F, 2, 1, 65)])), (0xE1, _XMP_HEAD + b'<x tiff:Orientation="6"/>')],
        True,
    ),
    "Exif with its IFD at 7": (
        [(0xE1, b"Exif\x00\x00" + b"II*\x00" + struct.pack("<I", 7) + b"\x00" + _tiff("<", [(0x0112, 3, 1, 6)])[8:])],
        False,
    ),
    "Exif with its IFD inside the header, readable": (
        [(0xE1, b"Exif\x00\x00" + b"II*\x00" + struct.pack("<I", 4) + bytes(60))],
        False,
    ),
    "Exif with an empty IFD ending the TIFF": (
        [(0xE1, b"Exif\x00\x00" + b"II*\x00" + struct.pack("<I", 8) + bytes(2))],
        True,
    ),
    "Exif whose entries end the TIFF": ([(0xE1, b"Exif\x00\x00" + _tiff("<", [(0x0112, 3, 1, 6)])[:-4])], True),
    "a Huffman table of no codes": ([(0xC4, _dht(1, 3, [0] * 16, b""))], True),
    "a Huffman table one symbol short": ([(0xC4, _dht(1, 3, [1, 1] + [0] * 14, b"\x01"))], False),
    "a DC table of sixteen 16-bit codes": ([(0xC4, _dht(0, 3, [0] * 15 + [16], bytes(range(16))))], True),
    "a DC table, then an AC table, in one segment": (
        [(0xC4, _dht(0, 2, [1] + [0] * 15, b"\x05") + _dht(1, 2, [1] + [0] * 15, b"\xf0"))],
        True,
    ),
}


@pytest.mark.parametrize("case", list(EDGES))
def test_segments_at_the_edges_of_each_rule_are_answered_as_pillow_reads_them_or_left_to_pillow(case):
    segments, answered = EDGES[case]
    data = BASE
    for marker, payload in reversed(segments):
        data = _with_segment(data, marker, payload)
    found = _held_to_the_references(data)
    assert (found is not None) == answered, found


@pytest.mark.parametrize("fill", [1, 2, 3])
def test_fill_bytes_before_any_marker_and_before_the_end_are_read_through(fill):
    segments, rest = _segments(BASE)
    padded = _joined(segments[:1], b"") + b"\xff" * fill + _joined(segments[1:], rest)[2:]
    assert _held_to_the_references(padded) == ((48, 32), 3, 1)
    before_the_end = BASE[:-2] + b"\xff" * fill + b"\xd9"
    assert _held_to_the_references(before_the_end) == ((48, 32), 3, 1)


def _tables_dropped(jpeg: bytes, kind: int) -> bytes:
    """The JPEG with every Huffman table of one class (0 DC, 1 AC) before its first scan left out."""
    segments, rest = _segments(jpeg)
    kept = []
    for marker, payload in segments:
        if marker == 0xC4:
            tables, at = b"", 0
            while at < len(payload):
                size = 17 + sum(payload[at + 1 : at + 17])
                tables += payload[at : at + size] if payload[at] >> 4 != kind else b""
                at += size
            if not tables:
                continue
            payload = tables
        kept.append((marker, payload))
    return _joined(kept, rest)


PROGRESSIVE = _photo(48, 32, progressive=True)


def _first_scan(edit):
    return _edited(PROGRESSIVE, 0xDA, edit)


def _an_ac_scan_ending_at(end: int) -> bytes:
    """PROGRESSIVE with its first AC scan (one component, from coefficient 1 on) ending at `end`."""
    data = bytearray(PROGRESSIVE)
    at = data.index(b"\xff\xda")
    while data[at + 4] != 1 or data[at + 7] == 0:  # one component, its band starting above 0
        at = data.index(b"\xff\xda", at + 2)
    data[at + 8] = end
    return bytes(data)


def _without_dc_refinement(jpeg: bytes) -> bytes:
    """The JPEG with its DC refinement scans (a DC band, Ah > 0) left out: the DC then has
    the first scan's precision, and only that scan needs the DC tables."""
    data, at = jpeg, jpeg.index(b"\xff\xda")
    while (at := data.find(b"\xff\xda", at + 2)) >= 0:
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        count = data[at + 4]
        ss, ah = data[at + 5 + 2 * count], data[at + 7 + 2 * count] >> 4
        if ss == 0 and ah:
            end = re.compile(rb"\xff[^\x00\xd0-\xd7]").search(data, at + 2 + length).start()
            data, at = data[:at] + data[end:], at - 2
    return data


SCANS = {  # tables and scans at the edges of the rules: (the file, answered)
    "progressive without DC refinement, and without its DC tables": (
        lambda: _tables_dropped(_without_dc_refinement(PROGRESSIVE), 0),
        False,
    ),
    "an AC scan ending at coefficient 63": (lambda: _an_ac_scan_ending_at(63), True),
    "an AC scan reaching past coefficient 63": (lambda: _an_ac_scan_ending_at(64), False),
    "baseline without its DC tables": (lambda: _tables_dropped(BASE, 0), False),
    "baseline without its AC tables": (lambda: _tables_dropped(BASE, 1), False),
    "progressive without its DC tables": (lambda: _tables_dropped(PROGRESSIVE, 0), False),
    "progressive with no scan": (lambda: _joined(_segments(PROGRESSIVE)[0][:-1], b"") + b"\xff\xd9", False),
    "a DC scan reaching into the AC band": (lambda: _first_scan(lambda p: p[:-2] + b"\x3f" + p[-1:]), False),
    "a DC scan of no components": (lambda: _first_scan(lambda p: b"\x00\x00\x00\x00"), False),
    "a first DC scan shifted by 13 bits": (lambda: _first_scan(lambda p: p[:-1] + b"\x0d"), True),
    "a first DC scan shifted by 14 bits": (lambda: _first_scan(lambda p: p[:-1] + b"\x0e"), False),
}


@pytest.mark.parametrize("case", list(SCANS))
def test_scans_and_their_tables_at_the_edges_of_the_rules_are_answered_or_left_to_pillow(case):
    make, answered = SCANS[case]
    found = _held_to_the_references(make())
    assert (found is not None) == answered, found
