"""What each parser we own must do with any bytes at all: answer, or refuse with its own
error, never anything else, and where it answers, agree with the reference reader.

Shared by the property-based tests (hypothesis, test_fuzz_parsers.py) and the
coverage-guided fuzzer (atheris, fuzz_target.py): each property takes the bytes and
raises AssertionError (or lets an unexpected exception through) when it does not hold.
"""

from __future__ import annotations

import io
import os
import struct
import tempfile

import numpy as np

from tfr_convert.containers.crc import masked_crc
from tfr_convert.containers.scan import scan_records
from tfr_convert.converters.listing import csvtable
from tfr_convert.converters.media.wav_header import wav_info
from tfr_convert.converters.published.idx import parse_idx
from tfr_convert.converters.table.json_nesting import deepest
from tfr_convert.dataset.wire.example import ExampleDecodeError, parse
from tfr_convert.errors import RecordError, SourceError
from tfr_convert.pictures.jpeg_check import plain_jpeg
from tfr_convert.pictures.png_check import plain_png

MAX_PIXELS = 1 << 20


def _pillow_size(data: bytes) -> tuple[int, int] | None:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            return im.size
    except Exception:  # the reference may refuse in any way: only its answer is compared
        return None


def png_check(data: bytes) -> None:
    """plain_png answers only for a PNG that Pillow decodes, at the size it says."""
    found = plain_png(data, MAX_PIXELS)
    if found is not None:
        assert _pillow_size(data) == found[0], found


def jpeg_check(data: bytes) -> None:
    """plain_jpeg answers only for a JPEG whose header Pillow reads at the size it says."""
    found = plain_jpeg(data, MAX_PIXELS)
    if found is not None:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            assert im.size == found[0], (im.size, found)


def wav_header(data: bytes) -> None:
    """wav_info answers (as libsndfile would) or says the file is cut short, nothing else."""
    try:
        found = wav_info(io.BytesIO(data), len(data))
    except SourceError as e:
        assert "cut short" in str(e)
        return
    if found is not None:
        import soundfile

        info = soundfile.info(io.BytesIO(data))
        assert (info.samplerate, info.channels, info.frames) == (found.samplerate, found.channels, found.frames)


def _in_file(data: bytes, suffix: str) -> str:
    fd, path = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def csv_table(data: bytes) -> None:
    """A CSV is rows of the header's width and problems naming their lines, or a SourceError."""
    path = _in_file(data, ".csv")
    try:
        table = csvtable.read(path)
    except SourceError as e:
        assert str(e).startswith(path), e
        return
    finally:
        os.unlink(path)
    assert all(len(row.values) == len(table.header) for row in table.rows)
    assert all(line >= 1 for line, _ in table.problems)


def idx_file(data: bytes) -> None:
    """An idx file decodes to exactly the shape its header declares, or is a SourceError."""
    try:
        array = parse_idx("x.idx", data, 2051, 3)
    except SourceError:
        return
    (count, rows, cols) = struct.unpack(">III", data[4:16]) if data[:2] != b"\x1f\x8b" else array.shape
    assert array.shape == (count, rows, cols)


def example_codec(data: bytes) -> None:
    """Any bytes parse as an Example, or are an ExampleDecodeError (a ValueError), nothing else."""
    try:
        parsed = parse(data)
    except ExampleDecodeError:
        return
    assert isinstance(parsed, dict)


def tfrecord_scan(data: bytes) -> None:
    """The scanner yields records whose bytes are what their framing says, and problems;
    it never raises, and it never yields a record that fails its CRC."""
    path = _in_file(data, ".tfrecord")
    try:
        for item in scan_records(path, "none", max_record=1 << 16):
            if hasattr(item, "data") and item.data is not None:
                payload = bytes(item.data)
                at = item.offset
                head = data[at : at + 8]
                assert struct.unpack("<Q", head)[0] == len(payload)
                assert data[at + 12 + len(payload) : at + 16 + len(payload)] == struct.pack("<I", masked_crc(payload))
    except RecordError:  # (a scan of a plain file yields its problems; it raises none)
        raise AssertionError("the scan raised instead of yielding the problem") from None
    finally:
        os.unlink(path)


def json_nesting(data: bytes) -> None:
    """The nesting found equals a plain walk's, however the file is cut into pieces."""
    expected = _walked(data)
    for piece in (1, 7, 64, 1 << 20):
        found = deepest(io.BytesIO(data), piece)
        assert (found.depth, found.line if found.depth else 0) == expected, (piece, found, expected)


def _walked(data: bytes) -> tuple[int, int]:
    """(deepest, its line) by walking byte by byte: a backslash run escapes a quote when odd."""
    best = (0, 0)
    for number, line in enumerate(data.split(b"\n"), 1):
        depth, inside, escaped = 0, False, False
        for c in line:
            if c == 0x5C:
                escaped = not escaped
                continue
            was, escaped = escaped, False
            if c == 0x22:
                inside = inside if was else not inside
            elif not inside and c in b"[{":
                depth += 1
                if depth > best[0]:
                    best = (depth, number)
            elif not inside and c in b"]}":
                depth -= 1
    return best


PROPERTIES = {
    "png": png_check,
    "jpeg": jpeg_check,
    "wav": wav_header,
    "csv": csv_table,
    "idx": idx_file,
    "example": example_codec,
    "tfrecord": tfrecord_scan,
    "json_nesting": json_nesting,
}


def seeds() -> dict[str, bytes]:
    """A valid input of each kind, for mutation to start from."""
    from PIL import Image

    from tfr_convert.converters.published.idx import idx_bytes
    from tfr_convert.dataset.wire.example import serialize

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (6, 7, 3), dtype=np.uint8)
    png_out, jpeg_out = io.BytesIO(), io.BytesIO()
    Image.fromarray(pixels).save(png_out, "PNG")
    Image.fromarray(pixels).save(jpeg_out, "JPEG")
    samples = np.arange(-20, 20, dtype="<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    body = b"WAVEfmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    record = serialize({"image": b"\x89PNG", "label": 3, "score": [0.5, 1.5], "name": "a"})
    head = struct.pack("<Q", len(record))
    framed = head + struct.pack("<I", masked_crc(head)) + record + struct.pack("<I", masked_crc(record))
    return {
        "png": png_out.getvalue(),
        "jpeg": jpeg_out.getvalue(),
        "wav": b"RIFF" + struct.pack("<I", len(body)) + body,
        "csv": b'a,b,c\n1,"x, y",2.5\n2,z,\n',
        "idx": idx_bytes(rng.integers(0, 256, (3, 4, 5), dtype=np.uint8)),
        "example": record,
        "tfrecord": framed * 3,
        "json_nesting": b'{"a": [1, {"b": "x\\\\\\"[["}], "c": {}}\n[[[]]]\n',
    }
