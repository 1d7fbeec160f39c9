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

Luminance alone takes pictures whose brightness layouts match but whose colours differ
for copies (smooth pictures especially), so each candidate pair the hash finds is
confirmed by colour: the picture's chroma (Cb, Cr) box-averaged over 4x4 cells, from the
same decode (a JPEG decoded to YCbCr at reduced scale: its Y is what the hash used to
decode alone), must differ by at most COLOUR_THRESHOLD on average. Copies came within 4.9
(brightening by 10 % scales the chroma too), pictures of the same brightness layout in
other colours 21.9 or more apart. A grayscale copy of a colour picture is told apart.

Two images are near-duplicates when their hashes differ in at most THRESHOLD bits.
Distances are even: a hash has as many ones as zeros, so a bit that crosses the
median takes another one across with it. Copies resized by 0.5 to 1.5, brightened by
10 % and saved again as JPEG of quality 60 to 95 came within 0 to 10 bits, most within
4; distinct pictures were 16 or more apart, about 32 (half the bits) on average
(benchmarks/dedupe.md; tests/test_dedupe.py plants both and measures recall and
precision). The index is multi-index hashing: the 64 bits in 4 chunks of 16; by the
pigeonhole principle, two hashes within 10 bits are within 2 bits on one of the first
three chunks or within 1 on the last, so each chunk's buckets are paired with those
whose value differs by that many bits, and only their members are compared: about
428 * N / 65536 comparisons per image (half of them met from the other side), not N.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from itertools import combinations

import numpy as np

THRESHOLD = 10  # bits of 64; the index finds every pair up to this distance
COLOUR_THRESHOLD = 10  # mean |difference| of the 4x4 Cb and Cr cells, 0-255, of two copies
COLOUR_CELLS = 4
MAX_THRESHOLD = 11  # the most the chunk radii are planned for (their masks grow as 16 choose r)
CHUNKS = 4
_CHUNK_BITS = 64 // CHUNKS
_BLOCK = 1 << 22  # candidate pairs compared at once: bounds the arrays in memory


def _dct_matrix(n: int) -> np.ndarray:
    k, x = np.arange(n)[:, None], np.arange(n)[None, :]
    m = np.cos(np.pi * (2 * x + 1) * k / (2 * n))
    m[0] /= np.sqrt(2)
    return m * np.sqrt(2 / n)


_DCT = _dct_matrix(32)


def fingerprint(data: bytes, max_pixels: int = 89_478_485) -> tuple[int, bytes] | None:
    """(the 64-bit perceptual hash, the colour: 4x4 Cb then Cr cells as bytes) of an
    encoded image, or None if it cannot be decoded."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.width * im.height > max_pixels:
                return None
            im.draft("YCbCr", (64, 64))  # JPEG: decoded at the smallest scale still >= 64 px a side
            if im.mode == "YCbCr":  # one box-average of the three bands: Y for the hash, Cb Cr for colour
                small = im.resize((32, 32), Image.Resampling.BOX)
                thumbnail = np.asarray(small, np.float64)[..., 0]
            else:  # the hash's luma as it always was (convert("L")), the colour beside it
                thumbnail = np.asarray(im.convert("L").resize((32, 32), Image.Resampling.BOX), np.float64)
                small = im.convert("YCbCr").resize((32, 32), Image.Resampling.BOX)
            cells = small.resize((COLOUR_CELLS, COLOUR_CELLS), Image.Resampling.BOX).tobytes()
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None
    return thumbnail_hash(thumbnail), cells[1::3] + cells[2::3]  # the Cb cells, then the Cr cells


def thumbnail_hash(thumbnail: np.ndarray) -> int:
    """The pHash of a 32x32 grayscale thumbnail: one bit per coefficient of the 8x8 lowest
    frequencies of its DCT, above or below their median."""
    low = (_DCT @ thumbnail @ _DCT.T)[:8, :8].ravel()
    bits = low > np.median(low[1:])  # the median of the 63 frequencies besides the mean (DC)
    return int(np.packbits(bits).view(">u8")[0])


def phash(data: bytes, max_pixels: int = 89_478_485) -> int | None:
    """The 64-bit perceptual hash of an encoded image, or None if it cannot be decoded."""
    fingerprinted = fingerprint(data, max_pixels)
    return None if fingerprinted is None else fingerprinted[0]


def same_colours(a: bytes, b: bytes) -> bool:
    """Whether two fingerprints' colours are a copy's: cells within COLOUR_THRESHOLD on average."""
    difference = np.abs(np.frombuffer(a, np.uint8).astype(np.int16) - np.frombuffer(b, np.uint8).astype(np.int16))
    return float(difference.mean()) <= COLOUR_THRESHOLD


def near_pairs(prints: list[tuple[int, bytes]], threshold: int = THRESHOLD) -> list[tuple[int, int, int]]:
    """close_pairs of the fingerprints' hashes whose colours are a copy's too."""
    return [
        (i, j, d)
        for i, j, d in close_pairs((p[0] for p in prints), threshold)
        if same_colours(prints[i][1], prints[j][1])
    ]


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(x)
    table = np.array([bin(i).count("1") for i in range(256)], np.uint8)
    return table[x.view(np.uint8).reshape(-1, 8)].sum(axis=1)


def chunk_radii(threshold: int) -> list[int]:
    """How far each chunk is searched so that no pair within `threshold` bits is missed.

    Two hashes that differ in more than t_c bits in every chunk c differ in at least
    sum(t_c) + CHUNKS bits; so with sum(t_c) = threshold - CHUNKS + 1, every pair within
    the threshold is within its radius on some chunk (10 bits: radii 2, 2, 2, 1)."""
    if not 0 <= threshold <= MAX_THRESHOLD:
        raise ValueError(f"the index finds pairs up to {MAX_THRESHOLD} bits apart")
    budget = max(threshold - CHUNKS + 1, 0)
    return [budget // CHUNKS + (c < budget % CHUNKS) for c in range(CHUNKS)]


def chunk_masks(radius: int) -> list[int]:
    """Every change of at most `radius` bits of a chunk, as XOR masks, 0 first."""
    return [sum(1 << b for b in bits) for r in range(radius + 1) for bits in combinations(range(_CHUNK_BITS), r)]


def close_pairs(hashes: Iterable[int], threshold: int = THRESHOLD) -> list[tuple[int, int, int]]:
    """(i, j, distance) with i < j for every two hashes at most `threshold` bits apart; sorted.

    Per chunk, the hashes are sorted into buckets by the chunk's value; for each mask of
    the chunk's radius, every bucket is paired with the bucket its value XOR the mask
    names (the larger of the two only, so that a pair of buckets is met once), and the
    members of paired buckets are compared in full."""
    radii = chunk_radii(threshold)
    h = np.fromiter(hashes, np.uint64)
    if len(h) < 2:
        return []
    close: list[np.ndarray] = []
    for c, radius in enumerate(radii):
        keys = ((h >> np.uint64(c * _CHUNK_BITS)) & np.uint64((1 << _CHUNK_BITS) - 1)).astype(np.int64)
        order = np.argsort(keys, kind="stable")
        ordered = h[order]
        values, starts, counts = np.unique(keys[order], return_index=True, return_counts=True)
        bucket = np.full(1 << _CHUNK_BITS, -1, np.int64)
        bucket[values] = np.arange(len(values))
        shared = (starts[counts > 1], counts[counts > 1])
        hits = _compare_members(ordered, shared, shared, threshold)
        for mask in chunk_masks(radius)[1:]:
            other = values ^ mask
            partner = bucket[other]
            a = np.nonzero((partner >= 0) & (other > values))[0]
            b = partner[a]
            hits += _compare_members(ordered, (starts[a], counts[a]), (starts[b], counts[b]), threshold)
        for pa, pb, distance in hits:
            i, j = order[pa], order[pb]
            close.append(np.stack([np.minimum(i, j), np.maximum(i, j), distance.astype(np.int64)], axis=1))
    if not close:
        return []
    pairs = np.unique(np.concatenate(close), axis=0)
    return [(int(a), int(b), int(d)) for a, b, d in pairs]


def _runs(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """starts[k], starts[k] + 1, ..., starts[k] + lengths[k] - 1 for every k, concatenated."""
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(ends[-1] if len(ends) else 0)


def _compare_members(
    ordered: np.ndarray, left: tuple[np.ndarray, np.ndarray], right: tuple[np.ndarray, np.ndarray], threshold: int
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(positions a, positions b, distances) of every member of a left bucket within the
    threshold of a member of its right bucket (buckets as starts and counts in `ordered`);
    when a bucket is paired with itself, each pair once (a < b)."""
    (sa, ca), (sb, cb) = left, right
    sizes = ca * cb
    cuts = np.searchsorted(np.cumsum(sizes), np.arange(_BLOCK, int(sizes.sum()) + _BLOCK, _BLOCK), "right")
    out = []
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(sizes)], strict=True):
        if hi <= lo:
            continue
        pa = _runs(sa[lo:hi], ca[lo:hi])
        per = np.repeat(cb[lo:hi], ca[lo:hi])  # each left member meets its right bucket's members
        pb = _runs(np.repeat(sb[lo:hi], ca[lo:hi]), per)
        distance = popcount(np.repeat(ordered[pa], per) ^ ordered[pb])
        k = np.nonzero(distance <= threshold)[0]
        a, b = pa[np.searchsorted(np.cumsum(per), k, "right")], pb[k]
        if left is right:
            k, a, b = k[a < b], a[a < b], b[a < b]
        out.append((a, b, distance[k]))
    return out


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
