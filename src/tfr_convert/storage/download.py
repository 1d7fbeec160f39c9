"""Fetch the public datasets listed in sources.tsv, verified, into a cache.

The table ships inside the package (a copy of the project's reference facts),
so the tool knows every URL, size and checksum without the network. A mirror
(`--mirror`, or TFR_CONVERT_MIRROR) replaces the directory part of each URL,
which is also how the tests point it at a server on 127.0.0.1.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import DownloadError

_PIECE = 1 << 20


@dataclass(frozen=True)
class SourceFile:
    dataset: str
    file: str
    url: str
    size: int | None
    algorithm: str
    digest: str


def source_table() -> list[SourceFile]:
    """The packaged table, or the file named by TFR_CONVERT_SOURCES (same columns):
    for mirrors that serve re-packed files with checksums of their own."""
    override = os.environ.get("TFR_CONVERT_SOURCES")
    if override:
        with open(override, encoding="utf-8") as f:
            text = f.read()
    else:
        # beside this module (package data), read directly: every MNIST run reads this
        # table to name the variant, and importing importlib.resources takes longer
        # than reading the file
        with open(os.path.join(os.path.dirname(__file__), "sources.tsv"), encoding="utf-8") as f:
            text = f.read()
    rows = []
    for row in csv.DictReader(io.StringIO(text), delimiter="\t"):
        algorithm, _, digest = row["checksum"].partition(":")
        size = int(row["size_bytes"]) if row["size_bytes"] else None
        rows.append(SourceFile(row["dataset"], row["file"], row["url"], size, algorithm, digest))
    return rows


def files_of(dataset: str) -> list[SourceFile]:
    """The downloadable files of a dataset (rows with a URL)."""
    return [s for s in source_table() if s.dataset == dataset and s.url]


def default_cache_dir() -> str:
    return os.environ.get("TFR_CONVERT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tfr-convert"
    )


def _digest(path: str, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        while chunk := f.read(_PIECE):
            h.update(chunk)
    return h.hexdigest()


def _verified(path: str, src: SourceFile) -> bool:
    if not os.path.isfile(path):
        return False
    if src.size is not None and os.path.getsize(path) != src.size:
        return False
    return _digest(path, src.algorithm) == src.digest


def fetch(
    dataset: str,
    dest_dir: str,
    mirror: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """Download (or reuse verified copies of) every file of `dataset` into dest_dir."""
    mirror = mirror or os.environ.get("TFR_CONVERT_MIRROR")
    files = files_of(dataset)
    if not files:
        raise DownloadError(f"no download is known for {dataset!r}")
    os.makedirs(dest_dir, exist_ok=True)
    paths = []
    for src in files:
        path = os.path.join(dest_dir, os.path.basename(src.file))
        paths.append(path)
        if _verified(path, src):
            continue
        url = mirror.rstrip("/") + "/" + os.path.basename(src.url) if mirror else src.url
        _download(url, path, src, progress)
    return paths


def _download(url: str, path: str, src: SourceFile, progress: Callable[[int], None] | None) -> None:
    import urllib.error  # here: urllib and http are slow to import, and only downloads need them
    import urllib.request

    part = path + ".part"
    h = hashlib.new(src.algorithm)
    size = 0
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(part, "wb") as out:
            while chunk := response.read(_PIECE):
                if src.size is not None and size + len(chunk) > src.size:
                    raise DownloadError(f"{url}: larger than the expected {src.size} bytes")
                out.write(chunk)
                h.update(chunk)
                size += len(chunk)
                if progress:
                    progress(len(chunk))
        if src.size is not None and size != src.size:
            raise DownloadError(f"{url}: got {size} bytes, expected {src.size}")
        if h.hexdigest() != src.digest:
            raise DownloadError(
                f"{url}: {src.algorithm} checksum {h.hexdigest()} does not match the expected {src.digest}"
            )
        os.replace(part, path)
    except urllib.error.HTTPError as e:
        raise DownloadError(f"{url}: download failed: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise DownloadError(f"{url}: download failed: {getattr(e, 'reason', None) or e}") from None
    finally:
        if os.path.exists(part):
            os.remove(part)
