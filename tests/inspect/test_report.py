"""tfr-inspect --report: the page's numbers are --stats's, its problems --verify's, its
pictures bounded per class; and a detection dataset's page, opened in headless Chromium,
shows its charts, thumbnails, duplicates and damage without errors or a horizontal
scroll bar."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO
from PIL import Image, ImageDraw

from browser import CHROMIUM, VIEWPORT, launch
from tfr_convert.inspect.charts import grouped_bars, histogram
from tfr_convert.inspect.kinds.distribution import MAX_KEYS, Distribution

COLOURS = {"cat": (230, 120, 30), "dog": (40, 90, 220), "bird": (30, 170, 60)}


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of the stats script."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stats = ""
        self._in_stats = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_stats = dict(attrs).get("id") == "tfr-stats"

    def handle_data(self, data):
        if self._in_stats:
            self.stats += data

    def handle_endtag(self, tag):
        self._in_stats = False

    def count(self, tag: str, cls: str) -> int:
        return sum(1 for t, a in self.tags if t == tag and cls in (a.get("class") or "").split())


def parse_page(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


@pytest.fixture(scope="module")
def mnist_dataset(tmp_path_factory):
    from click.testing import CliRunner

    from tfr_convert.cli.convert import convert

    out = tmp_path_factory.mktemp("report") / "mnist"
    sample = REPO / "examples" / "mnist-sample"
    result = CliRunner().invoke(convert, ["mnist", str(sample), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def test_the_page_embeds_the_stats_report_it_was_drawn_from(cli, mnist_dataset):
    page = cli.inspect(mnist_dataset, "--report", "-")
    assert page.exit_code == 0, page.output
    assert page.output.startswith("<!DOCTYPE html>")
    embedded = json.loads(parse_page(page.output).stats.replace("<\\/", "</"))
    stats = json.loads(cli.inspect(mnist_dataset, "--stats", "--json").output)
    assert embedded == stats
    # and the label chart's bars are those figures: one bar per class and split, its count in the tooltip
    histograms = stats["splits"]
    tips = re.findall(r"<title>(train|test): (\d): (\d+) \(", page.output)
    assert len(tips) == 20
    for split, label, count in tips:
        assert histograms[split]["histograms"]["label"][label] == int(count)


def test_pictures_are_bounded_per_class_and_rows_follow_the_class_order(cli, mnist_dataset, tmp_path):
    out = tmp_path / "r.html"
    result = cli.inspect(mnist_dataset, "--report", out, "--report-per-class", "3", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["thumbnails"] == 30
    page = out.read_text()
    tags = parse_page(page)
    assert tags.count("figure", "thumb") == 30
    rows = re.findall(r'<div class="row"><h3>([^<]*)</h3>', page)
    assert rows == [str(i) for i in range(10)]
    assert "At most 3 pictures per class" in page
    # self-contained: nothing is fetched from anywhere
    sources = [a.get("src") or a.get("href") for _, a in tags.tags if a.get("src") or a.get("href")]
    assert sources and all(s.startswith("data:image/") for s in sources)


def test_report_is_a_mode_of_its_own_and_a_bad_output_path_is_a_clear_error(cli, mnist_dataset, tmp_path):
    both = cli.inspect(mnist_dataset, "--report", tmp_path / "r.html", "--stats")
    assert both.exit_code == 2
    assert "choose one of --stats, --report" in both.output
    (tmp_path / "file").write_text("x")
    bad = cli.inspect(mnist_dataset, "--report", tmp_path / "file" / "r.html")
    assert bad.exit_code == 1
    assert "Traceback" not in bad.output
    assert not list(tmp_path.glob("**/*.html*"))


def test_distribution_bins_count_every_value_and_stay_bounded():
    d = Distribution()
    for v in [28] * 5 + [30, 31, 60]:
        d.add(v)
    out = d.to_dict(bins=4)
    assert out["values"] == 8 and out["min"] == 28 and out["max"] == 60
    assert sum(b["count"] for b in out["bins"]) == 8
    assert out["bins"][0] == {"from": 28, "to": 37, "count": 7}
    assert out["bins"][-1]["from"] <= 60 < out["bins"][-1]["to"]
    one = Distribution()
    one.add(7)
    assert one.to_dict()["bins"] == [{"from": 7, "to": 8, "count": 1}]
    many = Distribution(integer=False)
    rng = np.random.default_rng(0)
    values = rng.uniform(0.1, 1000, 50_000)
    for v in values:
        many.add(float(v))
    assert len(many.counts) <= MAX_KEYS
    coarse = many.to_dict()
    assert coarse["values"] == 50_000
    assert abs(coarse["max"] - values.max()) / values.max() < 1e-3


def test_charts_draw_a_bar_per_category_and_series():
    svg = grouped_bars("labels", ["a", "b", "c"], {"train": [3, 0, 1], "test": [1, 1, 0]}, share=True)
    assert svg.count('class="bar"') == 6
    assert "train: a: 3 (75.0%)" in svg and "test: b: 1 (50.0%)" in svg
    assert svg.count("<svg") == 1 and svg.endswith("</svg>")
    hist = histogram("sizes", [{"from": 0, "to": 10, "count": 4}, {"from": 10, "to": 20, "count": 0}], " px")
    assert hist.count('class="bar"') == 2 and "0 to 10 px: 4" in hist


def _picture(path: Path, size: tuple[int, int], boxes: list[tuple[str, int, int, int, int]], seed: int) -> None:
    """A picture whose coarse structure (a blurred 4x4 field of random colours, which the
    perceptual hash sees) differs from every other seed's, with a disc in each box."""
    rng = np.random.default_rng(seed)
    field = Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)).resize(size, Image.Resampling.BICUBIC)
    noise = rng.normal(0, 12, (size[1], size[0], 3))
    image = Image.fromarray(np.clip(np.asarray(field) + noise, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for name, x0, y0, x1, y1 in boxes:
        draw.ellipse([x0, y0, x1 - 1, y1 - 1], fill=COLOURS[name])
    image.save(path, quality=92)


def detection_dataset(root: Path) -> tuple[Path, dict[str, list]]:
    """Sixteen photo-like JPEGs with boxes of three classes, a negative, and copies of some:
    byte-identical ones and ones saved again at a lower quality (near-duplicates), under
    other names, so that some land in another split than their original."""
    images = root / "pets"
    images.mkdir(parents=True)
    rng = np.random.default_rng(1)
    dataset: dict[str, list] = {}
    classes = ["cat"] * 6 + ["dog"] * 5 + ["bird"] * 3 + ["cat", "dog"]
    for i, main in enumerate(classes):
        w, h = int(rng.integers(120, 200)), int(rng.integers(90, 150))
        x0, y0 = int(rng.integers(0, w // 3)), int(rng.integers(0, h // 3))
        boxes = [(main, x0, y0, x0 + int(rng.integers(30, w // 2)), y0 + int(rng.integers(30, h // 2)))]
        if i % 4 == 0:
            other = classes[(i + 7) % len(classes)]
            boxes.append((other, w // 2 + 4, 6, w - 6, h // 2))
        name = f"img{i:02d}.jpg"
        _picture(images / name, (w, h), boxes, seed=i)
        dataset[name] = [(w, h), boxes]
    for i in (0, 6, 9):
        shutil.copy(images / f"img{i:02d}.jpg", images / f"copy{i:02d}.jpg")
        dataset[f"copy{i:02d}.jpg"] = dataset[f"img{i:02d}.jpg"]
    for i in (2, 5, 11, 13):
        with Image.open(images / f"img{i:02d}.jpg") as im:
            im.save(images / f"near{i:02d}.jpg", quality=60)
        dataset[f"near{i:02d}.jpg"] = dataset[f"img{i:02d}.jpg"]
    _picture(images / "negative.jpg", (100, 80), [], seed=99)
    dataset["negative.jpg"] = [(100, 80), []]
    rows = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
    for name, ((w, h), boxes) in dataset.items():
        rows += [f"{name},{w},{h},{c},{x0},{y0},{x1},{y1}" for c, x0, y0, x1, y1 in boxes]
    (root / "boxes.csv").write_text("\n".join(rows) + "\n")
    return images, dataset


def _records(directory: Path) -> dict[str, list[tuple[str, bytes]]]:
    """{split: [(filename, image bytes)]} read with TensorFlow."""
    import tensorflow as tf

    spec = {
        "image/filename": tf.io.FixedLenFeature((), tf.string),
        "image/encoded": tf.io.FixedLenFeature((), tf.string),
        "image/object/class/text": tf.io.VarLenFeature(tf.string),
    }
    out: dict[str, list] = {}
    for shard in sorted(directory.glob("*.tfrecord-*")):
        split = shard.name.split("-")[1].split(".")[0]
        for raw in tf.data.TFRecordDataset(str(shard)):
            ex = tf.io.parse_single_example(raw, spec)
            classes = [c.decode() for c in tf.sparse.to_dense(ex["image/object/class/text"]).numpy()]
            out.setdefault(split, []).append(
                (ex["image/filename"].numpy().decode(), ex["image/encoded"].numpy(), classes)
            )
    return out


def _damage(shard: Path, payload: bytes) -> int:
    """Flips a byte of `payload` inside its record; returns that record's byte offset,
    found by walking the TFRecord framing (length, its CRC, data, data CRC)."""
    data = bytearray(shard.read_bytes())
    at = data.index(payload) + len(payload) // 2
    start = 0
    while True:
        end = start + 16 + int.from_bytes(data[start : start + 8], "little")
        if start <= at < end:
            break
        start = end
    data[at] ^= 0xFF
    shard.write_bytes(bytes(data))
    return start


def _browser():
    """Playwright's API, driving Debian's Chromium; the test is skipped without them,
    except where TFR_BROWSER_REQUIRED is set (CI), where that is a failure."""
    try:
        import playwright.sync_api as api
    except ImportError:
        api = None
    missing = "playwright" if api is None else CHROMIUM if not os.path.exists(CHROMIUM) else None
    if missing and os.environ.get("TFR_BROWSER_REQUIRED"):
        pytest.fail(f"{missing} is missing: CI installs Debian's chromium and the [dev] extra's playwright")
    if missing:
        pytest.skip(f"no {missing}")
    return api


def test_a_detection_report_in_headless_chromium(cli, tmp_path):
    playwright = _browser()
    images, dataset = detection_dataset(tmp_path / "in")
    out = tmp_path / "out"
    converted = cli.convert(
        "detection", images, "--annotations", tmp_path / "in" / "boxes.csv", "--split", "train=0.5,test=0.5",
        "--out", out, "--quiet",
    )  # fmt: skip
    assert converted.exit_code == 0, converted.output
    records = _records(out)
    # the truth, from TensorFlow's reading: copies in another split than their original...
    split_of = {name: split for split, found in records.items() for name, _, _ in found}
    copies = [n for n in dataset if n.startswith(("copy", "near"))]
    leaked = sum(split_of[n] != split_of["img" + n[4:]] for n in copies)
    assert leaked >= 2  # (this fixture's, split by seed 0: some do)
    negative_split, negative = next((s, img) for s, f in records.items() for n, img, _ in f if n == "negative.jpg")
    shard = next(out.glob(f"*-{negative_split}.tfrecord-*"))
    offset = _damage(shard, negative)
    per_class = 3
    # ... and each class's images and boxes
    images_of = Counter(c for found in records.values() for n, _, classes in found for c in set(classes))
    expected_thumbs = sum(min(per_class, n) for n in images_of.values()) + 2 * leaked
    boxes_of = Counter(c for found in records.values() for _, _, classes in found for c in classes)

    page_path = tmp_path / "report.html"
    made = cli.inspect(out, "--report", page_path, "--report-per-class", per_class, "--json")
    assert made.exit_code == 0, made.output
    assert json.loads(made.output)["problems"] == 2  # the record's CRC, and the shard's sha256 in the manifest

    errors: list[str] = []
    with playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport=VIEWPORT)
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else errors.append(f"fetch {r.url}"))
        page.goto(page_path.as_uri())
        page.wait_for_load_state("load")
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        thumbs = page.locator("figure.thumb img").count()
        loaded = page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
        charts = page.evaluate("[...document.querySelectorAll('svg.chart')].map(s => s.getAttribute('aria-label'))")
        bars = page.evaluate(
            "[...document.querySelectorAll('svg.chart[aria-label=\"boxes per class\"] rect.bar title')]"
            ".map(t => t.textContent)"
        )
        pairs = page.locator(".pair").count()
        problems = page.locator("text=data_crc").count()
        problem_row = page.locator("tr", has_text="data_crc").inner_text()
        sha_row = page.locator("tr", has_text="differs from manifest.json").inner_text()
        browser.close()
    assert errors == []
    assert scroll_width <= 1280
    with Image.open(shot) as im:
        assert im.width == 1280 and im.height > 900
    assert loaded
    assert thumbs == expected_thumbs
    assert pairs == leaked
    assert {"boxes per class", "boxes per image", "bytes per record", "image/encoded: image width (px)"} <= set(charts)
    assert any(c.startswith("image/object/class/label") for c in charts)
    assert sorted(bars) == sorted(f"boxes: {c}: {n}" for c, n in boxes_of.items())
    assert problems == 1
    assert shard.name in problem_row and f"{offset:,}" in problem_row
    assert shard.name in sha_row


def test_segmentation_masks_give_pixel_shares_per_class_in_stats_and_the_report(cli, tmp_path):
    import tensorflow as tf

    rng = np.random.default_rng(3)
    masks = [rng.choice([0, 1, 2, 255], size=(20, 30), p=[0.5, 0.3, 0.15, 0.05]).astype(np.uint8) for _ in range(6)]
    masks[0][:] = 0  # an image with the background only
    path = tmp_path / "pets.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i, mask in enumerate(masks):
            image = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
            feature = {
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[tf.io.encode_png(image).numpy()])),
                "segmentation_mask": tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[tf.io.encode_png(mask[..., None]).numpy()])
                ),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    figures = json.loads(cli.inspect(path, "--stats", "--json").output)
    mask = figures["features"]["segmentation_mask"]["mask"]
    pixels = Counter()
    for m in masks:
        pixels.update(Counter(m.ravel().tolist()))
    assert mask["pixels"] == {str(k): v for k, v in sorted(pixels.items())}
    assert mask["images_with"] == {"0": 6, "1": 5, "2": 5, "255": 5}
    assert mask["masks"] == 6
    text = cli.inspect(path, "--stats").output
    assert "segmentation_mask: pixels per class in 6 masks" in text
    page = cli.inspect(path, "--report", "-").output
    assert 'aria-label="segmentation_mask: share of pixels"' in page
    assert f"pixels: 255: {pixels[255]} ({pixels[255] / sum(pixels.values()):.1%})" in page
    # the pictures carry their masks: each class tinted in its colour, the ignored pixels (255) untouched
    from tfr_convert.dataset.wire.example import parse
    from tfr_convert.inspect.grid import Pictures
    from tfr_convert.inspect.kinds.masks import ALPHA, COLOURS

    record = next(iter(tf.data.TFRecordDataset(str(path)).skip(1))).numpy()
    example = parse(record)
    picture = Pictures([str(path)]).picture(str(path), 1, example)
    plain = tf.io.decode_png(example["image"][1][0]).numpy().astype(np.float32)
    want = np.round(plain * (1 - ALPHA) + COLOURS[masks[1] % len(COLOURS)] * ALPHA)
    ignored = masks[1] == 255
    want[ignored] = plain[ignored]
    assert ignored.any() and np.array_equal(picture.pixels, want.astype(np.uint8))
