"""Sound: `tfr-convert audio` (raw samples, 1 worker and every core) against the loop people
write (`soundfile.read` + `tf.train.Example` + `TFRecordWriter`, one file at a time),
interleaved round by round.

    python benchmarks/bench_media.py --clips 2000 --repeat 3

The recordings are made once under --work (seeded): --clips one-second 16 kHz 16-bit
mono WAV files of tones and noise, in 10 class folders (a Speech Commands-like set).
Ours is timed as the whole command (start-up, listing and reading every header,
hashing, metadata); the loop as its bare loop, its imports not counted (it prints its
own time), as in bench_photos.py. Writes the medians, their spread and the goal of
issue 54 (audio >= 5x the loop on 2 cores) to benchmarks/results/media.md.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

from common import SCRIPTS, bench_parser, compile_package, inner_time, machine, measure, median, write_results

CONVERT = str(SCRIPTS / "tfr-convert")

# The loop people write for sound: each file read with soundfile, its samples an
# Int64List, its class from its folder (timed inside).
LOOP = """
import os, sys, time
import soundfile as sf
import tensorflow as tf
src, out = sys.argv[1], sys.argv[2]
t = time.perf_counter()
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
classes = {c: i for i, c in enumerate(sorted({os.path.basename(os.path.dirname(f)) for f in files}))}
with tf.io.TFRecordWriter(out) as writer:
    for path in files:
        samples, rate = sf.read(path, dtype="int16")
        label = classes[os.path.basename(os.path.dirname(path))]
        example = tf.train.Example(features=tf.train.Features(feature={
            "audio": tf.train.Feature(int64_list=tf.train.Int64List(value=samples)),
            "sample_rate": tf.train.Feature(int64_list=tf.train.Int64List(value=[rate])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
        }))
        writer.write(example.SerializeToString())
print(time.perf_counter() - t)
"""


def make_clips(root: Path, count: int) -> None:
    """`count` seeded one-second clips in 10 class folders; made once."""
    done = root.with_name(root.name + ".complete")
    if done.exists():
        return
    script = f"""
import os, numpy as np, soundfile as sf
from multiprocessing import Pool
root = {str(root)!r}
def one(i):
    rng = np.random.default_rng(i)
    t = np.arange(16000) / 16000
    wave = 0.3 * np.sin(2 * np.pi * (200 + 40 * (i % 10)) * t) + rng.normal(0, 0.05, 16000)
    folder = os.path.join(root, f"word{{i % 10}}")
    os.makedirs(folder, exist_ok=True)
    sf.write(os.path.join(folder, f"{{i:06d}}.wav"), (wave * 32767).astype(np.int16), 16000, subtype="PCM_16")
if __name__ == "__main__":
    with Pool() as pool:
        pool.map(one, range({count}), chunksize=64)
"""
    subprocess.run([sys.executable, "-c", script], check=True)
    done.write_text("")


def _ours(src: Path, out: Path, *options: str) -> tuple[float, float]:
    seconds, peak = measure([CONVERT, "audio", src, "--out", out / "ours", "--quiet", *options], inputs=[src])
    return seconds, peak / 1024


def main() -> None:
    parser = bench_parser(__doc__, "media")
    parser.add_argument("--clips", type=int, default=2000)
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    src = work / f"clips-{args.clips}"
    make_clips(src, args.clips)
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    cores = os.cpu_count() or 1
    one, every = "tfr-convert audio (raw), 1 worker", f"tfr-convert audio (raw), {cores} workers"
    loop = "the loop: soundfile.read + tf.train.Example + TFRecordWriter"
    contenders = {
        one: lambda out: _ours(src, out, "--workers", "1"),
        every: lambda out: _ours(src, out, "--workers", str(cores)),
        loop: lambda out: inner_time(LOOP, src, out / "loop.tfrecord"),
    }
    times: dict[str, list[float]] = {}
    rss: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name, run in contenders.items():
            out = work / "out"
            subprocess.run(["rm", "-rf", str(out)], check=True)
            out.mkdir(parents=True)
            seconds, peak = run(out)
            times.setdefault(name, []).append(seconds)
            rss.setdefault(name, []).append(peak)
    m = {name: median(t) for name, t in times.items()}
    lines = [
        f"# Sound ({datetime.date.today()}, {machine()}, medians of {args.repeat}, interleaved)",
        "",
        f"`python benchmarks/bench_media.py --clips {args.clips} --repeat {args.repeat}`",
        "",
        f"{args.clips:,} one-second 16 kHz 16-bit WAV clips in 10 class folders. Ours: the whole command. "
        "The loop: its bare loop, imports not counted. Page cache warm.",
        "",
        "| contender | time | spread | peak RSS |",
        "|---|---|---|---|",
    ]
    for name, t in times.items():
        lines.append(f"| {name} | {m[name]:.2f} s | {min(t):.2f}-{max(t):.2f} s | {median(rss[name]):.0f} MiB |")
    speed = m[loop] / m[every]
    lines += [
        "",
        "## Goals",
        "",
        "| measure | value | goal | met |",
        "|---|---|---|---|",
        f"| the loop's time / ours on {cores} workers | {speed:.2f} | >= 5 | {'yes' if speed >= 5 else '**no**'} |",
        "",
    ]
    write_results(args.out, lines)


if __name__ == "__main__":
    main()
