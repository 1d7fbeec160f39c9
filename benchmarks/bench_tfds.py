"""Side by side with TensorFlow Datasets' own `mnist` and `cifar10` builders, on the same files.

    python benchmarks/bench_tfds.py [--repeat 3] [--out benchmarks/tfds.md]

The tool users would otherwise run: `tfds.builder(name).download_and_prepare()`. The
builders download from fixed URLs; here their downloads are the synthetic inputs of
run.py instead (MNIST's four gzipped idx files as they are; CIFAR-10's pixels and labels
as the binary batches TFDS reads, in the tar.gz it expects), placed in the download
directory under the names TFDS gives a verified download, so nothing is fetched. Each
round, interleaved, runs as a fresh process from the same state (common.measure):
  - TFDS's builder (extracting the downloads, then preparing; data and extraction
    directories emptied before each run, as on a first run);
  - `tfr-convert mnist|cifar SRC --layout tfds` (the same features: PNG images, labels);
  - the floor: a Pool(2) PNG-encoding the same images with Pillow's defaults (floors.py).
Prints and writes Markdown: seconds, output size and the ratios.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from common import compile_package, machine, measure, median
from run import CONVERT, FLOORS, make_cifar, make_mnist

_PREPARE = (
    "import sys, tensorflow_datasets as tfds\n"
    "tfds.builder(sys.argv[1], data_dir=sys.argv[2]).download_and_prepare(download_dir=sys.argv[3])\n"
)


def place_download(download_dir: Path, builder: str, files: dict[str, Path]) -> None:
    """Put each file where TFDS looks for a verified download of its URL (by the URL's basename)."""
    import tensorflow_datasets as tfds
    from tensorflow_datasets.core.download import resource

    download_dir.mkdir(parents=True, exist_ok=True)
    for url, info in tfds.builder_cls(builder).url_infos.items():
        target = download_dir / resource.get_dl_fname(url, info.checksum)
        shutil.copyfile(files[url.rsplit("/", 1)[1]], target)
        resource.get_info_path(target).write_text(json.dumps({"urls": [url], "original_fname": info.filename}))


def cifar_binary_tar(src: Path, target: Path) -> None:
    """cifar-10-binary.tar.gz of the pickled batches in src: per image, its label byte, then its 3072 pixels."""
    if target.exists():
        return
    with tarfile.open(target, "w:gz") as tar:
        names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
        members = {"batches.meta.txt": "\n".join(
            n.decode() for n in pickle.loads((src / "batches.meta").read_bytes(), encoding="bytes")[b"label_names"]
        ).encode() + b"\n"}  # fmt: skip
        for name in names:
            batch = pickle.loads((src / name).read_bytes(), encoding="bytes")
            labels = np.asarray(batch[b"labels"], np.uint8)[:, None]
            members[f"{name}.bin"] = np.concatenate([labels, batch[b"data"]], axis=1).tobytes()
        for name, data in members.items():
            info = tarfile.TarInfo(f"cifar-10-batches-bin/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def size_mib(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / (1 << 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tfr-convert-bench" / "full")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "tfds.md")
    args = parser.parse_args()
    compile_package()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    work = args.work
    mnist_src, cifar_src = work / "mnist", work / "cifar-10-batches-py"
    make_mnist(mnist_src, 60_000, 10_000)
    make_cifar(cifar_src, 10_000)
    cifar_tar = work / "cifar-10-binary.tar.gz"
    cifar_binary_tar(cifar_src, cifar_tar)
    downloads = work / "tfds-downloads"
    place_download(downloads, "mnist", {p.name: p for p in mnist_src.glob("*.gz")})
    place_download(downloads, "cifar10", {cifar_tar.name: cifar_tar})
    lines = [f"# TFDS's builders vs tfr-convert --layout tfds ({machine()}; medians of {args.repeat})", "",
             "| dataset | TFDS builder s | tfr-convert s | Pool(2) PNG floor s | TFDS / ours | ours / floor "
             "| TFDS MiB | ours MiB |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, converter, src in (("mnist", "mnist", mnist_src), ("cifar10", "cifar", cifar_src)):
        data_dir, out = work / "tfds-data", work / "o-tfds-side"
        tfds_s, ours_s, floor_s = [], [], []
        for _ in range(args.repeat):  # interleaved rounds
            shutil.rmtree(data_dir, ignore_errors=True)
            shutil.rmtree(downloads / "extracted", ignore_errors=True)
            tfds_s.append(measure([sys.executable, "-c", _PREPARE, name, str(data_dir), str(downloads)],
                                  inputs=[downloads])[0])  # fmt: skip
            shutil.rmtree(out, ignore_errors=True)
            ours_s.append(
                measure([CONVERT, converter, src, "--layout", "tfds", "--out", out, "--quiet"], inputs=[src])[0]
            )
            floor_s.append(measure([sys.executable, FLOORS, "png", converter, src, "--workers", "2"], inputs=[src])[0])
        t, o, f = median(tfds_s), median(ours_s), median(floor_s)
        lines.append(f"| {name} | {t:.2f} | {o:.2f} | {f:.2f} | {t / o:.2f} | {o / f:.2f} "
                     f"| {size_mib(data_dir / name):.0f} | {size_mib(out):.0f} |")  # fmt: skip
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
