"""A plugin source: the numbers 0..N-1 with their parity as a class label, written
through tfr_convert.sources only."""

from __future__ import annotations

import click

from tfr_convert.sources import Converter, FeatureSpec, common_options, run_conversion


class Counting(Converter):
    command = "counting"
    dataset_name = "counting"
    description = "The numbers 0..N-1, a plugin's source."

    def __init__(self, n: int) -> None:
        self.n = n
        self.features = {"number": FeatureSpec.tensor("int64"), "label": FeatureSpec.class_label(2)}
        self.labels = {"label": ["even", "odd"]}

    def source_splits(self):
        return {"train": list(range(self.n))}

    def key(self, item):
        return str(item)

    def describe(self, item):
        return f"number {item}"

    def features_of(self, item):
        return {"number": item, "label": item % 2}

    def sources(self):
        return []

    def recorded_options(self):
        return {"n": self.n}


@click.command()
@click.option("--n", type=click.IntRange(min=1), default=10, show_default=True, help="How many numbers.")
@common_options
def command(n, **common) -> None:
    """The numbers 0..N-1 (a plugin)."""
    run_conversion(lambda: Counting(n), **common)
