"""Sound and video: `tfr-convert audio` (raw samples on 1 worker and every core, and
--audio-format bytes) and `tfr-convert video` (JPEG frames, 1 worker and every core),
against the loops people write (`soundfile.read` + `tf.train.Example` +
`TFRecordWriter`, one file at a time; PyAV decode + `tf.io.encode_jpeg` per frame),
interleaved round by round.

    python benchmarks/bench_media.py --clips 2000 --videos 60 --repeat 3

The recordings are made once under --work (seeded): --clips one-second 16 kHz 16-bit
mono WAV files of tones and noise, in 10 class folders (a Speech Commands-like set).
Ours is timed as the whole command (start-up, listing and reading every header,
hashing, metadata); the loop as its bare loop, its imports not counted (it prints its
own time), as in bench_photos.py. The videos: --videos two-second 320x240 H.264 clips
at 25 frames a second (moving noise over a gradient), in 5 class folders; a floor
decodes them with PyAV and encodes every frame with Pillow as ours does (JPEG quality
95, 4:2:0, Pillow's and tf.io.encode_jpeg's default) on a Pool of every core, nothing written. Writes the medians, their spread and
the goals of issue 54 (audio >= 5x the loop on 2 cores; video >= 2x the loop and within
1.5x of the floor) to benchmarks/results/media.md.
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


# The loop people write for clips: each decoded with PyAV, every frame encoded by
# tf.io.encode_jpeg (quality 95), the frames one BytesList (timed inside).
VIDEO_LOOP = """
import os, sys, time
import av
import tensorflow as tf
src, out = sys.argv[1], sys.argv[2]
t = time.perf_counter()
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
classes = {c: i for i, c in enumerate(sorted({os.path.basename(os.path.dirname(f)) for f in files}))}
with tf.io.TFRecordWriter(out) as writer:
    for path in files:
        with av.open(path) as clip:
            frames = [tf.io.encode_jpeg(f.to_ndarray(format="rgb24"), quality=95).numpy() for f in clip.decode(video=0)]
        label = classes[os.path.basename(os.path.dirname(path))]
        example = tf.train.Example(features=tf.train.Features(feature={
            "video": tf.train.Feature(bytes_list=tf.train.BytesList(value=frames)),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
        }))
        writer.write(example.SerializeToString())
print(time.perf_counter() - t)
"""

# The least ours can do: decode and encode every frame with the same libraries and
# settings (one RGB converter per clip, the fastest way PyAV has), on a Pool of every
# core (timed inside).
VIDEO_FLOOR = """
import io, os, sys, time
from multiprocessing import Pool
import av
from av.video.reformatter import VideoReformatter
from PIL import Image
def one(path):
    total = 0
    rgb = VideoReformatter()
    with av.open(path) as clip:
        for frame in clip.decode(video=0):
            buf = io.BytesIO()
            pixels = rgb.reformat(frame, format="rgb24").to_ndarray()
            Image.fromarray(pixels).save(buf, format="JPEG", quality=95, subsampling=2)
            total += len(buf.getvalue())
    return total
if __name__ == "__main__":
    src = sys.argv[1]
    t = time.perf_counter()
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
    with Pool(os.cpu_count()) as pool:
        sum(pool.map(one, files, chunksize=1))
    print(time.perf_counter() - t)
"""


def make_videos(root: Path, count: int) -> None:
    """`count` seeded two-second clips in 5 class folders; made once."""
    done = root.with_name(root.name + ".complete")
    if done.exists():
        return
    script = f"""
import os, numpy as np, av
from multiprocessing import Pool
root = {str(root)!r}
def one(i):
    rng = np.random.default_rng(i)
    folder = os.path.join(root, f"action{{i % 5}}")
    os.makedirs(folder, exist_ok=True)
    base = np.linspace(0, 200, 320)[None, :, None] + np.zeros((240, 320, 3))
    with av.open(os.path.join(folder, f"{{i:05d}}.mp4"), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        for n in range(50):
            picture = base + rng.normal(0, 20, (240, 320, 3))
            picture[60:120, 4 * n : 4 * n + 60] = (200, 40 + 3 * i % 200, 60)
            frame = av.VideoFrame.from_ndarray(np.clip(picture, 0, 255).astype(np.uint8), format="rgb24")
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
if __name__ == "__main__":
    with Pool() as pool:
        pool.map(one, range({count}))
"""
    subprocess.run([sys.executable, "-c", script], check=True)
    done.write_text("")


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


def _ours(command: str, src: Path, out: Path, *options: str) -> tuple[float, float]:
    seconds, peak = measure([CONVERT, command, src, "--out", out / "ours", "--quiet", *options], inputs=[src])
    return seconds, peak / 1024


def _rounds(contenders: dict, work: Path, repeat: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each contender's seconds and peak RSS, round by round."""
    times: dict[str, list[float]] = {}
    rss: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, run in contenders.items():
            out = work / "out"
            subprocess.run(["rm", "-rf", str(out)], check=True)
            out.mkdir(parents=True)
            seconds, peak = run(out)
            times.setdefault(name, []).append(seconds)
            rss.setdefault(name, []).append(peak)
    return times, rss


def _table(times: dict[str, list[float]], rss: dict[str, list[float]]) -> list[str]:
    lines = ["| contender | time | spread | peak RSS |", "|---|---|---|---|"]
    for name, t in times.items():
        memory = f"{median(rss[name]):.0f} MiB" if rss.get(name) and median(rss[name]) else ""
        lines.append(f"| {name} | {median(t):.2f} s | {min(t):.2f}-{max(t):.2f} s | {memory} |")
    return lines


def _goal(measure_: str, value: float, goal: str, met: bool) -> str:
    return f"| {measure_} | {value:.2f} | {goal} | {'yes' if met else '**no**'} |"


def main() -> None:
    parser = bench_parser(__doc__, "media")
    parser.add_argument("--clips", type=int, default=2000)
    parser.add_argument("--videos", type=int, default=60)
    args = parser.parse_args()
    compile_package()
    work = Path(args.work)
    src, videos = work / f"clips-{args.clips}", work / f"videos-{args.videos}"
    make_clips(src, args.clips)
    make_videos(videos, args.videos)
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    cores = os.cpu_count() or 1
    one, every = "tfr-convert audio (raw), 1 worker", f"tfr-convert audio (raw), {cores} workers"
    packed = f"tfr-convert audio --audio-format bytes, {cores} workers"
    loop = "the loop: soundfile.read + tf.train.Example + TFRecordWriter"
    times, rss = _rounds(
        {
            one: lambda out: _ours("audio", src, out, "--workers", "1"),
            every: lambda out: _ours("audio", src, out, "--workers", str(cores)),
            packed: lambda out: _ours("audio", src, out, "--audio-format", "bytes", "--workers", str(cores)),
            loop: lambda out: inner_time(LOOP, src, out / "loop.tfrecord"),
        },
        work,
        args.repeat,
    )
    v_one, v_every = "tfr-convert video (JPEG frames), 1 worker", f"tfr-convert video (JPEG frames), {cores} workers"
    v_loop = "the loop: PyAV decode + tf.io.encode_jpeg per frame + TFRecordWriter"
    v_floor = f"floor: Pool({cores}) PyAV decode + Pillow JPEG encode, nothing written"
    jpeg = ["--frame-format", "jpeg"]
    v_times, v_rss = _rounds(
        {
            v_one: lambda out: _ours("video", videos, out, *jpeg, "--workers", "1"),
            v_every: lambda out: _ours("video", videos, out, *jpeg, "--workers", str(cores)),
            v_loop: lambda out: inner_time(VIDEO_LOOP, videos, out / "loop.tfrecord"),
            v_floor: lambda out: inner_time(VIDEO_FLOOR, videos),
        },
        work,
        args.repeat,
    )
    m = {name: median(t) for name, t in {**times, **v_times}.items()}
    lines = [
        f"# Sound and video ({datetime.date.today()}, {machine()}, medians of {args.repeat}, interleaved)",
        "",
        f"`python benchmarks/bench_media.py --clips {args.clips} --videos {args.videos} --repeat {args.repeat}`",
        "",
        "Ours: the whole command. The loops and the floor: their bare loop, imports not counted. Page cache warm.",
        "",
        f"## {args.clips:,} one-second 16 kHz 16-bit WAV clips in 10 class folders",
        "",
        *_table(times, rss),
        "",
        f"## {args.videos} two-second 320x240 H.264 clips at 25 fps ({args.videos * 50:,} frames) in 5 class folders",
        "",
        *_table(v_times, v_rss),
        "",
        "## Goals",
        "",
        "| measure | value | goal | met |",
        "|---|---|---|---|",
        _goal(
            f"audio (raw): the loop's time / ours on {cores} workers",
            m[loop] / m[every],
            ">= 5",
            m[loop] / m[every] >= 5,
        ),
        _goal(
            f"audio (bytes): the loop's time / ours on {cores} workers",
            m[loop] / m[packed],
            ">= 5",
            m[loop] / m[packed] >= 5,
        ),
        _goal(
            f"video: the loop's time / ours on {cores} workers",
            m[v_loop] / m[v_every],
            ">= 2",
            m[v_loop] / m[v_every] >= 2,
        ),
        _goal(
            f"video: ours on {cores} workers / the floor",
            m[v_every] / m[v_floor],
            "<= 1.5",
            m[v_every] / m[v_floor] <= 1.5,
        ),
        "",
    ]
    write_results(args.out, lines)


if __name__ == "__main__":
    main()
