"""--download against a real HTTP server on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import threading
from pathlib import Path

import pytest
from helpers import final_files, write_cifar, write_cifar_binary, write_mnist

from tfr_convert.converters.published.idx import FILES


@pytest.fixture
def server(tmp_path):
    """(served directory, base URL) of a local HTTP server; stopped after the test."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}/files"
    httpd.shutdown()
    httpd.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def translate_path(self, path):  # serve /files/<name> from the root
        return super().translate_path(path.replace("/files/", "/", 1))

    def log_message(self, *args):
        pass


def _table(path: Path, served: Path, dataset: str = "mnist", algorithm: str = "sha256", sizes: bool = True) -> None:
    rows = ["dataset\tfile\turl\tsize_bytes\tchecksum"]
    for f in sorted(p for p in served.iterdir() if p.is_file()):
        digest = hashlib.new(algorithm, f.read_bytes()).hexdigest()
        size = f.stat().st_size if sizes else ""
        rows.append(f"{dataset}\t{f.name}\thttps://example.invalid/data/{f.name}\t{size}\t{algorithm}:{digest}")
    path.write_text("\n".join(rows) + "\n")


def test_download_verifies_caches_and_converts(cli, server, tmp_path, monkeypatch):
    served, base = server
    arrays = write_mnist(served, n_train=20, n_test=6)
    table = tmp_path / "sources.tsv"
    _table(table, served)
    monkeypatch.setenv("TFR_CONVERT_SOURCES", str(table))
    cache = tmp_path / "cache"
    result = cli.convert(
        "mnist", "--download", "--mirror", base, "--cache-dir", cache, "--out", tmp_path / "out", "--json"
    )
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (cache / "mnist").iterdir()) == sorted(v + ".gz" for v in FILES.values())
    assert '"examples": 20' in result.stdout
    # the cache is reused: the server's files can go away
    for f in served.iterdir():
        f.unlink()
    again = cli.convert("mnist", "--download", "--mirror", base, "--cache-dir", cache, "--out", tmp_path / "out2")
    assert again.exit_code == 0, again.stderr
    assert len(arrays["test"][1]) == 6


def test_published_checksums_reject_other_bytes(cli, server, tmp_path):
    served, base = server
    write_mnist(served, n_train=20, n_test=6)
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    result = cli.convert("mnist", "--download", "--mirror", base, "--cache-dir", cache, "--out", out)
    assert result.exit_code == 1
    assert f"error: {base}/train-images-idx3-ubyte.gz: got " in result.stderr
    assert "bytes, expected 9912422" in result.stderr
    assert final_files(cache / "mnist") == [] and final_files(out) == []


def test_checksum_mismatch_of_the_right_size(cli, server, tmp_path, monkeypatch):
    served, base = server
    write_mnist(served, n_train=20, n_test=6)
    table = tmp_path / "sources.tsv"
    _table(table, served)
    victim = served / "train-labels-idx1-ubyte.gz"
    data = bytearray(victim.read_bytes())
    data[-5] ^= 0xFF
    victim.write_bytes(bytes(data))
    monkeypatch.setenv("TFR_CONVERT_SOURCES", str(table))
    result = cli.convert(
        "mnist", "--download", "--mirror", base, "--cache-dir", tmp_path / "c", "--out", tmp_path / "o"
    )
    assert result.exit_code == 1
    assert f"{base}/train-labels-idx1-ubyte.gz: sha256 checksum" in result.stderr and "does not match" in result.stderr
    assert "train-labels-idx1-ubyte.gz" not in final_files(tmp_path / "c" / "mnist")


def test_missing_file_on_the_server(cli, server, tmp_path):
    _, base = server
    result = cli.convert(
        "mnist", "--download", "--mirror", base, "--cache-dir", tmp_path / "c", "--out", tmp_path / "o"
    )
    assert result.exit_code == 1
    assert f"error: {base}/train-images-idx3-ubyte.gz: download failed: HTTP 404" in result.stderr


def test_cifar_download_with_md5_and_no_published_size(cli, server, tmp_path, monkeypatch):
    served, base = server
    src = write_cifar(served, "cifar100", per_batch=3, archive=True)
    shutil.rmtree(served / "cifar-100-python")
    table = tmp_path / "sources.tsv"
    _table(table, served, "cifar100", algorithm="md5", sizes=False)  # like the published cifar100 row
    monkeypatch.setenv("TFR_CONVERT_SOURCES", str(table))
    cache = tmp_path / "cache"
    result = cli.convert("cifar", "--download", "--variant", "cifar100", "--mirror", base, "--cache-dir", cache,
                         "--out", tmp_path / "out")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("cifar100: train 3, test 3 examples")
    assert (cache / "cifar100" / src["path"].name).read_bytes() == (served / src["path"].name).read_bytes()


def test_cifar_download_refuses_an_archive_that_is_not_the_published_one(cli, server, tmp_path):
    served, base = server
    write_cifar(served, "cifar10", per_batch=2, archive=True)
    result = cli.convert(
        "cifar", "--download", "--mirror", base, "--cache-dir", tmp_path / "c", "--out", tmp_path / "o"
    )
    assert result.exit_code == 1
    assert f"error: {base}/cifar-10-python.tar.gz: got " in result.stderr and "expected 170498071" in result.stderr
    assert final_files(tmp_path / "c" / "cifar10") == [] and final_files(tmp_path / "o") == []


@pytest.mark.parametrize("variant", ["cifar10", "cifar100"])
def test_cifar_binary_download_is_checked_and_converts_like_the_pickles(cli, server, tmp_path, monkeypatch, variant):
    served, base = server
    pickled = write_cifar(tmp_path / "py", variant, per_batch=3)
    archive = write_cifar_binary(served, pickled, variant, archive=True)
    table = tmp_path / "sources.tsv"
    _table(table, served, variant + "-binary", algorithm="md5")
    monkeypatch.setenv("TFR_CONVERT_SOURCES", str(table))
    cache = tmp_path / "cache"
    got = cli.convert("cifar", "--download", "--binary", "--variant", variant, "--mirror", base,
                      "--cache-dir", cache, "--out", tmp_path / "bin")  # fmt: skip
    assert got.exit_code == 0, got.stderr
    assert sorted(p.name for p in (cache / f"{variant}-binary").iterdir()) == [archive.name]
    assert cli.convert("cifar", pickled["path"], "--out", tmp_path / "py-out").exit_code == 0
    shards = sorted(p.name for p in (tmp_path / "bin").glob("*.tfrecord-*"))
    assert shards and shards == sorted(p.name for p in (tmp_path / "py-out").glob("*.tfrecord-*"))
    for name in shards:
        assert (tmp_path / "bin" / name).read_bytes() == (tmp_path / "py-out" / name).read_bytes()


def test_the_published_binary_archives_are_the_ones_downloaded(cli, server, tmp_path):
    served, base = server
    pickled = write_cifar(tmp_path / "py", "cifar10", per_batch=2)
    write_cifar_binary(served, pickled, "cifar10", archive=True)
    result = cli.convert("cifar", "--download", "--binary", "--mirror", base, "--cache-dir", tmp_path / "c",
                         "--out", tmp_path / "o")  # fmt: skip
    assert result.exit_code == 1
    assert f"error: {base}/cifar-10-binary.tar.gz: got " in result.stderr and "expected 170052171" in result.stderr
    assert final_files(tmp_path / "c" / "cifar10-binary") == [] and final_files(tmp_path / "o") == []


def test_binary_without_download_is_a_usage_error(cli, tmp_path):
    src = write_cifar(tmp_path / "py", "cifar10", per_batch=2)["path"]
    result = cli.convert("cifar", src, "--binary", "--out", tmp_path / "o")
    assert result.exit_code == 2 and "--binary chooses what --download fetches" in result.stderr
