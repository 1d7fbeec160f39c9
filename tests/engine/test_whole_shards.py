"""Shards written whole by one process (engine/whole_shards.py) at their seam: the file, its
hash and its findings are the ordered writer's for the same items, in any container and
compression; the tasks cover a split's planned items from where a resumed run goes on."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest
from helpers import write_class_folders

from tfr_convert.containers import get as container
from tfr_convert.converters.images import ImagesConverter, ImagesOptions
from tfr_convert.engine.core import encode_sealed
from tfr_convert.engine.whole_shards import WholeShard, tasks, write_whole_shard
from tfr_convert.output.shards import ShardPolicy, SplitWriter
from tfr_convert.storage import fs


class _Here:
    def __init__(self, root) -> None:
        self.root = root

    def temp_path(self, label: str) -> str:
        return str(self.root / label)

    def opener(self, path: str):
        return fs.open_file(path)


@pytest.mark.parametrize(
    "file_format,compression", [("tfrecord", "none"), ("tfrecord", "gzip"), ("array_record", "none")]
)
def test_a_shard_written_whole_is_the_ordered_writers_shard_of_its_items(tmp_path, file_format, compression):
    if file_format == "array_record":
        pytest.importorskip("array_record")
    write_class_folders(tmp_path / "src", ["cat", "dog", "eel"], per_class=30)
    # re-encoded item by item: batches of other sizes must not change a record
    converter = ImagesConverter(str(tmp_path / "src"), ImagesOptions(image_format="png"))
    (items,) = converter.source_splits().values()
    items = items[::-1]
    box = container(file_format)
    (tmp_path / "ordered").mkdir()
    with SplitWriter(_Here(tmp_path / "ordered"), "train", 90, ShardPolicy(num_shards=1), box, compression) as w:
        for start in range(0, 90, 7):  # other batches than the whole shard's
            encoded = encode_sealed(converter, items[start : start + 7], "fail", box)
            w.write_chunk(encoded.blob, encoded.sizes, start // 7, 0)
        ordered = w.close().shards[0]

    written = write_whole_shard(converter, items, box, compression, str(tmp_path / "whole"))
    whole = (tmp_path / "whole").read_bytes()
    assert whole == (tmp_path / "ordered" / "train-00000").read_bytes()
    assert (written.records, written.bytes, written.sha256) == (ordered.records, ordered.bytes, ordered.sha256)
    assert written.sha256 == hashlib.sha256(whole).hexdigest()
    observed = Counter(o for o in encode_sealed(converter, items, "fail", box).observations if o is not None)
    assert written.observations == observed and sum(observed.values()) == 90  # what the converter observes


def test_tasks_cover_the_split_from_where_the_kept_shards_end():
    assert tasks("train", [3, 7, 10], 0, lambda i: f"p{i}") == [
        WholeShard("train", 0, 3, "p0"), WholeShard("train", 3, 7, "p1"), WholeShard("train", 7, 10, "p2"),
    ]  # fmt: skip
    assert tasks("train", [3, 7, 10], 7, lambda i: f"q{i}") == [WholeShard("train", 7, 10, "q0")]
    assert tasks("train", [3, 7, 10], 10, lambda i: f"r{i}") == []
