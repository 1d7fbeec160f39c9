"""`tfr-convert images ROOT` where ROOT's folders are splits (ImageNet's, Keras'
image_dataset_from_directory's, TFDS ImageFolder's ROOT/SPLIT/CLASS/*): every file keeps
its split and its class, read back by TensorFlow."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

CLASSES = ["ant", "bee", "cat", "dog"]


def _png(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (6, 5, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, format="PNG")


def _tree(root: Path, splits: dict[str, list[str]], per_class: int = 2) -> dict[str, tuple[str, str]]:
    """ROOT/SPLIT/CLASS/NAME.png for each split folder and its classes; file -> (split
    folder, class)."""
    made = {}
    seed = 0
    for split, classes in splits.items():
        for cls in classes:
            for i in range(per_class):
                rel = f"{split}/{cls}/{cls}{i}.png"
                _png(root / rel, seed := seed + 1)
                made[rel] = (split, cls)
    return made


def _read_back(out: Path) -> dict[str, tuple[str, str]]:
    """filename -> (split, class name), from every shard, through tf.data."""
    labels = (out / "label.labels.txt").read_text().split()
    found = {}
    for shard in sorted(out.glob("*.tfrecord-*")):
        split = shard.name.split(".")[0].rsplit("-", 1)[1]
        for raw in tf.data.TFRecordDataset(str(shard)):
            example = tf.train.Example.FromString(raw.numpy())
            feature = example.features.feature
            name = feature["filename"].bytes_list.value[0].decode()
            found[name] = (split, labels[feature["label"].int64_list.value[0]])
    return found


def test_an_imagenet_style_root_keeps_every_files_split_and_class(cli, tmp_path):
    root = tmp_path / "imagenet4"
    # a class missing from a split still gets its one number: the union, sorted
    made = _tree(root, {"train": CLASSES, "val": CLASSES, "test": CLASSES[:3]})
    result = cli.convert("images", root, "--out", tmp_path / "out", "--workers", "1")
    assert result.exit_code == 0, result.output
    canonical = {"train": "train", "val": "validation", "test": "test"}
    assert _read_back(tmp_path / "out") == {rel: (canonical[split], cls) for rel, (split, cls) in made.items()}
    assert (tmp_path / "out" / "label.labels.txt").read_text().split() == CLASSES
    info = json.loads((tmp_path / "out" / "dataset_info.json").read_text())
    assert sorted(s["name"] for s in info["splits"]) == ["test", "train", "validation"]
    assert "validation" in result.output and "test" in result.output


def test_split_folder_names_are_read_as_tfds_names_whatever_their_case(cli, tmp_path):
    root = tmp_path / "pets"
    made = _tree(root, {"Training": ["cat", "dog"], "VALID": ["cat", "dog"], "testing": ["cat", "dog"]}, 1)
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    canonical = {"Training": "train", "VALID": "validation", "testing": "test"}
    assert _read_back(tmp_path / "out") == {rel: (canonical[split], cls) for rel, (split, cls) in made.items()}


def test_the_same_dataset_written_by_one_and_two_workers_is_byte_identical(cli, tmp_path):
    root = tmp_path / "pets"
    _tree(root, {"train": ["cat", "dog"], "dev": ["cat", "dog"]}, 3)
    outs = []
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}"
        assert cli.convert("images", root, "--out", out, "--workers", workers).exit_code == 0
        outs.append({p.name: p.read_bytes() for p in out.glob("*.tfrecord-*")})
    assert outs[0] == outs[1] and any("validation" in name for name in outs[0])


def test_a_root_mixing_split_folders_and_other_folders_is_a_usage_error_naming_both(cli, tmp_path):
    root = tmp_path / "mixed"
    _tree(root, {"train": ["cat"], "val": ["cat"]}, 1)
    _png(root / "dog" / "d.png", 99)
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "train" in result.stderr and "val" in result.stderr and "dog" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_two_folders_naming_one_split_are_a_usage_error(cli, tmp_path):
    root = tmp_path / "twice"
    _tree(root, {"train": ["cat"], "val": ["cat"], "validation": ["cat"]}, 1)
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "val" in result.stderr and "validation" in result.stderr


def test_split_given_with_split_folders_resplits_and_says_so(cli, tmp_path):
    root = tmp_path / "pets"
    made = _tree(root, {"train": ["cat", "dog"], "test": ["cat", "dog"]}, 5)
    result = cli.convert("images", root, "--split", "train=0.5,test=0.5", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "re-split" in result.stderr
    found = _read_back(tmp_path / "out")
    assert sorted(found) == sorted(made)
    assert {cls for _, cls in found.values()} == {"cat", "dog"}  # classes still from the level below
    moved = [rel for rel, (split, _) in found.items() if split != made[rel][0]]
    assert moved  # 20 files re-drawn by fractions: some change split


def test_split_folders_without_class_folders_are_unlabelled_splits(cli, tmp_path):
    root = tmp_path / "shots"
    for split in ("train", "test"):
        for i in range(3):
            _png(root / split / f"{split}{i}.png", hash(split) % 1000 + i)
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    by_split = {}
    for shard in (tmp_path / "out").glob("*.tfrecord-*"):
        split = shard.name.split(".")[0].rsplit("-", 1)[1]
        for raw in tf.data.TFRecordDataset(str(shard)):
            feature = tf.train.Example.FromString(raw.numpy()).features.feature
            assert "label" not in feature
            by_split.setdefault(split, set()).add(feature["filename"].bytes_list.value[0].decode())
    assert by_split == {s: {f"{s}/{s}{i}.png" for i in range(3)} for s in ("train", "test")}


def test_labels_from_a_csv_take_their_split_from_the_folder(cli, tmp_path):
    root = tmp_path / "csvsplits"
    rows = ["file,label"]
    for split in ("train", "val"):
        for i in range(2):
            _png(root / split / f"{i}.png", i + (10 if split == "val" else 0))
            rows.append(f"{split}/{i}.png,{'cat' if i else 'dog'}")
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    result = cli.convert("images", root, "--labels", tmp_path / "labels.csv", "--label-column", "label",
                         "--out", tmp_path / "out")  # fmt: skip
    assert result.exit_code == 0, result.output
    found = _read_back(tmp_path / "out")
    assert found == {
        "train/0.png": ("train", "dog"),
        "train/1.png": ("train", "cat"),
        "val/0.png": ("validation", "dog"),
        "val/1.png": ("validation", "cat"),
    }


def test_dry_run_prints_the_split_folders_found(cli, tmp_path):
    root = tmp_path / "pets"
    _tree(root, {"train": ["cat", "dog"], "val": ["cat", "dog"]}, 2)
    result = cli.convert("images", root, "--out", tmp_path / "out", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "train" in result.output and "validation" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["train_photos", "testset", "vals"])
def test_folders_merely_starting_with_a_split_name_are_classes(cli, tmp_path, name):
    root = tmp_path / "classes"
    _tree(root, {name: ["x"], "other": ["x"]}, 1)
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    labels = (tmp_path / "out" / "label.labels.txt").read_text().split()
    assert labels == sorted([name, "other"])


def test_an_export_of_split_folders_puts_each_file_back_where_it_was_and_converts_to_the_same_shards(cli, tmp_path):
    made = _tree(tmp_path / "root", {"train": ["ant", "bee"], "val": ["ant", "bee"], "TEST": ["bee"]})
    assert cli.convert("images", tmp_path / "root", "--out", tmp_path / "one", "--name", "pets").exit_code == 0
    exported = cli.export(tmp_path / "one", "--to", "images", "--out", tmp_path / "export")
    assert exported.exit_code == 0, exported.stderr
    written = sorted(str(p.relative_to(tmp_path / "export")) for p in (tmp_path / "export").rglob("*.png"))
    assert written == sorted(made)  # val/ant/ant0.png, never validation/ant/val/ant/ant0.png
    assert cli.convert("images", tmp_path / "export", "--out", tmp_path / "two", "--name", "pets").exit_code == 0
    shards = sorted(p.name for p in (tmp_path / "one").glob("*.tfrecord-*"))
    assert shards == sorted(p.name for p in (tmp_path / "two").glob("*.tfrecord-*"))
    assert all((tmp_path / "one" / s).read_bytes() == (tmp_path / "two" / s).read_bytes() for s in shards)
