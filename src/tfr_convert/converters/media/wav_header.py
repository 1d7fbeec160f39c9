"""A plain WAV file's format read from its header, without libsndfile: what listing a
folder of recordings asks of every file (rate, channels, length, sample format).

Listing opens every file before anything is written; libsndfile's `info` costs a
library open per file, where a PCM or float WAV says all of it in its first chunks.
Only the plain form is read here: RIFF/WAVE, a `fmt ` chunk of integer PCM (8, 16, 24
or 32 bits) or IEEE float (32 or 64 bits) whose block size agrees with its channels
and bits, then a `data` chunk that ends the file, with nothing between them but LIST,
JUNK, PAD, fact and one PEAK chunk (libsndfile reads the others, and the chunks after the
samples, and refuses some: those files are its to judge); one that runs past the end is a file
cut short, refused (libsndfile would read what is left, without a word).
Anything else (RF64, RIFX, WAVE_FORMAT_EXTENSIBLE, compressed codecs, a data chunk of
unknown length, chunks out of order) is None, and the caller asks libsndfile, whose answer stays the
reference (tests/test_wav_header.py holds the two side by side). The samples of such a
file, where they are stored in the type asked for, are read straight from its bytes.
"""

from __future__ import annotations

import struct
from typing import IO, NamedTuple

import numpy as np

from ...errors import SourceError

_CHUNK = struct.Struct("<4sI")
_FMT = struct.Struct("<HHIIHH")
_PCM, _FLOAT = 1, 3
# libsndfile's subtype names, by (format code, bits per sample)
_SUBTYPES = {
    (_PCM, 8): "PCM_U8",
    (_PCM, 16): "PCM_16",
    (_PCM, 24): "PCM_24",
    (_PCM, 32): "PCM_32",
    (_FLOAT, 32): "FLOAT",
    (_FLOAT, 64): "DOUBLE",
}
# a data chunk's length as a recorder writes it before it knows the length (a stream
# never finalised): libsndfile reads such a file to its end
_UNKNOWN_LENGTH = (0xFFFFFFFF,)
# the other chunks walked past before the samples (each from this length up): the ones
# libsndfile passes over whatever they hold; any other (cue, smpl, a second RIFF, a name
# that is no text...) libsndfile reads, and sometimes refuses: then it decides
_PASSED_OVER = {b"LIST": 0, b"JUNK": 0, b"junk": 0, b"PAD ": 0, b"fact": 4}
_MOST_CHUNKS = 64  # chunks walked before the data chunk: past that, libsndfile decides


class WavInfo(NamedTuple):
    """The fields of soundfile.info that listing reads, under the same names."""

    samplerate: int
    channels: int
    frames: int
    subtype: str
    format: str = "WAV"
    offset: int = 0  # where the samples begin in the file


# The subtypes whose samples libsndfile reads, in the type it reads them as, unchanged:
# those are taken straight from the file's bytes (wav_samples).
_AS_STORED = {"PCM_16": "int16", "PCM_32": "int32", "FLOAT": "float32"}


def stored_as(subtype: str, dtype: str) -> bool:
    """Whether a plain WAV of this subtype holds its samples in `dtype` (wav_samples reads them)."""
    return _AS_STORED.get(subtype) == dtype


def wav_samples(data: bytes, info: WavInfo, dtype: str) -> np.ndarray | None:
    """A plain WAV's samples, (frames, channels), as soundfile.read gives them in `dtype`,
    where that is the type they are stored in; else None (libsndfile converts them)."""
    if not stored_as(info.subtype, dtype):
        return None
    samples = np.frombuffer(data, np.dtype(dtype).newbyteorder("<"), info.frames * info.channels, info.offset)
    return samples.reshape(info.frames, info.channels).astype(dtype, copy=False)


def wav_info(f: IO[bytes], size: int) -> WavInfo | None:
    """The format of the plain WAV file `f` (`size` bytes long, read from its start),
    or None for any other file; a SourceError for a plain one cut short."""
    head = f.read(12)
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    fmt: tuple[int, int, int, int, int, int] | None = None
    peaked = False
    at = 12
    for _ in range(_MOST_CHUNKS):
        chunk = f.read(_CHUNK.size)
        if len(chunk) < _CHUNK.size:
            return None
        name, length = _CHUNK.unpack(chunk)
        if name == b"PEAK":  # libsndfile's own, beside float samples: one, of its channels' size
            if fmt is None or peaked or length != 8 + 8 * fmt[1]:
                return None
            peaked = True
        elif name not in (b"data", b"fmt ") and not _PASSED_OVER.get(name, length + 1) <= length:
            return None  # a chunk libsndfile reads and may refuse (a second RIFF, cue, smpl...): it decides
        body = at + _CHUNK.size
        if name == b"data":
            if fmt is None or length in _UNKNOWN_LENGTH:
                return None
            if body + length > size:  # the samples it promises are not all there
                raise SourceError(
                    f"cut short: its header promises {length // fmt[4]} frames, the file holds "
                    f"{max(size - body, 0) // fmt[4]}"
                )
            if body + length + (length & 1) < size:  # chunks after the samples: libsndfile reads and judges them
                return None
            code, channels, rate, _, block, bits = fmt
            return WavInfo(rate, channels, length // block, _SUBTYPES[code, bits], offset=body)
        if name == b"fmt ":
            if fmt is not None or length not in (16, 18):  # 18: an empty cbSize
                return None
            body_bytes = f.read(_FMT.size)
            if len(body_bytes) < _FMT.size:  # cut inside the chunk: libsndfile says what it makes of it
                return None
            fmt = _FMT.unpack(body_bytes)
            code, channels, rate, byte_rate, block, bits = fmt
            if (code, bits) not in _SUBTYPES or not channels or not rate or block != channels * bits // 8:
                return None
            if byte_rate != rate * block:
                return None
        at = body + length + (length & 1)  # chunks are padded to an even length
        if at > size:
            return None
        f.seek(at)
    return None
