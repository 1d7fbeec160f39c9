"""The write pool at its seam (storage/pooled_writes.py): files written piece by piece
at their offsets by several threads hold the pieces in order, their digests are the
sha256 of those bytes, an error in any write is the file's, and nothing is left open."""

from __future__ import annotations

import errno
import gc
import hashlib
import os
import random
import weakref

import pytest

from tfr_convert.storage.pooled_writes import PooledFile, WritePool, read_sha256


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_files_written_in_pieces_by_many_threads_hold_the_pieces_in_order_and_hash_as_them(tmp_path, threads):
    rng = random.Random(threads)
    wanted = {}
    before = _open_descriptors()
    with WritePool(threads) as pool:
        files = []
        for n in range(6):  # several files under way at once, as shards closing while the next fills
            path = str(tmp_path / f"f{n}")
            pieces = [rng.randbytes(rng.randint(0, 300_000)) for _ in range(rng.randint(0, 12))]
            f = PooledFile(path, pool)
            for piece in pieces:
                assert f.write(piece) == len(piece)
            f.close()
            files.append(f)
            wanted[path] = b"".join(pieces)
        digests = {f.path: f.sha256() for f in files}
        assert all(f.finished() for f in files)
    for path, data in wanted.items():
        assert open(path, "rb").read() == data
        assert digests[path] == hashlib.sha256(data).hexdigest()
    assert _open_descriptors() == before


def test_a_piece_is_let_go_of_once_written(tmp_path):
    """The pieces are the caller's buffers (a worker's shared slot): held until written, not after."""

    class Buffer(bytearray):
        pass

    with WritePool(2) as pool:
        f = PooledFile(str(tmp_path / "f"), pool)
        piece = Buffer(b"x" * 1000)
        gone = weakref.ref(piece)
        f.write(piece)
        del piece
        f.close()
        f.sha256()
        gc.collect()
        assert gone() is None


def test_a_failing_write_is_the_files_error_at_its_digest_and_its_descriptor_is_closed():
    before = _open_descriptors()
    with WritePool(3) as pool:
        f = PooledFile("/dev/full", pool)  # every write: "No space left on device"
        f.write(b"x" * 5000)
        f.close()
        with pytest.raises(OSError) as raised:
            f.sha256()
        assert raised.value.errno == errno.ENOSPC
    assert _open_descriptors() == before


def test_a_pool_closed_before_its_files_closes_their_descriptors(tmp_path):
    before = _open_descriptors()
    pool = WritePool(2)
    f = PooledFile(str(tmp_path / "left"), pool)
    f.write(b"abc")  # never closed: the run stopped
    pool.close()
    assert _open_descriptors() == before


def test_a_file_shorter_than_was_written_is_an_error_not_a_digest(tmp_path):
    path = tmp_path / "short"
    path.write_bytes(b"abc")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_sha256(fd, 3) == hashlib.sha256(b"abc").hexdigest()
        with pytest.raises(OSError, match="ends at byte 3"):
            read_sha256(fd, 4)
    finally:
        os.close(fd)


def test_a_files_pieces_are_written_one_after_another_in_order(tmp_path, monkeypatch):
    """Never two threads on one file, nor a piece ahead of the one before it (a hole the
    filesystem fills later); different files may be written side by side."""
    import threading
    import time

    real_pwrite, events, lock = os.pwrite, [], threading.Lock()

    def slow_pwrite(fd, data, offset):
        with lock:
            events.append(("start", fd, offset))
        time.sleep(0.002)  # long enough for another thread to start the next piece, were it allowed
        n = real_pwrite(fd, data, offset)
        with lock:
            events.append(("end", fd, offset))
        return n

    monkeypatch.setattr(os, "pwrite", slow_pwrite)
    with WritePool(8) as pool:
        files = [PooledFile(str(tmp_path / f"f{n}"), pool) for n in range(2)]
        for _ in range(20):
            for f in files:
                f.write(b"x" * 1000)
        for f in files:
            f.close()
            f.sha256()
    descriptors = {fd for _, fd, _ in events}
    assert len(descriptors) == 2
    for descriptor in descriptors:
        one_file = [(kind, offset) for kind, fd, offset in events if fd == descriptor]
        assert one_file == [(kind, n * 1000) for n in range(20) for kind in ("start", "end")]


def test_a_system_without_preadv_hashes_with_pread(tmp_path, monkeypatch):
    path = tmp_path / "f"
    data = os.urandom(700_000)
    path.write_bytes(data)
    monkeypatch.delattr(os, "preadv")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_sha256(fd, len(data)) == hashlib.sha256(data).hexdigest()
        with pytest.raises(OSError, match="ends at byte 700000"):
            read_sha256(fd, len(data) + 1)
    finally:
        os.close(fd)
