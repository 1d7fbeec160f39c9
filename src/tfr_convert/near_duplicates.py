"""Near-duplicate images: a perceptual hash, an index that finds close hashes, clusters.

The hash is the 64-bit perceptual hash (pHash): the image as a 32x32 grayscale
thumbnail (box-averaged; a JPEG is decoded at reduced scale first), its 2-D DCT, and
one bit per coefficient of the 8x8 lowest frequencies: above or below their median.
Low frequencies are what resizing and recompression keep, so those move a few bits; a
change of brightness or contrast shifts or scales the coefficients together, leaving
most of them on the same side of the median. A difference hash (neighbouring
thumbnail pixels compared) was tried first and dropped: in flat areas its comparisons
are decided by noise, and lossless copies of one picture differed by up to 12 bits.
It does not see mirrored, rotated or cropped copies.

Two images are near-duplicates when their hashes differ in at most THRESHOLD bits:
resized, recompressed and slightly brightened copies differ by 0 to 6, different
pictures by about 32 (half the bits), rarely below 15 (tests/test_dedupe.py plants
both). The index is multi-index hashing: the 64 bits in 4 chunks of 16; two hashes
within 7 bits agree, by pigeonhole, to within one bit on at least one chunk, so each
hash is looked up under its 4 chunks with each of their 17 one-bit variants, and only
those candidates are compared: about 68 * N / 65536 comparisons per image, not N.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import numpy as np

THRESHOLD = 7  # bits of 64; the index finds every pair up to this distance
CHUNKS = 4
_CHUNK_BITS = 64 // CHUNKS
_QUERY_BLOCK = 1 << 15  # hashes looked up at once: bounds the candidate arrays in memory


def _dct_matrix(n: int) -> np.ndarray:
    k, x = np.arange(n)[:, None], np.arange(n)[None, :]
    m = np.cos(np.pi * (2 * x + 1) * k / (2 * n))
    m[0] /= np.sqrt(2)
    return m * np.sqrt(2 / n)


_DCT = _dct_matrix(32)


def phash(data: bytes, max_pixels: int = 89_478_485) -> int | None:
    """The 64-bit perceptual hash of an encoded image, or None if it cannot be decoded."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.width * im.height > max_pixels:
                return None
            im.draft("L", (64, 64))  # JPEG: decoded at the smallest scale still >= 64 px a side
            thumbnail = np.asarray(im.convert("L").resize((32, 32), Image.Resampling.BOX), np.float64)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None
    low = (_DCT @ thumbnail @ _DCT.T)[:8, :8].ravel()
    bits = low > np.median(low[1:])  # the median of the 63 frequencies besides the mean (DC)
    return int(np.packbits(bits).view(">u8")[0])


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(x)
    table = np.array([bin(i).count("1") for i in range(256)], np.uint8)
    return table[x.view(np.uint8).reshape(-1, 8)].sum(axis=1)


def close_pairs(hashes: Iterable[int], threshold: int = THRESHOLD) -> list[tuple[int, int, int]]:
    """(i, j, distance) with i < j for every two hashes at most `threshold` bits apart
    (threshold <= 2 * CHUNKS - 1, which the one-bit probes guarantee); sorted."""
    if threshold > 2 * CHUNKS - 1:
        raise ValueError(f"the index finds pairs up to {2 * CHUNKS - 1} bits apart")
    h = np.fromiter(hashes, np.uint64)
    n = len(h)
    if n < 2:
        return []
    masks = np.array([0] + [1 << b for b in range(_CHUNK_BITS)], np.uint64)
    found: list[np.ndarray] = []
    for c in range(CHUNKS):
        keys = (h >> np.uint64(c * _CHUNK_BITS)) & np.uint64(0xFFFF)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        for start in range(0, n, _QUERY_BLOCK):
            query = np.arange(start, min(start + _QUERY_BLOCK, n))
            probes = (keys[query][:, None] ^ masks[None, :]).ravel()
            owners = np.repeat(query, len(masks))
            lo = np.searchsorted(ordered, probes, "left")
            hi = np.searchsorted(ordered, probes, "right")
            counts = hi - lo
            if not counts.any():
                continue
            i = np.repeat(owners, counts)
            offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            j = order[np.repeat(lo, counts) + offsets]
            keep = i < j
            i, j = i[keep], j[keep]
            distance = popcount(h[i] ^ h[j])
            close = distance <= threshold
            found.append(np.stack([i[close], j[close], distance[close].astype(np.int64)], axis=1))
    if not found:
        return []
    pairs = np.unique(np.concatenate(found), axis=0)
    return [(int(a), int(b), int(d)) for a, b, d in pairs]


def clusters(n: int, pairs: Iterable[tuple[int, int]]) -> list[int]:
    """Union-find over n items: each item's cluster, named by its smallest member."""
    parent = list(range(n))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [root(x) for x in range(n)]
