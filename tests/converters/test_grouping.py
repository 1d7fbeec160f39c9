"""The seam between --group-column / --dedupe and the splitter (converters/listing/grouping.py):
which items share a group, what is dropped, and what the run says about it."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tfr_convert.converters.listing.grouping import describe_clusters, duplicate_pairs, group_keys, plan_groups


def _png(seed: int, size: int = 32) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def test_groups_join_through_any_chain_of_pairs_and_are_named_by_their_smallest_member():
    assert group_keys(6, None, [(4, 5), (1, 4), (2, 3)]) == ["#0", "#1", "#2", "#2", "#1", "#1"]
    assert group_keys(3, None, []) == ["#0", "#1", "#2"]


def test_a_group_column_joins_its_values_and_a_pair_joins_two_values_under_the_first():
    values = ["a", "b", "a", "c", "b"]
    assert group_keys(5, values, []) == ["a", "b", "a", "c", "b"]
    assert group_keys(5, values, [(3, 4)]) == ["a", "b", "a", "b", "b"]  # c's item is a copy of b's


def test_clusters_are_counted_and_a_few_named_by_their_first_three_files():
    keys = ["#0", "#0", "#2", "#0", "#0", "#5", "#5", "#7", "#8", "#8", "#10", "#10"]
    names = [f"f{i}" for i in range(len(keys))]
    assert describe_clusters(keys, names) == (
        4,
        10,
        "f0 ~ f1 ~ f3 ...; f5 ~ f6; f8 ~ f9; ...",
    )
    assert describe_clusters(keys[:7], names[:7], shown=2) == (2, 6, "f0 ~ f1 ~ f3 ...; f5 ~ f6")
    assert describe_clusters(["#0", "#0", "#0"], ["a", "b", "c"]) == (1, 3, "a ~ b ~ c")
    assert describe_clusters(["#0", "#1"], ["a", "b"]) == (0, 0, "")


@pytest.mark.parametrize("workers", [1, 3])
def test_exact_copies_pair_with_the_first_copy_and_an_unreadable_file_with_none(workers):
    pictures = [_png(0), _png(1), _png(0), b"gone", _png(1), _png(0)]

    def read(i: int) -> bytes:
        if pictures[i] == b"gone":
            raise OSError("vanished")
        return pictures[i]

    assert duplicate_pairs(read, len(pictures), "exact", workers) == [(0, 2), (0, 5), (1, 4)]


def test_near_copies_pair_once_per_distinct_picture():
    base = _png(3, 64)
    again = Image.open(io.BytesIO(base))
    buffer = io.BytesIO()
    again.save(buffer, "JPEG", quality=90)  # the same picture, other bytes
    pictures = [base, _png(4, 64), buffer.getvalue(), base]
    assert duplicate_pairs(lambda i: pictures[i], 4, "near", 2) == [(0, 2), (0, 3)]


def test_drop_keeps_the_first_of_each_cluster_and_says_how_many_it_left_out():
    pictures = [_png(0), _png(1), _png(0), _png(0), _png(2)]
    names = [f"p{i}.png" for i in range(5)]
    kept, groups, found, message = plan_groups(names, lambda i: pictures[i], "drop", None, "images")
    assert kept == [0, 1, 4] and groups == ["#0", "#1", "#2"]
    assert found == {"clusters": 1, "images": 3, "dropped": 2}
    assert message == (
        "images: --dedupe drop left out 2 near-duplicate image(s), keeping the first by path of each of "
        "1 cluster(s) (p0.png ~ p2.png ~ p3.png)"
    )
    kept, groups, found, message = plan_groups(names, lambda i: pictures[i], "exact", ["x", "y", "z", "w", "y"], "in")
    assert kept == [0, 1, 2, 3, 4] and groups == ["x", "y", "x", "x", "y"]
    assert found == {"clusters": 1, "images": 3, "dropped": 0}
    assert (
        message
        == "in: --dedupe exact: 1 cluster(s) of duplicates (3 images), each kept whole in one split (p0.png ~ p2.png ~ p3.png)"
    )
    assert plan_groups(names[:2], lambda i: pictures[i], "drop", None, "in")[2:] == (
        {"clusters": 0, "images": 0, "dropped": 0},
        None,
    )
    assert plan_groups(names, lambda i: pictures[i], None, None, "in") == (
        [0, 1, 2, 3, 4],
        ["#0", "#1", "#2", "#3", "#4"],
        None,
        None,
    )
