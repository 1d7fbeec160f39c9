"""How well a written order mixes labels (order_quality): the figure itself, what
`tfr-convert records` reports of its output (manifest, --json, a note when clumped), and
`tfr-inspect --stats` of any dataset or file with a label."""

from __future__ import annotations

import json
import random

import numpy as np

from record_inputs import write_tfrecord
from tfr_convert.dataset.order_quality import figure, sample_windows
from tfr_convert.dataset.wire.example import serialize


def test_a_sorted_order_has_runs_as_long_as_a_class_and_a_random_one_does_not():
    sorted_labels = [c for c in range(10) for _ in range(300)]
    shuffled = sorted_labels[:]
    random.Random(1).shuffle(shuffled)
    clumped, mixed = figure(sorted_labels), figure(shuffled)
    assert clumped["longest_run"] == 300 and mixed["longest_run"] < 10
    assert clumped["random_longest_run"] == mixed["random_longest_run"] < 10  # the same labels: the same reference
    assert clumped["ratio"] > 30 and mixed["ratio"] <= 2


def test_windows_break_runs_and_a_sample_spreads_evenly():
    assert figure([1] * 10, [4, 4, 2])["longest_run"] == 4
    assert sample_windows(100, 4, 50) == [range(100)]
    windows = sample_windows(10_000, 4, 10)
    assert [w.start for w in windows] == [0, 2500, 5000, 7500] and {len(w) for w in windows} == {10}


def class_sorted(tmp_path, n_per_class: int = 600):
    records = [
        serialize({"x": np.arange(4, dtype=np.int64) + i, "label": c}) for c in range(5) for i in range(n_per_class)
    ]
    return write_tfrecord(tmp_path / "sorted.tfrecord", records)


def test_records_reports_how_well_its_output_mixes_labels_and_notes_a_clumped_one(cli, tmp_path):
    src = class_sorted(tmp_path)
    kept = cli.convert("records", src, "--out", tmp_path / "kept", "--no-shuffle", "--json")
    shuffled = cli.convert("records", src, "--out", tmp_path / "shuffled", "--json")
    assert kept.exit_code == 0 and shuffled.exit_code == 0, kept.stderr + shuffled.stderr
    clumped, mixed = json.loads(kept.stdout)["order"]["train"], json.loads(shuffled.stdout)["order"]["train"]
    assert clumped["longest_run"] == 600 and clumped["ratio"] > 20  # 3,000 records: all read, a class a run
    assert mixed["ratio"] <= 2
    assert "note: train: longest run of one label 600" in kept.stderr and "note:" not in shuffled.stderr
    for out, found in (("kept", clumped), ("shuffled", mixed)):
        assert json.loads((tmp_path / out / "manifest.json").read_text())["order"]["train"] == found


def test_inspect_stats_tells_a_class_sorted_dataset_from_a_shuffled_one(cli, tmp_path):
    src = class_sorted(tmp_path)
    assert cli.convert("records", src, "--out", tmp_path / "shuffled", "--quiet").exit_code == 0
    sorted_report = json.loads(cli.inspect(src, "--stats", "--json").stdout)
    shuffled_report = json.loads(cli.inspect(tmp_path / "shuffled", "--stats", "--json").stdout)
    assert sorted_report["order"]["all"]["label"]["longest_run"] == 600
    assert shuffled_report["order"]["train"]["label"]["ratio"] <= 2
    text = cli.inspect(src, "--stats").stdout
    assert "order of label in all: longest run of one label 600" in text and "clumped by label" in text


def test_no_label_means_no_figure(cli, tmp_path):
    src = write_tfrecord(tmp_path / "plain.tfrecord", [serialize({"x": i}) for i in range(50)])
    result = cli.convert("records", src, "--out", tmp_path / "out", "--json")
    assert result.exit_code == 0 and "order" not in json.loads(result.stdout)
    assert "order" not in json.loads((tmp_path / "out" / "manifest.json").read_text())


def test_every_converter_with_labels_reports_its_orders_mixing_and_a_clumped_one_is_noted(cli, tmp_path, mnist_src):
    """The figure is not only records' and table's: images, audio and video (class
    folders), mnist and detection say how their written order mixes labels; class
    folders written in their own order (--no-shuffle) are clumped, and said to be."""
    import soundfile as sf
    from helpers import make_clip
    from PIL import Image

    from detection_inputs import write_csv, write_images

    rng = np.random.default_rng(0)
    for c in range(3):
        for i in range(40):
            folder = tmp_path / "pics" / f"class{c}"
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)).save(folder / f"{i:03d}.png")
            (tmp_path / "sounds" / f"class{c}").mkdir(parents=True, exist_ok=True)
            sf.write(tmp_path / "sounds" / f"class{c}" / f"{i:03d}.wav", np.zeros(80, np.int16), 8000)
        for i in range(10):
            make_clip(tmp_path / "clips" / f"class{c}" / f"{i}.mkv", rng.integers(0, 256, (2, 8, 8, 3), dtype=np.uint8))
    for command, src in (("images", "pics"), ("audio", "sounds"), ("video", "clips")):
        kept = cli.convert(command, tmp_path / src, "--no-shuffle", "--out", tmp_path / f"{src}-kept", "--json")
        mixed = cli.convert(command, tmp_path / src, "--out", tmp_path / f"{src}-mixed", "--json")
        assert kept.exit_code == 0 and mixed.exit_code == 0, kept.output + mixed.output
        clumped = json.loads(kept.stdout)["order"]["train"]
        assert clumped["longest_run"] == (40 if command != "video" else 10) and clumped["ratio"] > 2, command
        assert "note: train: longest run of one label" in kept.stderr, command
        assert json.loads(mixed.stdout)["order"]["train"]["ratio"] <= 2 and "note:" not in mixed.stderr, command
    digits = json.loads(cli.convert("mnist", mnist_src[0], "--out", tmp_path / "mnist", "--json").stdout)
    assert set(digits["order"]) == {"train", "test"}
    write_images(tmp_path / "boxes")
    boxes = cli.convert("detection", tmp_path / "boxes", "--annotations", write_csv(tmp_path / "boxes.csv"),
                        "--out", tmp_path / "detection", "--json")  # fmt: skip
    assert boxes.exit_code == 0, boxes.output
    assert "train" in json.loads(boxes.stdout)["order"]


def test_the_longest_run_is_the_one_a_plain_loop_finds():
    """order_quality._longest (edges marked in one numpy array) against a loop over the codes."""
    import numpy as np

    from tfr_convert.dataset.order_quality import _longest

    def loop(codes, starts):
        best = run = 0
        for i, code in enumerate(codes):
            run = 1 if i == 0 or i in starts or code != codes[i - 1] else run + 1
            best = max(best, run)
        return best

    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(0, 60))
        codes = rng.integers(0, int(rng.integers(1, 4)), n)
        starts = (
            np.unique(np.concatenate([[0], rng.integers(0, max(n, 1), int(rng.integers(0, 4)))]))
            if n
            else np.zeros(0, int)
        )
        assert _longest(codes, starts) == loop(list(codes), set(starts.tolist())), (codes, starts)
