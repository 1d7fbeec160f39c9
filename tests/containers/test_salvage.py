"""Salvage of damaged TFRecord files (`tfr-convert records --on-error skip`): every sound
record kept, each loss reported with its exact byte range, its raw bytes quarantined;
the reader at the seam (containers/salvage.py) and the command, read back by TensorFlow."""

from __future__ import annotations

import gzip
import json
import random
import zlib
from pathlib import Path

import pytest
from helpers import TESTS

from record_inputs import examples, write_tfrecord
from tfr_convert.containers import Loss
from tfr_convert.containers.salvage import salvage_records

N = 40
DATA_FLIP, LENGTH_FLIP, GARBAGE_BEFORE = 5, 12, 20  # which records are damaged
GARBAGE = bytes(random.Random(7).randrange(256) for _ in range(53))


Losses = list[tuple[int, int, "int | None"]]


def damaged(tmp_path: Path) -> tuple[Path, list[bytes], Losses]:
    """A file TensorFlow wrote, then damaged four ways: a payload byte flipped, a length byte
    flipped, garbage between two records, the last record cut short. Returns it, the
    records that stay sound (in order) and the exact losses (start, end, records)."""
    records = examples(N)
    whole = write_tfrecord(tmp_path / "whole.tfrecord", records).read_bytes()
    starts, at = [], 0
    for r in records:
        starts.append(at)
        at += 12 + len(r) + 4
    assert at == len(whole)
    data = bytearray(whole)
    data[starts[DATA_FLIP] + 12 + 3] ^= 0x20
    data[starts[LENGTH_FLIP] + 1] ^= 0x01
    cut = starts[N - 1] + 12 + 5
    data = data[: starts[GARBAGE_BEFORE]] + GARBAGE + data[starts[GARBAGE_BEFORE] : cut]
    shift = len(GARBAGE)
    path = tmp_path / "damaged-train.tfrecord"
    path.write_bytes(bytes(data))
    sound = [r for i, r in enumerate(records[: N - 1]) if i not in (DATA_FLIP, LENGTH_FLIP)]
    losses = [
        (starts[DATA_FLIP], starts[DATA_FLIP + 1], 1),
        (starts[LENGTH_FLIP], starts[LENGTH_FLIP + 1], 1),
        (starts[GARBAGE_BEFORE], starts[GARBAGE_BEFORE] + shift, None),
        (starts[N - 1] + shift, cut + shift, 1),
    ]
    return path, sound, losses


def salvaged(path: Path) -> tuple[list[bytes], list[Loss]]:
    found = list(salvage_records(str(path)))
    return [r.data for r in found if not isinstance(r, Loss)], [x for x in found if isinstance(x, Loss)]


# ---------------------------------------------------------------- the reader


def test_salvage_keeps_every_sound_record_and_reports_exactly_the_lost_ranges(tmp_path):
    path, sound, losses = damaged(tmp_path)
    kept, lost = salvaged(path)
    assert kept == sound
    assert [(x.start, x.end, x.records) for x in lost] == losses
    data = path.read_bytes()
    assert [x.kept for x in lost] == [data[s:e] for s, e, _ in losses] and all(x.whole for x in lost)
    assert "payload fails its CRC" in lost[0].reason and "length field" in lost[1].reason
    assert "no record" in lost[2].reason and "ends inside a record" in lost[3].reason


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_a_compressed_file_is_salvaged_at_the_offsets_of_its_inflated_stream(tmp_path, compression):
    path, sound, losses = damaged(tmp_path)
    squeeze = gzip.compress if compression == "gzip" else zlib.compress
    packed = tmp_path / f"packed.{compression}"
    packed.write_bytes(squeeze(path.read_bytes()))
    kept, lost = salvaged(packed)
    assert kept == sound and [(x.start, x.end, x.records) for x in lost] == losses


def test_a_compressed_stream_cut_short_keeps_every_record_inflated_before_the_cut(tmp_path):
    records = examples(200)
    whole = write_tfrecord(tmp_path / "whole.tfrecord.gz", records, "gzip").read_bytes()
    cut = tmp_path / "cut.tfrecord.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    kept, lost = salvaged(cut)
    assert len(kept) > 100 and kept == records[: len(kept)]  # all that the cut left, in order
    (loss,) = lost
    assert loss.start == sum(12 + len(r) + 4 for r in kept) and "gzip stream is corrupt" in loss.reason


def test_a_sound_file_salvages_to_all_its_records_and_no_loss(tmp_path):
    records = examples(50)
    kept, lost = salvaged(write_tfrecord(tmp_path / "fine.tfrecord", records))
    assert kept == records and lost == []


# ---------------------------------------------------------------- the command


def test_on_error_skip_writes_every_sound_record_and_reports_each_loss_everywhere(cli, tmp_path):
    tf = pytest.importorskip("tensorflow")
    path, sound, losses = damaged(tmp_path)
    out, quarantine = tmp_path / "out", tmp_path / "quarantine"
    result = cli.convert("records", path, "--out", out, "--no-shuffle", "--on-error", "skip",
                         "--quarantine", quarantine, "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    shards = sorted(str(p) for p in out.glob("*.tfrecord-*"))
    assert [r.numpy() for r in tf.data.TFRecordDataset(shards)] == sound  # TensorFlow reads every record
    expected = [{"file": str(path), "start": s, "end": e, "records": n} for s, e, n in losses]
    report = json.loads(result.stdout)
    manifest = json.loads((out / "manifest.json").read_text())
    for listed in (report["skipped"], manifest["skipped"]):
        assert [{k: x[k] for k in ("file", "start", "end", "records")} for x in listed] == expected
    for s, e, _ in losses:
        assert f"{path}: bytes {s}-{e}:" in result.stderr
    data = path.read_bytes()
    for entry in manifest["skipped"]:
        assert Path(entry["quarantined"]).read_bytes() == data[entry["start"] : entry["end"]]
    assert sorted(p.name for p in quarantine.iterdir()) == sorted(
        f"00000-{path.name}.{s}-{e}.bad" for s, e, _ in losses
    )
    (source,) = manifest["sources"]
    assert source["lost_bytes"] == sum(e - s for s, e, _ in losses) and source["lost_records_known"] == 3


def test_without_on_error_skip_the_first_bad_record_is_exit_1_and_nothing_is_written(cli, tmp_path):
    path, _, losses = damaged(tmp_path)
    result = cli.convert("records", path, "--out", tmp_path / "out", "--quiet")
    assert result.exit_code == 1
    assert f"{path.name}: record {DATA_FLIP} at byte offset {losses[0][0]}" in result.stderr
    assert not (tmp_path / "out").exists()


def test_quarantine_without_on_error_skip_is_a_usage_error(cli, tmp_path):
    path, _, _ = damaged(tmp_path)
    result = cli.convert("records", path, "--out", tmp_path / "out", "--quarantine", tmp_path / "q")
    assert result.exit_code == 2 and "add --on-error skip" in result.stderr
    assert not (tmp_path / "q").exists()


def test_a_quarantine_never_replaces_a_file_and_never_lies_inside_the_output(cli, tmp_path):
    path, _, losses = damaged(tmp_path)
    quarantine = tmp_path / "q"
    quarantine.mkdir()
    s, e, _ = losses[1]
    mine = quarantine / f"00000-{path.name}.{s}-{e}.bad"
    mine.write_bytes(b"my own notes")
    out = tmp_path / "out"
    result = cli.convert("records", path, "--out", out, "--on-error", "skip", "--quarantine", quarantine, "--quiet")
    assert result.exit_code == 1 and f"{mine}: exists already" in result.stderr, result.stderr
    assert mine.read_bytes() == b"my own notes" and not out.exists()
    for inside in (out, out / "bad", tmp_path / "out" / ".." / "out" / "q"):
        result = cli.convert("records", path, "--out", out, "--on-error", "skip", "--quarantine", inside, "--quiet")
        assert result.exit_code == 2 and "lies inside --out" in result.stderr, result.stderr
        assert not out.exists()


def test_a_salvaged_run_writes_the_same_bytes_for_any_worker_count(cli, tmp_path):
    path, _, _ = damaged(tmp_path)
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        result = cli.convert("records", path, "--out", out, "--on-error", "skip", "--workers", workers,
                             "--examples-per-shard", 7, "--quiet")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        outputs.append({p.name: p.read_bytes() for p in out.iterdir() if p.is_file()})
    assert outputs[0] == outputs[1]


def test_a_damaged_array_record_file_under_on_error_skip_is_still_named_and_exit_1(cli, tmp_path):
    pytest.importorskip("array_record.python.array_record_module")
    src = write_tfrecord(tmp_path / "data.tfrecord", examples(300))
    assert cli.convert("records", src, "--out", tmp_path / "ar", "--format", "array_record", "--quiet").exit_code == 0
    (shard,) = (tmp_path / "ar").glob("*.array_record-*")
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    result = cli.convert("records", shard, "--out", tmp_path / "out", "--on-error", "skip", "--quiet")
    assert result.exit_code == 1 and shard.name in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------- bounded salvage


def _limited_run(args, tmp_path, file_limit=64 << 20):
    """tfr-convert in a subprocess that may write no file over `file_limit` bytes (the
    kernel stops it with SIGXFSZ) and address no more than 3 GiB, its temporaries in
    tmp_path/tmp."""
    import resource
    import subprocess
    import sys

    def limits():
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {**__import__("os").environ, "TMPDIR": str(tmp_path / "tmp")}
    peak_rss = TESTS / "peak_rss.py"  # the last line on stderr: peak_rss_mib=N
    return subprocess.run([sys.executable, str(peak_rss), "convert", *map(str, args)], capture_output=True,
                          text=True, timeout=600, preexec_fn=limits, env=env)  # fmt: skip


def _gzip_of(path: Path, head: bytes, zeros: int) -> Path:
    """A gzip file of `head` then `zeros` zero bytes, compressed as it is written."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(packer.compress(head))
        block = bytes(8 << 20)
        for _ in range(zeros // len(block)):
            f.write(packer.compress(block))
        f.write(packer.flush())
    return path


def test_ten_records_then_256_mib_of_zeros_salvage_streaming_in_bounded_memory_and_files(cli, tmp_path):
    import time

    records = examples(10)
    head = write_tfrecord(tmp_path / "head.tfrecord", records).read_bytes()
    packed = _gzip_of(tmp_path / "zeros-train.tfrecord.gz", head, 256 << 20)
    out, quarantine = tmp_path / "out", tmp_path / "quarantine"
    started = time.perf_counter()
    done = _limited_run(["records", packed, "--out", out, "--no-shuffle", "--on-error", "skip", "--quarantine",
                         quarantine, "--json", "--quiet"], tmp_path)  # fmt: skip
    took = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []
    # 16 MiB quarantined, a MiB read at a time: the 256 MiB are never held (about 75 MiB in all)
    assert int(done.stderr.strip().splitlines()[-1].removeprefix("peak_rss_mib=")) < 200
    report = json.loads(done.stdout)
    (loss,) = report["skipped"]
    assert (loss["start"], loss["end"]) == (len(head), len(head) + (256 << 20))
    manifest = json.loads((out / "manifest.json").read_text())
    (entry,) = manifest["skipped"]
    assert entry["quarantined_bytes"] == 16 << 20  # the first 16 MiB of the loss, said so
    assert Path(entry["quarantined"]).read_bytes() == bytes(16 << 20)
    tf = pytest.importorskip("tensorflow")
    shards = sorted(str(p) for p in out.glob("*.tfrecord-*"))
    assert [r.numpy() for r in tf.data.TFRecordDataset(shards)] == records
    print(f"salvaged 10 records past 256 MiB of zeros in {took:.1f} s")


def test_one_huge_record_is_stepped_over_without_holding_or_copying_it(tmp_path):
    import struct

    from tfr_convert.containers.crc import masked_crc

    length = 1 << 30  # a sound header for a 1 GiB record of zeros, a sound record after it
    header = struct.pack("<Q", length)
    header += struct.pack("<I", masked_crc(header))
    after = examples(2)
    tail = write_tfrecord(tmp_path / "tail.tfrecord", after).read_bytes()
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    path = tmp_path / "huge-train.tfrecord.gz"
    with open(path, "wb") as f:
        f.write(packer.compress(header))
        block = bytes(8 << 20)
        for _ in range(length // len(block)):
            f.write(packer.compress(block))
        f.write(packer.compress(struct.pack("<I", masked_crc(b"")) + tail))  # not this payload's CRC: no matter
        f.write(packer.flush())
    done = _limited_run(["records", path, "--out", tmp_path / "out", "--on-error", "skip", "--quarantine",
                         tmp_path / "q", "--json", "--quiet"], tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (loss,) = json.loads(done.stdout)["skipped"]
    assert (loss["start"], loss["end"], loss["records"]) == (0, 12 + length + 4, 1)
    assert "--max-record-size" in loss["reason"]
    assert sum(p.stat().st_size for p in (tmp_path / "q").iterdir()) == 16 << 20
    assert list((tmp_path / "tmp").iterdir()) == []


def test_header_candidates_are_exactly_the_offsets_whose_length_crc_holds():
    from tfr_convert.containers.crc import crc32c, unmask
    from tfr_convert.containers.framing import header
    from tfr_convert.containers.salvage import header_candidates

    rng = random.Random(3)
    for trial in range(40):
        kind = trial % 4
        if kind == 0:  # random bytes with headers planted
            data = bytearray(rng.randbytes(5000))
        elif kind == 1:  # mostly zeros: the constant-window path
            data = bytearray(5000)
            for _ in range(30):
                data[rng.randrange(5000)] = rng.randrange(256)
        elif kind == 2:  # a repeated byte
            data = bytearray([rng.randrange(256)]) * 3000
        else:  # small numbers: many plausible lengths
            data = bytearray(rng.choice([0, 0, 0, 1, 2, 3]) for _ in range(4000))
        for _ in range(5):
            at = rng.randrange(len(data) - 12)
            data[at : at + 12] = header(rng.randrange(1 << 20))
        limit = rng.choice([64 << 20, 1 << 20, 300, 1 << 40])
        want = [
            i
            for i in range(len(data) - 11)
            if int.from_bytes(data[i : i + 8], "little") <= limit
            and crc32c(bytes(data[i : i + 8])) == unmask(int.from_bytes(data[i + 8 : i + 12], "little"))
        ]
        assert header_candidates(bytes(data), limit).tolist() == want, (trial, limit)


def _headers_by_brute_force(window: bytes, max_record: int) -> list[int]:
    from tfr_convert.containers.crc import masked_crc

    return [
        i
        for i in range(len(window) - 11)
        if int.from_bytes(window[i : i + 8], "little") <= max_record
        and masked_crc(window[i : i + 8]) == int.from_bytes(window[i + 8 : i + 12], "little")
    ]


@pytest.mark.parametrize("max_record", [0, 200, 255, 256, 70_000, (1 << 24) + 5, 1 << 31, (1 << 40) + 1])
def test_header_candidates_are_every_offset_a_header_could_start_at(max_record):
    """The numpy search finds exactly the offsets a byte-by-byte search finds: planted
    headers of lengths on either side of --max-record-size, in random bytes, in runs of
    zeros and of one byte (where its shortcuts apply) and at the window's ends."""
    from tfr_convert.containers.crc import masked_crc
    from tfr_convert.containers.salvage import header_candidates

    rng = random.Random(max_record)
    for trial in range(60):
        filler = rng.choice(
            [lambda n: rng.randbytes(n), lambda n: bytes(n), lambda n: bytes([rng.randrange(1, 256)]) * n]
        )
        window = bytearray(filler(rng.randrange(0, 400)))
        for _ in range(rng.randrange(0, 4)):
            length = max(0, max_record + rng.choice([-1, 0, 1, -max_record, rng.randrange(-300, 300)]))
            header = length.to_bytes(8, "little")
            header += masked_crc(header).to_bytes(4, "little")
            at = rng.choice([0, len(window), rng.randrange(len(window) + 1)])
            window[at:at] = header
        if trial % 7 == 0:
            window += bytes(12 * rng.randrange(1, 5))  # a tail of zeros: the "mostly zeros" path
        expected = _headers_by_brute_force(bytes(window), max_record)
        assert header_candidates(bytes(window), max_record).tolist() == expected, (trial, window.hex())


def _salvaged_by_brute_force(data: bytes) -> tuple[list[tuple[int, bytes]], list[tuple[int, int, int | None]]]:
    """(offset, payload) of every sound record and (start, end, records) of every loss,
    found a byte at a time: a sound record is a header whose CRC holds and a payload whose
    CRC holds, the file holding both."""
    from tfr_convert.containers.crc import masked_crc

    def sound_at(at: int) -> int | None:
        if at + 12 > len(data):
            return None
        length = int.from_bytes(data[at : at + 8], "little")
        if masked_crc(data[at : at + 8]) != int.from_bytes(data[at + 8 : at + 12], "little"):
            return None
        end = at + 12 + length + 4
        if end > len(data) or masked_crc(data[at + 12 : end - 4]) != int.from_bytes(data[end - 4 : end], "little"):
            return None
        return end

    def one_record(start: int, end: int) -> int | None:
        """1 where the lost bytes are one record whose header alone is broken."""
        payload = data[start + 12 : end - 4]
        whole = end - start >= 16 and masked_crc(payload) == int.from_bytes(data[end - 4 : end], "little")
        return 1 if whole else None

    records, losses, at = [], [], 0
    while at < len(data):
        end = sound_at(at)
        if end is not None:
            records.append((at, data[at + 12 : end - 4]))
            at = end
            continue
        header_sound = at + 12 <= len(data) and masked_crc(data[at : at + 8]) == int.from_bytes(
            data[at + 8 : at + 12], "little"
        )
        if header_sound:  # a payload that fails, or a file that ends inside the record
            end = min(at + 12 + int.from_bytes(data[at : at + 8], "little") + 4, len(data))
            losses.append((at, end, 1))
            at = end
            continue
        resume = next((i for i in range(at + 1, len(data)) if sound_at(i) is not None), len(data))
        losses.append((at, resume, one_record(at, resume) if at + 12 <= len(data) else None))
        at = resume
    return records, losses


@pytest.mark.parametrize("compression", ["none", "gzip", "zlib", "gzip members"])
def test_salvage_across_read_and_search_windows_finds_what_a_byte_by_byte_search_finds(tmp_path, compression):
    """Files of a few MiB (past the reader's 1 MiB reads and search windows), damaged at
    random (header and payload bytes flipped, garbage put in, bytes cut out, the end cut
    off), salvage to the records and losses a byte-at-a-time search finds."""
    from tfr_convert.containers.framing import frame

    rng = random.Random(17)
    for trial in range(3):
        sizes = [rng.choice([0, 5, *[rng.randrange(40_000, 400_000)] * 3]) for _ in range(24)]
        # half repeat a 20 KB block: matches 20 KB back, which only a full 32 KB window inflates
        payloads = [
            rng.randbytes(n) if i % 2 else (rng.randbytes(20_000) * (n // 20_000 + 1))[:n] for i, n in enumerate(sizes)
        ]
        data = bytearray(b"".join(frame(p) for p in payloads))
        for _ in range(4):
            at = rng.randrange(len(data))
            how = rng.randrange(4)
            if how == 0:
                data[at] ^= 1 << rng.randrange(8)
            elif how == 1:
                data[at:at] = rng.randbytes(rng.randrange(1, 3000))
            elif how == 2:
                del data[at : at + rng.randrange(1, 3000)]
            else:
                del data[len(data) - rng.randrange(1, 20) :]
        path = tmp_path / f"t{trial}.tfrecord"
        plain, half = bytes(data), len(data) // 2
        if compression == "gzip":
            packed = gzip.compress(plain, 1)
        elif compression == "zlib":
            packed = zlib.compress(plain, 1)
        elif compression == "gzip members":
            packed = gzip.compress(plain[:half], 1) + gzip.compress(plain[half:], 1)
        else:
            packed = plain
        path.write_bytes(packed)
        found = list(salvage_records(str(path)))
        records, losses = _salvaged_by_brute_force(bytes(data))
        assert [(r.offset, r.data) for r in found if not isinstance(r, Loss)] == records
        assert [(x.start, x.end, x.records) for x in found if isinstance(x, Loss)] == losses
        assert [r.index for r in found if not isinstance(r, Loss)] == list(range(len(records)))


def test_a_record_above_the_limit_is_a_loss_of_one_record_and_the_next_ones_are_kept(tmp_path):
    from tfr_convert.containers.framing import frame

    payloads = [bytes([1]) * 999, bytes([2]) * 1000, bytes([3]) * 1001, b"after"]
    data = b"".join(frame(p) for p in payloads)
    path = tmp_path / "limit.tfrecord"
    path.write_bytes(data)
    found = list(salvage_records(str(path), max_record=1000))
    kept = [r.data for r in found if not isinstance(r, Loss)]
    lost = [x for x in found if isinstance(x, Loss)]
    assert kept == [payloads[0], payloads[1], b"after"]
    start = 2 * 16 + 999 + 1000
    assert [(x.start, x.end, x.records) for x in lost] == [(start, start + 16 + 1001, 1)]
    assert "a record of 1001 bytes, above the 1000 read whole" in lost[0].reason
    path.write_bytes(data[: start + 500])  # the same record, cut: the file ends inside it
    lost = [x for x in salvage_records(str(path), max_record=1000) if isinstance(x, Loss)]
    assert [(x.start, x.end, x.records, x.reason) for x in lost] == [
        (start, start + 500, 1, "the file ends inside a record")
    ]


def _losses_and_kept(data: bytes, tmp_path: Path, **options) -> tuple[list[tuple[int, int, int | None]], list[bytes]]:
    path = tmp_path / "edge.tfrecord"
    path.write_bytes(data)
    found = list(salvage_records(str(path), **options))
    return [(x.start, x.end, x.records) for x in found if isinstance(x, Loss)], [
        r.data for r in found if not isinstance(r, Loss)
    ]


def test_losses_at_the_edges_of_the_search(tmp_path):
    """One byte of garbage (the search starts a byte on), a few bytes (too few to be a
    record), an empty record whose header is broken (one record lost), a fake header
    claiming more than the file holds, and garbage past a whole search window, with a
    record starting exactly where the second window begins."""
    from tfr_convert.containers.framing import frame
    from tfr_convert.containers.salvage import _WINDOW

    a, b = frame(b"a" * 30), frame(b"b" * 40)
    assert _losses_and_kept(b"\x07" + a + b, tmp_path) == ([(0, 1, None)], [b"a" * 30, b"b" * 40])
    assert _losses_and_kept(a + b"12345" + b, tmp_path) == ([(46, 51, None)], [b"a" * 30, b"b" * 40])
    empty = bytearray(frame(b""))
    empty[9] ^= 0x40  # its length's CRC
    assert _losses_and_kept(bytes(empty) + a, tmp_path) == ([(0, 16, 1)], [b"a" * 30])
    tail = (0xA282EAD8).to_bytes(4, "little")  # the masked CRC of no bytes: 12 of garbage ending so are no record
    assert _losses_and_kept(a + b"12345678" + tail + b, tmp_path) == ([(46, 58, None)], [b"a" * 30, b"b" * 40])
    from tfr_convert.containers.framing import header

    fake = header(10**6)  # a sound header for a record the file cannot hold
    assert _losses_and_kept(b"xy" + fake + a + b, tmp_path) == ([(0, 14, None)], [b"a" * 30, b"b" * 40])
    garbage = bytes(random.Random(3).randbytes(1 + _WINDOW + 1))  # the record starts the second window
    assert _losses_and_kept(b"z" + garbage + a, tmp_path) == ([(0, len(garbage) + 1, None)], [b"a" * 30])
    long_garbage = bytes(random.Random(4).randbytes(2 * _WINDOW + 12345))
    assert _losses_and_kept(a + long_garbage + b, tmp_path) == (
        [(46, 46 + len(long_garbage), None)],
        [b"a" * 30, b"b" * 40],
    )


def test_quarantined_bytes_stop_at_the_cap(tmp_path, monkeypatch):
    from tfr_convert.containers import salvage
    from tfr_convert.containers.framing import frame

    monkeypatch.setattr(salvage, "QUARANTINE_BYTES", 100)
    garbage = random.Random(5).randbytes(1000)
    path = tmp_path / "cap.tfrecord"
    path.write_bytes(frame(b"a") + garbage + frame(b"b"))
    lost = [x for x in salvage_records(str(path)) if isinstance(x, Loss)]
    assert [(x.start, x.end, x.kept) for x in lost] == [(17, 1017, garbage[:100])]


def test_a_corrupt_gzip_stream_keeps_the_records_before_and_names_the_corruption(tmp_path):
    from tfr_convert.containers.framing import frame

    payloads = [random.Random(i).randbytes(50_000) for i in range(8)]
    packed = bytearray(gzip.compress(b"".join(frame(p) for p in payloads), 1))
    packed[len(packed) // 2 :] = bytes(len(packed) - len(packed) // 2)  # zeros: not a deflate block
    path = tmp_path / "corrupt.tfrecord.gz"
    path.write_bytes(bytes(packed))
    found = list(salvage_records(str(path)))
    kept = [r.data for r in found if not isinstance(r, Loss)]
    assert 0 < len(kept) < 8 and kept == payloads[: len(kept)]
    assert isinstance(found[-1], Loss) and "gzip stream is corrupt from here on" in found[-1].reason


def test_a_record_above_the_limit_longer_than_a_read_is_stepped_over_whole(tmp_path):
    """3 MiB over a limit of 1000, read a MiB at a time: one loss of exactly that record,
    and the record after it kept; the same record last in its file is still one above the
    limit, not one the file ends inside."""
    from tfr_convert.containers.framing import frame

    big = frame(bytes(3 << 20))
    path = tmp_path / "big.tfrecord"
    path.write_bytes(frame(b"a") + big + frame(b"b"))
    found = list(salvage_records(str(path), max_record=1000))
    assert [(x.start, x.end, x.records) if isinstance(x, Loss) else x.data for x in found] == [
        b"a",
        (17, 17 + len(big), 1),
        b"b",
    ]
    path.write_bytes(frame(b"a") + big)
    (loss,) = [x for x in salvage_records(str(path), max_record=1000) if isinstance(x, Loss)]
    assert (loss.start, loss.end) == (17, 17 + len(big)) and "above the 1000 read whole" in loss.reason


def test_a_second_gzip_member_starting_exactly_where_a_read_ends_is_read(tmp_path):
    """The first member is 64 KiB to the byte (stored, level 0): when it ends, nothing of the
    next one has been read yet, and the reader must go on reading the file."""
    from tfr_convert.containers.framing import frame

    first = gzip.compress(frame(bytes(65497)), 0)
    assert len(first) == 1 << 16
    path = tmp_path / "members.tfrecord.gz"
    path.write_bytes(first + gzip.compress(frame(b"second"), 0))
    assert [r.data for r in salvage_records(str(path))] == [bytes(65497), b"second"]
