"""`tfr-convert records` re-split by the records' own features: --split-feature (a value
names the split), --stratify-feature (proportions kept) and --group-feature (groups
whole), with the images converter's rules."""

from __future__ import annotations

from collections import Counter

import pytest

from record_inputs import payloads, write_tfrecord
from tfr_convert.dataset.wire.example import parse, serialize


def records(n: int) -> list[bytes]:
    """Examples with a label (4 of 5 are 0), a patient id (groups of 1 to 6) and a fold."""
    out = []
    for i in range(n):
        out.append(
            serialize(
                {
                    "id": i,
                    "label": 0 if i % 5 else 1,
                    "patient": f"p{(i * 7) % 37}".encode(),
                    "fold": [b"train", b"validation", b"test"][i % 3],
                }
            )
        )
    return out


def value(record: bytes, name: str):
    return parse(record)[name][1][0]


def test_split_feature_puts_each_record_in_the_split_its_value_names(cli, tmp_path):
    src = write_tfrecord(tmp_path / "all.tfrecord", records(90))
    result = cli.convert("records", src, "--out", tmp_path / "out", "--split-feature", "fold", "--quiet")
    assert result.exit_code == 0, result.stderr
    for split in ("train", "validation", "test"):
        got = payloads(tmp_path / "out", split)
        assert len(got) == 30 and {value(r, "fold") for r in got} == {split.encode()}


def test_a_split_feature_value_that_is_no_split_name_or_missing_is_exit_1_naming_the_record(cli, tmp_path):
    bad = [*records(5), serialize({"id": 5, "fold": b"train set"})]
    src = write_tfrecord(tmp_path / "bad.tfrecord", bad)
    result = cli.convert("records", src, "--out", tmp_path / "out", "--split-feature", "fold", "--quiet")
    assert result.exit_code == 1
    assert "bad.tfrecord: record 5: --split-feature fold is 'train set', not a split name" in result.stderr
    result = cli.convert("records", src, "--out", tmp_path / "out", "--split-feature", "folds", "--quiet")
    assert result.exit_code == 1
    assert "record 0: no value for feature 'folds' (its features: fold, id, label, patient)" in result.stderr
    assert not (tmp_path / "out").exists()


def test_stratify_feature_keeps_each_values_proportion_in_every_split(cli, tmp_path):
    src = write_tfrecord(tmp_path / "all.tfrecord", records(500))
    result = cli.convert("records", src, "--out", tmp_path / "out", "--split", "train=0.7,test=0.3",
                         "--stratify-feature", "label", "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    counts = {s: Counter(value(r, "label") for r in payloads(tmp_path / "out", s)) for s in ("train", "test")}
    assert counts == {"train": {0: 280, 1: 70}, "test": {0: 120, 1: 30}}  # 400 and 100, each 0.7 / 0.3


def test_group_feature_keeps_every_group_in_one_split_also_when_stratified(cli, tmp_path):
    src = write_tfrecord(tmp_path / "all.tfrecord", records(370))
    for extra in ((), ("--stratify-feature", "label")):
        out = tmp_path / f"out{len(extra)}"
        result = cli.convert("records", src, "--out", out, "--split", "train=0.8,test=0.2",
                             "--group-feature", "patient", *extra)  # fmt: skip
        assert result.exit_code == 0, result.stderr
        assert "whole groups" in result.stderr  # what whole groups achieved, beside what was asked
        patients = {s: {value(r, "patient") for r in payloads(out, s)} for s in ("train", "test")}
        assert patients["train"] and patients["test"] and not patients["train"] & patients["test"]
        assert sum(len(payloads(out, s)) for s in ("train", "test")) == 370


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--split-feature", "fold", "--split", "train=0.5,test=0.5"), "--split-feature names each record's split"),
        (("--group-feature", "patient"), "give --split"),
        (("--stratify-feature", "label"), "give --split"),
        (("--split", "train=0.5,test=0.5", "--stratify"), "use --stratify-feature NAME"),
    ],
)
def test_feature_split_options_that_cannot_go_together_are_usage_errors(cli, tmp_path, args, said):
    src = write_tfrecord(tmp_path / "all.tfrecord", records(10))
    result = cli.convert("records", src, "--out", tmp_path / "out", *args)
    assert result.exit_code == 2 and said in result.stderr
