"""The command-line contract: help, exit codes, stdout/stderr, no TensorFlow on local paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from helpers import write_cifar
from PIL import Image

from tfr_convert.cli.convert import convert
from tfr_convert.cli.inspect import inspect

SCRIPTS = Path(sysconfig.get_path("scripts"))


@pytest.mark.parametrize(("command", "args"), [(convert, []), (convert, ["mnist"]), (inspect, [])])
def test_help_of_every_command_runs(cli, command, args):
    result = cli.runner.invoke(command, [*args, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.stdout


def test_every_command_module_is_a_subcommand_running_the_converters_it_names(cli):
    from tfr_convert.cli import commands
    from tfr_convert.cli.convert import convert

    modules = commands.modules()
    assert sorted(convert.commands) == sorted(modules)
    assert {"cifar", "detection", "images", "mnist", "records"} <= set(modules)
    for name, module in modules.items():
        assert convert.commands[name] is module.command
        assert cli.convert(name, "--help").exit_code == 0
        assert {c.command for c in commands.converter_classes(module)} == {name}


def test_the_variants_the_command_line_lists_are_the_converters_own(cli):
    from tfr_convert.cli.commands import cifar as cifar_command
    from tfr_convert.cli.commands import mnist as mnist_command
    from tfr_convert.converters.published import cifar_files, emnist, mnist

    assert mnist_command.VARIANTS == mnist.VARIANTS + emnist.VARIANTS
    assert cifar_command.VARIANTS == cifar_files.VARIANTS


def test_every_converter_class_is_behind_a_command():
    """A Converter subclass defined in converters/ but named by no command's module
    would be unreachable from the command line."""
    import importlib
    import inspect as pyinspect
    import pkgutil

    import tfr_convert.converters as package
    from tfr_convert.cli import commands
    from tfr_convert.converters.base import Converter

    defined = set()
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):  # the families' packages too
        module = importlib.import_module(info.name)
        for _, value in pyinspect.getmembers(module, pyinspect.isclass):
            if issubclass(value, Converter) and value is not Converter and value.__module__ == module.__name__:
                defined.add(value)
    named = {c for module in commands.modules().values() for c in commands.converter_classes(module)}
    assert defined == named and len(defined) >= 10


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["mnist", "--out", "o"], "give SRC"),
        (["mnist", "no/such/dir", "--out", "o"], "does not exist"),
        (["mnist", ".", "--out", "o", "--shard-size", "12XB"], "is not a size"),
        (["mnist", ".", "--out", "o", "--num-shards", "2", "--examples-per-shard", "3"], "at most one of"),
        (["mnist", ".", "--out", "o", "--name", "my-data"], "use letters, digits and underscores"),
        (["mnist", ".", "--out", "o", "--workers", "0"], "0 is not in the range x>=1"),
        (["mnist", ".", "--out", "o", "--compression", "lz4"], "'lz4' is not one of"),
        (["mnist", ".", "--out", "o", "--variant", "emnist"], "'emnist' is not one of"),
        (["mnist", "."], "Missing option '--out'"),
        (["bogus"], "No such command 'bogus'"),
    ],
)
def test_usage_errors_exit_2(cli, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = cli.convert(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (tmp_path / "o").exists()


def test_summary_line_and_json_on_stdout_nothing_on_stderr(cli, mnist_src, tmp_path):
    src, _ = mnist_src
    plain = cli.convert("mnist", src, "--out", tmp_path / "a", "--validation-size", 4)
    assert plain.exit_code == 0 and plain.stderr == ""
    assert plain.stdout.startswith("mnist: train 36, validation 4, test 12 examples in 3 shards, ")
    assert len(plain.stdout.splitlines()) == 1
    as_json = cli.convert("mnist", src, "--out", tmp_path / "b", "--json")
    assert as_json.exit_code == 0 and as_json.stderr == ""
    summary = json.loads(as_json.stdout)
    assert summary["splits"]["train"]["examples"] == 40 and summary["splits"]["test"]["shards"] == 1
    assert summary["splits"]["test"]["bytes"] == (tmp_path / "b" / "mnist-test.tfrecord-00000-of-00001").stat().st_size


def _run_script(name: str, *args, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPTS / name), *map(str, args)], capture_output=True, text=True, env=env, timeout=120)


def test_local_paths_never_import_tensorflow(mnist_src, tmp_path):
    fake = tmp_path / "fake"
    (fake / "tensorflow").mkdir(parents=True)
    marker = tmp_path / "tensorflow-was-imported"
    (fake / "tensorflow" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise ImportError('tfr-convert must not import tensorflow here')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(fake)}
    src, _ = mnist_src
    cifar = write_cifar(tmp_path / "cifar", "cifar100", per_batch=3, archive=True)
    images = tmp_path / "images"
    for cls in ("a", "b"):
        (images / cls).mkdir(parents=True)
        for i in range(3):
            Image.new("RGB", (5, 7), (i * 40, 0, 0)).save(images / cls / f"{i}.png")
    out = tmp_path / "out"
    runs = [
        _run_script("tfr-convert", "mnist", src, "--out", out, "--workers", 2, env=env),
        _run_script("tfr-convert", "mnist", src, "--out", tmp_path / "png", "--image-format", "png", env=env),
        _run_script("tfr-convert", "cifar", cifar["path"], "--out", tmp_path / "c", "--workers", 2, env=env),
        _run_script(
            "tfr-convert",
            "cifar",
            cifar["path"].parent / "cifar-100-python",
            "--out",
            tmp_path / "c2",
            "--image-format",
            "png",
            env=env,
        ),
        _run_script("tfr-convert", "images", images, "--out", tmp_path / "i", "--workers", 2, env=env),
        _run_script(
            "tfr-convert",
            "images",
            images,
            "--out",
            tmp_path / "i2",
            "--image-format",
            "jpeg",
            "--resize",
            "4x4",
            "--grayscale",
            env=env,
        ),
        _run_script("tfr-inspect", out, env=env),
        _run_script("tfr-inspect", out, "--json", "--head", 3, env=env),
        _run_script("tfr-inspect", tmp_path / "png", "--count", env=env),
        _run_script("tfr-inspect", tmp_path / "c", env=env),
        _run_script("tfr-inspect", out, "--verify", env=env),
        _run_script("tfr-inspect", tmp_path / "i", "--stats", env=env),
        _run_script("tfr-inspect", out, "--grid", tmp_path / "grid.png", env=env),
        _run_script("tfr-inspect", out, "--write-index", env=env),
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert run.stderr == ""
    assert not marker.exists()
    assert json.loads(runs[7].stdout)["records"] == 52


def test_console_scripts_report_errors_without_traceback(tmp_path):
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(b"\x01\x02\x03")
    run = subprocess.run([str(SCRIPTS / "tfr-inspect"), str(bad)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert (
        run.stderr == f"error: {bad}: record 0 at byte offset 0: partial header: 3 trailing bytes, a header needs 12\n"
    )
    assert run.stdout == ""


def test_version(cli):
    from tfr_convert import __version__

    assert cli.convert("--version").stdout.strip().endswith(__version__)
    assert sys.version_info >= (3, 10)


def _stderr_on_a_terminal(*args) -> str:
    """Run tfr-convert with stderr on a pseudo-terminal; return what it drew there."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a real terminal has a size
    proc = subprocess.Popen([str(SCRIPTS / "tfr-convert"), *map(str, args)], stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closes when the process exits
            break
        if not chunk:
            break
        drawn += chunk
    proc.wait(timeout=120)
    os.close(leader)
    assert proc.returncode == 0
    return drawn.decode(errors="replace")


def test_progress_bar_on_a_terminal_unless_quiet(mnist_src, tmp_path):
    src, _ = mnist_src
    drawn = _stderr_on_a_terminal("mnist", src, "--out", tmp_path / "a")
    assert "0/52 [" in drawn and "ex/s]" in drawn
    assert _stderr_on_a_terminal("mnist", src, "--out", tmp_path / "b", "--quiet") == ""


@pytest.mark.parametrize("mode", ["--count", "--verify"])
def test_count_and_verify_never_import_numpy(cli, mnist_src, tmp_path, mode):
    # numpy costs more start-up time than a --verify of a small file takes
    src, _ = mnist_src
    assert cli.convert("mnist", src, "--out", tmp_path / "o", "--quiet").exit_code == 0
    code = (
        f"import sys; from tfr_convert.cli.inspect import inspect; "
        f"inspect([{mode!r}, {str(tmp_path / 'o')!r}], standalone_mode=False); "
        f"print('numpy' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [[], ["--json"]])
def test_a_full_stdout_after_the_commit_is_a_warning_not_a_failed_run(mnist_src, tmp_path, args):
    src, _ = mnist_src
    out = tmp_path / "out"
    scripts = Path(sysconfig.get_path("scripts"))
    with open("/dev/full", "w") as full:  # every write: "No space left on device"
        proc = subprocess.run([str(scripts / "tfr-convert"), "mnist", str(src), "--out", str(out), *args],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {out} is complete; its summary could not be written to stdout: No space left" in proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert (out / "dataset_info.json").exists()


def test_the_help_names_every_command_and_the_default_name_of_each(cli):
    top = cli.convert("--help").stdout
    assert all(word in top for word in ("MNIST", "CIFAR", "image folders", "annotated images"))
    name_help = " ".join(cli.convert("detection", "--help").stdout.split())
    assert "IMAGE_DIR's folder name for images and detection" in name_help


def test_each_commands_help_lists_its_own_options_before_the_shared_ones(cli):
    from tfr_convert.cli import commands

    for name in commands.modules():
        listed = [
            line.split()[0] for line in cli.convert(name, "--help").stdout.splitlines() if line.startswith("  --")
        ]
        shared = listed.index("--out")  # the first of the options every converter shares
        assert shared > 0 and "--help" not in listed[:shared], (name, listed)
        assert not {"--num-shards", "--seed", "--json"} & set(listed[:shared]), (name, listed)


def test_options_of_builds_a_commands_options_from_its_parameters_by_name():
    """cli/options.options_of: every field named like a parameter takes its value, a field
    no parameter names keeps its default, and what the command gives wins."""
    import dataclasses

    from tfr_convert.cli.options import options_of

    @dataclasses.dataclass(frozen=True)
    class Options:
        quality: int = 95
        chroma: str = "4:2:0"
        policy: str = "default"
        not_a_parameter: int = 7

    @click.command()
    @click.option("--quality", type=int, default=95)
    @click.option("--chroma", default="4:2:0")
    @click.option("--policy", default="ignored")
    @click.option("--other", default="x")
    def command(**_):
        click.echo(repr(options_of(Options, policy="given")))

    result = CliRunner().invoke(command, ["--quality", "70", "--chroma", "4:4:4"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == repr(Options(quality=70, chroma="4:4:4", policy="given", not_a_parameter=7))
