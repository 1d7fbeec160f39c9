"""The source contract (converters/base.py): a source that gives its splits, a key and the
features of an item, and declares its features, converts; everything else has a default."""

from __future__ import annotations

import json

import pytest

from tfr_convert.converters.base import Converter, Options
from tfr_convert.dataset.features import FeatureSpec
from tfr_convert.engine.local import run
from tfr_convert.engine.run_options import RunOptions
from tfr_convert.errors import OptionError, SourceError


class Squares(Converter):
    """Three methods and the features: nothing else."""

    command = "squares"

    def __init__(self):
        self.features = {"n": FeatureSpec.tensor("int64", ()), "square": FeatureSpec.tensor("int64", ())}

    def source_splits(self):
        return {"train": list(range(6)), "test": [6, 7]}

    def key(self, item):
        return f"n{item}"

    def features_of(self, item):
        if item == 99:
            raise SourceError("no square for 99")
        return {"n": item, "square": item * item}


def test_a_source_of_three_methods_and_its_features_converts_with_the_defaults(tmp_path):
    summary = run(Squares(), RunOptions(out=str(tmp_path / "out")))
    assert {s: v["examples"] for s, v in summary.to_dict()["splits"].items()} == {"train": 6, "test": 2}
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "squares-train.tfrecord-00000-of-00001" in names  # the dataset is named after the command
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["sources"] == []
    assert not [n for n in names if n.endswith(".labels.txt")]  # no labels: no label files


def test_the_defaults_name_an_item_by_its_key_and_keep_labels_per_converter():
    one, other = Squares(), Squares()
    assert one.describe(3) == "n3" and one.sources() == [] and one.recorded_options() == {}
    one.labels["n"] = ["a", "b"]
    assert other.labels == {}  # each converter's own dict, not one shared by the class


def test_a_source_missing_a_required_method_cannot_be_made():
    class NoKey(Converter):
        def __init__(self):
            self.features = {}

        def source_splits(self):
            return {}

        def features_of(self, item):
            return {}

    with pytest.raises(TypeError, match="key"):
        NoKey()


def test_begin_sets_the_default_context_and_checks_the_options():
    class Refused(Options):
        def problem(self, *about):
            return f"refused ({', '.join(about)})"

    source = Squares()
    with pytest.raises(OptionError, match=r"refused \(skip\)"):
        source.begin(Refused(), None, "skip")
    assert source.begin(Options(), None) is not None and source.context.on_error == "fail" and source.warnings == []
