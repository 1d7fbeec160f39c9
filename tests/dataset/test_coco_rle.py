"""The COCO mask decoder (dataset/coco_rle.py) held to pycocotools in this process:
polygons of every shape (axis-parallel, diagonal, repeated vertices, outside the image
within the margin, integer and fractional), RLEs compressed and not, and the codec of
the compressed counts both ways."""

from __future__ import annotations

import numpy as np
import pytest
from pycocotools import mask as coco_mask

from tfr_convert.dataset import coco_rle


def _theirs(polygons, h, w):
    return coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(polygons, h, w)))


@pytest.mark.parametrize("seed", range(4))
def test_polygons_of_every_shape_are_drawn_as_pycocotools_draws_them(seed):
    rng = np.random.default_rng(seed)
    for _ in range(150):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        polygons = []
        for _ in range(int(rng.integers(1, 3))):
            n = int(rng.integers(3, 12))
            kind = rng.integers(5)
            if kind == 0:  # integer corners, axis-parallel and diagonal edges, repeats
                xy = rng.integers(-3, max(h, w) + 3, (n, 2)).astype(float)
                xy[rng.integers(n)] = xy[0]
            elif kind == 1:  # on the half pixels, where rounding decides
                xy = rng.integers(-6, 2 * max(h, w) + 6, (n, 2)) / 2
            elif kind == 4:  # a walk of steps one finer-grid unit long: the shortest edges, each way
                steps = rng.integers(-1, 2, (int(rng.integers(3, 80)), 2))
                xy = (rng.integers(0, coco_rle.SCALE * max(h, w), 2) + np.cumsum(steps, axis=0)) / coco_rle.SCALE
            elif kind == 2:  # far outside, within the margin
                margin = max(h, w, coco_rle.MARGIN)
                xy = np.stack([rng.uniform(-margin, w + margin, n), rng.uniform(-margin, h + margin, n)], axis=1)
            else:
                xy = rng.uniform(-2, max(h, w) + 2, (n, 2))
            polygons.append(xy.reshape(-1).tolist())
        assert np.array_equal(coco_rle.decode(polygons, h, w), _theirs(polygons, h, w)), (h, w, polygons)


def test_masks_encode_to_pycocotools_strings_and_decode_back():
    rng = np.random.default_rng(9)
    for _ in range(200):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        mask = (rng.random((h, w)) < rng.random()).astype(np.uint8)
        if rng.random() < 0.2:
            mask[:] = rng.integers(2)  # one run
        ours = coco_rle.encode(mask)
        theirs = coco_mask.encode(np.asfortranarray(mask))
        assert ours == {"size": [h, w], "counts": theirs["counts"].decode()}
        assert np.array_equal(coco_rle.decode(ours, h, w), mask)
        assert np.array_equal(coco_rle.decode({"size": [h, w], "counts": theirs["counts"]}, h, w), mask)
        runs = coco_rle.to_runs(mask).tolist()
        assert np.array_equal(coco_rle.decode({"size": [h, w], "counts": runs}, h, w), mask)


def test_counts_of_any_size_survive_the_string_codec():
    rng = np.random.default_rng(2)
    for _ in range(300):
        runs = rng.integers(0, int(rng.choice([3, 40, 2000, 1 << 40])), int(rng.integers(1, 12))).tolist()
        text = coco_rle.counts_to_string(np.array(runs))
        assert coco_rle.counts_from_string(text) == runs
        # pycocotools agrees where its counts fit (32 bits)
        if max(runs) < 1 << 31 and sum(runs) < 1 << 31:
            theirs = coco_mask.frPyObjects({"size": [sum(runs), 1], "counts": runs}, sum(runs), 1)
            assert theirs["counts"].decode() == text


@pytest.mark.parametrize(
    "segmentation, message",
    [
        ([], "an empty list of polygons"),
        ([[1, 2, 3, 4]], "polygon 0 has 4 numbers"),
        ([[0, 0, 1, 1, 2, 2, 3]], "polygon 0 has 7 numbers"),  # an odd count, past the least
        ([[0, 0, 300, 0, 0, 300, 400, 400]], "polygon 0: point 1 (300, 0) lies more than 256 pixels outside"),
        ([[0, 0, 1, 1, 2, "x"]], "polygon 0 is not a list of numbers"),
        ([[0, 0, 1, 1, 2, float("nan")]], "polygon 0 holds a number that is not finite"),
        ([[0, 0, 1, 1, 2, 10**400]], "polygon 0 holds a number past any image"),
        ({"size": [2, 2]}, "neither a list of polygons nor an RLE"),
        ({"size": [2], "counts": [4]}, "RLE size is [2], not [height, width]"),
        ({"size": [2, 3], "counts": [4]}, "RLE size is 2x3 (height x width), the image 2x2"),
        ({"size": [2, 2], "counts": [1, -1, 4]}, "neither a string nor a list of whole numbers"),
        ({"size": [2, 2], "counts": [1, 2]}, "RLE counts cover 3 pixels, the image 2x2 = 4"),
        ({"size": [2, 2], "counts": "1"}, "RLE counts cover 1 pixels"),
        ({"size": [2, 2], "counts": "0@"}, "a negative run ending at character 1"),
        ({"size": [2, 2], "counts": "O"}, "a negative run ending at character 0"),  # -1, the nearest to 0
    ],
)
def test_a_segmentation_that_cannot_be_a_mask_says_why(segmentation, message):
    with pytest.raises(coco_rle.MaskError) as caught:
        coco_rle.decode(segmentation, 2, 2)
    assert message in str(caught.value)
