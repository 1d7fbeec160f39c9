"""The append matrix: every command appends a second batch as a new version.

For each command: a first batch converted with --append (version 1.0.0), a second batch
(other content, and where the command has class names, a new one) appended (1.1.0).
Then the old version's files are byte for byte what they were, the new version holds the
old records (its first shards are the old ones) and the new, `tfr-inspect --verify`
passes it, and TFDS reads every record of it. A command joins by its row in BATCHES;
`test_every_command_is_in_the_append_matrix` fails for a command without one.
"""

from __future__ import annotations

import hashlib
import io
import json
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers import write_cifar, write_class_folders, write_mnist
from PIL import Image

from record_inputs import examples, write_tfrecord
from tfr_convert import containers
from valid_files import mp4


def _mnist(root: Path, k: int) -> list:
    write_mnist(root, n_train=12, n_test=4, seed=k)
    return [root]


def _cifar(root: Path, k: int) -> list:
    return [write_cifar(root, per_batch=2, seed=k)["path"]]


def _images(root: Path, k: int) -> list:
    write_class_folders(root, [["a", "b"], ["b", "c"]][k], 3, seed=k)
    return [root]


def _detection(root: Path, k: int) -> list:
    boxes = [("cat", 2, 3, 20, 18), ("dog" if k == 0 else "fox", 1, 1, 9, 9)]
    rows = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
    rng = np.random.default_rng(k)
    for i in range(3):
        (root / "pics").mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (24, 30, 3), dtype=np.uint8)).save(root / "pics" / f"{k}_{i}.png")
        rows += [f"{k}_{i}.png,30,24,{c},{x0},{y0},{x1},{y1}" for c, x0, y0, x1, y1 in boxes]
    (root / "boxes.csv").write_text("\n".join(rows) + "\n")
    return [root / "pics", "--annotations", root / "boxes.csv"]


def _segmentation(root: Path, k: int) -> list:
    rng = np.random.default_rng(k)
    for i in range(3):
        for folder in ("images", "masks"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (8, 10, 3), dtype=np.uint8)).save(root / "images" / f"{k}_{i}.png")
        Image.fromarray(rng.integers(0, 3, (8, 10), dtype=np.uint8)).save(root / "masks" / f"{k}_{i}.png")
    (root / "classes.txt").write_text("sky\nroad\ncar\n")
    return [root / "images", "--masks", root / "masks", "--classes", root / "classes.txt"]


def _records(root: Path, k: int) -> list:
    root.mkdir(parents=True)
    return [write_tfrecord(root / "in.tfrecord", examples(4, start=10 * k))]


def _table(root: Path, k: int) -> list:
    root.mkdir(parents=True)
    lines = ["text,label"] + [f"t{k}_{i},{['x', 'y', 'z'][(i + k) % 3 if k else i % 2]}" for i in range(5)]
    (root / "rows.csv").write_text("\n".join(lines) + "\n")
    return [root / "rows.csv", "--label-column", "label"]


def _audio(root: Path, k: int) -> list:
    rng = np.random.default_rng(k)
    for c in [["cat", "dog"], ["dog", "owl"]][k]:
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(2):
            buffer = io.BytesIO()
            with wave.open(buffer, "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(8000)
                w.writeframes(rng.integers(-3000, 3000, 200 + 10 * i, dtype=np.int16).tobytes())
            (root / c / f"{i}.wav").write_bytes(buffer.getvalue())
    return [root]


def _video(root: Path, k: int) -> list:
    pytest.importorskip("av")
    for c in [["run"], ["run", "walk"]][k]:
        (root / c).mkdir(parents=True, exist_ok=True)
        (root / c / f"{k}.mp4").write_bytes(mp4(frames=3 + k))
    return [root]


def _webdataset(root: Path, k: int) -> list:
    import tarfile

    root.mkdir(parents=True)
    rng = np.random.default_rng(k)
    with tarfile.open(root / "train-000000.tar", "w") as tar:
        for i in range(4):
            picture = io.BytesIO()
            Image.fromarray(rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)).save(picture, "PNG")
            for ext, data in (("png", picture.getvalue()), ("cls", str(i % 2 + 2 * k).encode())):
                info = tarfile.TarInfo(f"b{k}/{i:03d}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return [root / "train-000000.tar"]


#: command -> the arguments of batch k (0 or 1), its inputs written under a folder
BATCHES: dict[str, Callable[[Path, int], list]] = {
    "mnist": _mnist,
    "cifar": _cifar,
    "images": _images,
    "detection": _detection,
    "segmentation": _segmentation,
    "records": _records,
    "table": _table,
    "audio": _audio,
    "video": _video,
    "webdataset": _webdataset,
}


def test_every_command_is_in_the_append_matrix():
    from tfr_convert.cli.convert import convert

    assert sorted(convert.list_commands(None)) == sorted(BATCHES)


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _counts(folder: Path) -> dict[str, int]:
    """Records per split, read with our own container reader."""
    info = json.loads((folder / "dataset_info.json").read_text())
    fmt = "array_record" if info["fileFormat"] == "array_record" else "tfrecord"
    counts = {}
    for split in info["splits"]:
        shards = sorted(folder.glob(f"*-{split['name']}.{fmt}-*"))
        counts[split["name"]] = sum(containers.get(fmt).count(str(s)) for s in shards)
    return counts


@pytest.mark.parametrize("command", sorted(BATCHES))
def test_a_second_batch_appends_a_version_holding_both_and_the_first_stays_as_it_was(cli, tmp_path, command):
    tfds = pytest.importorskip("tensorflow_datasets")
    root = tmp_path / "root"
    first, second = BATCHES[command](tmp_path / "b0", 0), BATCHES[command](tmp_path / "b1", 1)
    made = cli.convert(command, *first, "--out", root, "--append", "--name", "ds", "--json")
    assert made.exit_code == 0, made.output
    old = Path(json.loads(made.stdout)["out"])
    before, old_counts = _hashes(old), _counts(old)
    appended = cli.convert(command, *second, "--out", root, "--append", "--json")
    assert appended.exit_code == 0, appended.output
    summary = json.loads(appended.stdout)
    new = Path(summary["out"])
    assert summary["version"]["parent"] == old.name and new.parent == old.parent
    assert _hashes(old) == before
    added = summary["version"]["added"]
    assert _counts(new) == {s: old_counts.get(s, 0) + added.get(s, 0) for s in old_counts.keys() | added.keys()}
    assert all(added.values())
    for split in old_counts:  # the new version's first shards are the old ones, byte for byte
        olds = sorted(old.glob(f"ds-{split}.*"))
        news = sorted(new.glob(f"ds-{split}.*"))[: len(olds)]
        assert [p.read_bytes() for p in news] == [p.read_bytes() for p in olds], split
    for names in old.glob("*.labels.txt"):  # class names extended, never renumbered
        had, has = names.read_text().splitlines(), (new / names.name).read_text().splitlines()
        assert has[: len(had)] == had, names.name
        assert command in ("mnist", "cifar", "records", "segmentation") or len(has) > len(had), names.name
    verified = cli.inspect(new, "--verify")
    assert verified.exit_code == 0, verified.output
    builder = tfds.builder("ds", data_dir=str(root))
    assert str(builder.version) == new.name
    for split, count in _counts(new).items():
        assert sum(1 for _ in builder.as_dataset(split=split)) == count, split
