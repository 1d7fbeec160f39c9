"""The shard cutter at its seam (output/shards.py): its runs, however the records come
in chunks and from wherever a resumed run starts, close shards exactly where the policy
asked record by record would; skipped records close the last shard as they should."""

from __future__ import annotations

import io

import pytest
from helpers import shards_by_record
from hypothesis import given, settings
from hypothesis import strategies as st

from tfr_convert.errors import OutputError
from tfr_convert.output.shards import DEFAULT_SHARD_SIZE, ShardCutter, ShardPolicy


def _by_runs(cutter: ShardCutter, sizes: list[int], chunks: list[int]) -> list[tuple[int, int, bool]]:
    runs, at = [], 0
    for n in chunks:
        runs += cutter.cut(sizes[at : at + n])
        at += n
    return runs + cutter.cut(sizes[at:])


def _shards(runs: list[tuple[int, int, bool]]) -> list[int]:
    counts, current = [], 0
    for records, _, closes in runs:
        current += records
        if closes:
            counts.append(current)
            current = 0
    return counts


POLICIES = st.one_of(
    st.integers(1, 12).map(lambda n: ShardPolicy(num_shards=n)),
    st.integers(1, 9).map(lambda n: ShardPolicy(examples_per_shard=n)),
    st.integers(1, 400).map(lambda n: ShardPolicy(shard_size=n)),
    # cuts planned for 60 items (a split of fewer ends at its last)
    st.lists(st.integers(1, 60), min_size=1, max_size=12, unique=True).map(
        lambda ends: ShardPolicy(cuts=tuple(sorted(ends)))
    ),
)


@settings(max_examples=400, deadline=None)
@given(POLICIES, st.lists(st.integers(1, 60), min_size=1, max_size=60), st.lists(st.integers(0, 9), max_size=12))
def test_runs_close_shards_where_asking_after_every_record_would(policy, sizes, chunks):
    cutter = ShardCutter(len(sizes), policy)
    runs = _by_runs(cutter, sizes, chunks)
    assert _shards(runs) == shards_by_record(policy, sizes)
    assert sum(r for r, _, _ in runs) == len(sizes) and sum(b for _, b, _ in runs) == sum(sizes)
    assert all(records > 0 for records, _, _ in runs) and runs[-1][2]  # the last record closes its shard
    assert cutter.state == (len(sizes), 0, sum(sizes))
    cutter.check_complete("train")


@settings(max_examples=200, deadline=None)
@given(POLICIES, st.lists(st.integers(1, 60), min_size=2, max_size=50), st.data())
def test_a_cutter_resumed_where_a_shard_began_cuts_the_rest_alike(policy, sizes, data):
    whole = _shards(ShardCutter(len(sizes), policy).cut(sizes))
    done = data.draw(st.integers(0, len(whole) - 1))  # shards finished before the interruption
    written = sum(whole[:done])
    resumed = ShardCutter(len(sizes), policy, (written, 0, sum(sizes[:written])))
    assert _shards(resumed.cut(sizes[written:])) == whole[done:]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 400), st.lists(st.integers(1, 60), min_size=1, max_size=60), st.data())
def test_cuts_planned_from_sizes_are_where_those_sizes_would_cut_whatever_sizes_come(target, planned, data):
    by_size = ShardPolicy(shard_size=target)
    fixed = by_size.planned(planned)
    assert fixed.describe() == by_size.describe()  # (what the metadata says of the run is the user's)
    expected = shards_by_record(by_size, planned)
    assert fixed.ends(len(planned)) == [sum(expected[: i + 1]) for i in range(len(expected))]
    # the records then encoded may be of any size: the cuts stay where they were planned
    actual = data.draw(st.lists(st.integers(1, 600), min_size=len(planned), max_size=len(planned)))
    assert _shards(ShardCutter(len(actual), fixed).cut(actual)) == expected


@given(st.integers(1, 12), st.lists(st.integers(1, 60), min_size=1, max_size=60))
def test_known_ends_are_the_cutters_for_counted_policies_and_unknown_for_the_others(n, sizes):
    counted = ShardPolicy(num_shards=n)
    shards = _shards(ShardCutter(len(sizes), counted).cut(sizes))
    assert counted.ends(len(sizes)) == [sum(shards[: i + 1]) for i in range(len(shards))]
    assert ShardPolicy(examples_per_shard=n).ends(len(sizes)) is None  # (counts records written, not items)
    assert ShardPolicy(shard_size=n).ends(len(sizes)) is None


def test_the_default_policy_is_64_mib_and_one_rule_at_most():
    assert ShardPolicy().describe() == {"shard_size": DEFAULT_SHARD_SIZE} and DEFAULT_SHARD_SIZE == 64 << 20
    assert ShardPolicy(num_shards=3).describe() == {"num_shards": 3}
    assert ShardPolicy(examples_per_shard=5).describe() == {"examples_per_shard": 5}
    assert ShardPolicy(shard_size=7).describe() == {"shard_size": 7}
    for bad in ({"num_shards": 0}, {"examples_per_shard": 0}, {"shard_size": 0}, {"shard_size": -1}):
        with pytest.raises(ValueError, match="must be positive"):
            ShardPolicy(**bad)
    for two in ({"num_shards": 1, "shard_size": 1}, {"examples_per_shard": 1, "shard_size": 1}):
        with pytest.raises(ValueError, match="at most one"):
            ShardPolicy(**two)
    assert ShardPolicy(num_shards=1, examples_per_shard=None).describe() == {"num_shards": 1}


def test_skipped_records_close_the_last_shard_only_when_they_end_the_split():
    cutter = ShardCutter(10, ShardPolicy(examples_per_shard=4))
    assert cutter.cut([1] * 4) == [(4, 4, True)]
    assert cutter.cut([1] * 3) == [(3, 3, False)]
    assert cutter.skip(0) is False
    assert cutter.skip(2) is False  # 9 of 10 accounted for
    assert cutter.skip(1) is True  # the last one: the open shard closes
    cutter.check_complete("train")
    assert cutter.state == (7, 3, 7)
    empty = ShardCutter(4, ShardPolicy(examples_per_shard=4))
    assert empty.cut([1] * 4) == [(4, 4, True)]
    assert empty.skip(0) is False
    closed = ShardCutter(3, ShardPolicy(examples_per_shard=2))
    closed.cut([1, 1])
    assert closed.skip(1) is False  # nothing open to close: the shard before closed at its size
    one = ShardCutter(6, ShardPolicy(examples_per_shard=4))
    assert one.cut([1] * 5) == [(4, 4, True), (1, 1, False)]
    assert one.skip(1) is True  # a shard of one record closes as well
    short = ShardCutter(5, ShardPolicy())
    short.cut([1, 1])
    with pytest.raises(OutputError, match="split train: wrote 2 examples, expected 5"):
        short.check_complete("train")


def test_skipped_records_count_where_the_next_ones_fall():
    cutter = ShardCutter(10, ShardPolicy(examples_per_shard=4))
    assert cutter.cut([1] * 3) == [(3, 3, False)]
    assert cutter.skip(2) is False
    assert cutter.cut([1] * 5) == [(1, 1, True), (4, 4, True)]  # the last four end the split


class _Here:
    """A ShardDestination in a folder."""

    def __init__(self, root) -> None:
        self.root = root

    def temp_path(self, label: str) -> str:
        return str(self.root / f"tmp-{label}")

    def opener(self, path: str):
        return open(path, "wb")


def test_a_split_writer_puts_each_record_in_its_shard_and_says_where_each_next_one_begins(tmp_path):
    from tfr_convert.containers import get as container
    from tfr_convert.containers.framing import frame
    from tfr_convert.containers.tfrecord import read_records
    from tfr_convert.output.shards import Checkpoint, SplitWriter

    payloads = [bytes([i]) * (i + 1) for i in range(11)]
    framed = [frame(p) for p in payloads]
    told = []
    writer = SplitWriter(
        _Here(tmp_path), "train", 11, ShardPolicy(examples_per_shard=4), container("tfrecord"), "none",
        on_shard=lambda shard, at: told.append((shard.records, at)),
    )  # fmt: skip
    for batch, (lo, hi) in enumerate([(0, 3), (3, 9), (9, 11)]):
        writer.write_chunk(b"".join(framed[lo:hi]), [len(f) for f in framed[lo:hi]], batch=batch, first=0)
    result = writer.close()
    shards = [[r.data for r in read_records(s.tmp_path)] for s in result.shards]
    assert shards == [payloads[0:4], payloads[4:8], payloads[8:11]]
    sizes = [len(f) for f in framed]
    assert told == [
        (4, Checkpoint(1, 1, (4, 0, sum(sizes[:4])))),
        (4, Checkpoint(1, 5, (8, 0, sum(sizes[:8])))),
        (3, Checkpoint(2, 2, (11, 0, sum(sizes)))),
    ]
    assert [s.bytes for s in result.shards] == [sum(sizes[:4]), sum(sizes[4:8]), sum(sizes[8:])]
    # the same split resumed after its first shard: the rest alike
    again = []
    resumed = SplitWriter(
        _Here(tmp_path / "r"), "train", 11, ShardPolicy(examples_per_shard=4), container("tfrecord"), "none",
        at=told[0][1], kept=result.shards[:1], on_shard=lambda shard, at: again.append((shard.records, at)),
    )  # fmt: skip
    (tmp_path / "r").mkdir()
    resumed.write_chunk(b"".join(framed[3:9])[len(framed[3]) :], [len(f) for f in framed[4:9]], batch=1, first=1)
    resumed.skip(0)
    resumed.write_chunk(b"".join(framed[9:]), [len(f) for f in framed[9:]], batch=2, first=0)
    assert again == told[1:] and len(resumed.close().shards) == 3


def test_a_shard_closed_by_skips_after_a_chunk_begins_at_the_next_batch(tmp_path):
    from tfr_convert.containers import get as container
    from tfr_convert.containers.framing import frame
    from tfr_convert.output.shards import Checkpoint, SplitWriter

    told = []
    writer = SplitWriter(
        _Here(tmp_path), "train", 5, ShardPolicy(), container("tfrecord"), "none",
        on_shard=lambda shard, at: told.append(at),
    )  # fmt: skip
    writer.write_chunk(frame(b"a") + frame(b"b"), [17, 17], batch=3, first=0)
    writer.skip(3)
    assert told == [Checkpoint(4, 0, (2, 3, 34))]


def test_skipped_records_bring_the_end_of_the_split_nearer():
    """Records skipped count toward the split's end: the records after them close the
    last shard at the split's end, not where the shard's size would."""
    cutter = ShardCutter(10, ShardPolicy(examples_per_shard=4))
    assert cutter.cut([1] * 3) == [(3, 3, False)]
    assert cutter.skip(4) is False  # 7 of 10 accounted for, the open shard holds 3
    assert cutter.cut([1] * 3) == [(1, 1, True), (2, 2, True)]  # the last two end the split


def test_an_array_record_split_holds_each_record_whole_where_runs_split_a_chunk(tmp_path):
    """A container that stores records one by one (ArrayRecord) is given each run's
    own record sizes: every record comes back whole, in its shard."""
    pytest.importorskip("array_record.python.array_record_module")
    from tfr_convert.containers import get as container
    from tfr_convert.output.shards import SplitWriter

    payloads = [bytes([i]) * (i + 1) for i in range(11)]
    records = container("array_record")
    writer = SplitWriter(_Here(tmp_path), "train", 11, ShardPolicy(examples_per_shard=4), records, "none")
    for batch, (lo, hi) in enumerate([(0, 3), (3, 9), (9, 11)]):
        writer.write_chunk(b"".join(payloads[lo:hi]), [len(p) for p in payloads[lo:hi]], batch=batch, first=0)
    shards = [[r.data for r in records.records(s.tmp_path)] for s in writer.close().shards]
    assert shards == [payloads[0:4], payloads[4:8], payloads[8:11]]


def test_a_fresh_run_writes_every_record_from_the_first_batchs_first(tmp_path):
    """A run with nothing to resume starts its splits at the default checkpoint: batch 0,
    record 0, nothing counted yet."""
    import tfr_convert
    from tfr_convert.containers.tfrecord import read_records
    from tfr_convert.dataset.wire.example import parse

    out = tmp_path / "out"
    tfr_convert.write([{"x": i} for i in range(10)], str(out), quiet=True)
    shards = sorted(out.glob("*.tfrecord-*"))
    assert sorted(parse(r.data)["x"][1][0] for s in shards for r in read_records(str(s))) == list(range(10))


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        # after two: 10 bytes, the target, and 10 bytes estimated to come: the shard closes
        ([5] * 4, [2, 2]),
        # the estimate stays short of the target until a large record raises the average,
        # one record after the shard reached its size
        ([1] * 10 + [100] + [1] * 4, [11, 4]),
    ],
)
def test_shard_size_closes_where_the_estimate_first_reaches_the_target(sizes, expected):
    policy = ShardPolicy(shard_size=10)
    assert shards_by_record(policy, sizes) == expected
    assert _shards(ShardCutter(len(sizes), policy).cut(sizes)) == expected


class _Unclosable(_Here):
    """A destination whose shard files fail as they close."""

    def __init__(self, root, error: Exception) -> None:
        super().__init__(root)
        self.error = error

    def opener(self, path: str):
        error = self.error

        class Failing(io.BytesIO):
            def close(self) -> None:
                raise error

        return Failing()


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), RuntimeError("the helper stopped")])
def test_a_split_that_fails_reports_its_own_error_not_the_open_shards(tmp_path, error):
    """The writer closes its open shard on the way out of a failure; a shard that cannot
    close then does not hide the failure that stopped the split."""
    from tfr_convert.containers import get as container
    from tfr_convert.containers.framing import frame
    from tfr_convert.output.shards import SplitWriter

    with pytest.raises(ValueError, match="the first failure"):
        with SplitWriter(_Unclosable(tmp_path, error), "t", 3, ShardPolicy(), container("tfrecord"), "none") as w:
            w.write_chunk(frame(b"a"), [len(frame(b"a"))], batch=0, first=0)
            raise ValueError("the first failure")
    with pytest.raises(ValueError, match="before any record"):  # no shard open: nothing to close
        with SplitWriter(_Here(tmp_path), "t", 3, ShardPolicy(), container("tfrecord"), "none"):
            raise ValueError("before any record")


def test_a_splits_result_counts_the_records_and_bytes_of_its_shards():
    from tfr_convert.output.shards import ShardFile, SplitResult

    result = SplitResult("train", [ShardFile("a", 3, 100, "x"), ShardFile("b", 4, 50, "y")])
    assert (result.records, result.bytes) == (7, 150)
    assert (SplitResult("test").records, SplitResult("test").bytes) == (0, 0)


@pytest.mark.parametrize("threads", [1, 4])
def test_a_split_written_through_a_write_pool_gives_the_same_shards_told_in_order(tmp_path, threads):
    """With a pool, shards are hashed while the next fills: `on_cut` hears of each as it
    is cut, `on_shard` in order once it is hashed, and files, digests and checkpoints are
    those of the writer that hashes as it writes."""
    import random

    from tfr_convert.containers import get as container
    from tfr_convert.containers.framing import frame
    from tfr_convert.output.shards import SplitWriter
    from tfr_convert.storage.pooled_writes import WritePool

    rng = random.Random(threads)
    framed = [frame(rng.randbytes(rng.randint(1, 5000))) for _ in range(300)]
    chunks = [(lo, min(lo + 17, len(framed))) for lo in range(0, len(framed), 17)]

    def written(directory, pool):
        directory.mkdir()
        events = []
        writer = SplitWriter(
            _Here(directory), "train", len(framed), ShardPolicy(shard_size=40_000), container("tfrecord"), "none",
            on_shard=lambda shard, at: events.append(("shard", shard.records, shard.sha256, at)),
            on_cut=lambda at: events.append(("cut", at)), pool=pool,
        )  # fmt: skip
        for batch, (lo, hi) in enumerate(chunks):
            writer.write_chunk(b"".join(framed[lo:hi]), [len(f) for f in framed[lo:hi]], batch=batch, first=0)
        result = writer.close()
        files = [open(s.tmp_path, "rb").read() for s in result.shards]
        return events, files, [(s.records, s.bytes, s.sha256) for s in result.shards]

    plain_events, plain_files, plain_shards = written(tmp_path / "plain", None)
    with WritePool(threads) as pool:
        events, files, shards = written(tmp_path / "pooled", pool)
    assert files == plain_files and shards == plain_shards and len(files) > 5
    assert [e for e in events if e[0] == "shard"] == [e for e in plain_events if e[0] == "shard"]
    assert [e for e in events if e[0] == "cut"] == [e for e in plain_events if e[0] == "cut"]
    for n, event in enumerate(e for e in events if e[0] == "shard"):  # told after its cut, never before
        cuts_before = [e for e in events[: events.index(event)] if e[0] == "cut"]
        assert len(cuts_before) > n and cuts_before[n][1] == event[3]
