"""A folder of recordings -> examples in TFDS's Audio feature, labelled by class folders
or by a CSV.

ROOT/CLASS/file or ROOT/SPLIT/CLASS/file (class_folders.py), or --labels CSV read as
`images --labels` reads one (label_csv.py: a path column, --label-column a ClassLabel,
--split-column, --group-column, the other columns features); files are read with
soundfile (libsndfile: WAV, FLAC, OGG, and MP3 where the installed libsndfile reads it),
imported only once a file or --audio-format needs it: a plain WAV is read from its own
header and samples (wav_header.py).
Every file's header is read while listing (rate, channels, length, sample format), so
what would make one dataset of them impossible is said before anything is written:
two sample rates, two channel counts (without --mono), two sample formats, a file
shorter than --clip-seconds without --pad or --drop.

--audio-format:
  raw (default)  the samples, as TFDS's Audio feature holds them: int16 for integer
                 PCM of up to 16 bits, int32 for wider integer PCM, float32 otherwise
                 (float files, Vorbis, MP3); (samples,) for one channel, (samples,
                 channels) for more, stored row after row.
  bytes          the same samples as one bytes value, row after row, little-endian
                 (TFDS's Audio with encoding BYTES: 2 bytes a 16-bit sample, where an
                 int64 list takes 1 to 10)
  keep           the file's own bytes (TFDS's Audio with lazy decoding, in the file's
                 format).
  wav, flac      the samples re-encoded as 16-bit PCM in that container.
--sample-rate R resamples every recording to R by Fourier (band-limited) resampling:
the recording's spectrum (numpy's real FFT) cut at, or padded with zeros to, the new
length, as scipy.signal.resample does; integer samples rounded and clipped.
--mono averages the channels (rounded to the nearest integer for integer samples);
--clip-seconds S keeps the first S seconds, and pads a shorter file with silence
(--pad) or leaves it out (--drop, listed as skipped).
"""

from __future__ import annotations

import io
import os
from collections.abc import Hashable
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from ...dataset.features import FeatureSpec
from ...dataset.wire.example import MAX_EXAMPLE_BYTES
from ...errors import SourceError
from ...optional import soundfile
from ...storage import fs
from ..base import Converter, SourceContext
from .folders import Labelling, MediaFolder
from .wav_header import stored_as, wav_info, wav_samples

AUDIO_SUFFIXES = (".wav", ".wave", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aiff", ".aif", ".aifc", ".au", ".snd",
                  ".w64", ".caf")  # fmt: skip
AUDIO_FORMATS = ("raw", "bytes", "keep", "wav", "flac")
SAMPLES = ("raw", "bytes")  # the modes that store the samples themselves
SHORTER = ("pad", "drop")
# the features this converter writes: no CSV column may take one of the names
RESERVED = {"audio", "filename", "sample_rate", "channels", "duration"}
# libsndfile's integer PCM subtypes by what they widen to when read whole
_SMALL_INTEGERS = {"PCM_S8", "PCM_U8", "PCM_16", "ULAW", "ALAW", "DWVW_12", "DWVW_16", "DPCM_8", "DPCM_16"}
_WIDE_INTEGERS = {"PCM_24", "PCM_32", "DWVW_24"}


@dataclass(frozen=True)
class AudioOptions(Labelling):
    """What `tfr-convert audio` takes besides the options every converter shares."""

    audio_format: str = "raw"
    mono: bool = False
    clip_seconds: float | None = None
    sample_rate: int | None = None  # every recording resampled to it
    shorter: str | None = None  # pad, drop: what --clip-seconds does with a shorter file

    def problem(self) -> str | None:
        if super().problem() is not None:
            return super().problem()
        if self.audio_format not in AUDIO_FORMATS:
            return f"--audio-format {self.audio_format}: choose {', '.join(AUDIO_FORMATS)}"
        if self.shorter is not None and self.shorter not in SHORTER:
            return f"{self.shorter}: choose --pad or --drop"
        if self.shorter is not None and self.clip_seconds is None:
            return "--pad and --drop say what --clip-seconds does with a shorter file: give --clip-seconds"
        if self.clip_seconds is not None and not self.clip_seconds > 0:
            return f"--clip-seconds {self.clip_seconds:g}: give a length above 0"
        if self.sample_rate is not None and not self.sample_rate > 0:
            return f"--sample-rate {self.sample_rate}: give a rate above 0"
        if self.audio_format == "keep" and (self.mono or self.clip_seconds is not None or self.sample_rate):
            return "--mono, --clip-seconds and --sample-rate change the samples: use --audio-format raw, bytes, wav or flac"
        return None


# what makes recordings that differ in each of these one dataset
_MIXED = {
    "channel count": "--mono makes every recording one channel",
    "sample rate": "--sample-rate R resamples every recording to R",
    "sample format": "--audio-format wav or flac stores every recording as 16-bit PCM",
}


def _libsndfile() -> Any:
    """The soundfile module, imported where a file or format needs it (MissingExtra
    naming the audio extra where it is not installed)."""
    return soundfile("tfr-convert audio")


def _header(f: IO[bytes]) -> Any:
    """A recording's soundfile.info, or as much of it as listing reads: from the header
    itself for a plain WAV (wav_header.py), else from libsndfile; a SourceError where
    neither reads it."""
    size = f.seek(0, io.SEEK_END)
    f.seek(0)
    info = wav_info(f, size)
    if info is None:
        f.seek(0)
        sf = _libsndfile()
        try:
            return sf.info(_Nameless(f))
        except (RuntimeError, TypeError, ValueError) as e:
            raise SourceError(unreadable(e)) from None
    return info


class _Nameless:
    """A file object without its name: libsndfile then tells the format from the bytes,
    never from the name's suffix (a `.raw` one would need a rate given)."""

    def __init__(self, f: IO[bytes]) -> None:
        self.read, self.seek, self.tell = f.read, f.seek, f.tell


def unreadable(e: Exception) -> str:
    """libsndfile's words for a file it cannot read, without the file object's repr
    (soundfile's message repeats it)."""
    words = getattr(e, "error_string", None) or str(e).rsplit(": ", 1)[-1]
    return f"not a recording libsndfile reads ({words.strip().rstrip('.')})"


#: what one value of the samples takes in memory as the encoder holds it, by mode and
#: sample type: an int64 list's values are 8 bytes each before they are packed
_BYTES_PER_VALUE = {"raw": {"int16": 8, "int32": 8, "float32": 4}, "bytes": {"int16": 2, "int32": 4, "float32": 4}}


def samples_dtype(subtype: str) -> str:
    """The dtype a file's samples are stored as in raw mode, by its libsndfile subtype."""
    if subtype in _SMALL_INTEGERS:
        return "int16"
    if subtype in _WIDE_INTEGERS:
        return "int32"
    return "float32"


class AudioConverter(MediaFolder, Converter):
    SUFFIXES, NOUN, RESERVED = AUDIO_SUFFIXES, "recording", frozenset(RESERVED)
    command = "audio"
    description = "Recordings from a folder, labelled by class sub-folders, in TFDS's Audio feature."
    chunk_size = 16

    def __init__(self, root: str, options: AudioOptions | None = None, context: SourceContext | None = None) -> None:
        options = self.begin(options or AudioOptions(), context)
        if options.audio_format in ("wav", "flac"):
            _libsndfile()  # it encodes them: a missing extra is said before listing
        listed, split_of = self._open(root, options)
        heard: dict[str, tuple[Any, str]] = {}  # what the files must share -> (value, the first file with it)
        items = [
            item
            for rel, line, label, extras in listed
            if (item := self._item(root, rel, line, label, extras, options, heard)) is not None
        ]
        if not items:
            raise SourceError(f"{root}: no recordings to convert")
        self._splits = self._split(items, split_of)
        self._folder.listed()
        self._declare_features(items, heard, options)
        self._label_features("audio")

    def _item(
        self, root: str, rel: str, line: Any, label: Any, extras: Any, options: AudioOptions, heard: dict
    ) -> tuple | None:
        """One recording's item, from its header; None where it is rejected (unreadable, too
        large) or dropped (shorter than --clip-seconds with --drop). What every file must
        share with the first (`heard`) is checked here."""
        where = self.describe((rel, line))
        try:
            with fs.open_input(fs.join(root, rel)) as f:
                info = _header(f)
                size = f.seek(0, io.SEEK_END)
        except SourceError as e:
            self.reject(where, str(e))
            return None
        except OSError as e:
            self.reject(where, f"cannot read: {e.strerror or e}")
            return None
        frames = info.frames
        if options.clip_seconds is not None and frames < round(options.clip_seconds * info.samplerate):
            if options.shorter == "drop":
                self.skipped.add(where, f"shorter than --clip-seconds {options.clip_seconds:g} (--drop)")
                return None
            if options.shorter is None:
                raise SourceError(
                    f"{where}: {frames / info.samplerate:g} s, shorter than --clip-seconds "
                    f"{options.clip_seconds:g}: give --pad (silence after it) or --drop (leave such files out)"
                )
        shared = {} if options.sample_rate else {"sample rate": info.samplerate}
        if options.audio_format in SAMPLES:
            shared["sample format"] = samples_dtype(info.subtype)
            if not stored_as(info.subtype, shared["sample format"]):
                _libsndfile()  # it converts them: a missing extra is said now
        too_large = self._too_large(info, size)
        if too_large is not None:
            self.reject(where, too_large)
            return None
        if not options.mono:
            shared["channel count"] = info.channels
        if options.audio_format == "keep":
            shared = {}
        for what, value in shared.items():
            first = heard.setdefault(what, (value, where))
            if first[0] != value:
                raise SourceError(
                    f"{first[1]} and {where} differ in {what} ({first[0]} and {value}): one dataset holds one "
                    f"({_MIXED[what]})"
                )
        return (rel, line, label, extras, info.samplerate, info.channels, info.format)

    def _declare_features(self, items: list[tuple], heard: dict, options: AudioOptions) -> None:
        """The recording (its sample format, and the rate and channels all files share) and
        the figures beside it."""
        # (keep mode requires nothing shared: what all its files share is still said)
        rates, counts, formats = ({item[at] for item in items} for at in (4, 5, 6))
        rate = options.sample_rate or (rates.pop() if len(rates) == 1 else None)
        channels = 1 if options.mono else (counts.pop() if len(counts) == 1 else None)
        self.features = {
            "audio": FeatureSpec.audio(
                heard.get("sample format", ("int16", ""))[0] if options.audio_format != "keep" else "int16",
                channels,
                rate,
                formats.pop().lower() if options.audio_format == "keep" and len(formats) == 1 else None,
                options.audio_format not in SAMPLES,
                raw_bytes=options.audio_format == "bytes",
            ),
            "filename": FeatureSpec.tensor("string"),
            "sample_rate": FeatureSpec.tensor("int64"),
            "channels": FeatureSpec.tensor("int64"),
            "duration": FeatureSpec.tensor("float32"),
        }
        if options.audio_format in ("wav", "flac"):
            self.features["audio"] = FeatureSpec.audio("int16", channels, rate, options.audio_format, True)

    # ------------------------------------------------------------ converter interface

    def features_of(self, item: Hashable) -> dict[str, Any]:
        rel, _, label, extras, rate, channels, _ = item  # type: ignore[misc]
        o = self._o
        filename = rel.replace(os.sep, "/")
        rate = o.sample_rate or rate
        features: dict[str, Any] = {"filename": filename, "sample_rate": rate}
        if o.audio_format == "keep":
            data = self._read(rel)
            frames = _header(io.BytesIO(data)).frames
            features |= {"audio": data, "channels": channels, "duration": frames / rate}
        else:
            with self._open_file(rel) as f:
                samples = self._samples(f)
            features |= {"channels": samples.shape[1], "duration": samples.shape[0] / rate}
            if o.audio_format == "raw":
                features["audio"] = samples[:, 0] if samples.shape[1] == 1 else samples
            elif o.audio_format == "bytes":  # row after row, little-endian, as TFDS decodes them
                features["audio"] = samples.astype(samples.dtype.newbyteorder("<"), copy=False).tobytes()
            else:
                features["audio"] = _encoded(pcm16(samples), rate, o.audio_format)
        return self._labelled(features, label, extras)

    def _too_large(self, info: Any, size: int) -> str | None:
        """Why a recording would make a record over MAX_EXAMPLE_BYTES (what no reader here
        reads by default), said before it is read; or None."""
        o = self._o
        if o.audio_format == "keep":
            kept = size
        else:
            rate = o.sample_rate or info.samplerate
            frames = round(self._clipped(info.frames, info.samplerate) * rate / info.samplerate)
            values = frames * (1 if o.mono else info.channels)
            if o.audio_format in SAMPLES:
                kept = values * _BYTES_PER_VALUE[o.audio_format][samples_dtype(info.subtype)]
            else:
                kept = values * 2  # 16-bit PCM
            if o.clip_seconds is not None and o.shorter == "pad":
                kept = max(kept, kept * round(o.clip_seconds * rate) // max(frames, 1))
        if kept <= MAX_EXAMPLE_BYTES:
            return None
        seconds = info.frames / info.samplerate
        if o.clip_seconds is not None:
            seconds = o.clip_seconds if o.shorter == "pad" else min(seconds, o.clip_seconds)
        longest = seconds * MAX_EXAMPLE_BYTES / kept if o.audio_format != "keep" else None
        hint = (
            f"give --clip-seconds {longest:.0f} or less" if longest and longest >= 1 else "convert shorter recordings"
        )
        return (
            f"{seconds:.0f} s of sound makes a record of about {kept / 2**20:.0f} MiB, over the "
            f"{MAX_EXAMPLE_BYTES >> 20} MiB a record may hold: {hint}, or cut the file"
        )

    def _samples(self, f: IO[bytes]) -> np.ndarray:
        """The file's samples, (frames, channels), clipped, padded and made mono as asked."""
        o = self._o
        samples, stored_rate = self._stored(f)
        rate = o.sample_rate or stored_rate
        if rate != stored_rate:
            samples = resampled(samples, round(len(samples) * rate / stored_rate))
        wanted = len(samples) if o.clip_seconds is None else round(o.clip_seconds * rate)
        samples = samples[:wanted]  # (a resampled clip may round to one sample more)
        if len(samples) < wanted:  # --pad (a shorter file without it was refused while listing)
            samples = np.concatenate([samples, np.zeros((wanted - len(samples), samples.shape[1]), samples.dtype)])
        if o.mono and samples.shape[1] > 1:
            mean = samples.astype(np.float64).mean(axis=1, keepdims=True)
            samples = np.rint(mean).astype(samples.dtype) if samples.dtype.kind == "i" else mean.astype(samples.dtype)
        return samples

    def _stored(self, f: IO[bytes]) -> tuple[np.ndarray, int]:
        """(the file's samples as read, up to --clip-seconds; its sample rate): straight
        from a plain WAV's bytes where they are stored in the type wanted, else decoded
        by libsndfile; only the frames kept are read."""
        size = f.seek(0, io.SEEK_END)
        f.seek(0)
        header = wav_info(f, size)
        if header is not None:
            dtype = self._read_as(header.subtype)
            if stored_as(header.subtype, dtype):
                frames = self._clipped(header.frames, header.samplerate)
                f.seek(header.offset)
                data = f.read(frames * header.channels * np.dtype(dtype).itemsize)
                if len(data) < frames * header.channels * np.dtype(dtype).itemsize:
                    raise SourceError("shorter than when it was listed (changed since?)")
                samples = wav_samples(data, header._replace(frames=frames, offset=0), dtype)
                if samples is not None:
                    return samples, header.samplerate
        f.seek(0)
        sf = _libsndfile()
        try:
            with sf.SoundFile(_Nameless(f)) as sound:
                dtype = self._read_as(sound.subtype)
                frames = self._clipped(sound.frames, sound.samplerate)
                return sound.read(frames, dtype=dtype, always_2d=True), sound.samplerate
        except (RuntimeError, TypeError, ValueError) as e:
            raise SourceError(unreadable(e)) from None

    def _read_as(self, subtype: str) -> str:
        """The type a file's samples are read in: raw and bytes store them as read; wav and
        flac re-encode 16-bit PCM, from integers as libsndfile scales them, from floats
        read as floats (libsndfile would cast those to int16 unscaled: -1, 0, 1)."""
        stored = samples_dtype(subtype)
        if self._o.audio_format in SAMPLES:
            return stored
        return "float32" if stored == "float32" else "int16"

    def _clipped(self, frames: int, rate: int) -> int:
        """How many of a file's frames are read: up to --clip-seconds."""
        clip = self._o.clip_seconds
        return frames if clip is None else min(frames, round(clip * rate))

    def recorded_options(self) -> dict[str, Any]:
        o = self._o
        return {
            "audio_format": o.audio_format,
            "mono": o.mono,
            "clip_seconds": o.clip_seconds,
            "sample_rate": o.sample_rate,
            "shorter": o.shorter,
            **o.described(),
        }


def resampled(samples: np.ndarray, length: int) -> np.ndarray:
    """(frames, channels) samples resampled to `length` frames by their spectrum: cut, or
    padded with zeros (numpy's real FFT; scipy.signal.resample's method, the Nyquist
    bin of an even length halved as it does); integers rounded and clipped to their type."""
    n = len(samples)
    if n == 0 or length == n:
        return samples
    spectrum = np.fft.rfft(samples.astype(np.float64), axis=0)
    kept = min(n, length) // 2 + 1
    out = np.zeros((length // 2 + 1, samples.shape[1]), complex)
    out[:kept] = spectrum[:kept]
    if min(n, length) % 2 == 0:  # the Nyquist bin of the shorter length is shared by two halves
        out[kept - 1] *= 0.5 if length > n else 2.0
    waves = np.fft.irfft(out, n=length, axis=0) * (length / n)
    if samples.dtype.kind == "i":
        info = np.iinfo(samples.dtype)
        return np.clip(np.rint(waves), info.min, info.max).astype(samples.dtype)
    return waves.astype(samples.dtype)


def pcm16(samples: np.ndarray) -> np.ndarray:
    """Samples as 16-bit integers: float ones (full scale +-1.0) scaled by 32767 and
    rounded, as libsndfile writes floats into 16-bit PCM, and clipped at full scale
    (where libsndfile, unclipped, would wrap a value past it round to the other sign)."""
    if samples.dtype == np.int16:
        return samples
    return np.clip(np.rint(samples.astype(np.float64) * 32767), -32768, 32767).astype(np.int16)


def _encoded(samples: np.ndarray, rate: int, container: str) -> bytes:
    """16-bit PCM samples in a WAV or FLAC file's bytes."""
    sf = _libsndfile()
    out = io.BytesIO()
    sf.write(out, samples, rate, format=container.upper(), subtype="PCM_16")
    return out.getvalue()
