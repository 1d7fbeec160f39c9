"""The WAV header reader (converters/media/wav_header.py) against libsndfile: for every file it
reads, the rate, channels, length and sample format soundfile.info gives; every other
file is left to libsndfile (None)."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest

from tfr_convert.converters.media.wav_header import wav_info, wav_samples
from tfr_convert.errors import SourceError

sf = pytest.importorskip("soundfile")


def _info(data: bytes):
    return wav_info(io.BytesIO(data), len(data))


def _libsndfile(data: bytes):
    info = sf.info(io.BytesIO(data))
    return info.samplerate, info.channels, info.frames, info.subtype, info.format


def _written(subtype: str, channels: int, rate: int, frames: int) -> bytes:
    out = io.BytesIO()
    samples = np.random.default_rng(frames).uniform(-0.9, 0.9, (frames, channels))
    sf.write(out, samples, rate, format="WAV", subtype=subtype)
    return out.getvalue()


@pytest.mark.parametrize("subtype", ["PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE"])
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("frames", [0, 1, 16001])
def test_a_plain_wav_reads_as_libsndfile_reads_it(subtype, channels, frames):
    data = _written(subtype, channels, 22050, frames)
    found = _info(data)
    assert found is not None  # the plain files libsndfile writes are read here
    assert tuple(found)[:5] == _libsndfile(data)


def _riff(*chunks: tuple[bytes, bytes]) -> bytes:
    body = b"WAVE" + b"".join(
        name + struct.pack("<I", len(data)) + data + b"\0" * (len(data) & 1) for name, data in chunks
    )
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _fmt(code=1, channels=1, rate=8000, bits=16, extra=b""):
    block = channels * bits // 8
    return b"fmt ", struct.pack("<HHIIHH", code, channels, rate, rate * block, block, bits) + extra


def _of_unknown_length(data: bytes) -> bytes:
    """The data chunk's length as a recorder that never finished writes it: 0xFFFFFFFF."""
    at = data.index(b"data") + 4
    return data[:at] + b"\xff\xff\xff\xff" + data[at + 4 :]


def test_chunks_before_the_data_odd_lengths_and_an_empty_extension_are_walked():
    samples = np.arange(-50, 50, dtype="<i2").tobytes()
    files = [
        _riff(_fmt(), (b"LIST", b"INFOISFT\x03\x00\x00\x00ab\x00"), (b"data", samples)),  # an odd chunk, padded
        _riff((b"junk", b"\x00" * 7), _fmt(channels=2), (b"fact", b"\x00" * 4), (b"data", samples)),
        _riff(_fmt(extra=b"\x00\x00"), (b"data", samples)),  # fmt of 18 bytes, cbSize 0
        _riff(_fmt(), (b"data", samples + b"\x01")),  # an odd byte past the last whole frame
    ]
    for data in files:
        found = _info(data)
        assert found is not None and tuple(found)[:5] == _libsndfile(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            _riff(_fmt(code=0xFFFE, extra=b"\x16\x00" + b"\x00" * 22), (b"data", b"\x00" * 8)), id="extensible"
        ),
        pytest.param(_riff(_fmt(code=6, bits=8), (b"data", b"\x00" * 8)), id="a-law"),
        pytest.param(_riff((b"data", b"\x00" * 8), _fmt()), id="data-before-fmt"),
        pytest.param(_of_unknown_length(_riff(_fmt(), (b"data", b"\x00" * 8))), id="data-of-unknown-length"),
        pytest.param(_riff(_fmt(bits=12), (b"data", b"\x00" * 8)), id="12-bit"),
        pytest.param(b"RF64" + _riff(_fmt(), (b"data", b""))[4:], id="rf64"),
        pytest.param(b"RIFX" + _riff(_fmt(), (b"data", b""))[4:], id="big-endian"),
        pytest.param(_riff(_fmt()), id="no-data"),
        pytest.param(b"fLaC" + b"\x00" * 40, id="not-wav"),
        pytest.param(b"RIFF", id="cut-short"),
    ],
)
def test_any_other_file_is_left_to_libsndfile(data):
    assert _info(data) is None


def test_a_plain_wav_cut_short_is_refused_where_libsndfile_reads_what_is_left():
    data = _riff(_fmt(), (b"data", b"\x00" * 8))[:-4]
    assert sf.info(io.BytesIO(data)).frames == 2  # libsndfile: two frames, no word of the four promised
    with pytest.raises(SourceError, match="cut short: its header promises 4 frames, the file holds 2"):
        _info(data)


@pytest.mark.parametrize("subtype, dtype", [("PCM_16", "int16"), ("PCM_32", "int32"), ("FLOAT", "float32")])
@pytest.mark.parametrize("channels", [1, 2])
def test_samples_stored_in_the_type_asked_are_libsndfiles_samples(subtype, dtype, channels):
    data = _written(subtype, channels, 16000, 4001)
    samples = wav_samples(data, _info(data), dtype)
    expected, _ = sf.read(io.BytesIO(data), dtype=dtype, always_2d=True)
    assert samples is not None and samples.dtype == expected.dtype and samples.shape == expected.shape
    assert np.array_equal(samples, expected)


@pytest.mark.parametrize(
    "subtype, dtype", [("PCM_24", "int32"), ("PCM_U8", "int16"), ("FLOAT", "int16"), ("PCM_16", "float32")]
)
def test_samples_libsndfile_converts_are_left_to_it(subtype, dtype):
    data = _written(subtype, 1, 16000, 10)
    assert wav_samples(data, _info(data), dtype) is None
