"""`tfr-convert detection` keeps the splits a dataset already has: COCO's one instances
file a split (its pictures in train2017/, val2017/), a YOLO YAML's train: / val: folders,
VOC's ImageSets/Main lists, or --annotations SPLIT=PATH; one class numbering for all."""

from __future__ import annotations

import json

import pytest
import tensorflow as tf

from detection_inputs import DATASET, write_coco, write_csv, write_images, write_voc

TRAIN, VAL = ["a.jpg", "b.jpg"], ["sub/c.png", "d.jpg"]


def _subset(names: list[str]) -> dict:
    return {name: DATASET[name] for name in names}


def _records(out) -> dict[str, tuple[str, list[tuple[int, str]]]]:
    """{filename: (split, [(label, class text)...])}, through tf.data."""
    found = {}
    for shard in sorted(out.glob("*.tfrecord-*")):
        split = shard.name.split(".")[0].rsplit("-", 1)[1]
        for raw in tf.data.TFRecordDataset(str(shard)):
            feature = tf.train.Example.FromString(raw.numpy()).features.feature
            labels = feature["image/object/class/label"].int64_list.value
            texts = [t.decode() for t in feature["image/object/class/text"].bytes_list.value]
            found[feature["image/filename"].bytes_list.value[0].decode()] = (
                split,
                list(zip(labels, texts, strict=True)),
            )
    return found


def _ultralytics_layout(root) -> None:
    """ROOT/images/{train,val}/ and ROOT/labels/{train,val}/ (YOLO boxes of bird, cat, dog), as Ultralytics keeps a dataset."""
    names = ["bird", "cat", "dog"]
    for split, members in (("train", TRAIN), ("val", VAL)):
        write_images(root / "images" / split, _subset(members))
        for name in members:
            w, h, boxes = DATASET[name]
            label = root / "labels" / split / (name.rsplit(".", 1)[0] + ".txt")
            label.parent.mkdir(parents=True, exist_ok=True)
            label.write_text("".join(f"{names.index(c)} {(x0 + x1) / 2 / w} {(y0 + y1) / 2 / h} {(x1 - x0) / w} "
                                     f"{(y1 - y0) / h}\n" for c, x0, y0, x1, y1 in boxes))  # fmt: skip


def _voc_devkit(root):
    """(JPEGImages, ImageSets/Main) of a VOC tree whose lists put a, b in train and c, d in val."""
    images = write_images(root / "JPEGImages")
    write_voc(root / "Annotations", origin=1)
    main = root / "ImageSets" / "Main"
    main.mkdir(parents=True)
    (main / "train.txt").write_text("a\nb\n")
    (main / "val.txt").write_text("c\nd\n")
    return images, main


def _expected(prefixes: dict[str, str] | None = None) -> dict[str, str]:
    prefixes = prefixes or {}
    return {
        **{prefixes.get("train", "") + n: "train" for n in TRAIN},
        **{prefixes.get("validation", "") + n: "validation" for n in VAL},
    }


def _one_numbering(found) -> None:
    """Every box's label names its class the same way in every split."""
    pairs = {pair for _, boxes in found.values() for pair in boxes}
    assert len({label for label, _ in pairs}) == len({text for _, text in pairs}) == len(pairs)


def test_coco_instances_files_a_split_keep_their_splits_with_pictures_in_split_folders(cli, tmp_path):
    images = tmp_path / "coco" / "images"
    write_images(images / "train2017", _subset(TRAIN))
    write_images(images / "val2017", _subset(VAL))
    annotations = tmp_path / "coco" / "annotations"
    annotations.mkdir()
    write_coco(annotations / "instances_train2017.json", _subset(TRAIN))
    write_coco(annotations / "instances_val2017.json", _subset(VAL))
    (annotations / "captions_train2017.json").write_text('{"annotations": []}')  # beside them, not boxes
    result = cli.convert("detection", images, "--annotations", annotations, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    found = _records(tmp_path / "out")
    assert {name: split for name, (split, _) in found.items()} == _expected(
        {"train": "train2017/", "validation": "val2017/"}
    )
    _one_numbering(found)
    assert found["val2017/sub/c.png"][1] == [(9, "dog"), (9, "dog"), (5, "cat")]  # COCO's ids kept


def test_annotations_split_equals_path_gives_each_split_its_file_in_any_format(cli, tmp_path):
    images = write_images(tmp_path / "images")
    # bird is in no train box: the classes are the union, one numbering for both
    write_csv(tmp_path / "train.csv", _subset(TRAIN))
    write_csv(tmp_path / "val.csv", _subset(VAL))
    result = cli.convert("detection", images, "--annotations", f"train={tmp_path / 'train.csv'}",
                         "--annotations", f"val={tmp_path / 'val.csv'}", "--out", tmp_path / "out")  # fmt: skip
    assert result.exit_code == 0, result.output
    found = _records(tmp_path / "out")
    # d.jpg has no box, so neither CSV names it: in no split, it is left out and said so
    assert {name: split for name, (split, _) in found.items()} == {n: s for n, s in _expected().items() if n != "d.jpg"}
    assert "1 image (d.jpg) in none of the splits of train=" in result.stderr
    _one_numbering(found)
    assert (tmp_path / "out" / "image-object-class-label.labels.txt").read_text().split() == [
        "background", "bird", "cat", "dog"
    ]  # fmt: skip
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert "train=" in manifest["options"]["splits_from"]


@pytest.mark.parametrize("yaml_name", ["data.yaml", "coco8.yaml"])
def test_a_yolo_yaml_naming_train_and_val_folders_keeps_the_splits(cli, tmp_path, yaml_name):
    root = tmp_path / "coco8"
    _ultralytics_layout(root)
    (root / yaml_name).write_text("path: .\ntrain: images/train\nval: images/val\nnames:\n  0: bird\n  1: cat\n"
                                     "  2: dog\n")  # fmt: skip
    result = cli.convert("detection", root / "images", "--annotations", root / "labels", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    found = _records(tmp_path / "out")
    assert {name: split for name, (split, _) in found.items()} == _expected({"train": "train/", "validation": "val/"})
    _one_numbering(found)


# The lines of Ultralytics' own coco8.yaml that say its splits, as it writes them (its
# `test:` line, a null and a comment, was read by hand as the path "# test images
# (optional)", and train and val were thrown away), with its names' first three.
COCO8_SPLITS = (
    "path: coco8 # dataset root dir\n"
    "train: images/train # train images (relative to 'path') 4 images\n"
    "val: images/val # val images (relative to 'path') 4 images\n"
    "test: # test images (optional)\n"
    "\n"
    "# Classes\n"
    "names:\n"
    "  0: bird\n"
    "  1: cat\n"
    "  2: dog\n"
)


def test_ultralytics_coco8_yaml_keeps_train_and_val_and_has_no_test(cli, tmp_path):
    root = tmp_path / "datasets" / "coco8"
    _ultralytics_layout(root)
    (tmp_path / "datasets" / "coco8.yaml").write_text(COCO8_SPLITS)  # beside the root its path: names
    result = cli.convert("detection", root / "images", "--annotations", root / "labels", "--out", tmp_path / "out",
                         "--classes", tmp_path / "datasets" / "coco8.yaml")  # fmt: skip
    assert result.exit_code == 0, result.output
    found = _records(tmp_path / "out")
    assert {name: split for name, (split, _) in found.items()} == _expected({"train": "train/", "validation": "val/"})


def test_voc_image_sets_keep_their_splits(cli, tmp_path):
    root = tmp_path / "VOC2012"
    images, main = _voc_devkit(root)
    (main / "cat_train.txt").write_text("a  1\nb -1\n")  # per-class lists repeat the splits
    result = cli.convert("detection", images, "--annotations", root / "Annotations", "--voc-origin", "1",
                         "--out", tmp_path / "out")  # fmt: skip
    assert result.exit_code == 0, result.output
    found = _records(tmp_path / "out")
    assert {name: split for name, (split, _) in found.items()} == _expected()
    _one_numbering(found)


def test_split_with_the_datasets_own_splits_resplits_and_says_so(cli, tmp_path):
    images = write_images(tmp_path / "images")
    write_csv(tmp_path / "train.csv", _subset(TRAIN))
    write_csv(tmp_path / "val.csv", _subset(VAL))
    result = cli.convert("detection", images, "--annotations", f"train={tmp_path / 'train.csv'}",
                         "--annotations", f"val={tmp_path / 'val.csv'}", "--split", "train=0.5,test=0.5",
                         "--out", tmp_path / "out")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "re-splits" in result.stderr
    assert {split for split, _ in _records(tmp_path / "out").values()} <= {"train", "test"}


@pytest.mark.parametrize(
    "given",
    [["a.csv", "train=a.csv"], ["a.csv", "a.csv"], ["train=a.csv", "training=a.csv"]],
    ids=["mixed", "two-plain", "one-split-twice"],
)
def test_annotations_given_other_than_once_or_once_a_split_is_a_usage_error(cli, tmp_path, given):
    images = write_images(tmp_path / "images")
    write_csv(tmp_path / "a.csv")
    args = [a for g in given for a in ("--annotations", str(tmp_path / g) if "=" not in g else
                                       g.split("=")[0] + "=" + str(tmp_path / g.split("=")[1]))]  # fmt: skip
    result = cli.convert("detection", images, *args, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "SPLIT=PATH" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_coco_export_keeps_each_split_in_its_own_file_and_converts_back_to_the_same_shards(cli, tmp_path):
    """Splits from the dataset's own files (no --split to redo them): the export writes
    one instances file a split, and converting it gives the same shards, splits included."""
    images = write_images(tmp_path / "images")
    (tmp_path / "coco").mkdir()
    write_coco(tmp_path / "coco" / "instances_train.json", _subset(TRAIN))
    write_coco(tmp_path / "coco" / "instances_val.json", _subset(VAL))
    options = ["--name", "pets"]
    first = cli.convert("detection", images, "--annotations", tmp_path / "coco", *options, "--out", tmp_path / "one")
    assert first.exit_code == 0, first.output
    exported = cli.export(tmp_path / "one", "--to", "coco", "--out", tmp_path / "x")
    assert exported.exit_code == 0, exported.output
    assert sorted(p.name for p in (tmp_path / "x" / "annotations").iterdir()) == [
        "instances_train.json", "instances_validation.json"]  # fmt: skip
    again = cli.convert("detection", tmp_path / "x" / "images", "--annotations", tmp_path / "x" / "annotations",
                        *options, "--out", tmp_path / "two")  # fmt: skip
    assert again.exit_code == 0, again.output
    shards = {p.name: p.read_bytes() for p in (tmp_path / "one").glob("*.tfrecord-*")}
    assert sorted(shards) == ["pets-train.tfrecord-00000-of-00001", "pets-validation.tfrecord-00000-of-00001"]
    assert {p.name: p.read_bytes() for p in (tmp_path / "two").glob("*.tfrecord-*")} == shards


def test_a_yolo_export_writes_a_data_yaml_whose_splits_convert_back_to_the_same_shards(cli, tmp_path):
    """The export's data.yaml (Ultralytics' dataset file: names, and a list file a split)
    carries the splits: converting the export gives the same shards without --split."""
    import yaml

    root = tmp_path / "coco8"
    _ultralytics_layout(root)
    (root / "data.yaml").write_text(COCO8_SPLITS.replace("path: coco8", "path: ."))
    options = ["--name", "pets"]
    first = cli.convert("detection", root / "images", "--annotations", root / "labels", *options,
                        "--out", tmp_path / "one")  # fmt: skip
    assert first.exit_code == 0, first.output
    exported = cli.export(tmp_path / "one", "--to", "yolo", "--out", tmp_path / "x")
    assert exported.exit_code == 0, exported.output
    document = yaml.safe_load((tmp_path / "x" / "data.yaml").read_text())
    assert document["train"] == "train.txt" and document["val"] == "val.txt" and "test" not in document
    assert sorted((tmp_path / "x" / "val.txt").read_text().split()) == [f"./images/val/{n}" for n in sorted(VAL)]
    assert [document["names"][i] for i in range(len(document["names"]))] == (
        tmp_path / "x" / "labels" / "classes.txt").read_text().splitlines()  # fmt: skip
    again = cli.convert("detection", tmp_path / "x" / "images", "--annotations", tmp_path / "x" / "labels",
                        *options, "--out", tmp_path / "two")  # fmt: skip
    assert again.exit_code == 0, again.output
    shards = {p.name: p.read_bytes() for p in (tmp_path / "one").glob("*.tfrecord-*")}
    assert len(shards) == 2 and {p.name: p.read_bytes() for p in (tmp_path / "two").glob("*.tfrecord-*")} == shards


def test_a_voc_export_writes_the_devkits_split_lists_and_converts_back_to_the_same_shards(cli, tmp_path):
    root = tmp_path / "VOC2012"
    images, _ = _voc_devkit(root)
    options = ["--name", "pets", "--voc-origin", "1"]
    first = cli.convert("detection", images, "--annotations", root / "Annotations", *options, "--out", tmp_path / "one")
    assert first.exit_code == 0, first.output
    exported = cli.export(tmp_path / "one", "--to", "voc", "--out", tmp_path / "x")
    assert exported.exit_code == 0, exported.output
    lists = tmp_path / "x" / "ImageSets" / "Main"
    assert {p.name: sorted(p.read_text().split()) for p in lists.iterdir()} == {"train.txt": ["a", "b"],
                                                                             "val.txt": ["c", "d"]}  # fmt: skip
    again = cli.convert("detection", tmp_path / "x" / "images", "--annotations", tmp_path / "x" / "Annotations",
                        *options, "--out", tmp_path / "two")  # fmt: skip
    assert again.exit_code == 0, again.output
    shards = {p.name: p.read_bytes() for p in (tmp_path / "one").glob("*.tfrecord-*")}
    assert len(shards) == 2 and {p.name: p.read_bytes() for p in (tmp_path / "two").glob("*.tfrecord-*")} == shards
