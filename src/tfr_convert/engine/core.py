"""What both engines share (the local one, local.py, and Beam's, beam.py): the
run's summary, the plan of splits, the encoding of one batch, and the
finish (shard names, metadata, commit); a dry run's estimate.

An engine lists nothing and decides no split of its own: it takes `plan_splits`,
encodes batches with `encode_sealed` wherever it runs them, cuts shards with
shards.py's cutter and ends with `commit_with_metadata`, so that both write the same bytes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import containers
from ..containers import array_record
from ..converters.base import Converter
from ..dataset import order_quality
from ..dataset import splits as splitting
from ..dataset.existing import compressed_note
from ..dataset.naming import checked_component
from ..dataset.rows import part_of
from ..errors import SourceError
from ..output.base import Output
from ..output.metadata import metadata_files
from ..output.shards import ShardCutter, SplitResult
from ..skips import Skips, from_fields, skipped_fields
from ..storage import fs
from .append import Append, parent_of
from .encode import Encoded, encode_items
from .run_options import RunOptions, catalog_version
from .workers import filled_in_parts


@dataclass
class Summary:
    name: str
    out: str
    splits: dict[str, dict[str, int]]
    seconds: float
    skipped: Skips = field(default_factory=Skips)
    warnings: list[str] = field(default_factory=list)
    # a --resume: {"kept_shards": N} (shards of the interrupted run kept), or
    # {"already_complete": True} (the run had finished: nothing written)
    resumed: dict[str, Any] | None = None
    # per split, how well the written order mixes the labels (order_quality); {}: no label
    order: dict[str, Any] = field(default_factory=dict)
    # an --append's version: its number, the version it adds to, the examples it adds per split
    version: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "out": self.out,
            "splits": self.splits,
            "seconds": round(self.seconds, 3),
            **skipped_fields(self.skipped),
            "warnings": self.warnings,
            **({"resumed": self.resumed} if self.resumed is not None else {}),
            **({"order": self.order} if self.order else {}),
            **({"version": self.version} if self.version else {}),
        }


def encode_sealed(
    converter: Converter, items: Sequence[Hashable], on_error: str, container: containers.Container
) -> Encoded:
    """A batch encoded with room for the container's framing, and sealed: what both engines write."""
    encoded = encode_items(converter, items, on_error, container.head, container.tail)
    container.seal(encoded.blob, encoded.sizes)
    return encoded


def committed_summary(path: str, seconds: float) -> Summary:
    """The summary of a dataset already committed, from its manifest."""
    from ..dataset.existing import ExistingDataset

    manifest = ExistingDataset(path).manifest
    splits = {
        split: {"examples": s["examples"], "shards": len(s["shards"]), "bytes": s["bytes"]}
        for split, s in manifest["splits"].items()
    }
    return Summary(
        manifest["dataset"],
        path,
        splits,
        seconds,
        from_fields(manifest),
        manifest["warnings"],
        resumed={"already_complete": True},
    )


def commit_with_metadata(
    converter: Converter,
    options: RunOptions,
    out: Output,
    results: list[SplitResult],
    observations: Counter[Hashable],
    skipped: Skips,
    found_warnings: list[str],
    started: float,
    plan: dict[str, list[Hashable]],
    append: Append | None = None,
) -> Summary:
    """After every shard is written (by either engine): name the shards, write the
    metadata and commit the directory. `plan`: the items of each split in written order;
    `append`: an --append's (appended_to): the version it adds to, whose shards come first."""
    if not any(r.records for r in results):
        raise SourceError(_nothing_written(converter, skipped))
    name = output_name(converter, options)
    order = order_quality.of_splits(plan, converter.label_of)
    out.sync()  # every shard in place before anything reads one back (index files) or commits
    # may refine features, or refuse (e.g. mixed shapes for raw), or have a word on the whole run
    found_warnings = [*found_warnings, *(converter.finish(observations) or [])]
    results = append.joined(converter, results) if append is not None else results
    out.name_shards(results, name, options.file_format)
    version_record = append.record(results) if append is not None else None  # (it lists shards' names)
    notes, description = _format_notes(options, results, converter.description)
    found_warnings = [*found_warnings, *notes]
    files = _index_files(results) if options.index else {}
    files |= metadata_files(
        name=name,
        converter=converter.command,
        description=description,
        file_format=options.file_format,
        features=converter.features,
        labels=converter.labels,
        options={**options.recorded(), "name": name, **converter.recorded_options()},
        sources=converter.sources(),
        results=results,
        skipped=skipped,
        warnings=found_warnings,
        nested=converter.nested_features,
        extra=converter.extra_files(),
        carried_keys=converter.supervised_keys,
        order=order,
        version=fs.basename(options.out) if options.append else catalog_version(converter, name),
        version_record=version_record,
    )
    with fs.naming(out.build):
        out.commit(results, files)
    splits = {r.split: {"examples": r.records, "shards": len(r.shards), "bytes": r.bytes} for r in results}
    seconds = time.perf_counter() - started
    summary = Summary(name, options.out, splits, seconds, skipped, found_warnings, order=order)
    if version_record is not None:
        summary.version = {k: version_record[k] for k in ("number", "parent", "added")}
    return summary


def _format_notes(options: RunOptions, results: list[SplitResult], description: str) -> tuple[list[str], str]:
    """What the container or compression chosen has to say (warnings), and the dataset's
    description with the compression told to TFDS."""
    notes = []
    if options.file_format == "array_record":
        padded = array_record.padding_note([shard.bytes for r in results for shard in r.shards], len(results))
        notes += [padded] if padded else []
    if options.compression != "none":  # the metadata stays whole (load() and tfr-inspect use it); TFDS is told
        notes.append(compressed_note(options.compression))
        description = f"{compressed_note(options.compression)} {description}"
    return notes, description


def appended_to(
    converter: Converter, options: RunOptions, plan: dict[str, list[Hashable]]
) -> tuple[Append | None, dict[str, list[Hashable]]]:
    """An --append's version to add to (None without --append), its rules applied to
    the converter (options compared, class ids numbered as it does) before anything is
    encoded; and the plan, less what `--dedupe` finds in that version already."""
    if not options.append:
        return None, plan
    parent = parent_of(options.out)
    if parent is not None:
        parent.adopt(converter, options.recorded())
        mode = converter.recorded_options().get("dedupe")
        if mode:
            plan, said = parent.deduplicated(converter, plan, mode, options.workers)
            converter.warnings = [*converter.warnings, *([said] if said else [])]
    return Append(options.out, parent), plan


def already_appended(append: Append, identity: dict[str, Any], seconds: float) -> Summary:
    """The summary of an append whose items the newest version holds already (the same
    job run twice): nothing is written. A commit of it that a kill cut short is finished
    first, as the next run into that version would."""
    from ..output.opening import open_output

    assert append.parent is not None
    with open_output(append.parent.path, resume=True, identity=identity):
        pass
    return committed_summary(append.parent.path, seconds)


def _nothing_written(converter: Converter, skipped: Skips) -> str:
    """Why a run that would commit a dataset of no examples (which TFDS and tfr-inspect
    refuse) is an error instead."""
    if not skipped.total:
        roots = converter.input_roots() or [s["file"] for s in converter.sources() if isinstance(s.get("file"), str)]
        where = ", ".join(roots[:3]) + (f" and {len(roots) - 3} more" if len(roots) > 3 else "")
        return f"{where or 'the input'}: no examples to write: it holds none"
    first = skipped.listed[0] if skipped.listed else {"item": "?", "reason": "?"}
    return (
        f"no examples to write: all {skipped.total} were left out under --on-error skip "
        f"(the first: {first['item']}: {first['reason']})"
    )


def _index_files(results: list[SplitResult]) -> dict[str, bytes]:
    tfrecord = containers.get("tfrecord")
    return {f"{s.final_name}.index": tfrecord.index_lines(s.tmp_path) for r in results for s in r.shards}


# A split's ranks are computed in this many items per forked process at most (fewer
# items are ranked here: forking would cost more than it saves).
RANKS_PER_PROCESS = 50_000


def _ranks_in_parts(converter: Converter, workers: int) -> splitting.Ranker:
    """splits.rank_bytes, run in parts on forked processes for a large split: ranks are
    a pure function of each item's key, so the parts join into the same bytes."""

    def ranks(items: Sequence[Hashable], key: Callable[[Hashable], str], seed: int, purpose: str) -> bytes:
        def part(lo: int, hi: int) -> bytes:
            return splitting.rank_bytes(part_of(items, lo, hi), key, seed, purpose)

        return filled_in_parts(converter.input_roots(), part, len(items), min(workers, len(items) // RANKS_PER_PROCESS))

    return ranks


def plan_splits(converter: Converter, options: RunOptions) -> dict[str, list[Hashable]]:
    """Every split's items in order. Split names become part of the shards' file names
    and may come from the data (a dataset's metadata, a CSV column): they pass the one
    path check here."""
    try:
        plan = splitting.assign(
            converter.source_splits(),
            converter.key,
            seed=options.seed,
            shuffle=options.shuffle,
            validation_size=options.validation_size,
            ranker=_ranks_in_parts(converter, options.workers),
        )
    except splitting.SharedKey as e:
        raise SourceError(
            f"{converter.describe(e.first)} and {converter.describe(e.second)} have one key, {e.key!r}: "
            "a key names one example"
        ) from None
    for split in plan:
        checked_component(split, "split name")
    if options.limit is not None:  # after splitting and shuffling: a sample of every split, not its source order
        plan = {split: items[: options.limit] for split, items in plan.items()}
    return plan


def output_name(converter: Converter, options: RunOptions) -> str:
    """The dataset's name, which begins every shard's file name: --name, else the
    converter's (which may come from the data: a dataset's metadata, a folder's name),
    checked as any path component from the data is, before anything is written."""
    return checked_component(
        options.name or converter.dataset_name or converter.command, "dataset name (--name sets another)"
    )


DRY_RUN_SAMPLE = 16  # items encoded per split to estimate the sizes a dry run reports


def dry_run(converter: Converter, options: RunOptions) -> dict[str, Any]:
    """What a run would write, per split (examples, shards, estimated bytes), from the
    plan and a few encoded items; nothing is written. The inputs were already listed
    and checked when the converter was made."""
    container = options.container()
    plan = plan_splits(converter, options)
    splits = {}
    for split, items in plan.items():
        sample = encode_sealed(converter, items[:DRY_RUN_SAMPLE], options.on_error, container).sizes
        mean = sum(sample) / len(sample) if sample else 0
        cuts = ShardCutter(len(items), options.policy).cut([round(mean)] * len(items)) if items else []
        splits[split] = {
            "examples": len(items),
            "shards": sum(closes for _, _, closes in cuts),
            "estimated_bytes": round(mean * len(items)),
        }
    return {
        "name": output_name(converter, options),
        "out": options.out,
        "format": options.file_format,
        "splits": splits,
        "skipped": converter.skipped.total,
        "warnings": list(converter.warnings),
    }
