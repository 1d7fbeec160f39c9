"""A source of one's own, as a pip package: the plugin kept in tests/plugin_counting is
installed into a temporary folder (built there, so the tree stays clean) and run as
`tfr-convert counting`, through the entry-point group tfr_convert.sources documents."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tensorflow as tf
from helpers import TESTS, write_mnist

from tfr_convert.cli.convert import PLUGIN_LOAD_SECONDS
from tfr_convert.dataset.wire.example import parse

SCRIPTS = Path(sys.executable).parent
PLUGIN = TESTS / "plugin_counting"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("plugin")
    shutil.copytree(PLUGIN, work / "src")
    target = work / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(work / "src")],
        check=True, capture_output=True,
    )  # fmt: skip
    return target


def _convert(plugin_path: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(plugin_path)}
    return subprocess.run([str(SCRIPTS / "tfr-convert"), *map(str, args)], capture_output=True, text=True, env=env)


def test_an_installed_plugin_is_a_command_whose_records_tensorflow_reads(plugin_path, tmp_path):
    listed = _convert(plugin_path, "--help")
    assert listed.returncode == 0 and "counting      The numbers 0..N-1 (a plugin)." in listed.stdout
    done = _convert(plugin_path, "counting", "--n", "30", "--out", tmp_path / "one", "--workers", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    shards = sorted((tmp_path / "one").glob("counting-train.tfrecord-*"))
    numbers = sorted(parse(r.numpy())["number"][1][0] for r in tf.data.TFRecordDataset([str(s) for s in shards]))
    assert numbers == list(range(30))
    # the engine is tfr-convert's: the same bytes for any worker count, a manifest to verify
    again = _convert(plugin_path, "counting", "--n", "30", "--out", tmp_path / "two", "--workers", "2", "--quiet")
    assert again.returncode == 0, again.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "one").iterdir()} == {
        p.name: p.read_bytes() for p in (tmp_path / "two").iterdir()
    }
    verified = subprocess.run([str(SCRIPTS / "tfr-inspect"), str(tmp_path / "one"), "--verify"], capture_output=True)
    assert verified.returncode == 0


def test_a_plugin_that_cannot_load_is_one_line_and_exit_1(plugin_path):
    listed = _convert(plugin_path, "--help")
    assert "broken        (cannot be loaded)" in listed.stdout
    run = _convert(plugin_path, "broken", "--anything", "1")
    assert run.returncode == 1
    assert run.stderr == (
        "error: the plugin command 'broken' (tfr_counting_missing:command) cannot be loaded: "
        "No module named 'tfr_counting_missing'\n"
    )


def test_without_the_plugin_its_name_is_a_usage_error():
    run = subprocess.run([str(SCRIPTS / "tfr-convert"), "counting"], capture_output=True, text=True)
    assert run.returncode == 2 and "No such command 'counting'" in run.stderr


def test_the_built_in_commands_are_registered_as_plugins_are():
    """pyproject.toml registers every module of cli/commands under the entry-point group,
    each entry loading the very command tfr-convert runs under that name."""
    from importlib.metadata import distribution

    from tfr_convert.cli import commands
    from tfr_convert.cli.convert import ENTRY_POINTS, convert

    ours = {e.name: e for e in distribution("tfr-convert").entry_points if e.group == ENTRY_POINTS}
    assert sorted(ours) == sorted(commands.modules())
    for name, entry in ours.items():
        assert entry.load() is convert.get_command(None, name), name


def test_help_lists_a_plugin_that_exits_or_hangs_at_import_without_dying_or_waiting(plugin_path):
    started = time.monotonic()
    listed = _convert(plugin_path, "--help")
    took = time.monotonic() - started
    assert listed.returncode == 0, listed.stderr
    assert "counting      The numbers 0..N-1 (a plugin)." in listed.stdout
    assert "exits         (cannot be loaded)" in listed.stdout
    assert "sleepy        (cannot be loaded)" in listed.stdout
    # the sleepy plugin sleeps 30 s at import: --help waits PLUGIN_LOAD_SECONDS, then lists it as not loaded
    assert took < PLUGIN_LOAD_SECONDS + 10, took
    assert "Traceback" not in listed.stderr


def test_a_plugin_that_exits_at_import_is_one_line_and_exit_1(plugin_path):
    run = _convert(plugin_path, "exits", "--out", "x")
    assert run.returncode == 1
    assert run.stderr == "error: the plugin command 'exits' (tfr_counting_exits:command) exits at import (code 3)\n"


def test_a_plugin_named_like_a_built_in_is_reported_and_the_built_in_runs(plugin_path, tmp_path):
    listed = _convert(plugin_path, "--help")
    assert "Plugins not used:" in listed.stdout
    assert "mnist  tfr_counting:command: named like a built-in command, not run" in listed.stdout
    src = tmp_path / "src"
    write_mnist(src)
    run = _convert(plugin_path, "mnist", src, "--out", tmp_path / "out", "--quiet")
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "out").glob("mnist-*")) == [
        "mnist-test.tfrecord-00000-of-00001",
        "mnist-train.tfrecord-00000-of-00001",
    ]


def test_a_built_in_command_reads_no_plugin_metadata():
    """Running a built-in command never scans the installed packages' entry points (start-up time)."""
    code = (
        "import sys; from tfr_convert.cli import convert as c; "
        "c._entries = lambda: (_ for _ in ()).throw(AssertionError('entry points read')); "
        "sys.exit(c.convert.main(['mnist', '--help'], standalone_mode=False) or 0)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_a_plugin_draws_ratio_splits_from_tfr_convert_sources_as_the_built_ins_do():
    """split_by_ratio and SplitSpec are part of the plugin API: the same items, key and
    seed give the same splits, in the proportions asked, whatever the items' order."""
    from tfr_convert.sources import SplitSpec, split_by_ratio

    items = [f"item-{i}" for i in range(1000)]
    spec = SplitSpec.parse("train=0.8,test=0.2")
    splits, said = split_by_ratio(items, str, spec, 7)
    assert said is None and {name: len(found) for name, found in splits.items()} == {"train": 800, "test": 200}
    again, _ = split_by_ratio(list(reversed(items)), str, spec, 7)
    assert {name: set(found) for name, found in again.items()} == {name: set(found) for name, found in splits.items()}
    other, _ = split_by_ratio(items, str, spec, 8)
    assert set(other["test"]) != set(splits["test"])
