"""Image decoding and encoding shared by converters. Pillow is imported only when called.

Decoding is deliberate about every odd case a real folder holds: the format
comes from the bytes, not the extension; the pixel count is checked from the
header before anything is decoded (decompression bombs); EXIF orientation is
applied; CMYK, palette, bilevel and YCbCr become RGB or L; alpha is blended
onto a stated background; 16-bit samples are scaled to 8 bits, not clipped;
an animation gives its first frame and a warning. What comes out is always
uint8 with 1 (L) or 3 (RGB) channels.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np

from ..dataset.imageformat import sniff_format
from ..errors import SourceError
from .jpeg_check import plain_jpeg
from .png_check import plain_png

DEFAULT_MAX_PIXELS = 89_478_485  # Pillow's own threshold: 0.25 GiB as 24-bit RGB
# JPEG chroma subsampling, as Pillow's `subsampling` names it. 4:2:0 is what
# tf.io.encode_jpeg (TFDS's Image and Video features) and Pillow write by default;
# 4:4:4 keeps full colour resolution, larger and slower to encode.
CHROMAS = {"4:2:0": 2, "4:4:4": 0}
DEFAULT_CHROMA = "4:2:0"
# tf.image.rgb_to_grayscale's weights (ITU-R BT.601 luma)
_LUMA = np.array([0.2989, 0.5870, 0.1140], dtype=np.float32)


@dataclass(frozen=True)
class DecodePolicy:
    max_pixels: int = DEFAULT_MAX_PIXELS
    background: tuple[int, int, int] = (255, 255, 255)
    grayscale: bool = False
    gray_method: str = "luma"  # "luma" as tf.image.rgb_to_grayscale, "mean" as the face/age tutorial
    resize: tuple[int, int] | None = None  # (width, height)
    rgb: bool = False  # gray sources get three equal channels, so a mixed folder has one shape
    fit: str = "stretch"  # with resize: "stretch" to WxH, "crop" to cover it, "pad" to fit inside it
    structural: bool = True  # keep mode checks plain JPEGs and PNGs by their structure (--check structure)

    @property
    def channels(self) -> int | None:
        """What every decoded image will have, when the policy decides it."""
        return 1 if self.grayscale else 3 if self.rgb else None


@dataclass
class Decoded:
    pixels: np.ndarray  # uint8, (H, W, 1) or (H, W, 3)
    source_format: str
    source_size: tuple[int, int]  # (width, height) as stored
    source_channels: int
    orientation: int = 1  # EXIF orientation as stored (1: upright)


_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"  # the IEND chunk: no data, always this CRC


def open_image(data: bytes, max_pixels: int):
    """A lazily decoded Pillow image, its header checked: no pixel is decoded before its
    size is known to be within `max_pixels` (a decompression bomb is one SourceError)."""
    from PIL import Image, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = None  # our own --max-pixels check below replaces Pillow's
    if not data:
        raise SourceError("empty file (0 bytes)")
    try:
        im = Image.open(io.BytesIO(data))
    except UnidentifiedImageError:
        raise SourceError("not an image (unrecognised content)") from None
    except (OSError, ValueError, SyntaxError) as e:
        raise SourceError(f"unreadable image header: {e}") from None
    width, height = im.size
    if width * height > max_pixels:
        raise SourceError(
            f"{width}x{height} = {width * height} pixels exceeds --max-pixels {max_pixels} "
            "(possible decompression bomb; raise --max-pixels to allow it)"
        )
    if im.format == "PNG" and _PNG_END not in data:
        # Pillow decodes the rows it finds and asks no more: a file cut after its last
        # image data (its IDAT's CRC or its IEND lost) would pass as whole
        raise SourceError("cannot decode png image: cut short, it ends before its IEND chunk")
    return im


def _bands(im) -> int:
    if im.mode == "P":
        return 4 if "transparency" in im.info else 3
    return len(im.getbands())


def probe(data: bytes, max_pixels: int = DEFAULT_MAX_PIXELS, structural: bool = True) -> Decoded:
    """Check an image decodes fully (catches truncation) without converting it.

    Errors are SourceErrors stating the problem; the caller names the file.
    The pixels of the result are not filled (an empty array): for --image-format keep.
    A PNG in its plainest form (png_check) and a plain JPEG (jpeg_check) are checked
    from their structure, without decoding; any other file, or every file when not
    `structural` (--check decode), by `probe_with_pillow`.
    """
    if structural:
        if data.startswith(b"\xff\xd8"):
            jpeg = plain_jpeg(data, max_pixels)
            if jpeg is not None:
                size, bands, orientation = jpeg
                return Decoded(_NO_PIXELS, "jpeg", size, bands, orientation)
        else:
            plain = plain_png(data, max_pixels)
            if plain is not None:
                size, bands = plain
                return Decoded(_NO_PIXELS, "png", size, bands)
    return probe_with_pillow(data, max_pixels)


_NO_PIXELS = np.empty((0, 0, 1), np.uint8)
_NO_PIXELS.flags.writeable = False


def probe_with_pillow(data: bytes, max_pixels: int = DEFAULT_MAX_PIXELS) -> Decoded:
    """`probe` by Pillow's open and load, whatever the format."""
    im = open_image(data, max_pixels)
    fmt = sniff_format(data) or (im.format or "unknown").lower()
    size, bands = im.size, _bands(im)
    try:
        orientation = im.getexif().get(0x0112, 1)
        if im.format == "JPEG":
            # At 1/8 scale libjpeg still decodes every entropy-coded block (a truncated or
            # cut-short file fails exactly as at full size) but skips most of the inverse
            # DCT and colour conversion: the check costs a fraction of a full decode.
            im.draft(im.mode, (max(1, size[0] // 8), max(1, size[1] // 8)))
        im.load()
    except (OSError, ValueError, SyntaxError) as e:
        raise SourceError(f"cannot decode {fmt} image: {e}") from None
    return Decoded(_NO_PIXELS, fmt, size, bands, orientation if orientation in range(1, 9) else 1)


def decode(data: bytes, where: str, policy: DecodePolicy) -> Decoded:
    """Decode, normalize and transform an image per the policy; uint8 (H, W, 1 or 3).

    `where` names the image in warnings (they travel without the caller's context).
    """
    im, fmt, size, bands = _upright(data, where, policy)
    return Decoded(_policy_pixels(im, fmt, policy), fmt, size, bands)


def _policy_pixels(im, fmt: str, policy: DecodePolicy) -> np.ndarray:
    """An upright Pillow image as uint8 (H, W, 1 or 3), resized and coloured per the policy."""
    try:
        pixels = _to_uint8(im, policy.background)
    except (OSError, ValueError, SyntaxError) as e:
        raise SourceError(f"cannot decode {fmt} image: {e}") from None
    if policy.resize is not None:
        pixels = fitted(pixels, policy.resize, policy.fit, policy.background)
    if policy.grayscale and pixels.shape[2] == 3:
        pixels = to_gray(pixels, policy.gray_method)
    elif policy.rgb and pixels.shape[2] == 1:
        pixels = np.repeat(pixels, 3, axis=2)
    return pixels


def _upright(data: bytes, where: str, policy: DecodePolicy):
    """(the first frame decoded and turned upright, format, size as stored, bands)."""
    from PIL import ImageOps

    im = open_image(data, policy.max_pixels)
    fmt = sniff_format(data) or (im.format or "unknown").lower()
    size, bands = im.size, _bands(im)
    try:
        frames = getattr(im, "n_frames", 1)
        if frames > 1:
            warnings.warn(f"{where}: animated {fmt} with {frames} frames; took frame 0", stacklevel=3)
            im.seek(0)
        im.load()
        ImageOps.exif_transpose(im, in_place=True)  # an upright image is not copied
        return im, fmt, size, bands
    except (OSError, ValueError, SyntaxError) as e:
        raise SourceError(f"cannot decode {fmt} image: {e}") from None


def reencode(
    data: bytes, where: str, policy: DecodePolicy, fmt: str, quality: int = 95, chroma: str = DEFAULT_CHROMA
) -> tuple[bytes, tuple[int, ...]]:
    """(encode(decode(data, where, policy).pixels, fmt, quality), the pixels' shape),
    staying in Pillow where that gives the same pixels: an 8-bit RGB or L source, not
    made grayscale (whose TensorFlow rounding is numpy's). The numpy round trips of the
    general path (decode, resize, encode) cost about a millisecond an image; the result
    is the same bytes (tests/test_images.py holds both paths to it)."""
    im, source_format, _, _ = _upright(data, where, policy)
    if im.mode not in ("RGB", "L") or policy.grayscale:
        pixels = _policy_pixels(im, source_format, policy)
        return encode(pixels, fmt, quality, chroma), pixels.shape
    if policy.resize is not None:
        im = _fit(im, policy.resize, policy.fit, policy.background)
    if policy.rgb and im.mode == "L":
        im = im.convert("RGB")  # the channel repeated, as np.repeat does
    return _save(im, fmt, quality, chroma), (im.height, im.width, 1 if im.mode == "L" else 3)


def fitted(pixels: np.ndarray, size: tuple[int, int], fit: str, background: tuple[int, int, int]) -> np.ndarray:
    """uint8 (H, W, C) made exactly `size` (width, height), bilinear: "stretch" ignores
    the aspect ratio; "crop" scales to cover and cuts the centre; "pad" scales to fit
    and centres it on the background colour."""
    from PIL import Image

    gray = pixels.shape[2] == 1
    im = Image.fromarray(pixels[..., 0] if gray else pixels, "L" if gray else "RGB")
    out = _fit(im, size, fit, background)
    return np.asarray(out).reshape(size[1], size[0], -1)


def _fit(im, size: tuple[int, int], fit: str, background: tuple[int, int, int]):
    """A Pillow image (RGB or L) made exactly `size`, as `fitted` describes."""
    from PIL import Image

    gray = im.mode == "L"
    width, height = size
    if fit == "stretch":
        out = im.resize(size, Image.Resampling.BILINEAR)
    else:
        scale = (max if fit == "crop" else min)(width / im.width, height / im.height)
        inner = (max(1, round(im.width * scale)), max(1, round(im.height * scale)))
        scaled = im.resize(inner, Image.Resampling.BILINEAR)
        left, top = (inner[0] - width) // 2, (inner[1] - height) // 2
        if fit == "crop":
            out = scaled.crop((left, top, left + width, top + height))
        else:
            fill = round(float(np.dot(_LUMA, background))) if gray else background
            out = Image.new(im.mode, size, fill)
            out.paste(scaled, (-left, -top))
    return out


def _to_uint8(im, background: tuple[int, int, int]) -> np.ndarray:
    """Any Pillow mode -> uint8 (H, W, 1) for gray sources or (H, W, 3) for colour ones."""
    from PIL import Image

    mode = im.mode
    if mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
        # 16-bit (and 32-bit int / float) gray: scale the full 16-bit range to 8 bits.
        wide = np.asarray(im).astype(np.float64)
        scaled = np.clip(np.rint(wide * (255.0 / 65535.0)), 0, 255).astype(np.uint8)
        return scaled[..., None]
    if mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
        mode = im.mode
    if mode == "PA":
        im, mode = im.convert("RGBA"), "RGBA"
    if mode in ("RGBA", "LA", "RGBa", "La"):
        # Transparent pixels become the background colour, partially transparent ones a blend.
        rgba = im.convert("RGBA")
        flat = Image.new("RGBA", rgba.size, (*background, 255))
        blended = Image.alpha_composite(flat, rgba).convert("RGB")
        if mode in ("LA", "La") and len(set(background)) == 1:
            return np.asarray(blended.convert("L"))[..., None]
        return np.asarray(blended)
    if mode in ("1", "L"):
        return np.asarray(im.convert("L"))[..., None]
    return np.asarray(im.convert("RGB"))  # RGB, CMYK, YCbCr, LAB, HSV, RGBX


def to_gray(rgb: np.ndarray, method: str) -> np.ndarray:
    """(H, W, 3) uint8 -> (H, W, 1) uint8."""
    if method == "mean":
        # The face/age tutorial's channel mean, rounded to nearest.
        return np.rint(rgb.astype(np.float32).mean(axis=2, keepdims=True)).astype(np.uint8)
    # As tf.image.rgb_to_grayscale: to float in [0, 1], weighted sum, back with
    # TensorFlow's convert_image_dtype (multiply by 255.5 and truncate).
    flt = rgb.astype(np.float32) * np.float32(1.0 / 255.0)
    gray = flt @ _LUMA
    return np.clip(gray * np.float32(255.5), 0, 255).astype(np.uint8)[..., None]


def encode(pixels: np.ndarray, fmt: str, quality: int = 95, chroma: str = DEFAULT_CHROMA) -> bytes:
    """uint8 (H, W, 1|3) -> PNG or JPEG bytes; deterministic for the same Pillow build."""
    from PIL import Image

    # One image at a time, Pillow is faster than png.py (whose numpy filters pay off
    # only across a stack of small images: features_of_each)
    image = Image.fromarray(pixels[..., 0] if pixels.ndim == 3 and pixels.shape[2] == 1 else pixels)
    return _save(image, fmt, quality, chroma)


def _save(image, fmt: str, quality: int, chroma: str = DEFAULT_CHROMA) -> bytes:
    buf = io.BytesIO()
    if fmt == "png":
        image.save(buf, format="PNG", optimize=False, compress_level=6)
    elif fmt == "jpeg":
        image.save(
            buf,
            format="JPEG",
            quality=quality,
            optimize=False,
            progressive=False,
            subsampling=CHROMAS[chroma],
        )
    else:
        raise ValueError(f"cannot encode {fmt!r}")
    return buf.getvalue()


def encode_png(pixels: np.ndarray) -> bytes:
    """PNG bytes of an (H, W) grayscale or (H, W, 3) RGB uint8 array."""
    return encode(pixels if pixels.ndim == 3 else pixels[..., None], "png")
