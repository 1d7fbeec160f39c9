"""Hostile masks: COCO RLE counts that wrap a 64-bit sum or pass it, polygons whose
coordinates would take the machine's memory to draw, and mask pictures whose header
claims more pixels than --max-pixels allows. Each is one line naming the annotation or
file, exit 1 (or its image skipped and listed under --on-error skip, exit 0), never a
traceback or a dead worker, in bounded memory (the command runs under an address-space
limit)."""

from __future__ import annotations

import json
import re
import resource
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from pycocotools import mask as coco_mask

from mask_inputs import coco_case
from tfr_convert.dataset import coco_rle

SCRIPTS = Path(sys.executable).parent
MEMORY_LIMIT = 3 << 30  # the command's whole address space: numpy, Pillow and the workers fit well in it


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPTS / "tfr-convert"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limited,
    )


ZIGZAG = [float(v) for i in range(4000) for v in ((-250.0, i % 48) if i % 2 else (313.0, (i * 7) % 48))]

HOSTILE = [
    ("wrapping counts", {"size": [48, 64], "counts": [100, 2**62, 2**62, 2**62, 2**62]},
     "RLE counts cover more pixels than any image"),
    ("counts past 64 bits", {"size": [48, 64], "counts": [2**64, 5]}, "RLE counts cover more pixels than any image"),
    ("compressed counts past 64 bits", {"size": [48, 64], "counts": "o" * 20 + "0"},
     "RLE counts cover more pixels than any image"),
    ("coordinates at 3e7", [[0, 0, 3e7, 0, 3e7, 3e7]], "lies more than 256 pixels outside the 64x48 image"),
    ("coordinates at 1e9", [[0, 0, 1e9, 5, 5, 1e9]], "lies more than 256 pixels outside the 64x48 image"),
    ("coordinates at 1e308", [[1e308, 0, 5, 5, 0, 5]], "lies more than 256 pixels outside the 64x48 image"),
    ("an integer past float64", [[10**400, 0, 5, 5, 0, 5]], "polygon 0 holds a number past any image"),
]  # fmt: skip


def _hostile_coco(cli, tmp_path, segmentation):
    """The COCO case of test_detection_masks, its annotations[0] given `segmentation`."""
    _, _, annotations = coco_case(cli, tmp_path)
    doc = json.loads(annotations.read_text())
    doc["annotations"][0]["segmentation"] = segmentation
    annotations.write_text(json.dumps(doc))
    return annotations, doc["images"][doc["annotations"][0]["image_id"] - 1]["file_name"]


@pytest.mark.parametrize(("case", "segmentation", "message"), HOSTILE, ids=[c for c, _, _ in HOSTILE])
def test_a_hostile_segmentation_is_one_line_naming_it_in_bounded_memory(cli, tmp_path, case, segmentation, message):
    annotations, image = _hostile_coco(cli, tmp_path, segmentation)
    out = tmp_path / "bad"
    result = _run("detection", tmp_path / "images", "--annotations", annotations, "--masks", "--out", out,
                  "--workers", 2)  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert f"{annotations} annotations[0]: " in result.stderr and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()

    skipped = _run("detection", tmp_path / "images", "--annotations", annotations, "--masks", "--out", out,
                   "--workers", 2, "--on-error", "skip", "--json")  # fmt: skip
    assert skipped.returncode == 0, skipped.stderr
    summary = json.loads(skipped.stdout)
    assert summary["skipped_total"] == 1 and message in summary["skipped"][0]["reason"]
    assert image in summary["skipped"][0]["item"]
    assert "Traceback" not in skipped.stderr


def test_a_polygon_of_thousands_of_long_edges_is_drawn_in_bounded_memory_as_pycocotools_draws(tmp_path):
    h, w = 48, 64
    script = (
        "import resource, sys, json, numpy as np\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n"
        "from tfr_convert.dataset import coco_rle\n"
        f"mask = coco_rle.decode(json.load(open(sys.argv[1])), {h}, {w})\n"
        "np.save(sys.argv[2], mask)\n"
    )
    (tmp_path / "polygon.json").write_text(json.dumps([ZIGZAG]))
    done = subprocess.run([sys.executable, "-c", script, tmp_path / "polygon.json", tmp_path / "mask.npy"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    want = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects([ZIGZAG], h, w)))
    assert np.array_equal(np.load(tmp_path / "mask.npy"), want)


def test_tracing_in_chunks_draws_what_tracing_at_once_draws(monkeypatch):
    rng = np.random.default_rng(5)
    for _ in range(60):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        polygons = [rng.uniform(-5, max(h, w) + 5, int(rng.integers(3, 30)) * 2).tolist() for _ in range(2)]
        whole = coco_rle.decode(polygons, h, w)
        monkeypatch.setattr(coco_rle, "TRACE_POINTS", int(rng.integers(1, 50)))
        assert np.array_equal(coco_rle.decode(polygons, h, w), whole)
        monkeypatch.undo()
        want = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(polygons, h, w)))
        assert np.array_equal(whole, want)


def test_the_outline_is_traced_in_the_largest_chunks_of_whole_edges_that_fit(monkeypatch):
    """Memory is bounded by TRACE_POINTS whatever the vertices: each chunk holds as many
    whole edges as fit in that many points (an edge of n steps is n + 1 points), one at
    least even when it alone is longer."""
    chunks = []
    trace = coco_rle._trace

    def spy(start, end, along_x, steps):
        chunks.append((steps + 1).tolist())
        return trace(start, end, along_x, steps)

    monkeypatch.setattr(coco_rle, "_trace", spy)
    monkeypatch.setattr(coco_rle, "TRACE_POINTS", 10)
    # 30 vertices alike (29 edges of one point), then edges of 3, 4, 20 and 23 steps on the finer grid
    polygon = [2.0, 2.0] * 30 + [2.6, 2.0, 2.6, 2.8, 6.6, 2.8]
    coco_rle.decode([polygon], 10, 10)
    points = [p for chunk in chunks for p in chunk]
    assert points == [1] * 29 + [4, 5, 21, 24]  # every edge, in order, once (the last closes it)
    for i, chunk in enumerate(chunks):
        assert chunk and (sum(chunk) <= 10 or len(chunk) == 1)
        if i + 1 < len(chunks):  # the next edge would not have fitted
            assert sum(chunk) + chunks[i + 1][0] > 10


def _bomb_png(width: int, height: int) -> bytes:
    """A valid PNG header (and one tiny IDAT) claiming width x height 8-bit gray pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0")) + chunk(b"IEND", b"")


def test_a_segmentation_mask_whose_header_claims_too_many_pixels_is_one_line_or_skipped(tmp_path):
    from PIL import Image

    images, masks = tmp_path / "img", tmp_path / "masks"
    images.mkdir()
    masks.mkdir()
    for i in range(3):
        Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(images / f"{i}.png")
        Image.fromarray(np.full((4, 4), i, np.uint8)).save(masks / f"{i}.png")
    (masks / "1.png").write_bytes(_bomb_png(100_000, 100_000))
    out = tmp_path / "out"
    failed = _run("segmentation", images, "--masks", masks, "--out", out, "--workers", 2)
    assert failed.returncode == 1, failed.stderr
    assert "1.png" in failed.stderr and "--max-pixels" in failed.stderr
    assert "Traceback" not in failed.stderr and len(failed.stderr.strip().splitlines()) == 1
    assert not out.exists()
    skipped = _run("segmentation", images, "--masks", masks, "--out", out, "--workers", 2, "--on-error", "skip",
                   "--json")  # fmt: skip
    assert skipped.returncode == 0, skipped.stderr
    summary = json.loads(skipped.stdout)
    assert summary["skipped_total"] == 1 and "1.png" in summary["skipped"][0]["item"]
    assert sum(s["examples"] for s in summary["splits"].values()) == 2


def test_a_voc_object_mask_whose_header_claims_too_many_pixels_is_one_line_or_skipped(tmp_path):
    from detection_inputs import write_images, write_voc

    dataset = {"a.jpg": (64, 48, [("cat", 2, 3, 30, 40)]), "b.jpg": (64, 48, [("dog", 20, 10, 64, 48)])}
    images = write_images(tmp_path / "VOC" / "JPEGImages", dataset)
    write_voc(tmp_path / "VOC" / "Annotations", dataset)
    objects = tmp_path / "VOC" / "SegmentationObject"
    objects.mkdir()
    from PIL import Image

    Image.fromarray(np.ones((48, 64), np.uint8), "L").save(objects / "a.png")
    (objects / "b.png").write_bytes(_bomb_png(100_000, 100_000))
    out = tmp_path / "out"
    args = ["detection", images, "--annotations", tmp_path / "VOC" / "Annotations", "--masks", "--out", out]
    failed = _run(*args, "--workers", 2)
    assert failed.returncode == 1, failed.stderr
    assert "b.png" in failed.stderr and "--max-pixels" in failed.stderr
    assert "Traceback" not in failed.stderr and len(failed.stderr.strip().splitlines()) == 1
    assert not out.exists()
    skipped = _run(*args, "--workers", 2, "--on-error", "skip", "--json")
    assert skipped.returncode == 0, skipped.stderr
    summary = json.loads(skipped.stdout)
    assert summary["skipped_total"] == 1 and "b.jpg" in summary["skipped"][0]["item"]


def test_counts_too_large_for_any_image_are_said_so_and_smaller_ones_counted():
    with pytest.raises(coco_rle.MaskError, match="cover more pixels than any image"):
        coco_rle.from_runs([2**62], 1, 1)
    with pytest.raises(coco_rle.MaskError, match=f"cover {2**62 - 1} pixels, the image 1x1 = 1"):
        coco_rle.from_runs([2**62 - 1], 1, 1)


@pytest.mark.parametrize("char", ["/", "p", "\x7f", "é"])
def test_a_character_outside_the_rle_alphabet_is_named_with_its_position(char):
    with pytest.raises(coco_rle.MaskError, match=re.escape(f"character {char!r} at 2 is not one of")):
        coco_rle.counts_from_string("00" + char)


def test_a_point_at_the_margins_edge_is_drawn_and_one_past_it_refused():
    """The margin is the image's size or 256 pixels, on every side: a point exactly on
    its edge is drawn (as pycocotools draws it), a point past it is refused, named."""
    h, w = 10, 20
    for x, y in ((20 + 256, 5), (-256, 5), (5, 10 + 256), (5, -256)):
        polygon = [1.0, 1.0, float(x), float(y), 3.0, 8.0]
        drawn = coco_rle.decode([polygon], h, w)
        assert np.array_equal(drawn, coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects([polygon], h, w))))
    for x, y in ((20 + 256.5, 5), (-256.5, 5), (5, 10 + 256.5), (5, -256.5)):
        with pytest.raises(coco_rle.MaskError, match=r"polygon 0: point 1 .* lies more than 256 pixels outside"):
            coco_rle.decode([[1.0, 1.0, float(x), float(y), 3.0, 8.0]], h, w)
