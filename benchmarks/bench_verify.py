"""`tfr-inspect --verify` against its floors, for records of 4 KiB and of 1 MiB.

    python benchmarks/bench_verify.py --gib 1 --repeat 3

A dataset of 8 shards (`tfr-convert records`, so with a manifest listing each shard's
sha256) is verified as a user runs it (the whole command); the floor reads every shard
and takes its sha256 with hashlib (OpenSSL) on a thread per core, as fast as a check of
the manifest's digests can be. The same shards without their metadata (plain files:
CRCs only) are compared with `cat` of them. Interleaved, page cache warm; writes
benchmarks/results/verify.md.
"""

from __future__ import annotations

import datetime
import shutil
import subprocess
import sys
from pathlib import Path

from bench_inspect import make_file
from common import SCRIPTS, bench_parser, compile_package, machine, measure, median, write_results

HASH_FLOOR = """
import hashlib, os, sys
from concurrent.futures import ThreadPoolExecutor
def digest(path):
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while block := f.read(8 << 20):
            h.update(block)
    return h.hexdigest()
with ThreadPoolExecutor(os.cpu_count()) as pool:
    list(pool.map(digest, sys.argv[1:]))
"""


def main() -> None:
    parser = bench_parser(__doc__, "verify")
    parser.add_argument("--gib", type=float, default=1.0)
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    total = int(args.gib * (1 << 30))
    rows = []
    for kib in (4, 1024):
        source = work / f"records-{kib}k.tfrecord"
        make_file(source, total, kib << 10)
        dataset = work / f"dataset-{kib}k"
        if not (dataset / "manifest.json").exists():
            subprocess.run([SCRIPTS / "tfr-convert", "records", source, "--out", dataset, "--overwrite",
                            "--num-shards", "8", "--no-shuffle", "--quiet"], check=True)  # fmt: skip
        shards = sorted(str(p) for p in dataset.glob("*.tfrecord-*"))
        plain = work / f"plain-{kib}k"
        if not plain.exists():
            plain.mkdir()
            for s in shards:
                shutil.copy(s, plain / Path(s).name)
        plain_shards = sorted(str(p) for p in plain.iterdir())
        times: dict[str, list[float]] = {}
        contenders = {
            "tfr-inspect --verify (dataset: CRCs + sha256 against the manifest)": [
                SCRIPTS / "tfr-inspect",
                dataset,
                "--verify",
            ],
            "floor: sha256 of every shard, a thread per core": [sys.executable, "-c", HASH_FLOOR, *shards],
            "tfr-inspect --verify (plain files: CRCs)": [SCRIPTS / "tfr-inspect", *plain_shards, "--verify"],
            "cat the plain files > /dev/null": ["bash", "-c", f"cat {' '.join(plain_shards)} > /dev/null"],
        }
        for _ in range(args.repeat):
            for name, cmd in contenders.items():
                seconds, _ = measure([str(c) for c in cmd], inputs=[dataset, plain])
                times.setdefault(name, []).append(seconds)
        m = {name: median(t) for name, t in times.items()}
        names = list(contenders)
        rows.append((kib, times, m[names[0]] / m[names[1]], m[names[3]] / m[names[2]]))
    lines = [
        f"# --verify ({datetime.date.today()}, {machine()}, medians of {args.repeat}, interleaved)",
        "",
        f"`python benchmarks/bench_verify.py --gib {args.gib:g} --repeat {args.repeat}`: {args.gib:g} GiB in 8 shards",
        "",
    ]
    for kib, times, ratio, speed in rows:
        lines += [f"## records of {kib} KiB", "", "| contender | time | spread |", "|---|---|---|"]
        lines += [f"| {n} | {median(t):.3f} s | {min(t):.3f}-{max(t):.3f} s |" for n, t in times.items()]
        lines += [
            "",
            f"- dataset --verify / sha256 floor: **{ratio:.2f}** (goal <= 1.25)",
            f"- plain files --verify speed / cat speed: **{speed:.2f}** (goal >= 0.5)",
            "",
        ]
    write_results(args.out, lines)


if __name__ == "__main__":
    main()
