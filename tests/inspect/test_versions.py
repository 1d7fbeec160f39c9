"""tfr-inspect of a data_dir (ROOT) or a dataset's folder (ROOT/NAME): its versions and sizes."""

from __future__ import annotations

import json

from helpers import write_class_folders


def _grown(cli, tmp_path):
    root = tmp_path / "root"
    for k, classes in enumerate((["a", "b"], ["b", "c"])):
        write_class_folders(tmp_path / f"b{k}", classes, 3, seed=k)
        assert cli.convert("images", tmp_path / f"b{k}", "--out", root, "--append", "--name", "pets").exit_code == 0
    return root


def test_a_data_dir_lists_each_datasets_versions_with_what_each_adds_and_shares(cli, tmp_path):
    root = _grown(cli, tmp_path)
    for path in (root, root / "pets"):
        result = cli.inspect(path)
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert lines[0] == "pets: 2 versions (tfds.load('pets', ...) reads 1.1.0)"
        assert lines[1].startswith("  1.0.0  train 6 examples in 1 shard, ")
        assert (
            lines[2].startswith("  1.1.0  train 12 examples in 2 shards, ")
            and "(adds 6 to 1.0.0, shares its 1 shard" in lines[2]
        )
    report = json.loads(cli.inspect(root, "--json").stdout)
    old, new = report["datasets"]["pets"]
    assert (old["version"], old["parent"], new["parent"]) == ("1.0.0", None, "1.0.0")
    assert new["added"] == {"train": 6} and new["shared_shards"] == 1
    assert new["bytes"] == old["bytes"] + new["new_bytes"]  # what it shares is what the old version holds


def test_another_mode_on_a_folder_of_versions_names_one_to_read(cli, tmp_path):
    root = _grown(cli, tmp_path)
    result = cli.inspect(root / "pets", "--verify")
    assert result.exit_code == 1
    assert (
        "holds versions of a dataset (1.0.0, 1.1.0)" in result.output and str(root / "pets" / "1.1.0") in result.output
    )
