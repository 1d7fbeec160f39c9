"""Where each split's shards end, fixed before anything is encoded where that can be.

--num-shards counts items, so its cuts are known from the plan. --shard-size counts
bytes: where each item's size is known before it is read (a file: a picture, a sound,
a video; a webdataset sample: its tar members' sizes, from the listing), each item is
planned to take that size, scaled by what the split's first few items encode
to against their files (a re-encode or raw pixels change the size, keeping does not),
and the cutter cuts those planned sizes. Every engine cuts by the same plan (the
first items encode alike wherever they do), so a shard is a range of items known up
front: any process can write any shard whole (engine/whole_shards.py), and the
output is the same for any worker count. Elsewhere (--examples-per-shard, which
counts records written; tables and records, whose items' sizes are not known) the shards are
cut from the encoded sizes as they come, in order.
"""

from __future__ import annotations

from collections.abc import Hashable

from .. import containers
from ..converters.base import Converter
from ..output.shards import ShardPolicy
from ..storage.fingerprints import InputFiles
from .core import encode_sealed
from .run_options import RunOptions

SAMPLE_ITEMS = 16  # of a split's first items, encoded to scale its files' sizes


def split_policies(
    converter: Converter,
    options: RunOptions,
    plan: dict[str, list[Hashable]],
    inputs: InputFiles | None,
    container: containers.Container,
) -> dict[str, ShardPolicy]:
    """Each split's shard policy: the run's, with its cuts planned where it counts bytes
    and each item's size is known: from the listing (`converter.item_sizes`), else from
    the stats of the item files (`inputs`, splits in sorted order)."""
    policy = options.policy
    if not policy.by_size:
        return dict.fromkeys(plan, policy)
    sizes = inputs.sizes() if inputs is not None else None
    planned, at = {}, 0
    for split in sorted(plan):
        items = plan[split]
        mine = converter.item_sizes(items)
        if mine is None and sizes is not None:
            mine = sizes[at : at + len(items)]
        at += len(items)
        planned[split] = policy if mine is None else policy.planned(_scaled(converter, items, mine, options, container))
    return {split: planned[split] for split in plan}


def _scaled(
    converter: Converter,
    items: list[Hashable],
    sizes: list[int],
    options: RunOptions,
    container: containers.Container,
) -> list[int]:
    """The files' sizes scaled by what the first items encode to, per byte of their files."""
    sample = items[: min(SAMPLE_ITEMS, converter.chunk_size)]
    encoded = encode_sealed(converter, sample, options.on_error, container).sizes if sample else []
    read = sum(sizes[: len(sample)])
    if not encoded or not read:
        return [max(size, 1) for size in sizes]
    ratio = (sum(encoded) / len(encoded)) / (read / len(sample))
    return [max(round(size * ratio), 1) for size in sizes]
