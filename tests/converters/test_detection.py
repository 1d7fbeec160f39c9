"""tfr-convert detection: one small dataset written by the test in all four annotation
formats (CSV, Pascal VOC, COCO, YOLO), read back with the TF Object Detection API's
keys through tf.io.parse_single_example, and through TFDS."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from helpers import final_files
from PIL import Image

from detection_inputs import (
    CLASSES,
    COCO_IDS,
    DATASET,
    OD_API_KEYS,
    WRITERS,
    write_coco,
    write_csv,
    write_images,
    write_voc,
)


def parsed(out):
    """{filename: parsed example} of every record in DIR, through the API's spec."""
    found = {}
    shards = [str(p) for p in sorted(out.glob("*.tfrecord-*"))]
    for record in tf.data.TFRecordDataset(shards):
        ex = tf.io.parse_single_example(record, OD_API_KEYS)
        ex = {k: tf.sparse.to_dense(v).numpy() if isinstance(v, tf.SparseTensor) else v.numpy() for k, v in ex.items()}
        found[ex["image/filename"].decode()] = ex
    return found


def convert(cli, tmp_path, fmt, *args, out="out"):
    images = write_images(tmp_path / "images")
    annotations = WRITERS[fmt](tmp_path)
    result = cli.convert("detection", images, "--annotations", annotations, "--out", tmp_path / out, *args)
    return result, tmp_path / out


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_every_format_gives_the_same_boxes_and_names_to_the_api_and_to_tfds(cli, tmp_path, fmt):
    # the conventions that make the four agree: the devkit's 1-based VOC pixels, COCO's ids renumbered
    conventions = {"voc": ["--voc-origin", "1"], "coco": ["--coco-ids", "contiguous"]}.get(fmt, [])
    result, out = convert(cli, tmp_path, fmt, "--no-shuffle", *conventions)
    assert result.exit_code == 0, result.stderr
    assert "1 image without boxes, kept as negatives" in result.stderr
    examples = parsed(out)
    assert sorted(examples) == sorted(DATASET)
    for name, (w, h, boxes) in DATASET.items():
        ex = examples[name]
        assert (ex["image/width"], ex["image/height"]) == (w, h)
        assert ex["image/format"].decode() == ("png" if name.endswith(".png") else "jpeg")
        assert ex["image/encoded"] == (tmp_path / "images" / name).read_bytes()  # keep: the bytes as they are
        got = np.stack([ex[f"image/object/bbox/{k}"] for k in ("xmin", "ymin", "xmax", "ymax")], axis=1)
        want = np.array([[x0 / w, y0 / h, x1 / w, y1 / h] for _, x0, y0, x1, y1 in boxes]).reshape(-1, 4)
        assert got.shape == want.shape
        assert np.all(np.abs(got - want) * [w, h, w, h] <= 1.0), (fmt, name, got, want)  # within 1 px
        assert [t.decode() for t in ex["image/object/class/text"]] == [c for c, *_ in boxes]
        assert list(ex["image/object/class/label"]) == [CLASSES.index(c) + 1 for c, *_ in boxes]  # 1-based
    label_map = (out / "label_map.pbtxt").read_text()
    assert re.findall(r'item \{\n  id: (\d+)\n  name: "([^"]+)"\n\}', label_map) == [
        (str(i), n) for i, n in enumerate(CLASSES, 1)
    ]
    builder = tfds.builder_from_directory(str(out))
    assert builder.info.features["image"]["object"]["class"]["label"].names == ["background", *CLASSES]
    seen = {}
    for ex in tfds.as_numpy(builder.as_dataset(split="train")):
        objects = ex["image"]["object"]
        seen[ex["image"]["filename"].decode()] = list(objects["class"]["label"])
        assert ex["image"]["encoded"].shape == (ex["image"]["height"], ex["image"]["width"], 3)
    assert seen == {n: [CLASSES.index(c) + 1 for c, *_ in boxes] for n, (_, _, boxes) in DATASET.items()}


def test_voc_flags_and_coco_crowds_and_areas_are_carried(cli, tmp_path):
    _, voc = convert(cli, tmp_path, "voc", out="voc")
    a = parsed(voc)["a.jpg"]
    assert list(a["image/object/truncated"]) == [0, 1] and list(parsed(voc)["b.jpg"]["image/object/difficult"]) == [1]
    _, coco = convert(cli, tmp_path, "coco", out="coco")
    a = parsed(coco)["a.jpg"]
    assert list(a["image/object/is_crowd"]) == [1, 0] and list(a["image/object/area"]) == [12.5, 12.5]
    assert parsed(coco)["a.jpg"]["image/source_id"] == b"100"  # COCO's image id
    _, csv = convert(cli, tmp_path, "csv", out="csv")
    assert list(parsed(csv)["a.jpg"]["image/object/area"]) == [28 * 37, 44 * 38]  # the box's own, in pixels


def _csv_case(tmp_path, rows, dataset=None):
    images = write_images(tmp_path / "images", dataset or DATASET)
    path = tmp_path / "boxes.csv"
    path.write_text("filename,width,height,class,xmin,ymin,xmax,ymax\n" + "".join(r + "\n" for r in rows))
    return images, path


def test_a_box_up_to_one_pixel_outside_is_clipped_with_a_warning(cli, tmp_path):
    images, path = _csv_case(tmp_path, ["a.jpg,64,48,cat,-0.5,2,64.8,40"])
    result = cli.convert("detection", images, "--annotations", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert f"clipped 1 box lying up to 1 px outside the image ({path} line 2)" in result.stderr
    ex = parsed(tmp_path / "out")["a.jpg"]
    assert ex["image/object/bbox/xmin"][0] == 0.0 and ex["image/object/bbox/xmax"][0] == 1.0


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a.jpg,64,48,cat,2,3,66.5,40", "line 3: box (2, 3, 66.5, 40) lies 2.5 px outside the 64x48 image"),
        ("a.jpg,64,48,cat,30,3,30,40", "line 3: xmax 30 is not right of xmin 30"),
        ("a.jpg,64,48,cat,2,40,30,12", "line 3: ymax 12 is not below ymin 40"),
        ("a.jpg,64,48,cat,2,3,wide,40", "line 3: xmax 'wide' is not a number"),
        ("a.jpg,64,48,cat,2,3,3_0,40", "line 3: xmax '3_0' is not a number"),
        ("nope.jpg,64,48,cat,2,3,30,40", "line 3: image 'nope.jpg' not found in"),
        ("a.jpg,48,64,cat,2,3,30,40", "line 3: declares 48x64, but the image is 64x48 as displayed"),
        ("../a.jpg,64,48,cat,2,3,30,40", "line 3: image path '../a.jpg' is not inside IMAGE_DIR"),
    ],
)
def test_each_bad_box_is_exit_1_naming_the_file_and_row_with_nothing_written(cli, tmp_path, row, message):
    images, path = _csv_case(tmp_path, ["b.jpg,50,70,bird,0,0,25,35", row])
    out = tmp_path / "out"
    result = cli.convert("detection", images, "--annotations", path, "--out", out)
    assert result.exit_code == 1, result.stderr
    assert f"{path} {message}" in result.stderr
    assert "Traceback" not in result.stderr and final_files(out) == []


def test_an_unknown_class_is_an_error_with_classes(cli, tmp_path):
    images, path = _csv_case(tmp_path, ["a.jpg,64,48,zebra,2,3,30,40"])
    classes = tmp_path / "classes.txt"
    classes.write_text("cat\ndog\n")
    result = cli.convert("detection", images, "--annotations", path, "--classes", classes, "--out", tmp_path / "o")
    assert result.exit_code == 1
    assert f"{path} line 2: class 'zebra' is not in {classes}" in result.stderr


def test_on_error_skip_lists_and_drops_the_image(cli, tmp_path):
    images, path = _csv_case(tmp_path, ["a.jpg,64,48,cat,2,3,30,40", "a.jpg,64,48,dog,30,3,20,40",
                                        "b.jpg,50,70,bird,0,0,25,35", "gone.jpg,5,5,cat,0,0,1,1"])  # fmt: skip
    out = tmp_path / "out"
    result = cli.convert("detection", images, "--annotations", path, "--out", out, "--on-error", "skip", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    reasons = {s["item"]: s["reason"] for s in report["skipped"]}
    assert reasons == {f"{path} line 3": "xmax 20 is not right of xmin 30", f"{path} line 5":
                       f"image 'gone.jpg' not found in {images}"}  # fmt: skip
    assert sorted(parsed(out)) == ["b.jpg", "d.jpg", "sub/c.png"]  # a.jpg dropped whole, not kept as a negative


def test_negatives_are_kept_and_counted_and_skip_empty_drops_them(cli, tmp_path):
    images, path = _csv_case(tmp_path, ["a.jpg,64,48,cat,2,3,30,40"])
    kept = cli.convert("detection", images, "--annotations", path, "--out", tmp_path / "kept")
    assert kept.exit_code == 0 and "3 images without boxes, kept as negatives" in kept.stderr
    assert (
        len(parsed(tmp_path / "kept")) == 4 and len(parsed(tmp_path / "kept")["d.jpg"]["image/object/bbox/xmin"]) == 0
    )
    dropped = cli.convert("detection", images, "--annotations", path, "--out", tmp_path / "dropped", "--skip-empty")
    assert dropped.exit_code == 0 and list(parsed(tmp_path / "dropped")) == ["a.jpg"]


def _exif_rotated(path, stored_w, stored_h):
    """A JPEG stored stored_w x stored_h whose EXIF orientation 6 shows it turned a quarter (h x w)."""
    pixels = np.zeros((stored_h, stored_w, 3), np.uint8)
    pixels[:, : stored_w // 2] = 255  # left half white as stored: top half white as displayed
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(pixels).save(path, exif=exif.tobytes(), quality=95)


def test_exif_rotated_images_are_stored_upright_and_their_boxes_stay_right(cli, tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    _exif_rotated(images / "turned.jpg", 60, 30)  # displayed 30 wide, 60 high
    path = tmp_path / "boxes.csv"
    path.write_text("filename,width,height,class,xmin,ymin,xmax,ymax\nturned.jpg,30,60,cat,0,0,30,30\n")
    result = cli.convert("detection", images, "--annotations", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert "re-encoded 1 image (turned.jpg) upright" in result.stderr
    ex = parsed(tmp_path / "out")["turned.jpg"]
    assert (ex["image/width"], ex["image/height"]) == (30, 60)
    pixels = tf.io.decode_image(ex["image/encoded"]).numpy()
    assert pixels.shape == (60, 30, 3)
    assert pixels[:28].mean() > 200 and pixels[32:].mean() < 50  # the white half is on top, inside the box
    assert ex["image/object/bbox/ymax"][0] == 0.5
    stored = tmp_path / "stored.csv"
    stored.write_text("filename,width,height,class,xmin,ymin,xmax,ymax\nturned.jpg,60,30,cat,0,0,30,30\n")
    wrong = cli.convert("detection", images, "--annotations", stored, "--out", tmp_path / "o2")
    assert wrong.exit_code == 1
    assert "declares 60x30, but the image is 30x60 as displayed (its EXIF orientation turns it" in wrong.stderr


def test_resizing_keeps_normalized_boxes_and_splits_keep_an_images_boxes_together(cli, tmp_path):
    result, out = convert(cli, tmp_path, "csv", "--resize", "32x32", "--split", "train=0.5,test=0.5")
    assert result.exit_code == 0, result.stderr
    examples = parsed(out)
    assert sorted(examples) == sorted(DATASET)  # each image once, in one split, with all its boxes
    for name, (w, _, boxes) in DATASET.items():
        ex = examples[name]
        assert (ex["image/width"], ex["image/height"]) == (32, 32) and ex["image/format"] == b"jpeg"
        assert len(ex["image/object/bbox/xmin"]) == len(boxes)
        assert np.allclose(ex["image/object/bbox/xmax"], [x1 / w for _, _, _, x1, _ in boxes], atol=1e-6)
    assert {p.name.split("-")[1].split(".")[0] for p in out.glob("*.tfrecord-*")} == {"train", "test"}


def test_output_is_byte_identical_whatever_the_worker_count(cli, tmp_path):
    _, one = convert(cli, tmp_path, "coco", "--workers", "1", "--image-format", "png", out="one")
    result = cli.convert("detection", tmp_path / "images", "--annotations", tmp_path / "instances_train.json",
                         "--out", tmp_path / "two", "--workers", "2", "--image-format", "png")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    shards = sorted(p.name for p in one.iterdir())
    assert shards == sorted(p.name for p in (tmp_path / "two").iterdir())
    assert all((one / n).read_bytes() == (tmp_path / "two" / n).read_bytes() for n in shards)


def test_coco_members_in_any_order_give_the_same_records(cli, tmp_path):
    """Annotations are read before the images and categories they name (kept until both are known)."""
    _, out = convert(cli, tmp_path, "coco")
    path = tmp_path / "instances_train.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({k: doc[k] for k in ("annotations", "categories", "images")}, indent=1))
    result = cli.convert("detection", tmp_path / "images", "--annotations", path, "--out", tmp_path / "again")
    assert result.exit_code == 0, result.stderr
    shards = sorted(p.name for p in out.glob("*.tfrecord-*"))
    assert shards and all((out / n).read_bytes() == (tmp_path / "again" / n).read_bytes() for n in shards)


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("fmt", "damage", "message"),
    [
        (
            "voc",
            lambda r: (r / "Annotations" / "a.jpg.xml").write_text(
                '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "y">]><annotation/>'
            ),
            "declares a DTD or entities",
        ),
        (
            "voc",
            lambda r: (r / "Annotations" / "a.jpg.xml").write_text("<annotation><size>"),
            "line 1, column 18: not well-formed XML",
        ),
        (
            "coco",
            lambda r: (r / "instances_train.json").write_text('{"images": [], "annotations": []}'),
            "no 'categories' list",
        ),
        (
            "yolo",
            lambda r: (r / "labels" / "a.txt").write_text("0 0.5 0.5 0.2\n"),
            "a.txt line 1: 4 values, expected 5",
        ),
        (
            "yolo",
            lambda r: (r / "labels" / "a.txt").write_text("7 0.5 0.5 0.2 0.2\n"),
            "a.txt line 1: class '7' is not one of 0..2",
        ),
        (
            "yolo",
            lambda r: (r / "labels" / "classes.txt").unlink(),
            "no classes.txt, obj.names, data.yaml, data.yml, dataset.yaml, nor another *.yaml with names:, here or up to two folders above: give --classes FILE",
        ),
        ("yolo", lambda r: (r / "labels" / "zzz.txt").write_text(""), "zzz.txt: no image named zzz.* in IMAGE_DIR"),
        ("yolo", lambda r: (r / "labels" / "a.txt").write_text("0 0.5 0.5 0.2 0_2\n"), "a.txt line 1: h '0_2' is"),
        ("yolo", lambda r: (r / "labels" / "a.txt").write_text("0 0.5 nan 0.2 0.2\n"), "line 1: cy 'nan' is not a"),
        (
            "voc",
            lambda r: _edit(r / "Annotations" / "a.jpg.xml", "<xmin>3</xmin>", "<xmin>1_0</xmin>"),
            "a.jpg.xml object 1: <xmin> '1_0' is not a number",
        ),
        (
            "voc",
            lambda r: _edit(r / "Annotations" / "a.jpg.xml", "<xmin>3</xmin>", "<xmin>\uff11\uff10</xmin>"),
            "a.jpg.xml object 1: <xmin> '\uff11\uff10' is not a number",
        ),  # fullwidth digits
        (
            "voc",
            lambda r: _edit(r / "Annotations" / "a.jpg.xml", "<xmin>3</xmin>", ""),
            "a.jpg.xml object 1: <xmin> is missing",
        ),
        (
            "coco",
            lambda r: _edit(r / "instances_train.json", '"bbox": [2, ', '"bbox": ["2", '),
            "instances_train.json annotations[0]: bbox[0] is '2', not a number",
        ),
        (
            "coco",
            lambda r: _edit(r / "instances_train.json", '"id": 100,', f'"id": {"7" * 100_000},'),
            "instances_train.json images[0]: id is an integer of 100000 digits, not an integer",
        ),
        (
            "coco",
            lambda r: _edit(r / "instances_train.json", '"images": [', '"images": [' + "[" * 100_000),
            "instances_train.json: byte 110: arrays or objects nested more than 100 deep",
        ),
        (
            "coco",
            lambda r: _edit(r / "instances_train.json", '"id": 2, "image_id"', '"id": 1, "image_id"'),
            "instances_train.json annotations[1]: annotation id 1 appears twice (annotations[0] too)",
        ),
    ],
)
def test_malformed_annotation_files_are_named(cli, tmp_path, fmt, damage, message):
    write_images(tmp_path / "images")
    annotations = WRITERS[fmt](tmp_path)
    damage(tmp_path)
    result = cli.convert("detection", tmp_path / "images", "--annotations", annotations, "--out", tmp_path / "out")
    assert result.exit_code == 1, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert final_files(tmp_path / "out") == []


def test_yolo_names_from_data_yaml_in_its_three_spellings(tmp_path):
    from tfr_convert.converters.annotations.box_formats import yolo_yaml

    for i, text in enumerate(["path: x\nnames: ['bird', \"cat\", dog]\n", "names:\n  - bird\n  - cat\n  - dog\nnc: 3\n",
                              "nc: 3\nnames:\n  0: bird\n  1: cat  # a comment\n  2: dog\n"]):  # fmt: skip
        path = tmp_path / f"d{i}.yaml"
        path.write_text(text)
        assert yolo_yaml.names(str(path), yolo_yaml.load(str(path))) == CLASSES


def test_a_folder_of_both_xml_and_txt_asks_for_the_format(cli, tmp_path):
    images = write_images(tmp_path / "images")
    mixed = write_voc(tmp_path / "mixed")
    (mixed / "x.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    result = cli.convert("detection", images, "--annotations", mixed, "--out", tmp_path / "out")
    assert result.exit_code == 1 and "give --annotation-format voc or yolo" in result.stderr
    forced = cli.convert("detection", images, "--annotations", mixed, "--annotation-format", "voc",
                         "--out", tmp_path / "out")  # fmt: skip
    assert forced.exit_code == 0, forced.stderr


def test_stats_report_boxes_per_image_classes_and_sizes(cli, tmp_path):
    _, out = convert(cli, tmp_path, "csv")
    report = json.loads(cli.inspect(out, "--stats", "--json").stdout)["boxes"]
    assert report["images"] == 4 and report["boxes"] == 6 and report["negatives"] == 1
    assert report["per_image"]["max"] == 3 and report["classes"] == {"cat": 2, "dog": 3, "bird": 1}
    assert report["size_unit"] == "px"
    assert report["width"]["min"] == pytest.approx(8) and report["width"]["max"] == pytest.approx(44)
    assert report["aspect"]["max"] == pytest.approx(2.0)  # sub/c.png's 20x10 cat
    text = cli.inspect(out, "--stats").stdout
    assert "boxes: 6 in 4 images (1 without any), per image up to 3" in text and "classes: dog 3, cat 2, bird 1" in text


def test_grid_draws_each_box_with_its_class(cli, tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    Image.fromarray(np.full((80, 80, 3), 255, np.uint8)).save(images / "white.png")
    path = tmp_path / "boxes.csv"
    path.write_text("filename,width,height,class,xmin,ymin,xmax,ymax\nwhite.png,80,80,cat,20,20,60,60\n")
    assert cli.convert("detection", images, "--annotations", path, "--out", tmp_path / "out").exit_code == 0
    sheet = tmp_path / "grid.png"
    result = cli.inspect(tmp_path / "out", "--grid", sheet)
    assert result.exit_code == 0, result.stderr
    pixels = np.asarray(Image.open(sheet).convert("RGB")).astype(int)
    magenta = (pixels[..., 0] > 200) & (pixels[..., 1] < 60) & (pixels[..., 2] > 200)
    rows, cols = np.nonzero(magenta)
    assert magenta.sum() > 80  # the outline of the box, and its label
    # the tile is 92 px for 80 px: the box spans 20..60 of 80, i.e. about 25..71 of the 96-px cell
    assert 22 <= cols.min() <= 28 and 66 <= cols.max() <= 74 and 22 <= rows.min() <= 28 and 66 <= rows.max() <= 74


def test_load_gives_boxes_per_example_and_ragged_batches(cli, tmp_path):
    import tfr_convert

    _, out = convert(cli, tmp_path, "coco", "--no-shuffle")
    examples = {ex["image/filename"].numpy().decode(): ex for ex in tfr_convert.load(str(out), "train")}
    c = examples["sub/c.png"]
    assert c["image/encoded"].shape == (40, 40, 3) and c["image/encoded"].dtype == tf.uint8
    assert list(c["image/object/class/label"].numpy()) == [COCO_IDS[n] for n in ("dog", "dog", "cat")]  # kept ids
    assert np.allclose(c["image/object/bbox/ymin"].numpy(), [6 / 40, 1 / 40, 20 / 40])
    assert examples["d.jpg"]["image/object/bbox/xmin"].shape == (0,)
    batch = next(iter(tfr_convert.load(str(out), "train", batch_size=4)))
    assert isinstance(batch["image/object/bbox/xmin"], tf.RaggedTensor)
    assert sorted(batch["image/object/bbox/xmin"].row_lengths().numpy()) == [0, 1, 2, 3]


@pytest.mark.parametrize("container", ["beam", "array_record"])
def test_the_beam_engine_and_array_record_write_the_same_examples(cli, tmp_path, container):
    pytest.importorskip("apache_beam" if container == "beam" else "array_record", reason="its extra is not installed")
    _, local = convert(cli, tmp_path, "voc", out="local")
    args = ["--engine", "beam"] if container == "beam" else ["--format", "array_record"]
    other = tmp_path / "other"
    result = cli.convert("detection", tmp_path / "images", "--annotations", tmp_path / "Annotations",
                         "--out", other, *args)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    if container == "beam":
        shards = sorted(p.name for p in local.glob("*.tfrecord-*"))
        assert all((local / n).read_bytes() == (other / n).read_bytes() for n in shards)
    else:
        from tfr_convert import containers

        (ar,) = other.glob("*.array_record-*")
        (tfr,) = local.glob("*.tfrecord-*")
        stored = list(containers.get("array_record").read_range(str(ar), 0, 4))
        assert stored == [r.data for r in containers.get("tfrecord").records(str(tfr))]
    assert (other / "label_map.pbtxt").read_bytes() == (local / "label_map.pbtxt").read_bytes()


def test_overwriting_a_detection_dataset_removes_its_label_map_and_nested_labels_file(cli, tmp_path, mnist_src):
    _, out = convert(cli, tmp_path, "csv")
    (out / "notes.txt").write_text("mine")
    assert {"label_map.pbtxt", "image-object-class-label.labels.txt"} <= {p.name for p in out.iterdir()}
    result = cli.convert("mnist", mnist_src[0], "--out", out, "--overwrite")
    assert result.exit_code == 0, result.stderr
    left = {p.name for p in out.iterdir()}
    assert "label_map.pbtxt" not in left and "image-object-class-label.labels.txt" not in left
    assert "notes.txt" in left and "label.labels.txt" in left


def test_stratify_keeps_each_main_class_in_proportion_in_every_split(cli, tmp_path):
    # 8 images mostly of cats (one with a dog too), 4 of dogs: halves of each main class per split
    dataset = {f"cat{i}.png": (20, 20, [("cat", 1, 1, 9, 9), ("cat", 2, 2, 8, 8), *([("dog", 1, 1, 5, 5)] if i == 0 else [])])
               for i in range(8)} | {f"dog{i}.png": (20, 20, [("dog", 1, 1, 9, 9)]) for i in range(4)}  # fmt: skip
    images = write_images(tmp_path / "images", dataset)
    path = write_csv(tmp_path / "boxes.csv", dataset)
    out = tmp_path / "out"
    result = cli.convert("detection", images, "--annotations", path, "--out", out, "--split", "train=0.5,test=0.5",
                         "--stratify")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    for split in ("train", "test"):
        names = [str(n) for n in parsed_split(out, split)]
        assert sorted(n[:3] for n in names) == ["cat"] * 4 + ["dog"] * 2, (split, names)


def parsed_split(out, split):
    shards = [str(p) for p in sorted(out.glob(f"*-{split}.tfrecord-*"))]
    spec = {"image/filename": OD_API_KEYS["image/filename"]}
    return [
        tf.io.parse_single_example(r, spec)["image/filename"].numpy().decode() for r in tf.data.TFRecordDataset(shards)
    ]


# ---------------------------------------------------------------- class names where people keep them

YOLO_BOXES = {"a.jpg": "0 0.5 0.5 0.4 0.4\n2 0.3 0.3 0.2 0.2\n", "b.jpg": "1 0.5 0.5 0.5 0.5\n"}
DATA_YAML = "train: ../train/images\nval: ../valid/images\n\nnc: 3\nnames: ['bird', 'cat', 'dog']\n"


def yolo_export(images, labels) -> None:
    """Two pictures and their YOLO labels, in the folders a layout uses."""
    for folder in (images, labels):
        folder.mkdir(parents=True, exist_ok=True)
    for name, lines in YOLO_BOXES.items():
        Image.new("RGB", (40, 30), (10, 20, 30)).save(images / name)
        (labels / name.replace(".jpg", ".txt")).write_text(lines)


def class_texts(out) -> dict[str, list[bytes]]:
    return {name: list(ex["image/object/class/text"]) for name, ex in parsed(out).items()}


EXPECTED_TEXTS = {"a.jpg": [b"bird", b"dog"], "b.jpg": [b"cat"]}


@pytest.mark.parametrize("layout", ["roboflow", "ultralytics", "ultralytics_named", "darknet_cvat"])
def test_yolo_class_names_are_found_where_each_exporter_keeps_them(cli, tmp_path, layout):
    """Roboflow: data.yaml at the root, train/images and train/labels. Ultralytics:
    data.yaml (or a YAML named after the dataset, coco8.yaml) at the root, images/train and
    labels/train, beside other YAML that names no classes. Darknet / CVAT: obj.names
    beside obj_train_data/, which holds the images and their labels (as Datumaro's
    yolo fixtures lay them out)."""
    root = tmp_path / "export"
    if layout == "roboflow":
        images, labels = root / "train" / "images", root / "train" / "labels"
        yolo_export(images, labels)
        (root / "data.yaml").write_text(DATA_YAML)
    elif layout.startswith("ultralytics"):
        images, labels = root / "images" / "train", root / "labels" / "train"
        yolo_export(images, labels)
        named = "coco8.yaml" if layout == "ultralytics_named" else "data.yaml"
        (root / named).write_text("path: .\ntrain: images/train\nnames:\n  0: bird\n  1: cat\n  2: dog\n")
        (root / "augment.yml").write_text("mosaic: 1.0\nflipud: 0.0\n")  # YAML naming no classes: not it
    else:
        images = labels = root / "obj_train_data"
        yolo_export(images, labels)
        (root / "obj.names").write_text("bird\ncat\ndog\n")
        (root / "obj.data").write_text("classes = 3\nnames = data/obj.names\n")
    out = tmp_path / "out"
    result = cli.convert("detection", images, "--annotations", labels, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert class_texts(out) == EXPECTED_TEXTS


def test_classes_data_yaml_is_read_as_yaml_not_as_lines(cli, tmp_path):
    images, labels = tmp_path / "images", tmp_path / "labels"
    yolo_export(images, labels)
    (tmp_path / "elsewhere").mkdir()
    data = tmp_path / "elsewhere" / "data.yaml"
    data.write_text(DATA_YAML)
    out = tmp_path / "out"
    result = cli.convert("detection", images, "--annotations", labels, "--classes", data, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert class_texts(out) == EXPECTED_TEXTS
    label_map = (out / "label_map.pbtxt").read_text()
    assert 'name: "bird"' in label_map and "nc:" not in label_map and "train:" not in label_map


def test_classes_from_a_label_map_and_other_files_refused_naming_the_kinds(cli, tmp_path):
    images, labels = tmp_path / "images", tmp_path / "labels"
    yolo_export(images, labels)
    label_map = tmp_path / "map.pbtxt"
    label_map.write_text('item {\n  id: 2\n  name: "cat"\n}\nitem {\n  id: 1\n  name: "bird"\n}\n'
                         'item {\n  name: "/m/0bt9lr"\n  id: 3\n  display_name: "dog"\n}\n')  # fmt: skip
    out = tmp_path / "out"
    result = cli.convert("detection", images, "--annotations", labels, "--classes", label_map, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert class_texts(out) == EXPECTED_TEXTS
    other = tmp_path / "classes.json"
    other.write_text('["bird", "cat", "dog"]')
    refused = cli.convert("detection", images, "--annotations", labels, "--classes", other, "--out", tmp_path / "o")
    assert refused.exit_code == 2
    assert "--classes takes a names file: a YOLO data.yaml, obj.names, classes.txt" in refused.stderr
    yaml_as_text = tmp_path / "names.txt"
    yaml_as_text.write_text(DATA_YAML)
    hinted = cli.convert(
        "detection", images, "--annotations", labels, "--classes", yaml_as_text, "--out", tmp_path / "p"
    )
    assert hinted.exit_code == 2 and "a YOLO data.yaml is read as such when its name ends in .yaml" in hinted.stderr


# ---------------------------------------------------------------- friction a newcomer met


def test_a_yolo_box_a_rounding_error_past_the_edge_is_clipped_without_a_warning(cli, tmp_path):
    images, labels = tmp_path / "images", tmp_path / "labels"
    yolo_export(images, labels)
    (labels / "classes.txt").write_text("bird\ncat\ndog\n")
    (labels / "b.txt").write_text("1 0.5 0.5 1.0000075 0.4\n")  # 0.00015 px past both sides of a 40 px image
    (labels / "a.txt").write_text("0 0.5 0.5 1.02 0.4\n")  # 0.4 px past: clipped, and said
    out = tmp_path / "out"
    result = cli.convert("detection", images, "--annotations", labels, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert "clipped 1 box" in result.stderr and "a.txt line 1" in result.stderr and "b.txt" not in result.stderr
    boxes = parsed(out)["b.jpg"]
    assert boxes["image/object/bbox/xmin"][0] == 0.0 and boxes["image/object/bbox/xmax"][0] == 1.0


@pytest.mark.parametrize(
    ("entry", "kind"),
    [
        ({"image_id": 1, "file_name": "a.png", "segments_info": [{"id": 3, "category_id": 1}]}, "a COCO panoptic file"),
        ({"image_id": 1, "id": 5, "caption": "a bird on a branch"}, "a COCO captions file"),
    ],
)
def test_a_coco_panoptic_or_captions_file_is_named_as_such(cli, tmp_path, entry, kind):
    images = write_images(tmp_path / "images")
    path = tmp_path / "captions_train.json"
    path.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.jpg", "width": 64, "height": 48}],
                                "annotations": [entry], "categories": [{"id": 1, "name": "bird"}]}))  # fmt: skip
    result = cli.convert("detection", images, "--annotations", path, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{path}: {kind}" in result.stderr and "give the instances_*.json of the same split" in result.stderr


def test_voc_and_coco_boxes_and_labels_equal_what_the_od_api_scripts_compute(cli, tmp_path):
    """The defaults follow the Object Detection API's create_pascal_tf_record.py and
    create_coco_tf_record.py; their arithmetic, re-implemented here on the same files:
    VOC `float(bndbox/xmin) / int(size/width)` (no origin shift); COCO `float(x) / width`,
    `float(x + w) / width`, label = the raw category_id, text = its name, area as given;
    every float stored as float32 (a FloatList)."""
    images = write_images(tmp_path / "images")
    voc = write_voc(tmp_path / "Annotations", origin=0)  # a 0-based export: every box inside its image
    coco = write_coco(tmp_path / "instances.json")
    for source, out in ((voc, "voc"), (coco, "coco")):
        result = cli.convert("detection", images, "--annotations", source, "--out", tmp_path / out)
        assert result.exit_code == 0, result.stderr
        assert "clipped" not in result.stderr

    want = {}
    for xml in sorted(voc.glob("*.xml")):  # create_pascal_tf_record.py's dict_to_tf_example
        import xml.etree.ElementTree as ET

        root = ET.parse(xml).getroot()
        width, height = int(root.findtext("size/width")), int(root.findtext("size/height"))
        objects = root.findall("object")
        want[root.findtext("filename")] = {
            "xmin": [float(o.findtext("bndbox/xmin")) / width for o in objects],
            "ymin": [float(o.findtext("bndbox/ymin")) / height for o in objects],
            "xmax": [float(o.findtext("bndbox/xmax")) / width for o in objects],
            "ymax": [float(o.findtext("bndbox/ymax")) / height for o in objects],
            "label": [CLASSES.index(o.findtext("name")) + 1 for o in objects],  # a label map in name order
        }
    examples = parsed(tmp_path / "voc")
    for name, boxes in want.items():
        for key in ("xmin", "ymin", "xmax", "ymax"):
            assert list(examples[name][f"image/object/bbox/{key}"]) == list(np.float32(boxes[key])), (name, key)
        assert list(examples[name]["image/object/class/label"]) == boxes["label"]

    doc = json.loads(coco.read_text())  # create_coco_tf_record.py's create_tf_example
    categories = {c["id"]: c["name"] for c in doc["categories"]}
    files = {i["id"]: i for i in doc["images"]}
    examples = parsed(tmp_path / "coco")
    for image_id, image in files.items():
        anns = [a for a in doc["annotations"] if a["image_id"] == image_id]
        ex, w, h = examples[image["file_name"]], image["width"], image["height"]
        boxes = [a["bbox"] for a in anns]
        assert list(ex["image/object/bbox/xmin"]) == [np.float32(float(x) / w) for x, _, _, _ in boxes]
        assert list(ex["image/object/bbox/xmax"]) == [np.float32(float(x + bw) / w) for x, _, bw, _ in boxes]
        assert list(ex["image/object/bbox/ymin"]) == [np.float32(float(y) / h) for _, y, _, _ in boxes]
        assert list(ex["image/object/bbox/ymax"]) == [np.float32(float(y + bh) / h) for _, y, _, bh in boxes]
        assert list(ex["image/object/class/label"]) == [a["category_id"] for a in anns]
        assert [t.decode() for t in ex["image/object/class/text"]] == [categories[a["category_id"]] for a in anns]
        assert list(ex["image/object/area"]) == [np.float32(a["area"]) for a in anns]

    # the label map lists the kept ids, as mscoco_label_map.pbtxt does; TFDS names each label
    label_map = (tmp_path / "coco" / "label_map.pbtxt").read_text()
    assert re.findall(r'item \{\n  id: (\d+)\n  name: "([^"]+)"\n\}', label_map) == [
        (str(i), n) for i, n in sorted((i, n) for i, n in categories.items())
    ]
    names = tfds.builder_from_directory(str(tmp_path / "coco")).info.features["image"]["object"]["class"]["label"]
    assert names.num_classes == max(categories) + 1
    assert [names.int2str(i) for i in sorted(categories)] == [categories[i] for i in sorted(categories)]
    assert names.int2str(0) == "background" and names.int2str(1) == "(unused 1)"


def test_coco_ids_contiguous_numbers_the_classes_and_a_bad_kept_id_says_so(cli, tmp_path):
    result, out = convert(cli, tmp_path, "coco", "--coco-ids", "contiguous")
    assert result.exit_code == 0, result.stderr
    labels = {n: list(ex["image/object/class/label"]) for n, ex in parsed(out).items()}
    assert labels["sub/c.png"] == [CLASSES.index(c) + 1 for c in ("dog", "dog", "cat")]
    assert json.loads((out / "manifest.json").read_text())["options"]["coco_ids"] == "contiguous"

    coco = tmp_path / "instances_train.json"
    doc = json.loads(coco.read_text())
    doc["categories"][0]["id"] = 0  # a zero id (some exporters start there): it would be the background
    for ann in doc["annotations"]:
        ann["category_id"] = 0 if ann["category_id"] == 9 else ann["category_id"]
    coco.write_text(json.dumps(doc))
    result = cli.convert("detection", tmp_path / "images", "--annotations", coco, "--out", tmp_path / "zero")
    assert result.exit_code == 1
    assert f"{coco}: category 'dog' has id 0" in result.stderr and "--coco-ids contiguous" in result.stderr
    assert not (tmp_path / "zero").exists() or not list((tmp_path / "zero").iterdir())
    result = cli.convert("detection", tmp_path / "images", "--annotations", coco, "--out", tmp_path / "zero",
                         "--coco-ids", "contiguous")  # fmt: skip
    assert result.exit_code == 0, result.stderr


def test_voc_origin_one_subtracts_the_devkits_pixel(cli, tmp_path):
    images = write_images(tmp_path / "images")
    voc = write_voc(tmp_path / "Annotations", origin=1)
    results = {}
    for origin in ("0", "1"):
        result = cli.convert("detection", images, "--annotations", voc, "--out", tmp_path / origin,
                             "--voc-origin", origin, "--no-shuffle")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        results[origin] = parsed(tmp_path / origin)["sub/c.png"]["image/object/bbox/xmin"]
    assert list(results["1"]) == list(np.float32([5 / 40, 1 / 40, 10 / 40]))
    assert list(results["0"]) == list(np.float32([6 / 40, 2 / 40, 11 / 40]))
    result = cli.convert("detection", images, "--annotations", voc, "--out", tmp_path / "x", "--voc-origin", "2")
    assert result.exit_code == 2 and "--voc-origin" in result.stderr


def test_two_yaml_files_naming_classes_beside_yolo_labels_ask_for_classes(cli, tmp_path):
    images, labels = tmp_path / "images", tmp_path / "labels"
    yolo_export(images, labels)
    (labels / "one.yaml").write_text("names: [bird, cat, dog]\n")
    (labels / "two.yaml").write_text("names: [dog, cat, bird]\n")
    result = cli.convert("detection", images, "--annotations", labels, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "one.yaml and two.yaml" in result.stderr and "--classes" in result.stderr
