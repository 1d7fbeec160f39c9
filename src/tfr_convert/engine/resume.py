"""--resume: what identifies a run, and which of an interrupted run's shards are kept.

- `run_identity`: everything that shapes the output (tool version, converter and its
  options, source digests, the plan's digest, the item files' stats); the journal's
  first line holds it, and a resumed run must present the same (journal.py compares).
- `input_files`: the stats of the files the items are read from (fingerprints.py).
- `kept_work`: the journal's entries whose shards are still whole (size, sha256 and
  record count checked), and what they say was finished; the rest is removed.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from .. import containers
from ..converters.base import Converter
from ..dataset.naming import ShardName
from ..errors import RecordError
from ..output.base import Output
from ..output.journal import Progress, ShardEntry, replay
from ..storage import fs
from ..storage.fingerprints import InputFiles
from ..version import __version__
from .run_options import RunOptions
from .workers import filled_in_parts


def run_identity(
    converter: Converter, options: RunOptions, plan: dict[str, list[Hashable]], inputs: InputFiles | None = None
) -> dict[str, Any]:
    """What shapes a run's output: a resumed run must match the interrupted one in all of it."""
    planned = _plan_digest(converter, plan, options.workers)
    identity = {
        "tool_version": __version__,
        "converter": converter.command,
        "options": {
            **options.recorded(),
            "name": options.name or converter.dataset_name or converter.command,
            **converter.recorded_options(),
        },
        "sources": converter.sources(),
        "items": {"splits": {split: len(items) for split, items in plan.items()}, "sha256": planned},
        "batch": converter.chunk_size,
    }
    if inputs is not None:
        identity["inputs"] = {"files": len(inputs.names), "sha256": inputs.digest()}
    return identity


# The item files are stat'ed on forked processes in parts of at least this many files: a
# fork costs about as much as a thousand stats, and a stat is a system call whatever the
# machine, so from a few thousand files a part the parts pay for their processes.
STATS_PER_PROCESS = 4096


def input_files(converter: Converter, plan: dict[str, list[Hashable]], workers: int) -> InputFiles | None:
    """The stats of the files the plan's items are read from, in plan order (None where
    items are not files); where an item has files under other roots too (a picture's
    mask), those roots' files after the first's."""
    roots = converter.input_roots()
    firsts = [plan[split][0] for split in sorted(plan) if plan[split]]
    if not roots or not firsts or converter.item_file(firsts[0]) is None:
        return None  # before the plan is joined into one list: a table's may hold millions of rows
    items = [item for split in sorted(plan) for item in plan[split]]
    parts = min(workers, len(items) // STATS_PER_PROCESS)

    def filled(fill: Callable[[int, int], bytes], n: int) -> bytes:
        return filled_in_parts(roots, fill, n, parts)

    first = InputFiles.of(roots[0], [converter.item_file(item) or "" for item in items], filled)
    more = [converter.item_files(item)[1:] for item in items] if len(roots) > 1 else []
    if not any(more):
        return first
    others = [InputFiles.of(root, [m[at] or "" for m in more], filled) for at, root in enumerate(roots[1:])]
    return InputFiles.joined([first, *others])


PLAN_BLOCK = 4096  # items per block of the plan's digest


# The blocks are hashed on forked processes in parts of at least this many items (a
# smaller plan is hashed here: forking would cost more than it saves).
DIGEST_ITEMS_PER_PROCESS = 200_000


def _plan_digest(converter: Converter, plan: dict[str, list[Hashable]], workers: int) -> str:
    """sha256 of each split's name, each followed by the sha256 of each block of its
    items: the blocks have a fixed size, so any number of processes hashing them in parts
    gives the same digest."""
    import hashlib
    import marshal

    splits = sorted(plan.items(), key=lambda kv: kv[0])
    blocks = [(items, start) for _, items in splits for start in range(0, len(items), PLAN_BLOCK)]

    def fill(lo: int, hi: int) -> bytes:
        digests = []
        for items, start in blocks[lo:hi]:
            block = items[start : start + PLAN_BLOCK]
            if isinstance(block, range):  # the bytes of the list it stands for
                block = list(block)
            try:
                # marshal's version 2 writes equal values as equal bytes (no references, no
                # interning flags), several times faster than repr; it is only compared
                # with a run of the same tool on the same machine (the journal's)
                data = marshal.dumps(block, 2)
            except ValueError:  # a type marshal does not know
                data = repr(block).encode()
            digests.append(hashlib.sha256(data).digest())
        return b"".join(digests)

    parts = min(workers, sum(map(len, plan.values())) // DIGEST_ITEMS_PER_PROCESS)
    block_digests = memoryview(filled_in_parts(converter.input_roots(), fill, len(blocks), parts))
    digest, at = hashlib.sha256(), 0
    for split, items in splits:
        size = 32 * -(-len(items) // PLAN_BLOCK)  # a sha256 per block, the last one short
        digest.update(repr(split).encode())
        digest.update(block_digests[at : at + size])
        at += size
    return digest.hexdigest()


def kept_work(out: Output, name: str, file_format: str, container: containers.Container) -> tuple[list, Progress]:
    """The journal entries whose shards are still there, whole (size, sha256 and record
    count checked), and what they say was finished; the rest of the build is removed."""
    entries = out.entries
    kept: list = []
    counts: dict[str, int] = {}
    for entry, _ in entries:
        counts[entry["split"]] = counts.get(entry["split"], 0) + (1 if "shard" in entry else 0)
    index: dict[str, int] = {}
    files = set()
    for entry, end in entries:
        if "shard" in entry:
            shard = ShardEntry(**entry["shard"])
            split = entry["split"]
            i = index[split] = index.get(split, -1) + 1
            where = _find_shard(out, shard, ShardName(name, split, i, counts[split], file_format).filename, container)
            if where is None:
                break
            entry["shard"]["file"] = where
            files.add(where)
        kept.append((entry, end))
    out.keep_only(files)
    progress = replay(kept)
    for shards in progress.shards.values():
        for shard in shards:
            shard.file = fs.join(out.build, shard.file)
    return kept, progress


def _find_shard(out: Output, shard: ShardEntry, final_name: str, container: containers.Container) -> str | None:
    """Where a journaled shard is now (under its temporary name, or its final one if
    a commit had begun), if it is whole: its size and sha256 as journaled, and the
    records the journal counts in it (read back: the journal is not believed alone)."""
    for candidate in (shard.file, final_name):
        path = fs.join(out.build, candidate)
        if out.whole(path, shard) and _holds(container, path, shard.records):
            return candidate
    return None


def _holds(container: containers.Container, path: str, records: int) -> bool:
    try:
        return container.count(path) == records
    except (RecordError, OSError):
        return False
