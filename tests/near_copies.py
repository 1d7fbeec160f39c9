"""Pictures and their near copies, planted for the near-duplicate tests and benchmark."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw, ImageEnhance


def picture(seed: int, size=(256, 192)) -> Image.Image:
    """A distinct picture: a few filled shapes on a plain background, with sensor noise."""
    rng = np.random.default_rng(seed)
    w, h = size
    im = Image.new("RGB", size, tuple(int(v) for v in rng.integers(0, 256, 3)))
    draw = ImageDraw.Draw(im)
    for _ in range(rng.integers(4, 10)):
        x0, y0 = rng.integers(0, w - w // 12), rng.integers(0, h - h // 10)
        box = [x0, y0, x0 + rng.integers(w // 12, w // 2), y0 + rng.integers(h // 10, h * 5 // 8)]
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(
            box, fill=tuple(int(v) for v in rng.integers(0, 256, 3))
        )
    noisy = np.asarray(im).astype(np.int16) + rng.normal(0, 6, (h, w, 3)).astype(np.int16)
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))


def jpeg(im: Image.Image, quality: int = 90) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def near_copy(im: Image.Image, rng: np.random.Generator) -> bytes:
    """The picture as a dataset might hold it again: resized by 0.5 to 1.5, brightened or
    darkened by up to 10 %, saved as JPEG of quality 60 to 95."""
    scale = rng.uniform(0.5, 1.5)
    resized = im.resize((max(round(im.width * scale), 8), max(round(im.height * scale), 8)), Image.Resampling.BILINEAR)
    return jpeg(ImageEnhance.Brightness(resized).enhance(rng.uniform(0.9, 1.1)), int(rng.integers(60, 96)))


SIZES = ((64, 64), (128, 96), (256, 192), (640, 480))


def planted_set(distinct: int, seed: int = 0) -> tuple[list[bytes], list[bytes]]:
    """`distinct` pictures (as JPEG of quality 90; shapes and textures in turn, their sizes
    taken in turn from SIZES) and one near copy of each, in the same order."""
    rng = np.random.default_rng(seed)
    originals, copies = [], []
    for i in range(distinct):
        im = (picture, textured)[i % 2](seed * 100_003 + i, SIZES[i // 2 % len(SIZES)])
        originals.append(jpeg(im))
        copies.append(near_copy(im, rng))
    return originals, copies


def textured(seed: int, size=(256, 192)) -> Image.Image:
    """A distinct picture without flat areas: random colour fields at three scales."""
    rng = np.random.default_rng(seed)
    w, h = size
    total = np.zeros((h, w, 3))
    for scale in (4, 8, 16):
        field = rng.integers(0, 256, (max(h // scale, 2), max(w // scale, 2), 3), dtype=np.uint8)
        total += np.asarray(Image.fromarray(field).resize(size, Image.Resampling.BICUBIC), np.float64) / scale**0.5
    return Image.fromarray((255 * (total - total.min()) / np.ptp(total)).astype(np.uint8))


def lookalike(data: bytes, seed: int) -> bytes:
    """The picture with its brightness layout kept and other colours: its luma, under a
    smooth random colour field (what fooled a luminance-only hash)."""
    rng = np.random.default_rng(seed)
    with Image.open(io.BytesIO(data)) as im:
        luma = im.convert("YCbCr").getchannel(0)
    chroma = [Image.fromarray(rng.integers(0, 256, (3, 3), dtype=np.uint8)).resize(luma.size, Image.Resampling.BICUBIC)
              for _ in range(2)]  # fmt: skip
    return jpeg(Image.merge("YCbCr", (luma, *chroma)).convert("RGB"))
