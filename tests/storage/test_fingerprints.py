"""The stats --resume compares item files by (fingerprints.py), and the journal naming
the first changed file."""

from __future__ import annotations

import os

import pytest

from tfr_convert.errors import OutputError
from tfr_convert.output.journal import Journal
from tfr_convert.storage.fingerprints import InputFiles, stat_local


def serial(fill, n):
    return fill(0, n)


def files(tmp_path, names=("a.png", "b.png", "c.png")):
    for name in names:
        (tmp_path / name).write_bytes(name.encode() * 10)
    return InputFiles.of(str(tmp_path), list(names), serial)


def test_unchanged_files_show_no_change(tmp_path):
    before = files(tmp_path)
    assert InputFiles.of(str(tmp_path), list(before.names), serial).first_change(before.stats) is None


def test_the_first_changed_file_in_plan_order_is_named_with_what_changed(tmp_path):
    before = files(tmp_path, ("c.png", "a.png", "b.png"))
    os.utime(tmp_path / "b.png", ns=(0, 10**9))
    (tmp_path / "a.png").write_bytes(b"longer than it was, and new")
    now = InputFiles.of(str(tmp_path), list(before.names), serial)
    assert now.first_change(before.stats) == f"{tmp_path / 'a.png'} changed (size 50 then, 27 now; modification time)"


def test_a_removed_file_is_said_to_be_gone(tmp_path):
    before = files(tmp_path)
    (tmp_path / "b.png").unlink()
    now = InputFiles.of(str(tmp_path), list(before.names), serial)
    assert now.first_change(before.stats) == f"{tmp_path / 'b.png'} is gone"


@pytest.mark.parametrize("changed", ["pictures/b.png", "masks/a.png", "masks/c.png"])
def test_files_under_several_roots_are_compared_and_named_under_their_own(tmp_path, changed):
    pictures, masks = tmp_path / "pictures", tmp_path / "masks"
    pictures.mkdir(), masks.mkdir()

    def both() -> InputFiles:
        return InputFiles.joined([files(pictures, ("a.png", "b.png")), files(masks, ("a.png", "c.png"))])

    before = both()
    assert before.names == ["a.png", "b.png", "a.png", "c.png"] and before.first_change(before.stats) is None
    (tmp_path / changed).write_bytes(b"redrawn")
    now = InputFiles.joined(
        [
            InputFiles.of(str(pictures), ["a.png", "b.png"], serial),
            InputFiles.of(str(masks), ["a.png", "c.png"], serial),
        ]
    )
    assert now.first_change(before.stats) == f"{tmp_path / changed} changed (size 50 then, 7 now; modification time)"


def test_stats_in_parts_join_into_the_stats_of_the_whole(tmp_path):
    names = [f"{i}.png" for i in range(7)]
    for name in names:
        (tmp_path / name).write_bytes(name.encode())

    def in_three(fill, n):
        return b"".join(fill(lo, min(lo + 3, n)) for lo in range(0, n, 3))

    assert InputFiles.of(str(tmp_path), names, in_three).stats == stat_local(str(tmp_path), names)


def test_the_journal_names_a_changed_file_only_when_nothing_else_differs(tmp_path):
    before = files(tmp_path)
    identity = {"options": {"seed": 0}, "inputs": before.digest()}
    journal = Journal(str(tmp_path / "journal"))
    journal.open(identity, None, before)
    journal.close()
    assert journal.read(identity, before) == []
    (tmp_path / "c.png").write_bytes(b"new")
    now = InputFiles.of(str(tmp_path), list(before.names), serial)
    with pytest.raises(OutputError, match=r"cannot --resume: .*c\.png changed \(size 50 then, 3 now"):
        journal.read({**identity, "inputs": now.digest()}, now)
    with pytest.raises(OutputError, match=r"options\.seed: 0 then, 1 now"):  # the run differs: said as such
        journal.read({"options": {"seed": 1}, "inputs": now.digest()}, now)


def entries(stats: bytes) -> list[tuple[int, int, int]]:
    import struct

    return [struct.unpack_from("<qqq", stats, i) for i in range(0, len(stats), 24)]


def test_a_missing_file_is_packed_as_minus_ones_and_a_present_one_as_its_stat(tmp_path):
    """The packed form is what journals keep: (size, mtime in ns, inode), -1s for a missing file."""
    (tmp_path / "here.png").write_bytes(b"12345")
    st = os.stat(tmp_path / "here.png")
    assert entries(stat_local(str(tmp_path), ["gone.png", "here.png", "nul\x00.png"])) == [
        (-1, -1, -1),
        (5, st.st_mtime_ns, st.st_ino),
        (-1, -1, -1),  # a name no file can have (os.stat raises ValueError): missing too
    ]


def test_remote_stats_come_from_one_listing_by_name(tmp_path):
    import datetime
    import hashlib

    import fsspec

    from tfr_convert.storage import fs
    from tfr_convert.storage.fingerprints import stat_remote

    root = f"memory://fingerprints-{os.getpid()}"
    fs.put_bytes(f"{root}/a/1.png", b"12345")
    fs.put_bytes(f"{root}/b.png", b"")
    listed = fsspec.filesystem("memory").find(root.removeprefix("memory://"), detail=True)
    created = {name.rsplit("/", 1)[-1]: info["created"] for name, info in listed.items()}
    no_version = int.from_bytes(hashlib.blake2b(b"", digest_size=8).digest(), "little", signed=True)

    def ns(value):
        seconds = value.timestamp() if isinstance(value, datetime.datetime) else value
        return round(seconds * 1e9)

    try:
        found = entries(stat_remote(root + "/", ["a/1.png", "gone.png", "b.png"]))
    finally:
        fs.rmtree(root)
    assert found == [(5, ns(created["1.png"]), no_version), (-1, -1, -1), (0, ns(created["b.png"]), no_version)]


def test_first_change_on_a_store_names_the_version_and_only_what_changed():
    import struct

    entry = struct.Struct("<qqq").pack
    before = InputFiles(("s3://bucket/photos",), ["a.png", "b.png"], entry(5, 10, 1) + entry(7, 20, 2), (2,))
    now = InputFiles(("s3://bucket/photos",), ["a.png", "b.png"], entry(5, 10, 1) + entry(7, 20, 3), (2,))
    assert now.first_change(before.stats) == "s3://bucket/photos/b.png changed (version)"
    grown = InputFiles(("s3://bucket/photos",), ["a.png", "b.png"], entry(9, 10, 1) + entry(7, 20, 2), (2,))
    assert grown.first_change(before.stats) == "s3://bucket/photos/a.png changed (size 5 then, 9 now)"
    # stats of other files (another count) are no change of these: the journal says the run differs
    assert now.first_change(before.stats[:24]) is None and now.first_change(before.stats + entry(1, 1, 1)) is None


def test_a_store_that_lists_no_time_gives_minus_one_for_it():
    """Some stores' listings carry no modification time: the entry says -1, not a guess."""
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    from tfr_convert.storage.fingerprints import stat_remote

    class TimelessFileSystem(MemoryFileSystem):  # the in-memory store, its listing stripped of times
        protocol = "timeless"

        @classmethod
        def _strip_protocol(cls, path):
            return super()._strip_protocol("memory://" + str(path).removeprefix("timeless://"))

        def find(self, path, *args, **kwargs):
            found = super().find(path, *args, **kwargs)
            if not kwargs.get("detail"):
                return found
            return {name: {k: v for k, v in info.items() if k != "created"} for name, info in found.items()}

    fsspec.register_implementation("timeless", TimelessFileSystem, clobber=True)
    store = fsspec.filesystem("timeless")
    store.pipe_file(f"/timeless-{os.getpid()}/a.png", b"123")
    try:
        [(size, modified, _)] = entries(stat_remote(f"timeless://timeless-{os.getpid()}", ["a.png"]))
    finally:
        store.rm(f"/timeless-{os.getpid()}", recursive=True)
    assert (size, modified) == (3, -1)


def test_a_change_is_found_among_many_files(tmp_path):
    """Stats of more than a few files (lengths past the small integers Python shares)."""
    names = [f"{i:02d}.png" for i in range(20)]
    before = files(tmp_path, names)
    (tmp_path / "17.png").write_bytes(b"changed")
    now = InputFiles.of(str(tmp_path), names, serial)
    assert len(before.stats) > 256 and now.first_change(before.stats).startswith(f"{tmp_path / '17.png'} changed")
