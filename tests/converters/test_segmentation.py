"""tfr-convert segmentation: an image folder and a folder of masks (palette, grayscale or
RGB-coded PNGs) -> `image`, `segmentation_mask`, `file_name` as TFDS's oxford_iiit_pet
stores them. The masks TensorFlow decodes from the records equal the sources pixel for
pixel, palette and RGB-coded forms give the same records, TFDS reads the output with
(image, segmentation_mask) as its supervised keys, and every bad input is exit 1 naming
the file (and the pixel)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from PIL import Image

CLASSES = ["background", "cat", "dog"]
COLOURS = [(0, 0, 0), (128, 0, 0), (0, 128, 0)]
IGNORE = 255


def _ok(result):
    assert result.exit_code == 0, result.output
    return result


def _write(root, kind="palette", count=6):
    """IMAGE_DIR and MASK_DIR (nested, JPEG and PNG images); {relative image path: mask indices}."""
    rng = np.random.default_rng(3)
    indices = {}
    for i in range(count):
        rel = f"{'sub/' if i % 2 else ''}{i:02d}.{'jpg' if i % 3 else 'png'}"
        h, w = 12 + i, 16 + 2 * i
        (root / "images" / rel).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(root / "images" / rel)
        mask = rng.integers(0, 3, (h, w), dtype=np.uint8)
        mask[0, : w // 2] = IGNORE  # a border, as VOC draws them
        indices[rel] = mask
        path = root / "masks" / rel.rsplit(".", 1)[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "palette":
            picture = Image.fromarray(mask, "P")
            palette = [v for c in COLOURS for v in c] + [0] * (3 * (256 - len(COLOURS)))
            palette[3 * IGNORE : 3 * IGNORE + 3] = [224, 224, 192]
            picture.putpalette(palette)
        elif kind == "gray":
            picture = Image.fromarray(mask, "L")
        else:
            table = np.array(COLOURS + [(224, 224, 192)] * (256 - len(COLOURS)), np.uint8)
            picture = Image.fromarray(table[mask], "RGB")
        picture.save(f"{path}.png")
    return root / "images", root / "masks", indices


def _palette_file(path):
    path.write_text("".join(f"{r} {g} {b} {n}\n" for (r, g, b), n in zip(COLOURS, CLASSES, strict=True))
                    + f"{IGNORE}: 224 224 192 border\n")  # fmt: skip
    return path


def _pillow_png(indices):
    """The simple path the masks' encoder is held to: Pillow's PNG of an "L" picture."""
    out = io.BytesIO()
    Image.fromarray(indices, "L").save(out, format="PNG")
    return out.getvalue()


def _records(out):
    found = {}
    for path in sorted(out.glob("*.tfrecord-*")):
        for record in tf.data.TFRecordDataset(str(path)):
            f = tf.train.Example.FromString(record.numpy()).features.feature
            stored = f["segmentation_mask"].bytes_list.value[0]
            mask = tf.io.decode_png(stored).numpy()
            assert stored == _pillow_png(mask[..., 0])  # the very bytes Pillow writes for these indices
            found[f["file_name"].bytes_list.value[0].decode()] = (f["image"].bytes_list.value[0], mask)
    return found


def test_masks_decoded_from_the_records_equal_the_sources_and_tfds_reads_them(cli, tmp_path):
    images, masks, indices = _write(tmp_path)
    (tmp_path / "classes.txt").write_text("\n".join(CLASSES) + "\n")
    out = tmp_path / "out"
    _ok(cli.convert("segmentation", images, "--masks", masks, "--classes", tmp_path / "classes.txt", "--out", out,
                    "--split", "train=0.5,test=0.5"))  # fmt: skip
    found = _records(out)
    assert sorted(found) == sorted(indices)
    for rel, (image, mask) in found.items():
        assert image == (images / rel).read_bytes()  # stored as it was
        assert mask.shape == (*indices[rel].shape, 1) and (mask[..., 0] == indices[rel]).all(), rel
    info = json.loads((out / "dataset_info.json").read_text())
    assert info["supervisedKeys"]["tuple"]["items"] == [{"featureKey": "image"}, {"featureKey": "segmentation_mask"}]
    assert (out / "segmentation_mask.labels.txt").read_text().split() == CLASSES
    builder = tfds.builder_from_directory(str(out))
    pairs = list(tfds.as_numpy(builder.as_dataset(split="train+test", as_supervised=True)))
    assert len(pairs) == len(indices)
    by_shape = {m.shape[:2]: m for m in indices.values()}
    for image, mask in pairs:
        assert image.shape[:2] == mask.shape[:2] and (mask[..., 0] == by_shape[mask.shape[:2]]).all()


def test_layout_tfds_puts_the_dataset_where_tfds_data_dir_layout_has_it(cli, tmp_path):
    images, masks, indices = _write(tmp_path)
    flat, root = tmp_path / "flat", tmp_path / "root"
    _ok(cli.convert("segmentation", images, "--masks", masks, "--out", flat))
    _ok(cli.convert("segmentation", images, "--masks", masks, "--out", root, "--layout", "tfds", "--name", "pets"))
    placed = root / "pets" / "1.0.0"
    assert sorted(p.name for p in placed.glob("*.tfrecord-*")) == ["pets-train.tfrecord-00000-of-00001"]
    assert _records(placed).keys() == _records(flat).keys() == indices.keys()
    builder = tfds.builder_from_directory(str(placed))
    assert builder.info.name == "pets" and str(builder.info.version) == "1.0.0"
    assert builder.info.supervised_keys == ("image", "segmentation_mask")
    masks_read = [m for _, m in tfds.as_numpy(builder.as_dataset(split="train", as_supervised=True))]
    assert sorted(m.shape for m in masks_read) == sorted((*i.shape, 1) for i in indices.values())


def test_export_writes_images_and_masks_folders_that_convert_back_byte_for_byte(cli, tmp_path):
    images, masks, indices = _write(tmp_path)
    (tmp_path / "classes.txt").write_text("\n".join(CLASSES) + "\n")
    out, exported, again = tmp_path / "out", tmp_path / "exported", tmp_path / "again"
    _ok(cli.convert("segmentation", images, "--masks", masks, "--classes", tmp_path / "classes.txt", "--out", out,
                    "--name", "pets"))  # fmt: skip
    result = _ok(cli.export(out, "--to", "images", "--out", exported, "--json"))
    assert json.loads(result.stdout)["layout"] == "masks"
    assert sorted(
        p.relative_to(exported / "train" / "masks").as_posix() for p in (exported / "train" / "masks").rglob("*.png")
    ) == sorted(rel.rsplit(".", 1)[0] + ".png" for rel in indices)
    for rel, mask in indices.items():
        assert (exported / "train" / "images" / rel).read_bytes() == (images / rel).read_bytes()
        assert np.array_equal(
            np.asarray(Image.open(exported / "train" / "masks" / (rel.rsplit(".", 1)[0] + ".png"))), mask
        )
    assert (exported / "classes.txt").read_text().split() == CLASSES
    _ok(cli.convert("segmentation", exported / "train" / "images", "--masks", exported / "train" / "masks",
                    "--classes", exported / "classes.txt", "--out", again, "--name", "pets"))  # fmt: skip
    shards = sorted(p.name for p in out.glob("*.tfrecord-*"))
    assert shards == sorted(p.name for p in again.glob("*.tfrecord-*"))
    assert all((out / s).read_bytes() == (again / s).read_bytes() for s in shards)


def test_palette_grayscale_and_rgb_coded_masks_give_the_same_records(cli, tmp_path):
    outs = []
    for kind in ("palette", "gray", "rgb"):
        images, masks, _ = _write(tmp_path / kind, kind)
        option = ["--palette", _palette_file(tmp_path / "palette.txt")] if kind == "rgb" else []
        outs.append(tmp_path / f"out-{kind}")
        _ok(cli.convert("segmentation", images, "--masks", masks, *option, "--out", outs[-1], "--name", "seg"))
    shards = [{p.name: p.read_bytes() for p in out.glob("*.tfrecord-*")} for out in outs]
    assert shards[0] and shards[0] == shards[1] == shards[2]


def test_resize_takes_masks_by_nearest_neighbour(cli, tmp_path):
    images, masks, indices = _write(tmp_path)
    _ok(cli.convert("segmentation", images, "--masks", masks, "--resize", "10x7", "--out", tmp_path / "out"))
    for rel, (image, mask) in _records(tmp_path / "out").items():
        assert tf.io.decode_jpeg(image).shape[:2] == (7, 10) and mask.shape == (7, 10, 1)
        expected = np.asarray(Image.fromarray(indices[rel]).resize((10, 7), Image.NEAREST))
        assert (mask[..., 0] == expected).all() and set(np.unique(mask)) <= {0, 1, 2, IGNORE}


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("size", "is 16x12, the image 17x12: a mask must be its image's size"),
        ("value", "pixel (x=3, y=2) has value 7, not a class index (0-2) nor --ignore-index 255"),
        ("colour", "pixel (x=1, y=4) has colour (9, 9, 9), not in --palette"),
        ("missing", "no mask for it in"),
        ("rgb", "an RGB-coded mask: give --palette FILE"),
    ],
)
def test_every_bad_mask_is_exit_1_naming_the_file_and_pixel(cli, tmp_path, damage, message):
    images, masks, indices = _write(tmp_path, "rgb" if damage in ("colour", "rgb") else "palette", count=1)
    (tmp_path / "classes.txt").write_text("\n".join(CLASSES) + "\n")
    mask_path = masks / "00.png"
    options = ["--classes", tmp_path / "classes.txt"]
    if damage == "size":
        Image.fromarray(np.zeros((12, 17, 3), np.uint8)).save(images / "00.png")
    elif damage == "value":
        mask = indices["00.png"].copy()
        mask[2, 3] = 7
        Image.fromarray(mask, "L").save(mask_path)
    elif damage == "colour":
        pixels = np.asarray(Image.open(mask_path)).copy()
        pixels[4, 1] = (9, 9, 9)
        Image.fromarray(pixels).save(mask_path)
        options = ["--palette", _palette_file(tmp_path / "palette.txt")]
    elif damage == "missing":
        mask_path.unlink()
        (masks / "other.png").write_bytes((masks.parent / "images" / "00.png").read_bytes())
    result = cli.convert("segmentation", images, "--masks", masks, *options, "--out", tmp_path / "out")
    assert result.exit_code == 1, result.output
    assert message in result.stderr and "Traceback" not in result.output
    named = images / "00.png" if damage == "missing" else mask_path
    assert str(named) in result.stderr
    assert not list((tmp_path / "out").glob("*.tfrecord-*")) if (tmp_path / "out").exists() else True


def test_images_without_masks_can_be_left_out_and_listed(cli, tmp_path):
    images, masks, indices = _write(tmp_path)
    (masks / "sub" / "03.png").unlink()
    result = _ok(cli.convert("segmentation", images, "--masks", masks, "--missing-masks", "skip", "--out",
                             tmp_path / "out", "--json"))  # fmt: skip
    summary = json.loads(result.stdout)
    assert [s["item"] for s in summary["skipped"]] == [str(images / "sub" / "03.png")]
    assert sorted(_records(tmp_path / "out")) == sorted(set(indices) - {"sub/03.png"})


def test_equal_masks_in_two_splits_are_not_leakage(cli, tmp_path):
    images, masks = tmp_path / "images", tmp_path / "masks"
    images.mkdir()
    masks.mkdir()
    rng = np.random.default_rng(5)
    for i in range(6):  # distinct pictures, one and the same mask
        Image.fromarray(rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)).save(images / f"{i}.png")
        Image.fromarray(np.eye(10, 12, dtype=np.uint8), "L").save(masks / f"{i}.png")
    out = tmp_path / "out"
    _ok(cli.convert("segmentation", images, "--masks", masks, "--out", out, "--split", "train=0.5,test=0.5"))
    report = json.loads(_ok(cli.inspect(out, "--stats", "--json")).stdout)
    assert report["leakage"]["images_in_several_splits"] == 0, report["leakage"]
