"""Every option a message, hint or help text suggests exists: a test reads each string
in the package (docstrings aside) for `--option` and finds it among the options of
tfr-convert's subcommands, tfr-inspect and tfr-export."""

from __future__ import annotations

import ast
import re

import click
from helpers import REPO

from tfr_convert.cli.convert import convert
from tfr_convert.cli.export import export
from tfr_convert.cli.inspect import inspect

PACKAGE = REPO / "src" / "tfr_convert"
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*(?![\w-])")
# options of other programs, quoted as theirs: Apache Beam's pipeline options (--beam-options)
THEIRS = {"--runner", "--project", "--region"}


def _options() -> set[str]:
    found = {"--help", "--version"}
    commands = [convert, inspect, export]
    context = click.Context(convert)
    commands += [convert.get_command(context, name) for name in convert.list_commands(context)]
    for command in commands:
        for param in command.params:
            if isinstance(param, click.Option):
                found.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
    return found


def _strings(tree: ast.AST):
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_every_option_a_message_names_is_an_option_of_a_command():
    options = _options()
    assert "--max-record-size" in options and "--quarantine" in options  # the scan sees the commands
    unknown = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, text in _strings(ast.parse(path.read_text())):
            unknown += [f"{path.relative_to(PACKAGE)}:{line}: {o}" for o in OPTION.findall(text) if o not in options]
    assert [u for u in unknown if u.rsplit(": ", 1)[1] not in THEIRS] == []


def test_the_scan_finds_an_option_no_command_has():
    tree = ast.parse(
        'def f():\n    """--docstrings are passed over"""\n    raise ValueError("(--no-such-option raises it)")\n'
    )
    found = [o for _, text in _strings(tree) for o in OPTION.findall(text)]
    assert found == ["--no-such-option"]


def test_records_and_export_take_the_max_record_size_their_error_names(cli, tmp_path):
    import tensorflow as tf

    path = tmp_path / "big-train.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        feature = {"blob": tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes(3000)]))}
        writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    refused = cli.convert("records", path, "--out", tmp_path / "a", "--max-record-size", "2KB", "--quiet")
    assert refused.exit_code == 1 and "--max-record-size raises it" in refused.stderr, refused.stderr
    assert cli.convert("records", path, "--out", tmp_path / "b", "--max-record-size", "4KB").exit_code == 0
    refused = cli.export(path, "--to", "parquet", "--out", tmp_path / "c", "--max-record-size", "2KB")
    assert refused.exit_code == 1 and "--max-record-size raises it" in refused.stderr, refused.stderr
    assert cli.export(path, "--to", "parquet", "--out", tmp_path / "d", "--max-record-size", "4KB").exit_code == 0
