"""A source of one's own, as a pip package: the plugin kept in tests/plugin_counting is
installed into a temporary folder (built there, so the tree stays clean) and run as
`tfr-convert counting`, through the entry-point group tfr_convert.sources documents."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf

from tfr_convert.dataset.example import parse

SCRIPTS = Path(sys.executable).parent
PLUGIN = Path(__file__).parent / "plugin_counting"


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
