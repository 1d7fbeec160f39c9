"""tfr-export --to images: tfr-convert -> tfr-export -> tfr-convert gives the first
conversion's shards byte for byte (class folders, an image folder with a CSV of labels
and other columns); MNIST and CIFAR-10 pictures come out with the records' exact pixels
and labels (read by TensorFlow), and converting that export is a fixed point; bad file
names and collisions are errors naming the record, with nothing at a final name."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import tensorflow as tf
from helpers import write_cifar
from PIL import Image


def _shards(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.tfrecord-*"))}


def _ok(result):
    assert result.exit_code == 0, result.output
    return result


def _folder_of_pictures(root, classes=("cat", "dog", "emu"), nested=False):
    rng = np.random.default_rng(0)
    for c, name in enumerate(classes):
        for i in range(3 + c):
            folder = root / name / ("sub" if nested and i % 2 else "")
            folder.mkdir(parents=True, exist_ok=True)
            pixels = rng.integers(0, 256, (6 + i, 5 + c, 3), dtype=np.uint8)
            suffix = "png" if i % 2 else "jpg"
            Image.fromarray(pixels).save(folder / f"{i}.{suffix}")
    return root


def test_class_folders_come_back_as_the_same_shards(cli, tmp_path):
    pets = _folder_of_pictures(tmp_path / "pets", nested=True)
    _ok(cli.convert("images", pets, "--out", tmp_path / "first", "--num-shards", 2))
    summary = json.loads(
        _ok(cli.export(tmp_path / "first", "--to", "images", "--out", tmp_path / "x", "--json")).stdout
    )
    assert summary["layout"] == "folders" and summary["label"] == "label"
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["cat", "dog", "emu"]  # one split: OUT/CLASS/NAME
    assert (tmp_path / "x" / "dog" / "sub" / "1.png").read_bytes() == (pets / "dog" / "sub" / "1.png").read_bytes()
    _ok(cli.convert("images", tmp_path / "x", "--name", "pets", "--out", tmp_path / "again", "--num-shards", 2))
    first = _shards(tmp_path / "first")
    assert len(first) == 2 and _shards(tmp_path / "again") == first


def test_an_image_folder_with_csv_labels_and_columns_comes_back_as_the_same_shards(cli, tmp_path):
    pictures = _folder_of_pictures(tmp_path / "photos")
    names = sorted(str(p.relative_to(pictures)) for p in pictures.rglob("*.*"))
    with open(tmp_path / "labels.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["path", "species", "age", "weight", "note"])
        for i, name in enumerate(names):
            writer.writerow([name, ["owl", "fox", "bee"][i % 3], i * 7, 0.1 * i + 1.5, f"seen, on day {i}"])
    options = ["--split", "train=0.5,validation=0.25,test=0.25", "--seed", "3"]
    _ok(cli.convert("images", pictures, "--labels", tmp_path / "labels.csv", "--label-column", "species",
                    "--name", "photos", "--out", tmp_path / "first", *options))  # fmt: skip
    summary = json.loads(
        _ok(cli.export(tmp_path / "first", "--to", "images", "--out", tmp_path / "x", "--json")).stdout
    )
    assert summary["layout"] == "csv" and summary["columns"] == ["age", "note", "weight"]
    rows = list(csv.DictReader(open(tmp_path / "x" / "labels.csv")))
    assert {r["split"] for r in rows} == {"train", "validation", "test"}
    assert {r["species"] for r in rows} == {"owl", "fox", "bee"}
    _ok(cli.convert("images", tmp_path / "x", "--labels", tmp_path / "x" / "labels.csv", "--label-column", "species",
                    "--split-column", "split", "--name", "photos", "--seed", "3", "--out", tmp_path / "again"))  # fmt: skip
    first = _shards(tmp_path / "first")
    assert len(first) == 3 and _shards(tmp_path / "again") == first


def _tf_records(directory, spec):
    out = {}
    for shard in sorted(directory.glob("*.tfrecord-*")):
        split = shard.name.split("-")[1].split(".")[0]
        out.setdefault(split, []).extend(
            tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(str(shard))
        )
    return out


def _fixed_point(cli, exported, tmp_path, name, label="label"):
    """images -> export -> images again: the same shards."""

    def options(folder):
        return ["--labels", folder / "labels.csv", "--label-column", label, "--split-column", "split", "--name", name]

    convert = options(exported)
    _ok(cli.convert("images", exported, *convert, "--out", tmp_path / "as-images"))
    _ok(cli.export(tmp_path / "as-images", "--to", "images", "--layout", "csv", "--out", tmp_path / "x2"))
    _ok(cli.convert("images", tmp_path / "x2", *options(tmp_path / "x2"), "--out", tmp_path / "as-images-again"))
    first = _shards(tmp_path / "as-images")
    assert first and _shards(tmp_path / "as-images-again") == first


def _exported_pictures(exported, label="label", names=()):
    """{split: [(pixels, label index)]} from the export's CSV (labels by name where `names`)."""
    rows = list(csv.DictReader(open(exported / "labels.csv")))

    def index(value: str) -> int:
        return list(names).index(value) if names else int(value)

    return {
        split: [
            (np.asarray(Image.open(exported / r["filename"])), index(r[label])) for r in rows if r["split"] == split
        ]
        for split in dict.fromkeys(r["split"] for r in rows)
    }


def test_mnist_exports_the_records_exact_pixels_and_labels_and_converts_back_to_a_fixed_point(cli, tmp_path, mnist_src):
    _ok(cli.convert("mnist", mnist_src[0], "--out", tmp_path / "mnist"))
    _ok(cli.export(tmp_path / "mnist", "--to", "images", "--layout", "csv", "--out", tmp_path / "x"))
    spec = {"image_raw": tf.io.FixedLenFeature((), tf.string), "label": tf.io.FixedLenFeature((), tf.int64)}
    records = _tf_records(tmp_path / "mnist", spec)
    pictures = _exported_pictures(tmp_path / "x")
    assert list(pictures) == ["train", "test"] and set(records) == {"train", "test"}
    for split, found in records.items():
        assert len(pictures[split]) == len(found)
        for (pixels, label), record in zip(pictures[split], found, strict=True):
            want = tf.io.decode_raw(record["image_raw"], tf.uint8).numpy().reshape(28, 28)
            assert np.array_equal(pixels, want) and label == int(record["label"])
    _fixed_point(cli, tmp_path / "x", tmp_path, "mnist")


def test_cifar10_exports_the_records_exact_pixels_and_labels_and_converts_back_to_a_fixed_point(cli, tmp_path):
    source = write_cifar(tmp_path / "src")
    _ok(cli.convert("cifar", source["path"], "--out", tmp_path / "cifar"))
    summary = json.loads(
        _ok(cli.export(tmp_path / "cifar", "--to", "images", "--out", tmp_path / "x", "--json")).stdout
    )
    assert summary["layout"] == "csv" and summary["label"] == "label_index" and summary["columns"] == ["label_name"]
    spec = {"image": tf.io.FixedLenFeature((), tf.string), "label_index": tf.io.FixedLenFeature((), tf.int64)}
    records = _tf_records(tmp_path / "cifar", spec)
    names = (tmp_path / "cifar" / "label_index.labels.txt").read_text().split()
    assert names == sorted(names)  # so the CSV holds names, which a new conversion numbers alike
    pictures = _exported_pictures(tmp_path / "x", "label_index", names)
    for split, found in records.items():
        assert len(pictures[split]) == len(found)
        for (pixels, label), record in zip(pictures[split], found, strict=True):
            want = tf.io.decode_raw(record["image"], tf.uint8).numpy().reshape(32, 32, 3)
            assert np.array_equal(pixels, want) and label == int(record["label_index"])
        # the pictures as the pickles hold them (rows of planes: channel, then row)
        planes = source[split][0].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        assert sorted(p.tobytes() for p, _ in pictures[split]) == sorted(p.tobytes() for p in planes)
    _fixed_point(cli, tmp_path / "x", tmp_path, "cifar10", "label_index")


def _plain_records(path, names, label=True):
    rng = np.random.default_rng(1)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i, name in enumerate(names):
            image = tf.io.encode_png(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)).numpy()
            feature = {
                "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
                "image/filename": tf.train.Feature(bytes_list=tf.train.BytesList(value=[name.encode()])),
            }
            if label:
                feature["image/class/label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2]))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def test_a_plain_tfrecord_exports_by_its_inferred_picture_label_and_file_name(cli, tmp_path):
    _plain_records(tmp_path / "plain.tfrecord", ["a.png", "b/c.png", "d.png"])
    summary = json.loads(_ok(cli.export(tmp_path / "plain.tfrecord", "--to", "images", "--out", tmp_path / "x",
                                        "--json")).stdout)  # fmt: skip
    assert (summary["image"], summary["label"], summary["filename"]) == (
        "image/encoded", "image/class/label", "image/filename"
    )  # fmt: skip
    # names under no class folder: the layout that converts back to them is csv's
    assert summary["layout"] == "csv" and summary["notes"] == []
    assert sorted(str(p.relative_to(tmp_path / "x")) for p in (tmp_path / "x").rglob("*.png")) == [
        "a.png", "b/c.png", "d.png"
    ]  # fmt: skip
    folders = _ok(cli.export(tmp_path / "plain.tfrecord", "--to", "images", "--layout", "folders",
                             "--out", tmp_path / "y"))  # fmt: skip
    assert "note: the records' file names (a.png) are not under their class folders" in folders.stderr
    assert "--layout csv converts back to the same examples" in folders.stderr
    assert sorted(str(p.relative_to(tmp_path / "y")) for p in (tmp_path / "y").rglob("*.png")) == [
        "0/a.png", "0/d.png", "1/b/c.png"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["a.png", "../escape.png"], "file name '../escape.png' is not a relative path inside the output"),
        (["/etc/x.png"], "file name '/etc/x.png' is not a relative path inside the output"),
        (["a.png", "b.png", "a.png"], "writes a.png, as"),
    ],
)
def test_bad_or_repeated_file_names_are_exit_1_naming_the_record_with_nothing_written(cli, tmp_path, names, message):
    _plain_records(tmp_path / "plain.tfrecord", names)
    result = cli.export(tmp_path / "plain.tfrecord", "--to", "images", "--out", tmp_path / "x")
    assert result.exit_code == 1
    assert message in result.stderr and "plain.tfrecord record" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "escape.png").exists()
    assert [p for p in (tmp_path / "x").rglob("*") if p.is_file()] == []


def test_options_belong_to_their_targets_and_a_label_must_be_an_integer(cli, tmp_path):
    _plain_records(tmp_path / "plain.tfrecord", ["a.png"])
    for target, option, message in [
        ("parquet", ["--layout", "csv"], "--layout is for --to images"),
        ("parquet", ["--image-feature", "image"], "are for --to images and the box formats"),
        ("images", ["--box-features", "objects/bbox"], "--box-features is for --to coco|yolo|voc|csv"),
    ]:
        wrong = cli.export(tmp_path / "plain.tfrecord", "--to", target, *option, "--out", tmp_path / "x")
        assert wrong.exit_code == 2 and message in wrong.stderr, wrong.stderr
    bad = cli.export(tmp_path / "plain.tfrecord", "--to", "images", "--label-feature", "image/filename",
                     "--out", tmp_path / "y")  # fmt: skip
    assert bad.exit_code == 2 and "not an integer feature" in bad.stderr


@pytest.mark.parametrize("fmt", ["csv", "voc", "coco", "yolo"])
def test_a_detection_dataset_comes_back_as_the_same_shards_through_its_own_format(cli, tmp_path, fmt):
    from detection_inputs import DATASET, write_coco, write_csv, write_images, write_voc, write_yolo

    images = write_images(tmp_path / "pets")
    annotations = {
        "csv": lambda: write_csv(tmp_path / "boxes.csv"),
        "voc": lambda: write_voc(tmp_path / "voc", origin=1),
        "coco": lambda: write_coco(tmp_path / "coco.json"),
        "yolo": lambda: write_yolo(images),
    }[fmt]()
    options = ["--split", "train=0.5,test=0.5", "--name", "pets"] + (["--voc-origin", "1"] if fmt == "voc" else [])
    _ok(cli.convert("detection", images, "--annotations", annotations, *options, "--out", tmp_path / "first"))
    summary = json.loads(_ok(cli.export(tmp_path / "first", "--to", fmt, "--out", tmp_path / "x", "--json")).stdout)
    assert sum(s["records"] for s in summary["splits"].values()) == len(DATASET)
    out = tmp_path / "x"
    again = {
        "csv": out / "annotations",
        "voc": out / "Annotations",
        "coco": out / "annotations",
        "yolo": out / "labels",
    }[fmt]  # fmt: skip (COCO and CSV: one file a split)
    _ok(cli.convert("detection", out / "images", "--annotations", again, *options, "--out", tmp_path / "again"))
    first = _shards(tmp_path / "first")
    assert len(first) == 2 and _shards(tmp_path / "again") == first
    splits = {r["filename"]: r["split"] for r in csv.DictReader(open(out / "splits.csv"))}
    assert set(splits) == set(DATASET) and set(splits.values()) == {"train", "test"}


# 80 class names, 3 of them used, not in sorted order (coco8's: 80 names, a few in use)
MANY = [f"thing{i:02d}" for i in range(80)]
MANY[3], MANY[16], MANY[41] = "cat", "dog", "bird"


def _source_with_unused_classes(root, fmt):
    """IMAGE_DIR and annotations in `fmt` naming all of MANY: YOLO's classes.txt, COCO's
    categories (ids 1..80), VOC's labelmap.txt (as Datumaro exports VOC)."""
    from detection_inputs import DATASET, write_images, write_voc

    images = write_images(root / "images")
    if fmt == "voc":
        (root / "labelmap.txt").write_text("# label:color_rgb:parts:actions\nbackground:0,0,0::\n"
                                           + "".join(f"{n}:{i},0,0::\n" for i, n in enumerate(MANY)))  # fmt: skip
        return images, write_voc(root / "Annotations", origin=1)
    if fmt == "coco":
        pictures, boxes = [], []
        for i, (name, (w, h, found)) in enumerate(DATASET.items(), 100):
            pictures.append({"id": i, "file_name": name, "width": w, "height": h})
            for c, x0, y0, x1, y1 in found:
                boxes.append({"id": len(boxes) + 1, "image_id": i, "category_id": MANY.index(c) + 1,
                              "bbox": [x0, y0, x1 - x0, y1 - y0], "area": 12.5, "iscrowd": 0})  # fmt: skip
        categories = [{"id": i, "name": n} for i, n in enumerate(MANY, 1)]
        path = root / "instances.json"
        path.write_text(json.dumps({"images": pictures, "annotations": boxes, "categories": categories}))
        return images, path
    labels = root / "labels"
    labels.mkdir()
    (labels / "classes.txt").write_text("\n".join(MANY) + "\n")
    for name, (w, h, found) in DATASET.items():
        lines = [
            f"{MANY.index(c)} {(x0 + x1) / 2 / w:.6f} {(y0 + y1) / 2 / h:.6f} {(x1 - x0) / w:.6f} {(y1 - y0) / h:.6f}\n"
            for c, x0, y0, x1, y1 in found
        ]
        (labels / name.rsplit(".", 1)[0]).parent.mkdir(parents=True, exist_ok=True)
        (labels / (name.rsplit(".", 1)[0] + ".txt")).write_text("".join(lines))
    return images, labels


def _dataset_files(out):
    """The shards and the class files: what a round trip must give back byte for byte."""
    kept = ("label_map.pbtxt", ".labels.txt", ".tfrecord-")
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if any(k in p.name for k in kept)}


@pytest.mark.parametrize("classes", [False, True], ids=["found", "given"])
@pytest.mark.parametrize("fmt", ["yolo", "coco", "voc"])
def test_a_dataset_with_unused_classes_comes_back_the_same_through_its_format(cli, tmp_path, fmt, classes):
    """80 classes, 3 with boxes: every format's export keeps every class under its
    number, and converting the export gives the same shards and class files."""
    images, annotations = _source_with_unused_classes(tmp_path / "src", fmt)
    names = tmp_path / "names.yaml"
    names.write_text("names:\n" + "".join(f"  {i}: {n}\n" for i, n in enumerate(MANY)))
    given = ["--classes", names] if classes else []
    options = ["--split", "train=0.5,test=0.5", "--name", "pets", *given]
    options += ["--voc-origin", "1"] if fmt == "voc" else []
    _ok(cli.convert("detection", images, "--annotations", annotations, *options, "--out", tmp_path / "first"))
    out = tmp_path / "x"
    _ok(cli.export(tmp_path / "first", "--to", fmt, "--out", out))
    if fmt == "yolo":  # every name in label order: a box's index is its label - 1
        assert (out / "labels" / "classes.txt").read_text().splitlines() == MANY
        assert (out / "labels" / "a.txt").read_text().split()[0] == str(MANY.index("cat"))
    elif fmt == "coco":  # every category, with boxes or none, under its id
        for split in ("train", "test"):
            categories = json.loads((out / "annotations" / f"instances_{split}.json").read_text())["categories"]
            assert categories == [{"id": i, "name": n} for i, n in enumerate(MANY, 1)]
    else:  # named after the picture's stem; every class in labelmap.txt
        assert sorted(p.name for p in (out / "Annotations").iterdir()) == ["a.xml", "b.xml", "sub_c.xml"]
        assert [line.split(":")[0] for line in (out / "labelmap.txt").read_text().splitlines()[1:]] == MANY
    again = {"voc": out / "Annotations", "coco": out / "annotations", "yolo": out / "labels"}[fmt]
    _ok(cli.convert("detection", out / "images", "--annotations", again, *options, "--out", tmp_path / "again"))
    first = _dataset_files(tmp_path / "first")
    assert len(first) == 4 and _dataset_files(tmp_path / "again") == first
    assert first["image-object-class-label.labels.txt"].decode().split("\n")[1:81] == MANY


@pytest.mark.parametrize("fmt", ["yolo", "coco", "voc"])
def test_every_export_of_a_yolo_dataset_keeps_its_80_classes_numbered_as_they_were(cli, tmp_path, fmt):
    """The mislabelling this prevents: an export that renumbered the classes in use
    (dog 16 -> 1), converted again with the original names, read every box as another class."""
    images, labels = _source_with_unused_classes(tmp_path / "src", "yolo")
    _ok(cli.convert("detection", images, "--annotations", labels, "--out", tmp_path / "first"))
    out = tmp_path / "x"
    _ok(cli.export(tmp_path / "first", "--to", fmt, "--out", out))
    names = tmp_path / "src" / "labels" / "classes.txt"
    again = {"voc": out / "Annotations", "coco": out / "annotations.json", "yolo": out / "labels"}[fmt]
    origin = ["--voc-origin", "1"] if fmt == "voc" else []
    _ok(cli.convert("detection", out / "images", "--annotations", again, "--classes", names, *origin,
                    "--out", tmp_path / "again"))  # fmt: skip
    texts = {}
    for shard in sorted((tmp_path / "again").glob("*.tfrecord-*")):
        for raw in tf.data.TFRecordDataset(str(shard)):
            feature = tf.train.Example.FromString(raw.numpy()).features.feature
            texts[feature["image/filename"].bytes_list.value[0].decode()] = [
                (MANY[label - 1], text.decode())
                for label, text in zip(feature["image/object/class/label"].int64_list.value,
                                       feature["image/object/class/text"].bytes_list.value, strict=True)
            ]  # fmt: skip
    assert texts["a.jpg"] == [("cat", "cat"), ("dog", "dog")] and texts["b.jpg"] == [("bird", "bird")]
