"""A folder of clips -> examples in TFDS's Video feature (a sequence of encoded frames),
labelled by class folders or by a CSV.

ROOT/CLASS/clip or ROOT/SPLIT/CLASS/clip (class_folders.py), or --labels CSV as `audio`
and `images` read one (folders.py). Clips are decoded with PyAV (FFmpeg in its
wheels: the `[video]` extra): the first video stream of each, every frame as RGB.
Every clip is opened while listing (its stream, size and frame rate), so a file that
is not a clip is said before anything is written (exit 1 naming it, or left out under
--on-error skip); a clip damaged past its header fails when it is converted, naming it.

Frames are stored one by one as PNG (lossless, the default) or JPEG (--frame-format,
--quality), TFDS's Video: one bytes value per frame, shape (frames, height, width, 3).
--fps F resamples by timestamps: frame k of the output, at k/F seconds after the clip's
first frame, is the last frame shown at that time (frames repeat when F is above the
clip's rate and are dropped when below), while k/F is before the clip's end (its last
frame's time plus one frame's duration). --max-frames N keeps the first N (decoding
stops there). --resize WxH (with --fit) makes every frame that size, as `images`
resizes a picture. A worker holds one clip's encoded frames at a time, never its
decoded ones: each frame is encoded as soon as it is decoded.
"""

from __future__ import annotations

import io
import itertools
import os
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ...dataset.features import FeatureSpec
from ...dataset.wire.example import MAX_EXAMPLE_BYTES
from ...dataset.wire.sequence_example import serialize_sequence
from ...errors import SourceError
from ...optional import av
from ...pictures.imaging import DEFAULT_CHROMA, encode, fitted
from ...storage import fs
from ..base import Converter, SourceContext
from .folders import Labelling, MediaFolder

VIDEO_SUFFIXES = (".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm", ".mpg", ".mpeg", ".wmv", ".flv", ".ogv", ".3gp")
FRAME_FORMATS = ("png", "jpeg")
FITS = ("stretch", "crop", "pad")
# the features this converter writes: no CSV column may take one of the names
RESERVED = {"video", "filename", "fps", "frames"}


@dataclass(frozen=True)
class VideoOptions(Labelling):
    """What `tfr-convert video` takes besides the options every converter shares."""

    frame_format: str = "png"
    quality: int = 95
    chroma: str = DEFAULT_CHROMA  # JPEG frames' chroma subsampling
    fps: float | None = None
    max_frames: int | None = None
    resize: tuple[int, int] | None = None  # (width, height)
    fit: str = "stretch"
    as_sequence: bool = False  # one SequenceExample per clip instead of an Example

    def problem(self) -> str | None:
        if super().problem() is not None:
            return super().problem()
        if self.frame_format not in FRAME_FORMATS:
            return f"--frame-format {self.frame_format}: choose {', '.join(FRAME_FORMATS)}"
        if self.fit not in FITS:
            return f"--fit {self.fit}: choose {', '.join(FITS)}"
        if not 1 <= self.quality <= 100:
            return f"--quality {self.quality}: give 1 to 100"
        if self.fps is not None and not self.fps > 0:
            return f"--fps {self.fps:g}: give a rate above 0"
        if self.max_frames is not None and self.max_frames < 1:
            return f"--max-frames {self.max_frames}: give 1 or more"
        if self.resize is not None and min(self.resize) < 1:
            return f"--resize {self.resize[0]}x{self.resize[1]}: give a size of 1x1 or more"
        return None


class VideoConverter(MediaFolder, Converter):
    SUFFIXES, NOUN, RESERVED = VIDEO_SUFFIXES, "clip", frozenset(RESERVED)
    command = "video"
    description = "Clips from a folder, labelled by class sub-folders, in TFDS's Video feature."
    chunk_size = 1  # a clip is many frames' work: one a batch, so a worker holds one clip's frames

    def __init__(self, root: str, options: VideoOptions | None = None, context: SourceContext | None = None) -> None:
        options = self.begin(options or VideoOptions(), context)
        av("tfr-convert video")  # (before listing: a missing extra is said first)
        listed, split_of = self._open(root, options)
        items, sizes = [], set()
        for rel, line, label, extras in listed:
            where = self.describe((rel, line))
            try:
                with fs.open_input(fs.join(root, rel)) as f:
                    width, height = _probe(f)
            except SourceError as e:
                self.reject(where, str(e))
                continue
            sizes.add((width, height))
            items.append((rel, line, label, extras))
        if not items:
            raise SourceError(f"{root}: no clips to convert")
        self._splits = self._split(items, split_of)
        self._folder.listed()
        size = options.resize or (sizes.pop() if len(sizes) == 1 else None)
        shape = (None, size[1], size[0], 3) if size else (None, None, None, 3)
        if options.as_sequence:
            self._sequence_features()
            return
        self.features = {
            "video": FeatureSpec.video(shape, options.frame_format),
            "filename": FeatureSpec.tensor("string"),
            "fps": FeatureSpec.tensor("float32"),
            "frames": FeatureSpec.tensor("int64"),
        }
        self._label_features("video")

    def _sequence_features(self) -> None:
        """What the metadata says of SequenceExamples: their context, as TFDS reads it (an
        Example parser takes a SequenceExample's context and passes over its frames)."""
        self.serialized = True  # features_of gives each record's bytes
        self.nested_features = True  # clip/..., image/...
        self.features = {
            "clip/data_path": FeatureSpec.tensor("string"),
            "clip/frames": FeatureSpec.tensor("int64"),
            "image/format": FeatureSpec.tensor("string"),
            "image/frame_rate": FeatureSpec.tensor("float32"),
            "image/height": FeatureSpec.tensor("int64"),
            "image/width": FeatureSpec.tensor("int64"),
        }
        if self.label_feature is not None:
            names = self.labels.pop(self.label_feature)
            self.label_feature = "clip/label/index"
            self.labels[self.label_feature] = names
            self.features["clip/label/index"] = FeatureSpec.class_label(len(names))
            self.features["clip/label/string"] = FeatureSpec.tensor("string")
        for name, dtype in self.columns:
            self.features[name] = FeatureSpec.tensor(dtype)

    # ------------------------------------------------------------ converter interface

    def features_of(self, item: Hashable) -> dict[str, Any]:
        rel, _, label, extras = item  # type: ignore[misc]
        o = self._o
        encoded: list[bytes] = []
        times: list[int] = []  # microseconds after the first frame
        size = (0, 0)
        last: tuple[int, bytes] | None = None  # a frame shown again (--fps above the clip's rate) is encoded once
        held = 0  # bytes of encoded frames: one record holds at most MAX_EXAMPLE_BYTES
        with self._open_file(rel) as f:
            tally: dict[str, int] = {}
            frames, rate = clip_frames(f, o.fps, o.max_frames, tally)
            for number, time, pixels in frames:
                if last is None or last[0] != number:
                    if o.resize is not None:
                        pixels = fitted(pixels, o.resize, o.fit, (0, 0, 0))
                    last, size = (number, encode(pixels, o.frame_format, o.quality, o.chroma)), pixels.shape[:2]
                held += len(last[1])
                if held > MAX_EXAMPLE_BYTES:
                    raise SourceError(
                        f"frame {len(encoded) + 1}: the clip's frames pass {MAX_EXAMPLE_BYTES >> 20} MiB, what a "
                        "record may hold: give --max-frames, --fps or --resize (or a lower --quality)"
                    )
                encoded.append(last[1])
                times.append(round(time * 1e6))
        if not encoded:
            raise SourceError("no frames decoded")
        if tally.get("listed", 0) > tally.get("decoded", 0):  # (a cut faststart MP4 still lists them all)
            raise SourceError(f"cut short: it lists {tally['listed']} frames, {tally['decoded']} decode")
        if o.as_sequence:
            return self._sequence(rel, label, extras, encoded, times, size, float(o.fps or rate))  # type: ignore[return-value]
        features: dict[str, Any] = {
            "video": encoded,
            "filename": rel.replace(os.sep, "/"),
            "fps": float(o.fps or rate),
            "frames": len(encoded),
        }
        return self._labelled(features, label, extras)

    def _sequence(
        self, rel: str, label: Any, extras: tuple, frames: list[bytes], times: list[int], size: tuple, rate: float
    ) -> bytes:
        """The clip as a SequenceExample: MediaPipe's keys (frames and their times in
        feature lists, the rest in the context)."""
        context = {
            "clip/data_path": rel.replace(os.sep, "/"),
            "clip/frames": len(frames),
            "image/format": self._o.frame_format,
            "image/frame_rate": rate,
            "image/height": int(size[0]),
            "image/width": int(size[1]),
        }
        if self.label_feature is not None:
            context |= {"clip/label/index": label, "clip/label/string": self.labels[self.label_feature][label]}
        for (name, _), value in zip(self.columns, extras, strict=True):
            context[name] = value
        return serialize_sequence(context, {"image/encoded": frames, "image/timestamp": times})

    def recorded_options(self) -> dict[str, Any]:
        o = self._o
        return {
            "as": "sequence-example" if o.as_sequence else "example",
            "frame_format": o.frame_format,
            "quality": o.quality if o.frame_format == "jpeg" else None,
            "chroma": o.chroma if o.frame_format == "jpeg" else None,
            "fps": o.fps,
            "max_frames": o.max_frames,
            "resize": list(o.resize) if o.resize else None,
            "fit": o.fit if o.resize else None,
            **o.described(),
        }


def _opened(source: Any) -> tuple[Any, Any]:
    """(the container, its first video stream) of a clip (a file object); SourceError
    where PyAV cannot open it or it has no video stream."""
    lib = av("tfr-convert video")
    try:
        container = lib.open(source)
    except (lib.FFmpegError, OSError, ValueError) as e:  # (an empty file is an OSError of its own)
        raise SourceError(f"not a clip PyAV reads ({e})") from None
    if not container.streams.video:
        container.close()
        raise SourceError("no video stream in it")
    return container, container.streams.video[0]


def _probe(f: Any) -> tuple[int, int]:
    """(width, height) of a clip's first video stream."""
    container, stream = _opened(f)
    with container:
        return stream.codec_context.width, stream.codec_context.height


def clip_frames(
    source: Any, fps: float | None, max_frames: int | None, tally: dict[str, int] | None = None
) -> tuple[Iterator[tuple[int, float, np.ndarray]], Fraction]:
    """(the frames to store: (number of the source frame, seconds after the first frame,
    RGB pixels) each, in order; the stream's frame rate). With `fps` a source frame may
    come several times or not at all (see the module's note); decoding stops after
    `max_frames` (the generator is closed, and the clip with it). `tally`, where given,
    gets the frames the container lists and those decoded, once the clip is decoded to
    its end."""
    lib = av("tfr-convert video")
    container, stream = _opened(io.BytesIO(source) if isinstance(source, bytes) else source)
    rate = stream.average_rate or stream.guessed_rate or Fraction(25)
    # One converter to RGB for the clip: a frame's own to_ndarray sets up a new one for
    # every frame, which costs several times the decode itself (the pixels are the same).
    reformatter = lib.video.reformatter.VideoReformatter()

    def rgb(frame: Any) -> np.ndarray:
        return reformatter.reformat(frame, format="rgb24").to_ndarray()

    def decoded() -> Iterator[tuple[int, float, Any]]:
        number = 0
        try:
            for frame in container.decode(stream):
                yield number, (frame.time if frame.time is not None else number / rate), frame
                number += 1
            if tally is not None:  # decoded to its end: what the container listed, against what came
                tally.update(listed=stream.frames, decoded=number)
        except (lib.FFmpegError, ValueError) as e:
            raise SourceError(f"cannot decode frame {number + 1}: {e}") from None
        finally:
            container.close()

    def chosen() -> Iterator[tuple[int, float, np.ndarray]]:
        start: float | None = None
        if fps is None:
            for number, time, frame in decoded():
                start = time if start is None else start
                yield number, time - start, rgb(frame)
            return
        count = 0
        shown: tuple[int, float, Any] | None = None  # the frame on screen
        for number, time, frame in decoded():
            start = time if start is None else start
            # the output times before this frame's own are the frame before it's
            while shown is not None and start + count / fps < time - 1e-9:
                yield shown[0], count / fps, rgb(shown[2])
                count += 1
            shown = (number, time, frame)
        if shown is None:
            return
        end = shown[1] + 1 / float(rate)  # the last frame is shown for one frame's time
        while start is not None and start + count / fps < end - 1e-9:
            yield shown[0], count / fps, rgb(shown[2])
            count += 1

    return itertools.islice(chosen(), max_frames), rate
