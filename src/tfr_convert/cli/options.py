"""The options every converter shares (output, shards, format, splits, engine...), the
published datasets' source options, and the checks across options."""

from __future__ import annotations

import functools
import os
from typing import Any

import click

from .. import containers
from .types import ByteSize, DatasetName, Delimiter, LocalOrRemotePath, Size2D, Split, StorageOptions, Version


def configure_storage(ctx: click.Context, param: click.Parameter, value: dict[str, Any] | None) -> None:
    if value is not None:
        from ..storage.stores import configure

        configure(value)  # in the environment: worker processes (and Beam's) inherit it


STORAGE_OPTIONS = click.option(
    "--storage-options",
    type=StorageOptions(),
    expose_value=False,
    callback=configure_storage,
    help="fsspec options for remote paths, as JSON: for every scheme, or per scheme "
    '(\'{"s3": {"endpoint_url": "http://host:9000"}}\') [default: each backend\'s own configuration].',
)


def common_options(f):
    """Options every converter shares.

    Long on purpose: the options' list, one entry each, in the order --help shows them."""
    options = [
        click.option(
            "--out",
            "out",
            required=True,
            type=LocalOrRemotePath(file_okay=False, writable=True),
            help="Output directory: local, or a bucket's prefix (s3://, gs://, az://... through fsspec).",
        ),
        STORAGE_OPTIONS,
        click.option(
            "--name",
            type=DatasetName(),
            help="Dataset name used in shard file names [default: the variant for mnist and cifar, IMAGE_DIR's "
            "folder name for images and detection, or the nearest above it not named images, train, data...].",
        ),
        click.option("--num-shards", type=click.IntRange(min=1), help="Shards per split."),
        click.option("--examples-per-shard", type=click.IntRange(min=1), help="Examples per shard."),
        click.option("--shard-size", type=ByteSize(), help="Shards of about this size, e.g. 128MB [default: 64MiB]."),
        click.option(
            "--format",
            "file_format",
            type=click.Choice(list(containers.FORMATS)),
            default="tfrecord",
            show_default=True,
            help="Container of the shards: TFRecord, or ArrayRecord for random access (Grain, tfds.data_source).",
        ),
        click.option(
            "--compression",
            type=click.Choice(["none", "gzip", "zlib", "zstd"]),
            default="none",
            show_default=True,
            help="gzip / zlib for TFRecord; zstd for ArrayRecord.",
        ),
        click.option(
            "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every shuffle and split."
        ),
        click.option(
            "--shuffle/--no-shuffle",
            default=None,
            help="Shuffle examples within each split [default: shuffle; a table tfr-export wrote keeps its order].",
        ),
        click.option("--workers", type=click.IntRange(min=1), help="Encoding processes [default: all cores]."),
        click.option(
            "--engine",
            type=click.Choice(["local", "beam"]),
            default="local",
            show_default=True,
            help="beam: run as an Apache Beam pipeline (the beam extra: pip install 'tfr-convert[beam]').",
        ),
        click.option(
            "--beam-options",
            default="",
            metavar="TEXT",
            help='Beam pipeline options, e.g. "--runner=DataflowRunner --project=P --region=R".',
        ),
        click.option(
            "--overwrite",
            is_flag=True,
            help="Replace the dataset in a non-empty output directory (only its files), or an interrupted run's work.",
        ),
        click.option(
            "--resume", is_flag=True, help="Finish an interrupted run of the same command, keeping its finished shards."
        ),
        click.option(
            "--append",
            is_flag=True,
            help="Add the items to the dataset at OUT/NAME as a new version beside the old, whose files stay as they "
            "are (TFDS's data_dir layout; the first --append into OUT makes version 1.0.0).",
        ),
        click.option(
            "--version",
            "version",
            type=Version(),
            help="The version --append makes [default: the next minor of the newest, 1.0.0 -> 1.1.0].",
        ),
        click.option("--index", is_flag=True, help="Write <shard>.index files for DALI / the tfrecord package."),
        click.option(
            "--limit",
            type=click.IntRange(min=1),
            metavar="N",
            help="At most N examples per split (a quick trial; recorded in the manifest).",
        ),
        click.option(
            "--dry-run",
            is_flag=True,
            help="Check the inputs and print what would be written (per split: examples, shards, "
            "estimated size); write nothing.",
        ),
        click.option("--quiet", is_flag=True, help="No progress bar."),
        click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document."),
    ]
    return _apply(options, f)


def tool_options(prog_name: str, what_json_prints: str):
    """The options that close tfr-inspect's and tfr-export's lists: --json (`what_json_prints`:
    "the report", "the summary"), the storage options and --version."""
    from ..version import __version__

    options = [
        click.option("--json", "as_json", is_flag=True, help=f"Print {what_json_prints} as one JSON document."),
        STORAGE_OPTIONS,
        click.version_option(__version__, prog_name=prog_name),
    ]
    return lambda f: _apply(options, f)


def _apply(decorators, f):
    """Apply click decorators listed top to bottom, as if stacked above f."""
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def run_options(
    *,
    out,
    name,
    num_shards,
    examples_per_shard,
    shard_size,
    file_format,
    compression,
    seed,
    shuffle,
    workers,
    overwrite,
    resume,
    index,
    append=False,
    version=None,
    limit=None,
    validation_size=0,
    on_error="fail",
):
    """RunOptions from the common options; checked before any input is read."""
    from ..engine.run_options import RunOptions, default_workers
    from ..errors import OptionError
    from ..output.shards import ShardPolicy

    try:
        policy = ShardPolicy(num_shards, examples_per_shard, shard_size)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    try:
        return RunOptions(
            out=out,
            name=name,
            policy=policy,
            file_format=file_format,
            compression=compression,
            seed=seed,
            shuffle=shuffle is not False,  # None (not given): the converter may keep its order
            validation_size=validation_size,
            workers=workers or default_workers(),
            overwrite=overwrite,
            resume=resume,
            on_error=on_error,
            index=index,
            limit=limit,
            append=append,
            version=version,
        )
    except OptionError as e:  # the options' own rules (RunOptions.problem), as a usage error
        raise click.UsageError(str(e)) from None


def published_dataset_options(variants: list[str], default_help: str):
    """SRC, --download and the options every published-dataset converter shares."""
    options = [
        click.argument("src", required=False, type=LocalOrRemotePath()),
        click.option("--download", is_flag=True, help="Fetch the published files (verified by checksum) first."),
        click.option("--variant", type=click.Choice(variants), help=default_help),
        image_format_option(["raw", "png"], "raw: uint8 pixel bytes; png [default: raw, png with --layout tfds]."),
        click.option(
            "--layout",
            type=click.Choice(["tutorial", "tfds"]),
            default="tutorial",
            show_default=True,
            help="tutorial: the notebooks' feature names; tfds: exactly TFDS's catalog features, "
            "so code written for tfds.load runs on the output.",
        ),
        click.option(
            "--validation-size", type=click.IntRange(min=0), default=0, help="Carve N seeded examples out of train."
        ),
        click.option("--mirror", metavar="URL", help="Download from this base URL instead (or TFR_CONVERT_MIRROR)."),
        click.option(
            "--cache-dir",
            type=click.Path(file_okay=False),
            help="Where --download puts files [default: ~/.cache/tfr-convert/VARIANT].",
        ),
    ]

    return lambda f: _apply(options, common_options(f))  # its own options first in --help, as every command


def source_of(src, download, variant, default_variant, mirror, cache_dir):
    """Check SRC at parse time; return a function giving the source path, downloading first if asked."""

    if not download and src is None:
        raise click.UsageError("give SRC, or --download")
    from ..storage import fs

    if download and src is not None and fs.is_remote(src):
        raise click.UsageError("with --download, SRC is where the files are saved: it must be a local folder")
    if not download and not fs.is_remote(src) and not os.path.exists(src):
        raise click.BadParameter(f"{src!r} does not exist", param_hint="SRC")

    def source() -> str:
        if not download:
            return fs.local_copy(src)
        from ..storage.download import default_cache_dir, fetch

        dataset = variant or default_variant
        dest = src or os.path.join(cache_dir or default_cache_dir(), dataset)
        fetch(dataset, dest, mirror)
        return dest

    return source


DEDUPE = click.option(
    "--dedupe",
    type=click.Choice(["exact", "near", "drop"]),
    help="exact: identical files, near: near-identical pictures (perceptual hash) each kept whole in one split; "
    "drop: keep one image of each near-duplicate cluster.",
)


def split_options(stratify_help: str):
    """--split and --stratify, which needs it (the check is made here, for every command)."""

    def decorate(f):
        @functools.wraps(f)
        def checked(*args: Any, split: Any = None, stratify: bool = False, **kwargs: Any) -> Any:
            if stratify and split is None:
                raise click.UsageError("--stratify needs --split")
            return f(*args, split=split, stratify=stratify, **kwargs)

        checked = click.option("--stratify", is_flag=True, help=stratify_help)(checked)
        return click.option(
            "--split", "split", type=Split(), help="e.g. train=0.8,validation=0.1,test=0.1 [default: all train]."
        )(checked)

    return decorate


#: where a source's dataset goes: OUT itself, or OUT/NAME/1.0.0 where TFDS finds it by name
LAYOUT = click.option(
    "--layout",
    type=click.Choice(["flat", "tfds"]),
    default="flat",
    show_default=True,
    help="flat: the dataset in OUT; tfds: in OUT/NAME/1.0.0, TFDS's data_dir layout "
    "(tfds.builder(NAME, data_dir=OUT), tfds.builder_from_directory(OUT/NAME/1.0.0)).",
)

QUALITY = click.option("--quality", type=click.IntRange(1, 100), default=95, show_default=True, help="JPEG quality.")
CHROMA = click.option(
    "--chroma",
    type=click.Choice(["4:2:0", "4:4:4"]),
    default="4:2:0",
    show_default=True,
    help="JPEG chroma subsampling of what is encoded: 4:2:0 as tf.io.encode_jpeg (TFDS) and Pillow write it, "
    "or 4:4:4 (full colour resolution: larger, slower to encode).",
)


def image_format_option(choices: list[str], what: str):
    """--image-format: the encodings a command stores pictures in, said in its own terms."""
    return click.option("--image-format", type=click.Choice(choices), help=what)


def resize_option(what: str):
    """--resize WxH, said in the command's own terms (how boxes or masks follow)."""
    return click.option("--resize", type=Size2D(), help=what)


def fit_option(padding: str):
    """--fit: how --resize meets a picture of another shape; `padding`: what pads it."""
    return click.option(
        "--fit",
        type=click.Choice(["stretch", "crop", "pad"]),
        default="stretch",
        show_default=True,
        help=f"With --resize: stretch to WxH, crop to cover it, or pad to fit inside it ({padding}).",
    )


def classes_option(what: str):
    """--classes FILE: class names, one per line; `what`: their numbering and what breaks it."""
    return click.option(
        "--classes", "classes_file", type=LocalOrRemotePath(exists=True, dir_okay=False), help=f"Class names, {what}"
    )


MAX_PIXELS = click.option(
    "--max-pixels",
    type=click.IntRange(min=1),
    default=89_478_485,
    show_default=True,
    help="Refuse larger images (decompression bombs), checked from the header.",
)


CHECK = click.option(
    "--check",
    type=click.Choice(["structure", "decode"]),
    default="structure",
    show_default=True,
    help="How a picture kept as it is (keep mode) is checked: structure: a plain JPEG or PNG by its markers or "
    "chunks, as far as a decoder would find it whole, anything else decoded; decode: every picture decoded.",
)


def on_error_option(help_text: str):
    """--on-error fail|skip, said in the command's own terms."""
    return click.option(
        "--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True, help=help_text
    )


def max_record_option(what: str):
    """--max-record-size: the largest record read whole, said in the command's own terms."""
    return click.option(
        "--max-record-size",
        type=ByteSize(),
        metavar="SIZE",
        help=f"Largest record {what}; each is held in memory once per worker. [default: 64MiB]",
    )


# What audio and video label and split their files by (converters/media/folders.py's
# Labelling): their options, taken out of the command's keyword arguments together.
LABELLING = (
    "split",
    "stratify",
    "labels_csv",
    "delimiter",
    "path_column",
    "label_column",
    "split_column",
    "group_column",
)


def options_of(cls: Any, **given: Any) -> Any:
    """A command's options dataclass from the running command's click parameters, by
    name: each field named like a parameter takes its value, so no hand-kept `x=x` list
    can forget one; `given` sets the fields the command works out itself (a policy, a
    default that depends on other options, a parameter under another name)."""
    import dataclasses

    params = click.get_current_context().params
    fields = {f.name for f in dataclasses.fields(cls)}
    return cls(**{name: params[name] for name in fields - set(given) if name in params}, **given)


def labelling_of(given: dict) -> dict:
    """The labelling options, removed from `given` (what stays is the shared options)."""
    return {name: given.pop(name) for name in LABELLING}


def labelled_folder_options(files: str, groups: str):
    """How a folder of `files` is labelled and split: --labels CSV (and how it is read),
    --split..., --split-column, --group-column (`groups`: what makes a group, for its help)."""
    options = [
        labels_csv_options(files),
        split_options("Keep label proportions in every split."),
        click.option("--split-column", help="CSV column naming each row's split."),
        click.option("--group-column", help=f"CSV column whose rows must share a split ({groups})."),
    ]

    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def labels_csv_options(files: str):
    """--labels CSV and how it is read (--delimiter, --path-column, --label-column), for a
    folder of `files` (images, recordings)."""

    def decorate(f):
        for option in reversed(
            [
                click.option(
                    "--labels",
                    "labels_csv",
                    type=LocalOrRemotePath(exists=True, dir_okay=False),
                    help="CSV of paths and columns.",
                ),
                click.option(
                    "--delimiter", type=Delimiter(), help="The CSV's separator: , ; tab | [default: detected]."
                ),
                click.option("--path-column", help=f"CSV column with the {files}' paths [default: detected]."),
                click.option(
                    "--label-column", help="CSV column holding the class: it becomes a ClassLabel with names."
                ),
            ]
        ):
            f = option(f)
        return f

    return decorate


def usage_error_if(problem: str | None) -> None:
    """A converter's options found impossible together (its options class says why): exit 2."""
    if problem is not None:
        raise click.UsageError(problem)
