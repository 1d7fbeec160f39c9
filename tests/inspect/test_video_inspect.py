"""tfr-inspect on a video dataset: --grid and --report draw each clip as four of its
frames (first, last, evenly between) in two rows of two."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("av", reason="tfr-convert video needs PyAV (the video extra)")

from helpers import make_clip

from tfr_convert.inspect.kinds.frames import frames_shown, strip


def test_a_strip_shows_the_first_the_last_and_evenly_between():
    assert frames_shown(1) == [0] and frames_shown(3) == [0, 1, 2] and frames_shown(4) == [0, 1, 2, 3]
    assert frames_shown(10) == [0, 3, 6, 9] and frames_shown(7) == [0, 2, 4, 6]


def test_frames_are_laid_in_rows_of_two_with_a_black_line_between():
    frames = [np.full((3, 5, 3), 10 * (k + 1), np.uint8) for k in range(3)]
    drawn = strip(frames)
    assert drawn.shape == (7, 11, 3)
    assert (drawn[:3, :5] == 10).all() and (drawn[:3, 6:] == 20).all() and (drawn[4:, :5] == 30).all()
    assert (drawn[3] == 0).all() and (drawn[:, 5] == 0).all() and (drawn[4:, 6:] == 0).all()
    assert strip(frames[:1]).shape == (3, 5, 3) and strip(frames[:2]).shape == (3, 11, 3)
    other = strip([frames[0], np.full((6, 10, 3), 50, np.uint8)])  # scaled to the first's size
    assert other.shape == (3, 11, 3) and (other[:, 6:] == 50).all()


def test_the_grid_draws_each_clip_as_its_chosen_frames(cli, tmp_path):
    from tfr_convert.inspect.grid import Pictures
    from tfr_convert.inspect.summary import examples_of

    colours = np.arange(10)[:, None, None, None] * 20 + np.zeros((10, 8, 8, 3), np.uint8)
    make_clip(tmp_path / "clips" / "a" / "c.mkv", colours.astype(np.uint8))
    out = tmp_path / "out"
    assert cli.convert("video", tmp_path / "clips", "--out", out, "--quiet").exit_code == 0
    pictures = Pictures([str(out)])
    shard = str(next(out.glob("*.tfrecord-*")))
    (example,) = [e for _, e in examples_of(shard)]
    drawn = pictures.picture(shard, 0, example).pixels
    assert drawn.shape == (17, 17, 3)
    assert [int(drawn[r, c, 0]) for r, c in ((0, 0), (0, 9), (9, 0), (9, 9))] == [0, 60, 120, 180]
    result = cli.inspect(out, "--grid", tmp_path / "g.png")
    assert result.exit_code == 0, result.stderr
