"""png.py writes the very bytes Pillow writes for an array, one image or a stack at once."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tfr_convert.pictures.png import encode_pngs


def pillow_png(pixels: np.ndarray) -> bytes:
    """The simple path: Pillow with its defaults (the converters' settings are the same)."""
    buf = io.BytesIO()
    Image.fromarray(pixels[..., 0] if pixels.ndim == 3 and pixels.shape[2] == 1 else pixels).save(buf, format="PNG")
    return buf.getvalue()


def arrays() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:60, 0:80]
    smooth = np.clip(np.stack([xx * 3, yy * 4, (xx + yy) * 2], axis=2) + rng.normal(0, 6, (60, 80, 3)), 0, 255)
    digit = np.zeros((28, 28), np.uint8)
    digit[6:22, 12:16] = 255
    digit[6:9, 9:19] = rng.integers(100, 256, (3, 10))
    return [
        ("noise gray", rng.integers(0, 256, (28, 28), dtype=np.uint8)),
        ("noise rgb", rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)),
        ("digit", digit),
        ("one channel", digit[..., None]),
        ("flat", np.full((9, 13), 77, np.uint8)),
        ("black", np.zeros((4, 4, 3), np.uint8)),
        ("one pixel", np.array([[128]], np.uint8)),
        ("one row", rng.integers(0, 256, (1, 40, 3), dtype=np.uint8)),
        ("one column", rng.integers(0, 256, (40, 1), dtype=np.uint8)),
        ("smooth rgb", smooth.astype(np.uint8)),
        ("wraps", (np.add.outer(np.arange(50) * 37, np.arange(70) * 91) % 256).astype(np.uint8)),
        ("several IDAT chunks", rng.integers(0, 256, (300, 500), dtype=np.uint8)),
        ("IDAT of 4 x width", rng.integers(0, 256, (6, 20000), dtype=np.uint8)),
    ]


@pytest.mark.parametrize("name,pixels", arrays(), ids=[name for name, _ in arrays()])
def test_one_image_is_byte_identical_to_pillow(name, pixels):
    (data,) = encode_pngs(pixels[None])
    assert data == pillow_png(pixels)
    with Image.open(io.BytesIO(data)) as im:
        assert np.array_equal(np.asarray(im), pixels[..., 0] if pixels.shape[2:] == (1,) else pixels)


@pytest.mark.parametrize("shape", [(700, 28, 28), (300, 32, 32, 3), (3, 5, 1)])
def test_a_stack_equals_its_images_one_by_one(shape):
    rng = np.random.default_rng(3)
    stack = rng.integers(0, 256, shape, dtype=np.uint8)
    stack[::3] //= 40  # flatter images choose other filters
    assert encode_pngs(stack) == [pillow_png(image) for image in stack]
