"""Groups of images that must share a split: rows with one --group-column value, and
duplicates found by --dedupe (identical bytes, or near-identical pictures by their
perceptual hash). Hashing reads every image once, before the split is planned, on
threads (file reads, sha256 and Pillow's decoders release the GIL), all joined before
the engines start."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ...dataset import near_duplicates

DEDUPE_MODES = ("exact", "near", "drop")


def duplicate_pairs(
    read: Callable[[int], bytes], n: int, mode: str, workers: int | None = None
) -> list[tuple[int, int]]:
    """Pairs (i, j), i < j, linking duplicates among n images read by index: identical
    bytes for "exact"; for "near" and "drop", hashes within near_duplicates.THRESHOLD bits
    whose colours agree (near_duplicates.near_pairs).
    Enough pairs to join each cluster, not every pair in it: an image whose fingerprint
    an earlier one has is linked to that one alone, and only distinct hashes are looked
    up in the index (N copies of one picture make N - 1 pairs, not N * (N - 1) / 2)."""

    def fingerprint(i: int) -> bytes | tuple[int, bytes] | None:
        try:
            data = read(i)
        except OSError:
            return None  # unreadable: the run names it when it gets there
        return hashlib.sha256(data).digest() if mode == "exact" else near_duplicates.fingerprint(data)

    with ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:
        prints = list(pool.map(fingerprint, range(n), chunksize=64))
    first: dict[bytes | tuple[int, bytes], int] = {}
    pairs = []
    for i, p in enumerate(prints):
        if p is not None:
            if p in first:
                pairs.append((first[p], i))
            else:
                first[p] = i
    if mode != "exact":
        distinct = list(first.values())  # in index order
        close = near_duplicates.near_pairs([prints[i] for i in distinct])  # type: ignore[misc]
        pairs += [(distinct[a], distinct[b]) for a, b, _ in close]
    return sorted(pairs)


def group_keys(n: int, values: list[str] | None, pairs: list[tuple[int, int]]) -> list[str]:
    """Each item's group: items sharing a value, or linked by a duplicate pair (through
    any chain of them), share one; named by the group value or smallest member."""
    links = list(pairs)
    if values is not None:
        first: dict[str, int] = {}
        for i, v in enumerate(values):
            links.append((first.setdefault(v, i), i))
    roots = near_duplicates.clusters(n, links)
    return [values[r] if values is not None else f"#{r}" for r in roots]


def describe_clusters(keys: list[str], names: list[str], shown: int = 3) -> tuple[int, int, str]:
    """(clusters of two or more, images in them, a few clusters named by their files)."""
    members: dict[str, list[str]] = {}
    for key, name in zip(keys, names, strict=True):
        members.setdefault(key, []).append(name)
    many = [m for m in members.values() if len(m) > 1]
    listed = "; ".join(" ~ ".join(m[:3]) + (" ..." if len(m) > 3 else "") for m in many[:shown])
    return len(many), sum(len(m) for m in many), listed + ("; ..." if len(many) > shown else "")


def plan_groups(
    names: list[str], read: Callable[[int], bytes], dedupe: str | None, values: list[str] | None, where: str
) -> tuple[list[int], list[str], dict[str, int] | None, str | None]:
    """For n images (by name, read by index): (the indices kept, each kept one's group,
    what --dedupe found, a message saying so or None). `values`: --group-column's."""
    n = len(names)
    kept, pairs, plan, message = list(range(n)), [], None, None
    if dedupe:
        pairs = duplicate_pairs(read, n, dedupe)
        duplicates = group_keys(n, None, pairs)  # the clusters alone, without the group column
        clusters, members, listed = describe_clusters(duplicates, names)
        plan = {"clusters": clusters, "images": members, "dropped": 0}
        if dedupe == "drop":
            seen: set[str] = set()
            kept = []
            for i, cluster in enumerate(duplicates):
                if cluster not in seen:
                    seen.add(cluster)
                    kept.append(i)
            plan["dropped"] = n - len(kept)
            pairs = []  # what is left holds no duplicates
            if plan["dropped"]:
                message = (
                    f"{where}: --dedupe drop left out {plan['dropped']} near-duplicate image(s), keeping "
                    f"the first by path of each of {clusters} cluster(s) ({listed})"
                )
        elif clusters:
            message = (
                f"{where}: --dedupe {dedupe}: {clusters} cluster(s) of duplicates ({members} images), "
                f"each kept whole in one split ({listed})"
            )
    renumber = {old: new for new, old in enumerate(kept)}
    pairs = [(renumber[a], renumber[b]) for a, b in pairs]
    kept_values = [values[i] for i in kept] if values is not None else None
    return kept, group_keys(len(kept), kept_values, pairs), plan, message
