"""One picture as a dataset stores it, by `--image-format`: its own bytes (keep: checked,
and re-encoded where TensorFlow would not read it upright, unless kept exactly), raw
uint8 pixels, or PNG / JPEG after the decode policy (resize, colour). The one policy
of every converter that stores pictures from files or bytes (images, table)."""

from __future__ import annotations

from dataclasses import dataclass

from .imaging import DEFAULT_CHROMA, Decoded, DecodePolicy, decode, encode, probe, reencode

# What tf.io.decode_image reads; anything else is re-encoded in keep mode.
TF_DECODABLE = ("png", "jpeg", "gif", "bmp")


def not_tf_ready(info: Decoded) -> str | None:
    """Why TensorFlow would not read stored bytes as the picture they are, or None."""
    if info.source_format not in TF_DECODABLE:
        return f"{info.source_format}, which TensorFlow cannot decode"
    if info.orientation != 1:
        return "an EXIF orientation TensorFlow ignores"
    return None


@dataclass(frozen=True)
class Stored:
    data: bytes  # what the image feature holds
    format: str  # png, jpeg, ... (as stored), or raw
    height: int
    width: int
    channels: int
    #: keep mode: why these bytes are not what TensorFlow reads upright (they were then
    #: re-encoded, or kept as they are with keep_exact), else None
    flag: str | None = None


def stored(
    data: bytes,
    where: str,
    image_format: str,
    policy: DecodePolicy,
    quality: int = 95,
    keep_exact: bool = False,
    chroma: str = DEFAULT_CHROMA,
) -> Stored:
    """`data` as `image_format` stores it; SourceError (without `where`: the caller names
    the item) when it is no picture this policy takes. `where` names it in warnings."""
    if image_format == "keep":
        info = probe(data, policy.max_pixels, policy.structural)
        (width, height), channels = info.source_size, info.source_channels
        why = not_tf_ready(info)
        if why is None or keep_exact:
            return Stored(data, info.source_format, height, width, channels, why)
        pixels = decode(data, where, policy).pixels  # stored as TensorFlow will read it: decodable, upright
        fmt = "jpeg" if info.source_format == "jpeg" else "png"
        height, width, channels = pixels.shape
        return Stored(encode(pixels, fmt, quality, chroma), fmt, height, width, channels, why)
    if image_format == "raw":
        pixels = decode(data, where, policy).pixels
        height, width, channels = pixels.shape
        return Stored(pixels.tobytes(), "raw", height, width, channels)
    image, (height, width, channels) = reencode(data, where, policy, image_format, quality, chroma)
    return Stored(image, image_format, height, width, channels)
