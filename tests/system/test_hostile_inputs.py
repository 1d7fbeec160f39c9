"""Hostile inputs: each refused (or reported) in one line naming where, in bounded time and memory.

Memory is measured for real: `peak_rss.py` runs the command in a child process
and reports its peak resident set, so "bounded" here means the declared sizes
(gigabytes) never become allocations.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from helpers import TESTS, png_header_only, write_cifar, write_mnist
from PIL import Image

from tfr_convert.containers.crc import masked_crc
from tfr_convert.converters.published.idx import FILES
from tfr_convert.converters.published.safe_pickle import UnsafePickleError, safe_load
from tfr_convert.dataset.wire.example import serialize
from tfr_convert.inspect.summary import SAMPLE
from tfr_convert.skips import LISTED

HERE = TESTS
RSS_BOUND_MIB = 64  # what tfr-inspect may hold, whatever a length field declares


def measured(command: str, *args) -> tuple[subprocess.CompletedProcess, float]:
    """Run tfr-convert / tfr-inspect in a child process: (its result, its peak RSS in MiB)."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "peak_rss.py"), command, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("peak_rss_mib="), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, float(last.split("=")[1])


def header(length: int) -> bytes:
    head = struct.pack("<Q", length)
    return head + struct.pack("<I", masked_crc(head))


# ---------------------------------------------------------------- pickles


def laughs(levels: int) -> list:
    """Ten references to the previous list, `levels` deep: a few hundred bytes pickled."""
    value: list = [1]
    for _ in range(levels):
        value = [value] * 10
    return value


def test_a_pickle_of_shared_references_is_resolved_once_per_object():
    data = pickle.dumps({b"data": laughs(10), b"labels": laughs(10)}, protocol=2)
    assert len(data) < 1000  # a few hundred bytes standing for 10**10 references
    proc = subprocess.run(  # in a child with a deadline: the old walk took 10**10 steps
        [sys.executable, "-c", "import sys; from tfr_convert.converters.published.safe_pickle import safe_load; "
         "r = safe_load(sys.stdin.buffer.read()); v = r[b'data']; print(v[0] is v[9], len(v))"],
        input=data, capture_output=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [b"True", b"10"]  # sharing kept, not copied out


def test_a_cifar_batch_of_shared_references_fails_fast_with_bounded_memory(tmp_path):
    src = write_cifar(tmp_path / "src")["path"]
    batch = Path(src) / "data_batch_1"
    batch.write_bytes(pickle.dumps({b"data": np.zeros((10, 3072), np.uint8), b"labels": laughs(10)}, protocol=2))
    proc, peak = measured("convert", "cifar", src, "--out", tmp_path / "out")
    assert proc.returncode == 1
    assert f"{batch}: labels[0] = [[[" in proc.stderr and "is not a class index" in proc.stderr
    assert peak < 200


def test_a_pickle_holding_itself_is_refused():
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(UnsafePickleError, match="holds itself"):
        safe_load(pickle.dumps({b"x": cycle}, protocol=2))


@pytest.mark.parametrize(
    "batch, message",
    [
        # a dict key 5,000 frozensets deep: its repr alone would overflow the stack
        (
            b"\x80\x04}" + b"(" * 5000 + b"\x91" * 5000 + b"K\x01s.",
            "unexpected key frozenset({frozenset({frozenset({",
        ),
        (None, "labels[0] = an integer of 16610 bits is not a class index"),
    ],
    ids=["deep frozenset key", "5000-digit label"],
)
def test_unprintable_pickle_values_are_described_not_printed(cli, tmp_path, batch, message):
    src = write_cifar(tmp_path / "src")["path"]
    if batch is None:
        batch = pickle.dumps({b"data": np.zeros((4, 3072), np.uint8), b"labels": [10**5000] * 4}, protocol=2)
    (Path(src) / "data_batch_1").write_bytes(batch)
    result = cli.convert("cifar", src, "--out", tmp_path / "out")
    assert result.exit_code == 1 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------- CIFAR archives


def zero_archive(path: Path, members: dict[str, int]) -> None:
    """A .tar.gz whose members are runs of zeros of the given sizes (a few MB compressed)."""

    class Zeros(io.RawIOBase):
        def __init__(self, n: int) -> None:
            self.left = n

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:
            k = min(len(b), self.left)
            b[:k] = bytes(k)
            self.left -= k
            return k

    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, size in members.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = size
            tar.addfile(info, io.BufferedReader(Zeros(size), 1 << 20))


def test_archive_members_are_capped_each_and_in_total(tmp_path):
    one = tmp_path / "one" / "cifar-10-python.tar.gz"
    one.parent.mkdir()
    zero_archive(one, {"data_batch_1": 300 << 20})
    proc, peak = measured("convert", "cifar", one, "--out", tmp_path / "o1")
    assert proc.returncode == 1 and "data_batch_1: larger than any CIFAR file (314572800 bytes" in proc.stderr
    assert peak < 100  # refused from the header, before reading
    many = tmp_path / "many" / "cifar-10-python.tar.gz"
    many.parent.mkdir()
    zero_archive(many, {f"data_batch_{i}": 200 << 20 for i in range(1, 6)})
    proc, peak = measured("convert", "cifar", many, "--out", tmp_path / "o2")
    assert proc.returncode == 1, proc.stderr
    assert "data_batch_3: the CIFAR files reach 629145600 bytes with this one" in proc.stderr
    assert peak < 512 + 256 + 64  # the total cap, one member being read, the interpreter


def test_a_duplicate_archive_member_is_refused(cli, tmp_path):
    src = write_cifar(tmp_path / "src", archive=True)["path"]
    with tarfile.open(src) as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]
    with tarfile.open(src, "w:gz") as tar:
        for m, data in [*members, next((m, d) for m, d in members if m.name.endswith("test_batch"))]:
            tar.addfile(m, io.BytesIO(data) if data is not None else None)
    result = cli.convert("cifar", src, "--out", tmp_path / "out")
    assert result.exit_code == 1 and "test_batch: a second test_batch in the archive" in result.stderr


# ---------------------------------------------------------------- idx


def idx_header(magic: int, *dims: int) -> bytes:
    return struct.pack(f">I{len(dims)}I", magic, *dims)


@pytest.mark.parametrize(
    "images, message",
    [
        (idx_header(2051, 0, 28, 28), "byte 4: the idx header declares 0 images"),
        # 64 * 2**29 * 2**29 = 2**64: a product that wrapped to 0 in 64 bits
        (idx_header(2051, 64, 1 << 29, 1 << 29) + bytes(100), "declares 64x536870912x536870912 = 18446744073709551616"),
    ],
    ids=["zero images", "dimensions overflowing 64 bits"],
)
def test_idx_headers_that_declare_nothing_or_too_much_are_refused(cli, tmp_path, images, message):
    write_mnist(tmp_path, n_train=64, n_test=64, gz=False)
    for split in ("train", "test"):
        (tmp_path / FILES[split, "images"]).write_bytes(images)
    result = cli.convert("mnist", tmp_path, "--out", tmp_path / "out")
    assert result.exit_code == 1 and message in result.stderr, result.stderr


def test_a_gzip_inflating_past_its_idx_header_says_so(cli, tmp_path):
    write_mnist(tmp_path, gz=True)
    path = tmp_path / (FILES["test", "labels"] + ".gz")
    data = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(data + bytes(8 << 20), mtime=0))  # 8 MiB more than declared: past one slice
    result = cli.convert("mnist", tmp_path, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{path}: decompressed data expands past the {len(data)} bytes its idx header implies" in result.stderr


# ---------------------------------------------------------------- CSVs


def image_folder(root: Path, n: int = 3) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.fromarray(np.full((4, 4, 3), i, np.uint8)).save(root / f"{i}.png")


@pytest.mark.parametrize("on_error", ["fail", "skip"])
@pytest.mark.parametrize(
    "rows, line, column",
    [("0.png,1\n1.p\0ng,2\n", 3, 4), ("0.png,1\n1.png,2\0\n", 3, 8)],
    ids=["in a path", "in a value"],
)
def test_a_nul_byte_in_a_csv_is_refused_naming_its_line(cli, tmp_path, on_error, rows, line, column):
    image_folder(tmp_path / "img")
    csv = tmp_path / "labels.csv"
    csv.write_text("path,label\n" + rows)
    result = cli.convert("images", tmp_path / "img", "--labels", csv, "--out", tmp_path / "out", "--on-error", on_error)
    assert result.exit_code == 1, result.stderr
    assert f"{csv}: line {line}: a NUL byte at column {column}" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_an_unclosed_quote_is_refused_naming_the_line_it_opens(cli, tmp_path):
    image_folder(tmp_path / "img")
    csv = tmp_path / "labels.csv"
    csv.write_text('path,label\n0.png,cat\n1.png,"dog\n2.png,cat\n')
    result = cli.convert("images", tmp_path / "img", "--labels", csv, "--out", tmp_path / "out")
    assert result.exit_code == 1 and f"{csv}: line 3: a quote opened here is never closed" in result.stderr
    csv.write_text('path,label\n0.png,"cat\n1.png,dog"\n2.png,cat\n')  # closed a row later: one label holding a row
    result = cli.convert("images", tmp_path / "img", "--labels", csv, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{csv} line 2: the label value runs over several lines (a quote left open?)" in result.stderr


def test_sparse_integer_labels_are_refused_instead_of_millions_of_names(cli, tmp_path):
    image_folder(tmp_path / "img")
    csv = tmp_path / "labels.csv"
    csv.write_text("path,label\n0.png,0\n1.png,10000000\n2.png,3\n")
    proc, peak = measured("convert", "images", tmp_path / "img", "--labels", csv, "--label-column", "label",
                          "--out", tmp_path / "out")  # fmt: skip
    assert proc.returncode == 1
    assert "--label-column label: integers up to 10000000 but only 3 distinct values" in proc.stderr
    assert "Leave out --label-column" in proc.stderr
    assert peak < 200
    csv.write_text("path,label\n0.png,0\n1.png,9\n2.png,3\n")  # dense enough: class indices as before
    assert cli.convert("images", tmp_path / "img", "--labels", csv, "--label-column", "label",
                       "--out", tmp_path / "ok").exit_code == 0  # fmt: skip
    assert len((tmp_path / "ok" / "label.labels.txt").read_text().splitlines()) == 10


def test_a_number_of_5000_digits_is_a_string_not_a_traceback(cli, tmp_path):
    image_folder(tmp_path / "img", 2)
    csv = tmp_path / "labels.csv"
    csv.write_text(f"path,big\n0.png,{'9' * 5000}\n1.png,1\n")
    result = cli.convert("images", tmp_path / "img", "--labels", csv, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    features = json.loads((tmp_path / "out" / "features.json").read_text())["featuresDict"]["features"]
    assert features["big"]["tensor"]["dtype"] == "string"


def test_a_hundred_thousand_skipped_rows_are_reported_in_proportion(tmp_path):
    image_folder(tmp_path / "img", 2)
    csv = tmp_path / "labels.csv"
    csv.write_text("path,n\n0.png,0\n1.png,1\n" + "0.png,2\n" * 100_000)
    out = tmp_path / "out"
    proc, peak = measured("convert", "images", tmp_path / "img", "--labels", csv, "--out", out, "--on-error", "skip")
    assert proc.returncode == 0, proc.stderr
    assert "(100000 skipped, listed in manifest.json)" in proc.stdout
    lines = proc.stderr.splitlines()
    assert sum(line.startswith("skipped: ") for line in lines) == LISTED + 1
    assert f"skipped: ... and {100_000 - LISTED} more" in proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["skipped"]) == LISTED and manifest["skipped_total"] == 100_000
    assert manifest["skipped_by_kind"] == {"duplicate row: '…' is already on line N": 100_000}
    assert (out / "manifest.json").stat().st_size < 50_000
    assert peak < 300


def test_skips_are_the_same_from_both_engines_and_after_the_first_hundred(cli, tmp_path):
    pytest.importorskip("apache_beam", reason="the [beam] extra is not installed")
    image_folder(tmp_path / "img", 2)
    csv = tmp_path / "labels.csv"
    csv.write_text("path,n\n0.png,0\n1.png,1\n" + "".join(f"missing{i}.png,{i}\n" for i in range(150)))
    manifests = []
    for engine in ("local", "beam"):
        out = tmp_path / engine
        result = cli.convert("images", tmp_path / "img", "--labels", csv, "--out", out, "--on-error", "skip",
                             "--engine", engine)  # fmt: skip
        assert result.exit_code == 0, result.stderr
        manifests.append(json.loads((out / "manifest.json").read_text()))
    assert manifests[0]["skipped"] == manifests[1]["skipped"]
    assert [s["item"] for s in manifests[0]["skipped"]] == [f"{csv} line {i + 4}" for i in range(LISTED)]
    assert manifests[0]["skipped_total"] == manifests[1]["skipped_total"] == 150


# ---------------------------------------------------------------- links


def test_a_folder_link_leading_outside_is_reported_and_a_looping_link_named(cli, tmp_path):
    outside = tmp_path / "outside"
    image_folder(outside)
    root = tmp_path / "img"
    image_folder(root / "cat")
    (root / "dog").symlink_to(outside)
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 1 and f"{root / 'dog'}: resolves to {outside}, outside IMAGE_DIR" in result.stderr
    (root / "dog").unlink()
    (root / "loop.png").symlink_to(root / "loop.png")
    csv = tmp_path / "labels.csv"
    csv.write_text("path\ncat/0.png\nloop.png\n")
    result = cli.convert("images", root, "--labels", csv, "--out", tmp_path / "out")
    assert result.exit_code == 1 and "image 'loop.png' is a symlink that loops or leads nowhere" in result.stderr


# ---------------------------------------------------------------- tfr-inspect


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory) -> dict[str, Path]:
    """Files whose first record declares far more than they hold or than memory allows."""
    root = tmp_path_factory.mktemp("hostile")
    declared = 256 << 20  # zeros, so a few hundred KB compressed
    files = {}
    for name, wbits in (("gzip", 31), ("zlib", 15)):
        deflate = zlib.compressobj(1, zlib.DEFLATED, wbits)
        parts = [deflate.compress(header(declared))]
        parts += [deflate.compress(bytes(1 << 20)) for _ in range(declared >> 20)]
        files[name] = root / f"big.tfrecord.{'gz' if name == 'gzip' else 'zz'}"
        files[name].write_bytes(b"".join(parts) + deflate.compress(bytes(4)) + deflate.flush())
    sparse = root / "sparse.tfrecord"
    with open(sparse, "wb") as f:  # 4 GiB long, a few KB on disk: one record claiming all of it
        f.write(header(4 << 30))
        f.truncate(12 + (4 << 30) + 4)
    files["sparse"] = sparse
    return files


@pytest.mark.parametrize("kind", ["gzip", "zlib", "sparse"])
@pytest.mark.parametrize("mode", ["--count", "--verify", "default", "--stats"])
def test_a_record_declaring_gigabytes_is_checked_or_reported_in_bounded_memory(hostile_files, kind, mode):
    path = hostile_files[kind]
    proc, peak = measured("inspect", path, *([] if mode == "default" else [mode]))
    assert peak < RSS_BOUND_MIB, (kind, mode, peak)
    size = (4 << 30) if kind == "sparse" else 256 << 20
    if mode == "--count":
        assert proc.returncode == 0 and "1 records" in proc.stdout
    elif mode == "--verify":  # the payload's CRC, computed block by block: zeros do not match it
        assert proc.returncode == 1
        assert f"FAIL  {path}: record 0 at byte offset 0: data_crc" in proc.stdout
    else:  # the modes that hand out payloads name the record instead of allocating it
        assert proc.returncode == 1
        assert f"{path}: record 0 at byte offset 0: a record of {size} bytes, above the 67108864" in proc.stderr


def test_max_record_size_raises_the_limit(cli, tmp_path):
    path = tmp_path / "two.tfrecord"
    payload = serialize({"blob": b"x" * 2000})
    path.write_bytes(b"".join(header(len(payload)) + payload + struct.pack("<I", masked_crc(payload)) for _ in "ab"))
    refused = cli.inspect(path, "--max-record-size", "1000")
    assert refused.exit_code == 1 and f"record 0 at byte offset 0: a record of {len(payload)} bytes" in refused.stderr
    assert cli.inspect(path, "--max-record-size", "4KiB").exit_code == 0


def test_default_mode_decodes_a_sample_and_counts_the_rest(cli, tmp_path):
    path = tmp_path / "many.tfrecord"
    with open(path, "wb") as f:
        for i in range(SAMPLE * 5):
            payload = serialize({"i": i})
            f.write(header(len(payload)) + payload + struct.pack("<I", masked_crc(payload)))
    report = json.loads(cli.inspect(path, "--json").stdout)
    assert report["records"] == SAMPLE * 5 and report["schema_from_records"] == SAMPLE
    assert report["schema"]["i"]["present_in"] == SAMPLE
    every = json.loads(cli.inspect(path, "--json", "--all").stdout)
    assert every["schema_from_records"] == SAMPLE * 5
    assert f"schema (from {SAMPLE} records; --all for every one)" in cli.inspect(path).stdout


def test_a_record_of_millions_of_empty_features_is_read_in_part_and_said_so(cli, tmp_path):
    from tfr_convert.inspect.summary import MAX_FEATURES

    entries = b"\x0a\x00" * (4 * MAX_FEATURES)  # Features' map entries with neither name nor value
    payload = b"\x0a" + _varint(len(entries)) + entries + serialize({"i": 7})
    path = tmp_path / "wide.tfrecord"
    path.write_bytes(header(len(payload)) + payload + struct.pack("<I", masked_crc(payload)))
    result = cli.inspect(path, "--json")
    report = json.loads(result.stdout)
    assert report["records_read_in_part"] == [{"file": str(path), "record": 0, "features_read": MAX_FEATURES}]
    assert "i" not in report["schema"]  # behind the cut
    assert f"record 0: only its first {MAX_FEATURES} features read" in cli.inspect(path).stdout


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def test_a_run_of_zeros_is_not_parsed_as_half_a_million_fields(cli, tmp_path):
    path = tmp_path / "zeros.tfrecord"
    payload = bytes(8 << 20)
    path.write_bytes(header(len(payload)) + payload + struct.pack("<I", masked_crc(payload)))
    report = json.loads(cli.inspect(path, "--json").stdout)
    assert report["undecodable_records"] == 1  # refused at its first byte: protobuf has no field 0


def test_grid_refuses_huge_images_and_odd_shapes_with_a_line(cli, tmp_path):
    big = io.BytesIO()
    Image.new("L", (6000, 5000)).save(big, "PNG")  # 30 Mpx, a few KB
    path = tmp_path / "big.tfrecord"
    payloads = [serialize({"image": big.getvalue()}), serialize({"image": bytes(12), "height": -2, "width": -3,
                                                                 "channels": 2})]  # fmt: skip
    for name, payload in (("big", payloads[0]), ("odd", payloads[1])):
        (tmp_path / f"{name}.tfrecord").write_bytes(header(len(payload)) + payload
                                                    + struct.pack("<I", masked_crc(payload)))  # fmt: skip
    result = cli.inspect(path, "--grid", tmp_path / "g.png")
    assert result.exit_code == 1 and "6000x5000 = 30000000 pixels exceeds --max-pixels 25000000" in result.stderr
    assert cli.inspect(path, "--grid", tmp_path / "g.png", "--max-pixels", "40000000").exit_code == 0
    odd = cli.inspect(tmp_path / "odd.tfrecord", "--grid", tmp_path / "g.png")
    assert odd.exit_code == 1 and "cannot tell the shape of a 12-byte raw image" in odd.stderr
    payload = serialize({"image": png_header_only(100_000, 100_000)})  # a bomb: its header alone is read
    (tmp_path / "bomb.tfrecord").write_bytes(header(len(payload)) + payload + struct.pack("<I", masked_crc(payload)))
    bomb = cli.inspect(tmp_path / "bomb.tfrecord", "--grid", tmp_path / "g.png")
    assert (
        bomb.exit_code == 1
        and "record 0: 100000x100000 = 10000000000 pixels exceeds --max-pixels 25000000" in bomb.stderr
    )


@pytest.mark.parametrize(
    "content",
    [b"{nope", b"[1, 2]", b'{"name": "x", "splits": 5}', b'{"name": "x", "splits": [5]}',
     b'{"name": "x", "splits": [{"name": "train", "shardLengths": ["x"]}]}',
     b'{"name": "x", "splits": [{"name": 3, "shardLengths": 7}]}', b"\xff\xfe"],
    ids=["not json", "a list", "splits a number", "a split a number", "lengths not numbers", "odd types", "not utf-8"],
)  # fmt: skip
def test_malformed_dataset_info_is_a_reported_problem(cli, mnist_src, tmp_path, content):
    out = tmp_path / "out"
    assert cli.convert("mnist", mnist_src[0], "--out", out).exit_code == 0
    (out / "dataset_info.json").write_bytes(content)
    for mode in (["--verify"], [], ["--stats"], ["--grid", tmp_path / "g.png"]):
        result = cli.inspect(out, *mode)
        assert result.exit_code in (0, 1) and "Traceback" not in result.stderr, (mode, result.stderr)
    verify = cli.inspect(out, "--verify")
    assert verify.exit_code == 1
    assert "dataset_info.json" in verify.stdout + verify.stderr


def test_a_coco_file_of_many_annotations_is_never_held_whole_as_parsed_json(tmp_path):
    """Its entries are parsed one at a time and kept in columns: the whole run holds less
    than parsing the document with json.load alone does (which it did before)."""
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (64, 48)).save(images / "0.jpg")
    for i in range(1, 3000):
        os.link(images / "0.jpg", images / f"{i}.jpg")
    annotations = [{"id": k, "image_id": k // 100, "category_id": 1 + k % 3, "bbox": [1.5, 2, 10.25, 20],
                    "area": 205.0, "iscrowd": 0, "segmentation": [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]}
                   for k in range(300_000)]  # fmt: skip
    doc = {"images": [{"id": i, "file_name": f"{i}.jpg", "width": 64, "height": 48} for i in range(3000)],
           "annotations": annotations, "categories": [{"id": c, "name": n} for c, n in ((1, "a"), (2, "b"), (3, "c"))]}  # fmt: skip
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(doc))
    del doc, annotations
    probe = "import json, sys; json.load(open(sys.argv[1], 'rb')); " + (
        "print(next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')) / 1024)"
    )
    parsed = float(subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True,
                                  check=True).stdout)  # fmt: skip
    result, peak = measured("convert", "detection", images, "--annotations", path, "--out", tmp_path / "o", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert peak < 0.75 * parsed, (peak, parsed)
