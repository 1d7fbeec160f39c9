"""Splits that cannot leak: --group-column, the near-duplicate index and report, --dedupe."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image, ImageEnhance

from near_copies import jpeg, lookalike, picture, planted_set
from tfr_convert.converters.listing.grouping import duplicate_pairs, group_keys
from tfr_convert.dataset.near_duplicates import (
    MAX_THRESHOLD,
    THRESHOLD,
    chunk_radii,
    close_pairs,
    clusters,
    fingerprint,
    near_pairs,
    phash,
    popcount,
)

COPIES = {  # how a picture gets copied into a dataset: resized, recompressed, brightened
    "half": lambda im: jpeg(im.resize((im.width // 2, im.height // 2), Image.Resampling.BILINEAR)),
    "q35": lambda im: jpeg(im, 35),
    "bright": lambda im: jpeg(ImageEnhance.Brightness(im).enhance(1.1)),
}


def planted(root, distinct=60, copied=15):
    """`distinct` pictures, and for the first `copied` of them one copy of each kind.
    Returns the planted pairs as sets of two file names."""
    root.mkdir(parents=True, exist_ok=True)
    pairs = []
    for i in range(distinct):
        (root / f"p{i:03d}.jpg").write_bytes(jpeg(picture(i)))
    for i in range(copied):
        kind = list(COPIES)[i % len(COPIES)]
        (root / f"c{i:03d}_{kind}.jpg").write_bytes(COPIES[kind](picture(i)))
        pairs.append({f"p{i:03d}.jpg", f"c{i:03d}_{kind}.jpg"})
    return pairs


def split_of_files(out) -> dict[str, str]:
    spec = {"filename": tf.io.FixedLenFeature((), tf.string)}
    found = {}
    for shard in sorted(out.glob("*.tfrecord-*")):
        split = shard.name.split(".tfrecord")[0].rsplit("-", 1)[1]
        for record in tf.data.TFRecordDataset(str(shard)):
            found[tf.io.parse_single_example(record, spec)["filename"].numpy().decode()] = split
    return found


# ---------------------------------------------------------------- the index


def random_hashes(n: int, seed: int, planted: int, farthest: int) -> np.ndarray:
    """n random 64-bit hashes, the last `planted` of them copies of the first ones with
    0 .. farthest bits flipped (beyond the threshold too)."""
    rng = np.random.default_rng(seed)
    hashes = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    for k in range(planted):
        flips = rng.choice(64, size=k % (farthest + 1), replace=False)
        hashes[n - planted + k] = hashes[k] ^ np.uint64(sum(1 << int(b) for b in flips))
    return hashes


def all_pairs_within(hashes: np.ndarray, threshold: int) -> list[tuple[int, int, int]]:
    distance = popcount(hashes[:, None] ^ hashes[None, :])
    i, j = np.nonzero(np.triu(distance <= threshold, 1))
    return [(int(a), int(b), int(distance[a, b])) for a, b in zip(i, j, strict=True)]


@pytest.mark.parametrize("threshold", [0, 3, 7, THRESHOLD, MAX_THRESHOLD])
def test_the_index_finds_exactly_the_pairs_all_pairs_comparison_finds(threshold):
    hashes = random_hashes(3000, seed=threshold, planted=400, farthest=MAX_THRESHOLD + 3)
    found = close_pairs((int(h) for h in hashes), threshold)
    assert found == all_pairs_within(hashes, threshold)
    assert sum(d == threshold for _, _, d in found) >= 10  # the edge itself is exercised


def test_the_index_meets_every_pair_of_hashes_that_share_chunks_once():
    """Hashes crowded into few chunk values (buckets of hundreds, paired with each other
    and with themselves) give the all-pairs answer, each pair once."""
    rng = np.random.default_rng(11)
    base = rng.integers(0, 2**63, 6, dtype=np.uint64)
    hashes = np.array([base[k % 6] ^ np.uint64(1 << int(rng.integers(0, 64))) for k in range(1500)], np.uint64)
    hashes = np.unique(hashes)
    assert close_pairs((int(h) for h in hashes), THRESHOLD) == all_pairs_within(hashes, THRESHOLD)


def test_the_chunk_radii_cover_the_threshold_and_a_wider_one_is_refused():
    for threshold in range(MAX_THRESHOLD + 1):
        radii = chunk_radii(threshold)
        assert sum(r + 1 for r in radii) > threshold  # pigeonhole: no pair within it escapes every chunk
    assert chunk_radii(THRESHOLD) == [2, 2, 2, 1]
    with pytest.raises(ValueError, match="up to 11 bits"):
        close_pairs([0, 1], MAX_THRESHOLD + 1)


def test_clusters_join_chains_and_are_named_by_their_smallest_member():
    assert clusters(6, [(4, 1), (1, 3), (2, 5)]) == [0, 1, 2, 1, 1, 2]


def test_copies_of_one_picture_are_linked_in_n_minus_one_pairs_into_the_clusters_all_pairs_give():
    """The converter's pairs join each cluster without listing every pair in it (N copies
    of one picture made N * (N - 1) / 2 pairs, quadratic in time and memory)."""
    images = [jpeg(picture(i)) for i in range(30)]
    images += [images[3]] * 400 + [COPIES["q35"](picture(5))] * 50 + [COPIES["half"](picture(3))]
    pairs = duplicate_pairs(images.__getitem__, len(images), "near", workers=1)
    assert len(pairs) == 400 + 1 + 50  # every copy linked once
    h = np.array([phash(d) for d in images], np.uint64)
    i, j = np.nonzero(np.triu(popcount(h[:, None] ^ h[None, :]) <= THRESHOLD, 1))
    assert group_keys(len(images), None, pairs) == group_keys(
        len(images), None, list(zip(i.tolist(), j.tolist(), strict=True))
    )
    exact = duplicate_pairs(images.__getitem__, len(images), "exact", workers=1)
    assert len(exact) == 400 + 49


def test_copies_hash_close_and_different_pictures_far():
    originals = [phash(jpeg(picture(i))) for i in range(40)]
    for kind, copy in COPIES.items():
        close = [bin(originals[i] ^ phash(copy(picture(i)))).count("1") <= THRESHOLD for i in range(40)]
        assert sum(close) >= 38, kind
    h = np.array(originals, np.uint64)
    distance = popcount(h[:, None] ^ h[None, :])[np.triu_indices(40, 1)]
    assert distance.min() > THRESHOLD


def test_near_copies_are_found_with_high_recall_and_precision():
    """Distinct pictures of four sizes (64 to 640 px) and a copy of each, resized by 0.5 to
    1.5, brightened by up to 10 % either way and saved again as JPEG of quality 60 to 95:
    the index at THRESHOLD finds nearly every picture-copy pair and few others."""
    originals, copies = planted_set(200, seed=5)
    n = len(originals)
    found = {(i, j) for i, j, _ in close_pairs(phash(data) for data in originals + copies)}
    planted = {(i, n + i) for i in range(n)}
    true = len(found & planted)
    assert true / n >= 0.97  # recall
    assert true / len(found) >= 0.95  # precision


def test_pictures_alike_in_brightness_but_not_in_colour_are_told_apart():
    """Copies resized, re-compressed and brightened are still found (recall >= 0.97), and
    pictures whose brightness layout matches a picture's but whose colours differ are not
    (precision >= 0.95 with both kinds planted): the hash finds candidates, the colours
    confirm them."""
    originals, copies = planted_set(200, seed=5)
    alike = [lookalike(data, i) for i, data in enumerate(originals)]
    n = len(originals)
    prints = [fingerprint(data) for data in originals + copies + alike]
    found = {(i, j) for i, j, _ in near_pairs(prints)}
    copied = {(i, n + i) for i in range(n)}
    true = len(found & copied)
    assert true / n >= 0.97  # recall
    assert true / len(found) >= 0.95  # precision
    by_hash = {(i, j) for i, j, _ in close_pairs(p[0] for p in prints)}
    assert len(by_hash & {(i, 2 * n + i) for i in range(n)}) > n // 2  # the look-alikes the hash alone takes


# ---------------------------------------------------------------- the report


def test_stats_report_planted_near_duplicates_across_splits(cli, tmp_path):
    pairs = planted(tmp_path / "images")
    out = tmp_path / "out"
    result = cli.convert("images", tmp_path / "images", "--out", out, "--split", "train=0.5,test=0.5")
    assert result.exit_code == 0, result.stderr
    where = split_of_files(out)
    across = [p for p in pairs if len({where[f] for f in p}) == 2]
    assert len(across) >= 4  # enough planted pairs straddle the split for recall to mean something
    report = json.loads(cli.inspect(out, "--stats", "--json").stdout)["leakage"]
    found = [{r["filename"] for r in pair["records"]} for pair in report["near_duplicates"]]
    assert all(len({r["split"] for r in pair["records"]}) == 2 for pair in report["near_duplicates"])
    recall = sum(p in found for p in across) / len(across)
    precision = sum(f in pairs for f in found) / max(len(found), 1)
    assert recall >= 0.9 and precision >= 0.8, (recall, precision, found, across)
    assert report["near_duplicate_pairs"] == len(found)
    text = cli.inspect(out, "--stats").stdout
    assert f"near-duplicates: {len(found)} pairs of similar images in different splits" in text
    first = report["near_duplicates"][0]["records"]
    assert f"{first[0]['split']}:{first[0]['filename']} ~ {first[1]['split']}:{first[1]['filename']}" in text


# ---------------------------------------------------------------- --dedupe


def test_dedupe_near_keeps_every_planted_pair_in_one_split_whatever_the_workers(cli, tmp_path):
    pairs = planted(tmp_path / "images")
    runs = {}
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}"
        result = cli.convert("images", tmp_path / "images", "--out", out, "--split", "train=0.5,test=0.5",
                             "--dedupe", "near", "--workers", workers, "--json")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        runs[workers] = {p.name: p.read_bytes() for p in out.iterdir() if ".tfrecord-" in p.name}
        where = split_of_files(out)
        assert all(len({where[f] for f in p}) == 1 for p in pairs)
        assert len(where) == 75  # nothing dropped
        summary = json.loads(result.stdout)
        assert any("--dedupe near: 15 cluster(s) of duplicates (30 images)" in w for w in summary["warnings"])
        assert any(w.startswith("split 75 examples in 60 whole groups: train 0.") for w in summary["warnings"])
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["options"]["dedupe_found"] == {"clusters": 15, "images": 30, "dropped": 0}
    assert runs["1"] == runs["2"]
    report = json.loads(cli.inspect(tmp_path / "out1", "--stats", "--json").stdout)["leakage"]
    assert report["near_duplicate_pairs"] == 0


def test_look_alikes_in_other_colours_are_neither_grouped_nor_reported(cli, tmp_path):
    """Pictures whose brightness layout matches a planted picture's, in other colours:
    --dedupe near groups only the planted copies, and --stats reports none of them."""
    pairs = planted(tmp_path / "images")
    alike = []
    for i in range(15):
        name = f"l{i:03d}_colours.jpg"
        (tmp_path / "images" / name).write_bytes(lookalike((tmp_path / "images" / f"p{i:03d}.jpg").read_bytes(), i))
        alike.append({f"p{i:03d}.jpg", name})
    result = cli.convert("images", tmp_path / "images", "--out", tmp_path / "out", "--split", "train=0.5,test=0.5",
                         "--dedupe", "near", "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["options"]["dedupe_found"] == {"clusters": 15, "images": 30, "dropped": 0}  # the copies alone
    where = split_of_files(tmp_path / "out")
    assert all(len({where[f] for f in p}) == 1 for p in pairs)
    assert sum(len({where[f] for f in p}) == 2 for p in alike) >= 3  # look-alikes are split as strangers are
    plain = tmp_path / "plain"
    assert cli.convert("images", tmp_path / "images", "--out", plain, "--split", "train=0.5,test=0.5").exit_code == 0
    report = json.loads(cli.inspect(plain, "--stats", "--json").stdout)["leakage"]
    reported = [{r["filename"] for r in pair["records"]} for pair in report["near_duplicates"]]
    assert not [p for p in reported if p in alike]
    assert all(p in pairs for p in reported)


def test_dedupe_drop_keeps_the_first_of_each_cluster(cli, tmp_path):
    pairs = planted(tmp_path / "images")
    out = tmp_path / "out"
    result = cli.convert("images", tmp_path / "images", "--out", out, "--dedupe", "drop")
    assert result.exit_code == 0, result.stderr
    kept = split_of_files(out)
    assert len(kept) == 60
    assert all([f for f in sorted(p) if f in kept] == [min(p)] for p in pairs)  # the first by path (the copy)
    assert "--dedupe drop left out 15 near-duplicate image(s)" in result.stderr


def test_dedupe_exact_groups_identical_files(cli, tmp_path):
    root = tmp_path / "images"
    root.mkdir()
    for i in range(20):
        (root / f"p{i:02d}.jpg").write_bytes(jpeg(picture(i)))
    for i in range(5):
        (root / f"same{i}.jpg").write_bytes((root / f"p{i:02d}.jpg").read_bytes())
    out = tmp_path / "out"
    result = cli.convert("images", root, "--out", out, "--split", "train=0.5,test=0.5", "--dedupe", "exact")
    assert result.exit_code == 0, result.stderr
    where = split_of_files(out)
    assert all(where[f"same{i}.jpg"] == where[f"p{i:02d}.jpg"] for i in range(5))
    assert "--dedupe exact: 5 cluster(s) of duplicates (10 images)" in result.stderr


# ---------------------------------------------------------------- --group-column


def _grouped_csv(root, groups=12, per_group=(1, 6)):
    rng = np.random.default_rng(3)
    root.mkdir(parents=True, exist_ok=True)
    rows, group_of = ["file,patient,label"], {}
    n = 0
    for g in range(groups):
        for _ in range(rng.integers(*per_group)):
            name = f"img{n:03d}.png"
            Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(root / name)
            rows.append(f"{name},P{g:02d},{'sick' if g % 3 == 0 else 'well'}")
            group_of[name] = f"P{g:02d}"
            n += 1
    (root / "labels.csv").write_text("\n".join(rows) + "\n")
    return group_of


def test_groups_never_straddle_splits_and_the_achieved_fractions_are_reported(cli, tmp_path):
    group_of = _grouped_csv(tmp_path / "images")
    out = tmp_path / "out"
    result = cli.convert("images", tmp_path / "images", "--labels", tmp_path / "images" / "labels.csv",
                         "--label-column", "label", "--group-column", "patient", "--split",
                         "train=0.6,validation=0.2,test=0.2", "--stratify", "--out", out, "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    where = split_of_files(out)
    assert len(where) == len(group_of)
    for patient in set(group_of.values()):
        assert len({where[f] for f, p in group_of.items() if p == patient}) == 1
    counts = {s: sum(v == s for v in where.values()) for s in ("train", "validation", "test")}
    fractions = ", ".join(f"{s} {counts[s] / len(where):.3f}" for s in counts)
    warnings = json.loads(result.stdout)["warnings"]
    assert f"split {len(where)} examples in 12 whole groups: {fractions} (asked 0.6, 0.2, 0.2)" in warnings
    assert abs(counts["train"] / len(where) - 0.6) < 0.2 and min(counts.values()) > 0
    spec = {"patient": tf.io.FixedLenFeature((), tf.string)}  # the group column stays a feature
    first = next(iter(tf.data.TFRecordDataset(str(next(out.glob("*-train.tfrecord-*"))))))
    assert tf.io.parse_single_example(first, spec)["patient"].numpy().decode().startswith("P")


def test_group_column_needs_a_split_and_a_real_column(cli, tmp_path):
    _grouped_csv(tmp_path / "images")
    csv = tmp_path / "images" / "labels.csv"
    no_split = cli.convert("images", tmp_path / "images", "--labels", csv, "--group-column", "patient",
                           "--out", tmp_path / "o")  # fmt: skip
    assert no_split.exit_code == 2 and "--group-column keeps groups whole across --split's fractions" in no_split.stderr
    wrong = cli.convert("images", tmp_path / "images", "--labels", csv, "--group-column", "subject", "--split",
                        "train=0.5,test=0.5", "--out", tmp_path / "o")  # fmt: skip
    assert wrong.exit_code == 2 and "--group-column 'subject' is not a column" in wrong.stderr
    fixed = cli.convert("images", tmp_path / "images", "--labels", csv, "--split-column", "label", "--dedupe",
                        "near", "--out", tmp_path / "o")  # fmt: skip
    assert fixed.exit_code == 2 and "--dedupe drop keeps one of each" in fixed.stderr


def test_detection_dedupe_keeps_a_picture_and_its_copy_together(cli, tmp_path):
    pairs = planted(tmp_path / "images", distinct=20, copied=6)
    rows = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
    for path in sorted((tmp_path / "images").iterdir()):
        w, h = Image.open(path).size
        rows.append(f"{path.name},{w},{h},thing,1,1,{w // 2},{h // 2}")
    (tmp_path / "boxes.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    result = cli.convert("detection", tmp_path / "images", "--annotations", tmp_path / "boxes.csv", "--out", out,
                         "--split", "train=0.5,test=0.5", "--dedupe", "near")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    spec = {"image/filename": tf.io.FixedLenFeature((), tf.string)}
    where = {}
    for shard in out.glob("*.tfrecord-*"):
        for record in tf.data.TFRecordDataset(str(shard)):
            where[tf.io.parse_single_example(record, spec)["image/filename"].numpy().decode()] = shard.name
    assert len(where) == 26 and all(len({where[f].split(".tfrecord")[0] for f in p}) == 1 for p in pairs)


@pytest.mark.parametrize("mode", ["near"])
def test_an_unreadable_image_is_its_own_cluster_and_is_named_later(cli, tmp_path, mode):
    planted(tmp_path / "images", distinct=6, copied=2)
    (tmp_path / "images" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really")
    result = cli.convert("images", tmp_path / "images", "--out", tmp_path / "out", "--split", "train=0.5,test=0.5",
                         "--dedupe", mode)  # fmt: skip
    assert result.exit_code == 1 and "broken.jpg" in result.stderr and "Traceback" not in result.stderr


def test_the_near_duplicate_report_counts_and_lists_what_comparing_every_pair_does():
    """Records sharing a hash are counted by split and digest, not pair by pair: the same
    count and the same first pairs as comparing every pair, and linear in a group's size."""
    from tfr_convert.inspect.stats import LISTED_NEAR, near_duplicate_pairs

    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**63, 12, dtype=np.uint64)
    colours = [bytes(32), bytes([3] * 32), bytes([100] * 32)]  # the first two a copy's, the third not
    found = []
    for k in range(400):
        h = int(base[k % 12]) ^ (1 << int(rng.integers(0, 64))) * int(rng.random() < 0.3)
        found.append(((h, colours[int(rng.integers(0, 3))]), ["train", "test", "validation"][int(rng.integers(0, 3))],
                      "f", k, None, bytes([int(rng.integers(0, 4))])))  # fmt: skip
    every = []
    for i in range(len(found)):
        for j in range(i + 1, len(found)):
            a, b = found[i], found[j]
            d = bin(a[0][0] ^ b[0][0]).count("1")
            alike = (a[0][1] == colours[2]) == (b[0][1] == colours[2])
            if d <= THRESHOLD and alike and a[1] != b[1] and a[5] != b[5]:
                every.append((d, i, j))
    every.sort()
    count, listed = near_duplicate_pairs(found)
    assert count == len(every) > LISTED_NEAR
    assert [(p["distance"], p["records"][0]["record"], p["records"][1]["record"]) for p in listed] == every[
        :LISTED_NEAR
    ]
    copies = [((7, bytes(32)), "train" if k % 2 else "test", "f", k, None, bytes([k % 3])) for k in range(20_000)]
    count, listed = near_duplicate_pairs(copies)  # quadratic before: 2 * 10**8 comparisons
    cells = Counter((split, digest) for _, split, _, _, _, digest in copies)
    expected = sum(n * m for (s1, d1), n in cells.items() for (s2, d2), m in cells.items() if s1 < s2 and d1 != d2)
    assert count == expected and len(listed) == LISTED_NEAR
