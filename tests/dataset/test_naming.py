"""naming.py at its seam: the one check every name from the data passes before it becomes
part of a path (checked_component, checked_relative), names written one a line
(lines_file), and shard names formatted and parsed by one object."""

from __future__ import annotations

import pytest

from tfr_convert.dataset.naming import (
    NAME_MAX,
    RELATIVE_MAX,
    ShardName,
    checked_component,
    checked_relative,
    component_problem,
    lines_file,
)
from tfr_convert.errors import SourceError


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "is empty"),
        (".", "'.'"),
        ("..", "'..'"),
        ("a/b", "path separator"),
        ("a\\b", "path separator"),
        ("/", "path separator"),
        ("a\0b", "NUL byte"),
        ("C:", "Windows drive"),
        ("c:x", "Windows drive"),
        ("x" * (NAME_MAX + 1), f"longer than {NAME_MAX} bytes"),
        ("é" * (NAME_MAX // 2 + 1), f"longer than {NAME_MAX} bytes"),  # counted in UTF-8 bytes
    ],
)
def test_a_name_that_cannot_be_one_path_component_is_refused_saying_why(value, problem):
    found = component_problem(value)
    assert found is not None and problem in found
    with pytest.raises(SourceError, match="cannot name a file or folder under the output") as raised:
        checked_component(value, "class 3")
    assert str(raised.value).startswith(f"class 3 {value!r} ")


@pytest.mark.parametrize("value", ["cat", "a.b", "...", ".hidden", "x" * NAME_MAX, "é" * (NAME_MAX // 2), "1:2", "C"])
def test_an_ordinary_name_is_one_component_as_it_is(value):
    assert component_problem(value) is None
    assert checked_component(value, "class") == value


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.png", "a.png"),
        ("sub/a.png", "sub/a.png"),
        ("./sub//a.png", "sub/a.png"),
        ("sub\\win\\a.png", "sub/win/a.png"),
        ("a/./b", "a/b"),
    ],
)
def test_a_relative_file_name_is_normalised(name, expected):
    assert checked_relative(name) == expected


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "is empty"),
        ("./", "is empty"),
        ("/etc/passwd", "is absolute"),
        ("\\server\\share", "is absolute"),
        ("../up.png", "'..'"),
        ("a/../../up.png", "'..'"),
        ("a/../b", "'..'"),
        ("a/b\0.png", "NUL byte"),
        ("C:/x.png", "Windows drive"),
        ("a/" + "n" * (NAME_MAX + 1), f"longer than {NAME_MAX} bytes"),
        ("a/" * (RELATIVE_MAX // 2) + "b", f"longer than {RELATIVE_MAX} bytes"),
    ],
)
def test_a_file_name_that_leaves_the_output_or_cannot_be_written_is_refused(name, problem):
    with pytest.raises(SourceError) as raised:
        checked_relative(name, "file name")
    message = str(raised.value)
    assert message.startswith(f"file name {name!r} is not a relative path inside the output (") and problem in message


def test_names_are_written_one_a_line_and_a_line_break_is_refused_naming_it():
    assert lines_file(["cat", "dog", "é"], "classes") == "cat\ndog\né\n".encode()
    assert lines_file([], "classes") == b""
    for brk in ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"):
        assert len(f"a{brk}b".splitlines()) == 2  # every break str.splitlines knows
        with pytest.raises(SourceError) as raised:
            lines_file(["ok", f"a{brk}b"], "the class names of 'label'")
        assert str(raised.value).startswith("the class names of 'label': name 2 ") and "line break" in str(raised.value)
    assert lines_file(["tab\there"], "x") == b"tab\there\n"  # a tab is no line break


@pytest.mark.parametrize(
    "shard",
    [
        ShardName("mnist", "train", 0, 1),
        ShardName("my-set", "test", 12, 100, "array_record"),
        ShardName("a", "b", 5, 99999),
    ],
)
def test_a_shard_name_parses_back_to_itself(shard):
    assert ShardName.parse(shard.filename) == shard
    assert ShardName.parse("/some/dir/" + shard.filename) == shard


def test_shard_names_are_tfds_template_and_other_names_parse_to_none():
    assert ShardName("mnist", "train", 3, 10).filename == "mnist-train.tfrecord-00003-of-00010"
    for other in ("mnist-train.tfrecord", "mnist.tfrecord-00000-of-00001", "x-train.tfrecord-0-of-1", "readme.txt"):
        assert ShardName.parse(other) is None


def test_the_limits_are_the_file_systems_own_numbers_and_inclusive():
    assert checked_component("x" * 255, "class") == "x" * 255  # NAME_MAX of Linux, macOS, Windows
    assert component_problem("x" * 256) is not None
    exactly = ("d/" * 1023) + "ab"  # 2048 bytes, RELATIVE_MAX
    assert len(exactly) == 2048 and checked_relative(exactly) == exactly
    with pytest.raises(SourceError):
        checked_relative(exactly + "c")


def test_a_shard_name_is_a_value_that_cannot_change():
    import dataclasses

    shard = ShardName("mnist", "train", 0, 1)
    assert {shard: 1}[ShardName("mnist", "train", 0, 1)] == 1  # hashable, equal by value
    with pytest.raises(dataclasses.FrozenInstanceError):
        shard.index = 2  # type: ignore[misc]
