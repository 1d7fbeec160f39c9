"""`tfr-convert audio`: recordings the tests write (numpy tones and noise, as WAV and
FLAC), read back through TensorFlow Datasets and TensorFlow's own parser."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sf = pytest.importorskip("soundfile", reason="tfr-convert audio needs soundfile (the audio extra)")


def _tone(n: int, seed: int, channels: int = 1, dtype: str = "int16") -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None] * (0.03 + 0.01 * np.arange(channels))[None, :]
    wave = np.sin(t) * 0.4 + rng.normal(0, 0.05, (n, channels))
    samples = (wave * 32767).astype(np.int16) if dtype == "int16" else wave.astype(np.float32)
    return samples[:, 0] if channels == 1 else samples


def _write(path: Path, samples: np.ndarray, rate: int = 16000, subtype: str = "PCM_16") -> np.ndarray:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, samples, rate, format=path.suffix[1:].upper(), subtype=subtype)
    return samples


def _recordings(root: Path) -> dict[str, np.ndarray]:
    """Two classes, WAV and FLAC, of several lengths: {relative path: samples}."""
    written = {}
    for c, (name, suffix) in enumerate([("cat", ".flac"), ("dog", ".wav")]):
        for i in range(4):
            rel = f"{name}/{i}{suffix}"
            written[rel] = _write(root / rel, _tone(1600 + 137 * i, 10 * c + i))
    return written


def _tfds_examples(out: Path, split: str = "train") -> list[dict]:
    import tensorflow_datasets as tfds

    return list(tfds.as_numpy(tfds.builder_from_directory(str(out)).as_dataset(split=split)))


def _parsed(out: Path) -> list[dict]:
    """Every record of the output's shards, through tf.io.parse_single_example."""
    import tensorflow as tf

    spec = {
        "audio": tf.io.VarLenFeature(tf.string),
        "filename": tf.io.FixedLenFeature([], tf.string),
        "channels": tf.io.FixedLenFeature([], tf.int64),
        "duration": tf.io.FixedLenFeature([], tf.float32),
    }
    found = []
    for shard in sorted(out.glob("*.tfrecord-*")):
        for record in tf.data.TFRecordDataset(str(shard)):
            parsed = tf.io.parse_single_example(record, spec)
            found.append({k: (tf.sparse.to_dense(v) if k == "audio" else v).numpy() for k, v in parsed.items()})
    return found


def test_class_folders_of_wav_and_flac_come_back_sample_for_sample_through_tfds(cli, tmp_path):
    written = _recordings(tmp_path / "sounds")
    result = cli.convert("audio", tmp_path / "sounds", "--out", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["splits"]["train"]["examples"] == 8
    examples = _tfds_examples(tmp_path / "out")
    assert sorted(e["filename"].decode() for e in examples) == sorted(written)
    for e in examples:
        rel = e["filename"].decode()
        assert e["audio"].dtype == np.int16 and np.array_equal(e["audio"], written[rel])
        assert e["label"] == ["cat", "dog"].index(rel.split("/")[0])
        assert (e["sample_rate"], e["channels"]) == (16000, 1)
        assert e["duration"] == pytest.approx(len(written[rel]) / 16000)
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(str(tmp_path / "out"))
    assert builder.info.features["audio"].sample_rate == 16000
    assert builder.info.features["label"].names == ["cat", "dog"]
    assert builder.info.supervised_keys == ("audio", "label")


def test_stereo_float_recordings_keep_their_channels_and_mono_averages_them(cli, tmp_path):
    written = {f"a/{i}.wav": _tone(900 + i, i, channels=2, dtype="float32") for i in range(3)}
    for rel, samples in written.items():
        _write(tmp_path / "src" / rel, samples, 8000, subtype="FLOAT")
    assert cli.convert("audio", tmp_path / "src", "--out", tmp_path / "stereo").exit_code == 0
    for e in _tfds_examples(tmp_path / "stereo"):
        assert e["audio"].dtype == np.float32 and e["audio"].shape == (len(written[e["filename"].decode()]), 2)
        assert np.array_equal(e["audio"], written[e["filename"].decode()])
    assert cli.convert("audio", tmp_path / "src", "--out", tmp_path / "mono", "--mono").exit_code == 0
    for e in _tfds_examples(tmp_path / "mono"):
        expected = written[e["filename"].decode()].astype(np.float64).mean(axis=1).astype(np.float32)
        assert e["audio"].shape == expected.shape and np.array_equal(e["audio"], expected)
        assert e["channels"] == 1


def test_int16_channels_averaged_are_rounded_to_the_nearest_integer(cli, tmp_path):
    stereo = np.array([[1, 2], [-3, -4], [5, 6], [100, -100]] * 50, np.int16)
    _write(tmp_path / "src" / "x" / "a.wav", stereo)
    assert cli.convert("audio", tmp_path / "src", "--out", tmp_path / "out", "--mono").exit_code == 0
    (e,) = _tfds_examples(tmp_path / "out")
    assert np.array_equal(e["audio"], np.rint(stereo.mean(axis=1)).astype(np.int16))


def test_keep_stores_each_files_bytes_and_wav_and_flac_re_encode_16_bit_pcm(cli, tmp_path):
    written = _recordings(tmp_path / "sounds")
    assert (
        cli.convert("audio", tmp_path / "sounds", "--out", tmp_path / "keep", "--audio-format", "keep").exit_code == 0
    )
    features = json.loads((tmp_path / "keep" / "features.json").read_text())["featuresDict"]["features"]
    assert features["audio"]["audio"]["lazyDecode"] is True and "fileFormat" not in features["audio"]["audio"]
    for e in _parsed(tmp_path / "keep"):
        assert e["audio"][0] == (tmp_path / "sounds" / e["filename"].decode()).read_bytes()
    for container in ("wav", "flac"):
        out = tmp_path / container
        assert cli.convert("audio", tmp_path / "sounds", "--out", out, "--audio-format", container).exit_code == 0
        described = json.loads((out / "features.json").read_text())["featuresDict"]["features"]["audio"]["audio"]
        assert described["fileFormat"] == container
        for e in _parsed(out):
            import io

            samples, rate = sf.read(io.BytesIO(e["audio"][0]), dtype="int16")
            assert rate == 16000 and np.array_equal(samples, written[e["filename"].decode()])
            assert sf.info(io.BytesIO(e["audio"][0])).format == container.upper()


def test_clip_seconds_pads_or_drops_a_shorter_recording_and_refuses_one_without_a_choice(cli, tmp_path):
    src = tmp_path / "src"
    long, short = _write(src / "a" / "long.wav", _tone(2400, 1)), _write(src / "a" / "short.wav", _tone(1000, 2))
    refused = cli.convert("audio", src, "--out", tmp_path / "none", "--clip-seconds", "0.1")
    assert refused.exit_code == 1
    assert f"{src / 'a' / 'short.wav'}: 0.0625 s, shorter than --clip-seconds 0.1" in refused.output
    assert "--pad" in refused.output and not (tmp_path / "none").exists()
    assert cli.convert("audio", src, "--out", tmp_path / "pad", "--clip-seconds", "0.1", "--pad").exit_code == 0
    clips = {e["filename"].decode(): e["audio"] for e in _tfds_examples(tmp_path / "pad")}
    assert np.array_equal(clips["a/long.wav"], long[:1600])
    assert np.array_equal(clips["a/short.wav"], np.concatenate([short, np.zeros(600, np.int16)]))
    dropped = cli.convert("audio", src, "--out", tmp_path / "drop", "--clip-seconds", "0.1", "--drop", "--json")
    assert dropped.exit_code == 0
    assert [e["filename"].decode() for e in _tfds_examples(tmp_path / "drop")] == ["a/long.wav"]
    assert json.loads(dropped.stdout)["skipped"] == [
        {"item": str(src / "a" / "short.wav"), "reason": "shorter than --clip-seconds 0.1 (--drop)"}
    ]


def test_recordings_of_two_sample_rates_or_channel_counts_are_refused_naming_two_files(cli, tmp_path):
    src = tmp_path / "src"
    _write(src / "a" / "0.wav", _tone(800, 0), 16000)
    _write(src / "a" / "1.wav", _tone(800, 1), 22050)
    result = cli.convert("audio", src, "--out", tmp_path / "out")
    assert result.exit_code == 1 and not (tmp_path / "out").exists()
    assert f"{src / 'a' / '0.wav'} and {src / 'a' / '1.wav'} differ in sample rate (16000 and 22050)" in result.output
    assert "(--sample-rate R resamples every recording to R)" in result.output
    _write(src / "a" / "1.wav", _tone(800, 1, channels=2), 16000)
    result = cli.convert("audio", src, "--out", tmp_path / "out")
    assert result.exit_code == 1 and "differ in channel count (1 and 2)" in result.output and "--mono" in result.output
    assert cli.convert("audio", src, "--out", tmp_path / "out", "--mono").exit_code == 0


def test_a_damaged_recording_is_named_and_left_out_under_on_error_skip(cli, tmp_path):
    written = _recordings(tmp_path / "sounds")
    (tmp_path / "sounds" / "dog" / "9.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot really")
    result = cli.convert("audio", tmp_path / "sounds", "--out", tmp_path / "out")
    assert result.exit_code == 1 and "9.wav" in result.output and "not a recording libsndfile reads" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()
    skipped = cli.convert("audio", tmp_path / "sounds", "--out", tmp_path / "out", "--on-error", "skip", "--json")
    assert skipped.exit_code == 0
    assert [s["item"] for s in json.loads(skipped.stdout)["skipped"]] == [str(tmp_path / "sounds" / "dog" / "9.wav")]
    assert len(_tfds_examples(tmp_path / "out")) == len(written)


def test_split_folders_ratios_and_two_workers_give_the_bytes_of_one(cli, tmp_path):
    for split in ("train", "test"):
        _recordings(tmp_path / "by_folder" / split)
    assert cli.convert("audio", tmp_path / "by_folder", "--out", tmp_path / "folders").exit_code == 0
    assert sorted(p.name for p in (tmp_path / "folders").glob("*.tfrecord-*")) == [
        "by_folder-test.tfrecord-00000-of-00001",
        "by_folder-train.tfrecord-00000-of-00001",
    ]
    _recordings(tmp_path / "sounds")
    args = ["audio", tmp_path / "sounds", "--split", "train=0.5,test=0.5", "--stratify", "--examples-per-shard", "3"]
    for workers in ("1", "2"):
        assert cli.convert(*args, "--out", tmp_path / f"w{workers}", "--workers", workers).exit_code == 0
    one = {p.name: p.read_bytes() for p in (tmp_path / "w1").glob("*.tfrecord-*")}
    two = {p.name: p.read_bytes() for p in (tmp_path / "w2").glob("*.tfrecord-*")}
    assert one == two and len(one) == 4
    labels = [e["label"] for e in _tfds_examples(tmp_path / "w1", "test")]
    assert sorted(labels) == [0, 0, 1, 1]  # stratified: half of each class


def test_options_that_cannot_go_together_are_usage_errors(cli, tmp_path):
    _recordings(tmp_path / "sounds")
    for args, said in [
        (["--pad"], "give --clip-seconds"),
        (["--audio-format", "keep", "--mono"], "use --audio-format raw, bytes, wav or flac"),
    ]:
        result = cli.convert("audio", tmp_path / "sounds", "--out", tmp_path / "out", *args)
        assert result.exit_code == 2 and said in result.output


def test_24_bit_recordings_are_stored_as_int32_as_libsndfile_reads_them(cli, tmp_path):
    samples = (_tone(700, 3).astype(np.int32) * 256 + 17) * 2  # values 24-bit PCM holds
    _write(tmp_path / "src" / "a" / "x.wav", samples, 48000, subtype="PCM_24")
    assert cli.convert("audio", tmp_path / "src", "--out", tmp_path / "out").exit_code == 0
    (e,) = _tfds_examples(tmp_path / "out")
    expected, _ = sf.read(tmp_path / "src" / "a" / "x.wav", dtype="int32")
    assert e["audio"].dtype == np.int32 and np.array_equal(e["audio"], expected) and e["sample_rate"] == 48000


def test_a_labels_csv_names_each_recordings_class_split_and_other_columns(cli, tmp_path):
    root = tmp_path / "clips"
    written = {f"{i:02d}.wav": _write(root / f"{i:02d}.wav", _tone(500 + 10 * i, i)) for i in range(8)}
    _write(root / "stray.wav", _tone(500, 99))  # in no row: left out, and said so
    rows = ["file,word,speaker,split"] + [
        f"{name},{['yes', 'no'][i % 2]},{i // 2},{['train', 'test'][i // 6]}" for i, name in enumerate(written)
    ]
    rows.append("missing.wav,yes,9,train")
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    args = ["audio", root, "--labels", tmp_path / "labels.csv", "--label-column", "word", "--split-column", "split"]
    refused = cli.convert(*args, "--out", tmp_path / "out")
    assert refused.exit_code == 1
    assert f"{tmp_path / 'labels.csv'} line 10: recording 'missing.wav' not found in {root}" in refused.output
    result = cli.convert(*args, "--out", tmp_path / "out", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert "1 recording (stray.wav) not in" in result.output
    train, test = _tfds_examples(tmp_path / "out", "train"), _tfds_examples(tmp_path / "out", "test")
    assert len(train) == 6 and len(test) == 2
    for e in train + test:
        name = e["filename"].decode()
        i = list(written).index(name)
        assert np.array_equal(e["audio"], written[name]) and e["word"] == ["no", "yes"].index(["yes", "no"][i % 2])
        assert e["speaker"] == i // 2
    grouped = cli.convert(
        "audio", root, "--labels", tmp_path / "labels.csv", "--group-column", "speaker", "--split",
        "train=0.5,test=0.5", "--on-error", "skip", "--out", tmp_path / "grouped",
    )  # fmt: skip
    assert grouped.exit_code == 0, grouped.output
    speakers = {s: {int(e["speaker"]) for e in _tfds_examples(tmp_path / "grouped", s)} for s in ("train", "test")}
    assert not speakers["train"] & speakers["test"] and len(speakers["train"] | speakers["test"]) == 4


def test_sample_rate_resamples_as_scipy_does_and_lets_recordings_of_other_rates_mix(cli, tmp_path):
    from scipy.signal import resample

    src = tmp_path / "src"
    written = {
        "a/0.wav": (_write(src / "a" / "0.wav", _tone(1600, 0, dtype="float32"), 16000, "FLOAT"), 16000),
        "a/1.wav": (_write(src / "a" / "1.wav", _tone(2205, 1, dtype="float32"), 22050, "FLOAT"), 22050),
        "b/2.wav": (_write(src / "b" / "2.wav", _tone(800, 2), 8000), 8000),
    }
    result = cli.convert("audio", src, "--out", tmp_path / "out", "--sample-rate", "11025")
    assert result.exit_code == 1 and "differ in sample format (float32 and int16)" in result.output
    assert "(--audio-format wav or flac stores every recording as 16-bit PCM)" in result.output
    (src / "b" / "2.wav").unlink()
    assert cli.convert("audio", src, "--out", tmp_path / "out", "--sample-rate", "11025").exit_code == 0
    for e in _tfds_examples(tmp_path / "out"):
        samples, rate = written[e["filename"].decode()]
        expected = resample(samples.astype(np.float64), round(len(samples) * 11025 / rate)).astype(np.float32)
        assert e["sample_rate"] == 11025 and np.allclose(e["audio"], expected, rtol=0, atol=1e-6)
    import tensorflow_datasets as tfds

    assert tfds.builder_from_directory(str(tmp_path / "out")).info.features["audio"].sample_rate == 11025
    clipped = cli.convert("audio", src, "--out", tmp_path / "clip", "--sample-rate", "8000", "--clip-seconds", "0.1")
    assert clipped.exit_code == 0, clipped.output
    assert {len(e["audio"]) for e in _tfds_examples(tmp_path / "clip")} == {800}


def test_grid_draws_each_recording_as_its_waveform_a_band_per_channel(cli, tmp_path):
    from PIL import Image

    from tfr_convert.inspect.kinds.waveform import HEIGHT, WAVE, WIDTH, waveform

    loud = np.sin(np.arange(4000) * 0.01) * 30000
    drawn = waveform(np.stack([loud, loud * 0], axis=1).ravel(), 2)
    assert drawn.shape == (HEIGHT, WIDTH, 3)
    rows = np.flatnonzero((drawn == WAVE).all(axis=2).any(axis=1))
    assert rows.min() <= 2 and rows.max() >= HEIGHT // 2 - 3  # the first channel spans its band
    silent = np.flatnonzero((drawn[HEIGHT // 2 :] == WAVE).all(axis=2).any(axis=1))
    assert silent.tolist() == [HEIGHT // 4]  # the silent channel: a flat line through its band's middle
    _recordings(tmp_path / "sounds")
    assert cli.convert("audio", tmp_path / "sounds", "--out", tmp_path / "out").exit_code == 0
    result = cli.inspect(tmp_path / "out", "--grid", tmp_path / "grid.png", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) | {"out": None} == {"mode": "grid", "out": None, "images": 8, "feature": "audio"}
    sheet = np.asarray(Image.open(tmp_path / "grid.png").convert("RGB"))
    blue = sheet[..., 2].astype(int) - sheet[..., 0] > 50  # the wave's colour, scaled into its tile
    cells = [blue[r * 110 : r * 110 + 96, c * 96 : c * 96 + 96] for r in range(3) for c in range(3)]
    assert sum(cell.sum() > 300 for cell in cells) == 8  # a waveform drawn in each of the 8 tiles


def test_load_gives_each_recordings_samples_in_their_type_and_channels(cli, tmp_path):
    """tfr_convert.load() decodes the Audio feature as TFDS does: int16 mono (samples,),
    float32 stereo (samples, 2); keep mode's files come back as their bytes."""
    import tfr_convert

    mono = _recordings(tmp_path / "mono")
    stereo = {f"a/{i}.wav": _tone(700 + i, i, channels=2, dtype="float32") for i in range(2)}
    for rel, samples in stereo.items():
        _write(tmp_path / "stereo" / rel, samples, 8000, subtype="FLOAT")
    for name, written in (("mono", mono), ("stereo", stereo)):
        assert cli.convert("audio", tmp_path / name, "--out", tmp_path / f"out-{name}", "--quiet").exit_code == 0
        found = {e["filename"].numpy().decode(): e["audio"].numpy() for e in tfr_convert.load(tmp_path / f"out-{name}")}
        assert found.keys() == written.keys()
        for rel, samples in written.items():
            expected = samples[:, 0] if samples.ndim == 2 and samples.shape[1] == 1 else samples
            assert found[rel].dtype == expected.dtype and np.array_equal(found[rel], expected), rel
    out = tmp_path / "keep"
    assert cli.convert("audio", tmp_path / "mono", "--out", out, "--audio-format", "keep", "--quiet").exit_code == 0
    for e in tfr_convert.load(out):
        assert e["audio"].numpy() == (tmp_path / "mono" / e["filename"].numpy().decode()).read_bytes()


def test_export_to_audio_writes_each_recording_back_and_they_convert_to_the_same_shards(cli, tmp_path):
    """Raw 16-bit samples come back as WAV files byte for byte (libsndfile writes them
    alike); kept files as they were; and either converts again to the same shards."""
    written = {rel: s for rel, s in _recordings(tmp_path / "src").items() if rel.endswith(".wav")}
    for rel in [r for r in (tmp_path / "src").rglob("*.flac")]:
        rel.unlink()
    out, exported, back = tmp_path / "out", tmp_path / "exported", tmp_path / "back"
    args = ["--no-shuffle", "--quiet", "--name", "sounds"]
    assert cli.convert("audio", tmp_path / "src", "--out", out, *args).exit_code == 0
    result = cli.export(out, "--to", "audio", "--out", exported, "--quiet")
    assert result.exit_code == 0, result.stderr
    for rel in written:
        assert (exported / rel).read_bytes() == (tmp_path / "src" / rel).read_bytes(), rel
    assert cli.convert("audio", exported, "--out", back, *args).exit_code == 0
    assert {p.name: p.read_bytes() for p in back.glob("*.tfrecord-*")} == {
        p.name: p.read_bytes() for p in out.glob("*.tfrecord-*")
    }
    kept, again = tmp_path / "kept", tmp_path / "kept-exported"
    assert cli.convert("audio", tmp_path / "src", "--out", kept, "--audio-format", "keep", "--quiet").exit_code == 0
    assert cli.export(kept, "--to", "audio", "--out", again, "--quiet").exit_code == 0
    for rel in written:
        assert (again / rel).read_bytes() == (tmp_path / "src" / rel).read_bytes(), rel


def test_bytes_mode_holds_the_samples_as_one_value_that_tfds_load_export_and_grid_read(cli, tmp_path):
    """--audio-format bytes: TFDS's Audio with encoding BYTES (2 bytes a 16-bit sample);
    TFDS and load() give the samples back, the grid draws them, the export writes the
    source WAV back byte for byte."""
    import tfr_convert

    written = {rel: s for rel, s in _recordings(tmp_path / "src").items() if rel.endswith(".wav")}
    for flac in list((tmp_path / "src").rglob("*.flac")):
        flac.unlink()
    stereo = {f"s/{i}.wav": _tone(500 + i, i, channels=2) for i in range(2)}
    for rel, samples in stereo.items():
        _write(tmp_path / "stereo" / rel, samples, 8000)
    for name, made in (("src", written), ("stereo", stereo)):
        out = tmp_path / f"out-{name}"
        result = cli.convert("audio", tmp_path / name, "--out", out, "--audio-format", "bytes", "--quiet")
        assert result.exit_code == 0, result.stderr
        described = json.loads((out / "features.json").read_text())["featuresDict"]["features"]["audio"]["audio"]
        assert described["encoding"] == "BYTES" and described["dtype"] == "int16"
        for e in _tfds_examples(out):
            expected = made[e["filename"].decode()]
            expected = expected[:, 0] if expected.ndim == 2 and expected.shape[1] == 1 else expected
            assert np.array_equal(e["audio"], expected)
        for e in tfr_convert.load(out):
            expected = made[e["filename"].numpy().decode()]
            expected = expected[:, 0] if expected.ndim == 2 and expected.shape[1] == 1 else expected
            assert np.array_equal(e["audio"].numpy(), expected)
        assert cli.inspect(out, "--grid", tmp_path / f"{name}.png").exit_code == 0
        assert cli.export(out, "--to", "audio", "--out", tmp_path / f"exported-{name}", "--quiet").exit_code == 0
        for rel in made:
            assert (tmp_path / f"exported-{name}" / rel).read_bytes() == (tmp_path / name / rel).read_bytes()
    raw_size = sum(p.stat().st_size for p in (tmp_path / "out-src").glob("*.tfrecord-*"))
    assert cli.convert("audio", tmp_path / "src", "--out", tmp_path / "raw", "--quiet").exit_code == 0
    assert sum(p.stat().st_size for p in (tmp_path / "raw").glob("*.tfrecord-*")) > 2 * raw_size


def test_a_run_killed_midway_resumes_to_the_uninterrupted_bytes(cli, tmp_path):
    from crashing import files, killed_at

    _recordings(tmp_path / "src")
    out, reference = tmp_path / "out", tmp_path / "reference"
    args = ["audio", tmp_path / "src", "--examples-per-shard", "1", "--workers", "1", "--audio-format", "bytes"]
    assert killed_at(8, *args, "--out", out).returncode == -signal.SIGKILL
    assert cli.convert(*args, "--out", out, "--resume").exit_code == 0
    assert cli.convert(*args, "--out", reference).exit_code == 0
    assert files(out) == files(reference)


# Runs `tfr-convert ARGS` in a Python where soundfile cannot be imported (a light install).
_WITHOUT_SOUNDFILE = """
import sys
sys.modules["soundfile"] = None  # import soundfile: ImportError
sys.argv = ["tfr-convert", *sys.argv[1:]]
from tfr_convert.cli.convert import convert
convert()
"""


def test_plain_wavs_need_no_soundfile_and_a_flac_names_the_audio_extra(tmp_path):
    for i in range(3):
        _write(tmp_path / "src" / "tone" / f"{i}.wav", _tone(800 + i, i))

    def without_soundfile(*args):
        return subprocess.run(
            [sys.executable, "-c", _WITHOUT_SOUNDFILE, *map(str, args)], capture_output=True, text=True, timeout=120
        )

    done = without_soundfile("audio", tmp_path / "src", "--out", tmp_path / "out", "--no-shuffle", "--quiet")
    assert done.returncode == 0, done.stderr
    examples = sorted(_tfds_examples(tmp_path / "out"), key=lambda e: e["filename"])
    assert [e["audio"].tolist() for e in examples] == [_tone(800 + i, i).tolist() for i in range(3)]
    _write(tmp_path / "flac" / "tone" / "0.flac", _tone(900, 3))
    _write(tmp_path / "pcm24" / "tone" / "0.wav", _tone(900, 3), subtype="PCM_24")  # read as int32 by libsndfile
    for src, args in [
        (tmp_path / "flac", []),  # a FLAC to read
        (tmp_path / "pcm24", []),  # samples libsndfile converts: said while listing, not in a worker
        (tmp_path / "src", ["--audio-format", "flac"]),  # FLACs to write
    ]:
        refused = without_soundfile("audio", src, "--out", tmp_path / "refused", "--quiet", "--workers", "2", *args)
        assert refused.returncode == 2, refused.stderr  # a missing extra, as a usage error
        assert "needs soundfile" in refused.stderr and "[audio]" in refused.stderr
        assert "--on-error" not in refused.stderr  # said for the run, not as one file's fault
        assert "Traceback" not in refused.stderr and not (tmp_path / "refused").exists()


def test_an_export_of_split_folders_puts_each_recording_back_where_it_was(cli, tmp_path):
    for split in ("train", "valid"):
        for c, name in enumerate(("cat", "dog")):
            _write(tmp_path / "src" / split / name / f"{split}{c}.wav", _tone(800, c))
    out, exported, back = tmp_path / "out", tmp_path / "exported", tmp_path / "back"
    args = ["--quiet", "--name", "sounds"]
    assert cli.convert("audio", tmp_path / "src", "--out", out, *args).exit_code == 0
    assert cli.export(out, "--to", "audio", "--out", exported, "--quiet").exit_code == 0
    assert sorted(str(p.relative_to(exported)) for p in exported.rglob("*.wav")) == sorted(
        str(p.relative_to(tmp_path / "src")) for p in (tmp_path / "src").rglob("*.wav")
    )
    assert cli.convert("audio", exported, "--out", back, *args).exit_code == 0
    assert {p.name: p.read_bytes() for p in back.glob("*.tfrecord-*")} == {
        p.name: p.read_bytes() for p in out.glob("*.tfrecord-*")
    }


@pytest.mark.parametrize("container", ["wav", "flac"])
def test_float_recordings_re_encoded_to_16_bit_keep_their_waveform(cli, tmp_path, container):
    """A float WAV's samples scaled to full 16-bit range (as libsndfile writes floats into
    PCM), clipped past +-1.0; not cast, which left only -1, 0 and 1."""
    samples = _tone(1600, 3, dtype="float32")
    samples[:3] = [1.5, -1.5, 1.0]  # past full scale: clipped, never wrapped
    _write(tmp_path / "src" / "cat" / "a.wav", samples, subtype="FLOAT")
    assert cli.convert("audio", tmp_path / "src", "--out", tmp_path / "out", "--audio-format", container,
                       "--quiet").exit_code == 0  # fmt: skip
    stored = _parsed(tmp_path / "out")[0]["audio"][0]
    got, _ = sf.read(io.BytesIO(stored), dtype="int16")
    expected = np.clip(np.rint(samples.astype(np.float64) * 32767), -32768, 32767).astype(np.int16)
    assert np.array_equal(got, expected)
    assert got[:3].tolist() == [32767, -32768, 32767] and np.abs(got).max() > 10000


def test_a_readme_in_a_class_folder_is_left_out_with_a_warning(cli, tmp_path):
    _recordings(tmp_path / "src")
    (tmp_path / "src" / "cat" / "README.txt").write_text("recorded in May")
    result = cli.convert("audio", tmp_path / "src", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert "left out 1 file (cat/README.txt) (by its name, not recordings)" in result.stderr
    assert "train 8 examples" in result.stdout
