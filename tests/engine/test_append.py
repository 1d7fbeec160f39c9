"""--append: a new version beside the old, read back through TFDS and our own reader;
the old version's files untouched, class ids kept, what may not change refused; the
per-item split rule and the relabelling encoder at their seams."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from helpers import write_class_folders

from tfr_convert.dataset.splits import SplitSpec, assign_per_item
from tfr_convert.dataset.wire.example import parse
from tfr_convert.engine.encode import encode_items, relabelled

SPLIT = ["--split", "train=0.7,validation=0.3"]


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture
def grown(cli, tmp_path):
    """ROOT with pets 1.0.0 (classes cat, dog, horse) and 1.1.0 (dog and a new zebra
    appended): (root, hashes of 1.0.0's files before the append, the two batches)."""
    first, second, root = tmp_path / "b1", tmp_path / "b2", tmp_path / "root"
    write_class_folders(first, ["cat", "dog", "horse"], 6, seed=0)
    write_class_folders(second, ["dog", "zebra"], 5, seed=1)
    result = cli.convert("images", first, "--out", root, "--append", "--name", "pets", *SPLIT)
    assert result.exit_code == 0, result.output
    before = _hashes(root / "pets" / "1.0.0")
    result = cli.convert("images", second, "--out", root, "--append", *SPLIT, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["version"]["number"] == "1.1.0" and summary["version"]["parent"] == "1.0.0"
    assert sum(summary["version"]["added"].values()) == 10
    return root, before, (first, second)


def _names_and_labels(examples) -> list[tuple[str, int]]:
    return [(e["filename"].decode(), int(e["label"])) for e in examples]


def test_tfds_loads_the_newest_version_with_every_record_and_the_old_one_as_it_was(grown):
    tfds = pytest.importorskip("tensorflow_datasets")
    root, before, _ = grown
    assert _hashes(root / "pets" / "1.0.0") == before  # byte-identical old version
    newest, old = [], []
    for split in ("train", "validation"):
        newest += _names_and_labels(tfds.as_numpy(tfds.load("pets", data_dir=str(root), split=split)))
        old += _names_and_labels(tfds.as_numpy(tfds.load("pets:1.0.0", data_dir=str(root), split=split)))
    assert len(old) == 18 and len(newest) == 28
    assert tfds.builder("pets", data_dir=str(root)).version == "1.1.0"
    # the names of the old version keep their ids; zebra comes last
    names = (root / "pets" / "1.1.0" / "label.labels.txt").read_text().split()
    assert names == ["cat", "dog", "horse", "zebra"]
    assert (root / "pets" / "1.0.0" / "label.labels.txt").read_text().split() == ["cat", "dog", "horse"]
    assert all(names[label] == name.split("/")[0] for name, label in newest)
    # the same photo name in both batches is two records (each batch's own dog/0.png)
    assert sorted(old) == sorted(set(old)) and len(set(newest)) == 23


def test_our_reader_and_verify_read_the_new_version_whose_first_shards_are_the_old_ones(cli, grown):
    pytest.importorskip("tensorflow")
    from tfr_convert import load

    root, _, _ = grown
    old, new = root / "pets" / "1.0.0", root / "pets" / "1.1.0"
    for split in ("train", "validation"):
        olds = sorted(old.glob(f"pets-{split}.tfrecord-*"))
        news = sorted(new.glob(f"pets-{split}.tfrecord-*"))
        assert len(news) == len(olds) + 1
        assert [p.read_bytes() for p in news[: len(olds)]] == [p.read_bytes() for p in olds]
        assert all(p.stat().st_ino == q.stat().st_ino for p, q in zip(news, olds, strict=False))  # linked
    records = sum(1 for split in ("train", "validation") for _ in load(str(new), split))
    assert records == 28
    result = cli.inspect(new, "--verify")
    assert result.exit_code == 0, result.output
    manifest = json.loads((new / "manifest.json").read_text())
    shared = manifest["version"]["shared_shards"]
    assert manifest["version"]["parent"] == "1.0.0" and all(len(v) == 1 for v in shared.values())
    assert json.loads((new / "dataset_info.json").read_text())["version"] == "1.1.0"


def test_the_diff_of_a_version_and_its_append_reads_only_the_new_shards_and_says_what_was_added(cli, grown):
    root, _, _ = grown
    old, new = root / "pets" / "1.0.0", root / "pets" / "1.1.0"
    for shard in old.glob("*.tfrecord-*"):  # shards both list alike are never read: garbage there goes unseen
        shard.unlink()  # (a link: the new version's copy keeps its bytes)
        shard.write_bytes(b"garbage")
    result = cli.inspect(old, new, "--diff", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert sum(s["added"] for s in report["splits"]) == 10
    assert all(s["removed"] == 0 and s["changed"] == 0 for s in report["splits"])
    assert report["read"]["shards_shared"] == 2 and report["read"]["records"] == 10  # the two new shards alone
    assert report["labels"]["label"] == {"added": ["zebra"]}


def test_an_option_that_shapes_records_differently_is_refused_naming_it(cli, grown):
    root, before, (_, second) = grown
    for args, said in (
        (["--image-format", "png"], 'option image_format is "png" here, "keep"'),
        (["--split", "train=0.5,validation=0.5"], "option split is"),
        (["--seed", "3"], "option seed is 3 here, 0"),
        (["--format", "array_record"], "option file_format"),
    ):
        given = args if "--split" in args else [*SPLIT, *args]
        result = cli.convert("images", second, "--out", root, "--append", *given)
        assert result.exit_code == 2, (args, result.output)
        assert said in result.output and "Traceback" not in result.output, result.output
    assert sorted(p.name for p in (root / "pets").iterdir()) == ["1.0.0", "1.1.0"]
    assert _hashes(root / "pets" / "1.0.0") == before


def test_records_of_other_features_are_refused_naming_the_feature(cli, grown, tmp_path):
    root, _, _ = grown
    loose = tmp_path / "loose"  # no class folders: no label feature
    write_class_folders(loose, ["x"], 3, seed=2)
    for png in (loose / "x").iterdir():
        png.rename(loose / png.name)
    (loose / "x").rmdir()
    result = cli.convert("images", loose, "--out", root, "--append", *SPLIT)
    assert result.exit_code == 1, result.output
    assert "features differ from" in result.output and "/label" in result.output
    assert "features.json" in result.output and "Traceback" not in result.output
    assert sorted(p.name for p in (root / "pets").iterdir()) == ["1.0.0", "1.1.0"]


def test_versions_follow_the_newest_and_version_picks_a_later_one(cli, grown, tmp_path):
    root, _, _ = grown
    third, fourth = tmp_path / "b3", tmp_path / "b4"
    write_class_folders(third, ["cat"], 2, seed=3)
    write_class_folders(fourth, ["cat"], 2, seed=4)
    refused = cli.convert("images", third, "--out", root, "--append", *SPLIT, "--version", "1.0.5")
    assert refused.exit_code == 2 and "not after 1.1.0" in refused.output
    picked = cli.convert("images", third, "--out", root, "--append", *SPLIT, "--version", "2.0.0", "--json")
    assert picked.exit_code == 0, picked.output
    assert json.loads(picked.stdout)["version"]["parent"] == "1.1.0"
    following = cli.convert("images", fourth, "--out", root, "--append", *SPLIT, "--json")
    assert json.loads(following.stdout)["out"].endswith("pets/2.1.0")


def test_the_same_append_run_again_writes_nothing(cli, grown):
    root, _, (first, second) = grown
    again = cli.convert("images", second, "--out", root, "--append", *SPLIT)
    assert again.exit_code == 0 and "already complete: nothing written" in again.output
    assert sorted(p.name for p in (root / "pets").iterdir()) == ["1.0.0", "1.1.0"]
    # the first batch again is new to the newest version: appended (its records twice, as asked)
    assert cli.convert("images", first, "--out", root, "--append", *SPLIT).exit_code == 0
    assert sorted(p.name for p in (root / "pets").iterdir()) == ["1.0.0", "1.1.0", "1.2.0"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--version", "1.2.0"], "--version names the version --append makes: it needs --append"),
        (["--append", "--overwrite"], "it cannot --overwrite"),
        (["--append", "--version", "1.2"], "a version is MAJOR.MINOR.PATCH"),
    ],
)
def test_version_and_append_misused_are_usage_errors(cli, tmp_path, args, said):
    write_class_folders(tmp_path / "b", ["a"], 2, seed=0)
    result = cli.convert("images", tmp_path / "b", "--out", tmp_path / "out", *args)
    assert result.exit_code == 2 and said in result.output, result.output


def test_append_into_a_flat_dataset_or_a_version_folder_says_where_to_append(cli, grown, tmp_path):
    root, _, (first, _) = grown
    flat = tmp_path / "flat"
    assert cli.convert("images", first, "--out", flat).exit_code == 0
    result = cli.convert("images", first, "--out", flat, "--append")
    assert result.exit_code == 1 and "flat layout" in result.output and "ROOT/NAME/1.0.0" in result.output
    result = cli.convert("images", first, "--out", root / "pets" / "1.0.0", "--append")
    assert result.exit_code == 1 and f"--out {root}" in result.output
    # two datasets in one root: which one is for --name to say
    assert cli.convert("images", first, "--out", root, "--append", "--name", "other").exit_code == 0
    result = cli.convert("images", first, "--out", root, "--append", *SPLIT)
    assert result.exit_code == 2 and "holds the datasets other, pets" in result.output


def test_write_appends_from_python_with_a_new_label_numbered_last(tmp_path):
    pytest.importorskip("pyarrow")
    import tfr_convert

    out = tmp_path / "root"
    rows = [{"text": f"t{i}", "label": ["b", "c"][i % 2]} for i in range(6)]
    first = tfr_convert.write(rows, out, name="notes", label_column="label", append=True)
    assert first["version"]["number"] == "1.0.0"
    more = [{"text": f"u{i}", "label": ["a", "c"][i % 2]} for i in range(4)]
    second = tfr_convert.write(more, out, label_column="label", append=True)
    assert second["version"] == {"number": "1.1.0", "parent": "1.0.0", "added": {"train": 4}}
    folder = out / "notes" / "1.1.0"
    names = (folder / "label.labels.txt").read_text().split()
    assert names == ["b", "c", "a"]
    texts = {}
    for shard in sorted(folder.glob("notes-train.tfrecord-*")):
        from tfr_convert import containers

        for record in containers.get("tfrecord").records(str(shard)):
            example = parse(record.data)
            texts[example["text"][1][0].decode()] = names[example["label"][1][0]]
    assert texts == {r["text"]: r["label"] for r in rows + more}


def test_an_items_split_under_the_per_item_rule_does_not_depend_on_the_others():
    spec = SplitSpec.parse("train=0.8,validation=0.1,test=0.1")
    items = [f"photo{i}.jpg" for i in range(2000)]
    alone = assign_per_item(items[:500], str, spec, 7, None)
    together = assign_per_item(items, str, spec, 7, None)
    for split in alone:
        assert set(alone[split]) == set(together[split]) & set(items[:500])
    sizes = {split: len(v) for split, v in together.items()}
    assert 1500 < sizes["train"] < 1700 and 120 < sizes["validation"] < 280  # the fractions, on average
    grouped = assign_per_item(items, str, spec, 7, [name[:7] for name in items])  # photo12, photo13, ...: ~110 groups
    for g in {name[:7] for name in items}:  # each group in one split whole
        assert sum(any(name[:7] == g for name in members) for members in grouped.values()) == 1
    assert all(grouped.values())  # every split has some


def test_the_per_item_rule_gives_a_tables_rows_the_splits_it_gives_a_list():
    from tfr_convert.dataset.rows import RowNumbers

    spec = SplitSpec.parse("train=0.6,test=0.4")
    rows = RowNumbers(__import__("numpy").arange(300))
    as_rows = assign_per_item(rows, lambda r: f"row{r}", spec, 1, None)
    as_list = assign_per_item(list(range(300)), lambda r: f"row{r}", spec, 1, None)
    assert {k: list(map(int, v)) for k, v in as_rows.items()} == as_list


class _Labelled:
    """A converter of (name, label id) items, with a label column the columnar path could take."""

    serialized = False
    optional_features = frozenset()

    def __init__(self, relabel=None):
        from tfr_convert.dataset.features import FeatureSpec

        self.features = {"name": FeatureSpec.tensor("string"), "label": FeatureSpec.class_label(3)}
        self.relabel = relabel

    def columns_of(self, items):
        raise AssertionError("a relabelled batch goes item by item")

    def features_of_each(self, items):
        return [self.features_of(item) for item in items]

    def features_of(self, item):
        return {"name": item[0], "label": item[1]}

    def observe(self, features):
        return None

    def describe(self, item):
        return item[0]


def test_the_encoder_writes_each_id_as_the_relabel_table_maps_it():
    items = [("a", 0), ("b", 2), ("c", 1)]
    relabel = {"label": [3, 0, 1]}
    encoded = encode_items(_Labelled(relabel), items)
    got = []
    at = 0
    for size in encoded.sizes:
        got.append(parse(bytes(encoded.blob[at : at + size])))
        at += size
    assert [(e["name"][1][0].decode(), e["label"][1][0]) for e in got] == [("a", 3), ("b", 1), ("c", 0)]
    assert relabelled({"label": [0, 2], "x": 1}, {"label": [2, 1, 0]}) == {"label": [2, 0], "x": 1}


@pytest.mark.parametrize("mode", ["exact", "drop"])
def test_dedupe_finds_pictures_the_dataset_holds_already(cli, tmp_path, mode):
    first, again, root = tmp_path / "b1", tmp_path / "again", tmp_path / "root"
    write_class_folders(first, ["cat", "dog"], 8, seed=0)
    write_class_folders(again, ["cat", "dog"], 3, seed=5)  # three new pictures a class
    for name in ("cat/0.png", "dog/5.png"):  # and two of the first batch, under other names
        (again / name.replace(".png", "-copy.png")).write_bytes((first / name).read_bytes())
    args = [*SPLIT, "--dedupe", mode]
    assert cli.convert("images", first, "--out", root, "--append", "--name", "pets", *args).exit_code == 0
    old = json.loads((root / "pets" / "1.0.0" / "manifest.json").read_text())
    result = cli.convert("images", again, "--out", root, "--append", *args, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert any("2 of the new pictures are in" in w for w in summary["warnings"]), summary["warnings"]
    assert sum(summary["version"]["added"].values()) == (6 if mode == "drop" else 8)
    if mode == "exact":  # each copy in the split its first is in
        from tfr_convert import containers

        split_of = {}
        for folder in (root / "pets" / "1.0.0", root / "pets" / "1.1.0"):
            for shard in folder.glob("pets-*.tfrecord-*"):
                for record in containers.get("tfrecord").records(str(shard)):
                    name = parse(record.data)["filename"][1][0].decode()
                    split_of[(folder.name, name)] = shard.name.split("-")[1].split(".")[0]
        assert split_of[("1.1.0", "cat/0-copy.png")] == split_of[("1.0.0", "cat/0.png")]
        assert split_of[("1.1.0", "dog/5-copy.png")] == split_of[("1.0.0", "dog/5.png")]
    assert old == json.loads((root / "pets" / "1.0.0" / "manifest.json").read_text())


def test_a_version_with_a_shard_missing_or_a_manifest_naming_a_file_elsewhere_is_not_appended_to(cli, grown):
    root, _, (_, second) = grown
    newest = root / "pets" / "1.1.0"
    manifest = json.loads((newest / "manifest.json").read_text())
    outside = root.parent / "secret.txt"
    outside.write_text("not a shard")
    shard = manifest["splits"]["train"]["shards"][0]
    shard["file"] = "../../../secret.txt"  # the manifest names a file outside the dataset
    (newest / "manifest.json").write_text(json.dumps(manifest))
    result = cli.convert("images", second, "--out", root, "--append", *SPLIT, "--version", "1.2.0")
    assert result.exit_code == 1 and "no record of pets-train.tfrecord-00000-of-00002" in result.output
    assert not (root / "pets" / "1.2.0").exists() and "Traceback" not in result.output
    shard["file"] = "pets-train.tfrecord-00000-of-00002"
    (newest / "manifest.json").write_text(json.dumps(manifest))
    (newest / "pets-train.tfrecord-00001-of-00002").unlink()
    result = cli.convert("images", second, "--out", root, "--append", *SPLIT, "--version", "1.2.0")
    assert result.exit_code == 1 and "missing, or not the" in result.output and "--verify" in result.output
    assert not (root / "pets" / "1.2.0").exists()


def test_beam_appends_the_bytes_the_local_engine_appends(cli, tmp_path):
    pytest.importorskip("apache_beam")
    first, second = tmp_path / "b1", tmp_path / "b2"
    write_class_folders(first, ["cat", "dog"], 4, seed=0)
    write_class_folders(second, ["dog", "emu"], 3, seed=1)
    trees = []
    for engine in ("local", "beam"):
        root = tmp_path / engine
        for batch in (first, second):
            result = cli.convert(
                "images", batch, "--out", root, "--append", "--name", "pets", "--engine", engine, *SPLIT
            )
            assert result.exit_code == 0, result.output
        trees.append({str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()})
    assert trees[0] == trees[1] and len(trees[0]) > 10
