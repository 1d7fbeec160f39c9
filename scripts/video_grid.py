"""Remake docs/grid-video.png: `tfr-inspect --grid` of a small video dataset made here
(clips of moving shapes in three class folders, encoded as H.264 MP4 by PyAV, then
`tfr-convert video --fps 8 --frame-format jpeg`).

    python scripts/video_grid.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import av
import numpy as np
from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
W, H, FRAMES, RATE = 128, 96, 24, 12


def frame(kind: str, t: float, hue: tuple[int, int, int]) -> np.ndarray:
    """One frame at t in [0, 1) of a clip of `kind`: a ball bouncing, a box sliding, a bar turning."""
    picture = Image.new("RGB", (W, H), (235, 235, 225))
    draw = ImageDraw.Draw(picture)
    draw.line([(0, H - 8), (W, H - 8)], fill=(120, 110, 100), width=3)
    if kind == "bounce":
        y = (H - 30) * (1 - abs(np.sin(np.pi * 2 * t)))
        draw.ellipse([W / 2 - 12, y + 2, W / 2 + 12, y + 26], fill=hue)
    elif kind == "slide":
        x = 8 + (W - 40) * t
        draw.rectangle([x, H - 36, x + 26, H - 10], fill=hue)
    else:
        angle = 2 * np.pi * t
        dx, dy = 34 * np.cos(angle), 34 * np.sin(angle)
        draw.line([(W / 2 - dx, H / 2 - dy), (W / 2 + dx, H / 2 + dy)], fill=hue, width=7)
    return np.asarray(picture)


def main() -> None:
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for kind in ("bounce", "slide", "spin"):
            (root / "clips" / kind).mkdir(parents=True)
            for i in range(2):
                hue = tuple(int(v) for v in rng.integers(20, 200, 3))
                with av.open(str(root / "clips" / kind / f"{kind}{i}.mp4"), "w") as out:
                    stream = out.add_stream("libx264", rate=RATE)
                    stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
                    for n in range(FRAMES):
                        picture = frame(kind, (n / FRAMES + i / 3) % 1.0, hue)
                        out.mux(stream.encode(av.VideoFrame.from_ndarray(picture, format="rgb24")))
                    out.mux(stream.encode())
        run = {"check": True, "stdout": subprocess.DEVNULL}
        subprocess.run([BIN / "tfr-convert", "video", root / "clips", "--out", root / "out", "--fps", "8",
                        "--frame-format", "jpeg", "--no-shuffle", "--quiet"], **run)  # fmt: skip
        subprocess.run([BIN / "tfr-inspect", root / "out", "--grid", root / "grid.png"], **run)
        sheet = Image.open(root / "grid.png").convert("RGB")
        sheet = sheet.resize((sheet.width * 2, sheet.height * 2), Image.Resampling.NEAREST)
        sheet.save(ROOT / "docs" / "grid-video.png", optimize=True)
    print(ROOT / "docs" / "grid-video.png")


if __name__ == "__main__":
    main()
