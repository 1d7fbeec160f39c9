"""The least work of a conversion, as a program started like tfr-convert is (a fresh Python):
the floors of run.py that are more than reading and writing bytes.

    python benchmarks/floors.py cifar-hash BATCHES_DIR SINK NBYTES
    python benchmarks/floors.py png mnist|cifar SRC_DIR [--workers 2]
    python benchmarks/floors.py decode IMAGE_DIR [--workers 2]

cifar-hash: what a CIFAR-10 conversion with a manifest of digests cannot skip, one step
    after the other: read each pickled batch, take its sha256, unpickle it, write NBYTES
    (the batches' pixels, then zeros) to SINK and take their sha256 too (hashlib: OpenSSL).
png: the images of MNIST's idx files or CIFAR-10's batches PNG-encoded with Pillow's
    defaults by a Pool of --workers processes, the bytes returned to the parent (what
    `--layout tfds` must do before any framing or writing).
decode: every file under IMAGE_DIR fully decoded by Pillow in a Pool of --workers
    processes (what keep mode's check is measured against).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import pickle
from multiprocessing import Pool

import numpy as np

CIFAR_BATCHES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
MNIST_IMAGES = ("train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz")

_images: np.ndarray | None = None  # set before the pool forks, so the workers inherit it


def cifar_hash(src: str, sink: str, nbytes: int) -> None:
    written, out = 0, hashlib.sha256()
    with open(sink, "wb") as f:
        for name in CIFAR_BATCHES:
            with open(os.path.join(src, name), "rb") as g:
                data = g.read()
            hashlib.sha256(data).digest()
            pixels = memoryview(pickle.loads(data, encoding="bytes")[b"data"]).cast("B")
            out.update(pixels)
            written += f.write(pixels)
        zeros = bytes(max(nbytes - written, 0))
        out.update(zeros)
        f.write(zeros)
    out.digest()


def _encode(bounds: tuple[int, int]) -> list[bytes]:
    from PIL import Image

    assert _images is not None
    encoded = []
    for pixels in _images[bounds[0] : bounds[1]]:
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="PNG")
        encoded.append(buf.getvalue())
    return encoded


def load_images(kind: str, src: str) -> np.ndarray:
    if kind == "mnist":
        arrays = []
        for name in MNIST_IMAGES:
            with gzip.open(os.path.join(src, name)) as f:
                arrays.append(np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28))
        return np.concatenate(arrays)
    batches = []
    for name in CIFAR_BATCHES:
        with open(os.path.join(src, name), "rb") as f:
            batches.append(pickle.load(f, encoding="bytes")[b"data"].reshape(-1, 3, 32, 32))
    return np.concatenate(batches).transpose(0, 2, 3, 1)


def png(kind: str, src: str, workers: int) -> None:
    global _images
    _images = load_images(kind, src)
    step = 1024
    with Pool(workers) as pool:
        total = sum(len(b) for chunk in pool.imap(_encode, [(i, i + step) for i in range(0, len(_images), step)])
                    for b in chunk)  # fmt: skip
    print(len(_images), "images,", total, "PNG bytes")


def _decode(path: str) -> int:
    from PIL import Image

    with Image.open(path) as im:
        im.load()
        return im.width


def decode(root: str, workers: int) -> None:
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
    with Pool(workers) as pool:
        for _ in pool.imap_unordered(_decode, files, chunksize=64):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("floor", choices=("cifar-hash", "png", "decode"))
    parser.add_argument("args", nargs="+")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.floor == "cifar-hash":
        cifar_hash(args.args[0], args.args[1], int(args.args[2]))
    elif args.floor == "png":
        png(args.args[0], args.args[1], args.workers)
    else:
        decode(args.args[0], args.workers)


if __name__ == "__main__":
    main()
