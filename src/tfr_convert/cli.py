"""The `tfr-convert` and `tfr-inspect` commands: parse, validate, call the library.

Exit codes: 0 success, 1 a data or I/O error (the library's TfrConvertError, or
an OSError, translated once in `_Translating`), 2 a usage error (click's own).
Results go to stdout, progress and errors to stderr.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from typing import Any

import click

from . import __version__
from .errors import TfrConvertError

# Set before anything here imports numpy (a caller's own settings win). The commands do
# no linear algebra, so BLAS need not start a thread per core at import. And numpy's
# advice to back large arrays with huge pages makes the kernel compact memory to find
# them at the first touch of each array: on a busy machine that stall, not the work,
# decides how long a conversion of arrays written once and dropped takes.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

_SIZE_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}  # fmt: skip


class LocalOrRemotePath(click.Path):
    """click.Path for local paths; a path with a scheme (s3://...) is taken as it is
    and checked when it is opened (through fsspec, which only then is imported)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from .fs import is_remote

        if is_remote(str(value)):
            return str(value)
        return super().convert(value, param, ctx)


class ByteSize(click.ParamType):
    """`128MB` (SI), `64MiB` / `64M` (binary) or plain bytes."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
        if not m or m[2].lower() not in _SIZE_UNITS:
            self.fail(f"{value!r} is not a size like 128MB, 64MiB or 1000000", param, ctx)
        size = int(float(m[1]) * _SIZE_UNITS[m[2].lower()])
        if size < 1:
            self.fail(f"{value!r} must be at least one byte", param, ctx)
        return size


class StorageOptions(click.ParamType):
    """`--storage-options`: a JSON object of fsspec options, for every remote path
    ({"endpoint_url": ...}) or per scheme ({"s3": {...}, "gs": {...}})."""

    name = "JSON"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> dict[str, Any]:
        from .stores import parse_options

        if isinstance(value, dict):
            return value
        try:
            return parse_options(str(value))
        except ValueError as e:
            self.fail(f"{value!r}: {e}", param, ctx)


def _configure_storage(ctx: click.Context, param: click.Parameter, value: dict[str, Any] | None) -> None:
    if value is not None:
        from .stores import configure

        configure(value)  # in the environment: worker processes (and Beam's) inherit it


STORAGE_OPTIONS = click.option(
    "--storage-options",
    type=StorageOptions(),
    expose_value=False,
    callback=_configure_storage,
    help="fsspec options for remote paths, as JSON: for every scheme, or per scheme "
    '(\'{"s3": {"endpoint_url": "http://host:9000"}}\') [default: each backend\'s own configuration].',
)


class DatasetName(click.ParamType):
    """A name usable in shard file names and by TFDS: letters, digits, underscores."""

    name = "name"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", str(value)):
            self.fail(f"{value!r}: use letters, digits and underscores, starting with a letter", param, ctx)
        return str(value)


class _Translating:
    """Turns the library's errors into one line on stderr and their exit code (1; 2 for a
    missing optional dependency)."""

    def invoke(self, ctx: click.Context) -> Any:
        code = 1
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except TfrConvertError as e:
            message, code = str(e), e.exit_code
        except OSError as e:
            message = f"{e.filename}: {e.strerror}" if e.filename else str(e)
        except KeyboardInterrupt:
            message = "interrupted"
        from .fs import named_back  # a remote source's local copy is named as the source

        click.echo(f"error: {named_back(message)}", err=True)
        ctx.exit(code)


class _Group(_Translating, click.Group):
    pass


class _Command(_Translating, click.Command):
    pass


def _progress_bar(quiet: bool):
    """(a `progress(n, total)` callback drawing a tqdm bar on stderr, or None; a closer).

    On a terminal only. The phases are labelled: a "checking sources" line while the
    inputs are listed and checked (before any total is known), then the bar,
    "converting", which stays on screen when done (also in a `script` log)."""
    if quiet or not sys.stderr.isatty():
        return None, lambda: None
    from tqdm import tqdm

    sys.stderr.write("checking sources...")
    sys.stderr.flush()
    bars = []

    def update(n: int, total: int) -> None:
        if not bars:  # created on the first call, when the total is known
            sys.stderr.write("\r\033[K")  # the status line gives way to the bar
            try:  # a pseudo-terminal without a size (`script` run from a pipe) says 0x0,
                sized = os.get_terminal_size(sys.stderr.fileno()).columns > 0  # and tqdm then hides its bar
            except OSError:
                sized = False
            shape = {"dynamic_ncols": True} if sized else {"ncols": 80, "nrows": 24}
            bars.append(tqdm(total=total, unit="ex", desc="converting", file=sys.stderr, **shape))
        bars[0].update(n)

    def close() -> None:
        if bars:
            bars[0].close()
        else:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()

    return update, close


# ---------------------------------------------------------------- tfr-convert


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tfr-convert")
def convert() -> None:
    """Convert MNIST, CIFAR and image folders to sharded TFRecord (or ArrayRecord) datasets."""


def common_options(f):
    """Options every converter shares."""
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
            help="Dataset name used in shard file names [default: the variant for mnist and cifar, the folder name for images].",
        ),
        click.option("--num-shards", type=click.IntRange(min=1), help="Shards per split."),
        click.option("--examples-per-shard", type=click.IntRange(min=1), help="Examples per shard."),
        click.option(
            "--shard-size", type=ByteSize(), help="Shards of at least this size, e.g. 128MB [default: 64MiB]."
        ),
        click.option(
            "--format",
            "file_format",
            type=click.Choice(["tfrecord", "array_record"]),
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
            "--shuffle/--no-shuffle", default=True, show_default=True, help="Shuffle examples within each split."
        ),
        click.option("--workers", type=click.IntRange(min=1), help="Encoding processes [default: all cores]."),
        click.option(
            "--engine",
            type=click.Choice(["local", "beam"]),
            default="local",
            show_default=True,
            help="beam: run as an Apache Beam pipeline (pip install 'tfr-convert[beam]').",
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


def _apply(decorators, f):
    """Apply click decorators listed top to bottom, as if stacked above f."""
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def _run_options(*, out, name, num_shards, examples_per_shard, shard_size, file_format, compression, seed, shuffle,
                 workers, overwrite, resume, index, limit=None, validation_size=0, on_error="fail"):  # fmt: skip
    """RunOptions from the common options; checked before any input is read."""
    from . import containers
    from .engine import RunOptions, default_workers
    from .shards import ShardPolicy

    container = containers.get(file_format)
    if compression not in container.compressions:
        raise click.UsageError(
            f"--compression {compression} does not apply to --format {file_format} "
            f"(choose {', '.join(container.compressions)})"
        )
    if not container.available():
        raise click.UsageError(
            f"--format {file_format} needs its library: pip install 'tfr-convert[{container.extra}]'"
        )
    if index and file_format != "tfrecord":
        raise click.UsageError("--index is for TFRecord shards (ArrayRecord files carry their own index)")
    if sum(x is not None for x in (num_shards, examples_per_shard, shard_size)) > 1:
        raise click.UsageError("give at most one of --num-shards, --examples-per-shard, --shard-size")
    if index and compression != "none":
        raise click.UsageError("--index needs --compression none (index offsets point into the file)")
    return RunOptions(
        out=out,
        name=name,
        policy=ShardPolicy(num_shards, examples_per_shard, shard_size),
        file_format=file_format,
        compression=compression,
        seed=seed,
        shuffle=shuffle,
        validation_size=validation_size,
        workers=workers or default_workers(),
        overwrite=overwrite,
        resume=resume,
        on_error=on_error,
        index=index,
        limit=limit,
    )


def _run(make_converter, quiet: bool, as_json: bool, engine: str, beam_options: str, dry_run: bool,
         **common) -> None:  # fmt: skip
    """Validate options, build the converter (reads and checks sources), convert, report."""
    import time

    options = _run_options(**common)
    if engine == "beam":
        from . import beam_engine

        if not beam_engine.available():
            raise click.UsageError(beam_engine.INSTALL_HINT)
        if options.resume:
            raise click.UsageError("--resume is for --engine local (Beam's runners retry failed work themselves)")
        run = functools.partial(beam_engine.run, beam_options=beam_options, quiet=quiet)
    else:
        if beam_options:
            raise click.UsageError("--beam-options needs --engine beam")
        from .pipeline import run
    started = time.perf_counter()
    _terminate_as_interrupt()
    progress, close_bar = _progress_bar(quiet)
    try:
        converter = make_converter()
        if dry_run:
            close_bar()
            _print_plan(converter, options, quiet, as_json)
            return
        summary = run(converter, options, progress=progress)
    finally:
        close_bar()
    summary.seconds = time.perf_counter() - started  # reading and checking the sources included
    try:
        _report(summary, quiet, as_json)
    except OSError as e:  # stdout full or gone: the dataset is committed all the same
        _silence_stdout()
        click.echo(f"warning: {summary.out} is complete; its summary could not be written to stdout: "
                   f"{e.strerror or e}", err=True)  # fmt: skip


def _silence_stdout() -> None:
    """Later flushes of stdout (the one at exit too) go nowhere instead of failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _report(summary, quiet: bool, as_json: bool) -> None:
    """The warnings and skips on stderr, the one-line summary (or --json) on stdout."""
    from . import fs
    from .inspect.summary import counted, human_bytes

    if not quiet:
        for warning in summary.warnings:
            click.echo(f"warning: {fs.named_back(warning)}", err=True)
        for skipped in summary.skipped.listed:
            click.echo(f"skipped: {skipped['item']}: {skipped['reason']}", err=True)
        more = summary.skipped.total - len(summary.skipped.listed)
        if more:
            kinds = "; ".join(f"{n} x {kind}" for kind, n in summary.skipped.by_kind.most_common(5))
            click.echo(f"skipped: ... and {more} more (listed in manifest.json by kind: {kinds})", err=True)
    if as_json:
        click.echo(json.dumps(summary.to_dict(), indent=2))
        return
    per_split = ", ".join(f"{split} {s['examples']}" for split, s in summary.splits.items())
    shards = sum(s["shards"] for s in summary.splits.values())
    size = human_bytes(sum(s["bytes"] for s in summary.splits.values()))
    skipped = f" ({summary.skipped.total} skipped, listed in manifest.json)" if summary.skipped.total else ""
    click.echo(
        f"{summary.name}: {per_split} examples in {counted(shards, 'shard')}, {size}, {summary.seconds:.1f} s -> "
        f"{summary.out}"
        f"{skipped}"
    )


def _print_plan(converter, options, quiet: bool, as_json: bool) -> None:
    from .engine import dry_run
    from .inspect.summary import counted, human_bytes

    plan = dry_run(converter, options)
    if as_json:
        click.echo(json.dumps({"mode": "dry_run", **plan}, indent=2))
        return
    if not quiet:
        for warning in plan["warnings"]:
            click.echo(f"warning: {warning}", err=True)
    click.echo(f"dry run: nothing written. {plan['name']} -> {plan['out']} ({plan['format']})")
    for split, s in plan["splits"].items():
        click.echo(f"  {split}: {counted(s['examples'], 'example')} in {counted(s['shards'], 'shard')}, "
                   f"about {human_bytes(s['estimated_bytes'])}")  # fmt: skip
    if plan["skipped"]:
        click.echo(f"  {plan['skipped']} items would be skipped (run without --dry-run to list them)")


def _terminate_as_interrupt() -> None:
    """SIGTERM (a CI timeout, `kill`, a preempted VM) ends a run as Ctrl-C does:
    the unfinished shard removed, the finished ones kept for --resume."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


# converters.emnist.VARIANTS, spelled out: importing the converter (numpy) to build the
# command line would slow every start-up; a test keeps the two equal
EMNIST_VARIANTS = ("emnist/byclass", "emnist/bymerge", "emnist/balanced", "emnist/letters", "emnist/digits",
                   "emnist/mnist")  # fmt: skip


def published_dataset_options(variants: list[str], default_help: str):
    """SRC, --download and the options every published-dataset converter shares."""
    options = [
        click.argument("src", required=False, type=LocalOrRemotePath()),
        click.option("--download", is_flag=True, help="Fetch the published files (verified by checksum) first."),
        click.option("--variant", type=click.Choice(variants), help=default_help),
        click.option(
            "--image-format",
            type=click.Choice(["raw", "png"]),
            help="raw: uint8 pixel bytes; png [default: raw, png with --layout tfds].",
        ),
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

    return lambda f: common_options(_apply(options, f))


def _source(src, download, variant, default_variant, mirror, cache_dir):
    """Check SRC at parse time; return a function giving the source path, downloading first if asked."""
    import os

    if not download and src is None:
        raise click.UsageError("give SRC, or --download")
    from . import fs

    if download and src is not None and fs.is_remote(src):
        raise click.UsageError("with --download, SRC is where the files are saved: it must be a local folder")
    if not download and not fs.is_remote(src) and not os.path.exists(src):
        raise click.BadParameter(f"{src!r} does not exist", param_hint="SRC")

    def source() -> str:
        if not download:
            return fs.stage(src)
        from .download import default_cache_dir, fetch

        dataset = variant or default_variant
        dest = src or os.path.join(cache_dir or default_cache_dir(), dataset)
        fetch(dataset, dest, mirror)
        return dest

    return source


@convert.command()
@published_dataset_options(
    ["mnist", "fashion_mnist", "kmnist", *EMNIST_VARIANTS],
    "[default: EMNIST's one variant in SRC; else detected from checksums, else mnist]",
)
def mnist(src, download, variant, image_format, layout, mirror, cache_dir, **common) -> None:
    """MNIST-family idx files (MNIST, Fashion-MNIST, KMNIST) in the directory SRC, or
    EMNIST: NIST's gzip.zip, or a folder of the files extracted from it."""
    image_format = _layout_format(layout, image_format)
    if download and variant in EMNIST_VARIANTS:
        raise click.UsageError(
            "--download knows no published checksum for EMNIST: fetch gzip.zip from "
            "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip and give it as SRC"
        )
    source = _source(src, download, variant, "mnist", mirror, cache_dir)

    def converter():
        from .converters.emnist import EmnistConverter, looks_like_emnist
        from .converters.mnist import MnistConverter

        path = source()
        if variant in EMNIST_VARIANTS or (variant is None and looks_like_emnist(path)):
            return EmnistConverter(path, variant, image_format, layout)
        return MnistConverter(path, variant, image_format, layout)

    _run(converter, **common)


def _layout_format(layout: str, image_format: str | None) -> str:
    if layout == "tfds" and image_format == "raw":
        raise click.UsageError("--layout tfds stores PNG images, as TFDS's catalog does: drop --image-format raw")
    return image_format or ("png" if layout == "tfds" else "raw")


@convert.command()
@published_dataset_options(["cifar10", "cifar100"], "[default: detected from the files]")
@click.option(
    "--binary",
    is_flag=True,
    help="With --download: fetch the binary version (what TFDS downloads) instead of the python pickles.",
)
def cifar(src, download, variant, binary, image_format, layout, mirror, cache_dir, **common) -> None:
    """CIFAR-10/100, python pickles or the binary version: SRC is the extracted folder or
    the downloaded .tar.gz.

    Pickles are loaded through an allowlist (plain data and numeric arrays only),
    never with pickle.load.
    """
    from .converters.cifar import CifarConverter

    image_format = _layout_format(layout, image_format)
    if binary and not download:
        raise click.UsageError("--binary chooses what --download fetches; SRC's format is detected: drop --binary")
    # the binary archives are listed as datasets of their own, cached beside the pickles
    suffix = "-binary" if binary else ""
    source = _source(src, download, variant and variant + suffix, "cifar10" + suffix, mirror, cache_dir)
    _run(lambda: CifarConverter(source(), variant, image_format, layout), **common)


class Split(click.ParamType):
    """`train=0.8,validation=0.1,test=0.1`."""

    name = "split"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        from .splits import SplitSpec

        try:
            return SplitSpec.parse(str(value))
        except ValueError as e:
            self.fail(f"{value!r}: {e}", param, ctx)


class Size2D(click.ParamType):
    """`WxH`, e.g. 224x224."""

    name = "WxH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, int]:
        m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", str(value))
        if not m or int(m[1]) < 1 or int(m[2]) < 1:
            self.fail(f"{value!r} is not WIDTHxHEIGHT, e.g. 224x224", param, ctx)
        return int(m[1]), int(m[2])


class Color(click.ParamType):
    """`R,G,B` or `white` / `black`."""

    name = "R,G,B"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, int, int]:
        named = {"white": (255, 255, 255), "black": (0, 0, 0)}
        if str(value).lower() in named:
            return named[str(value).lower()]
        parts = str(value).split(",")
        if len(parts) != 3 or not all(p.strip().isdigit() and int(p) <= 255 for p in parts):
            self.fail(f"{value!r} is not R,G,B with values 0..255 (or white, black)", param, ctx)
        return int(parts[0]), int(parts[1]), int(parts[2])


class Delimiter(click.ParamType):
    """A CSV separator: one character, or `tab`."""

    name = "separator"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = "\t" if str(value).lower() in ("tab", "\\t") else str(value)
        if len(text) != 1 or text in '"\r\n' or text.isalnum():
            self.fail(f"{value!r} is not a separator like , ; tab or |", param, ctx)
        return text


DEDUPE = click.option(
    "--dedupe",
    type=click.Choice(["exact", "near", "drop"]),
    help="exact: identical files, near: near-identical pictures (perceptual hash) each kept whole in one split; "
    "drop: keep one image of each near-duplicate cluster.",
)


@convert.command()
@click.argument("image_dir", type=LocalOrRemotePath(exists=True, file_okay=False))
@click.option("--labels", "labels_csv", type=LocalOrRemotePath(exists=True, dir_okay=False),
              help="CSV of paths and columns.")  # fmt: skip
@click.option("--delimiter", type=Delimiter(), help="The CSV's separator: , ; tab | [default: detected].")
@click.option("--path-column", help="CSV column with image paths [default: detected].")
@click.option("--label-column", help="CSV column holding the class: it becomes a ClassLabel with names.")
@click.option(
    "--headerless-labels",
    is_flag=True,
    help="The CSV has no header and one value per image, in sorted file order (the face/age tutorial's age.csv).",
)
@click.option("--split", "split", type=Split(), help="e.g. train=0.8,validation=0.1,test=0.1 [default: all train].")
@click.option("--stratify", is_flag=True, help="Keep label proportions in every split.")
@click.option("--split-column", help="CSV column naming each row's split.")
@click.option("--group-column", help="CSV column whose rows must share a split (a patient, a video, a source image).")
@DEDUPE
@click.option(
    "--image-format",
    type=click.Choice(["keep", "png", "jpeg", "raw"]),
    help="keep: original bytes; raw: uint8 pixels [default: keep, or png with --resize/--grayscale].",
)
@click.option("--keep-exact", is_flag=True,
              help="keep: store every image's bytes as they are, even those TensorFlow cannot decode upright "
                   "(webp, tiff, EXIF-rotated), which are otherwise re-encoded; they are listed.")  # fmt: skip
@click.option("--quality", type=click.IntRange(1, 100), default=95, show_default=True, help="JPEG quality.")
@click.option("--resize", type=Size2D(), help="Resize every image to WxH.")
@click.option(
    "--fit",
    type=click.Choice(["stretch", "crop", "pad"]),
    default="stretch",
    show_default=True,
    help="With --resize: stretch to WxH, crop to cover it, or pad to fit inside it (with --background).",
)
@click.option(
    "--color",
    type=click.Choice(["rgb", "grayscale"]),
    help="Make every image 3-channel RGB or 1-channel grayscale [default: as the source].",
)
@click.option("--grayscale", is_flag=True, help="Same as --color grayscale.")
@click.option("--gray-method", type=click.Choice(["luma", "mean"]), default="luma", show_default=True)
@click.option("--background", type=Color(), default="white", show_default=True, help="Colour behind transparency.")
@click.option("--max-pixels", type=click.IntRange(min=1), default=89_478_485, show_default=True,
              help="Refuse larger images (decompression bombs), checked from the header.")  # fmt: skip
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="skip: leave out bad images and rows, and list them.")  # fmt: skip
@common_options
def images(image_dir, labels_csv, delimiter, path_column, label_column, headerless_labels, split, stratify, split_column,
           group_column, dedupe, image_format, keep_exact, quality, resize, fit, color, grayscale, gray_method, background, max_pixels, on_error,
           **common) -> None:  # fmt: skip
    """A folder of images, labelled by a CSV (--labels) or by class sub-folders."""
    from .converters.images import ImagesConverter
    from .converters.imaging import DecodePolicy

    if labels_csv is None and (path_column or label_column or split_column or group_column or headerless_labels
                               or delimiter):  # fmt: skip
        raise click.UsageError(
            "--path-column, --label-column, --split-column, --group-column, --headerless-labels and --delimiter "
            "need --labels"
        )
    if group_column and split is None:
        raise click.UsageError("--group-column keeps groups whole across --split's fractions: give --split")
    if dedupe in ("exact", "near") and split_column:
        raise click.UsageError(
            "--split-column fixes each row's split, so --dedupe exact|near cannot keep duplicates together; "
            "--dedupe drop keeps one of each"
        )
    if split is not None and split_column is not None:
        raise click.UsageError("give --split or --split-column, not both")
    if stratify and split is None:
        raise click.UsageError("--stratify needs --split")
    if grayscale and color == "rgb":
        raise click.UsageError("--grayscale is --color grayscale: give one of them")
    grayscale = grayscale or color == "grayscale"
    if fit != "stretch" and not resize:
        raise click.UsageError("--fit needs --resize WxH")
    if image_format == "keep" and (resize or color or grayscale):
        raise click.UsageError("--resize and --color re-encode: use --image-format png, jpeg or raw")
    image_format = image_format or ("png" if resize or color or grayscale else "keep")
    if keep_exact and image_format != "keep":
        raise click.UsageError("--keep-exact is for --image-format keep")
    policy = DecodePolicy(max_pixels, background, grayscale, gray_method, resize, rgb=color == "rgb", fit=fit)

    def make_converter():  # a remote IMAGE_DIR / CSV is read in place, through tf.io.gfile
        from .engine import default_workers  # the engine runs the listing's parts
        from .workers import forked_parts

        return ImagesConverter(
            image_dir,
            labels_csv=labels_csv,
            delimiter=delimiter,
            out=common["out"],
            path_column=path_column,
            label_column=label_column,
            headerless_labels=headerless_labels,
            split=split,
            stratify=stratify,
            split_column=split_column,
            group_column=group_column,
            dedupe=dedupe,
            seed=common["seed"],
            image_format=image_format,
            keep_exact=keep_exact,
            quality=quality,
            policy=policy,
            on_error=on_error,
            in_parts=forked_parts(common["workers"] or default_workers()),
        )

    _run(make_converter, on_error=on_error, **common)


@convert.command()
@click.argument("image_dir", type=LocalOrRemotePath(exists=True, file_okay=False))
@click.option("--annotations", required=True, type=LocalOrRemotePath(exists=True),
              help="The boxes: a CSV, a COCO .json, or a folder of VOC .xml or YOLO .txt files.")  # fmt: skip
@click.option("--annotation-format", type=click.Choice(["auto", "csv", "voc", "coco", "yolo"]), default="auto",
              show_default=True, help="auto: from PATH (.csv, .json, a folder of .xml or of .txt).")  # fmt: skip
@click.option("--classes", "classes_file", type=LocalOrRemotePath(exists=True, dir_okay=False),
              help="Class names, one per line (label 1 first): a box of any other class is an error.")  # fmt: skip
@click.option("--split", "split", type=Split(), help="e.g. train=0.8,validation=0.1,test=0.1 [default: all train].")
@click.option("--stratify", is_flag=True, help="Keep the proportions of each image's main class in every split.")
@click.option("--image-format", type=click.Choice(["keep", "jpeg", "png"]),
              help="keep: JPEG/PNG bytes as they are [default: keep, or jpeg with --resize/--grayscale].")  # fmt: skip
@click.option("--quality", type=click.IntRange(1, 100), default=95, show_default=True, help="JPEG quality.")
@click.option("--resize", type=Size2D(), help="Resize every image to WxH (stretched: normalized boxes stay right).")
@click.option("--grayscale", is_flag=True, help="Store 1-channel grayscale images.")
@click.option("--max-pixels", type=click.IntRange(min=1), default=89_478_485, show_default=True,
              help="Refuse larger images (decompression bombs), checked from the header.")  # fmt: skip
@click.option("--skip-empty", is_flag=True, help="Leave out images without boxes (kept as negatives by default).")
@DEDUPE
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="skip: leave out images with a bad annotation or file, and list them.")  # fmt: skip
@common_options
def detection(image_dir, annotations, annotation_format, classes_file, split, stratify, image_format, quality, resize,
              grayscale, max_pixels, skip_empty, dedupe, on_error, **common) -> None:  # fmt: skip
    """IMAGE_DIR's images with bounding boxes (CSV, Pascal VOC, COCO or YOLO annotations),
    in the TensorFlow Object Detection API's layout, with label_map.pbtxt."""
    from .converters.detection import DetectionConverter
    from .converters.imaging import DecodePolicy

    if stratify and split is None:
        raise click.UsageError("--stratify needs --split")
    if image_format == "keep" and (resize or grayscale):
        raise click.UsageError("--resize and --grayscale re-encode: use --image-format jpeg or png")
    image_format = image_format or ("jpeg" if resize or grayscale else "keep")
    policy = DecodePolicy(max_pixels, grayscale=grayscale, resize=resize)

    def make_converter():  # remote annotations are read from local copies; images in place
        from . import fs

        return DetectionConverter(
            image_dir,
            annotations=fs.stage(annotations),
            annotation_format=annotation_format,
            classes_file=fs.stage(classes_file),
            out=common["out"],
            split=split,
            stratify=stratify,
            seed=common["seed"],
            image_format=image_format,
            quality=quality,
            policy=policy,
            on_error=on_error,
            skip_empty=skip_empty,
            dedupe=dedupe,
        )

    _run(make_converter, on_error=on_error, **common)


# ---------------------------------------------------------------- tfr-inspect


@click.command(cls=_Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--count", is_flag=True, help="Only count records (framing and length CRCs; fast).")
@click.option("--head", type=click.IntRange(min=0), default=1, show_default=True, help="Examples to show.")
@click.option("--verify", is_flag=True, help="Check every record's CRCs (and a dataset against its metadata).")
@click.option("--stats", is_flag=True, help="Per-feature statistics; split leakage on a dataset directory.")
@click.option("--grid", "grid_out", type=LocalOrRemotePath(dir_okay=False), metavar="OUT.png",
              help="Draw the first images.")  # fmt: skip
@click.option("--grid-count", type=click.IntRange(1, 1024), default=64, show_default=True, help="Images in --grid.")
@click.option("--write-index", is_flag=True, help="Write FILE.index (DALI / tfrecord package format) for each file.")
@click.option("--all", "every", is_flag=True, help="Infer the schema from every record, not the first of each file.")
@click.option("--max-record-size", type=ByteSize(), metavar="SIZE",
              help="Largest record the schema, --stats and --grid read whole; larger ones are reported. [default: 64MiB]")  # fmt: skip
@click.option("--max-pixels", type=click.IntRange(min=1),
              help="Largest image --grid decodes; larger ones are reported. [default: 25000000]")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON document.")
@STORAGE_OPTIONS
@click.version_option(__version__, prog_name="tfr-inspect")
def inspect(paths, count, head, verify, stats, grid_out, grid_count, write_index, every, max_record_size, max_pixels,
            as_json) -> None:  # fmt: skip
    """Look inside TFRecord files: records, schema, first examples; --verify, --stats, --grid.

    PATH is a file, a dataset directory or a glob, local or remote (s3://, gs://, az://...:
    read in place, in ranges, through fsspec). Every mode checks CRCs as it reads;
    --verify reports every problem and exits 1 if there is any.
    """
    modes = [m for m, on in (("--count", count), ("--verify", verify), ("--stats", stats),
                             ("--grid", grid_out), ("--write-index", write_index)) if on]  # fmt: skip
    if len(modes) > 1:
        raise click.UsageError(f"choose one of {', '.join(modes)}")
    paths = list(paths)
    # the limits' defaults live with the readers (containers.MAX_RECORD_BYTES, grid.MAX_PIXELS)
    limit = {"max_record": max_record_size} if max_record_size else {}
    if count:
        from .inspect.summary import count as count_files
        from .inspect.summary import format_files

        report = count_files(paths)
        text = "\n".join(format_files(report))
    elif verify:
        from .inspect.verify import format_verify
        from .inspect.verify import verify as verify_files

        report = verify_files(paths)
        text = format_verify(report)
    elif stats:
        from .inspect.stats import format_stats
        from .inspect.stats import stats as feature_stats

        report = feature_stats(paths, **limit)
        text = format_stats(report)
    elif grid_out:
        from .inspect.grid import grid

        report = grid(paths, grid_out, grid_count, **limit, **({"max_pixels": max_pixels} if max_pixels else {}))
        text = f"{report['images']} images of {report['feature']!r} -> {report['out']}"
    elif write_index:
        from .inspect.index import write_indexes

        report = write_indexes(paths)
        text = "\n".join(f"{i['index']}  {i['records']} records" for i in report["indexes"])
    else:
        from .inspect.summary import format_summary, summarize

        report = summarize(paths, head=head, every=every, **limit)
        text = format_summary(report)
    click.echo(json.dumps(report, indent=2, ensure_ascii=False) if as_json else text)
    if verify and not report["ok"]:
        raise SystemExit(1)
