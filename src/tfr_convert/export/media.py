"""--to audio|video: each record's recording or clip back to a file, in the layouts of
--to images (images.py: class folders, or beside one labels.csv), named by the record's
`filename` with the suffix of what is written.

- audio: a file kept as it was (keep, wav, flac modes) is written as stored, its name
  unchanged; samples (raw mode) become a WAV of their own type (16-bit PCM for int16,
  32-bit PCM for int32, 32-bit float for float32) at the record's `sample_rate` (else
  the feature's), in as many channels as it has. A 16-bit recording converted in raw mode
  comes back byte for byte as libsndfile writes it; so do samples held as one bytes
  value (bytes mode).
- video: the frames become one clip, FFV1 (lossless) in Matroska (`.mkv`), at the
  record's `fps` (else 25), so that `tfr-convert video` on the export decodes the very
  frames again (PNG frames: the same bytes).
"""

from __future__ import annotations

import dataclasses
import io
from fractions import Fraction
from typing import Any

import numpy as np

from ..dataset.wire.example import BYTES
from ..errors import OptionError, SourceError
from ..optional import av, soundfile
from . import MEDIA
from .images import Plan, plan
from .source import ExportSource

__all__ = ["MEDIA", "media_file", "media_plan"]
_SUBTYPES = {"int16": "PCM_16", "int32": "PCM_32", "float32": "FLOAT"}
_KEPT = {b"RIFF": "wav", b"fLaC": "flac", b"OggS": "ogg", b"FORM": "aiff"}
# the features `tfr-convert audio|video` writes of the file itself, besides it and its filename
_OWN = {"audio": ("sample_rate", "channels", "duration"), "video": ("fps", "frames")}


def media_plan(source: ExportSource, target: str, layout: str | None, feature: str | None, label: str | None) -> Plan:
    """--to images' plan for the dataset's Audio or Video feature (or `feature`)."""
    described = source.dataset.flat_features if source.dataset is not None else {}
    kind = {"audio": "audio_feature.Audio", "video": "video_feature.Video"}[target]
    features = [n for n, (d, per_object, _) in described.items() if d.get("pythonClassName", "").endswith(kind)]
    feature = feature or (features[0] if features else None)
    if feature is None:
        raise SourceError(f"no {target} feature in the dataset's features.json: name one with --image-feature")
    if layout == "masks":
        raise OptionError(f"--layout masks is for --to images, not --to {target}")
    description = described.get(feature, ({}, False, ""))[0].get(target) or {}
    dims = [int(d) for d in (description.get("shape") or {}).get("dimensions", [])]
    own = set(_OWN[target])  # what the file itself holds: no CSV column, not left out
    chosen = plan(source, layout or "csv", feature, label)
    if layout is None and chosen.label is not None and not set(chosen.columns) - own:
        folders = plan(source, "folders", feature, label)  # a class label and nothing else to keep
        chosen = chosen if folders.notes else folders  # ... unless they would not come back as they were
    return dataclasses.replace(
        chosen,
        render=media_file,
        columns=[c for c in chosen.columns if c not in own],
        left_out=[c for c in chosen.left_out if c not in own],
        media=target,
        media_dtype=description.get("dtype", "int16"),
        media_channels=dims[1] if target == "audio" and len(dims) == 2 and dims[1] > 0 else 1,
        media_rate=int(description.get("sampleRate") or 0),
        media_packed=str(description.get("encoding", "")).upper() == "BYTES",
    )


def media_file(example: dict, plan: Plan) -> tuple[bytes, str, bool]:
    """(file bytes, extension, whether they were made here rather than kept) of one record."""
    kind, values = example.get(plan.image, (None, []))
    if not values:
        raise SourceError(f"no {plan.media} in {plan.image!r}")
    if plan.media == "audio":
        if kind == BYTES and len(values) != 1:
            raise SourceError(f"{plan.image!r} holds {len(values)} values, not one")
        if kind == BYTES and not plan.media_packed:
            return values[0], _KEPT.get(values[0][:4], "bin"), False
        return _wav(values, example, plan), "wav", True
    return _clip([v for v in values if isinstance(v, bytes)], example), "mkv", True


def _one(example: dict, name: str) -> Any:
    values = example.get(name, (None, []))[1]
    return values[0] if len(values) == 1 else None


def _wav(values: list[Any], example: dict, plan: Plan) -> bytes:
    sf = soundfile("tfr-export --to audio")
    rate = _one(example, "sample_rate") or plan.media_rate
    channels = _one(example, "channels") or plan.media_channels
    if not rate:
        raise SourceError("no sample rate (a sample_rate feature, or the feature's sampleRate)")
    dtype = plan.media_dtype if plan.media_dtype in _SUBTYPES else "float32"
    samples = (
        np.frombuffer(values[0], np.dtype(dtype).newbyteorder("<")) if plan.media_packed else np.asarray(values, dtype)
    )
    if len(samples) % channels:
        raise SourceError(f"{len(samples)} samples do not make {channels} channels")
    out = io.BytesIO()
    sf.write(out, samples.reshape(-1, channels), int(rate), format="WAV", subtype=_SUBTYPES[dtype])
    return out.getvalue()


def _clip(frames: list[bytes], example: dict) -> bytes:
    lib = av("tfr-export --to video")
    from PIL import Image

    rate = _one(example, "fps") or 25
    out = io.BytesIO()
    with lib.open(out, "w", format="matroska") as container:
        stream = container.add_stream("ffv1", rate=Fraction(float(rate)).limit_denominator(1001))
        for n, data in enumerate(frames):
            try:
                with Image.open(io.BytesIO(data)) as im:
                    pixels = np.asarray(im.convert("RGB"))
            except (OSError, ValueError) as e:
                raise SourceError(f"frame {n} is no picture ({e})") from None
            if n == 0:
                stream.width, stream.height, stream.pix_fmt = pixels.shape[1], pixels.shape[0], "bgr0"
            container.mux(stream.encode(lib.VideoFrame.from_ndarray(pixels, format="rgb24")))
        container.mux(stream.encode())
    return out.getvalue()
