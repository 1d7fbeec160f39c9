"""The performance benchmark: tfr-convert vs the tutorial loops vs the hardware floor, in one run.

    python benchmarks/run.py [--repeat 3] [--quick] [--out benchmarks/results.md]

Builds synthetic inputs of the real sizes (cached in --work):
  MNIST      60 000 + 10 000 images 28x28 in gzipped idx files (mostly-black digit-like blobs);
  CIFAR-10   50 000 + 10 000 images in six pickled batches;
  images     5 000 JPEGs of 512x384 in 10 class folders, re-encoded to JPEG;
  inspect    a 1 GiB file of 100 KiB records.
and measures, as subprocesses, medians of --repeat rounds, each round running every side
once (ours, the loop, the floor), so that a slow moment of a shared machine cannot
flatter one side:
  (d) MNIST and CIFAR-10 written as ArrayRecord vs as TFRecord, runs interleaved (records/s);
  (a) tfr-convert end to end (default workers: all cores), wall time and peak RSS;
  (b) the tutorial loop (benchmarks/tutorial_loops.py) on the same data, TensorFlow import included;
  (c) the floor: reading / decompressing the input (gzip -dc, cat) plus writing as many
      bytes as tfr-convert wrote (head -c ... /dev/zero).
It prints the ratios against the goals and writes them to --out (Markdown) and a .json beside it.
--quick uses tiny inputs (for the test suite's smoke run): its figures mean nothing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_images import make_images
from bench_inspect import make_file, timed
from common import REPO, SCRIPTS, compile_package, machine, measure, median

CONVERT, INSPECT = str(SCRIPTS / "tfr-convert"), str(SCRIPTS / "tfr-inspect")
LOOPS = str(Path(__file__).resolve().parent / "tutorial_loops.py")
FLOORS = str(Path(__file__).resolve().parent / "floors.py")


# ---------------------------------------------------------------- inputs


def make_mnist(root: Path, n_train: int, n_test: int) -> int:
    """MNIST-like idx files: a blob per class, shifted and noisy on a black background. Returns decompressed bytes."""
    from tfr_convert.converters.published.idx import FILES, idx_bytes

    if (root / "done").exists():
        return int((root / "done").read_text())
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:28, 0:28]
    templates = np.stack(
        [(np.hypot(yy - 14 - 5 * np.sin(c), xx - 14 - 5 * np.cos(c)) < 6 + c % 4).astype(np.float32) for c in range(10)]
    )
    total = 0
    for split, n in (("train", n_train), ("test", n_test)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        ink = templates[labels] * rng.uniform(150, 255, (n, 1, 1))
        noisy = np.where(ink > 0, ink + rng.normal(0, 20, ink.shape), 0)
        images = np.clip(noisy, 0, 255).astype(np.uint8)
        for what, array in (("images", images), ("labels", labels)):
            data = idx_bytes(array)
            total += len(data)
            (root / (FILES[split, what] + ".gz")).write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
    (root / "done").write_text(str(total))
    return total


def make_cifar(root: Path, per_batch: int) -> None:
    """cifar-10-batches-py as the real files are: Python 2 cPickle, protocol 2 (tests/py2pickle.py)."""
    sys.path.insert(0, str(REPO / "tests"))
    import py2pickle

    if (root / "py2").exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    names = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse", b"ship", b"truck"]
    (root / "batches.meta").write_bytes(py2pickle.dumps({b"label_names": names, b"num_vis": 3072}))
    ramp = np.linspace(0, 200, 3072, dtype=np.float32)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = np.clip(ramp * rng.uniform(0.2, 1, (per_batch, 1)) + rng.normal(0, 25, (per_batch, 3072)), 0, 255)
        batch = {
            b"batch_label": name.encode(),
            b"labels": [int(x) for x in rng.integers(0, 10, per_batch)],
            b"data": data.astype(np.uint8),
            b"filenames": [f"{name}_{i}.png".encode() for i in range(per_batch)],
        }
        (root / name).write_bytes(py2pickle.dumps(batch))
    (root / "py2").write_text("written the Python 2 way\n")


# ---------------------------------------------------------------- measuring


def output_bytes(out: Path) -> int:
    return sum(p.stat().st_size for p in out.iterdir() if ".tfrecord" in p.name)


def floor(read_cmd: str, nbytes: int, work: Path, src: Path) -> float:
    """Read/decompress the input (src, from the page cache), then write nbytes: the least
    any converter must do."""
    sink = work / "floor.bin"
    seconds = measure([f"{read_cmd} > /dev/null"], shell=True, inputs=[src])[0]
    seconds += measure([f"head -c {nbytes} /dev/zero > {sink}"], shell=True)[0]
    sink.unlink(missing_ok=True)
    return seconds


def compare(name: str, ours: list[str], tutorial: list[str], read_cmd: str, src: Path, out: Path, work: Path,
            repeat: int, hashing_floor: list[str] | None = None) -> dict:  # fmt: skip
    """Rounds of ours, the tutorial loop, the floor (and `hashing_floor` + [bytes ours wrote])."""
    runs, rss, loops, floors, hashing = [], [], [], [], []
    for _ in range(repeat):  # every side reads src from the page cache (settle)
        shutil.rmtree(out, ignore_errors=True)
        seconds, peak = measure(ours, inputs=[src])
        runs.append(seconds)
        rss.append(peak)
        loops.append(measure(tutorial, inputs=[src])[0])
        floors.append(floor(read_cmd, output_bytes(out), work, src))
        if hashing_floor:
            hashing.append(measure([*hashing_floor, str(output_bytes(out))], inputs=[src])[0])
            (work / "floor.bin").unlink(missing_ok=True)
    result = {
        "ours_s": median(runs),
        "rss_mib": max(rss) / 1024,
        "tutorial_s": median(loops),
        "floor_s": median(floors),
    }
    result["speedup_vs_tutorial"] = result["tutorial_s"] / result["ours_s"]
    result["ours_vs_floor"] = result["ours_s"] / result["floor_s"]
    if hashing:
        result["hashing_floor_s"] = median(hashing)
        result["ours_vs_hashing_floor"] = result["ours_s"] / result["hashing_floor_s"]
    hashed = f"  hashing floor {median(hashing):5.2f} s" if hashing else ""
    print(f"{name:8s} tfr-convert {result['ours_s']:6.2f} s  tutorial {result['tutorial_s']:6.2f} s  "
          f"floor {result['floor_s']:5.2f} s{hashed}  peak RSS {result['rss_mib']:6.0f} MiB", flush=True)  # fmt: skip
    return result


def against_floor(name: str, ours: list, floor_cmd: list, src: Path, out: Path, repeat: int) -> dict:
    """Rounds of ours and of a floor program on the same input: medians and their ratio."""
    runs, floors = [], []
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        runs.append(measure(ours, inputs=[src])[0])
        floors.append(measure(floor_cmd, inputs=[src])[0])
    result = {"ours_s": median(runs), "floor_s": median(floors)}
    result["ours_vs_floor"] = result["ours_s"] / result["floor_s"]
    print(f"{name:24s} tfr-convert {result['ours_s']:6.2f} s  floor {result['floor_s']:6.2f} s  "
          f"({result['ours_vs_floor']:.2f}x)", flush=True)  # fmt: skip
    return result


def make_tiny_pngs(root: Path, mnist_src: Path, count: int) -> None:
    """`count` of the MNIST images as PNG files, in 100 class folders."""
    from PIL import Image

    done = root.with_name(root.name + ".done")  # beside the folder: every file in it is an image
    if done.exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    with gzip.open(mnist_src / "train-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    for i in range(count):
        folder = root / f"class{i % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(images[i % len(images)]).save(folder / f"{i:06d}.png")
    done.write_text(str(count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny inputs: a smoke run, figures meaningless")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tfr-convert-bench"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results.md"))
    args = parser.parse_args()
    compile_package()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    scale = 50 if args.quick else 1
    work = Path(args.work) / ("quick" if args.quick else "full")
    work.mkdir(parents=True, exist_ok=True)
    print(f"# {machine()}; medians of {args.repeat}{' (QUICK: tiny inputs)' if args.quick else ''}", flush=True)
    results: dict = {"machine": machine(), "repeat": args.repeat, "quick": args.quick}

    mnist_src = work / "mnist"
    raw = make_mnist(mnist_src, 60_000 // scale, 10_000 // scale)
    results["mnist"] = compare(
        "MNIST", [CONVERT, "mnist", mnist_src, "--out", work / "o-mnist", "--quiet"],
        [sys.executable, LOOPS, "mnist", mnist_src, work / "t-mnist"],
        f"gzip -dc {mnist_src}/*.gz", mnist_src, work / "o-mnist", work, args.repeat,
    )  # fmt: skip
    results["mnist"]["rss_vs_input"] = results["mnist"]["rss_mib"] * (1 << 20) / raw

    cifar_src = work / "cifar-10-batches-py"
    make_cifar(cifar_src, 10_000 // scale)
    results["cifar10"] = compare(
        "CIFAR-10", [CONVERT, "cifar", cifar_src, "--out", work / "o-cifar", "--quiet"],
        [sys.executable, LOOPS, "cifar", cifar_src, work / "t-cifar"],
        f"cat {cifar_src}/*", cifar_src, work / "o-cifar", work, args.repeat,
        hashing_floor=[sys.executable, FLOORS, "cifar-hash", str(cifar_src), str(work / "floor.bin")],
    )  # fmt: skip

    results["array_record"] = {}
    for key, converter, src, n in (("mnist", "mnist", mnist_src, 70_000 // scale),
                                   ("cifar10", "cifar", cifar_src, 60_000 // scale)):  # fmt: skip
        times: dict[str, list[float]] = {"tfrecord": [], "array_record": []}
        for _ in range(args.repeat):
            for file_format, acc in times.items():  # interleaved: a slow moment cannot flatter one side
                out = work / f"o-{key}-{file_format}"
                shutil.rmtree(out, ignore_errors=True)
                argv = [CONVERT, converter, src, "--out", out, "--quiet", "--format", file_format]
                acc.append(measure(argv, inputs=[src])[0])
        row = {f: n / median(t) for f, t in times.items()}
        row["ratio"] = row["array_record"] / row["tfrecord"]
        results["array_record"][key] = row
        print(f"{key:8s} records/s: TFRecord {row['tfrecord']:,.0f}  ArrayRecord {row['array_record']:,.0f}  "
              f"({row['ratio']:.2f})", flush=True)  # fmt: skip

    results["tfds_layout"] = {}
    for key, converter, src in (("mnist", "mnist", mnist_src), ("cifar10", "cifar", cifar_src)):
        results["tfds_layout"][key] = against_floor(
            f"{key} --layout tfds", [CONVERT, converter, src, "--layout", "tfds", "--out", work / "o-tfds", "--quiet"],
            [sys.executable, FLOORS, "png", converter, src, "--workers", "2"], src, work / "o-tfds", args.repeat,
        )  # fmt: skip

    tiny = work / "tiny-pngs"
    tiny_count = 40_000 // scale
    make_tiny_pngs(tiny, mnist_src, tiny_count)
    results["keep"] = against_floor(
        f"keep, {tiny_count} tiny PNGs", [CONVERT, "images", tiny, "--out", work / "o-keep", "--quiet", "--workers", "2"],
        [sys.executable, FLOORS, "decode", tiny, "--workers", "2"], tiny, work / "o-keep", args.repeat,
    )  # fmt: skip

    images_src = work / "images"
    count, size = (5000, (512, 384)) if not args.quick else (40, (128, 96))
    make_images(images_src, count, size)
    one, two, loops = [], [], []
    for _ in range(args.repeat):  # interleaved: 1 worker, 2 workers, the loop, then again
        for workers, acc in ((1, one), (2, two)):
            shutil.rmtree(work / "o-images", ignore_errors=True)
            acc.append(measure([CONVERT, "images", images_src, "--out", work / "o-images", "--quiet",
                                "--image-format", "jpeg", "--quality", "90", "--workers", str(workers)],
                               inputs=[images_src]))  # fmt: skip
        loops.append(measure([sys.executable, LOOPS, "images", images_src, work / "t-images"], inputs=[images_src])[0])
    subset = work / "images-subset.csv"
    files = sorted(str(p.relative_to(images_src)) for p in images_src.rglob("*.jpg"))
    subset.write_text("path\n" + "\n".join(files[: max(len(files) // 5, 1)]) + "\n")
    shutil.rmtree(work / "o-images-subset", ignore_errors=True)
    small_rss = measure([CONVERT, "images", images_src, "--labels", subset, "--out", work / "o-images-subset",
                         "--quiet", "--image-format", "jpeg", "--workers", "2"])[1]  # fmt: skip
    loop = median(loops)
    results["images"] = {
        "images": count,
        "workers1_s": median([t for t, _ in one]),
        "workers2_s": median([t for t, _ in two]),
        "tutorial_s": loop,
        "rss_mib_all": max(r for _, r in two) / 1024,
        "rss_mib_fifth": small_rss / 1024,
    }
    images = results["images"]
    images["speedup_2_vs_1"] = images["workers1_s"] / images["workers2_s"]
    images["speedup_vs_tutorial"] = images["tutorial_s"] / images["workers2_s"]
    images["rss_all_vs_fifth"] = images["rss_mib_all"] / images["rss_mib_fifth"]
    print(f"images   workers 1 {images['workers1_s']:6.2f} s  workers 2 {images['workers2_s']:6.2f} s  "
          f"tutorial {images['tutorial_s']:6.2f} s  RSS {images['rss_mib_fifth']:.0f} -> {images['rss_mib_all']:.0f} MiB",
          flush=True)  # fmt: skip

    big = work / "verify.tfrecord"
    make_file(big, (1 << 30) // scale, 100 << 10)
    subprocess.run(["cat", str(big)], check=True, stdout=subprocess.DEVNULL)
    cats, verifies = [], []
    for _ in range(args.repeat):  # interleaved, as everywhere here
        cats.append(timed(["cat", str(big)], 1))
        verifies.append(timed([INSPECT, "--verify", str(big)], 1))
    cat_s, verify_s = median(cats), median(verifies)
    results["verify"] = {"gib": big.stat().st_size / (1 << 30), "cat_s": cat_s, "verify_s": verify_s,
                         "fraction_of_cat": cat_s / verify_s}  # fmt: skip
    print(f"verify   {results['verify']['gib']:.2f} GiB: cat {cat_s:.3f} s  tfr-inspect --verify {verify_s:.3f} s",
          flush=True)  # fmt: skip

    goals = [
        ("MNIST vs tutorial loop", results["mnist"]["speedup_vs_tutorial"], ">= 6x", results["mnist"]["speedup_vs_tutorial"] >= 6),
        ("MNIST vs floor", results["mnist"]["ours_vs_floor"], "<= 1.5x", results["mnist"]["ours_vs_floor"] <= 1.5),
        ("MNIST peak RSS / decompressed input", results["mnist"]["rss_vs_input"], "<= 3x", results["mnist"]["rss_vs_input"] <= 3),
        ("CIFAR-10 vs tutorial loop", results["cifar10"]["speedup_vs_tutorial"], ">= 6x", results["cifar10"]["speedup_vs_tutorial"] >= 6),
        ("CIFAR-10 vs floor (read + write)", results["cifar10"]["ours_vs_floor"], "(was <= 3x)", None),
        ("CIFAR-10 vs hashing floor (read + sha256 + unpickle + write + sha256)",
         results["cifar10"]["ours_vs_hashing_floor"], "<= 1.5x", results["cifar10"]["ours_vs_hashing_floor"] <= 1.5),
        ("MNIST --layout tfds vs Pool(2) PNG encode", results["tfds_layout"]["mnist"]["ours_vs_floor"], "<= 1.3x",
         results["tfds_layout"]["mnist"]["ours_vs_floor"] <= 1.3),
        ("CIFAR-10 --layout tfds vs Pool(2) PNG encode", results["tfds_layout"]["cifar10"]["ours_vs_floor"], "<= 1.3x",
         results["tfds_layout"]["cifar10"]["ours_vs_floor"] <= 1.3),
        ("keep mode, tiny PNGs in 100 folders, 2 workers vs Pool(2) decode", results["keep"]["ours_vs_floor"], "<= 1.3x",
         results["keep"]["ours_vs_floor"] <= 1.3),
        ("images: 2 workers vs 1", images["speedup_2_vs_1"], ">= 1.7x", images["speedup_2_vs_1"] >= 1.7),
        ("images: peak RSS all / one fifth", images["rss_all_vs_fifth"], "flat (<= 1.2x)", images["rss_all_vs_fifth"] <= 1.2),
        ("--verify speed / cat speed", results["verify"]["fraction_of_cat"], ">= 0.5", results["verify"]["fraction_of_cat"] >= 0.5),
    ]  # fmt: skip
    results["goals"] = [{"measure": m, "value": round(v, 3), "goal": g, "met": ok} for m, v, g, ok in goals]
    lines = [f"Machine: {results['machine']}. Medians of {args.repeat} runs"
             f"{' — QUICK smoke run, figures meaningless' if args.quick else ''}.", "",
             "| measure | value | goal | met |", "|---|---|---|---|"]  # fmt: skip
    for m, v, g, ok in goals:
        lines.append(f"| {m} | {v:.2f} | {g} | {'' if ok is None else 'yes' if ok else 'NO'} |")
    lines += ["", "| run | tfr-convert | tutorial loop | floor | peak RSS |", "|---|---|---|---|---|"]
    for key in ("mnist", "cifar10"):
        r = results[key]
        hashing = f" (hashing floor {r['hashing_floor_s']:.2f} s)" if "hashing_floor_s" in r else ""
        lines.append(f"| {key} | {r['ours_s']:.2f} s | {r['tutorial_s']:.2f} s | {r['floor_s']:.2f} s{hashing} "
                     f"| {r['rss_mib']:.0f} MiB |")  # fmt: skip
    for key, r in results["tfds_layout"].items():
        lines.append(f"| {key} --layout tfds | {r['ours_s']:.2f} s | | {r['floor_s']:.2f} s (Pool(2) PNG encode) | |")
    r = results["keep"]
    lines.append(
        f"| images, {tiny_count} tiny PNGs, keep | {r['ours_s']:.2f} s | | {r['floor_s']:.2f} s (Pool(2) decode) | |"
    )
    lines.append(f"| images ({count}, JPEG re-encode) | {images['workers2_s']:.2f} s (1 worker: {images['workers1_s']:.2f} s) "
                 f"| {images['tutorial_s']:.2f} s | | {images['rss_mib_all']:.0f} MiB |")  # fmt: skip
    lines += ["", "| writing (records/s) | TFRecord | ArrayRecord | ArrayRecord / TFRecord |", "|---|---|---|---|"]
    for key, row in results["array_record"].items():
        lines.append(f"| {key} | {row['tfrecord']:,.0f} | {row['array_record']:,.0f} | {row['ratio']:.2f} |")
    report = "\n".join(lines) + "\n"
    print("\n" + report)
    Path(args.out).write_text(report)
    Path(args.out).with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
