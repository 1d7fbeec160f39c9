"""A conversion run from the command line: the progress bar, SIGTERM as Ctrl-C, the
run (or its dry run), and the summary on stdout."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import click

from ..errors import Terminated, TfrConvertError
from .options import run_options
from .progress import progress_bar


def run_conversion(
    make_converter,
    quiet: bool,
    as_json: bool,
    engine: str,
    beam_options: str,
    dry_run: bool,
    nested: bool = False,
    **common,
) -> None:
    """Validate options, build the converter (reads and checks sources), convert, report."""
    import time

    started = time.perf_counter()
    _terminate_as_interrupt()
    progress, close_bar = progress_bar(quiet, "converting", "ex", "checking sources")
    try:
        if dry_run:
            plan = dry_run_plan(make_converter, engine=engine, beam_options=beam_options, **common)
        else:
            done = converted(
                make_converter, engine=engine, beam_options=beam_options, nested=nested,
                quiet=quiet, progress=progress, **common,
            )  # fmt: skip
    finally:
        close_bar()
    if dry_run:
        _print_plan(plan, quiet, as_json)
        return
    done.seconds = time.perf_counter() - started  # reading and checking the sources included
    try:
        _report(done, quiet, as_json)
    except OSError as e:  # stdout full or gone: the dataset is committed all the same
        _silence_stdout()
        click.echo(
            f"warning: {done.out} is complete; its summary could not be written to stdout: {e.strerror or e}",
            err=True,
        )


def converted(
    make_converter,
    *,
    engine: str = "local",
    beam_options: str = "",
    nested: bool = False,
    quiet: bool = True,
    progress: Any = None,
    **common,
) -> Any:
    """The run itself, for the command line and for tfr_convert.write(): its Summary.
    Reports nothing.

    The output's lock is taken before the converter reads anything and held until the
    commit, so a second run into the same output is refused at any point of this one;
    `nested`: the output goes to OUT/NAME/VERSION (TFDS's layout), a path known once the
    converter has read its sources, so its lock is taken then."""
    from contextlib import nullcontext

    from ..output.opening import claimed

    options = run_options(**common)
    run = _engine(engine, beam_options, options.resume, quiet)
    # (an --append's output is a version folder under OUT, known once the converter is made)
    with _hinted(common, options), nullcontext() if nested or options.append else claimed(options.out) as lock:
        converter, options = _made(make_converter, options, common)
        return run(converter, options, progress=progress, lock=lock)


def dry_run_plan(
    make_converter, *, engine: str = "local", beam_options: str = "", nested: bool = False, quiet: bool = True, **common
) -> dict[str, Any]:
    """What a run would write, per split (examples, shards, estimated bytes); nothing is
    written and no lock taken (`nested` and `quiet` change nothing here). Reports nothing."""
    from ..engine.core import dry_run

    options = run_options(**common)
    _engine(engine, beam_options, options.resume, quiet=True)  # its usage errors all the same
    with _hinted(common, options):
        converter, options = _made(make_converter, options, common)
        return dry_run(converter, options)


def _engine(engine: str, beam_options: str, resume: bool, quiet: bool) -> Any:
    """The engine's run function; a UsageError for options it cannot take."""
    if engine == "beam":
        from ..engine import beam as beam_engine

        if not beam_engine.available():
            raise click.UsageError(beam_engine.install_hint())
        if resume:
            raise click.UsageError("--resume is for --engine local (Beam's runners retry failed work themselves)")
        return functools.partial(beam_engine.run, beam_options=beam_options, quiet=quiet)
    if beam_options:
        raise click.UsageError("--beam-options needs --engine beam")
    return _local_run


def _made(make_converter, options: Any, common: dict[str, Any]) -> tuple[Any, Any]:
    """The converter (its sources read) and the run options as it settles them: the
    dataset's folder in TFDS's layout, no shuffle for a source that keeps its order."""
    converter = make_converter()
    options = options.at_dataset_folder(converter)
    if common.get("shuffle") is None and converter.keeps_order:
        options = dataclasses.replace(options, shuffle=False)
    return converter, options


@contextlib.contextmanager
def _hinted(common: dict[str, Any], options: Any) -> Iterator[None]:
    """An item's error, with the hint of --on-error skip where the command has it and it
    was not given."""
    try:
        yield
    except TfrConvertError as e:
        if e.skippable and "on_error" in common and options.on_error == "fail":
            e.hint = "--on-error skip leaves such items out and lists them"
        raise


def source_context(common: dict[str, Any], on_error: str = "fail", fill_in_parts: Any = None) -> Any:
    """The SourceContext every converter is made with (`XConverter(source, options,
    context)`), from the options every command shares: the output it must not list, the
    seed of its ratio splits, what a bad item does, where listing may run in parts."""
    from ..converters.base import SourceContext  # with the converter: not at start-up

    return SourceContext(
        out=common["out"],
        seed=common["seed"],
        on_error=on_error,
        fill_in_parts=fill_in_parts,
        per_item_splits=bool(common.get("append")),
    )


def _local_run(converter, options, progress, lock):
    # the engine is imported once the converter is made: a converter that loads its
    # sources on a thread (inflating, hashing) has it going meanwhile
    from ..engine.local import run

    return run(converter, options, progress=progress, lock=lock)


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
    from ..dataset import order_quality
    from ..inspect.summary import counted, human_bytes
    from ..storage import fs

    if not quiet:
        for warning in summary.warnings:
            click.echo(f"warning: {fs.with_remote_names(warning)}", err=True)
        for skipped in summary.skipped.listed:
            click.echo(f"skipped: {skipped['item']}: {skipped['reason']}", err=True)
        more = summary.skipped.total - len(summary.skipped.listed)
        if more:
            kinds = "; ".join(f"{n} x {kind}" for kind, n in summary.skipped.by_kind.most_common(5))
            click.echo(f"skipped: ... and {more} more (listed in manifest.json by kind: {kinds})", err=True)
        for split, figure in summary.order.items():
            if figure["ratio"] is not None and figure["ratio"] > 2:
                click.echo(f"note: {split}: {order_quality.verdict(figure)}", err=True)
        if summary.resumed and summary.resumed.get("nothing_to_resume"):
            click.echo(
                f"note: --resume found no interrupted run to finish in {summary.out}: converted from the start",
                err=True,
            )
    if as_json:
        click.echo(json.dumps(summary.to_dict(), indent=2))
        return
    per_split = ", ".join(f"{split} {s['examples']}" for split, s in summary.splits.items())
    shards = sum(s["shards"] for s in summary.splits.values())
    size = human_bytes(sum(s["bytes"] for s in summary.splits.values()))
    skipped = f" ({summary.skipped.total} skipped, listed in manifest.json)" if summary.skipped.total else ""
    if summary.resumed is not None and not summary.resumed.get("nothing_to_resume"):
        kept = summary.resumed.get("kept_shards")
        skipped += (
            " (already complete: nothing written)"
            if kept is None
            else f" (resumed: {kept} of {shards} shards kept from the interrupted run)"
        )
    if summary.version is not None:
        added = ", ".join(f"{split} {n}" for split, n in summary.version["added"].items())
        parent = summary.version["parent"]
        skipped += f" (version {summary.version['number']}: {added} added{f' to {parent}' if parent else ''})"
    click.echo(
        f"{summary.name}: {per_split} examples in {counted(shards, 'shard')}, {size}, {summary.seconds:.1f} s -> "
        f"{summary.out}"
        f"{skipped}"
    )


def _print_plan(plan: dict[str, Any], quiet: bool, as_json: bool) -> None:
    from ..inspect.summary import counted, human_bytes

    if as_json:
        click.echo(json.dumps({"mode": "dry_run", **plan}, indent=2))
        return
    if not quiet:
        for warning in plan["warnings"]:
            click.echo(f"warning: {warning}", err=True)
    click.echo(f"dry run: nothing written. {plan['name']} -> {plan['out']} ({plan['format']})")
    for split, s in plan["splits"].items():
        click.echo(
            f"  {split}: {counted(s['examples'], 'example')} in {counted(s['shards'], 'shard')}, "
            f"about {human_bytes(s['estimated_bytes'])}"
        )
    if plan["skipped"]:
        click.echo(f"  {plan['skipped']} items would be skipped (run without --dry-run to list them)")


def _terminate_as_interrupt() -> None:
    """SIGTERM (a CI timeout, `kill`, a preempted VM) ends a run as Ctrl-C does:
    the unfinished shard removed, the finished ones kept for --resume."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        raise Terminated

    signal.signal(signal.SIGTERM, interrupt)
