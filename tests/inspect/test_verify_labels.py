"""tfr-inspect --verify holds each label to its ClassLabel: a value past the names is a
problem (exit 1, naming the split, the values, the first shard and record); -1, TFDS's
"no label" (GLUE's test splits hold it), is a note, not a problem; a dataset whose
labels are all named has neither."""

from __future__ import annotations

import json

import tensorflow as tf
import tensorflow_datasets as tfds


class Reviews(tfds.core.GeneratorBasedBuilder):
    """GLUE's shape: text and a ClassLabel, the test split without labels (-1)."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        features = {"text": tfds.features.Text(), "label": tfds.features.ClassLabel(names=["neg", "pos"])}
        return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict(features))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(0, 6, True), "test": self._generate_examples(6, 9, False)}

    def _generate_examples(self, first, stop, labelled):
        for i in range(first, stop):
            yield f"k{i}", {"text": f"review {i}", "label": i % 2 if labelled else -1}


def _verify(cli, directory):
    result = cli.inspect(directory, "--verify", "--json")
    return result.exit_code, json.loads(result.stdout)


def test_labels_past_the_names_fail_verify_and_minus_one_is_a_note(cli, tmp_path):
    Reviews(data_dir=str(tmp_path)).download_and_prepare()
    prepared = tmp_path / "reviews" / "1.0.0"
    code, report = _verify(cli, prepared)
    (dataset,) = report["datasets"]
    assert code == 0 and dataset["problems"] == []
    assert any("3 records hold 'label' -1" in note and "split test" in note for note in dataset["notes"])
    text = cli.inspect(prepared, "--verify").stdout
    assert "NOTE" in text and "-1, no class of ClassLabel 'label' (2 names)" in text

    features = json.loads((prepared / "features.json").read_text())
    features["featuresDict"]["features"]["label"]["classLabel"]["numClasses"] = "1"  # metadata that lost a name
    (prepared / "features.json").write_text(json.dumps(features))
    code, report = _verify(cli, prepared)
    (problem,) = report["datasets"][0]["problems"]
    assert code == 1 and problem["kind"] == "label_outside_names"
    assert problem["message"].startswith("split train: 3 values of ClassLabel 'label' (1 name) outside 0..0 (1;")
    shard, record = problem["message"].rsplit("first in ", 1)[1].rstrip(")").split(" record ")
    assert shard == "reviews-train.tfrecord-00000-of-00001" and problem["file"] == shard
    named = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(prepared / shard))]
    assert named[int(record)].features.feature["label"].int64_list.value == [1]  # the first record past the names


def test_a_dataset_whose_labels_are_all_named_has_no_label_finding(cli, tmp_path, mnist_src):
    assert cli.convert("mnist", mnist_src[0], "--out", tmp_path / "m").exit_code == 0
    code, report = _verify(cli, tmp_path / "m")
    assert code == 0 and report["datasets"][0]["problems"] == []
    assert not any("ClassLabel" in note for note in report["datasets"][0]["notes"])
