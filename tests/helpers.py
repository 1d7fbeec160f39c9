"""Helpers the tests import: synthetic inputs and what-was-left-behind checks."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np

from tfr_convert.converters.base import Converter
from tfr_convert.converters.published.idx import FILES, idx_bytes
from tfr_convert.converters.published.mnist import MnistConverter
from tfr_convert.output.shards import ShardPolicy

TESTS = Path(__file__).resolve().parent  # the helper scripts (kill_at.py, peak_rss.py...) are here
REPO = TESTS.parent


def write_mnist(directory: Path, n_train: int = 40, n_test: int = 12, gz: bool = True, seed: int = 0,
                size: tuple[int, int] = (28, 28)) -> dict[str, tuple[np.ndarray, np.ndarray]]:  # fmt: skip
    """Random MNIST-format idx files; returns {split: (images, labels)}."""
    rng = np.random.default_rng(seed)
    arrays = {
        split: (rng.integers(0, 256, size=(n, *size), dtype=np.uint8), rng.integers(0, 10, size=n, dtype=np.uint8))
        for split, n in (("train", n_train), ("test", n_test))
    }
    write_idx_files(directory, arrays, gz)
    return arrays


def write_idx_files(directory: Path, arrays: dict[str, tuple[np.ndarray, np.ndarray]], gz: bool = True) -> None:
    """{split: (images, labels)} as the four MNIST idx files."""
    directory.mkdir(parents=True, exist_ok=True)
    for split, (images, labels) in arrays.items():
        for what, array in (("images", images), ("labels", labels)):
            data = idx_bytes(array)
            name = FILES[split, what] + (".gz" if gz else "")
            (directory / name).write_bytes(gzip.compress(data, mtime=0) if gz else data)


def final_files(directory: Path) -> list[str]:
    """Every entry of a directory (temporaries included), or [] if it is gone."""
    if not directory.exists():
        return []
    return sorted(p.name for p in directory.iterdir())


def write_cifar(root: Path, variant: str = "cifar10", per_batch: int = 4, archive: bool = False, seed: int = 0) -> dict:
    """Python-2-style CIFAR pickles in root/<folder> (or a .tar.gz of them in root).

    Returns {"path": what to pass as SRC, "train"/"test": (data, [labels per kind]), "names": [names per kind]}.
    """
    import tarfile

    import py2pickle
    from tfr_convert.converters.published.cifar_files import LAYOUTS

    layout = LAYOUTS[variant]
    rng = np.random.default_rng(seed)
    folder = root / layout.folder
    folder.mkdir(parents=True, exist_ok=True)
    names = [[f"{kind.names_key[:-6]}{i}".encode() for i in range(kind.num_classes)] for kind in layout.label_kinds]
    meta = {kind.names_key.encode(): n for kind, n in zip(layout.label_kinds, names, strict=True)}
    (folder / layout.meta).write_bytes(py2pickle.dumps(meta))
    result: dict = {"names": [[n.decode() for n in ns] for ns in names]}
    for split, members in (("train", layout.train), ("test", layout.test)):
        datas, labels = [], [[] for _ in layout.label_kinds]
        for m in members:
            data = rng.integers(0, 256, size=(per_batch, 3072), dtype=np.uint8)
            batch = {b"batch_label": f"{m} of test".encode(), b"data": data}
            for kind, acc in zip(layout.label_kinds, labels, strict=True):
                values = [int(v) for v in rng.integers(0, kind.num_classes, size=per_batch)]
                batch[kind.labels_key.encode()] = values
                acc.extend(values)
            batch[b"filenames"] = [f"img_{m}_{i}.png".encode() for i in range(per_batch)]
            (folder / m).write_bytes(py2pickle.dumps(batch))
            datas.append(data)
        result[split] = (np.concatenate(datas), labels)
    result["path"] = folder
    if archive:
        path = root / layout.archive
        with tarfile.open(path, "w:gz") as tar:
            tar.add(folder, arcname=layout.folder)
        result["path"] = path
    return result


class FailingMnist(MnistConverter):
    """MNIST encoded item by item (no columnar path), with `error` raised for the train item at index 1."""

    def __init__(self, src: str, error: Exception) -> None:
        super().__init__(src)
        self.error = error

    def columns_of(self, items):
        return None

    def features_of(self, item):
        if item == ("train", 1):
            raise self.error
        return super().features_of(item)


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares width x height but carries almost no data (a bomb's header)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    idat = b"IDAT" + zlib.compress(b"\x00" * 64)
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))
        + struct.pack(">I", len(idat) - 4) + idat + struct.pack(">I", zlib.crc32(idat))
    )  # fmt: skip


def write_cifar_binary(root: Path, pickled: dict, variant: str = "cifar10", archive: bool = False) -> Path:
    """The binary version of what write_cifar wrote (same pixels, labels, names), as
    TFDS downloads it: fixed-size records and text name files; returns what to pass as SRC."""
    import tarfile

    from tfr_convert.converters.published.cifar_files import BINARY_LAYOUTS

    layout = BINARY_LAYOUTS[variant]
    folder = root / layout.folder
    folder.mkdir(parents=True, exist_ok=True)
    for name_file, names in zip(layout.names_files, pickled["names"], strict=True):
        (folder / name_file).write_text("".join(n + "\n" for n in names) + "\n")  # a trailing blank line, as shipped
    for split, members in (("train", layout.train), ("test", layout.test)):
        data, labels = pickled[split]
        per_member = len(data) // len(members)
        for k, member in enumerate(members):
            rows = slice(k * per_member, (k + 1) * per_member)
            label_bytes = [np.array(labels[i][rows], np.uint8)[:, None] for i in layout.label_order]
            (folder / member).write_bytes(np.concatenate([*label_bytes, data[rows]], axis=1).tobytes())
    if not archive:
        return folder
    path = root / layout.archive
    with tarfile.open(path, "w:gz") as tar:
        tar.add(folder, arcname=layout.folder)
    return path


EMNIST_LABELS = {"byclass": (0, 62), "bymerge": (0, 47), "balanced": (0, 47), "letters": (1, 27), "digits": (0, 10),
                 "mnist": (0, 10)}  # fmt: skip


def emnist_mapping(variant: str) -> str:
    """A mapping file as NIST publishes it: `label code [code]` (letters: both cases)."""
    from tfr_convert.converters.published.emnist import DEFAULT_NAMES

    first, end = EMNIST_LABELS[variant]
    names = DEFAULT_NAMES[variant]
    return "".join(f"{i} {' '.join(str(ord(c)) for c in names[i])}\n" for i in range(first, end))


def write_emnist(root: Path, variants=("letters",), archive: bool = True, mapping: bool = True, n_train: int = 30,
                 n_test: int = 10, seed: int = 0) -> dict:  # fmt: skip
    """EMNIST in the published layout: `gzip/emnist-V-...-ubyte.gz` and `gzip/emnist-V-mapping.txt`,
    zipped into root/gzip.zip (or left as the extracted folder root/gzip). Returns
    {"path": SRC, variant: {split: (images as stored, labels)}}."""
    import zipfile

    rng = np.random.default_rng(seed)
    files: dict[str, bytes] = {}
    result: dict = {}
    for variant in variants:
        first, end = EMNIST_LABELS[variant]
        result[variant] = {}
        for split, n in (("train", n_train), ("test", n_test)):
            images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
            labels = rng.integers(first, end, size=n, dtype=np.uint8)
            result[variant][split] = (images, labels)
            for kind, array in (("images-idx3", images), ("labels-idx1", labels)):
                files[f"emnist-{variant}-{split}-{kind}-ubyte.gz"] = gzip.compress(idx_bytes(array), mtime=0)
        if mapping:
            files[f"emnist-{variant}-mapping.txt"] = emnist_mapping(variant).encode()
    if archive:
        root.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(root / "gzip.zip", "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in sorted(files.items()):
                z.writestr(f"gzip/{name}", data)
        result["path"] = root / "gzip.zip"
    else:
        (root / "gzip").mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (root / "gzip" / name).write_bytes(data)
        result["path"] = root / "gzip"
    return result


def hint(extra: str) -> str:
    """What a missing extra's message tells this test environment to run: it was installed
    from this checkout, editable (README's Quickstart, .ci/run)."""
    return f"pip install -e '{REPO}[{extra}]'"


class Given(Converter):
    """Encodes nothing and names no source: a test gives it its items (`splits`), or
    gives the engine its plan."""

    command = "given"

    def __init__(self, splits: dict | None = None) -> None:
        self.features, self.labels = {}, {}
        self.splits = splits or {}

    def describe(self, item):
        return str(item)

    def features_of(self, item):
        return {}

    def sources(self):
        return []

    def source_splits(self):
        return self.splits

    def key(self, item):
        return str(item)


def make_clip(path: Path, frames: np.ndarray, rate: int = 10) -> np.ndarray:
    """An FFV1 clip (lossless: it decodes to exactly `frames`)."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("ffv1", rate=rate)
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], "bgr0"
        for frame in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())
    return frames


def shards_by_record(policy: ShardPolicy, sizes: list[int]) -> list[int]:
    """Records per shard when records of these framed sizes are written."""
    counts, current, split_bytes, shard_bytes = [], 0, 0, 0
    for i, size in enumerate(sizes, 1):
        current += 1
        shard_bytes += size
        split_bytes += size
        if policy.closes_after(i, len(sizes), current, shard_bytes, split_bytes):
            counts.append(current)
            current = shard_bytes = 0
    return counts


def write_class_folders(root: Path, classes: list[str], per_class: int, seed: int = 0) -> None:
    """ROOT/CLASS/N.png, small noise pictures (another seed, other pixels)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for name in classes:
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)).save(root / name / f"{i}.png")
