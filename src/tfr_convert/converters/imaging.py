"""Image encoding shared by converters. Pillow is imported only when called."""

from __future__ import annotations

import io

import numpy as np


def encode_png(pixels: np.ndarray) -> bytes:
    """PNG bytes of an (H, W) grayscale or (H, W, 3) RGB uint8 array; deterministic."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()
