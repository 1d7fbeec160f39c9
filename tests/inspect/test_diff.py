"""tfr-inspect OLD NEW --diff: records added, removed, changed (and in which features) and
moved, matched by key; shards both manifests list alike left unread; exit codes."""

from __future__ import annotations

import gzip
import json
import math
from array import array
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from detection_inputs import write_csv, write_images
from tfr_convert.containers import of_file
from tfr_convert.containers.framing import frame
from tfr_convert.dataset.wire.example import serialize
from tfr_convert.errors import RecordError
from tfr_convert.inspect.diff.changes import changed_features
from tfr_convert.inspect.diff.matching import Entry, Records, match, moved
from tfr_convert.inspect.diff.sides import Shard, file_entries, file_entries_keyed, keyed, shared_shards


def write_shard(path: Path, examples: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(frame(serialize(e)) for e in examples))
    return path


def example(name: str, label: int, image: bytes = b"\x01" * 80) -> dict:
    return {"filename": name, "label": label, "image": image}


def photos(root: Path, count: int = 12, seed: int = 0) -> Path:
    """PNG photos (lossless: a pixel changed is one pixel changed) in class folders a, b."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        folder = root / ("a" if i % 2 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)).save(folder / f"{i:03d}.png")
    return root


# ---------------------------------------------------------------- matching, at the seam


def records(*pairs: tuple[str, bytes], path: str = "f") -> tuple[Records, dict]:
    """A side of one file holding records of these (key, payload hash) in order, and the
    table a `keys` callback reads their keys from."""
    digests = b"".join(d.ljust(16, b"\0") for _, d in pairs)
    table = {(path, i): key for i, (key, _) in enumerate(pairs)}
    return Records([(path, digests, array("q", range(len(pairs))))]), table


def keys_from(*tables: dict, asked: list | None = None):
    def keys(left: list[Entry]) -> None:
        for entry in left:
            entry.key = next(t[entry.path, entry.index] for t in tables if (entry.path, entry.index) in t)
        if asked is not None:
            asked.extend(left)

    return keys


def test_records_match_by_key_and_a_repeated_key_matches_in_order():
    old, a = records(("a", b"1"), ("b", b"2"), ("b", b"3"), ("c", b"4"), path="old")
    new, b = records(("b", b"2"), ("b", b"9"), ("d", b"5"), ("a", b"1"), path="new")
    asked: list[Entry] = []
    result = match("train", old, new, keys_from(a, b, asked=asked))
    assert result.unchanged == 2  # a, the first b
    # equal payloads hold equal keys: only the records left over have theirs read
    assert sorted((e.key, e.digest[:1]) for e in asked) == [("b", b"3"), ("b", b"9"), ("c", b"4"), ("d", b"5")]
    assert [(o.key, n.digest[:1]) for o, n in result.changed] == [("b", b"9")]  # the second b against the second
    assert [e.key for e in result.added] == ["d"]
    assert [e.key for e in result.removed] == ["c"]


def test_of_a_payload_repeated_the_first_ones_match_and_the_last_are_left_over():
    old, a = records(("x", b"7"), ("y", b"7"), ("z", b"7"), ("w", b"8"), path="old")
    new, b = records(("x", b"7"), path="new")
    result = match("train", old, new, keys_from(a, b))
    assert result.unchanged == 1 and [e.key for e in result.removed] == ["y", "z", "w"]
    assert [(e.index, e.path) for e in result.removed] == [(1, "old"), (2, "old"), (3, "old")]


def test_a_key_removed_from_one_split_and_added_to_another_moved():
    train_old, a = records(("a", b"1"), ("b", b"2"), path="train-old")
    train_new, b = records(("b", b"2"), path="train-new")
    test_new, c = records(("a", b"7"), ("z", b"8"), path="test-new")
    train = match("train", train_old, train_new, keys_from(a, b))
    test = match("test", Records(), test_new, keys_from(c))
    found = moved([train, test])
    assert found == [{"key": "a", "from": "train", "to": "test", "changed": True}]
    assert train.removed == [] and [e.key for e in test.added] == ["z"]


def test_only_shards_both_manifests_list_alike_are_shared():
    old = [Shard("o0", "h1", 3), Shard("o1", "h2", 3), Shard("o2", None, 3)]
    new = [Shard("n0", "h2", 3), Shard("n1", "h3", 3), Shard("n2", "h1", None)]  # n2: no count, read
    read_old, read_new, shared = shared_shards(old, new)
    assert [s.path for s in shared] == ["o1"]
    assert [s.path for s in read_old] == ["o0", "o2"] and [s.path for s in read_new] == ["n1", "n2"]


def test_changed_features_names_only_what_differs_and_nan_equals_itself():
    a = serialize({"x": [math.nan, 1.0], "label": 1, "name": "p"})
    b = serialize({"x": [math.nan, 1.0], "label": 2, "name": "p", "extra": 5})
    assert changed_features(a, b) == {
        "extra": {"old": "absent", "new": [5]},
        "label": {"old": [1], "new": [2]},
    }


@pytest.mark.parametrize("compression", ["none", "gzip", "array_record"])
def test_records_at_reads_records_by_their_offsets_and_notices_a_file_changed(tmp_path, compression):
    """Uncompressed: each record alone, at its offset; gzip: the stream read through;
    ArrayRecord: by its own index. The same payloads as `records`, in the order asked."""
    path = write_shard(tmp_path / "x.tfrecord", [example(f"{i}", i) for i in range(6)])
    if compression == "gzip":
        path.write_bytes(gzip.compress(path.read_bytes()))
    if compression == "array_record":
        module = pytest.importorskip("array_record.python.array_record_module")
        records = [r.data for r in of_file(str(path)).records(str(path))]
        path = tmp_path / "x.array_record"
        writer = module.ArrayRecordWriter(str(path), "group_size:1")
        for data in records:
            writer.write(data)
        writer.close()
    container = of_file(str(path))
    records = list(container.records(str(path)))
    wanted = [(r.index, r.offset) for r in (records[4], records[1], records[4])]
    assert container.records_at(str(path), wanted) == [records[4].data, records[1].data, records[4].data]
    gone = (9, None)  # a record past the end: the file changed since it was read
    if compression != "array_record":
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
        gone = (4, records[4].offset)
    with pytest.raises(RecordError, match=r"x\.(tfrecord|array_record): record [0-9]"):  # gzip: where it breaks
        container.records_at(str(path), [gone])


@pytest.mark.parametrize("key", ["filename", None])
def test_keys_read_with_the_hashes_equal_keys_read_again_by_offset(tmp_path, key):
    """The one pass of a split read on one side only gives what the two passes give."""
    path = str(write_shard(tmp_path / "x.tfrecord", [example(f"{i}", i) for i in range(7)]))
    digests, offsets, keys = file_entries_keyed(path, 1 << 20, key)
    assert (digests, offsets) == file_entries(path, 1 << 20)
    records = Records([(path, digests, offsets)])
    entries = records.entries(list(range(7)))
    keyed(entries, key, 1 << 20)
    assert keys == [e.key for e in entries]
    assert [e.key for e in Records([(path, digests, offsets)], {path: keys}).entries([3, 5])] == [keys[3], keys[5]]


# ---------------------------------------------------------------- whole datasets


def test_shards_named_by_split_differ_in_added_removed_changed_and_moved_records(cli, tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    write_shard(old / "d-train.tfrecord-00000-of-00001", [example("p1", 0), example("p2", 1), example("p3", 0)])
    write_shard(old / "d-test.tfrecord-00000-of-00001", [example("q1", 1)])
    write_shard(new / "d-train.tfrecord-00000-of-00001", [example("p1", 0), example("p2", 0), example("p4", 1)])
    write_shard(new / "d-test.tfrecord-00000-of-00001", [example("q1", 1), example("p3", 0)])
    result = cli.inspect(old, new, "--diff", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["key"] == "filename" and not report["equal"]
    splits = {s["split"]: s for s in report["splits"]}
    assert (splits["train"]["added"], splits["train"]["removed"], splits["train"]["changed"]) == (1, 0, 1)
    assert splits["train"]["unchanged"] == 1 and splits["test"]["unchanged"] == 1
    assert report["added"] == [{"split": "train", "key": "p4"}]
    assert report["moved"] == [{"key": "p3", "from": "train", "to": "test", "changed": False}]
    assert report["changed"] == [{"split": "train", "key": "p2", "features": {"label": {"old": [1], "new": [0]}}}]
    text = cli.inspect(old, new, "--diff").output
    assert "~ p2: label: 1 -> 0" in text and "moved: p3: train -> test" in text and "+ p4" in text


def test_without_a_key_feature_records_match_by_content(cli, tmp_path):
    rows = [{"v": i} for i in range(4)]
    a = write_shard(tmp_path / "a.tfrecord", rows)
    b = write_shard(tmp_path / "b.tfrecord", [rows[0], rows[1], {"v": 9}, rows[3]])
    report = json.loads(cli.inspect(a, b, "--diff", "--json").output)
    assert report["key"] is None
    assert [(s["added"], s["removed"], s["changed"], s["unchanged"]) for s in report["splits"]] == [(1, 1, 0, 3)]
    assert "matched by content" in cli.inspect(a, b, "--diff").output


def test_key_names_the_feature_and_an_unknown_one_is_a_usage_error(cli, tmp_path):
    a = write_shard(tmp_path / "a.tfrecord", [{"id2": "x", "v": 1}, {"id2": "y", "v": 2}])
    b = write_shard(tmp_path / "b.tfrecord", [{"id2": "x", "v": 1}, {"id2": "y", "v": 3}])
    report = json.loads(cli.inspect(a, b, "--diff", "--key", "id2", "--json").output)
    assert report["changed"] == [{"split": "", "key": "y", "features": {"v": {"old": [2], "new": [3]}}}]
    unknown = cli.inspect(a, b, "--diff", "--key", "nope")
    assert unknown.exit_code == 2 and "'nope'" in unknown.output and "id2, v" in unknown.output
    assert cli.inspect(a, b, "--key", "id2").exit_code == 2  # --key without --diff
    three = cli.inspect(a, b, a, "--diff")
    assert three.exit_code == 2 and "OLD NEW" in three.output


def test_a_record_without_the_key_or_a_damaged_one_is_named_with_exit_1(cli, tmp_path):
    a = write_shard(tmp_path / "a.tfrecord", [example("p1", 0), example("p2", 0)])
    b = write_shard(tmp_path / "b.tfrecord", [example("p1", 0), {"label": 3, "image": b"x"}])
    result = cli.inspect(a, b, "--diff")
    assert result.exit_code == 1 and "record 1" in result.output and "'filename'" in result.output
    damaged = bytearray(a.read_bytes())
    damaged[-30] ^= 0xFF
    b.write_bytes(bytes(damaged))
    result = cli.inspect(a, b, "--diff")
    assert result.exit_code == 1 and str(b) in result.output and "Traceback" not in result.output


def test_two_conversions_show_a_changed_pixel_a_new_class_and_equal_ones_exit_0(cli, tmp_path):
    src = photos(tmp_path / "src")
    assert cli.convert("images", src, "--out", tmp_path / "old", "--quiet").exit_code == 0
    again = cli.inspect(tmp_path / "old", tmp_path / "old", "--diff")
    assert again.exit_code == 0 and "equal: 12 records" in again.output
    picture = np.asarray(Image.open(src / "a" / "001.png")).copy()
    picture[5, 7] = 255 - picture[5, 7]
    Image.fromarray(picture).save(src / "a" / "001.png")
    (src / "c").mkdir()
    Image.fromarray(np.zeros((12, 16, 3), np.uint8)).save(src / "c" / "new.png")
    assert cli.convert("images", src, "--out", tmp_path / "new", "--quiet").exit_code == 0
    result = cli.inspect(tmp_path / "old", tmp_path / "new", "--diff", "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["added"] == [{"split": "train", "key": "c/new.png"}]
    [changed] = report["changed"]
    assert changed["key"] == "a/001.png" and changed["features"]["image"]["pixels"] == "1 of 192 pixels differ"
    assert report["labels"] == {"label": {"added": ["c"]}}


def test_shards_both_manifests_list_alike_are_not_read(cli, tmp_path):
    src = photos(tmp_path / "src", 20)
    for side in ("old", "new"):
        args = ["images", src, "--out", tmp_path / side, "--quiet", "--examples-per-shard", "5", "--no-shuffle"]
        assert cli.convert(*args).exit_code == 0
    (src / "b" / "018.png").unlink()  # the last shard's record: the others stay alike
    assert cli.convert("images", src, "--out", tmp_path / "new", "--quiet", "--overwrite",
                       "--examples-per-shard", "5", "--no-shuffle").exit_code == 0  # fmt: skip
    shards = sorted((tmp_path / "old").glob("*.tfrecord-*"))
    alike = [p for p in shards if (tmp_path / "new" / p.name).read_bytes() == p.read_bytes()]
    assert alike, "the conversions share no shard"
    for p in alike:  # were they read, the garbage would fail the diff
        for side in ("old", "new"):
            (tmp_path / side / p.name).write_bytes(b"garbage, not a record")
    report = json.loads(cli.inspect(tmp_path / "old", tmp_path / "new", "--diff", "--json").output)
    assert report["read"]["shards_shared"] == len(alike)
    assert [s["removed"] for s in report["splits"]] == [1]
    assert sum(s["unchanged"] for s in report["splits"]) == 19


def test_a_changed_box_is_named_on_array_record_shards(cli, tmp_path):
    pytest.importorskip("array_record")
    images = write_images(tmp_path / "images")
    csv = write_csv(tmp_path / "boxes.csv")
    args = ["--format", "array_record", "--quiet"]
    assert cli.convert("detection", images, "--annotations", csv, "--out", tmp_path / "old", *args).exit_code == 0
    csv.write_text(csv.read_text().replace("b.jpg,50,70,bird,0,0,25,35", "b.jpg,50,70,bird,0,0,26,35"))
    assert cli.convert("detection", images, "--annotations", csv, "--out", tmp_path / "new", *args).exit_code == 0
    report = json.loads(cli.inspect(tmp_path / "old", tmp_path / "new", "--diff", "--json").output)
    assert report["key"] == "image/filename"
    [changed] = report["changed"]
    assert changed["key"] == "b.jpg"
    assert set(changed["features"]) == {"image/object/area", "image/object/bbox/xmax"}
    assert changed["features"]["image/object/bbox/xmax"] == {"old": [0.5], "new": [0.52]}


def test_a_local_dataset_against_its_copy_in_a_bucket(cli, tmp_path, s3):
    src = photos(tmp_path / "src")
    assert cli.convert("images", src, "--out", tmp_path / "old", "--quiet").exit_code == 0
    assert cli.convert("images", src, "--out", f"{s3.url}/new", "--quiet").exit_code == 0
    result = cli.inspect(tmp_path / "old", f"{s3.url}/new", "--diff", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["read"]["shards"] == 0  # every shard alike: none read


def test_keys_of_many_changed_records_are_read_alike_in_processes(cli, tmp_path):
    """Keys of a few records left over are read here, of many on every core: the same keys."""
    for n in (3, 1200):
        a = write_shard(tmp_path / f"a{n}.tfrecord", [example(f"k{i}", 0) for i in range(n)])
        b = write_shard(tmp_path / f"b{n}.tfrecord", [example(f"k{i}", 1) for i in range(n)])
        report = json.loads(cli.inspect(a, b, "--diff", "--json").output)
        assert [c["key"] for c in report["changed"]] == [f"k{i}" for i in range(min(n, 1000))]
        assert report["splits"][0]["changed"] == n and not report["added"] and not report["removed"]


def test_a_summary_and_a_diff_of_plain_records_import_no_numpy(tmp_path):
    """Parsing records needs no numpy (its import is most of a quick command's start-up):
    the serializer imports it where it classifies values, not at module import."""
    import subprocess
    import sys

    a = write_shard(tmp_path / "a.tfrecord", [example(f"p{i}", i) | {"box": [0.5, 0.25]} for i in range(3)])
    code = (
        "import sys\nfrom tfr_convert.cli.inspect import inspect\n"
        "for args in (['A'], ['A', 'A', '--diff']):\n"
        "    inspect.main([sys.argv[1] if a == 'A' else a for a in args], standalone_mode=False)\n"
        "print('numpy imported:', 'numpy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(a)], capture_output=True, text=True, check=True)
    assert "box" in done.stdout and "equal: 3 records" in done.stdout
    assert done.stdout.strip().endswith("numpy imported: False")


def test_a_dataset_against_plain_files_is_compared_whole_and_raw_records_by_content(cli, tmp_path):
    old = tmp_path / "old"
    write_shard(old / "d-train.tfrecord-00000-of-00001", [example("p1", 0), example("p2", 1)])
    write_shard(old / "d-test.tfrecord-00000-of-00001", [example("q1", 1)])
    plain = write_shard(tmp_path / "all.tfrecord", [example("q1", 1), example("p1", 0), example("p2", 2)])
    report = json.loads(cli.inspect(old, plain, "--diff", "--json").output)
    assert [(s["split"], s["unchanged"], s["changed"]) for s in report["splits"]] == [("", 2, 1)]
    assert report["moved"] == [] and report["changed"][0]["key"] == "p2"
    raw = [tmp_path / "a.raw", tmp_path / "b.raw"]
    raw[0].write_bytes(b"".join(frame(b) for b in (b"\x00\x01 not an example", b"x")))
    raw[1].write_bytes(b"".join(frame(b) for b in (b"\x00\x01 not an example", b"y")))
    result = cli.inspect(*raw, "--diff", "--json")
    assert result.exit_code == 1, result.output
    assert [(s["added"], s["removed"], s["unchanged"]) for s in json.loads(result.output)["splits"]] == [(1, 1, 1)]
