"""Bridges: webdataset tar shards in and out, against the same photos as files.

    python benchmarks/bench_bridges.py --photos 12000 --repeat 5

The --photos JPEG photos of bench_photos.py (6 class folders), and the same photos packed
in webdataset tar shards of about 64 MiB (KEY.jpg + KEY.cls, written with tarfile as
webdataset's TarWriter writes them). Timed, interleaved, page cache warm, the whole
command each, medians:
- `tfr-convert webdataset SHARDS` against `tfr-convert images PHOTOS` (keep mode both);
- `tfr-export DATASET --to webdataset` against `cat` of the dataset's shards to a file;
- `tfr-export DATASET --to hf` against what a user of `datasets` writes instead:
  `Dataset.from_generator` over our own record reader (each record parsed, its picture as
  `Image` bytes, its label a `ClassLabel`) and `save_to_disk`, timed inside its process
  (imports not counted: `datasets` alone takes about a second to import).
Writes benchmarks/results/bridges.md.
"""

from __future__ import annotations

import datetime
import io
import tarfile
from pathlib import Path

from bench_photos import make_photos
from common import (
    SCRIPTS,
    bench_parser,
    compile_package,
    goal_rows,
    inner_time,
    machine,
    measure,
    median,
    write_results,
)

SHARD_BYTES = 64 << 20
PEER = "datasets: from_generator over our reader + save_to_disk (imports not counted)"

# What a `datasets` user writes to turn our dataset into a save_to_disk folder.
FROM_GENERATOR = """
import sys, time
import datasets
from tfr_convert.dataset.existing import class_names
from tfr_convert.dataset.wire.example import parse
from tfr_convert.export.source import ExportSource
src, out = sys.argv[1], sys.argv[2]
t = time.perf_counter()
source = ExportSource.open([src])
features = datasets.Features({"image": datasets.Image(), "filename": datasets.Value("string"),
    "format": datasets.Value("string"), "height": datasets.Value("int64"), "width": datasets.Value("int64"),
    "channels": datasets.Value("int64"), "label": datasets.ClassLabel(names=class_names(src)["label"])})
def rows(split):
    for _, payload in source.records(split):
        example = {name: values for name, (_, values) in parse(payload).items()}
        yield {"image": {"bytes": example["image"][0], "path": None}, "filename": example["filename"][0].decode(),
               "format": example["format"][0].decode(), "height": example["height"][0],
               "width": example["width"][0], "channels": example["channels"][0], "label": example["label"][0]}
splits = {split: datasets.Dataset.from_generator(rows, gen_kwargs={"split": split}, features=features,
                                                 cache_dir=out + ".cache") for split in source.splits}
datasets.DatasetDict(splits).save_to_disk(out)
print(time.perf_counter() - t)
"""


def _pack(photos: Path, shards: Path) -> list[Path]:
    """The photos as webdataset shards (train-000000.tar...), a sample each: KEY.jpg, KEY.cls."""
    done = shards / ".complete"
    if done.exists():
        return sorted(shards.glob("*.tar"))
    shards.mkdir(parents=True, exist_ok=True)
    classes = sorted(p.name for p in photos.iterdir() if p.is_dir())
    files = sorted(p for p in photos.rglob("*.jpg"))
    tar, size, made = None, 0, []
    for path in files:
        if tar is None or size >= SHARD_BYTES:
            if tar is not None:
                tar.close()
            made.append(shards / f"train-{len(made):06d}.tar")
            tar, size = tarfile.open(made[-1], "w", format=tarfile.GNU_FORMAT), 0
        key = f"{path.parent.name}/{path.stem}"
        for ext, data in (("jpg", path.read_bytes()), ("cls", str(classes.index(path.parent.name)).encode())):
            info = tarfile.TarInfo(f"{key}.{ext}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            size += len(data) + 512
    if tar is not None:
        tar.close()
    done.write_text("")
    return made


def main() -> None:
    parser = bench_parser(__doc__, "bridges")
    parser.add_argument("--photos", type=int, default=12000)
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    photos = work / f"photos-{args.photos}"
    make_photos(photos, args.photos, None)
    shards = _pack(photos, work / f"shards-{args.photos}")
    convert, export = SCRIPTS / "tfr-convert", SCRIPTS / "tfr-export"
    from_files, from_tars, exported = work / "from-files", work / "from-tars", work / "exported"
    listed = " ".join(str(s) for s in shards)
    contenders = {
        "tfr-convert images PHOTOS": [f"rm -rf {from_files} && {convert} images {photos} --out {from_files} --quiet"],
        "tfr-convert webdataset SHARDS": [
            f"rm -rf {from_tars} && {convert} webdataset {listed} --out {from_tars} --quiet"
        ],
        "tfr-export --to webdataset": [
            f"rm -rf {exported} && {export} {from_files} --to webdataset --out {exported} --quiet"
        ],
        "cat of the dataset's shards": [f"cat {from_files}/*.tfrecord-* > {work / 'cat.out'}"],
    }
    hf_out, generated = work / "hf", work / "from-generator"
    contenders["tfr-export --to hf"] = [f"rm -rf {hf_out} && {export} {from_files} --to hf --out {hf_out} --quiet"]
    contenders["tfr-export --to webdataset --workers 2"] = [  # what the one-process default saves
        f"rm -rf {exported} && {export} {from_files} --to webdataset --out {exported} --quiet --workers 2"
    ]
    import shutil
    import subprocess

    def from_generator() -> float:
        shutil.rmtree(generated, ignore_errors=True)
        shutil.rmtree(f"{generated}.cache", ignore_errors=True)
        return inner_time(FROM_GENERATOR, from_files, generated)[0]

    subprocess.run(["bash", "-c", contenders["tfr-convert images PHOTOS"][0]], check=True)
    times: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name, cmd in contenders.items():
            times.setdefault(name, []).append(measure(cmd, shell=True, inputs=[photos, *shards, from_files])[0])
        times.setdefault(PEER, []).append(from_generator())
    m = {name: median(t) for name, t in times.items()}
    names = list(contenders)
    lines = [
        f"# Bridges ({datetime.date.today()}, {machine()}, medians of {args.repeat}, interleaved)",
        "",
        f"`python benchmarks/bench_bridges.py --photos {args.photos} --repeat {args.repeat}`",
        "",
        f"{args.photos} JPEG photos, as files in 6 class folders and as {len(shards)} webdataset shards.",
        "",
        "| contender | time | spread |",
        "|---|---|---|",
        *[f"| {n} | {median(t):.3f} s | {min(t):.3f}-{max(t):.3f} s |" for n, t in times.items()],
        "",
        "## Goals (issue 77)",
        "",
        "| job | measure | value | goal | met |",
        "|---|---|---|---|---|",
        *goal_rows(
            [
                ("webdataset -> dataset", "its speed / `images` over the files'", m[names[0]] / m[names[1]], ">= 0.9"),
                ("export to webdataset", "its speed / cat's", m[names[3]] / m[names[2]], ">= 0.5"),
                ("export to hf", "its speed / from_generator + save_to_disk's", m[PEER] / m[names[4]], ">= 2"),
            ]
        ),
        "",
    ]
    write_results(args.out, lines)


if __name__ == "__main__":
    main()
