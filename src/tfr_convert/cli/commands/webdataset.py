"""`tfr-convert webdataset`: the samples of webdataset tar shards."""

from __future__ import annotations

import click

from .. import options as opt
from ..running import run_conversion, source_context
from ..types import ExtensionMap

CONVERTERS = ("tfr_convert.converters.webdataset.converter:WebdatasetConverter",)


@click.command()
@click.argument("shards", nargs=-1, required=True)
@opt.classes_option("one per line: a sample's .cls N is the Nth (from 0) [default: the ids themselves].")
@click.option(
    "--map",
    "maps",
    multiple=True,
    type=ExtensionMap(),
    help="EXT=FEATURE: the feature a member of that extension becomes (EXT=label: the class label), repeated.",
)
@click.option(
    "--json-fields",
    metavar="all|none|F,F...",
    default="all",
    help="Which fields of a sample's .json become features: all, none (the .json is one bytes feature, json), or "
    "these (nested ones named a/b) [default: all].",
)
@opt.split_options("Not taken: splits are drawn by the samples' keys alone.")
@opt.image_format_option(["keep", "jpeg", "png"], "keep: pictures' bytes as they are [default: keep].")
@opt.MAX_PIXELS
@opt.common_options
def command(shards, classes_file, maps, json_fields, split, stratify, image_format, max_pixels, **common) -> None:
    """The samples of webdataset tar shards (files, globs, brace patterns such as
    data-{000..099}.tar, plain or gzipped, local or remote), an Example each: a picture as `images` keeps it,
    .cls (or .cls2) as the class label, .json's fields, .npy as a tensor, any other member as bytes.
    Splits from the shards' names (train-*.tar, val-*.tar), else --split."""
    from ...converters.webdataset.converter import WebdatasetConverter, WebdatasetOptions
    from ...pictures.imaging import DecodePolicy

    if stratify:
        raise click.UsageError("--stratify is not taken by webdataset: --split draws by the samples' keys")
    options = WebdatasetOptions(
        classes_file=classes_file,
        maps=tuple(maps),
        split=split,
        image_format=image_format or "keep",
        policy=DecodePolicy(max_pixels),
        json_fields=_json_fields(json_fields),
    )
    opt.usage_error_if(options.problem())

    def make_converter():
        from ...converters.webdataset.tars import expanded
        from ...errors import SourceError
        from ...storage import fs

        listed = []
        for pattern in shards:
            for name in expanded(pattern):
                if fs.isfile(name):
                    listed.append(name)
                    continue
                matches = sorted(m for m in fs.glob(name) if not fs.isdir(m))
                if not matches:
                    raise SourceError(f"{name}: no such shard or glob match")
                listed += matches
        from ...engine.run_options import default_workers  # the engine lists the shards in parts
        from ...engine.workers import forked_filler

        parts = forked_filler(common["workers"] or default_workers())
        # a shard named twice (two patterns that meet) is read once
        return WebdatasetConverter(list(dict.fromkeys(listed)), options, source_context(common, fill_in_parts=parts))

    run_conversion(make_converter, **common)


def _json_fields(text: str) -> tuple[str, ...]:
    """--json-fields as WebdatasetOptions takes it: ("*",) all, () none, else the names."""
    if text == "all":
        return ("*",)
    if text == "none":
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",")))
    if not all(names):
        raise click.BadParameter(f"{text!r}: all, none, or field names separated by commas", param_hint="--json-fields")
    return names
