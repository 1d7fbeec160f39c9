"""Write the small MNIST-format sample that ships in examples/mnist-sample/.

Digits are drawn with Pillow's built-in font, then jittered (shift, rotation,
stroke, blur, noise) so the images look like handwriting's distant cousin and
every one differs. Deterministic: the same script writes the same bytes.

    python scripts/make_mnist_sample.py [OUT_DIR] [--train N] [--test N]
"""

from __future__ import annotations

import argparse
import gzip
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from tfr_convert.converters.published.idx import FILES, idx_bytes


def draw_digit(digit: int, rng: np.random.Generator) -> np.ndarray:
    font = ImageFont.load_default(size=int(rng.integers(18, 24)))
    canvas = Image.new("L", (56, 56), 0)
    ImageDraw.Draw(canvas).text(
        (28, 28), str(digit), fill=255, font=font, anchor="mm", stroke_width=int(rng.integers(0, 2)), stroke_fill=255
    )
    canvas = canvas.rotate(float(rng.uniform(-15, 15)), resample=Image.BILINEAR)
    dx, dy = rng.integers(-3, 4, size=2)
    canvas = canvas.crop((14 + dx, 14 + dy, 42 + dx, 42 + dy)).filter(ImageFilter.GaussianBlur(0.6))
    pixels = np.asarray(canvas, dtype=np.float32)
    pixels = np.where(pixels > 8, pixels + rng.normal(0, 12, (28, 28)), 0)  # clean background, as in MNIST
    return np.clip(pixels, 0, 255).astype(np.uint8)


def write_sample(out: str, n_train: int, n_test: int, seed: int = 2051) -> None:
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    for split, n in (("train", n_train), ("test", n_test)):
        labels = rng.integers(0, 10, size=n).astype(np.uint8)
        images = np.stack([draw_digit(int(d), rng) for d in labels])
        for what, array in (("images", images), ("labels", labels)):
            path = os.path.join(out, FILES[split, what] + ".gz")
            with open(path, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as gz:
                gz.write(idx_bytes(array))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="examples/mnist-sample")
    parser.add_argument("--train", type=int, default=500)
    parser.add_argument("--test", type=int, default=100)
    args = parser.parse_args()
    write_sample(args.out, args.train, args.test)
