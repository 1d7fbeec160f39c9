"""Near-duplicate detection: hashing throughput and the index's comparison cost.

    python benchmarks/bench_dedupe.py [--images 2000] [--sizes 10000,100000,1000000] [--repeat 3]

1. Fingerprint throughput (images/s) over --images generated JPEGs of 512x384 (the pHash
   and the 4x4 colour cells that confirm a pair, from one YCbCr decode), on one thread and
   on the thread pool `--dedupe` uses (all cores), interleaved with the luminance-only
   pHash it replaced (a grayscale decode), whose cost is the reference.
2. The distances between --planted pictures and their near copies (resized by 0.5 to
   1.5, brightened by up to 10 %, JPEG 60 to 95; tests/near_copies.py), and between the
   distinct pictures; recall and precision of the pairs found at a few thresholds; then
   with a look-alike of each picture planted too (its brightness layout, other colours):
   precision by the hash alone and with the colour confirmation.
3. `near_duplicates.close_pairs` on N random 64-bit hashes (1% planted copies, 0..THRESHOLD
   bits away), for each N in --sizes: seconds, candidate comparisons per hash, pairs found,
   and the all-pairs count it avoids — so the growth with N is visible.
4. `tfr-convert images --dedupe near|drop|exact` on --identical copies of one JPEG (one
   cluster as large as the dataset): seconds and peak RSS of the whole run.
Medians of --repeat; writes Markdown to --out and prints it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from bench_images import make_images
from common import machine, median, peak_rss_mib

from tfr_convert.dataset.near_duplicates import (
    CHUNKS,
    COLOUR_THRESHOLD,
    THRESHOLD,
    chunk_masks,
    chunk_radii,
    close_pairs,
    fingerprint,
    near_pairs,
    phash,
    popcount,
    thumbnail_hash,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from near_copies import SIZES, lookalike, planted_set


def luma_phash(data: bytes) -> int:
    """The pHash as it was before colours confirmed pairs: a grayscale decode alone."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        im.draft("L", (64, 64))
        thumbnail = np.asarray(im.convert("L").resize((32, 32), Image.Resampling.BOX), np.float64)
    return thumbnail_hash(thumbnail)


def hashes(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    copies = n // 100
    for k in range(copies):
        flips = rng.choice(64, size=k % (THRESHOLD + 1), replace=False)
        h[n - copies + k] = h[k] ^ np.uint64(sum(1 << int(b) for b in flips))
    return h


def candidates(h: np.ndarray) -> int:
    """Comparisons the index makes: per chunk, the pairs of hashes in one bucket, and in
    each pair of buckets whose values differ by one of the chunk's masks."""
    total = 0
    values = np.arange(1 << 16)
    for c, radius in zip(range(CHUNKS), chunk_radii(THRESHOLD), strict=True):
        counts = np.bincount(((h >> np.uint64(16 * c)) & np.uint64(0xFFFF)).astype(np.int64), minlength=1 << 16)
        total += int((counts * (counts - 1) // 2).sum())
        for mask in chunk_masks(radius)[1:]:
            other = values ^ mask
            total += int((counts * counts[other])[other > values].sum())
    return total


def planted_distances(distinct: int) -> list[str]:
    """Markdown: how far copies and distinct pictures hash, and what each threshold finds."""
    originals, copies = planted_set(distinct, seed=1)
    h = np.array([phash(d) for d in originals + copies], np.uint64)
    n = len(originals)
    copy = popcount(h[:n] ^ h[n:])
    apart = popcount(h[:n, None] ^ h[None, :n])[np.triu_indices(n, 1)]
    bins = list(range(0, 17, 2))  # a pHash has as many ones as zeros, so distances are even
    lines = ["", f"Distances in bits, {distinct} pictures (shapes and textures, {len(SIZES)} sizes from "
             f"{SIZES[0][0]} to {SIZES[-1][0]} px) and a near copy of each:", "",
             "| pairs | " + " | ".join(str(b) for b in bins) + " | more | count |",
             "|---|" + "---|" * (len(bins) + 2)]  # fmt: skip
    rows = [(f"copy of a {w}x{h_} picture", copy[[i for i in range(n) if SIZES[i // 2 % len(SIZES)] == (w, h_)]])
            for w, h_ in SIZES] + [("all copies", copy), ("distinct pictures", apart)]  # fmt: skip
    for label, d in rows:
        counts = [int((d == b).sum()) for b in bins]
        lines.append(f"| {label} | " + " | ".join(map(str, counts)) + f" | {int((d > bins[-1]).sum())} | {len(d)} |")
    lines += ["", "| threshold | recall | precision |", "|---|---|---|"]
    for threshold in (5, 7, THRESHOLD):
        found = {(i, j) for i, j, _ in close_pairs((int(x) for x in h), threshold)}
        true = len(found & {(i, n + i) for i in range(n)})
        lines.append(f"| {threshold} | {true / n:.3f} | {true / max(len(found), 1):.3f} |")
    prints = [fingerprint(d) for d in originals + copies + [lookalike(d, i) for i, d in enumerate(originals)]]
    copied = {(i, n + i) for i in range(n)}

    def colour_apart(a: int, b: int) -> float:
        x, y = (np.frombuffer(prints[k][1], np.uint8).astype(np.int16) for k in (a, b))  # type: ignore[index]
        return float(np.abs(x - y).mean())

    copy_colours = sorted(colour_apart(i, n + i) for i in range(n))
    alike_colours = sorted(colour_apart(i, 2 * n + i) for i in range(n))
    lines += ["", f"Mean chroma difference of the 4x4 cells (0-255; a pair is confirmed at most "
              f"{COLOUR_THRESHOLD}): copies {copy_colours[n // 2]:.1f} median, {copy_colours[-1]:.1f} at most; "
              f"look-alikes {alike_colours[0]:.1f} at least, {alike_colours[n // 2]:.1f} median.", ""]  # fmt: skip
    lines += [f"With a look-alike of each picture planted too ({n}: its brightness layout, other colours), "
              f"at {THRESHOLD} bits:", "", "| pairs confirmed by | recall | precision | look-alike pairs found |",
              "|---|---|---|---|"]  # fmt: skip
    for label, pairs in (
        ("the hash alone", close_pairs(p[0] for p in prints)),  # type: ignore[index]
        ("the hash, then the colours", near_pairs(prints)),  # type: ignore[arg-type]
    ):
        found = {(i, j) for i, j, _ in pairs}
        true = len(found & copied)
        alike = len(found & {(i, 2 * n + i) for i in range(n)})
        lines.append(f"| {label} | {true / n:.3f} | {true / max(len(found), 1):.3f} | {alike} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--identical", type=int, default=20000)
    parser.add_argument("--planted", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tfr-bench-dedupe")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "dedupe.md")
    args = parser.parse_args()
    root = args.work / f"images-{args.images}"
    make_images(root, args.images, (512, 384))
    data = [p.read_bytes() for p in sorted(root.rglob("*.jpg"))]
    lines = [f"# Near-duplicate detection ({machine()}; medians of {args.repeat}, interleaved)", "",
             "| hashing | seconds | images/s |", "|---|---|---|"]  # fmt: skip
    contenders = (
        ("luminance-only pHash (before), 1 thread", luma_phash, 1),
        ("fingerprint: pHash + colour, 1 thread", fingerprint, 1),
        ("fingerprint: pHash + colour, thread pool (all cores)", fingerprint, None),
    )
    times: dict[str, list[float]] = {label: [] for label, _, _ in contenders}
    for _ in range(args.repeat):
        for label, fn, workers in contenders:
            start = time.perf_counter()
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(fn, data, chunksize=64))
            times[label].append(time.perf_counter() - start)
    for label, _, _ in contenders:
        lines.append(f"| {label} | {median(times[label]):.2f} | {len(data) / median(times[label]):,.0f} |")
    before, after = (median(times[label]) for label, _, _ in contenders[:2])
    lines += ["", f"Cost per image of the fingerprint against the luminance-only hash: {after / before:.2f}x "
              "(goal: at most 1.10x)."]  # fmt: skip
    lines += planted_distances(args.planted)
    lines += [
        "",
        f"Index at THRESHOLD = {THRESHOLD} bits:",
        "",
        "| hashes | close_pairs s | comparisons per hash | pairs found | all pairs avoided |",
        "|---|---|---|---|---|",
    ]
    for n in (int(s) for s in args.sizes.split(",")):
        h = hashes(n)
        times, found = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            found = close_pairs(int(x) for x in h)
            times.append(time.perf_counter() - start)
        lines.append(f"| {n:,} | {median(times):.2f} | {candidates(h) / n:.1f} | {len(found):,} | "
                     f"{n * (n - 1) // 2:.2e} |")  # fmt: skip
    lines += ["", f"| tfr-convert images, {args.identical:,} copies of one picture | seconds | peak RSS MiB |",
              "|---|---|---|"]  # fmt: skip
    same = args.work / f"identical-{args.identical}"
    if not same.exists():
        same.mkdir(parents=True)
        for i in range(args.identical):
            (same / f"{i:06d}.jpg").write_bytes(data[0])
    for mode in ("near", "drop", "exact"):
        times, peaks = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            peaks.append(peak_rss_mib(["convert", "images", same, "--dedupe", mode, "--split", "train=0.8,test=0.2",
                                       "--out", args.work / "out", "--overwrite", "--quiet"]))  # fmt: skip
            times.append(time.perf_counter() - start)
        lines.append(f"| --dedupe {mode} | {median(times):.1f} | {median(peaks):.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
