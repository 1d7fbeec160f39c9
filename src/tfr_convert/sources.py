"""What a source of one's own needs, in one stable place: a plugin imports only this.

A plugin is a package whose click command is registered under the entry-point group
`tfr_convert.converters` (ENTRY_POINTS), in its pyproject.toml:

    [project.entry-points."tfr_convert.converters"]
    NAME = "package.module:command"

Once it is installed, `tfr-convert NAME` runs that command (a built-in command of the
same name wins). The command declares its own options, takes the options every source
shares (`common_options`: --out, splits' seed, shards, workers, ...) and calls
`run_conversion(make_converter, **common)` with a function that builds its
`Converter` (the built-in ones take `(source, options, source_context(common))`): the
engines, containers, output and metadata are tfr-convert's, so the
plugin's records are written, verified and resumed as the built-in sources' are.
A source that draws its own splits by ratio (a --split of its own items) uses
`split_by_ratio(items, key, SplitSpec.parse("train=0.8,test=0.2"), seed)`, as the
built-in ones do: the same items, key and seed give the same splits.
"""

from __future__ import annotations

from .cli.convert import ENTRY_POINTS
from .cli.options import (
    CHECK,
    CHROMA,
    MAX_PIXELS,
    QUALITY,
    common_options,
    image_format_option,
    on_error_option,
    resize_option,
    split_options,
    usage_error_if,
)
from .cli.running import run_conversion, source_context
from .converters.base import Converter
from .dataset.features import FeatureSpec
from .dataset.splits import SplitSpec, split_by_ratio
from .errors import SourceError

__all__ = [
    "CHECK",
    "CHROMA",
    "ENTRY_POINTS",
    "MAX_PIXELS",
    "QUALITY",
    "Converter",
    "FeatureSpec",
    "SourceError",
    "SplitSpec",
    "common_options",
    "image_format_option",
    "on_error_option",
    "resize_option",
    "run_conversion",
    "source_context",
    "split_by_ratio",
    "split_options",
    "usage_error_if",
]
