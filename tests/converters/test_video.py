"""`tfr-convert video`: clips the tests encode losslessly (FFV1, so frames compare exactly)
become TFDS Video features whose frames equal the sources' through TFDS and through a
plain tf.io parse; --fps by timestamps, --max-frames, JPEG frames and --resize; class
folders, split folders and a labels CSV; a file that is no clip named or skipped; 2
workers and Beam give the bytes of one."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import numpy as np
import pytest
from helpers import make_clip

av = pytest.importorskip("av", reason="tfr-convert video needs PyAV (the video extra)")


def _frames(n: int, seed: int, size: tuple[int, int] = (24, 32)) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, *size, 3), dtype=np.uint8)


def _clips(root: Path) -> dict[str, np.ndarray]:
    made = {}
    for c, cls in enumerate(("cat", "dog")):
        for i in range(3):
            made[f"{cls}/{i}.mkv"] = make_clip(root / cls / f"{i}.mkv", _frames(4 + i, 10 * c + i))
    return made


def _tfds(out: Path, split: str = "train") -> list[dict]:
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(str(out))
    return list(tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)))


def _shards(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if ".tfrecord-" in p.name}


def test_clips_become_videos_whose_frames_equal_the_sources_through_tfds_and_tf_io(cli, tmp_path):
    import tensorflow as tf

    made = _clips(tmp_path / "clips")
    result = cli.convert("video", tmp_path / "clips", "--out", tmp_path / "out", "--quiet")
    assert result.exit_code == 0, result.stderr
    rows = _tfds(tmp_path / "out")
    assert sorted(r["filename"].decode() for r in rows) == sorted(made)
    for row in rows:
        name = row["filename"].decode()
        assert np.array_equal(row["video"], made[name]) and row["frames"] == len(made[name])
        assert row["label"] == ("cat", "dog").index(name.split("/")[0]) and row["fps"] == 10.0
    described = json.loads((tmp_path / "out" / "features.json").read_text())["featuresDict"]["features"]["video"]
    assert described["pythonClassName"].endswith("video_feature.Video")
    assert described["video"]["shape"]["dimensions"] == ["-1", "24", "32", "3"]
    assert described["video"]["encodingFormat"] == "png"
    spec = {"video": tf.io.VarLenFeature(tf.string), "filename": tf.io.FixedLenFeature([], tf.string)}
    shard = next((tmp_path / "out").glob("*.tfrecord-*"))
    for record in tf.data.TFRecordDataset(str(shard)):
        parsed = tf.io.parse_single_example(record, spec)
        frames = tf.map_fn(tf.io.decode_png, tf.sparse.to_dense(parsed["video"]), fn_output_signature=tf.uint8)
        assert np.array_equal(frames.numpy(), made[parsed["filename"].numpy().decode()])


@pytest.mark.parametrize(
    ("fps", "expected"),
    [(5, [0, 2, 4]), (4, [0, 2, 5]), (20, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]), (10, [0, 1, 2, 3, 4, 5])],
)
def test_fps_shows_at_each_output_time_the_last_frame_shown_by_then(cli, tmp_path, fps, expected):
    """Six frames at 10 a second (0.0 ... 0.5 s, the clip ending at 0.6 s)."""
    frames = make_clip(tmp_path / "clips" / "a" / "c.mkv", _frames(6, 1))
    out = tmp_path / "out"
    assert cli.convert("video", tmp_path / "clips", "--out", out, "--quiet", "--fps", str(fps)).exit_code == 0
    (row,) = _tfds(out)
    assert np.array_equal(row["video"], frames[expected]) and row["fps"] == fps
    out2 = tmp_path / "out2"
    result = cli.convert("video", tmp_path / "clips", "--out", out2, "--quiet", "--fps", str(fps), "--max-frames", "2")
    assert result.exit_code == 0, result.stderr
    assert np.array_equal(_tfds(out2)[0]["video"], frames[expected[:2]])


def test_jpeg_frames_and_resize_give_frames_of_that_size_and_format(cli, tmp_path):
    make_clip(tmp_path / "clips" / "a" / "c.mkv", _frames(3, 2))
    make_clip(tmp_path / "clips" / "b" / "d.mkv", _frames(2, 3, (40, 20)))  # another size: --resize makes one
    out = tmp_path / "out"
    args = ["--frame-format", "jpeg", "--quality", "90", "--resize", "16x12", "--quiet"]
    assert cli.convert("video", tmp_path / "clips", "--out", out, *args).exit_code == 0
    rows = _tfds(out)
    assert sorted(r["video"].shape for r in rows) == [(2, 12, 16, 3), (3, 12, 16, 3)]
    described = json.loads((out / "features.json").read_text())["featuresDict"]["features"]["video"]["video"]
    assert described["encodingFormat"] == "jpeg" and described["shape"]["dimensions"] == ["-1", "12", "16", "3"]
    mixed = tmp_path / "mixed"
    assert cli.convert("video", tmp_path / "clips", "--out", mixed, "--quiet").exit_code == 0
    described = json.loads((mixed / "features.json").read_text())["featuresDict"]["features"]["video"]["video"]
    assert described["shape"]["dimensions"] == ["-1", "-1", "-1", "3"]  # two sizes: left open
    assert sorted(r["video"].shape for r in _tfds(mixed)) == [(2, 40, 20, 3), (3, 24, 32, 3)]


def test_a_file_that_is_no_clip_is_exit_1_naming_it_or_skipped_and_listed(cli, tmp_path):
    _clips(tmp_path / "clips")
    bad = tmp_path / "clips" / "cat" / "bad.mp4"
    bad.write_bytes(b"not a video at all" * 10)
    result = cli.convert("video", tmp_path / "clips", "--out", tmp_path / "out", "--quiet")
    assert result.exit_code == 1 and str(bad) in result.stderr and "not a clip PyAV reads" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()
    result = cli.convert("video", tmp_path / "clips", "--out", tmp_path / "out", "--on-error", "skip", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["splits"]["train"]["examples"] == 6 and [s["item"] for s in summary["skipped"]] == [str(bad)]


def test_split_folders_and_a_labels_csv_label_and_split_the_clips(cli, tmp_path):
    made = {}
    for split, n in (("train", 3), ("test", 2)):
        for i in range(n):
            made[f"{split}/{'ab'[i % 2]}/{i}.mkv"] = make_clip(
                tmp_path / "s" / split / "ab"[i % 2] / f"{i}.mkv", _frames(3, i)
            )
    assert cli.convert("video", tmp_path / "s", "--out", tmp_path / "o1", "--quiet").exit_code == 0
    assert len(_tfds(tmp_path / "o1", "train")) == 3 and len(_tfds(tmp_path / "o1", "test")) == 2
    flat = tmp_path / "flat"
    for i in range(4):
        make_clip(flat / f"v{i}.mkv", _frames(2, 50 + i))
    (flat / "labels.csv").write_text(
        "path,action,take\n" + "".join(f"v{i}.mkv,{'run walk'.split()[i % 2]},{i}\n" for i in range(4))
    )
    args = ["--labels", flat / "labels.csv", "--label-column", "action", "--quiet"]
    assert cli.convert("video", flat, "--out", tmp_path / "o2", *args).exit_code == 0
    rows = sorted(_tfds(tmp_path / "o2"), key=lambda r: r["filename"])
    assert [int(r["action"]) for r in rows] == [0, 1, 0, 1] and [int(r["take"]) for r in rows] == [0, 1, 2, 3]


def test_two_workers_and_beam_write_the_bytes_of_one(cli, tmp_path):
    _clips(tmp_path / "clips")
    outs = {}
    for name, extra in (("one", ["--workers", "1"]), ("two", ["--workers", "2"]), ("beam", ["--engine", "beam"])):
        if name == "beam":
            pytest.importorskip("apache_beam")
        result = cli.convert("video", tmp_path / "clips", "--out", tmp_path / name, "--quiet", "--fps", "15",
                             "--split", "train=0.5,test=0.5", "--examples-per-shard", "2", *extra)  # fmt: skip
        assert result.exit_code == 0, result.stderr
        outs[name] = _shards(tmp_path / name)
    assert len(outs["one"]) > 2 and outs["one"] == outs["two"] == outs["beam"]


def test_as_sequence_example_a_clip_is_its_frames_and_times_in_feature_lists(cli, tmp_path):
    """MediaPipe's layout: image/encoded and image/timestamp (microseconds) per stored
    frame, the rest in the context; tf.io reads both, TFDS the context, tfr-inspect
    counts the steps and draws the frames."""
    import tensorflow as tf

    made = {name: frames for name, frames in _clips(tmp_path / "clips").items()}
    out = tmp_path / "out"
    args = ["--as", "sequence-example", "--fps", "20", "--quiet"]
    assert cli.convert("video", tmp_path / "clips", "--out", out, *args).exit_code == 0
    context = {
        "clip/data_path": tf.io.FixedLenFeature([], tf.string),
        "clip/frames": tf.io.FixedLenFeature([], tf.int64),
        "clip/label/index": tf.io.FixedLenFeature([], tf.int64),
        "clip/label/string": tf.io.FixedLenFeature([], tf.string),
        "image/height": tf.io.FixedLenFeature([], tf.int64),
        "image/frame_rate": tf.io.FixedLenFeature([], tf.float32),
    }
    lists = {
        "image/encoded": tf.io.FixedLenSequenceFeature([], tf.string),
        "image/timestamp": tf.io.FixedLenSequenceFeature([], tf.int64),
    }
    seen = 0
    for shard in sorted(out.glob("*.tfrecord-*")):
        for record in tf.data.TFRecordDataset(str(shard)):
            ctx, steps = tf.io.parse_single_sequence_example(record, context, lists)
            name = ctx["clip/data_path"].numpy().decode()
            source = made[name]  # 10 a second: each source frame twice at 20
            expected = source[[k // 2 for k in range(2 * len(source))]]
            frames = np.stack([tf.io.decode_png(f).numpy() for f in steps["image/encoded"]])
            assert np.array_equal(frames, expected) and int(ctx["clip/frames"]) == len(expected)
            assert steps["image/timestamp"].numpy().tolist() == [50_000 * k for k in range(len(expected))]
            cls = name.split("/")[0]
            assert (
                int(ctx["clip/label/index"]) == ("cat", "dog").index(cls) and ctx["clip/label/string"] == cls.encode()
            )
            assert int(ctx["image/height"]) == 24 and float(ctx["image/frame_rate"]) == 20.0
            seen += 1
    assert seen == len(made)
    rows = _tfds(out)  # TFDS reads the context (an Example parser passes over the lists)
    assert sorted(r["clip"]["data_path"].decode() for r in rows) == sorted(made)
    stats = json.loads(cli.inspect(out, "--stats", "--json").stdout)
    assert stats["features"]["image/encoded"]["steps"] == {"min": 8, "max": 12, "mean": 10.0}
    assert cli.inspect(out, "--grid", tmp_path / "g.png").exit_code == 0
    again = tmp_path / "two"
    assert cli.convert("video", tmp_path / "clips", "--out", again, *args, "--workers", "2").exit_code == 0
    assert _shards(again) == _shards(out)


def test_load_gives_each_clip_as_its_frames(cli, tmp_path):
    import tfr_convert

    made = _clips(tmp_path / "clips")
    out = tmp_path / "out"
    assert cli.convert("video", tmp_path / "clips", "--out", out, "--quiet").exit_code == 0
    dataset = tfr_convert.load(out)
    assert dataset.element_spec["video"].shape.as_list() == [None, 24, 32, 3]
    found = {e["filename"].numpy().decode(): e["video"].numpy() for e in dataset}
    assert found.keys() == made.keys() and all(np.array_equal(found[k], made[k]) for k in made)


def test_export_to_video_writes_lossless_clips_that_convert_back_to_the_same_shards(cli, tmp_path):
    made = _clips(tmp_path / "clips")
    out, exported, back = tmp_path / "out", tmp_path / "exported", tmp_path / "back"
    assert cli.convert("video", tmp_path / "clips", "--out", out, "--no-shuffle", "--quiet").exit_code == 0
    result = cli.export(out, "--to", "video", "--out", exported, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["layout"] == "folders"
    files = sorted(str(p.relative_to(exported)) for p in exported.rglob("*.mkv"))
    assert files == sorted(made)
    for name, frames in made.items():
        with av.open(str(exported / name)) as clip:
            assert np.array_equal(np.stack([f.to_ndarray(format="rgb24") for f in clip.decode(video=0)]), frames)
    args = ["--no-shuffle", "--quiet", "--name", "clips"]
    assert cli.convert("video", exported, "--out", back, *args).exit_code == 0
    assert _shards(back) == _shards(out)


@pytest.mark.parametrize("frame_format, suffix", [("png", "png"), ("jpeg", "jpg")])
def test_export_to_images_writes_each_clip_as_a_folder_of_its_frames_byte_for_byte(cli, tmp_path, frame_format, suffix):
    """A video dataset exported --to images: a folder per clip (named by its file, less
    the suffix), its frames 000000.png... each the very bytes stored, in class folders or
    beside a labels.csv that names the folders."""
    import tensorflow as tf

    made = _clips(tmp_path / "clips")
    out = tmp_path / "out"
    args = ["--no-shuffle", "--quiet", "--frame-format", frame_format]
    assert cli.convert("video", tmp_path / "clips", "--out", out, *args).exit_code == 0
    stored = {}
    spec = {"video": tf.io.VarLenFeature(tf.string), "filename": tf.io.FixedLenFeature([], tf.string)}
    for shard in out.glob("*.tfrecord-*"):
        for record in tf.data.TFRecordDataset(str(shard)):
            parsed = tf.io.parse_single_example(record, spec)
            stored[parsed["filename"].numpy().decode()] = tf.sparse.to_dense(parsed["video"]).numpy().tolist()
    for layout in ("folders", "csv"):
        exported = tmp_path / f"exported-{layout}"
        result = cli.export(out, "--to", "images", "--out", exported, "--layout", layout, "--json")
        assert result.exit_code == 0, result.stderr
        written = sorted(str(p.relative_to(exported)) for p in exported.rglob("*") if p.is_file())
        frames = [f"{name.removesuffix('.mkv')}/{k:06d}.{suffix}" for name in made for k in range(len(made[name]))]
        if layout == "folders":
            assert written == sorted(frames)  # one split, class folders: OUT/CLASS/NAME
        else:
            assert written == sorted(["labels.csv", *frames])
            rows = (exported / "labels.csv").read_text().splitlines()
            assert rows[0].startswith("filename,split,label") and sorted(r.split(",")[0] for r in rows[1:]) == sorted(
                name.removesuffix(".mkv") for name in made
            )
        base = exported
        for name, values in stored.items():
            folder = base / name.removesuffix(".mkv")
            assert [p.read_bytes() for p in sorted(folder.iterdir())] == values


def test_a_run_killed_midway_resumes_to_the_uninterrupted_bytes_and_refuses_a_changed_clip(cli, tmp_path):
    """SIGKILLed at its 8th filesystem change (kill_at.py, as the crash tests do); then
    --resume gives what one uninterrupted run gives; a clip rewritten since is refused."""
    from crashing import files, killed_at, work_dir

    _clips(tmp_path / "clips")
    out, reference = tmp_path / "out", tmp_path / "reference"
    args = ["video", tmp_path / "clips", "--examples-per-shard", "1", "--workers", "1", "--fps", "15"]
    assert killed_at(8, *args, "--out", out).returncode == -signal.SIGKILL
    assert work_dir(out).exists() and not out.exists()
    assert cli.convert(*args, "--out", out, "--resume").exit_code == 0
    assert cli.convert(*args, "--out", reference).exit_code == 0
    assert files(out) == files(reference)
    again = tmp_path / "again"
    assert killed_at(8, *args, "--out", again).returncode == -signal.SIGKILL
    make_clip(tmp_path / "clips" / "dog" / "1.mkv", _frames(5, 99))  # rewritten since
    result = cli.convert(*args, "--out", again, "--resume")
    assert result.exit_code == 1 and f"{tmp_path / 'clips' / 'dog' / '1.mkv'} changed" in result.output


@pytest.mark.parametrize(
    "codec, pix_fmt",
    [("libx264", "yuv420p"), ("mpeg4", "yuv420p"), ("ffv1", "yuv444p"), ("ffv1", "gray"), ("ffv1", "bgr0")],
)
def test_frames_converted_by_one_reformatter_per_clip_are_each_frames_own_rgb(tmp_path, codec, pix_fmt):
    """The clip's frames go to RGB through one converter kept for the clip (the fast way):
    the very pixels each decoded frame's own to_ndarray gives, whatever its pixel format."""
    from tfr_convert.converters.media.video import clip_frames

    frames = _frames(6, 3, (48, 64))
    path = tmp_path / "c.mkv"
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, pix_fmt
        for frame in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())
    with av.open(str(path)) as clip:
        expected = [frame.to_ndarray(format="rgb24") for frame in clip.decode(video=0)]
    got, _ = clip_frames(path.read_bytes(), None, None)
    pixels = [p for _, _, p in got]
    assert len(pixels) == len(expected) == 6
    assert all(np.array_equal(a, b) for a, b in zip(pixels, expected, strict=True))
