"""tfr-export --to hf: a save_to_disk folder that the real `datasets.load_from_disk` opens
as a DatasetDict with the right features (ClassLabel names, Image bytes kept, Audio,
frames, boxes as lists, nested dicts), rows in the dataset's order; a Hugging Face
dataset through `tfr-convert table` and back gives equal features and rows; the files
are the same for any worker count and cut at --shard-size."""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path

import numpy as np
import pytest
from helpers import make_clip, write_class_folders, write_mnist
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from detection_inputs import CLASSES, COCO_IDS, DATASET, write_coco, write_images
from tfr_convert.dataset.record_schema import SAMPLE
from tfr_convert.dataset.wire.example import serialize
from valid_files import framed, png

datasets = pytest.importorskip("datasets")


def _loaded(out: Path):
    """The export as `datasets` opens it, pictures and sounds as their bytes."""
    loaded = datasets.load_from_disk(str(out))
    assert isinstance(loaded, datasets.DatasetDict)
    return loaded


def _undecoded(split):
    for name, feature in split.features.items():
        if isinstance(feature, (datasets.Image, datasets.Audio)):
            split = split.cast_column(name, type(feature)(decode=False, **_rate(feature)))
    return split


def _rate(feature) -> dict:
    return {"sampling_rate": feature.sampling_rate} if isinstance(feature, datasets.Audio) else {}


def test_class_folders_open_in_datasets_with_class_names_and_the_stored_picture_bytes(cli, tmp_path):
    photos, dataset, out = tmp_path / "photos", tmp_path / "ds", tmp_path / "hf"
    write_class_folders(photos, ["cat", "dog", "emu"], 5, seed=0)
    assert cli.convert("images", photos, "--out", dataset, "--split", "train=0.6,test=0.4").exit_code == 0
    result = cli.export(dataset, "--to", "hf", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    loaded = _loaded(out)
    assert list(loaded) == ["train", "test"]
    features = loaded["train"].features
    assert features["label"] == datasets.ClassLabel(names=["cat", "dog", "emu"])
    assert isinstance(features["image"], datasets.Image)
    assert features["filename"] == datasets.Value("string") and features["height"] == datasets.Value("int64")
    seen = 0
    for split in loaded.values():
        for row in _undecoded(split):
            name = row["filename"]
            assert row["image"]["bytes"] == (photos / name).read_bytes()  # not re-encoded
            assert features["label"].int2str(row["label"]) == name.split("/")[0]
            seen += 1
    assert seen == 15
    picture = loaded["test"][0]["image"]  # and `datasets` decodes them
    assert isinstance(picture, Image.Image) and picture.size == (5, 6)


def _hf_source(root: Path) -> Path:
    """A DatasetDict of every kind a table keeps: a picture, class names at the top and in
    a list of objects, narrow and wide numbers, text, bytes, lists of one and of any length."""

    def png_of(i: int) -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(np.full((3, 4, 3), 20 * i, np.uint8)).save(buffer, "PNG")
        return buffer.getvalue()

    features = datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=["neg", "pos"]),
            "count": datasets.Value("int32"),
            "flag": datasets.Value("bool"),
            "score": datasets.Value("float64"),
            "text": datasets.Value("string"),
            "blob": datasets.Value("binary"),
            "vector": datasets.Sequence(datasets.Value("float32")),
            "box": datasets.Sequence(datasets.Value("float32"), length=4),
            "objects": datasets.Sequence(
                {"bbox": datasets.Sequence(datasets.Value("float32"), length=4),
                 "category": datasets.ClassLabel(names=["a", "b", "c"])}
            ),
        }
    )  # fmt: skip

    def rows(n: int, offset: int) -> dict:
        ids = range(offset, offset + n)
        return {
            "image": [{"bytes": png_of(i), "path": None} for i in ids],
            "label": [i % 2 for i in ids],
            "count": [i * 1000 - 7 for i in ids],
            "flag": [i % 3 == 0 for i in ids],
            "score": [i / 4 for i in ids],
            "text": [f"row {i} é" for i in ids],
            "blob": [bytes([i, 0, 255]) for i in ids],
            "vector": [[float(k) for k in range(i % 4)] for i in ids],
            "box": [[0.0, 0.25, 0.5, float(i)] for i in ids],
            "objects": [{"bbox": [[0.1, 0.2, 0.3, 0.4]] * (i % 3), "category": [i % 3] * (i % 3)} for i in ids],
        }

    parts = {"train": rows(6, 0), "test": rows(3, 6)}
    source = datasets.DatasetDict({s: datasets.Dataset.from_dict(r, features=features) for s, r in parts.items()})
    source.save_to_disk(str(root))
    return root


def test_a_hugging_face_dataset_comes_back_through_table_with_equal_features_and_rows(cli, tmp_path):
    source = _hf_source(tmp_path / "source")
    dataset, out = tmp_path / "ds", tmp_path / "hf"
    assert cli.convert("table", source, "--out", dataset, "--no-shuffle").exit_code == 0
    result = cli.export(dataset, "--to", "hf", "--out", out)
    assert result.exit_code == 0, result.output
    before, after = datasets.load_from_disk(str(source)), _loaded(out)
    assert list(after) == list(before)
    for split in before:
        assert after[split].features == before[split].features
        assert _undecoded(after[split]).to_list() == _undecoded(before[split]).to_list()


def test_the_export_converts_back_to_the_same_shards_and_keeps_its_order(cli, tmp_path):
    source = _hf_source(tmp_path / "source")
    first, out, again = tmp_path / "first", tmp_path / "hf", tmp_path / "again"
    assert cli.convert("table", source, "--out", first, "--seed", "3").exit_code == 0  # shuffled
    assert cli.export(first, "--to", "hf", "--out", out).exit_code == 0
    assert cli.convert("table", out, "--out", again, "--seed", "3").exit_code == 0  # kept in the export's order
    shards = sorted(p.name for p in first.glob("*.tfrecord-*"))
    assert shards and shards == sorted(p.name for p in again.glob("*.tfrecord-*"))
    assert all((first / s).read_bytes() == (again / s).read_bytes() for s in shards)


def test_detection_boxes_become_dicts_of_lists_with_class_names(cli, tmp_path):
    images, dataset, out = write_images(tmp_path / "images"), tmp_path / "ds", tmp_path / "hf"
    write_coco(tmp_path / "instances.json")
    converted = cli.convert("detection", images, "--annotations", tmp_path / "instances.json", "--out", dataset)
    assert converted.exit_code == 0, converted.output
    assert cli.export(dataset, "--to", "hf", "--out", out).exit_code == 0
    split = _loaded(out)["train"]
    objects = split.features["image"]["object"]  # the Object Detection API's image/object/... nesting
    assert objects["bbox"]["xmin"] == datasets.List(datasets.Value("float32"))
    names = objects["class"]["label"].feature.names
    assert [names[COCO_IDS[c]] for c in CLASSES] == CLASSES  # COCO's own ids keep their names
    for row in split:
        boxes = row["image"]["object"]
        expected = DATASET[row["image"]["filename"]][2]
        assert [names[i] for i in boxes["class"]["label"]] == [c for c, *_ in expected]
        assert all(0 <= a < b <= 1 for a, b in zip(boxes["bbox"]["xmin"], boxes["bbox"]["xmax"], strict=True))
        assert isinstance(row["image"]["encoded"], Image.Image)


def test_sounds_become_audio_of_their_wav_and_clips_lists_of_frames(cli, tmp_path):
    sounds, dataset, out = tmp_path / "sounds", tmp_path / "ds", tmp_path / "hf"
    for i, word in enumerate(["yes", "no", "yes"]):
        (sounds / word).mkdir(parents=True, exist_ok=True)
        samples = (np.sin(np.arange(800) * (0.05 + i / 50)) * 9000).astype("<i2")
        with wave.open(str(sounds / word / f"{i}.wav"), "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(8000), w.writeframes(samples.tobytes())
    assert cli.convert("audio", sounds, "--out", dataset, "--split", "train=1").exit_code == 0
    assert cli.export(dataset, "--to", "hf", "--out", out).exit_code == 0
    split = _loaded(out)["train"]
    assert split.features["audio"] == datasets.Audio(sampling_rate=8000)
    for row in _undecoded(split):
        with wave.open(io.BytesIO(row["audio"]["bytes"])) as w:
            kept = np.frombuffer(w.readframes(w.getnframes()), "<i2")
        with wave.open(str(sounds / row["filename"])) as w:
            assert np.array_equal(kept, np.frombuffer(w.readframes(w.getnframes()), "<i2"))

    clips, dataset, out = tmp_path / "clips", tmp_path / "vds", tmp_path / "vhf"
    (clips / "wave").mkdir(parents=True)
    make_clip(clips / "wave" / "a.mp4", np.full((3, 16, 16, 3), 90, np.uint8))
    assert cli.convert("video", clips, "--out", dataset, "--split", "train=1").exit_code == 0
    assert cli.export(dataset, "--to", "hf", "--out", out).exit_code == 0
    split = _loaded(out)["train"]
    assert split.features["video"] == datasets.List(datasets.Image())
    frames = split[0]["video"]
    assert len(frames) == 3 and all(f.size == (16, 16) for f in frames)


def test_raw_pixels_become_png_images_and_any_worker_count_writes_the_same_files(cli, tmp_path):
    src, dataset = tmp_path / "src", tmp_path / "ds"
    arrays = write_mnist(src, n_train=40, n_test=4)
    assert cli.convert("mnist", src, "--out", dataset, "--no-shuffle").exit_code == 0
    outs = []
    for workers in ("1", "3"):
        out = tmp_path / f"w{workers}"
        result = cli.export(dataset, "--to", "hf", "--out", out, "--workers", workers, "--shard-size", "10KB")
        assert result.exit_code == 0, result.output
        outs.append({str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert outs[0] == outs[1]
    data_files = json.loads(outs[0]["train/state.json"])["_data_files"]
    assert len(data_files) > 1 and data_files[0]["filename"].endswith(f"-of-{len(data_files):05d}.arrow")
    import pyarrow as pa

    rows = [pa.ipc.open_stream(tmp_path / "w1" / "train" / f["filename"]).read_all().num_rows for f in data_files]
    assert sum(rows) == 40 and max(rows) - min(rows) <= 1 and min(rows) > 0  # as Dataset.shard cuts
    train = _loaded(tmp_path / "w1")["train"]
    assert len(train) == 40
    for i in (0, 17, 39):  # rows in the dataset's order, across the files
        assert np.array_equal(np.asarray(train[i]["image_raw"]), arrays["train"][0][i])
        assert train[i]["label"] == arrays["train"][1][i]


def test_plain_files_export_a_column_per_feature(cli, tmp_path):
    src, out = tmp_path / "plain.tfrecord", tmp_path / "hf"
    records = [
        serialize({"picture": png(seed=i), "n": i, "xs": [0.5] * (i + 1), "note": b"\xff\x00"}) for i in range(3)
    ]
    src.write_bytes(framed(records))
    assert cli.export(src, "--to", "hf", "--out", out).exit_code == 0
    split = _loaded(out)["train"]
    assert split.features["n"] == datasets.Value("int64")
    assert split.features["note"] == datasets.Value("binary")
    assert split.to_list()[2] == {"picture": png(seed=2), "n": 2, "xs": [0.5, 0.5, 0.5], "note": b"\xff\x00"}


def test_a_record_that_does_not_fit_the_schema_is_exit_1_naming_it_with_nothing_written(cli, tmp_path):
    src, out = tmp_path / "plain.tfrecord", tmp_path / "hf"
    records = [serialize({"n": i}) for i in range(SAMPLE + 1)] + [serialize({"n": [1, 2, 3]})]
    src.write_bytes(framed(records))  # past the records the schema is inferred from
    result = cli.export(src, "--to", "hf", "--out", out)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"plain.tfrecord record {SAMPLE + 1}" in result.stderr and "'n' holds 3 values" in result.stderr
    assert not out.exists() or not any(out.iterdir())


@settings(max_examples=200, deadline=None)
@given(
    cells=st.lists(
        st.binary(max_size=40) | st.binary(max_size=40).map(memoryview) | st.none() | st.just(bytearray(b"ab")),
        max_size=12,
    )
)
def test_a_binary_column_is_the_array_pyarrow_builds_of_its_cells(cells):
    """The pictures' column, built from its cells joined, equals pa.array's cell by cell
    copy, with views of records' bytes, None, empty and other cells (those left to
    pa.array) among them."""
    import pyarrow as pa

    from tfr_convert.export.hf_features import binary_column

    built = binary_column(pa, cells)
    expected = pa.array([bytes(c) if isinstance(c, memoryview) else c for c in cells], pa.binary())
    assert built.equals(expected) and built.to_pylist() == expected.to_pylist()
    sink = pa.BufferOutputStream()  # and written alike: the same Arrow file bytes
    with pa.ipc.new_stream(sink, pa.schema([("b", pa.binary())])) as writer:
        writer.write_batch(pa.record_batch([built], names=["b"]))
    other = pa.BufferOutputStream()
    with pa.ipc.new_stream(other, pa.schema([("b", pa.binary())])) as writer:
        writer.write_batch(pa.record_batch([expected], names=["b"]))
    assert sink.getvalue().to_pybytes() == other.getvalue().to_pybytes()


@settings(max_examples=100, deadline=None)
@given(
    chunks=st.lists(st.lists(st.binary(max_size=30) | st.binary(max_size=30).map(memoryview), max_size=6), max_size=6)
)
def test_columns_laid_out_in_reused_memory_never_change_one_still_held(chunks):
    """Scratch memory is used again only once nothing holds the column made in it: every
    column still held keeps its bytes, whichever columns were made after it."""
    import pyarrow as pa

    from tfr_convert.export.hf_features import Scratch, binary_column

    scratch, held = Scratch(), []
    for n, cells in enumerate(chunks):
        made = binary_column(pa, cells, scratch)
        assert made.to_pylist() == [bytes(c) for c in cells]
        held.append((made, [bytes(c) for c in cells]))
        if n % 2:
            held.pop(0)  # let one go: its memory may be taken for the next
        for column, expected in held:
            assert column.to_pylist() == expected
