"""Folders and CSVs as people have them: spreadsheet exports, stray files, forgotten
flags — each met with what a user expects, or a message that says how to fix it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from tfr_convert.containers.scan import read_records
from tfr_convert.converters.listing.folders import folder_runs, list_files
from tfr_convert.dataset.wire.example import parse
from tfr_convert.errors import SourceError
from tfr_convert.inspect.grid import caption

SCRIPTS = Path(sys.executable).parent


def folder(root: Path, classes: tuple[str, ...] = ("cat", "dog"), per_class: int = 3) -> Path:
    for c in classes:
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            Image.fromarray(np.full((6, 6, 3), i * 40, np.uint8)).save(root / c / f"{i}.png")
    return root


def examples(out: Path) -> list[dict]:
    return [
        {k: v[0] if len(v) == 1 else v for k, (_, v) in parse(r.data).items()}
        for shard in sorted(out.glob("*.tfrecord-*"))
        for r in read_records(str(shard))
    ]


def test_an_excel_csv_with_semicolons_and_decimal_commas_converts(cli, tmp_path):
    root = folder(tmp_path / "img")
    csv = tmp_path / "excel.csv"
    csv.write_text("path;score;label\ncat/0.png;1,5;a\ncat/1.png;2,25;b\n", encoding="utf-8-sig")  # BOM too
    result = cli.convert("images", root, "--labels", csv, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    got = sorted(examples(tmp_path / "out"), key=lambda e: e["filename"])
    assert [(e["filename"], e["score"], e["label"]) for e in got] == [
        (b"cat/0.png", 1.5, b"a"),
        (b"cat/1.png", 2.25, b"b"),
    ]


def test_a_tsv_with_windows_paths_converts(cli, tmp_path):
    root = folder(tmp_path / "img")
    tsv = tmp_path / "labels.tsv"
    tsv.write_text("where\tkind\ncat\\0.png\ta\ndog\\2.png\tb\n")  # no column named like a path: found by content
    result = cli.convert("images", root, "--labels", tsv, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert sorted(e["filename"] for e in examples(tmp_path / "out")) == [b"cat/0.png", b"dog/2.png"]


def test_a_wrong_separator_is_named_in_the_message(cli, tmp_path):
    root = folder(tmp_path / "img")
    csv = tmp_path / "excel.csv"
    csv.write_text("path;label\ncat/0.png;a\n")
    result = cli.convert("images", root, "--labels", csv, "--delimiter", ",", "--out", tmp_path / "out")
    assert result.exit_code == 2  # what to pass is the fix: a usage error
    assert "one column, read with separator ',', but its lines split on ';': use --delimiter ';'" in result.stderr
    commas = tmp_path / "commas.csv"
    commas.write_text("path,label\ncat/0.png,a\n")  # a comma file read with another separator
    result = cli.convert("images", root, "--labels", commas, "--delimiter", ";", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "one column, read with separator ';', but its lines split on ',': use --delimiter ','" in result.stderr
    wide = tmp_path / "wide.csv"
    wide.write_text("a;b,c;d\nx;y,z;w\n")  # two columns with ',', neither holding paths
    result = cli.convert("images", root, "--labels", wide, "--delimiter", ",", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert (
        "cannot tell which column holds the image paths (columns, read with separator ',': a;b, c;d)" in result.stderr
    )
    assert "--delimiter if the separator is wrong" in result.stderr
    bad = cli.convert("images", root, "--labels", csv, "--delimiter", "ab", "--out", tmp_path / "out")
    assert bad.exit_code == 2 and "is not a separator like , ; tab or |" in bad.stderr


def test_images_the_csv_leaves_out_are_one_warning_not_an_error(cli, tmp_path):
    root = folder(tmp_path / "img", per_class=5)
    csv = tmp_path / "labels.csv"
    csv.write_text("path,label\ncat/0.png,a\ndog/1.png,b\n")
    out = tmp_path / "out"
    result = cli.convert("images", root, "--labels", csv, "--out", out, "--on-error", "fail", "--json")
    assert result.exit_code == 0, result.stderr
    message = f"{root}: 8 images (cat/1.png, cat/2.png, cat/3.png, cat/4.png, dog/0.png, ...) not in {csv}, left out"
    assert f"warning: {message}" in result.stderr
    assert message in json.loads(result.stdout)["warnings"]
    assert message in json.loads((out / "manifest.json").read_text())["warnings"]


def test_an_output_folder_inside_image_dir_is_never_read_as_input(cli, tmp_path):
    root = folder(tmp_path / "img")
    for _ in range(2):
        result = cli.convert("images", root, "--out", root / "out", "--overwrite")
        assert result.exit_code == 0, result.stderr
        assert "train 6 examples" in result.stdout
    assert json.loads((root / "out" / "features.json").read_text())["featuresDict"]["features"]["label"]
    assert (root / "out" / "label.labels.txt").read_text() == "cat\ndog\n"


def test_a_stray_text_file_beside_class_folders_is_left_out_with_a_warning(cli, tmp_path):
    root = folder(tmp_path / "img")
    (root / "README.txt").write_text("where these came from")
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert f"warning: {root}: left out 1 file (README.txt), beside the class folders (not images)" in result.stderr
    Image.new("RGB", (4, 4)).save(root / "loose.png")  # an image there has no label: still a bad item
    result = cli.convert("images", root, "--out", tmp_path / "out2")
    assert (
        result.exit_code == 1 and f"{root / 'loose.png'}: image outside the class folders (no label)" in result.stderr
    )


def test_a_headerless_csv_without_the_flag_gets_the_flag_as_hint(cli, tmp_path):
    root = folder(tmp_path / "img", classes=("faces",))
    ages = tmp_path / "age.csv"
    ages.write_text("25\n30\n41\n")
    result = cli.convert("images", root, "--labels", ages, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "one column and no image paths in it" in result.stderr and "add --headerless-labels" in result.stderr
    assert cli.convert("images", root, "--labels", ages, "--headerless-labels", "--out", tmp_path / "o").exit_code == 0


@pytest.mark.parametrize("option", ["--label-column", "--split-column", "--path-column"])
def test_an_option_naming_no_column_is_a_usage_error(cli, tmp_path, option):
    root = folder(tmp_path / "img")
    csv = tmp_path / "labels.csv"
    csv.write_text("path,label\ncat/0.png,a\n")
    result = cli.convert("images", root, "--labels", csv, option, "nope", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert f"{option} 'nope' is not a column (columns, read with separator ',' (detected)" not in result.stderr
    assert f"{option} 'nope' is not a column (columns, read with separator ',': path, label)" in result.stderr


def test_inspect_says_not_a_tfrecord_for_images_and_metadata(cli, tmp_path):
    png = tmp_path / "photo.png"
    Image.new("RGB", (4, 4)).save(png)
    result = cli.inspect(png)
    assert result.exit_code == 1
    assert f"{png}: not a TFRecord or ArrayRecord file (starts with b'\\x89PNG" in result.stderr
    root = folder(tmp_path / "img")
    assert cli.convert("images", root, "--out", tmp_path / "out").exit_code == 0
    everything = sorted(str(p) for p in (tmp_path / "out").iterdir())  # what the shell makes of out/*
    result = cli.inspect(*everything, "--count")
    assert result.exit_code == 1
    assert "dataset_info.json: not a TFRecord or ArrayRecord file" in result.stderr
    assert "give the dataset directory, not DIR/*" in result.stderr


def test_counts_of_one_are_singular(cli, tmp_path):
    root = folder(tmp_path / "img")
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert "examples in 1 shard, " in result.stdout
    assert "total: 6 records in 1 file, " in cli.inspect(tmp_path / "out", "--count").stdout
    assert "verified 1 file, 6 records: no problems" in cli.inspect(tmp_path / "out", "--verify").stdout
    assert "folder name for images and detection" in " ".join(cli.convert("images", "--help").stdout.split())


def test_an_earlier_output_inside_image_dir_is_left_out_with_a_warning(cli, tmp_path):
    root = folder(tmp_path / "img")
    assert cli.convert("images", root, "--out", root / "first").exit_code == 0
    result = cli.convert("images", root, "--out", tmp_path / "second")
    assert result.exit_code == 0, result.stderr
    assert f"warning: {root}: left out 1 folder (first), holding tfr-convert output, not images" in result.stderr
    assert (tmp_path / "second" / "label.labels.txt").read_text() == "cat\ndog\n"


def test_color_rgb_gives_one_shape_to_a_folder_with_a_grayscale_image(cli, tmp_path):
    root = folder(tmp_path / "img")
    Image.fromarray(np.full((9, 7), 200, np.uint8), "L").save(root / "cat" / "gray.jpg")
    out = tmp_path / "out"
    args = ("images", root, "--resize", "8x8", "--image-format", "raw", "--out")
    failed = cli.convert(*args, out)
    assert (
        failed.exit_code == 1 and "use --resize WxH (and --color rgb, or grayscale, for mixed colour)" in failed.stderr
    )
    result = cli.convert(*args, out, "--color", "rgb")
    assert result.exit_code == 0, result.stderr
    gray = next(e for e in examples(out) if e["filename"] == b"cat/gray.jpg")
    pixels = np.frombuffer(gray["image"], np.uint8).reshape(8, 8, 3)
    assert (
        gray["channels"] == 3 and (pixels[..., 0] == pixels[..., 1]).all() and (pixels[..., 1] == pixels[..., 2]).all()
    )
    assert cli.convert(*args, tmp_path / "o2", "--color", "rgb", "--grayscale").exit_code == 2


@pytest.mark.parametrize(
    "fit, expected",
    [
        ("crop", lambda p: (p[:, :, 0] > 200).all()),  # the red middle, cut to cover 10x10
        ("pad", lambda p: (p[:2, :, 1] == 255).all() and (p[4:6, 3:7, 0] > 200).all() and (p[4:6, :2, 2] == 255).all()),
        ("stretch", lambda p: (p[:, :2, 2] > 200).all() and (p[:, -2:, 2] > 200).all()),  # both blue ends kept
    ],
)
def test_fit_crops_pads_or_stretches_to_the_size(cli, tmp_path, fit, expected):
    wide = np.zeros((10, 20, 3), np.uint8)
    wide[:, :, 2] = 255  # blue ends...
    wide[:, 5:15] = (255, 0, 0)  # ...around a red middle
    (tmp_path / "img").mkdir()
    Image.fromarray(wide).save(tmp_path / "img" / "wide.png")
    out = tmp_path / fit
    args = ["--resize", "10x10", "--fit", fit, "--image-format", "raw", "--background", "white"]
    result = cli.convert("images", tmp_path / "img", *args, "--out", out)
    assert result.exit_code == 0, result.stderr
    pixels = np.frombuffer(examples(out)[0]["image"], np.uint8).reshape(10, 10, 3)
    assert expected(pixels), pixels[..., 0]
    assert cli.convert("images", tmp_path / "img", "--fit", "pad", "--out", tmp_path / "x").exit_code == 2


def test_dry_run_prints_the_plan_and_writes_nothing(cli, tmp_path):
    root = folder(tmp_path / "shop", per_class=4)
    out = tmp_path / "out"
    result = cli.convert("images", root, "--out", out, "--split", "train=0.75,test=0.25", "--num-shards", "2",
                         "--dry-run")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"dry run: nothing written. shop -> {out} (tfrecord)"
    assert lines[1].startswith("  train: 6 examples in 2 shards, about ") and lines[1].endswith(" KiB")
    assert lines[2].startswith("  test: 2 examples in 2 shards, about ") and lines[2].endswith(" B")
    assert not out.exists() and not (tmp_path / ".out.tfr-convert").exists()
    plan = json.loads(cli.convert("images", root, "--out", out, "--dry-run", "--json").stdout)
    real = cli.convert("images", root, "--out", out, "--json")
    summary = json.loads(real.stdout)
    assert plan["splits"]["train"]["examples"] == summary["splits"]["train"]["examples"] == 8
    assert plan["splits"]["train"]["shards"] == summary["splits"]["train"]["shards"]
    assert abs(plan["splits"]["train"]["estimated_bytes"] - summary["splits"]["train"]["bytes"]) < 100
    broken = cli.convert("images", root, "--labels", tmp_path / "missing.csv", "--out", out, "--dry-run")
    assert broken.exit_code == 2  # the inputs are checked as for a run


def test_limit_takes_the_first_examples_of_every_split(cli, mnist_src, tmp_path):
    out = tmp_path / "out"
    result = cli.convert("mnist", mnist_src[0], "--out", out, "--limit", "5", "--validation-size", "10")
    assert result.exit_code == 0, result.stderr
    assert "train 5, validation 5, test 5 examples" in result.stdout
    assert json.loads((out / "manifest.json").read_text())["options"]["limit"] == 5
    full = tmp_path / "full"
    assert cli.convert("mnist", mnist_src[0], "--out", full, "--validation-size", "10").exit_code == 0
    assert [e["label"] for e in examples(out)][:5] == [e["label"] for e in examples(full)][:5]


def test_stats_and_grid_speak_in_class_names_file_names_and_splits(cli, tmp_path):
    root = tmp_path / "img"
    root.mkdir()
    for i in range(8):
        Image.fromarray(np.full((6, 6, 3), i * 30, np.uint8)).save(root / f"{i}.png")
    (root / "copy.png").write_bytes((root / "0.png").read_bytes())  # the same picture twice: leakage
    csv = tmp_path / "labels.csv"
    rows = [f"{i}.png,{['cat', 'dog'][i % 2]},{'test' if i >= 6 else 'train'}" for i in range(8)]
    csv.write_text("path,kind,split\n" + "\n".join(rows) + "\ncopy.png,cat,test\n")
    out = tmp_path / "out"
    result = cli.convert("images", root, "--labels", csv, "--label-column", "kind", "--split-column", "split",
                         "--out", out)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(cli.inspect(out, "--stats", "--json").stdout)
    assert report["features"]["kind"]["class_names"] == {"0": "cat", "1": "dog"}
    assert report["splits"] == {"train": {"records": 6, "histograms": {"kind": {"0": 3, "1": 3}}},
                                "test": {"records": 3, "histograms": {"kind": {"0": 2, "1": 1}}}}  # fmt: skip
    (leak,) = report["leakage"]["examples"]
    assert sorted(r["filename"] for r in leak["records"]) == ["0.png", "copy.png"]
    text = cli.inspect(out, "--stats").stdout
    assert "  histogram: cat: 5, dog: 4" in text
    assert "train: 6 records; kind cat: 3, dog: 3" in text and "test: 3 records; kind cat: 2, dog: 1" in text
    assert "image in test, train: copy.png; 0.png" in text or "image in test, train: 0.png; copy.png" in text

    assert caption({"kind": ("int64_list", [1]), "filename": ("bytes_list", [b"3.png"])}, {"kind": ["cat", "dog"]}) == (
        "dog",
        False,
    )
    assert caption({"filename": ("bytes_list", [b"train/3.png"])}, {}) == ("train/3.png", True)


@pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux's script for a pseudo-terminal")
def test_the_progress_bar_labels_its_phases_and_shows_in_a_script_log(mnist_src, tmp_path):
    log = tmp_path / "typescript"
    command = f"{SCRIPTS / 'tfr-convert'} mnist {mnist_src[0]} --out {tmp_path / 'out'}"
    proc = subprocess.run(["script", "-qec", command, str(log)], stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    shown = log.read_bytes().decode("utf-8", "replace")
    assert "checking sources..." in shown
    assert "converting: 100%" in shown and "52/52" in shown
    assert "mnist: train 40, test 12 examples in 2 shards" in shown


def _runs_path_by_path(files):
    """folder_runs the simple way: each sorted path joins the run before it when it has
    the same top folder (or is, like it, a file at the top)."""
    runs = []
    for i, path in enumerate(files):
        top = path.split(os.sep)[0] if os.sep in path else None
        if runs and runs[-1][0] == top:
            runs[-1] = (top, runs[-1][1], i + 1)
        else:
            runs.append((top, i, i + 1))
    return runs


# names around the separator in sort order ("-" and "." before it, "0" right after it)
_NAME = st.text(alphabet="a-.0Z~", min_size=1, max_size=3)


@given(st.lists(st.lists(_NAME, min_size=1, max_size=3).map(os.sep.join), max_size=40))
def test_folder_runs_are_the_runs_a_path_by_path_walk_finds(paths):
    files = sorted(set(paths))
    assert folder_runs(files) == _runs_path_by_path(files)


def _messy_tree(root: Path) -> Path:
    """Every kind of entry the listing treats apart, over enough folders to cut in parts:
    nested class folders, files at the top, hidden files and OS litter, a link to a
    folder inside and one to a file, an earlier output, this run's output, odd names."""
    for c in range(7):
        for depth in ("", "deep/er"):
            for i in range(3):
                (root / f"c{c}" / depth).mkdir(parents=True, exist_ok=True)
                (root / f"c{c}" / depth / f"{i}-x.jpg").write_bytes(b"x")
        (root / f"c{c}" / ".hidden.jpg").write_bytes(b"x")
        (root / f"c{c}" / "Thumbs.db").write_bytes(b"x")
    (root / "top.jpg").write_bytes(b"x")
    (root / "c0" / "to-c1").symlink_to(root / "c1", target_is_directory=True)
    (root / "c2" / "file-link.jpg").symlink_to(root / "c3" / "0-x.jpg")
    (root / "c4" / "old-output").mkdir()
    for marker in ("dataset_info.json", "manifest.json"):
        (root / "c4" / "old-output" / marker).write_text("{}")
    (root / "c5" / "this-run").mkdir()
    (root / "a b.é").mkdir()
    (root / "a b.é" / "ü.jpg").write_bytes(b"x")
    return root


def _forked(parts: int):
    from tfr_convert.engine.workers import fill_in_forks

    return lambda fill, n: fill_in_forks(fill, n, min(parts, n))


@pytest.mark.parametrize("parts", [2, 3, 16])
def test_folders_listed_in_forked_parts_give_what_one_listing_gives(tmp_path, parts):
    root = _messy_tree(tmp_path / "d")
    serial_out: dict[str, list[str]] = {}
    serial = list_files(str(root), serial_out, str(root / "c5" / "this-run"))
    forked_out: dict[str, list[str]] = {}
    forked = list_files(str(root), forked_out, str(root / "c5" / "this-run"), _forked(parts))
    assert forked == serial and forked_out == serial_out
    assert set(serial_out) == {"link", "file_link", "dataset"} and len(serial) == 7 * 6 + 2 + 1


def test_a_folder_the_parts_cannot_list_is_listed_here_and_its_error_named(tmp_path):
    root = _messy_tree(tmp_path / "d")
    os.mkfifo(root / "c6" / "deep" / "pipe.jpg")
    with pytest.raises(SourceError, match=r"pipe\.jpg") as serial:
        list_files(str(root))
    with pytest.raises(SourceError, match=r"pipe\.jpg") as forked:
        list_files(str(root), fill_in_parts=_forked(4))
    assert str(forked.value) == str(serial.value)
