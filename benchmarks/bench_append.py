"""Datasets that grow: `tfr-convert ... --append` against converting the new photos
alone, and `tfr-inspect OLD NEW --diff` against its floor and against --verify.

    python benchmarks/bench_append.py --photos 12000 --base 48000 --added 1000 --repeat 5 [--s3]

Timed, interleaved, page cache warm, the whole command each, medians:
- a dataset of --base photos (bench_photos.py's, in class folders) made with --append
  (version 1.0.0), then --added other photos appended (1.1.0: the 1.1.0 folder removed
  before each run) against the same photos converted alone into a fresh folder;
- `tfr-inspect 1.0.0 1.1.0 --diff` against `tfr-inspect 1.1.0 --verify`;
- with --s3, the append again on a local S3 server (SeaweedFS; the old version uploaded
  first), whose shards the server copies, against the new photos converted alone there;
- two conversions of the same --photos photos, labelled by a CSV whose second version
  changes 1 % of the labels (every 100th photo's, moved to the next class):
  `tfr-inspect OLD NEW --diff` against read + sha256 of every shard of both, hashlib, a
  thread per core (bench_verify.py's floor), and `tfr-inspect NEW --verify` for scale.
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
from common import REPO, SCRIPTS, bench_parser, compile_package, goal_rows, machine, measure, median, write_results

sys.path.insert(0, str(REPO / "tests"))  # the S3 server the tests start (object_stores.py)


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


def _grown(work: Path, base: int, added: int, repeat: int) -> tuple[dict[str, list[float]], dict[str, int]]:
    """The append, the new photos alone, and the diff of the two versions against
    --verify: their times, and the versions' examples."""
    old_photos, new_photos = work / f"photos-{base}", work / f"photos-{added}-after-{base}"
    make_photos(old_photos, base, None)
    make_photos(new_photos, added, None, first=base)
    root, alone = work / "grown", work / "alone"
    old, new = root / "photos" / "1.0.0", root / "photos" / "1.1.0"
    if not (old / "dataset_info.json").exists():
        subprocess.run([SCRIPTS / "tfr-convert", "images", old_photos, "--out", root, "--append", "--name", "photos",
                        "--quiet"], check=True)  # fmt: skip
    tfr_convert, tfr_inspect = SCRIPTS / "tfr-convert", SCRIPTS / "tfr-inspect"
    append = f"rm -rf {new} {root / 'photos' / '.1.1.0.tfr-convert'} && {tfr_convert} images {new_photos} --out {root} --append --quiet"
    subprocess.run(["bash", "-c", append], check=True)
    contenders = {
        f"append {added} photos to {base} (--append)": [append],
        f"convert the {added} photos alone": [
            f"rm -rf {alone} && {tfr_convert} images {new_photos} --out {alone} --quiet"
        ],
        "tfr-inspect 1.0.0 1.1.0 --diff": [f"{tfr_inspect} {old} {new} --diff --json > /dev/null; test $? -eq 1"],
        "tfr-inspect 1.1.0 --verify": [f"{tfr_inspect} {new} --verify > /dev/null"],
    }
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, cmd in contenders.items():
            times.setdefault(name, []).append(measure(cmd, shell=True, inputs=[old_photos, new_photos, root])[0])
    examples = {v.name: json.loads((v / "manifest.json").read_text()) for v in (old, new)}
    return times, {v: sum(s["examples"] for s in m["splits"].values()) for v, m in examples.items()}


def _grown_on_s3(work: Path, base: int, added: int, repeat: int) -> dict[str, list[float]]:
    """The append of _grown on a local S3 server (SeaweedFS, as the tests start it): the
    version's shards copied by the server, against the new photos converted alone to a
    fresh prefix. The 1.1.0 prefix is removed, untimed, before each append."""
    from object_stores import SeaweedS3, upload_tree

    old = work / "grown" / "photos" / "1.0.0"
    new_photos = work / f"photos-{added}-after-{base}"
    server = SeaweedS3()
    os.environ.update(server.env)
    try:
        bucket = server.bucket()
        s3 = server.filesystem()
        upload_tree(s3, old, f"{bucket}/grown/photos/1.0.0")
        tfr_convert = SCRIPTS / "tfr-convert"
        times: dict[str, list[float]] = {}
        for i in range(repeat):
            if s3.exists(f"{bucket}/grown/photos/1.1.0"):
                s3.rm(f"{bucket}/grown/photos/1.1.0", recursive=True)
            append = [tfr_convert, "images", new_photos, "--out", f"s3://{bucket}/grown", "--append", "--quiet"]
            times.setdefault(f"append {added} photos to {base} on S3", []).append(measure(append)[0])
            alone = [tfr_convert, "images", new_photos, "--out", f"s3://{bucket}/alone-{i}", "--quiet"]
            times.setdefault(f"convert the {added} photos alone to S3", []).append(measure(alone)[0])
        return times
    finally:
        server.stop()


def main() -> None:
    parser = bench_parser(__doc__, "append")
    parser.add_argument("--photos", type=int, default=12000)
    parser.add_argument("--base", type=int, default=48000)
    parser.add_argument("--added", type=int, default=1000)
    parser.add_argument("--s3", action="store_true", help="also append on a local S3 server (SeaweedFS)")
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    grown, held = _grown(work, args.base, args.added, args.repeat)
    on_s3 = _grown_on_s3(work, args.base, args.added, args.repeat) if args.s3 else {}
    g = {name: median(t) for name, t in grown.items()}
    gn = list(grown)
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
        f"`python benchmarks/bench_append.py --photos {args.photos} --base {args.base} --added {args.added} "
        f"--repeat {args.repeat}{' --s3' if args.s3 else ''}`",
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
        f"## --append of {args.added} photos to a dataset of {args.base}",
        "",
        f"Versions: 1.0.0 holds {held['1.0.0']} examples, 1.1.0 {held['1.1.0']} (its first shards linked from "
        "1.0.0, the new photos in shards of their own).",
        "",
        "| contender | time | spread |",
        "|---|---|---|",
        *[f"| {n} | {median(t):.3f} s | {min(t):.3f}-{max(t):.3f} s |" for n, t in {**grown, **on_s3}.items()],
        "",
        "## Goals (issue 76)",
        "",
        "| job | measure | value | goal | met |",
        "|---|---|---|---|---|",
        *goal_rows(
            [
                (
                    f"--append of {args.added} to {args.base}",
                    "its time / converting them alone",
                    g[gn[0]] / g[gn[1]],
                    "<= 1.3",
                ),
                ("--diff, a version and its append", "its time / --verify of the new", g[gn[2]] / g[gn[3]], "<= 0.1"),
                ("--diff, two conversions", "its time / the floor's", m[names[0]] / m[names[1]], "<= 1.5"),
            ]
        ),
        "",
    ]
    write_results(args.out, lines)


if __name__ == "__main__":
    main()
