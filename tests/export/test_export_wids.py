"""tfr-export --to webdataset read by `wids` (webdataset's indexed reader, on the PyTorch
side): its shard index opens as a ShardListDataset whose samples, by index, are the
pictures' own bytes and their labels. Needs PyTorch and wids (.ci/run installs both)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import write_class_folders

pytest.importorskip("torch")
wids = pytest.importorskip("wids")


def test_wids_opens_the_shard_index_and_gives_every_sample_by_index(cli, tmp_path):
    photos, dataset, out = tmp_path / "photos", tmp_path / "ds", tmp_path / "wds"
    write_class_folders(photos, ["cat", "dog", "emu"], 6, seed=2)
    assert cli.convert("images", photos, "--out", dataset, "--split", "train=0.5,test=0.5").exit_code == 0
    assert cli.export(dataset, "--to", "webdataset", "--out", out, "--shard-size", "2KB").exit_code == 0
    names = (dataset / "label.labels.txt").read_text().split()
    keys: list[str] = []
    for split in ("train", "test"):
        index = json.loads((out / f"{split}.shards.json").read_text())
        assert len(index["shardlist"]) > 1  # several shards: wids finds a sample's shard by the counts
        samples = wids.ShardListDataset(str(out / f"{split}.shards.json"), transformations=[], cache_dir=str(tmp_path))
        assert len(samples) == sum(s["nsamples"] for s in index["shardlist"])
        for i in reversed(range(len(samples))):  # random access, not a stream: from the last
            sample = samples[i]
            key = sample["__key__"]
            assert sample[".png"].read() == (photos / f"{key}.png").read_bytes()
            assert names[int(sample[".cls"].read())] == Path(key).parent.name
            assert json.loads(sample[".json"].read())["format"] == "png"
            keys.append(key)
    assert sorted(keys) == sorted(f"{p.parent.name}/{p.stem}" for p in photos.glob("*/*.png"))
