"""The reading helpers: a hashing reader's digest covers exactly the bytes read, in
order, whether it hashes in place or hands the pieces to a helper thread."""

from __future__ import annotations

import hashlib
import io
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tfr_convert.converters.published.safe_pickle import safe_load
from tfr_convert.storage.reading import HashingReader


@pytest.mark.parametrize("on_a_thread", [False, True])
def test_a_pickle_parsed_through_the_reader_is_hashed_whole_and_in_order(tmp_path, on_a_thread):
    rng = np.random.default_rng(0)
    data = {b"data": rng.integers(0, 256, (300, 3072), dtype=np.uint8), b"labels": list(range(300))}
    path = tmp_path / "batch"
    path.write_bytes(pickle.dumps(data, protocol=2) + b"trailing bytes after the pickle")
    pool = ThreadPoolExecutor(1)
    with open(path, "rb") as f:
        reader = HashingReader(f, hash_on=pool.submit if on_a_thread else None)
        loaded = safe_load(reader)  # the unpickler peeks ahead and reads in pieces of many sizes
        reader.drain()
    pool.shutdown(wait=True)
    assert np.array_equal(loaded[b"data"], data[b"data"]) and loaded[b"labels"] == data[b"labels"]
    assert reader.size == path.stat().st_size
    assert reader.hash.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()


def test_readinto_through_a_thread_hashes_a_copy_of_the_reused_buffer():
    payload = bytes(range(256)) * 1000
    pool = ThreadPoolExecutor(1)
    reader = HashingReader(io.BytesIO(payload), hash_on=pool.submit)
    buf = bytearray(1000)
    while n := reader.readinto(buf):
        buf[:n] = bytes(n)  # the caller scribbles over its buffer at once
    pool.shutdown(wait=True)
    assert reader.size == len(payload)
    assert reader.hash.hexdigest() == hashlib.sha256(payload).hexdigest()
