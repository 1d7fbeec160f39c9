"""A recording drawn for --grid and --report: its waveform, channel by channel.

Which features are sound comes from the dataset's features.json (TFDS's Audio, holding
samples, as a list or as one bytes value: a lazily decoded file's bytes are not drawn);
the samples are what the record holds, flat, `channels` to a frame.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...dataset.existing import ExistingDataset

WIDTH, HEIGHT = 192, 96
BACKGROUND, WAVE, AXIS = (255, 255, 255), (31, 119, 180), (200, 200, 200)


class Sound(NamedTuple):
    channels: int
    packed: str | None  # the samples' dtype where they are one bytes value (encoding BYTES), else None


def audio_features(dataset: ExistingDataset) -> dict[str, Sound]:
    """{feature: Sound} of the dataset's sound features that hold samples."""
    features = {}
    for name, (description, per_object, _) in dataset.flat_features.items():
        audio = (
            description.get("audio") if description.get("pythonClassName", "").endswith("audio_feature.Audio") else None
        )
        if isinstance(audio, dict) and not audio.get("lazyDecode") and not per_object:
            dimensions = (audio.get("shape") or {}).get("dimensions") or ["-1"]
            channels = int(dimensions[1]) if len(dimensions) == 2 and int(dimensions[1]) > 0 else 1
            packed = str(audio.get("dtype", "int16")) if str(audio.get("encoding", "")).upper() == "BYTES" else None
            features[name] = Sound(channels, packed)
    return features


def samples_of(values: list[Any], sound: Sound) -> list[Any] | np.ndarray:
    """A record's samples, flat: its list, or its one bytes value read as little-endian `packed`."""
    if sound.packed is None:
        return values
    return np.frombuffer(values[0], np.dtype(sound.packed).newbyteorder("<")) if values else np.zeros(0)


def waveform(values: list[Any] | np.ndarray, channels: int) -> np.ndarray:
    """(HEIGHT, WIDTH, 3) uint8: each channel in a band of its own, its samples' least and
    greatest in each column joined by a line, scaled to the recording's own peak."""
    samples = np.asarray(values, np.float64)
    frames = len(samples) // max(channels, 1)
    samples = samples[: frames * channels].reshape(frames, channels) if frames else np.zeros((0, channels))
    pixels = np.empty((HEIGHT, WIDTH, 3), np.uint8)
    pixels[:] = BACKGROUND
    peak = float(np.abs(samples).max()) if samples.size else 0.0
    band = HEIGHT // max(channels, 1)
    for c in range(channels):
        middle = c * band + band // 2
        pixels[middle, :] = AXIS
        if not frames or peak == 0:
            continue
        edges = np.linspace(0, frames, WIDTH + 1).astype(int)
        for x in range(WIDTH):
            part = samples[edges[x] : max(edges[x + 1], edges[x] + 1), c]
            if not len(part):
                continue
            top = middle - round(float(part.max()) / peak * (band // 2 - 1))
            bottom = middle - round(float(part.min()) / peak * (band // 2 - 1))
            pixels[top : bottom + 1, x] = WAVE
    return pixels
