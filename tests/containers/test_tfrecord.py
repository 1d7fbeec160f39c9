"""Framing: byte-compatible with TensorFlow both ways, and every corruption named."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfr_convert.containers import Problem
from tfr_convert.containers.compression import detect_compression
from tfr_convert.containers.crc import masked_crc
from tfr_convert.containers.framing import frame
from tfr_convert.containers.scan import read_records, scan_records
from tfr_convert.containers.tfrecord import PIECE_BYTES, QUEUED_BYTES, RecordWriter
from tfr_convert.errors import RecordError

PAYLOADS = [b"", b"a", b"hello world" * 10, bytes(range(256)) * 40]
TF_COMPRESSION = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}


def write_ours(path: Path, payloads, compression="none") -> None:
    with RecordWriter(str(path), compression) as w:
        for p in payloads:
            w.write(frame(p))


def test_masked_crc_known_value():
    # CRC32C("123456789") = 0xE3069283 (the standard check value), then masked
    crc = 0xE3069283
    assert masked_crc(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_unmask_inverts_the_mask_and_the_array_mask_equals_the_single_one():
    import numpy as np

    from tfr_convert.containers.crc import crc32c, mask_array, unmask

    rng = np.random.default_rng(0)
    payloads = [rng.bytes(int(n)) for n in rng.integers(0, 300, 200)] + [b"", b"\x00" * 9, b"\xff" * 31]
    masked = [masked_crc(p) for p in payloads]
    assert [unmask(m) for m in masked] == [crc32c(p) for p in payloads]
    plain = np.array([crc32c(p) for p in payloads] + [0, 0xFFFFFFFF, 1 << 31, 1 << 15], np.uint32)
    assert mask_array(plain).tolist() == [masked_crc(p) for p in payloads] + [
        (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF for c in (0, 0xFFFFFFFF, 1 << 31, 1 << 15)
    ]


def test_the_crc_is_the_extension_loaded_without_the_packages_metadata_lookup():
    """The crc32c package's __init__ looks its version up through importlib.metadata (tens of
    milliseconds at every start): the extension module is loaded by itself instead."""
    import subprocess
    import sys

    code = (
        "import sys, tfr_convert.containers.crc as c; "
        "print('importlib.metadata' in sys.modules, c.crc32c.__module__, c.crc32c(b'123456789'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "crc32c._crc32c", str(0xE3069283)]
    numpy = "import sys, tfr_convert.containers.crc; print('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", numpy], capture_output=True, text=True).stdout.split() == ["False"]


def test_an_extension_that_cannot_load_falls_back_to_the_packages_own_import(tmp_path):
    """A crc32c package whose extension file is broken: its own import is used instead."""
    import importlib.machinery
    import subprocess
    import sys

    fake = tmp_path / "crc32c"
    fake.mkdir()
    (fake / f"_crc32c{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"not a shared object")
    (fake / "__init__.py").write_text("def crc32c(data, value=0):\n    return 7\n")
    code = "import tfr_convert.containers.crc as c; print(c.crc32c.__module__, c.crc32c(b'x'))"
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.split() == ["crc32c", "7"], done.stderr


@pytest.mark.parametrize("compression", ["none", "gzip", "zlib"])
def test_tensorflow_writer_files_read_back(tmp_path, compression):
    path = tmp_path / "tf.tfrecord"
    with tf.io.TFRecordWriter(str(path), options=TF_COMPRESSION[compression]) as w:
        for p in PAYLOADS:
            w.write(p)
    assert detect_compression(path.read_bytes()[:12]) == compression
    assert [r.data for r in read_records(str(path))] == PAYLOADS


@pytest.mark.parametrize("compression", ["none", "gzip", "zlib"])
def test_our_files_read_in_tensorflow(tmp_path, compression):
    path = tmp_path / "ours.tfrecord"
    write_ours(path, PAYLOADS, compression)
    dataset = tf.data.TFRecordDataset(str(path), compression_type=TF_COMPRESSION[compression])
    assert [t.numpy() for t in dataset] == PAYLOADS


def test_plain_bytes_equal_tensorflow_writer(tmp_path):
    theirs = tmp_path / "tf.tfrecord"
    with tf.io.TFRecordWriter(str(theirs)) as w:
        for p in PAYLOADS:
            w.write(p)
    ours = tmp_path / "ours.tfrecord"
    write_ours(ours, PAYLOADS)
    assert ours.read_bytes() == theirs.read_bytes() == b"".join(frame(p) for p in PAYLOADS)


def test_gzip_output_is_reproducible(tmp_path):
    write_ours(tmp_path / "a", PAYLOADS, "gzip")
    write_ours(tmp_path / "b", PAYLOADS, "gzip")
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_every_single_byte_flip_is_detected(tmp_path):
    payloads = [b"first record", b"", b"third"]
    good = b"".join(frame(p) for p in payloads)
    path = tmp_path / "flip.tfrecord"
    for i in range(len(good)):
        for flip in (0x01, 0x80, 0xFF):
            corrupt = bytearray(good)
            corrupt[i] ^= flip
            path.write_bytes(bytes(corrupt))
            with pytest.raises(RecordError) as info:
                list(read_records(str(path), "none"))
            assert str(path) in str(info.value)
            # --verify's one-pass check finds it too, at the same record
            problems = [p for p in scan_records(str(path), "none", payload="check") if isinstance(p, Problem)]
            assert problems and problems[0].index == info.value.index


def _records_at(payloads):
    """(byte offset of each record, the file bytes)."""
    offsets, pos = [], 0
    for p in payloads:
        offsets.append(pos)
        pos += len(frame(p))
    return offsets, b"".join(frame(p) for p in payloads)


@pytest.mark.parametrize(
    ("mutate", "index", "problem"),
    [
        (lambda b, o: b + b"\x00" * 5, 2, "partial header: 5 trailing bytes"),
        (lambda b, o: b[: o[1] + 3], 1, "partial header: 3 trailing bytes"),
        (lambda b, o: b[: o[1]] + bytes([b[o[1]] ^ 1]) + b[o[1] + 1 :], 1, "length CRC mismatch"),
        (lambda b, o: b[: o[1] + 20], 1, "reaches past the end of the file"),
        (lambda b, o: b[: o[1] + 12 + 3] + bytes([b[o[1] + 15] ^ 4]) + b[o[1] + 16 :], 1, "data CRC mismatch"),
        (lambda b, o: b[:-1], 1, "reaches past the end of the file"),
    ],
)
def test_corruptions_name_file_record_and_offset(tmp_path, mutate, index, problem):
    payloads = [b"zero" * 3, b"one" * 5]
    offsets, good = _records_at(payloads)
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(mutate(good, offsets))
    with pytest.raises(RecordError) as info:
        list(read_records(str(path), "none"))
    err = info.value
    offset = offsets[index] if index < len(offsets) else len(good)
    assert (err.index, err.offset) == (index, offset)
    assert str(err).startswith(f"{path}: record {index} at byte offset {offset}: ")
    assert problem in str(err)


def test_huge_length_with_valid_crc_fails_without_allocating(tmp_path):
    # TensorFlow's reader crashes on this; ours must refuse it before reading.
    header = struct.pack("<Q", 1 << 62)
    path = tmp_path / "huge.tfrecord"
    path.write_bytes(frame(b"ok") + header + struct.pack("<I", masked_crc(header)) + b"xx")
    with pytest.raises(RecordError, match=r"record 1 at byte offset 18: length 4611686018427387904 reaches past"):
        list(read_records(str(path)))


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_truncated_compressed_payload(tmp_path, compression):
    path = tmp_path / "c.tfrecord"
    write_ours(path, [b"x" * 5000, b"y" * 5000], compression)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RecordError, match=rf"{path}: record \d at byte offset \d+: "):
        list(read_records(str(path)))


def test_truncated_payload_in_compressed_stream(tmp_path):
    # A length that runs past the data inside a valid gzip stream: no file size to check against.
    import gzip

    body = frame(b"a" * 10)
    header = struct.pack("<Q", 1000)
    path = tmp_path / "t.gz"
    path.write_bytes(gzip.compress(body + header + struct.pack("<I", masked_crc(header)) + b"short", mtime=0))
    with pytest.raises(RecordError, match=r"record 1 at byte offset 26: truncated payload: length 1000"):
        list(read_records(str(path)))


def test_record_offsets_and_empty_file(tmp_path):
    offsets, good = _records_at(PAYLOADS)
    path = tmp_path / "ok.tfrecord"
    path.write_bytes(good)
    assert [(r.index, r.offset) for r in read_records(str(path))] == list(enumerate(offsets))
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    assert list(read_records(str(empty))) == []


@pytest.mark.parametrize("compression", ["none", "gzip", "zlib"])
def test_records_across_read_ahead_blocks(tmp_path, compression):
    # Scans read 1 MiB blocks on a helper thread: records (and headers) straddle
    # block edges, some span several blocks; a flip far into the file is still placed.
    sizes = [1000, 1 << 20, 3_500_000, 0, 70_001, (1 << 20) - 12, 5, 2_000_000]
    payloads = [bytes([i + 1]) * n for i, n in enumerate(sizes)]
    path = tmp_path / "big.tfrecord"
    with tf.io.TFRecordWriter(str(path), TF_COMPRESSION[compression]) as w:
        for p in payloads:
            w.write(p)
    assert [r.data for r in read_records(str(path))] == payloads
    offsets = [r.offset for r in read_records(str(path))]
    assert [i.offset for i in scan_records(str(path), payload="check")] == offsets
    assert [i.offset for i in scan_records(str(path), payload="skip")] == offsets
    if compression == "none":
        data = bytearray(path.read_bytes())
        data[offsets[6] - 3] ^= 0x10  # inside the payload of record 5
        path.write_bytes(bytes(data))
        problems = [p for p in scan_records(str(path), payload="check") if isinstance(p, Problem)]
        assert [(p.index, p.offset, p.kind) for p in problems] == [(5, offsets[5], "data_crc")]


def test_abandoned_scan_stops_its_reader_thread(tmp_path):
    import threading

    path = tmp_path / "many.tfrecord"
    write_ours(path, [bytes(100_000)] * 60, "gzip")  # compressed: read ahead on a thread (plain files are mapped)
    before = threading.active_count()
    records = read_records(str(path))
    assert next(records).index == 0
    assert threading.active_count() == before + 1
    records.close()  # what --head N does after N records
    assert threading.active_count() == before


def test_plain_file_that_shrinks_while_scanned_is_a_problem_not_a_crash(tmp_path):
    # Files are read, not memory-mapped: touching a mapped page that a truncation
    # removed would kill the process (SIGBUS); a read just ends early.
    path = tmp_path / "growing.tfrecord"
    write_ours(path, [bytes([i]) * 1_000_000 for i in range(20)])  # ~20 MB: two windows
    scan = scan_records(str(path), payload="check")
    first = next(scan)
    assert first.index == 0
    with open(path, "r+b") as f:
        f.truncate((16 << 20) + 100)  # the first window stays whole; the second is gone
    rest = list(scan)
    assert isinstance(rest[-1], Problem) and rest[-1].kind in ("truncated_payload", "length_past_eof")
    assert not any(isinstance(r, Problem) for r in rest[:-1])


def test_the_checking_reader_reads_into_page_aligned_blocks():
    """The kernel copies from the page cache at a quarter of its speed into a destination a
    few bytes past a page boundary (where a bytearray's bytes start): the read-ahead's
    blocks start on one."""
    import ctypes
    import mmap

    from tfr_convert.containers.scan import aligned_buffer

    block = aligned_buffer(1 << 20)
    address = ctypes.addressof(ctypes.c_char.from_buffer(block))
    assert address % mmap.PAGESIZE == 0 and len(block) == 1 << 20


def _outline(items):
    """Problems as they are, runs of sound records as their length."""
    out: list = []
    for item in items:
        if isinstance(item, Problem):
            out.append((item.index, item.offset, item.kind))
        else:
            n = item if isinstance(item, int) else 1
            if out and isinstance(out[-1], int):
                out[-1] += n
            else:
                out.append(n)
    return out


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_tally_counts_what_a_check_hands_out_record_by_record(tmp_path, compression):
    # small records of a few lengths (the scan keeps each length's header CRC), a run
    # across read-ahead blocks, a large one, and damage: a payload and a length field
    sizes = [4096] * 700 + [1 << 20] + [17, 4096, 4096, 0] * 50 + [4096] * 300
    path = tmp_path / "f.tfrecord"
    with tf.io.TFRecordWriter(str(path), TF_COMPRESSION[compression]) as w:
        for i, n in enumerate(sizes):
            w.write(bytes([i % 251]) * n)
    if compression == "none":
        offsets = [r.offset for r in read_records(str(path))]
        data = bytearray(path.read_bytes())
        data[offsets[3] + 20] ^= 1  # record 3's payload
        data[offsets[800] + 2] ^= 1  # record 800's length: the scan ends there
        path.write_bytes(bytes(data))

    checked = _outline(scan_records(str(path), payload="check"))
    assert _outline(scan_records(str(path), payload="tally")) == checked
    if compression == "none":
        assert checked[:2] == [3, (3, offsets[3], "data_crc")] and checked[-1][2] == "length_crc"


@pytest.mark.parametrize("seed", range(12))
def test_a_tally_of_equal_records_checked_as_a_run_names_what_a_check_names(tmp_path, seed):
    """Runs of one length (checked together) broken by other lengths, damaged payloads
    anywhere in a run (its first, its last, two side by side), a damaged length field."""
    rng = np.random.default_rng(seed)
    sizes = []
    while len(sizes) < 3000:
        n = int(rng.choice([0, 1, 100, 4096, 5000]))
        sizes += [n] * int(rng.integers(1, 400))
    path = tmp_path / "f.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as w:
        for n in sizes:
            w.write(rng.bytes(n))
    records = list(read_records(str(path)))
    data = bytearray(path.read_bytes())
    damaged = sorted(rng.choice(len(sizes), 12, replace=False).tolist())
    damaged += [damaged[-1] + 1] if damaged[-1] + 1 < len(sizes) else []  # two side by side
    for i in damaged:
        if sizes[i]:
            data[records[i].offset + 12 + int(rng.integers(sizes[i]))] ^= 1 << int(rng.integers(8))
        else:  # no payload: its footer
            data[records[i].offset + 12] ^= 1
    ends = len(sizes) // 2 if seed % 3 == 0 else len(sizes)
    if ends < len(sizes):
        data[records[ends].offset + 1] ^= 4  # a length field: the scan ends there
    path.write_bytes(bytes(data))
    checked = _outline(scan_records(str(path), payload="check"))
    assert _outline(scan_records(str(path), payload="tally")) == checked
    assert [x[0] for x in checked if isinstance(x, tuple) and x[2] == "data_crc"] == [i for i in damaged if i < ends]


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_the_writers_sha256_and_size_are_the_files_whatever_the_size_of_each_write(tmp_path, compression):
    # writes smaller than a piece, spanning pieces, and larger than what may wait queued
    rng = np.random.default_rng(0)
    writes = [rng.bytes(n) for n in (0, 1, PIECE_BYTES - 1, PIECE_BYTES + 1, 3 * PIECE_BYTES, QUEUED_BYTES + 5, 7)]
    path = tmp_path / "f"
    writer = RecordWriter(str(path), compression)
    for data in writes:
        writer.write(memoryview(data))
    writer.close()
    on_disk = path.read_bytes()
    assert writer.sha256() == hashlib.sha256(on_disk).hexdigest()
    assert writer.bytes_written() == len(on_disk)
    if compression == "none":
        assert on_disk == b"".join(writes)


@pytest.mark.parametrize("compression", ["none", "gzip"])
@pytest.mark.parametrize("seed", range(4))
def test_a_digest_scan_names_what_a_keeping_scan_names_with_each_payloads_sha256(tmp_path, compression, seed):
    """The digest scan (read in the caller's thread, each payload hashed where it lies)
    against the keeping one: the same records, offsets and problems, records across
    block edges and larger than a block included, sound files and damaged ones."""
    rng = np.random.default_rng(seed)
    sizes = [int(rng.choice([0, 7, 4096, 70_001, (1 << 20) + 5])) for _ in range(40)]
    path = tmp_path / "f.tfrecord"
    with tf.io.TFRecordWriter(str(path), TF_COMPRESSION[compression]) as w:
        for n in sizes:
            w.write(rng.bytes(n))
    records = list(read_records(str(path)))
    if compression == "none" and seed % 2:
        data = bytearray(path.read_bytes())
        for i in rng.choice(len(sizes), 3, replace=False):
            data[records[i].offset + 12 + (sizes[i] // 2 if sizes[i] else 0)] ^= (
                1  # a payload, or an empty one's footer
            )
        if seed == 3:
            del data[records[30].offset + 5 :]  # cut in a header: the scan ends there
        path.write_bytes(bytes(data))

    def outline(items):
        return [
            (i.index, i.offset, i.kind)
            if isinstance(i, Problem)
            else (i.index, i.offset, hashlib.sha256(i.data).digest())
            for i in items
        ]

    def hashed(items):
        return [(i.index, i.offset, i.kind) if isinstance(i, Problem) else (i.index, i.offset, i.data) for i in items]

    assert hashed(scan_records(str(path), payload="digest")) == outline(scan_records(str(path)))
