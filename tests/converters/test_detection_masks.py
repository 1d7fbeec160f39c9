"""tfr-convert detection --masks and COCO keypoints: instance masks from COCO polygons and
RLE (drawn as pycocotools draws them) and from VOC's SegmentationObject PNGs, keypoints
from a person_keypoints file; read back through the Object Detection API's decoder keys,
through TFDS, and through pycocotools on the same annotations."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import tensorflow_datasets as tfds
from PIL import Image
from pycocotools import mask as coco_mask

from detection_inputs import OD_API_KEYS, write_images, write_voc
from mask_inputs import KEYPOINTS, MASK_KEYS, SKELETON, coco_case, coco_dataset, decoded_masks, parsed, write_coco
from tfr_convert.dataset import coco_rle


def test_polygons_and_rle_decode_to_the_masks_pycocotools_draws():
    rng = random.Random(7)
    for trial in range(400):
        h, w = rng.randint(1, 50), rng.randint(1, 50)
        polygons = []
        for _ in range(rng.randint(1, 3)):
            points = []
            for _ in range(rng.randint(3, 10)):  # vertices inside, on and past the edges, some repeated
                points += [rng.choice([rng.uniform(-4, w + 4), rng.randint(0, w), rng.uniform(0, w)]),
                           rng.choice([rng.uniform(-4, h + 4), rng.randint(0, h), round(rng.uniform(0, h), 1)])]  # fmt: skip
            if rng.random() < 0.2:
                points += points[-2:]
            polygons.append(points)
        want = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(polygons, h, w)))
        assert np.array_equal(coco_rle.decode(polygons, h, w), want), (h, w, polygons)
        mask = (np.random.default_rng(trial).random((h, w)) < rng.random()).astype(np.uint8)
        compressed = coco_mask.encode(np.asfortranarray(mask))
        assert coco_rle.encode(mask) == {"size": [h, w], "counts": compressed["counts"].decode()}
        assert np.array_equal(coco_rle.decode({"size": [h, w], "counts": compressed["counts"].decode()}, h, w), mask)
        uncompressed = {"size": [h, w], "counts": coco_rle.to_runs(mask).tolist()}
        assert np.array_equal(
            coco_rle.decode(uncompressed, h, w), coco_mask.decode(coco_mask.frPyObjects(uncompressed, h, w))
        )


def test_coco_masks_reach_the_api_decoder_and_tfds_equal_to_pycocotools(cli, tmp_path):
    from pycocotools.coco import COCO

    result, out, annotations = coco_case(cli, tmp_path, "--masks")
    assert result.exit_code == 0, result.stderr
    coco = COCO(str(annotations))
    examples = parsed(out)
    for image_id, info in coco.imgs.items():
        ex = examples[info["file_name"]]
        masks = decoded_masks(ex)
        wanted = [coco.annToMask(a) for a in coco.loadAnns(coco.getAnnIds(imgIds=image_id))]
        assert len(masks) == len(wanted) == len(ex["image/object/bbox/xmin"])
        for got, want in zip(masks, wanted, strict=True):
            assert got.shape == (info["height"], info["width"]) and set(np.unique(got)) <= {0, 1}
            assert np.array_equal(got, want)
    assert list(examples["a.jpg"]["image/object/is_crowd"]) == [0, 0, 1]
    builder = tfds.builder_from_directory(str(out))
    for ex in tfds.as_numpy(builder.as_dataset(split="train")):
        objects = ex["image"]["object"]
        name = ex["image"]["filename"].decode()
        n = len(objects["bbox"]["xmin"])
        if n:
            assert objects["mask"].shape == (n, ex["image"]["height"], ex["image"]["width"], 1)
            assert np.array_equal(objects["mask"][..., 0], np.stack(decoded_masks(examples[name])))
        else:
            assert objects["mask"].shape[0] == 0


def test_keypoints_round_trip_normalized_with_names_and_skeleton(cli, tmp_path):
    result, out, _ = coco_case(cli, tmp_path)
    assert result.exit_code == 0, result.stderr
    examples = parsed(out)
    for name, (w, h, objects) in coco_dataset().items():
        ex = examples[name]
        want = np.array([p if p is not None else [0] * 15 for *_, p in objects], np.float64).reshape(-1, 3)
        assert np.abs(ex["image/object/keypoint/x"] - want[:, 0] / w).max(initial=0) <= 1e-6
        assert np.abs(ex["image/object/keypoint/y"] - want[:, 1] / h).max(initial=0) <= 1e-6
        assert list(ex["image/object/keypoint/visibility"]) == want[:, 2].astype(int).tolist()
        assert [t.decode() for t in ex["image/object/keypoint/text"]] == KEYPOINTS * len(objects)
        assert list(ex["image/object/keypoint/num"]) == [sum(v > 0 for v in (p or [])[2::3]) for *_, p in objects]
    assert json.loads((out / "keypoints.json").read_text()) == {"names": KEYPOINTS, "skeleton": SKELETON}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["keypoints"] == {"names": KEYPOINTS, "skeleton": SKELETON}
    # TFDS: one row of K per object; the API's decoder reshapes the flat lists the same way
    builder = tfds.builder_from_directory(str(out))
    for ex in tfds.as_numpy(builder.as_dataset(split="train")):
        keypoint = ex["image"]["object"]["keypoint"]
        n = len(ex["image"]["object"]["bbox"]["xmin"])
        assert keypoint["x"].shape == keypoint["visibility"].shape == (n, len(KEYPOINTS))
        flat = examples[ex["image"]["filename"].decode()]
        assert np.array_equal(keypoint["x"].reshape(-1), flat["image/object/keypoint/x"])


def test_a_coco_file_without_keypoints_or_masks_writes_neither(cli, tmp_path):
    result, out, _ = coco_case(cli, tmp_path, keypoints=False, dataset={
        "a.jpg": (64, 48, [("dog", [[1, 1, 9, 1, 9, 9]], 0, None)])})  # fmt: skip
    assert result.exit_code == 0, result.stderr
    features = json.loads((out / "features.json").read_text())
    assert "mask" not in json.dumps(features) and "keypoint" not in json.dumps(features)
    assert not (out / "keypoints.json").exists()


def test_voc_segmentation_object_pngs_give_one_mask_per_object(cli, tmp_path):
    dataset = {
        "a.jpg": (64, 48, [("cat", 2, 3, 30, 40), ("dog", 20, 10, 64, 48)]),
        "b.jpg": (50, 70, [("bird", 0, 0, 25, 35)]),
        "d.jpg": (32, 32, []),
    }
    images = write_images(tmp_path / "VOC" / "JPEGImages", dataset)
    write_voc(tmp_path / "VOC" / "Annotations", dataset)
    masks_dir = tmp_path / "VOC" / "SegmentationObject"
    masks_dir.mkdir()
    wanted = {}
    for name, (w, h, boxes) in dataset.items():
        if not boxes:
            continue
        indices = np.zeros((h, w), np.uint8)
        for n, (_, x0, y0, x1, y1) in enumerate(boxes, 1):
            indices[y0 + 1 : y1 - 1, x0 + 1 : x1 - 1] = n
            indices[y0, x0:x1] = 255  # the outline VOC leaves void
        picture = Image.fromarray(indices, "P")
        picture.putpalette([0, 0, 0, 128, 0, 0, 0, 128, 0] + [0] * (3 * 252) + [224, 224, 192])
        picture.save(masks_dir / (name.rsplit(".", 1)[0] + ".png"))
        wanted[name] = [(indices == n).astype(np.uint8) for n in range(1, len(boxes) + 1)]
    out = tmp_path / "out"
    result = cli.convert(
        "detection", images, "--annotations", tmp_path / "VOC" / "Annotations", "--masks", "--out", out
    )
    assert result.exit_code == 0, result.stderr
    examples = parsed(out, {**OD_API_KEYS, "image/object/mask": MASK_KEYS["image/object/mask"]})
    for name, masks in wanted.items():
        got = decoded_masks(examples[name])
        assert len(got) == len(masks) and all(np.array_equal(g, m) for g, m in zip(got, masks, strict=True))
    assert list(examples["d.jpg"]["image/object/mask"]) == []  # a negative: no objects, no masks

    (masks_dir / "b.png").unlink()  # VOC segments some images only
    result = cli.convert("detection", images, "--annotations", tmp_path / "VOC" / "Annotations", "--masks",
                         "--out", tmp_path / "out2")  # fmt: skip
    assert result.exit_code == 1 and f"no instance mask {masks_dir / 'b.png'}" in result.stderr
    assert "--on-error skip" in result.stderr and not (tmp_path / "out2").exists()
    result = cli.convert("detection", images, "--annotations", tmp_path / "VOC" / "Annotations", "--masks",
                         "--out", tmp_path / "out2", "--on-error", "skip")  # fmt: skip
    assert result.exit_code == 0 and sorted(parsed(tmp_path / "out2")) == ["a.jpg", "d.jpg"]


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (
            np.zeros((47, 64), np.uint8),
            "SegmentationObject/a.png is 64x47, the image 64x48: a mask must be its image's size",
        ),
        (np.full((48, 64), 3, np.uint8), "SegmentationObject/a.png: holds object 3, but"),
    ],
    ids=["size", "object"],
)
def test_a_voc_mask_of_another_size_or_object_is_exit_1_naming_it(cli, tmp_path, mask, message):
    dataset = {"a.jpg": (64, 48, [("cat", 2, 3, 30, 40), ("dog", 20, 10, 64, 48)])}
    images = write_images(tmp_path / "VOC" / "JPEGImages", dataset)
    write_voc(tmp_path / "VOC" / "Annotations", dataset)
    (tmp_path / "VOC" / "SegmentationObject").mkdir()
    Image.fromarray(mask, "L").save(tmp_path / "VOC" / "SegmentationObject" / "a.png")
    out = tmp_path / "out"
    result = cli.convert(
        "detection", images, "--annotations", tmp_path / "VOC" / "Annotations", "--masks", "--out", out
    )
    assert result.exit_code == 1 and message in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert "lists 2" in result.stderr or "size" in message
    assert not out.exists()


def test_resized_images_get_their_masks_resized_by_nearest_neighbour(cli, tmp_path):
    result, out, annotations = coco_case(cli, tmp_path, "--masks", "--resize", "32x24")
    assert result.exit_code == 0, result.stderr
    from pycocotools.coco import COCO

    coco = COCO(str(annotations))
    ex = parsed(out)["a.jpg"]
    for got, ann in zip(decoded_masks(ex), coco.loadAnns(coco.getAnnIds(imgIds=1)), strict=True):
        want = np.asarray(Image.fromarray(coco.annToMask(ann)).resize((32, 24), Image.Resampling.NEAREST))
        assert got.shape == (24, 32) and np.array_equal(got, want)


BAD_COCO = [
    ("size", lambda doc: doc["annotations"][2]["segmentation"].update(size=[47, 64]),
     "annotations[2]: RLE size is 47x64 (height x width), the image 48x64"),
    ("polygon", lambda doc: doc["annotations"][0].update(segmentation=[[1, 2, 3, 4]]),
     "annotations[0]: polygon 0 has 4 numbers: x, y pairs of 3 points or more"),
    ("counts", lambda doc: doc["annotations"][3]["segmentation"]["counts"].append(5),
     "annotations[3]: RLE counts cover 3505 pixels, the image 70x50 = 3500"),
    ("missing", lambda doc: doc["annotations"][1].pop("segmentation"),
     "annotations[1]: no segmentation, which --masks draws"),
    ("string", lambda doc: doc["annotations"][2]["segmentation"].update(counts="0~~"),
     "annotations[2]: RLE counts: character '~' at 1 is not one of '0'..'o'"),
]  # fmt: skip


def _refused(cli, tmp_path, damage, message, *args):
    """The COCO case with `damage` done to its annotations: exit 1 naming the entry, nothing written."""
    _, _, annotations = coco_case(cli, tmp_path)
    doc = json.loads(annotations.read_text())
    damage(doc)
    annotations.write_text(json.dumps(doc))
    out = tmp_path / "bad"
    result = cli.convert("detection", tmp_path / "images", "--annotations", annotations, "--out", out, *args)
    assert result.exit_code == 1, result.stderr
    assert f"{annotations} {message}" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(("case", "damage", "message"), BAD_COCO, ids=[c for c, _, _ in BAD_COCO])
def test_a_bad_segmentation_is_exit_1_naming_the_annotation(cli, tmp_path, case, damage, message):
    _refused(cli, tmp_path, damage, message, "--masks")


BAD_KEYPOINTS = [
    ("count", lambda doc: doc["annotations"][0].update(keypoints=[1, 1, 2] * 4),
     "annotations[0]: 4 keypoints, but category 'person' names 5"),
    ("visibility", lambda doc: doc["annotations"][0]["keypoints"].__setitem__(2, 3),
     "annotations[0]: keypoints[2] is 3, a visibility: 0, 1 or 2"),
    ("outside", lambda doc: doc["annotations"][0]["keypoints"].__setitem__(0, 65),
     "annotations[0]: keypoint 'nose' at (65, 8) lies outside the 64x48 image"),
    ("unnamed", lambda doc: doc["annotations"][1].update(keypoints=[1, 1, 2]),
     "annotations[1]: 1 keypoints, but category 'dog' names none"),
    ("lists", lambda doc: doc["categories"][1].update(keypoints=["tail"]),
     "categories[1]: 'dog' names other keypoints than 'person'"),
    ("skeleton", lambda doc: doc["categories"][0].update(skeleton=[[1, 6]]),
     "categories[0]: skeleton is [[1, 6]], not pairs of keypoint numbers 1..5"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "damage", "message"), BAD_KEYPOINTS, ids=[c for c, _, _ in BAD_KEYPOINTS])
def test_bad_keypoints_are_exit_1_naming_the_annotation(cli, tmp_path, case, damage, message):
    _refused(cli, tmp_path, damage, message)


def test_masks_from_annotations_that_hold_none_is_a_usage_error(cli, tmp_path):
    images = write_images(tmp_path / "images", {"a.jpg": (8, 8, [])})
    boxes = tmp_path / "boxes.csv"
    boxes.write_text("filename,width,height,class,xmin,ymin,xmax,ymax\na.jpg,8,8,cat,1,1,5,5\n")
    result = cli.convert("detection", images, "--annotations", boxes, "--masks", "--out", tmp_path / "out")
    assert result.exit_code == 2, result.stderr
    assert "--masks draws COCO segmentations or VOC SegmentationObject PNGs; csv annotations hold none" in result.stderr
    result = cli.convert("detection", images, "--annotations", write_voc(tmp_path / "Annotations", {
        "a.jpg": (8, 8, [("cat", 1, 1, 5, 5)])}), "--masks", "--out", tmp_path / "out")  # fmt: skip
    assert result.exit_code == 1 and f"{tmp_path / 'SegmentationObject'}: no such folder" in result.stderr


def test_grid_tints_each_instance_and_joins_keypoints_by_the_skeleton(cli, tmp_path):
    dataset = {"white.png": (80, 80, [("person", [[20, 20, 60, 20, 60, 60, 20, 60]], 0,
                                         [30, 30, 2, 50, 50, 2, 0, 0, 0, 70, 10, 1, 0, 0, 0])])}  # fmt: skip
    (tmp_path / "images").mkdir()
    Image.fromarray(np.full((80, 80, 3), 255, np.uint8)).save(tmp_path / "images" / "white.png")
    annotations = write_coco(tmp_path / "person_keypoints.json", dataset)
    out = tmp_path / "out"
    result = cli.convert("detection", tmp_path / "images", "--annotations", annotations, "--masks", "--out", out)
    assert result.exit_code == 0, result.stderr
    sheet = tmp_path / "grid.png"
    result = cli.inspect(out, "--grid", sheet)
    assert result.exit_code == 0, result.stderr
    pixels = np.asarray(Image.open(sheet).convert("RGB")).astype(int)[:96, :96]

    def where(colour, tolerance=3):
        rows, cols = np.nonzero((np.abs(pixels - colour) <= tolerance).all(axis=2))
        return rows, cols

    # the person (label 1) tinted in class 1's colour over white, inside its 20..60 square (of 80, in 92 px)
    rows, cols = where(np.round(255 * 0.55 + np.array([60, 180, 75]) * 0.45))
    assert len(rows) > 500 and 24 <= cols.min() <= 28 and 68 <= cols.max() <= 72
    rows, cols = where((0, 255, 255), 0)

    def near(x, y):  # a point of the picture, in the tile: 92 px for 80, 2 px in
        return np.any((np.abs(cols - (2 + x * 1.15)) <= 2) & (np.abs(rows - (2 + y * 1.15)) <= 2))

    # limbs between labelled points (nose-left_eye, left_eye-left_hand); none to unlabelled right_eye at (0, 0)
    assert near(40, 40) and near(60, 30) and not near(15, 15)
    rows, cols = where((255, 255, 0), 0)  # three labelled points; unlabelled ones are not drawn
    assert len(rows) > 0 and cols.max() >= 78  # (70, 10), the hidden one, drawn too


def test_stats_count_instance_masks_per_image_and_images_with_each_class(cli, tmp_path):
    result, out, _ = coco_case(cli, tmp_path, "--masks")
    assert result.exit_code == 0, result.stderr
    report = json.loads(cli.inspect(out, "--stats", "--json").stdout)
    assert report["features"]["image/object/mask"]["instances"] == {
        "images": 3, "instances": 4, "per_image": {"max": 3, "mean": 4 / 3}, "images_without": 1}  # fmt: skip
    assert report["boxes"]["images_share"] == {"dog": 1 / 3, "person": 2 / 3}
    text = cli.inspect(out, "--stats").stdout
    assert "image/object/mask: 4 instance masks in 3 images (1 without any), per image up to 3" in text
    assert "images with each class: dog 33%, person 67%" in text  # in the order of the box counts (a tie)


def test_export_to_coco_writes_masks_and_keypoints_that_convert_back_byte_for_byte(cli, tmp_path):
    result, out, _ = coco_case(cli, tmp_path, "--masks", "--name", "people")
    assert result.exit_code == 0, result.stderr
    exported = tmp_path / "exported"
    result = cli.export(out, "--to", "coco", "--out", exported)
    assert result.exit_code == 0, result.stderr
    doc = json.loads((exported / "annotations.json").read_text())
    person = next(c for c in doc["categories"] if c["name"] == "person")
    assert person["keypoints"] == KEYPOINTS and person["skeleton"] == SKELETON
    assert "keypoints" not in next(c for c in doc["categories"] if c["name"] == "dog")
    assert all(isinstance(a["segmentation"]["counts"], str) for a in doc["annotations"])  # compressed RLE
    assert doc["annotations"][0]["keypoints"] == [10, 8, 2, 14, 6, 2, 8, 6, 1, 0, 0, 0, 18.5, 17.25, 2]
    again = tmp_path / "again"
    result = cli.convert("detection", exported / "images", "--annotations", exported / "annotations.json",
                         "--masks", "--out", again, "--no-shuffle", "--name", "people")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    shards = sorted(p.name for p in out.glob("*.tfrecord-*"))
    assert shards and shards == sorted(p.name for p in again.glob("*.tfrecord-*"))
    assert all((out / s).read_bytes() == (again / s).read_bytes() for s in shards)
