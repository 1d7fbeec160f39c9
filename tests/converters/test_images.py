"""`tfr-convert images`: layouts, image policy, splits, parallel determinism, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from helpers import final_files, png_header_only
from PIL import Image

from tfr_convert.containers.scan import read_records
from tfr_convert.dataset.naming import ShardName
from tfr_convert.dataset.wire.example import parse

RNG = np.random.default_rng(7)


def rgb(h: int = 12, w: int = 10) -> np.ndarray:
    return RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)


def save(path: Path, pixels: np.ndarray, fmt: str = "PNG", **kwargs) -> np.ndarray:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, format=fmt, **kwargs)
    return pixels


def records(out: Path, split: str | None = None) -> list[dict]:
    """Every example of a dataset directory as {feature: value or list}."""
    result = []
    for shard in sorted(out.iterdir()):
        name = ShardName.parse(shard.name)
        if name is None or (split is not None and name.split != split):
            continue
        for record in read_records(str(shard)):
            ex = {k: v[0] if len(v) == 1 else v for k, (_, v) in parse(record.data).items()}
            ex["split"] = name.split
            result.append(ex)
    return result


def decode(image: bytes, channels: int = 0) -> np.ndarray:
    return tf.io.decode_image(image, channels=channels, expand_animations=False).numpy()


@pytest.fixture
def class_folders(tmp_path):
    """cat/ and dog/ folders of lossless PNGs; returns (dir, {relpath: pixels})."""
    root = tmp_path / "pets"
    pixels = {}
    for cls in ("cat", "dog"):
        for i in range(4):
            pixels[f"{cls}/{i}.png"] = save(root / cls / f"{i}.png", rgb(8 + i, 9))
    return root, pixels


# ---------------------------------------------------------------- layouts


def test_class_folders_open_in_tfds_with_image_and_classlabel(cli, class_folders, tmp_path):
    root, pixels = class_folders
    out = tmp_path / "out"
    result = cli.convert("images", root, "--out", out, "--split", "train=0.5,test=0.5", "--stratify")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("pets: train 4, test 4 examples")
    builder = tfds.builder_from_directory(str(out))
    assert isinstance(builder.info.features["image"], tfds.features.Image)
    assert builder.info.features["label"].names == ["cat", "dog"]
    seen = {}
    for split in ("train", "test"):
        labels = []
        for ex in tfds.as_numpy(builder.as_dataset(split=split)):
            name = ex["filename"].decode()
            seen[name] = ex["image"]
            labels.append(int(ex["label"]))
            assert int(ex["label"]) == (0 if name.startswith("cat/") else 1)
        assert sorted(labels) == [0, 0, 1, 1]  # stratified: both classes in both splits
    assert seen.keys() == pixels.keys()
    for name, image in seen.items():
        assert np.array_equal(image, pixels[name])


def test_decoded_pixels_equal_the_source_matched_by_filename(cli, tmp_path):
    root = tmp_path / "mixed"
    sources = {
        "a.png": save(root / "a.png", rgb()),
        "b.bmp": save(root / "b.bmp", rgb(), "BMP"),
        "c.gif": save(root / "c.gif", RNG.integers(0, 256, (6, 5), dtype=np.uint8), "GIF"),
        "sub/d.png": save(root / "sub" / "d.png", RNG.integers(0, 256, (7, 7), dtype=np.uint8)),
    }
    for image_format in ("keep", "png", "raw"):
        out = tmp_path / image_format
        args = ("images", root / "sub", "--out", out, "--image-format", image_format)
        if image_format == "raw":
            args += ("--grayscale",)
        assert cli.convert(*args).exit_code == 0
    # the whole folder (mixed formats), kept as is and re-encoded as PNG
    for image_format in ("keep", "png"):
        out = tmp_path / f"all-{image_format}"
        labels = tmp_path / "all.csv"
        labels.write_text("path\n" + "\n".join(sources) + "\n")
        result = cli.convert("images", root, "--labels", labels, "--out", out, "--image-format", image_format)
        assert result.exit_code == 0, result.stderr
        got = {ex["filename"].decode(): ex for ex in records(out)}
        assert got.keys() == sources.keys()
        for name, ex in got.items():
            decoded = decode(ex["image"])
            source = sources[name]
            expected = source if source.ndim == 3 else source[..., None]
            if name.endswith(".gif"):
                # a GIF is a palette image: its colours, as RGB, are what both TF and we decode
                expected = np.asarray(Image.open(root / name).convert("RGB"))
            assert np.array_equal(decoded, expected), name
            assert (ex["height"], ex["width"]) == expected.shape[:2]
        if image_format == "keep":
            assert {ex["format"] for ex in got.values()} == {b"png", b"bmp", b"gif"}
            assert all(ex["image"] == (root / name).read_bytes() for name, ex in got.items())


def test_csv_columns_become_typed_features_and_label_column_gets_names(cli, tmp_path):
    root = tmp_path / "faces"
    for i in range(6):
        save(root / "img" / f"{i}.png", rgb())
    csv = tmp_path / "labels.csv"
    rows = [f"img/{i}.png,{20 + i},{0.5 * i},{['red', 'blue'][i % 2]},person{i}" for i in range(6)]
    csv.write_text("path,age,score,colour,who\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out"
    result = cli.convert("images", root, "--labels", csv, "--label-column", "colour", "--out", out)
    assert result.exit_code == 0, result.stderr
    got = sorted(records(out), key=lambda ex: ex["filename"])
    assert [ex["age"] for ex in got] == [20, 21, 22, 23, 24, 25]
    assert [ex["score"] for ex in got] == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    assert [ex["who"] for ex in got] == [f"person{i}".encode() for i in range(6)]
    assert [ex["colour"] for ex in got] == [1, 0, 1, 0, 1, 0]  # sorted names: blue, red
    assert (out / "colour.labels.txt").read_text() == "blue\nred\n"
    features = tfds.builder_from_directory(str(out)).info.features
    assert features["age"].dtype == tf.int64 and features["score"].dtype == tf.float32
    assert features["colour"].names == ["blue", "red"]


def test_tfds_as_supervised_and_raw_pixels_for_an_image_folder(cli, class_folders, tmp_path):
    root, _ = class_folders
    out = tmp_path / "out"
    args = ("--resize", "6x5", "--image-format", "raw", "--out", out)
    assert cli.convert("images", root, *args).exit_code == 0, "conversion failed"
    builder = tfds.builder_from_directory(str(out))
    assert builder.info.supervised_keys == ("image", "label")
    ours = {ex["filename"]: ex for ex in records(out)}
    for image, label in tfds.as_numpy(builder.as_dataset(split="train", as_supervised=True)):
        assert image.shape == (5, 6, 3) and image.dtype == np.uint8  # decoded by TFDS itself
        matches = [ex for ex in ours.values() if ex["image"] == image.tobytes()]
        assert matches and matches[0]["label"] == label


def test_a_label_column_with_a_slash_gets_tfds_labels_file_name(cli, tmp_path):
    for i in range(4):
        save(tmp_path / "img" / f"{i}.png", rgb())
    csv = tmp_path / "labels.csv"
    csv.write_text("path,kind/colour\n" + "".join(f"{i}.png,{['red', 'blue'][i % 2]}\n" for i in range(4)))
    out = tmp_path / "out"
    result = cli.convert("images", tmp_path / "img", "--labels", csv, "--label-column", "kind/colour", "--out", out)
    assert result.exit_code == 0, result.stderr
    assert (out / "kind.colour.labels.txt").read_text() == "blue\nred\n"  # TFDS turns '/' into '.'
    assert tfds.builder_from_directory(str(out)).info.features["kind/colour"].names == ["blue", "red"]
    stats = json.loads(cli.inspect(out, "--stats", "--json").stdout)
    assert stats["features"]["kind/colour"]["histogram"] == {"0": 2, "1": 2}  # known as a class label
    assert cli.convert("images", tmp_path / "img", "--labels", csv, "--out", out, "--overwrite").exit_code == 0
    assert not (out / "kind.colour.labels.txt").exists()  # the old dataset's labels file went with it


def test_path_column_detected_by_content_or_named(cli, tmp_path):
    root = tmp_path / "d"
    for i in range(3):
        save(root / f"{i}.png", rgb())
    csv = tmp_path / "x.csv"
    csv.write_text("kind,where\n" + "".join(f"k{i},{i}.png\n" for i in range(3)))
    assert cli.convert("images", root, "--labels", csv, "--out", tmp_path / "o1").exit_code == 0
    assert {ex["kind"] for ex in records(tmp_path / "o1")} == {b"k0", b"k1", b"k2"}
    csv.write_text("a,b\n" + "".join(f"{i}.png,{i}.png\n" for i in range(3)))
    assert cli.convert("images", root, "--labels", csv, "--path-column", "b", "--out", tmp_path / "o2").exit_code == 0
    assert {ex["a"] for ex in records(tmp_path / "o2")} == {b"0.png", b"1.png", b"2.png"}


def test_face_age_parity_with_the_tutorials_headerless_csv(cli, tmp_path):
    root = tmp_path / "UTKFace"
    sources = {f"{i:03d}.png": save(root / f"{i:03d}.png", rgb(9, 7)) for i in range(7)}
    ages = [23, 35, 1, 80, 47, 19, 60]
    csv = tmp_path / "age.csv"
    csv.write_text("".join(f"{a}\n" for a in ages))
    out = tmp_path / "out"
    args = ("images", root, "--labels", csv, "--headerless-labels", "--grayscale", "--gray-method", "mean")
    result = cli.convert(*args, "--out", out, "--no-shuffle")
    assert result.exit_code == 0, result.stderr
    got = records(out)
    assert [ex["filename"].decode() for ex in got] == sorted(sources)
    assert [ex["age"] for ex in got] == ages
    for ex in got:
        image = decode(ex["image"])
        assert image.shape[2] == 1 and ex["channels"] == 1
        mean = sources[ex["filename"].decode()].astype(np.float64).mean(axis=2)
        assert np.abs(image[..., 0].astype(np.float64) - mean).max() <= 0.5 + 1e-9
    csv.write_text("".join(f"{a}\n" for a in ages[:-1]))
    short = cli.convert(*args, "--out", tmp_path / "o2")
    assert short.exit_code == 1 and "6 labels for 7 images" in short.stderr
    assert final_files(tmp_path / "o2") == []


# ---------------------------------------------------------------- splits


def test_ratio_split_counts_are_exact_and_seeded(cli, tmp_path):
    root = tmp_path / "many"
    for i in range(23):
        save(root / f"{i:02d}.png", rgb(4, 4))
    out = tmp_path / "out"
    result = cli.convert("images", root, "--out", out, "--split", "train=0.7,validation=0.2,test=0.1", "--json")
    splits = json.loads(result.stdout)["splits"]
    assert {k: v["examples"] for k, v in splits.items()} == {"train": 16, "validation": 5, "test": 2}
    again = tmp_path / "again"
    cli.convert("images", root, "--out", again, "--split", "train=0.7,validation=0.2,test=0.1")
    assert {ex["filename"] for ex in records(out, "test")} == {ex["filename"] for ex in records(again, "test")}
    other = tmp_path / "other"
    cli.convert("images", root, "--out", other, "--split", "train=0.7,validation=0.2,test=0.1", "--seed", 3)
    assert {ex["filename"] for ex in records(out, "train")} != {ex["filename"] for ex in records(other, "train")}


def test_stratify_keeps_label_proportions(cli, tmp_path):
    root = tmp_path / "s"
    for cls, n in (("a", 30), ("b", 10)):
        for i in range(n):
            save(root / cls / f"{i}.png", rgb(3, 3))
    out = tmp_path / "out"
    assert cli.convert("images", root, "--out", out, "--split", "train=0.5,test=0.5", "--stratify").exit_code == 0
    for split in ("train", "test"):
        labels = [ex["label"] for ex in records(out, split)]
        assert (labels.count(0), labels.count(1)) == (15, 5)


def test_split_column(cli, tmp_path):
    root = tmp_path / "d"
    for i in range(5):
        save(root / f"{i}.png", rgb(3, 3))
    csv = tmp_path / "l.csv"
    csv.write_text("file,fold\n" + "".join(f"{i}.png,{'test' if i < 2 else 'train'}\n" for i in range(5)))
    out = tmp_path / "out"
    assert cli.convert("images", root, "--labels", csv, "--split-column", "fold", "--out", out).exit_code == 0
    assert sorted(ex["filename"] for ex in records(out, "test")) == [b"0.png", b"1.png"]
    assert "fold" not in records(out)[0]


# ---------------------------------------------------------------- image policy


def test_format_comes_from_content_not_extension(cli, tmp_path):
    root = tmp_path / "d"
    save(root / "really_png.jpg", rgb())
    save(root / "really_jpeg.png", rgb(), "JPEG")
    out = tmp_path / "out"
    assert cli.convert("images", root, "--out", out).exit_code == 0
    assert {ex["filename"]: ex["format"] for ex in records(out)} == {
        b"really_png.jpg": b"png",
        b"really_jpeg.png": b"jpeg",
    }


def test_raw_needs_one_shape_and_resize_gives_it(cli, tmp_path):
    root = tmp_path / "d"
    save(root / "a.png", rgb(10, 20))
    save(root / "b.png", rgb(30, 15))
    refused = cli.convert("images", root, "--out", tmp_path / "o1", "--image-format", "raw")
    assert refused.exit_code == 1 and "--image-format raw needs one image shape, found 2" in refused.stderr
    assert final_files(tmp_path / "o1") == []
    out = tmp_path / "o2"
    assert cli.convert("images", root, "--out", out, "--image-format", "raw", "--resize", "8x6").exit_code == 0
    for ex in records(out):
        pixels = np.frombuffer(ex["image"], np.uint8).reshape(6, 8, 3)
        assert (ex["height"], ex["width"], ex["channels"], ex["format"]) == (6, 8, 3, b"raw")
        source = Image.open(root / ex["filename"].decode()).resize((8, 6), Image.Resampling.BILINEAR)
        assert np.array_equal(pixels, np.asarray(source))


def test_jpeg_output_and_quality(cli, tmp_path):
    root = tmp_path / "d"
    smooth = np.tile(np.linspace(0, 255, 32, dtype=np.uint8)[None, :, None], (32, 1, 3))
    save(root / "a.png", smooth)
    for q in (95, 30):
        assert (
            cli.convert("images", root, "--out", tmp_path / f"q{q}", "--image-format", "jpeg", "--quality", q).exit_code
            == 0
        )
    hi, lo = records(tmp_path / "q95")[0], records(tmp_path / "q30")[0]
    assert hi["format"] == b"jpeg" and hi["image"][:3] == b"\xff\xd8\xff"
    assert np.abs(decode(hi["image"]).astype(int) - smooth).mean() < 2
    assert len(lo["image"]) < len(hi["image"])


def _single(cli, tmp_path, name: str, *args) -> dict:
    out = tmp_path / f"out-{name}"
    result = cli.convert("images", tmp_path / "src", "--out", out, "--image-format", "png", *args)
    assert result.exit_code == 0, result.stderr
    (ex,) = [e for e in records(out) if e["filename"] == name.encode()]
    return ex


def test_exif_orientation_is_applied(cli, tmp_path):
    pixels = rgb(6, 10)
    image = Image.fromarray(pixels)
    exif = image.getexif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    (tmp_path / "src").mkdir()
    image.save(tmp_path / "src" / "r.jpg", format="JPEG", exif=exif, quality=100)
    ex = _single(cli, tmp_path, "r.jpg")
    assert (ex["height"], ex["width"]) == (10, 6)
    expected = np.rot90(np.asarray(Image.open(tmp_path / "src" / "r.jpg")), k=-1)
    assert np.array_equal(decode(ex["image"]), expected)


def test_modes_are_converted_deliberately(cli, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    cmyk = Image.fromarray(rgb()).convert("CMYK")
    cmyk.save(src / "cmyk.jpg", quality=100)
    palette = Image.fromarray(rgb()).convert("P", palette=Image.Palette.ADAPTIVE, colors=8)
    palette.save(src / "palette.png", transparency=0)
    la = np.stack([np.full((4, 4), 200, np.uint8), np.array([[0, 255] * 2] * 4, np.uint8)], axis=2)
    Image.fromarray(la, "LA").save(src / "la.png")
    rgba = np.zeros((2, 2, 4), np.uint8)
    rgba[..., 0] = 255
    rgba[0, 0, 3], rgba[0, 1, 3], rgba[1, :, 3] = 0, 128, 255
    Image.fromarray(rgba, "RGBA").save(src / "rgba.png")
    deep = np.array([[0, 65535], [32768, 1000]], np.uint16)
    Image.fromarray(deep).save(src / "deep.png")

    ex = _single(cli, tmp_path, "cmyk.jpg")
    assert ex["channels"] == 3 and decode(ex["image"]).shape == (12, 10, 3)
    ex = _single(cli, tmp_path, "palette.png")
    assert ex["channels"] == 3
    # LA on the default white background: transparent -> 255, opaque -> 200
    ex = _single(cli, tmp_path, "la.png")
    assert ex["channels"] == 1 and np.array_equal(decode(ex["image"])[..., 0], np.array([[255, 200] * 2] * 4))
    # RGBA on a stated background
    ex = _single(cli, tmp_path, "rgba.png", "--background", "0,0,255")
    blended = decode(ex["image"])
    assert blended[0, 0].tolist() == [0, 0, 255]  # fully transparent: background
    assert blended[1, 0].tolist() == [255, 0, 0]  # opaque: the pixel
    assert blended[0, 1].tolist() in ([128, 0, 127], [128, 0, 126], [127, 0, 128])  # half: a blend
    # 16-bit gray: scaled to 8 bits, not clipped
    ex = _single(cli, tmp_path, "deep.png")
    assert decode(ex["image"])[..., 0].tolist() == [[0, 255], [128, 4]]


def test_animation_takes_frame_zero_with_a_warning(cli, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    frames = [Image.fromarray(np.full((5, 5, 3), v, np.uint8)) for v in (10, 200)]
    frames[0].save(src / "anim.gif", save_all=True, append_images=frames[1:], duration=100)
    out = tmp_path / "out"
    result = cli.convert("images", src, "--out", out, "--image-format", "png")
    assert result.exit_code == 0
    assert "warning: anim.gif: animated gif with 2 frames; took frame 0" in result.stderr
    assert decode(records(out)[0]["image"])[0, 0].tolist() == [10, 10, 10]
    assert json.loads((out / "manifest.json").read_text())["warnings"] == [
        "anim.gif: animated gif with 2 frames; took frame 0"
    ]


def test_luma_grayscale_matches_tensorflow(cli, tmp_path):
    src = tmp_path / "src"
    pixels = save(src / "x.png", rgb(40, 40))
    ex = _single(cli, tmp_path, "x.png", "--grayscale")
    ours = decode(ex["image"])
    theirs = tf.image.rgb_to_grayscale(pixels).numpy()
    assert ours.shape == theirs.shape == (40, 40, 1)
    assert np.array_equal(ours, theirs)


def test_workers_1_and_2_give_byte_identical_shards(cli, tmp_path):
    root = tmp_path / "d"
    for i in range(40):
        save(root / ("a" if i % 3 else "b") / f"{i}.png", rgb(5 + i % 4, 6))
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        args = ("images", root, "--out", out, "--workers", workers, "--image-format", "jpeg", "--split",
                "train=0.75,test=0.25", "--num-shards", 3)  # fmt: skip
        assert cli.convert(*args).exit_code == 0
        outputs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert outputs[0] == outputs[1]


def test_forked_workers_sent_spans_of_the_plan_equal_spawned_workers_sent_items(cli, tmp_path):
    """Forked workers hold the plan and get (split, start, stop); a run with another
    thread alive spawns its workers instead, and sends them the items: same bytes."""
    import threading

    root = tmp_path / "d"
    for i in range(30):
        save(root / ("a" if i % 3 else "b") / f"{i}.png", rgb(5 + i % 4, 6))
    outputs = []
    for forked in (True, False):
        out = tmp_path / ("fork" if forked else "spawn")
        release = threading.Event()
        other = None if forked else threading.Thread(target=release.wait)
        if other is not None:
            other.start()
        try:
            result = cli.convert("images", root, "--out", out, "--workers", 2, "--image-format", "png",
                                 "--split", "train=0.8,test=0.2", "--num-shards", 2)  # fmt: skip
        finally:
            release.set()
        assert result.exit_code == 0, result.output
        outputs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert outputs[0] == outputs[1]


# ---------------------------------------------------------------- bad input


BAD_IMAGES = {
    "not an image": (lambda p: p.write_text("hello"), "not an image (unrecognised content)"),
    "zero bytes": (lambda p: p.write_bytes(b""), "empty file (0 bytes)"),
    "truncated png": (lambda p: p.write_bytes(_png_bytes()[:-40]), "cannot decode png image"),
    "decompression bomb": (lambda p: p.write_bytes(png_header_only(100_000, 100_000)),
                           "100000x100000 = 10000000000 pixels exceeds --max-pixels 89478485"),
}  # fmt: skip


def _png_bytes() -> bytes:
    import io

    buf = io.BytesIO()
    Image.fromarray(rgb(30, 30)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.mark.parametrize("case", BAD_IMAGES)
def test_bad_image_fails_naming_file_and_csv_line(cli, tmp_path, case):
    root = tmp_path / "d"
    for i in range(3):
        save(root / f"{i}.png", rgb())
    make, message = BAD_IMAGES[case]
    make(root / "bad.png")
    csv = tmp_path / "labels.csv"
    csv.write_text("path,n\n0.png,1\n1.png,2\nbad.png,3\n2.png,4\n")
    out = tmp_path / "out"
    result = cli.convert("images", root, "--labels", csv, "--out", out, "--workers", 2, "--image-format", "png")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {root / 'bad.png'} ({csv} line 4): ")
    assert message in result.stderr and "Traceback" not in result.stderr
    assert final_files(out) == []
    # and under --on-error skip the run finishes and says what it left out, and why
    skipped = cli.convert("images", root, "--labels", csv, "--out", out, "--on-error", "skip", "--json")
    assert skipped.exit_code == 0, skipped.stderr
    summary = json.loads(skipped.stdout)
    assert summary["splits"]["train"]["examples"] == 3
    assert [s["item"] for s in summary["skipped"]] == [f"{root / 'bad.png'} ({csv} line 4)"]
    assert message in summary["skipped"][0]["reason"]
    assert json.loads((out / "manifest.json").read_text())["skipped"] == summary["skipped"]
    assert f"skipped: {root / 'bad.png'} ({csv} line 4): " in skipped.stderr


def test_max_pixels_is_checked_from_the_header_before_decoding(cli, tmp_path):
    root = tmp_path / "d"
    save(root / "big.png", rgb(20, 20))
    result = cli.convert("images", root, "--out", tmp_path / "o", "--max-pixels", 399)
    assert result.exit_code == 1 and "20x20 = 400 pixels exceeds --max-pixels 399" in result.stderr


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("path\n0.png\nmissing.png\n", "{csv} line 3: image 'missing.png' not found in {root}"),
        ("path\n0.png\n1.png\n0.png\n", "{csv} line 4: duplicate row: '0.png' is already on line 2"),
        ("path\n0.png\n./1.png\n1.png\n", "{csv} line 4: duplicate row: '1.png' is already on line 3"),
        ("path\n../outside.png\n", "{csv} line 2: path '../outside.png' escapes IMAGE_DIR"),
        ("path\nsub/../../outside.png\n", "{csv} line 2: path 'sub/../../outside.png' escapes IMAGE_DIR"),
        ("path\n{abs}\n", "{csv} line 2: absolute path '{abs}': paths must be relative to IMAGE_DIR"),
        ("path\nlink.png\n", "{csv} line 2: resolves to {outside}, outside IMAGE_DIR (symlink)"),
        ("path,n\n0.png,1,extra\n", "{csv} line 2: 3 fields, expected 2"),
    ],
)
def test_hostile_csv_rows(cli, tmp_path, rows, message):
    root = tmp_path / "d"
    for i in range(2):
        save(root / f"{i}.png", rgb())
    outside = save(tmp_path / "outside.png", rgb()) is not None and tmp_path / "outside.png"
    os.symlink(outside, root / "link.png")
    csv = tmp_path / "labels.csv"
    csv.write_text(rows.format(abs=outside))
    out = tmp_path / "out"
    result = cli.convert("images", root, "--labels", csv, "--out", out)
    assert result.exit_code == 1
    assert f"error: {message.format(csv=csv, root=root, abs=outside, outside=outside)}" in result.stderr
    assert final_files(out) == []


def test_symlink_out_of_a_class_folder(cli, tmp_path):
    root = tmp_path / "d"
    save(root / "cat" / "0.png", rgb())
    save(tmp_path / "secret.png", rgb())
    os.symlink(tmp_path / "secret.png", root / "cat" / "1.png")
    result = cli.convert("images", root, "--out", tmp_path / "o")
    assert result.exit_code == 1 and "outside IMAGE_DIR (symlink)" in result.stderr


def test_a_link_between_class_folders_is_kept_and_only_links_are_resolved(cli, tmp_path):
    root = tmp_path / "d"
    save(root / "cat" / "0.png", rgb())
    (root / "dog").mkdir()
    os.symlink(root / "cat" / "0.png", root / "dog" / "0.png")  # inside IMAGE_DIR: a fine second example
    result = cli.convert("images", root, "--out", tmp_path / "o", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["splits"]["train"]["examples"] == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"path\n0.png\n\xff\xfe.png\n", "{csv}: line 3: not UTF-8 (byte 11"),
        (b"", "{csv}: the CSV is empty"),
        (b"\n  \n", "{csv}: the CSV is empty"),
        (b"path,age\n", "{csv}: the CSV has a header but no rows"),
        (b"path,path\n0.png,1.png\n", "{csv}: line 1: duplicate column names path"),
    ],
)
def test_unreadable_csv_files(cli, tmp_path, content, message):
    root = tmp_path / "d"
    save(root / "0.png", rgb())
    csv = tmp_path / "labels.csv"
    csv.write_bytes(content)
    result = cli.convert("images", root, "--labels", csv, "--out", tmp_path / "o")
    assert result.exit_code == 1 and f"error: {message.format(csv=csv)}" in result.stderr
    assert final_files(tmp_path / "o") == []


def test_a_bom_is_accepted(cli, tmp_path):
    root = tmp_path / "d"
    save(root / "0.png", rgb())
    csv = tmp_path / "labels.csv"
    csv.write_bytes("\ufeffpath,age\r\n0.png,31\r\n".encode())  # as Excel writes it
    out = tmp_path / "o"
    assert cli.convert("images", root, "--labels", csv, "--out", out).exit_code == 0
    assert records(out)[0]["age"] == 31


def test_usage_errors(cli, tmp_path):
    root = tmp_path / "d"
    save(root / "0.png", rgb())
    cases = [
        (["--split", "train=0.8,test=0.3"], "add up to 1.1, not 1"),
        (["--split", "train"], "is not NAME=FRACTION"),
        (["--resize", "10"], "is not WIDTHxHEIGHT"),
        (["--stratify"], "--stratify needs --split"),
        (["--image-format", "keep", "--grayscale"], "re-encode"),
        (["--label-column", "x"], "need --labels"),
        (["--background", "1,2"], "is not R,G,B"),
    ]
    for args, message in cases:
        result = cli.convert("images", root, "--out", tmp_path / "o", *args)
        assert result.exit_code == 2 and message in result.stderr, args
    assert not (tmp_path / "o").exists()


def test_skip_mode_leaves_out_bad_rows_and_lists_them(cli, tmp_path):
    root = tmp_path / "d"
    for i in range(3):
        save(root / f"{i}.png", rgb())
    (root / "empty.png").write_bytes(b"")
    csv = tmp_path / "labels.csv"
    csv.write_text("path,n\n0.png,1\nmissing.png,2\n../x.png,3\n1.png,4\n0.png,5\nempty.png,6\n2.png,7,8\n2.png,9\n")
    out = tmp_path / "out"
    result = cli.convert("images", root, "--labels", csv, "--out", out, "--on-error", "skip", "--workers", 2)
    assert result.exit_code == 0, result.stderr
    assert "3 examples in 1 shard," in result.stdout and "(5 skipped, listed in manifest.json)" in result.stdout
    skipped = json.loads((out / "manifest.json").read_text())["skipped"]
    assert [(s["item"], s["reason"].split(":")[0].split(" '")[0]) for s in skipped] == [
        (f"{csv} line 8", "3 fields, expected 2 (read with separator"),  # ',' (detected)
        (f"{csv} line 3", "image"),
        (f"{csv} line 4", "path"),
        (f"{csv} line 6", "duplicate row"),
        (f"{root / 'empty.png'} ({csv} line 7)", "empty file (0 bytes)"),
    ]
    assert sorted(ex["n"] for ex in records(out)) == [1, 4, 9]


def test_keep_mode_chunks_follow_the_file_size_and_never_change_the_output(tmp_path):
    from tfr_convert.converters.images import ImagesConverter
    from tfr_convert.engine import local as pipeline
    from tfr_convert.engine import run_options

    root = tmp_path / "tiny"
    for i in range(300):
        save(root / f"c{i % 3}" / f"{i:03d}.png", rgb(8, 8))
    big = tmp_path / "big"
    save(big / "c0" / "0.png", np.random.default_rng(0).integers(0, 256, (600, 600, 3), dtype=np.uint8))
    assert ImagesConverter(str(big)).chunk_size == 16  # photos: small chunks, little in flight
    adaptive = ImagesConverter(str(root))
    assert adaptive.chunk_size == 256  # thumbnails: fewer, larger chunks between processes
    fixed = ImagesConverter(str(root))
    fixed.chunk_size = 16
    outputs = []
    for converter, out in ((adaptive, tmp_path / "a"), (fixed, tmp_path / "b")):
        pipeline.run(converter, run_options.RunOptions(out=str(out), workers=2))
        outputs.append({p.name: p.read_bytes() for p in out.iterdir() if ".tfrecord-" in p.name})
    assert outputs[0] and outputs[0] == outputs[1]


def test_a_file_in_a_class_folder_named_as_no_image_is_left_out_and_one_named_as_one_stops_the_run(cli, tmp_path):
    """notes.md beside the pictures is left out with a warning, by its name (as Keras,
    TFDS's ImageFolder and HF's imagefolder do); a .png that is no picture is an error
    suggesting --on-error skip."""
    from PIL import Image

    root = tmp_path / "images"
    (root / "cat").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(root / "cat" / "a.png")
    (root / "cat" / "notes.md").write_text("taken in May")
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert f"warning: {root}: left out 1 file (cat/notes.md) (by its name, not images)" in result.stderr
    assert "train 1 examples" in result.stdout
    (root / "cat" / "b.png").write_text("taken in May")
    result = cli.convert("images", root, "--out", tmp_path / "out2")
    assert result.exit_code == 1
    assert "b.png" in result.stderr and "(--on-error skip leaves such items out and lists them)" in result.stderr
    assert cli.convert("images", root, "--out", tmp_path / "out2", "--on-error", "skip").exit_code == 0


def test_a_csv_column_named_label_without_label_column_is_pointed_out(cli, tmp_path):
    from PIL import Image

    root = tmp_path / "images"
    root.mkdir()
    rows = ["file,label"]
    for i in range(4):
        Image.new("RGB", (8, 8), (i * 50, 0, 0)).save(root / f"{i}.png")
        rows.append(f"{i}.png,{['cat', 'dog'][i % 2]}")
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    plain = cli.convert("images", root, "--labels", tmp_path / "labels.csv", "--out", tmp_path / "plain")
    assert plain.exit_code == 0
    assert "column 'label' is kept as a plain string feature; give --label-column label" in plain.stderr
    labelled = cli.convert("images", root, "--labels", tmp_path / "labels.csv", "--label-column", "label",
                           "--out", tmp_path / "labelled")  # fmt: skip
    assert labelled.exit_code == 0 and "is kept as a plain" not in labelled.stderr


@pytest.mark.parametrize(
    ("image_dir", "name"),
    [
        ("pets/train/images", "pets"),  # Roboflow's and Ultralytics' layouts
        ("VOC2012/JPEGImages", "voc2012"),
        ("coco/train2017", "coco"),
        ("My Pets", "my_pets"),
        ("faces/data", "faces"),
    ],
)
def test_the_default_name_walks_up_past_generic_folder_names(cli, tmp_path, image_dir, name):
    from tfr_convert.converters.listing.folders import dataset_name

    root = tmp_path / "x" / image_dir
    save(root / "cat" / "a.png", rgb())
    assert dataset_name(str(root)) == name
    assert dataset_name(f"s3://bucket/{image_dir}") == name
    result = cli.convert("images", root, "--out", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.stderr
    assert [p for p in final_files(tmp_path / "out") if ".tfrecord" in p] == [f"{name}-train.tfrecord-00000-of-00001"]
    assert json.loads((tmp_path / "out" / "dataset_info.json").read_text())["name"] == name


def test_a_path_of_generic_folders_alone_keeps_the_nearest_name():
    from tfr_convert.converters.listing.folders import dataset_name

    assert dataset_name("s3://images") == "images" and dataset_name("gs://data/train") == "train"


def test_layout_tfds_puts_the_dataset_where_tfds_finds_it_by_name(cli, tmp_path):
    for cls in ("cat", "dog"):
        for i in range(3):
            save(tmp_path / "pets" / cls / f"{i}.png", rgb())
    out = tmp_path / "data_dir"
    result = cli.convert("images", tmp_path / "pets", "--out", out, "--layout", "tfds", "--split", "train=0.5,test=0.5")
    assert result.exit_code == 0, result.output
    placed = out / "pets" / "1.0.0"
    assert sorted(p.name.split(".")[0] for p in placed.glob("*.tfrecord-*")) == ["pets-test", "pets-train"]
    builder = tfds.builder("pets", data_dir=str(out))  # by name, as tfds.load(NAME, data_dir=OUT) finds it
    assert str(builder.info.version) == "1.0.0" and builder.info.features["label"].names == ["cat", "dog"]
    labels = [int(x["label"]) for split in ("train", "test") for x in tfds.as_numpy(builder.as_dataset(split=split))]
    assert sorted(labels) == [0, 0, 0, 1, 1, 1]
