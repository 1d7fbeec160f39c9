"""Remake docs/grid-masks.png: `tfr-inspect --grid` of two small datasets made here,
side by side: COCO instance masks with keypoints and their skeleton (tfr-convert
detection --masks), and semantic segmentation masks (tfr-convert segmentation).

    python scripts/masks_grid.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
W, H = 160, 120
KEYPOINTS = ["head", "neck", "hip", "left_hand", "right_hand", "left_foot", "right_foot"]
SKELETON = [[1, 2], [2, 3], [2, 4], [2, 5], [3, 6], [3, 7]]


def background(rng: np.random.Generator) -> Image.Image:
    ramp = np.linspace(0.4, 1.0, W)[None, :, None] * rng.uniform(120, 230, 3)
    return Image.fromarray(np.clip(ramp + rng.normal(0, 6, (H, W, 3)), 0, 255).astype(np.uint8))


def ellipse(cx: float, cy: float, rx: float, ry: float, n: int = 24) -> list[float]:
    angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.round(np.stack([cx + rx * np.cos(angles), cy + ry * np.sin(angles)], 1).reshape(-1), 1).tolist()


def coco_dataset(root: Path, rng: np.random.Generator) -> tuple[Path, Path]:
    images, entries, annotations = root / "coco_images", [], []
    images.mkdir()
    for i in range(6):
        picture = background(rng)
        draw = ImageDraw.Draw(picture)
        entries.append({"id": i + 1, "file_name": f"{i}.png", "width": W, "height": H})
        for _ in range(2):  # balls: category 2
            cx, cy, r = rng.uniform(25, W - 25), rng.uniform(25, H - 25), rng.uniform(10, 20)
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=tuple(int(v) for v in rng.integers(40, 200, 3)))
            annotations.append({"image_id": i + 1, "category_id": 2, "segmentation": [ellipse(cx, cy, r, r)],
                                "bbox": [cx - r, cy - r, 2 * r, 2 * r], "iscrowd": 0})  # fmt: skip
        x, y = rng.uniform(40, W - 40), rng.uniform(30, H - 45)  # a stick figure: category 1, with keypoints
        points = [
            (x, y - 18),
            (x, y - 8),
            (x, y + 12),
            (x - 14, y + 2),
            (x + 14, y - 2),
            (x - 9, y + 30),
            (x + 9, y + 30),
        ]
        for a, b in SKELETON:
            draw.line([points[a - 1], points[b - 1]], fill=(30, 30, 30), width=3)
        draw.ellipse([x - 6, y - 24, x + 6, y - 12], fill=(30, 30, 30))
        annotations.append({"image_id": i + 1, "category_id": 1, "iscrowd": 0,
                            "segmentation": [ellipse(x, y + 4, 17, 28)], "bbox": [x - 17, y - 24, 34, 56],
                            "keypoints": [v for px, py in points for v in (round(px, 1), round(py, 1), 2)]})  # fmt: skip
        picture.save(images / f"{i}.png")
    for n, annotation in enumerate(annotations, 1):
        annotation["id"] = n
    categories = [{"id": 1, "name": "figure", "keypoints": KEYPOINTS, "skeleton": SKELETON}, {"id": 2, "name": "ball"}]
    path = root / "instances.json"
    path.write_text(json.dumps({"images": entries, "annotations": annotations, "categories": categories}))
    return images, path


def segmentation_dataset(root: Path, rng: np.random.Generator) -> tuple[Path, Path]:
    images, masks = root / "seg_images", root / "seg_masks"
    images.mkdir()
    masks.mkdir()
    for i in range(6):
        picture = background(rng)
        indices = Image.new("L", (W, H), 0)
        draw, label = ImageDraw.Draw(picture), ImageDraw.Draw(indices)
        for klass in (1, 2, 3):
            x, y = rng.uniform(20, W - 50), rng.uniform(20, H - 40)
            box = [x, y, x + rng.uniform(20, 45), y + rng.uniform(15, 35)]
            shape = draw.rectangle if klass != 2 else draw.ellipse
            shape(box, fill=tuple(int(v) for v in rng.integers(40, 220, 3)))
            (label.rectangle if klass != 2 else label.ellipse)(box, fill=klass)
        picture.save(images / f"{i}.png")
        indices.save(masks / f"{i}.png")
    (root / "classes.txt").write_text("background\nbox\nball\nblock\n")
    return images, masks


def main() -> None:
    rng = np.random.default_rng(4)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        images, annotations = coco_dataset(root, rng)
        run = {"check": True, "stdout": subprocess.DEVNULL}
        subprocess.run([BIN / "tfr-convert", "detection", images, "--annotations", annotations, "--masks",
                        "--out", root / "instances", "--quiet"], **run)  # fmt: skip
        seg_images, seg_masks = segmentation_dataset(root, rng)
        subprocess.run([BIN / "tfr-convert", "segmentation", seg_images, "--masks", seg_masks, "--classes",
                        root / "classes.txt", "--out", root / "semantic", "--quiet"], **run)  # fmt: skip
        sheets = []
        for name in ("instances", "semantic"):
            subprocess.run([BIN / "tfr-inspect", root / name, "--grid", root / f"{name}.png"], **run)
            sheets.append(Image.open(root / f"{name}.png").convert("RGB"))
        gap = 16
        both = Image.new("RGB", (sum(s.width for s in sheets) + gap, max(s.height for s in sheets)), (255, 255, 255))
        both.paste(sheets[0], (0, 0))
        both.paste(sheets[1], (sheets[0].width + gap, 0))
        both = both.resize((both.width * 2, both.height * 2), Image.Resampling.NEAREST)
        both.save(ROOT / "docs" / "grid-masks.png", optimize=True)
    print(ROOT / "docs" / "grid-masks.png")


if __name__ == "__main__":
    main()
