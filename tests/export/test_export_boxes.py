"""tfr-export of detection datasets that do not use the Object Detection API's keys: a
dataset prepared by TensorFlow Datasets itself (a BBoxFeature in a Sequence, with a
ClassLabel and flags) exports to every box format, and `tfr-convert detection` of that
export holds the same pictures, boxes (float32 for float32), class names and flags;
--box-features names a prefix or a packed feature, and a wrong one is a usage error."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

NAMES = ["jar", "can", "box"]


class Shelves(tfds.core.GeneratorBasedBuilder):
    """Pictures with 0..3 boxes at arbitrary (not whole-pixel) places, no width or height feature."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict({
                "image": tfds.features.Image(encoding_format="png"),
                "image/filename": tfds.features.Text(),
                "objects": tfds.features.Sequence({
                    "bbox": tfds.features.BBoxFeature(),
                    "label": tfds.features.ClassLabel(names=NAMES),
                    "is_difficult": np.bool_,
                }),
            }),
        )  # fmt: skip

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(0, 6), "test": self._generate_examples(6, 9)}

    def _generate_examples(self, first, stop):
        rng = np.random.default_rng(first)
        for i in range(first, stop):
            boxes = []
            for _ in range(i % 4):
                y0, x0 = rng.uniform(0, 0.5, 2)
                boxes.append(tfds.features.BBox(y0, x0, y0 + rng.uniform(0.1, 0.5), x0 + rng.uniform(0.1, 0.5)))
            yield (
                f"k{i}",
                {
                    "image": rng.integers(0, 256, (20 + i, 31 + 2 * i, 3), dtype=np.uint8),
                    "image/filename": f"shelf/{i}.png",
                    "objects": {
                        "bbox": boxes,
                        "label": [int(v) for v in rng.integers(0, 3, len(boxes))],
                        "is_difficult": [bool(k % 2) for k in range(len(boxes))],
                    },
                },
            )


@pytest.fixture(scope="module")
def shelves(tmp_path_factory):
    root = tmp_path_factory.mktemp("tfds")
    Shelves(data_dir=str(root)).download_and_prepare()
    return root / "shelves" / "1.0.0"


def _ok(result):
    assert result.exit_code == 0, result.output
    return result


def _tfds_pictures(directory):
    """{filename: (png bytes, [(xmin, ymin, xmax, ymax) float32], [class name], [difficult])} as TFDS stores them."""
    found = {}
    for path in sorted(directory.glob("*.tfrecord-*")):
        for record in tf.data.TFRecordDataset(str(path)):
            f = tf.train.Example.FromString(record.numpy()).features.feature
            flat = np.array(f["objects/bbox"].float_list.value, np.float32).reshape(-1, 4)
            found[f["image/filename"].bytes_list.value[0].decode()] = (
                f["image"].bytes_list.value[0],
                [tuple(b) for b in flat[:, [1, 0, 3, 2]]],
                [NAMES[i] for i in f["objects/label"].int64_list.value],
                list(f["objects/is_difficult"].int64_list.value),
            )
    return found


def _converted_pictures(directory):
    """The same, from `tfr-convert detection`'s records (the Object Detection API's keys)."""
    found = {}
    for path in sorted(directory.glob("*.tfrecord-*")):
        for record in tf.data.TFRecordDataset(str(path)):
            f = tf.train.Example.FromString(record.numpy()).features.feature
            corners = [np.array(f[f"image/object/bbox/{c}"].float_list.value, np.float32) for c in
                       ("xmin", "ymin", "xmax", "ymax")]  # fmt: skip
            found[f["image/filename"].bytes_list.value[0].decode()] = (
                f["image/encoded"].bytes_list.value[0],
                list(zip(*corners, strict=True)),
                [t.decode() for t in f["image/object/class/text"].bytes_list.value],
                list(f["image/object/difficult"].int64_list.value),
            )
    return found


@pytest.mark.parametrize("fmt", ["coco", "voc", "csv", "yolo"])
def test_a_tfds_prepared_detection_dataset_exports_the_same_boxes_to_every_format(cli, shelves, tmp_path, fmt):
    out = tmp_path / "x"
    summary = json.loads(_ok(cli.export(shelves, "--to", fmt, "--out", out, "--json")).stdout)
    assert {s: e["records"] for s, e in summary["splits"].items()} == {"train": 6, "test": 3}
    # COCO: one instances file a split, as COCO ships its own
    annotations = {"csv": out / "annotations", "voc": out / "Annotations", "coco": out / "annotations",
                   "yolo": out / "labels"}[fmt]  # fmt: skip
    origin = ["--voc-origin", "1"] if fmt == "voc" else []
    _ok(cli.convert("detection", out / "images", "--annotations", annotations, "--out", tmp_path / "again",
                    "--split", "train=1", *origin))  # fmt: skip
    want, got = _tfds_pictures(shelves), _converted_pictures(tmp_path / "again")
    assert sorted(got) == sorted(want) and len(want) >= 6
    for name, (png, boxes, classes, difficult) in want.items():
        assert got[name][0] == png, name
        assert got[name][1] == boxes, name  # float32 for float32
        assert got[name][2] == classes, name
        if fmt == "voc":  # the one format here that keeps the flag
            assert got[name][3] == difficult, name
    if fmt == "coco":
        assert sorted(p.name for p in annotations.iterdir()) == ["instances_test.json", "instances_train.json"]
        documents = [json.loads((annotations / f"instances_{split}.json").read_text()) for split in ("train", "test")]
        for document in documents:
            assert [c["name"] for c in document["categories"]] == NAMES  # a ClassLabel's 0 is category 1
            assert [c["id"] for c in document["categories"]] == [1, 2, 3]
        assert [len(d["images"]) for d in documents] == [6, 3]
        sizes = {i["file_name"]: (i["width"], i["height"]) for d in documents for i in d["images"]}
        assert sizes["shelf/3.png"] == (37, 23)  # read from the picture: no width or height feature


def _prefixed_records(path, prefix):
    png = tf.io.encode_png(np.zeros((10, 20, 3), np.uint8)).numpy()
    with tf.io.TFRecordWriter(str(path)) as writer:
        feature = {
            "picture": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png])),
            f"{prefix}/bbox/xmin": tf.train.Feature(float_list=tf.train.FloatList(value=[0.25])),
            f"{prefix}/bbox/ymin": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5])),
            f"{prefix}/bbox/xmax": tf.train.Feature(float_list=tf.train.FloatList(value=[0.75])),
            f"{prefix}/bbox/ymax": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0])),
            f"{prefix}/class/text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"cup"])),
            f"{prefix}/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[1])),
        }
        writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def test_box_features_names_a_prefix_and_a_wrong_name_is_a_usage_error(cli, tmp_path):
    _prefixed_records(tmp_path / "det.tfrecord", "det")
    guessed = cli.export(tmp_path / "det.tfrecord", "--to", "csv", "--out", tmp_path / "a")
    assert guessed.exit_code == 1 and "no boxes in the records: name their feature with --box-features" in (
        guessed.stderr
    )  # fmt: skip
    _ok(cli.export(tmp_path / "det.tfrecord", "--to", "csv", "--out", tmp_path / "b", "--box-features", "det",
                   "--image-feature", "picture"))  # fmt: skip
    assert (tmp_path / "b" / "boxes.csv").read_text().splitlines() == [
        "filename,width,height,class,xmin,ymin,xmax,ymax", "train/000000.png,20,10,cup,5,5,15,10"
    ]  # fmt: skip
    assert (tmp_path / "b" / "images" / "train" / "000000.png").exists()
    wrong = cli.export(tmp_path / "det.tfrecord", "--to", "csv", "--out", tmp_path / "c", "--box-features", "nope")
    assert wrong.exit_code == 2 and "--box-features nope: no float feature 'nope'" in wrong.stderr
