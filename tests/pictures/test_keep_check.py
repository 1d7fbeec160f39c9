"""Keep mode's image check (imaging.probe) against the full decode it replaces: a JPEG
is checked at 1/8 scale, which must accept and refuse exactly what a full decode does."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tfr_convert.errors import SourceError
from tfr_convert.pictures.imaging import probe


def _jpeg(width=96, height=64, progressive=False, mode="RGB") -> bytes:
    rng = np.random.default_rng(width * height)
    shape = (height, width, 3) if mode == "RGB" else (height, width)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8)).save(buf, "JPEG", quality=90, progressive=progressive)
    return buf.getvalue()


def _full_decode_fails(data: bytes) -> bool:
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
    except (OSError, ValueError, SyntaxError):
        return True
    return False


def _probe_fails(data: bytes) -> bool:
    try:
        probe(data)
    except SourceError:
        return True
    return False


def _damaged(data: bytes) -> list[bytes]:
    """The file cut at every 5% and 10 bytes before its end; bytes of its entropy-coded
    data overwritten with garbage, with an early end-of-image marker, with zeros."""
    start = data.index(b"\xff\xda")  # start of scan: what follows is entropy-coded
    cuts = [data[: len(data) * k // 20] for k in range(1, 20)] + [data[:-10], data[:-2]]
    rng = np.random.default_rng(len(data))
    edits = []
    for at in (start + 20, (start + len(data)) // 2, len(data) - 40):
        for patch in (bytes(rng.integers(0, 256, 16, dtype=np.uint8)), b"\xff\xd9" * 4, bytes(32)):
            edits.append(data[:at] + patch + data[at + len(patch) :])
    return cuts + edits


@pytest.mark.parametrize(
    "source",
    [_jpeg(), _jpeg(progressive=True), _jpeg(mode="L"), _jpeg(width=1003, height=7)],
    ids=["baseline", "progressive", "grayscale", "odd-size"],
)
def test_the_reduced_scale_jpeg_check_refuses_exactly_what_a_full_decode_refuses(source):
    assert not _probe_fails(source)
    damaged = _damaged(source)
    verdicts = [(_probe_fails(d), _full_decode_fails(d)) for d in damaged]
    assert [p for p, _ in verdicts] == [f for _, f in verdicts]
    assert sum(f for _, f in verdicts) >= 19  # every cut short of the end at least: the check is not vacuous


def test_the_check_reports_the_size_as_stored_not_the_reduced_one():
    info = probe(_jpeg(width=1003, height=7))
    assert info.source_size == (1003, 7) and info.source_format == "jpeg" and info.source_channels == 3


def test_an_oversized_jpeg_is_refused_from_its_header():
    with pytest.raises(SourceError, match="exceeds --max-pixels 5000"):
        probe(_jpeg(width=100, height=60), max_pixels=5000)
