"""The round-trip matrix: every exporter, from every source layout it can come from.

For each (exporter, source layout): the source is converted, the dataset exported, and
the export converted again with the command the export is for; the shards (split by
split) and class files must come back byte for byte. A split drawn by ratio at the first
conversion must come back without --split: from the export's split folders, its CSV's
split column, its per-split annotation files or its split file names.

Where an exporter cannot bring a layout back as it was (class folders exported by a CSV
of labels come back as one picture folder), the cell is a `Said`: the export must say so
on stderr, which is what "nothing silent" asks of it.

An exporter joins by its row in MATRIX; `test_every_exporter_and_layout_is_in_the_matrix`
fails for a `--to` target (or a `--layout` of one) without a row, and for a source layout
of SOURCE_LAYOUTS that no row converts from.
"""

from __future__ import annotations

import csv
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tfr_convert.dataset.wire.example import parse
from tfr_convert.export import TARGETS
from tfr_convert.export.images import LAYOUTS
from tfr_convert.export.media import MEDIA

RATIO = ("--split", "train=0.5,test=0.5")
BOXES = {  # picture: (width, height, boxes as class, x0, y0, x1, y1); e.jpg has none
    "a.jpg": (64, 48, [("cat", 2, 3, 30, 40), ("dog", 20, 10, 64, 48)]),
    "b.jpg": (50, 70, [("bird", 0, 0, 25, 35)]),
    "c.png": (40, 40, [("dog", 5, 6, 35, 36), ("cat", 10, 20, 30, 30)]),
    "d.jpg": (36, 30, [("cat", 1, 1, 9, 9)]),
    "e.jpg": (32, 32, []),
}
BOX_CLASSES = ["bird", "cat", "dog"]
SPLIT_OF = {"a.jpg": "train", "b.jpg": "val", "c.png": "train", "d.jpg": "val", "e.jpg": "train"}


@dataclass(frozen=True)
class Trip:
    """Convert SRC with `command first...`, export with `export...`, convert the export
    with `command back...` ({src}: the source's folder, {x}: the export's)."""

    command: str
    build: Callable[[Path], None]
    first: tuple[str, ...]
    back: tuple[str, ...]
    export: tuple[str, ...] = ()


@dataclass(frozen=True)
class Said:
    """An export that cannot come back as its source was: stderr must say so (`words`)."""

    trip: Trip
    words: str


# ---------------------------------------------------------------- sources


def _picture(path: Path, seed: int, size: tuple[int, int] = (6, 5)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (*size, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)


def class_folders(root: Path, top: str = "") -> list[str]:
    """root/[top/]CLASS/NAME pictures, JPEG and PNG, one nested a folder deeper."""
    made = []
    for c, name in enumerate(("cat", "dog", "emu")):
        for i in range(3 + c):
            rel = f"{top}{name}/{'sub/' if i == 2 else ''}{i}.{'png' if i % 2 else 'jpg'}"
            _picture(root / rel, 10 * c + i, (6 + i, 5 + c))
            made.append(rel)
    return made


def split_folders(root: Path) -> None:
    class_folders(root, "train/")
    class_folders(root, "val/")


def csv_labels(root: Path) -> None:
    """root/photos/NAME and root/labels.csv: path, class text, two more columns."""
    names = class_folders(root / "photos")
    with open(root / "labels.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["path", "species", "age", "note"])
        for i, name in enumerate(names):
            writer.writerow([name, ["owl", "fox", "bee"][i % 3], i * 7, f"seen, on day {i}"])


def masks(root: Path) -> None:
    for i in range(5):
        _picture(root / "images" / f"p{i}.png", i, (8, 7))
        mask = (np.arange(56).reshape(8, 7) + i) % 3
        (root / "masks").mkdir(parents=True, exist_ok=True)
        Image.fromarray(mask.astype(np.uint8)).save(root / "masks" / f"p{i}.png")
    (root / "classes.txt").write_text("ground\nwall\nsky\n")


def _box_pictures(root: Path, folder_of: Callable[[str], str] = lambda name: "") -> None:
    for i, (name, (w, h, _)) in enumerate(BOXES.items()):
        _picture(root / "images" / folder_of(name) / name, i, (h, w))


def _csv_rows(names) -> list[str]:
    rows = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
    for name in names:
        w, h, found = BOXES[name]
        rows += [f"{name},{w},{h},{c},{x0},{y0},{x1},{y1}" for c, x0, y0, x1, y1 in found] or [f"{name},{w},{h},,,,,"]
    return rows


def boxes_csv(root: Path) -> None:
    _box_pictures(root)
    (root / "boxes.csv").write_text("\n".join(_csv_rows(BOXES)) + "\n")


def boxes_csv_per_split(root: Path) -> None:
    _box_pictures(root)
    (root / "annotations").mkdir()
    for split in ("train", "val"):
        rows = _csv_rows(n for n in BOXES if SPLIT_OF[n] == split)
        (root / "annotations" / f"boxes_{split}.csv").write_text("\n".join(rows) + "\n")


def _coco(names) -> dict:
    pictures, boxes = [], []
    for i, name in enumerate(names, 100):
        w, h, found = BOXES[name]
        pictures.append({"id": i, "file_name": name, "width": w, "height": h})
        for c, x0, y0, x1, y1 in found:
            boxes.append({"id": len(boxes) + 1, "image_id": i, "category_id": BOX_CLASSES.index(c) + 1,
                          "bbox": [x0, y0, x1 - x0, y1 - y0], "area": float((x1 - x0) * (y1 - y0)), "iscrowd": 0})  # fmt: skip
    categories = [{"id": i, "name": n} for i, n in enumerate(BOX_CLASSES, 1)]
    return {"images": pictures, "annotations": boxes, "categories": categories}


def coco_file(root: Path) -> None:
    _box_pictures(root)
    (root / "instances.json").write_text(json.dumps(_coco(BOXES)))


def coco_per_split(root: Path) -> None:
    _box_pictures(root)
    (root / "annotations").mkdir()
    for split in ("train", "val"):
        document = _coco([n for n in BOXES if SPLIT_OF[n] == split])
        (root / "annotations" / f"instances_{split}.json").write_text(json.dumps(document))


def _yolo_label(name: str) -> str:
    w, h, found = BOXES[name]
    return "".join(
        f"{BOX_CLASSES.index(c)} {(x0 + x1) / 2 / w:.6f} {(y0 + y1) / 2 / h:.6f} {(x1 - x0) / w:.6f} {(y1 - y0) / h:.6f}\n"
        for c, x0, y0, x1, y1 in found
    )


def yolo_labels(root: Path) -> None:
    _box_pictures(root)
    (root / "labels").mkdir()
    (root / "labels" / "classes.txt").write_text("\n".join(BOX_CLASSES) + "\n")
    for name in BOXES:
        (root / "labels" / (name.rsplit(".", 1)[0] + ".txt")).write_text(_yolo_label(name))


def yolo_data_yaml(root: Path) -> None:
    """Ultralytics' layout: images/SPLIT and labels/SPLIT, data.yaml naming both."""
    _box_pictures(root, lambda name: SPLIT_OF[name])
    for name in BOXES:
        label = root / "labels" / SPLIT_OF[name] / (name.rsplit(".", 1)[0] + ".txt")
        label.parent.mkdir(parents=True, exist_ok=True)
        label.write_text(_yolo_label(name))
    names = "".join(f"  {i}: {n}\n" for i, n in enumerate(BOX_CLASSES))
    (root / "data.yaml").write_text(f"path: .\ntrain: images/train\nval: images/val\ntest: # none\nnames:\n{names}")


def _voc_annotations(root: Path) -> None:
    (root / "Annotations").mkdir(parents=True)
    for name, (w, h, found) in BOXES.items():
        objects = "".join(
            f"<object><name>{c}</name><truncated>0</truncated><difficult>{int(c == 'bird')}</difficult>"
            f"<bndbox><xmin>{x0 + 1}</xmin><ymin>{y0 + 1}</ymin><xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>"
            for c, x0, y0, x1, y1 in found
        )
        xml = (f"<annotation><filename>{name}</filename><size><width>{w}</width><height>{h}</height>"
               f"<depth>3</depth></size>{objects}</annotation>")  # fmt: skip
        (root / "Annotations" / (name.rsplit(".", 1)[0] + ".xml")).write_text(xml)


def voc_annotations(root: Path) -> None:
    _box_pictures(root)
    _voc_annotations(root)


def voc_image_sets(root: Path) -> None:
    voc_annotations(root)
    (root / "ImageSets" / "Main").mkdir(parents=True)
    for split in ("train", "val"):
        stems = [n.rsplit(".", 1)[0] for n in BOXES if SPLIT_OF[n] == split]
        (root / "ImageSets" / "Main" / f"{split}.txt").write_text("".join(s + "\n" for s in stems))


def _table() -> dict[str, list]:
    return {
        "id": list(range(12)),
        "name": [f'row {i}, quoted "{i}"' for i in range(12)],
        "score": [None if i % 4 == 1 else i * 0.25 for i in range(12)],
        "kind": [["a", "b", "c"][i % 3] for i in range(12)],
    }


def table_csv_nulls(root: Path) -> None:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    pcsv.write_csv(pa.table(_table()), root / "rows.csv")


def table_parquet_splits(root: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(_table())
    pq.write_table(table.slice(0, 8), root / "train.parquet")
    pq.write_table(table.slice(8), root / "test.parquet")


def table_json_lines(root: Path) -> None:
    rows = [dict(zip(_table(), values, strict=True)) for values in zip(*_table().values(), strict=True)]
    (root / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def hf_dataset_dict(root: Path) -> None:
    import datasets

    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["neg", "pos"]),
            "score": datasets.Value("float32"),
        }
    )
    parts = {
        split: {"text": [f"{split} {i}" for i in range(n)], "label": [i % 2 for i in range(n)],
                "score": [i / 8 for i in range(n)]}
        for split, n in (("train", 6), ("validation", 3), ("test", 3))
    }  # fmt: skip
    dataset = datasets.DatasetDict({s: datasets.Dataset.from_dict(d, features=features) for s, d in parts.items()})
    dataset.save_to_disk(str(root / "hf"))


def _tone(seed: int) -> np.ndarray:
    return (np.sin(np.arange(800 + 37 * seed) * (0.02 + 0.01 * seed)) * 9000).astype(np.int16)


def _wav(path: Path, seed: int) -> None:
    import soundfile as sf

    sf.write(path, _tone(seed), 8000, subtype="PCM_16")


def _mkv(path: Path, seed: int) -> None:
    """A lossless FFV1 clip: it decodes to exactly its frames."""
    import av

    frames = np.random.default_rng(seed).integers(0, 256, (3 + seed % 2, 16, 24, 3), dtype=np.uint8)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("ffv1", rate=10)
        stream.width, stream.height, stream.pix_fmt = 24, 16, "bgr0"
        for frame in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())


def _media_sources(write: Callable[[Path, int], None], suffix: str, folder: str, columns: tuple[str, str]):
    """(class folders, split folders, a CSV of labels) of recordings or clips."""

    def class_folders(root: Path, top: str = "") -> list[str]:
        made = []
        for c, name in enumerate(("cat", "dog")):
            for i in range(3):
                rel = f"{top}{name}/{i}{suffix}"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                write(root / rel, 10 * c + i)
                made.append(rel)
        return made

    def split_folders(root: Path) -> None:
        class_folders(root, "train/")
        class_folders(root, "val/")

    def labelled(root: Path) -> None:
        names = class_folders(root / folder)
        with open(root / "labels.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["path", *columns])
            writer.writerows([name, ["yes", "no"][i % 2], f"s {i % 3}"] for i, name in enumerate(names))

    return class_folders, split_folders, labelled


# ---------------------------------------------------------------- the matrix

_LABELS_BACK = ("{x}", "--labels", "{x}/labels.csv", "--split-column", "split")


def _media(command: str, write: Callable[[Path, int], None], suffix: str, top: str, column: str):
    """The rows of --to audio|video: class folders, split folders, a CSV of labels."""
    folders, split, labelled = _media_sources(write, suffix, top, (column, "speaker"))
    return {
        f"{command}/folders": {
            "class folders": Trip(command, folders, ("{src}",), ("{x}",)),
            "split folders": Trip(command, split, ("{src}",), ("{x}",)),
        },
        f"{command}/csv": {
            "CSV labels": Trip(
                command,
                labelled,
                (f"{{src}}/{top}", "--labels", "{src}/labels.csv", "--label-column", column, *RATIO),
                (*_LABELS_BACK, "--label-column", column),
            ),
            "class folders, split by ratio": Trip(
                command, folders, ("{src}", *RATIO), (*_LABELS_BACK, "--label-column", "label")
            ),
        },
    }


def _boxes(target: str, one: Callable, annotations: str, per_split: Callable, per_split_args: tuple[str, ...]):
    back = {"coco": "{x}/annotations", "yolo": "{x}/labels", "voc": "{x}/Annotations", "csv": "{x}/annotations"}[target]
    origin = ("--voc-origin", "1") if target == "voc" else ()
    return {
        target: {
            "one annotations file, split by ratio": Trip(
                "detection",
                one,
                ("{src}/images", "--annotations", f"{{src}}/{annotations}", *origin, *RATIO),
                ("{x}/images", "--annotations", back, *origin),
            ),
            "per-split annotations": Trip(
                "detection",
                per_split,
                ("{src}/images", *per_split_args, *origin),
                ("{x}/images", "--annotations", back, *origin),
            ),
        }
    }


def webdataset_shards(root: Path) -> None:
    """train/test tar shards written by webdataset's own TarWriter: a picture (PNG or
    JPEG), a class id and json fields (a caption, a score) a sample."""
    wds = pytest.importorskip("webdataset")
    for s, split in enumerate(("train", "test")):
        with wds.TarWriter(str(root / f"{split}-000000.tar")) as sink:
            for i in range(4 + s):
                path = root / "pictures" / f"{split}{i}.{'png' if i % 2 else 'jpg'}"
                _picture(path, 7 * s + i, (5 + i, 6))
                ext = path.suffix[1:]
                sink.write({"__key__": f"{split}/{i:04d}", ext: path.read_bytes(), "cls": i % 3,
                            "json": {"caption": f"sample {i}", "score": 0.5 * i}})  # fmt: skip


MATRIX: dict[str, dict[str, Trip | Said]] = {
    "images/folders": {
        "class folders": Trip("images", class_folders, ("{src}",), ("{x}",)),
        "split folders": Trip("images", split_folders, ("{src}",), ("{x}",)),
        "class folders, split by ratio": Said(
            Trip("images", class_folders, ("{src}", *RATIO), ("{x}",), ("--layout", "folders")), "--layout csv"
        ),
        "CSV labels": Said(
            Trip(
                "images",
                csv_labels,
                ("{src}/photos", "--labels", "{src}/labels.csv", "--label-column", "species"),
                ("{x}",),
                ("--layout", "folders"),
            ),
            "--layout csv",
        ),
    },
    "images/csv": {
        "CSV labels": Trip(
            "images",
            csv_labels,
            ("{src}/photos", "--labels", "{src}/labels.csv", "--label-column", "species", *RATIO),
            (*_LABELS_BACK, "--label-column", "species"),
        ),
        "class folders, split by ratio": Trip(
            "images", class_folders, ("{src}", *RATIO), (*_LABELS_BACK, "--label-column", "label")
        ),
        "split folders": Trip(
            "images", split_folders, ("{src}",), (*_LABELS_BACK, "--label-column", "label"), ("--layout", "csv")
        ),
    },
    "images/masks": {
        "masks": Trip(
            "segmentation",
            masks,
            ("{src}/images", "--masks", "{src}/masks", "--classes", "{src}/classes.txt"),
            ("{x}/train/images", "--masks", "{x}/train/masks", "--classes", "{x}/classes.txt"),
        ),
    },
    **_boxes("coco", coco_file, "instances.json", coco_per_split, ("--annotations", "{src}/annotations")),
    **_boxes("yolo", yolo_labels, "labels", yolo_data_yaml, ("--annotations", "{src}/labels")),
    **_boxes("voc", voc_annotations, "Annotations", voc_image_sets, ("--annotations", "{src}/Annotations")),
    **_boxes("csv", boxes_csv, "boxes.csv", boxes_csv_per_split, ("--annotations", "{src}/annotations")),
    "parquet": {
        "CSV, nulls omitted, split by ratio": Trip(
            "table", table_csv_nulls, ("{src}/rows.csv", "--nulls", "omit", *RATIO), ("{x}", "--nulls", "omit")
        ),
        "Parquet split files": Trip("table", table_parquet_splits, ("{src}", "--nulls", "fill"), ("{x}",)),
        "JSON Lines, nulls omitted": Trip(
            "table",
            table_json_lines,
            ("{src}/rows.jsonl", "--nulls", "omit", "--label-column", "kind"),
            ("{x}", "--nulls", "omit"),
        ),
        "HF DatasetDict": Trip("table", hf_dataset_dict, ("{src}/hf",), ("{x}",)),
    },
    "hf": {"HF DatasetDict": Trip("table", hf_dataset_dict, ("{src}/hf",), ("{x}",))},
    **_media("audio", _wav, ".wav", "sounds", "word"),
    **_media("video", _mkv, ".mkv", "clips", "action"),
    "webdataset": {
        "tar shards of pictures, classes and json, split by shard name": Trip(
            "webdataset", webdataset_shards, ("{src}/{{train,test}}-000000.tar",), ("{x}/{{train,test}}-000000.tar",)
        ),
    },
}

# Every layout a converter reads a labelled dataset from, by command: each must be a
# source in some row (its name leads the row's key)
SOURCE_LAYOUTS = {
    "images": ["class folders", "split folders", "CSV labels"],
    "segmentation": ["masks"],
    "detection": ["one annotations file", "per-split annotations"],
    "table": ["CSV", "Parquet split files", "JSON Lines", "HF DatasetDict", "nulls omitted"],
    "audio": ["class folders", "split folders", "CSV labels"],
    "video": ["class folders", "split folders", "CSV labels"],
}


def _exporters() -> set[str]:
    return {
        f"{target}/{layout}"
        for target in TARGETS
        for layout in (LAYOUTS if target == "images" else [x for x in LAYOUTS if x != "masks"])
        if target == "images" or target in MEDIA
    } | {target for target in TARGETS if target != "images" and target not in MEDIA}


def test_every_exporter_and_layout_is_in_the_matrix():
    assert set(MATRIX) == _exporters()
    for command, layouts in SOURCE_LAYOUTS.items():
        for layout in layouts:
            rows = [
                exporter
                for exporter, row in MATRIX.items()
                for name, cell in row.items()
                if (cell.trip if isinstance(cell, Said) else cell).command == command and layout in name
            ]
            assert rows, f"{command} from {layout}: no exporter brings it back"


def _files(out: Path) -> dict[str, bytes]:
    """The shards and the class files: what a round trip must give back byte for byte."""
    kept = (".labels.txt", "label_map.pbtxt", ".tfrecord-")
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if any(k in p.name for k in kept)}


def _args(args: tuple[str, ...], **where: Path) -> list[str]:
    return [a.format(**{k: str(v) for k, v in where.items()}) for a in args]


CELLS = [(exporter, layout) for exporter, row in MATRIX.items() for layout in row]


@pytest.mark.parametrize(("exporter", "layout"), CELLS, ids=[f"{e}-{s}".replace(" ", "_") for e, s in CELLS])
def test_an_export_converts_back_to_the_same_shards(cli, tmp_path, exporter, layout):
    cell = MATRIX[exporter][layout]
    trip = cell.trip if isinstance(cell, Said) else cell
    src, x = tmp_path / "src", tmp_path / "x"
    src.mkdir()
    trip.build(src)
    named = ("--name", "ds", "--seed", "4")  # the options a user keeps: the name and seed
    first = cli.convert(trip.command, *_args(trip.first, src=src), *named, "--out", tmp_path / "first")
    assert first.exit_code == 0, first.output
    target, _, export_layout = exporter.partition("/")
    layout_option = ("--layout", export_layout) if export_layout and "--layout" not in trip.export else ()
    exported = cli.export(tmp_path / "first", "--to", target, *layout_option, *trip.export, "--out", x)
    assert exported.exit_code == 0, exported.output
    if isinstance(cell, Said):
        assert cell.words in exported.stderr, exported.stderr
        return
    again = cli.convert(trip.command, *_args(trip.back, src=src, x=x), *named, "--out", tmp_path / "again")
    assert again.exit_code == 0, again.output
    before, after = _files(tmp_path / "first"), _files(tmp_path / "again")
    assert before, "the first conversion wrote no shards"
    assert sorted(after) == sorted(before), "other shards or splits came back"
    changed = [name for name in before if after[name] != before[name]]
    assert not changed, f"{changed} differ after the round trip: {_first_difference(before, after, changed)}"


def _records(data: bytes) -> list[dict]:
    """A TFRecord file's Examples, parsed (no CRC check: the shards were just written)."""
    found, at = [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        found.append(parse(data[at + 12 : at + 12 + length]))
        at += 16 + length
    return found


def _first_difference(before: dict[str, bytes], after: dict[str, bytes], changed: list[str]) -> str:
    name = changed[0]
    if ".tfrecord-" not in name:
        return f"{name}: {before[name][:200]!r} became {after[name][:200]!r}"
    old, new = _records(before[name]), _records(after[name])
    if len(old) != len(new):
        return f"{name}: {len(old)} records became {len(new)}"
    for i, (a, b) in enumerate(zip(old, new, strict=True)):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return f"{name} record {i} feature {key!r}: {str(a.get(key))[:120]} became {str(b.get(key))[:120]}"
    return f"{name}: the same records, other bytes"
