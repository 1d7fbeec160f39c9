"""Unit tests at the seams the end-to-end tests reach only whole: the journal's lines
and replay, the ratio and group splits, the skips' proportions, the metadata files and
their one reader (dataset.existing)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tfr_convert.dataset.existing import ExistingDataset
from tfr_convert.dataset.features import FeatureSpec
from tfr_convert.dataset.naming import INFO, MANIFEST
from tfr_convert.dataset.rows import GroupCodes, RowNumbers, RowStrata, part_of, row_array
from tfr_convert.dataset.splits import SplitSpec, assign_by_ratio, assign_groups_by_ratio, split_by_ratio
from tfr_convert.errors import OutputError, SourceError
from tfr_convert.output.journal import Journal, ShardEntry, Tally, replay
from tfr_convert.output.metadata import metadata_files, supervised_keys
from tfr_convert.output.shards import Checkpoint, ShardFile, SplitResult
from tfr_convert.skips import LISTED, Skips, kind_of

# ---------------------------------------------------------------- journal


def shard(n: int) -> ShardEntry:
    return ShardEntry(f".tfr-convert-tmp-train-{n:05d}", 10 + n, 100 + n, f"{n:064x}")


def test_the_journal_replays_what_it_was_told_in_order(tmp_path):
    journal = Journal(str(tmp_path / "journal"))
    journal.open({"seed": 0})
    tally = Tally()
    tally.add(Counter({("png",): 3}), [{"item": "a.png", "reason": "broken"}], ["a warning"])
    journal.shard_done("train", shard(0), Checkpoint(2, 5, (10, 1, 100)), tally)
    journal.shard_done("train", shard(1), Checkpoint(4, 0, (21, 1, 201)), Tally())
    journal.split_done("train", Tally())
    journal.shard_done("test", shard(2), Checkpoint(1, 3, (12, 0, 102)), Tally())
    journal.close()
    progress = replay(journal.read({"seed": 0}))
    assert progress.shards == {"train": [shard(0), shard(1)], "test": [shard(2)]}
    assert progress.done == ["train"] and progress.at == {"test": Checkpoint(1, 3, (12, 0, 102))}
    assert progress.tally.observations == Counter({("png",): 3}) and progress.tally.warnings == ["a warning"]
    assert progress.tally.skipped.listed == [{"item": "a.png", "reason": "broken"}]


def test_a_torn_last_line_is_dropped_and_the_lines_before_it_kept(tmp_path):
    journal = Journal(str(tmp_path / "journal"))
    journal.open({"seed": 0})
    journal.shard_done("train", shard(0), Checkpoint(1, 0, (10, 0, 100)), Tally())
    journal.close()
    with open(tmp_path / "journal", "a") as f:
        f.write('{"split": "train", "shard": {"file"')  # the run died while appending
    assert [e["shard"]["file"] for e, _ in journal.read({"seed": 0})] == [shard(0).file]


def test_a_journal_of_another_run_is_refused_naming_the_difference(tmp_path):
    journal = Journal(str(tmp_path / "journal"))
    journal.open({"options": {"seed": 0, "name": "a"}})
    journal.close()
    with pytest.raises(OutputError, match=r"options\.seed: 0 then, 1 now"):
        journal.read({"options": {"seed": 1, "name": "a"}})


def test_reopening_after_the_kept_entries_drops_the_rest(tmp_path):
    journal = Journal(str(tmp_path / "journal"))
    journal.open({"seed": 0})
    for n in range(3):
        journal.shard_done("train", shard(n), Checkpoint(n + 1, 0, (10, 0, 100)), Tally())
    journal.close()
    kept = journal.read({"seed": 0})[:1]
    journal.open({"seed": 0}, kept)
    journal.shard_done("train", shard(7), Checkpoint(9, 0, (10, 0, 100)), Tally())
    journal.close()
    assert [e["shard"]["file"] for e, _ in journal.read({"seed": 0})] == [shard(0).file, shard(7).file]


# ---------------------------------------------------------------- splits


SPEC = SplitSpec.parse("train=0.6,validation=0.2,test=0.2")


def test_ratio_splits_have_exact_counts_keep_source_order_and_depend_on_the_seed():
    items = [f"item{i:03d}" for i in range(101)]
    splits = assign_by_ratio(items, str, SPEC, seed=0)
    assert [len(splits[n]) for n in ("train", "validation", "test")] == [61, 20, 20]
    assert all(v == sorted(v) for v in splits.values()) and sorted(i for v in splits.values() for i in v) == items
    assert assign_by_ratio(items, str, SPEC, seed=0) == splits
    assert assign_by_ratio(items, str, SPEC, seed=1) != splits


def test_stratified_splits_keep_each_class_in_proportion():
    items = [(f"a{i}", "cat") for i in range(50)] + [(f"b{i}", "dog") for i in range(10)]
    splits = assign_by_ratio(items, lambda x: x[0], SPEC, 0, group=lambda x: x[1])
    for name, share in (("train", 0.6), ("validation", 0.2), ("test", 0.2)):
        counts = Counter(c for _, c in splits[name])
        assert counts == {"cat": 50 * share, "dog": 10 * share}


def test_group_splits_never_cut_a_group_and_say_what_they_achieved():
    items = [f"img{i}" for i in range(40)]
    groups = [f"patient{i // 4}" for i in range(40)]  # ten groups of four
    splits, said = split_by_ratio(items, str, SPEC, 0, groups=groups)
    where = {item: name for name, members in splits.items() for item in members}
    for g in set(groups):
        assert len({where[i] for i, gi in zip(items, groups, strict=True) if gi == g}) == 1
    assert (
        said == "split 40 examples in 10 whole groups: train 0.600, validation 0.200, test 0.200 (asked 0.6, 0.2, 0.2)"
    )
    assert split_by_ratio(items, str, SPEC, 0) == (assign_by_ratio(items, str, SPEC, 0), None)


def test_a_group_larger_than_a_split_goes_where_it_is_furthest_below_target():
    items = list("abcdefghij")
    groups = ["big"] * 7 + ["x", "y", "z"]
    splits = assign_groups_by_ratio(items, groups, SPEC, 0)
    assert splits["train"] == list("abcdefg")  # the largest first, into the largest target


# ---------------------------------------------------------------- skips


def test_skips_keep_the_first_hundred_and_count_every_one_by_kind():
    skips = Skips()
    for i in range(250):
        skips.add(f"row {i}", f"duplicate row: 'f{i}.png' is already on line {i + 1}")
    skips.add("x", "cannot read: /data/x.png")
    assert len(skips.listed) == LISTED and skips.listed[0]["item"] == "row 0" and skips.total == 251
    assert skips.by_kind == {"duplicate row: '…' is already on line N": 250, "cannot read: PATH": 1}
    assert Skips.from_json(json.loads(json.dumps(skips.to_json()))).to_json() == skips.to_json()


def test_merged_skips_list_the_first_ones_in_order():
    first, second = Skips(), Skips()
    for i in range(LISTED - 2):
        first.add(f"a{i}", "bad")
    for i in range(5):
        second.add(f"b{i}", "worse 7")
    first.merge(second)
    assert [s["item"] for s in first.listed[-3:]] == ["a97", "b0", "b1"] and first.total == LISTED + 3
    assert kind_of("worse 7") == "worse N" and first.by_kind["worse N"] == 5


# ---------------------------------------------------------------- metadata, and its reader


def results() -> list[SplitResult]:
    return [SplitResult("train", [ShardFile("t0", 3, 30, "a" * 64, "d-train.tfrecord-00000-of-00002"),
                                  ShardFile("t1", 2, 20, "b" * 64, "d-train.tfrecord-00001-of-00002")]),
            SplitResult("test", [ShardFile("t2", 1, 10, "c" * 64, "d-test.tfrecord-00000-of-00001")])]  # fmt: skip


def test_metadata_files_are_read_back_by_the_one_reader(tmp_path):
    features = {"image": FeatureSpec.image((28, 28, 1), "png"), "label": FeatureSpec.class_label(3)}
    files = metadata_files(name="d", converter="mnist", description="digits", file_format="tfrecord",
                           features=features, labels={"label": ["a", "b", "c"]}, options={"seed": 0},
                           sources=[], results=results(), skipped=Skips(), warnings=[])  # fmt: skip
    assert list(files)[-1] == INFO  # written last: TFDS's marker of a complete dataset
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    dataset = ExistingDataset(str(tmp_path))
    assert dataset.name == "d" and dataset.splits() == {"train": [3, 2], "test": [1]}
    assert dataset.shard_names("train") == ["d-train.tfrecord-00000-of-00002", "d-train.tfrecord-00001-of-00002"]
    assert dataset.recorded_shards()["d-test.tfrecord-00000-of-00001"]["sha256"] == "c" * 64
    assert dataset.class_names() == {"label": ["a", "b", "c"]} and dataset.options == {"seed": 0}
    assert json.loads(files[INFO])["supervisedKeys"]["tuple"]["items"] == [{"featureKey": "image"},
                                                                            {"featureKey": "label"}]  # fmt: skip


def test_supervised_keys_need_one_image_and_one_label():
    image, label = FeatureSpec.image((8, 8, 3), "png"), FeatureSpec.class_label(2)
    assert supervised_keys({"image": image, "label": label}) == ("image", "label")
    assert supervised_keys({"image": image, "label_index": label, "coarse": label}) == ("image", "label_index")
    assert supervised_keys({"image": image, "a": label, "b": label}) is None
    assert supervised_keys({"image": image, "other": image, "label": label}) is None


@pytest.mark.parametrize("content", ['{"splits": []}', "[1, 2]", '{"name": "d", "splits": 7}', "not json"])
def test_the_reader_refuses_metadata_of_the_wrong_shape_with_the_file_named(tmp_path, content):
    (tmp_path / INFO).write_text(content)
    with pytest.raises(SourceError, match=INFO):
        ExistingDataset(str(tmp_path)).info  # noqa: B018


def test_a_missing_or_odd_manifest_reads_as_empty(tmp_path):
    (tmp_path / INFO).write_text('{"name": "d", "splits": []}')
    assert ExistingDataset(str(tmp_path)).recorded_shards() == {}
    (tmp_path / MANIFEST).write_text('{"splits": {"train": {"shards": [7, {"file": 3}]}}}')
    assert ExistingDataset(str(tmp_path)).recorded_shards() == {} and ExistingDataset(str(tmp_path)).options == {}


# ---------------------------------------------------------------- converters' options


def test_a_converters_options_say_what_is_impossible_together_to_cli_and_library_alike(tmp_path, cli):
    from tfr_convert.converters.annotations.detection import DetectionOptions
    from tfr_convert.converters.images import ImagesConverter, ImagesOptions
    from tfr_convert.errors import OptionError
    from tfr_convert.pictures.imaging import DecodePolicy

    wrong = ImagesOptions(group_column="patient")
    assert wrong.problem() == (
        "--path-column, --label-column, --split-column, --group-column, --headerless-labels and --delimiter need --labels"
    )
    with pytest.raises(OptionError, match="need --labels"):
        ImagesConverter(str(tmp_path), wrong)  # before the folder is read
    assert ImagesOptions(image_format="keep", policy=DecodePolicy(resize=(8, 8))).problem().startswith("--resize")
    assert ImagesOptions().problem() is None
    assert DetectionOptions("a.csv", policy=DecodePolicy(grayscale=True)).problem().startswith("--resize and --gray")
    result = cli.convert("images", tmp_path, "--group-column", "patient", "--out", tmp_path / "o")
    assert result.exit_code == 2 and "need --labels" in result.stderr  # the same words, as a usage error


@pytest.mark.parametrize("converter", ["mnist", "emnist", "cifar"])
def test_the_published_datasets_options_are_checked_by_their_converters_before_reading(tmp_path, converter):
    import importlib

    from tfr_convert.converters.base import PublishedOptions
    from tfr_convert.errors import OptionError

    cls = {"mnist": "MnistConverter", "emnist": "EmnistConverter", "cifar": "CifarConverter"}[converter]
    make = getattr(importlib.import_module(f"tfr_convert.converters.published.{converter}"), cls)
    with pytest.raises(OptionError, match="drop --image-format raw"):
        make(str(tmp_path / "nothing-here"), PublishedOptions(image_format="raw", layout="tfds"))


def test_the_published_datasets_options_resolve_the_image_format_from_the_layout(cli, mnist_src, tmp_path):
    from tfr_convert.converters.base import PublishedOptions

    assert PublishedOptions().pixels == "raw" and PublishedOptions(layout="tfds").pixels == "png"
    assert PublishedOptions(image_format="png").pixels == "png"
    assert PublishedOptions(layout="catalog").problem() == "--layout catalog: choose tutorial, tfds"
    result = cli.convert("mnist", mnist_src[0], "--layout", "tfds", "--image-format", "raw", "--out", tmp_path / "o")
    assert result.exit_code == 2 and "drop --image-format raw" in result.stderr
    assert not (tmp_path / "o").exists()


def test_an_error_crosses_a_text_channel_as_itself_amid_other_words():
    from tfr_convert.errors import OptionError, RecordError, as_text, from_text

    error = RecordError("a.tfrecord", 3, 120, "bad CRC").locate("shard 2")
    error.hint = "try --on-error skip"
    text = f"Beam wrapped it: RuntimeError('{as_text(error)}')\n  [while running 'Encode']"
    back = from_text(text)
    assert type(back) is RecordError and str(back) == str(error) and vars(back) == vars(error)
    assert type(from_text(as_text(OptionError("--label-column x")))) is OptionError
    assert from_text("a pipeline failed without our mark") is None


def test_a_marked_token_naming_anything_but_our_errors_is_not_unpickled():
    import base64
    import pickle

    from tfr_convert.errors import from_text

    not_ours = base64.b64encode(pickle.dumps(ValueError("x"))).decode()
    assert from_text(f"<<tfr-convert error {not_ours}>>") is None
    os_system = base64.b64encode(b"cos\nsystem\n(S'true'\ntR.").decode()
    assert from_text(f"<<tfr-convert error {os_system}>>") is None
    assert from_text("<<tfr-convert error !!notbase64>>") is None


def test_an_error_crosses_as_itself_when_another_library_pickles_exceptions_its_way():
    import copyreg

    from tfr_convert.errors import SourceError, as_text, from_text

    def with_traceback(error):  # as tblib's pickling support registers for every exception class
        return (ValueError, ("pickled otherwise",))

    copyreg.pickle(SourceError, with_traceback)
    try:
        back = from_text(as_text(SourceError("rows.csv line 3: no path")))
    finally:
        del copyreg.dispatch_table[SourceError]
    assert type(back) is SourceError and str(back) == "rows.csv line 3: no path"


def test_a_converter_that_makes_no_skips_of_its_own_still_keeps_its_own():
    from helpers import Given

    from tfr_convert.converters.base import SourceContext

    class Minimal(Given):
        context = SourceContext(on_error="skip")

    first, second = Minimal(), Minimal()
    first.reject("row 3", "no label")
    assert first.skipped.total == 1
    assert second.skipped.total == 0 and Minimal().skipped.total == 0


@pytest.mark.parametrize(("raised", "code"), [("KeyboardInterrupt", 130), ("Terminated", 143)])
def test_an_interrupt_anywhere_exits_128_plus_its_signal_with_one_line(raised, code):
    from click.testing import CliRunner

    from tfr_convert import errors
    from tfr_convert.cli.translate import Command

    def interrupted() -> None:
        raise getattr(errors, raised, KeyboardInterrupt)()

    result = CliRunner().invoke(Command("x", callback=interrupted), [])
    assert result.exit_code == code
    assert result.output == "error: interrupted\n"


def test_a_skip_kind_keeps_names_and_paths_whole_taking_out_only_numbers_standing_alone():
    assert kind_of("imagenet10/train/0042.jpg: 3 bands, not 1 or 3") == "imagenet10/train/0042.jpg: N bands, not N or N"
    assert kind_of("record 12 at byte offset 345: (size 1024x768)") == "record N at byte offset N: (size 1024x768)"
    assert kind_of("resolves to /data/set10/a.png, outside") == "resolves to PATH, outside"


def test_leftover_examples_go_to_the_largest_remainders_ties_to_the_first_named():
    from tfr_convert.dataset.splits import exact_counts

    assert exact_counts(10, [0.25, 0.35, 0.4]) == [3, 3, 4]  # 2.5, 3.5, 4.0: the tie goes to the first
    assert exact_counts(10, [0.34, 0.33, 0.33]) == [4, 3, 3]
    assert exact_counts(7, [0.5, 0.5]) == [4, 3]


def test_carving_none_takes_none():
    from tfr_convert.dataset.splits import carve

    assert carve(list("abc"), 0, str, 0, "validation") == ([], list("abc"))
    with pytest.raises(SourceError, match="only 3"):
        carve(list("abc"), 4, str, 0, "validation")


def test_a_tie_in_how_far_splits_are_below_target_goes_to_the_split_named_first():
    """Two groups of one size, two halves: the group ranked first by the seed goes to the
    first split (both are equally far below their targets when it is placed)."""
    from tfr_convert.dataset.splits import rank

    spec = SplitSpec.parse("a=0.5,b=0.5")
    for seed in range(5):
        splits = assign_groups_by_ratio(["x1", "y1"], ["x", "y"], spec, seed)
        first = min(("x", "y"), key=lambda g: rank(seed, "group split", g))
        assert splits["a"] == [f"{first}1"], seed


def test_a_split_spec_is_checked_whole_and_is_a_frozen_value():
    import dataclasses

    for text, why in (
        ("train0.8", "'train0.8' is not NAME=FRACTION"),
        ("1x=0.5,b=0.5", "'1x=0.5' is not NAME=FRACTION"),
        ("a=x", "'x' is not a number"),
        ("a=0,b=1", "fraction 0 of a is not in (0, 1]"),
        ("a=1.5", "fraction 1.5 of a is not in (0, 1]"),
        ("a=0.5,a=0.5", "a split is named twice"),
        ("a=0.5,b=0.6", "fractions add up to 1.1, not 1"),
        ("a=0.5,b=0.4999", "fractions add up to 0.9999, not 1"),
        ("a=1,b=1", "fractions add up to 2, not 1"),
        ("a=-0.5,b=0.5,c=1", "fraction -0.5 of a is not in (0, 1]"),
    ):
        with pytest.raises(ValueError) as bad:
            SplitSpec.parse(text)
        assert str(bad.value) == why, text
    assert SplitSpec.parse("a=1").ratios == (("a", 1.0),)
    assert SplitSpec.parse("a=0.3333333,b=0.6666667").describe() == {"a": 0.3333333, "b": 0.6666667}
    spec = SplitSpec.parse("a=0.5,b=0.5")
    assert spec == SplitSpec.parse("a=0.5, b=0.5") and hash(spec) == hash(SplitSpec.parse("a=0.5,b=0.5"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.ratios = ()


def test_leftovers_follow_the_remainders_even_where_a_share_rounds_down_to_none():
    from tfr_convert.dataset.splits import exact_counts

    assert exact_counts(3, [0.5, 0.25, 0.25]) == [1, 1, 1]  # 1.5, 0.75, 0.75
    assert exact_counts(10, [0.31, 0.39, 0.3]) == [3, 4, 3]  # the largest remainder is the second


def test_carving_checks_its_count_every_way():
    from tfr_convert.dataset.splits import carve

    assert carve(list("abc"), 3, str, 0, "validation") == (list("abc"), [])
    with pytest.raises(SourceError):
        carve(list("abc"), -1, str, 0, "validation")


def test_tied_ranks_keep_the_source_order():
    import numpy as np

    from tfr_convert.dataset.splits import rank_order

    ranks = np.array([i % 3 for i in range(1000)], np.uint64)  # numpy's default sort is not stable here
    assert rank_order(ranks).tolist() == np.argsort(ranks, kind="stable").tolist()
    # ties that are not at the smallest rank
    later = np.array([0] + [1 + i % 2 for i in range(999)], np.uint64)
    assert rank_order(later).tolist() == np.argsort(later, kind="stable").tolist()
    distinct = np.array([9, 2, 7, 1], np.uint64)
    assert rank_order(distinct).tolist() == [3, 1, 2, 0]


def test_two_items_with_one_key_are_named_both_whatever_objects_the_keys_are():
    from tfr_convert.dataset.splits import SharedKey, seeded_order

    items = ["key#1", "other#1", "key#2"]
    with pytest.raises(SharedKey) as shared:
        seeded_order(items, lambda item: item.split("#")[0], 0, "shuffle")  # a new string each call
    assert {shared.value.first, shared.value.second} == {"key#1", "key#2"} and shared.value.key == "key"


def test_the_largest_group_is_placed_first():
    """One group of five and five of one, halves: the five go first (a tie: to the first
    half), the ones fill the other; by rank alone the ones would spread over both."""
    for seed in range(5):
        groups = ["big"] * 5 + [f"one{i}" for i in range(5)]
        items = list(range(10))
        splits = assign_groups_by_ratio(items, groups, SplitSpec.parse("a=0.5,b=0.5"), seed)
        assert splits == {"a": [0, 1, 2, 3, 4], "b": [5, 6, 7, 8, 9]}, seed


def test_assign_without_a_validation_size_carves_nothing():
    from tfr_convert.dataset.splits import assign

    assert assign({"train": list("abc")}, str, seed=0, shuffle=False) == {"train": list("abc")}


def test_groups_go_where_the_split_is_furthest_below_its_target():
    """Groups of 3, 3, 2 and 2 into 6 / 4: the first 3 to a (6 short), the other 3 to b
    (4 short against 3), the 2s to a (3 short, then a tie of 1 and 1: the first named)."""
    for seed in range(5):
        groups = ["p"] * 3 + ["q"] * 3 + ["r"] * 2 + ["s"] * 2
        splits = assign_groups_by_ratio(list(range(10)), groups, SplitSpec.parse("a=0.6,b=0.4"), seed)
        assert (len(splits["a"]), len(splits["b"])) == (7, 3), seed


def test_what_no_example_achieved_is_said_as_nothing():
    from tfr_convert.dataset.splits import achieved

    said = achieved({"a": [], "b": []}, SplitSpec.parse("a=0.5,b=0.5"), 0)
    assert said == "split 0 examples in 0 whole groups: a 0.000, b 0.000 (asked 0.5, 0.5)"


def test_a_shuffled_range_is_one_array_read_as_the_list_of_ints_it_stands_for():
    """A table's rows in seeded order: RowNumbers, not a Python int per row; it reads,
    slices, compares and digests as the list the same shuffle of a list gives."""
    import numpy as np

    from tfr_convert.dataset import splits

    items = range(10, 90)
    order = splits.seeded_order(items, str, 3, "shuffle:train")
    as_list = splits.seeded_order(list(items), str, 3, "shuffle:train")
    assert isinstance(order, RowNumbers) and order == as_list and as_list == order
    assert len(order) == 80 and list(order) == as_list and [order[i] for i in range(80)] == as_list
    assert order[3:7] == as_list[3:7] and isinstance(order[3:7], list) and type(order[0]) is int
    assert order != as_list[:-1] and order != [*as_list[:-1], -1] and order != tuple(as_list)
    assert order == RowNumbers(np.array(as_list)) and sorted(order) == list(items)
    assert np.asarray(order).dtype == np.int32 and np.asarray(order, np.int64).dtype == np.int64
    big = splits.seeded_order(range(2**31, 2**31 + 5), str, 0, "shuffle:train")
    assert np.asarray(big).dtype == np.int64 and sorted(big) == list(range(2**31, 2**31 + 5))
    long = RowNumbers(np.arange(70_000))  # read in pieces of 65 536
    assert list(long) == list(range(70_000))


def test_assign_keeps_a_range_in_source_order_and_copies_a_list():
    from tfr_convert.dataset import splits

    rows, names = range(3, 9), ["b", "a"]
    plan = splits.assign({"train": rows, "test": names}, str, seed=0, shuffle=False)
    assert plan["train"] is rows and plan["test"] == names and plan["test"] is not names


@pytest.mark.parametrize("stratified", [False, True])
@pytest.mark.parametrize("rows", [range(5, 405), range(0, 1200, 3)])
def test_ratio_splits_of_integer_rows_are_arrays_that_equal_the_lists_of_the_same_split(rows, stratified):
    """A table's rows (a range, or RowNumbers) split by ratio, carved and shuffled as
    arrays: the same rows in the same order as the same split of the list they stand for."""
    import numpy as np

    from tfr_convert.dataset import splits

    spec = SplitSpec.parse("train=0.7,validation=0.2,test=0.1")
    labels = {row: f"class{row % 7 % 3}" for row in rows}  # unequal strata, named out of order
    group = labels.__getitem__ if stratified else None
    for held in (rows, RowNumbers(np.array(list(rows), np.int64))):
        found = assign_by_ratio(held, str, spec, 4, group)
        expected = assign_by_ratio(list(rows), str, spec, 4, group)
        assert list(found) == list(expected)
        for name, items in found.items():
            assert isinstance(items, RowNumbers) and items == expected[name]
            assert np.asarray(items).dtype == np.int32
        plan = splits.assign({"train": found["train"]}, str, seed=4, shuffle=True, validation_size=30)
        listed = splits.assign({"train": expected["train"]}, str, seed=4, shuffle=True, validation_size=30)
        assert list(plan) == list(listed) == ["train", "validation"]
        for name in plan:
            assert isinstance(plan[name], RowNumbers) and plan[name] == listed[name]


def test_integer_rows_that_share_a_key_are_named_both_as_a_list_of_them_is():
    from tfr_convert.dataset import splits

    spec = SplitSpec.parse("train=0.5,test=0.5")
    with pytest.raises(splits.SharedKey) as raised:
        assign_by_ratio(range(10), lambda row: str(row % 9), spec, 0)
    assert {raised.value.first, raised.value.second} == {0, 9}


@pytest.mark.parametrize(
    "values, narrow",
    [
        ([0, 2**31 - 1], True),
        ([-(2**31), 5], True),
        ([0, 2**31], False),
        ([-(2**31) - 1, 0], False),
        ([7], True),
    ],
)
def test_rows_are_held_as_int32_exactly_where_every_value_fits(values, narrow):
    """row_array: a list, an int64 array, RowNumbers or a range (either direction) of rows
    becomes int32 where all its values fit, int64 otherwise; the values are kept."""
    import numpy as np

    expected = np.int32 if narrow else np.int64
    for held in (values, np.array(values, np.int64), RowNumbers(np.array(values, np.int64))):
        found = row_array(held)
        assert found.dtype == expected and found.tolist() == values
    low, high = min(values), max(values)
    for rows in (range(low, high + 1, max(1, high - low)), range(high, low - 1, -max(1, high - low))):
        found = row_array(rows)
        assert found.dtype == expected and found.tolist() == list(rows)
    assert row_array(range(0)).tolist() == [] and row_array(np.zeros(0, np.int64)).tolist() == []


def test_no_rows_split_by_ratio_give_every_split_empty():

    spec = SplitSpec.parse("train=0.8,test=0.2")
    for group in (None, lambda row: row % 2):
        found = assign_by_ratio(range(0), str, spec, 0, group)
        assert list(found) == ["train", "test"] and all(
            isinstance(v, RowNumbers) and len(v) == 0 for v in found.values()
        )


@pytest.mark.parametrize("rows", [range(300), range(7, 607, 2)])
def test_whole_groups_of_integer_rows_given_as_codes_split_as_the_list_of_their_names_does(rows):
    """A table's --group-column: each row's group as a code into the distinct names, the
    rows an array; the splits (and what they achieved) are those of the same rows and
    names as lists, groups of every size placed largest first."""
    import numpy as np

    rng = np.random.default_rng(len(rows))
    names = [f"g{k}" for k in range(40)]
    codes = rng.integers(0, 40, len(rows)) ** 2 % 40  # unequal group sizes, some groups absent
    spec = SplitSpec.parse("train=0.6,validation=0.3,test=0.1")
    found, said = split_by_ratio(rows, str, spec, 5, groups=GroupCodes(codes, names))
    expected, expected_said = split_by_ratio(list(rows), str, spec, 5, groups=[names[c] for c in codes.tolist()])
    assert list(found) == list(expected) and said == expected_said
    for name, items in found.items():
        assert isinstance(items, RowNumbers) and items == expected[name]
    # with a stratum, the list path: the same splits
    stratum = {row: row % 3 for row in rows}.__getitem__
    strat, _ = split_by_ratio(rows, str, spec, 5, stratum, GroupCodes(codes, names))
    assert strat == split_by_ratio(list(rows), str, spec, 5, stratum, [names[c] for c in codes.tolist()])[0]
    nothing, said = split_by_ratio(range(0), str, spec, 5, groups=GroupCodes(np.zeros(0, np.int64), names))
    assert all(len(v) == 0 for v in nothing.values()) and said == split_by_ratio([], str, spec, 5, groups=[])[1]
    # groups of one size into halves: every placement a tie, each to the split named first
    halves = SplitSpec.parse("train=0.5,test=0.5")
    even = np.repeat(np.arange(4), 5)
    tied, _ = split_by_ratio(range(20), str, halves, 5, groups=GroupCodes(even, names[:4]))
    assert tied == split_by_ratio(list(range(20)), str, halves, 5, groups=[names[c] for c in even.tolist()])[0]
    assert len(tied["train"]) == len(tied["test"]) == 10


def test_positions_by_code_lists_each_codes_positions_in_order_and_leaves_negative_ones_out():
    import numpy as np

    from tfr_convert.dataset.rows import positions_by_code

    found = positions_by_code(np.array([2, -1, 0, 2, -1, 1, 0]), 4)
    assert [p.tolist() for p in found] == [[2, 6], [5], [0, 3], []]
    assert [p.tolist() for p in positions_by_code(np.array([-1, -1]), 2)] == [[], []]
    codes = np.random.default_rng(1).integers(-1, 40, 5000)
    for count in (3, 16, 17, 40):  # a pass per code, then one sort: the same positions
        few = np.where(codes < count, codes, -1)
        found = positions_by_code(few, count)
        assert [p.tolist() for p in found] == [np.flatnonzero(few == k).tolist() for k in range(count)]


def test_a_part_of_integer_rows_is_still_an_array_and_holds_what_the_slice_holds():
    """What a forked process ranks: a part of RowNumbers stays RowNumbers (no Python int
    per row), a part of a list or a range is its slice; the ranks of the parts, joined,
    are those of the whole."""
    import numpy as np

    from tfr_convert.dataset import splits

    values = np.array([9, 4, 7, 1, 8, 3], np.int32)
    rows = RowNumbers(values)
    part = part_of(rows, 1, 4)
    assert isinstance(part, RowNumbers) and part == [4, 7, 1] and part.values.base is values
    assert part_of(list(values.tolist()), 1, 4) == [4, 7, 1] and part_of(range(10), 2, 5) == range(2, 5)
    whole = splits.rank_bytes(rows, str, 3, "shuffle:train")
    halves = [splits.rank_bytes(part_of(rows, lo, hi), str, 3, "shuffle:train") for lo, hi in ((0, 2), (2, 6))]
    assert bytes(whole) == b"".join(halves)


def test_parts_of_a_table_kept_whole_join_into_one_range_and_others_into_row_numbers():
    import numpy as np

    from tfr_convert.converters.table.rows import joined_rows

    assert joined_rows([range(0, 5), range(5, 9), range(9, 9), range(9, 12)]) == range(0, 12)
    assert isinstance(joined_rows([range(0, 5), range(5, 9)]), range)
    apart = joined_rows([range(0, 3), range(6, 8)])  # another split's part between them
    assert isinstance(apart, RowNumbers) and apart == [0, 1, 2, 6, 7]
    mixed = joined_rows([range(0, 3), np.array([4, 6]), range(7, 9)])  # rows 3 and 5 left out
    assert isinstance(mixed, RowNumbers) and mixed == [0, 1, 2, 4, 6, 7, 8]
    assert joined_rows([np.array([3, 4, 5])]) == range(3, 6)


def test_a_column_is_coded_chunk_by_chunk_as_a_whole_column_would_be():
    """--group-column / --split-column codes: one per row into the distinct texts in the
    order rows first hold them, -1 for nulls, whatever the chunks (dictionary chunks
    each with a dictionary of their own)."""
    import pyarrow as pa

    from tfr_convert.converters.table.splits import coded

    chunks = [["b", None, "a"], [], ["a", "c", "b", None]]
    flat = [v for chunk in chunks for v in chunk]
    expected = ([0, -1, 1, 1, 2, 0, -1], ["b", "a", "c"])
    for column in (
        pa.chunked_array(chunks, pa.string()),
        pa.chunked_array([pa.array(c, pa.string()).dictionary_encode() for c in chunks]),
        pa.array(flat, pa.string()),
    ):
        codes, texts = coded(column)
        assert (codes.tolist(), texts) == expected and codes.dtype.name == "int32"
    codes, texts = coded(pa.chunked_array([[3, 1], [3, None, 2]], pa.int64()))
    assert codes.tolist() == [0, 1, 0, -1, 2] and texts == ["3", "1", "2"]
    assert coded(pa.chunked_array([], pa.string()))[0].tolist() == []


@pytest.mark.parametrize("rows", [range(0, 600), range(5, 1805, 3)])
def test_strata_held_as_an_array_of_rows_split_as_the_same_strata_called_row_by_row(rows):
    """--stratify of a table: each row's class in one array indexed by row number (no
    Python call per row) gives the splits a stratum function gives, strata in the same
    order (as text: 10 before 2), absent classes and negative values included."""
    import numpy as np

    spec = SplitSpec.parse("train=0.7,validation=0.2,test=0.1")
    by_row = np.random.default_rng(len(rows)).integers(0, 12, rows.stop) ** 2 % 12  # unequal, some absent
    for values in (by_row, by_row.astype(np.uint8), by_row - 3):
        strata = RowStrata(values)
        called = {row: int(values[row]) for row in rows}.__getitem__
        for held in (rows, RowNumbers(np.array(list(rows)[::-1][::2], np.int64))):
            found = assign_by_ratio(held, str, spec, 9, strata)
            expected = assign_by_ratio(list(held), str, spec, 9, called)
            assert list(found) == list(expected)
            for name, items in found.items():
                assert isinstance(items, RowNumbers) and items == expected[name]
    assert RowStrata(by_row)(7) == int(by_row[7]) and type(RowStrata(by_row)(7)) is int


def test_an_integer_label_column_is_read_into_the_narrowest_type_that_holds_it_and_minus_one():
    import numpy as np
    import pyarrow as pa

    from tfr_convert.converters.table.splits import narrow_ints

    cases = [
        (pa.chunked_array([[3, None, 0], [], [127, 5]], pa.int64()), np.int8),
        (pa.chunked_array([[200, 1]], pa.uint8()), np.int16),
        (pa.chunked_array([[-40_000, 7], [None]], pa.int32()), np.int32),
        (pa.array([2**40, -(2**40)], pa.int64()), np.int64),
        (pa.chunked_array([[None, None]], pa.int16()), np.int8),
        (pa.chunked_array([], pa.int64()), np.int8),
    ]
    for column, dtype in cases:
        found = narrow_ints(column)
        expected = [-1 if v is None else v for v in column.to_pylist()]
        assert found.dtype == dtype and found.tolist() == expected, (column, found)


@pytest.mark.parametrize("rows", [range(0, 900), range(4, 1804, 2)])
def test_whole_groups_stratified_by_an_array_split_as_the_list_path_does(rows):
    """--group-column with --stratify on a table: each group's stratum (its items' most
    frequent, ties to the one they hold first) found with arrays, and the groups placed
    per stratum, give the splits of the list path; negative strata go the list path."""
    import numpy as np

    from tfr_convert.dataset.rows import group_strata

    rng = np.random.default_rng(len(rows))
    names = [f"p{k}" for k in range(120)]
    codes = rng.integers(0, 120, len(rows)) ** 2 % 120  # unequal groups, some absent
    by_row = rng.integers(0, 11, rows.stop)  # strata 0..10: "10" sorts before "2"
    by_row[rows[0] : rows[0] + 8] = [3, 5, 5, 3, 7, 7, 0, 0]  # (rows of one group or another: ties)
    spec = SplitSpec.parse("train=0.6,validation=0.25,test=0.15")
    for values in (by_row, by_row - 2):
        strata = RowStrata(values)
        found, said = split_by_ratio(rows, str, spec, 2, strata, GroupCodes(codes, names))
        expected, expected_said = split_by_ratio(
            list(rows), str, spec, 2, {r: int(values[r]) for r in rows}.__getitem__, [names[c] for c in codes.tolist()]
        )
        assert list(found) == list(expected) and said == expected_said
        for name, items in found.items():
            assert isinstance(items, RowNumbers) == (values.min() >= 0) and items == expected[name]
    # ties: a group of two items of strata 5 then 3 is a 5 group; of 3 then 5, a 3 group
    tied = group_strata(GroupCodes(np.array([0, 0, 1, 1, 1]), ["a", "b"]), np.array([5, 3, 3, 5, 5]))
    assert tied.tolist() == [5, 5]
    tied = group_strata(GroupCodes(np.array([0, 0, 1, 1]), ["a", "b"]), np.array([3, 5, 5, 3]))
    assert tied.tolist() == [3, 5]
    assert group_strata(GroupCodes(np.array([0, 1]), ["a", "b"]), np.array([-1, 2])) is None
    nothing = np.zeros(0, np.int64)  # no rows left of a column's groups: each a stratum all the same
    assert group_strata(GroupCodes(nothing, ["a", "b"]), nothing).tolist() == [0, 0]
