"""Datasets that grow: `tfr-inspect OLD NEW --diff` against its floor (and, once `--append`
lands, the append against a conversion of the new photos alone).

    python benchmarks/bench_append.py --photos 12000 --repeat 5

Two conversions of the same --photos JPEG photos (bench_photos.py's), labelled by a CSV;
in the second CSV 1 % of the labels differ (every 100th photo's, moved to the next
class). Timed, interleaved, page cache warm, the whole command each:
- `tfr-inspect OLD NEW --diff --json` (it exits 1: they differ);
- the floor: read + sha256 of every shard of both, hashlib, a thread per core
  (bench_verify.py's);
- `tfr-inspect NEW --verify`, for scale.
Writes benchmarks/results/append.md.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

from bench_photos import make_photos
from bench_verify import HASH_FLOOR
from common import SCRIPTS, bench_parser, compile_package, goal_rows, machine, measure, median, write_results


def _labels(photos: Path, csv: Path, changed_every: int | None) -> int:
    """A labels CSV of every photo (its class folder's name), every `changed_every`-th
    photo's label moved to the next class; returns how many were changed."""
    classes = sorted(p.name for p in photos.iterdir() if p.is_dir())
    rows, changed = ["path,label"], 0
    files = sorted(p.relative_to(photos).as_posix() for p in photos.rglob("*.jpg"))
    for i, rel in enumerate(files):
        label = rel.split("/")[0]
        if changed_every and i % changed_every == 0:
            label = classes[(classes.index(label) + 1) % len(classes)]
            changed += 1
        rows.append(f"{rel},{label}")
    csv.write_text("\n".join(rows) + "\n")
    return changed


def _convert(photos: Path, csv: Path, out: Path) -> None:
    if not (out / "manifest.json").exists():
        subprocess.run([SCRIPTS / "tfr-convert", "images", photos, "--labels", csv, "--out", out, "--overwrite",
                        "--quiet"], check=True)  # fmt: skip


def main() -> None:
    parser = bench_parser(__doc__, "append")
    parser.add_argument("--photos", type=int, default=12000)
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    photos = work / f"photos-{args.photos}"
    make_photos(photos, args.photos, None)
    old, new = work / "old", work / "new"
    _labels(photos, work / "old.csv", None)
    changed = _labels(photos, work / "new.csv", 100)
    _convert(photos, work / "old.csv", old)
    _convert(photos, work / "new.csv", new)
    shards = sorted(str(p) for side in (old, new) for p in side.glob("*.tfrecord-*"))
    cores = os.cpu_count() or 1
    diff_line = f"{SCRIPTS / 'tfr-inspect'} {old} {new} --diff --json > /dev/null; test $? -eq 1"
    contenders = {
        "tfr-inspect OLD NEW --diff": ["bash", "-c", diff_line],
        f"floor: read + sha256 of both, {cores} threads": [sys.executable, "-c", HASH_FLOOR, *shards],
        "tfr-inspect NEW --verify": [str(SCRIPTS / "tfr-inspect"), str(new), "--verify"],
    }
    times: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name, cmd in contenders.items():
            times.setdefault(name, []).append(measure([str(c) for c in cmd], inputs=[old, new])[0])
    m = {name: median(t) for name, t in times.items()}
    report = json.loads(
        subprocess.run([SCRIPTS / "tfr-inspect", old, new, "--diff", "--json"], capture_output=True, text=True).stdout
    )
    found = sum(s["changed"] for s in report["splits"])
    names = list(contenders)
    lines = [
        f"# Datasets that grow ({datetime.date.today()}, {machine()}, medians of {args.repeat}, interleaved)",
        "",
        f"`python benchmarks/bench_append.py --photos {args.photos} --repeat {args.repeat}`",
        "",
        f"## --diff of two conversions of {args.photos} photos, {changed} labels changed",
        "",
        f"The diff found {found} changed records ({', '.join(report['features_changed'])}); "
        f"{report['read']['shards']} shards read, {report['read']['shards_shared']} shared.",
        "",
        "| contender | time | spread |",
        "|---|---|---|",
        *[f"| {n} | {median(t):.3f} s | {min(t):.3f}-{max(t):.3f} s |" for n, t in times.items()],
        "",
        "## Goals (issue 76)",
        "",
        "| job | measure | value | goal | met |",
        "|---|---|---|---|---|",
        *goal_rows([("--diff, two conversions", "its time / the floor's", m[names[0]] / m[names[1]], "<= 1.5")]),
        "",
    ]
    write_results(args.out, lines)


if __name__ == "__main__":
    main()
