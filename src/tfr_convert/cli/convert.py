"""`tfr-convert`: the group, with one subcommand per module of commands/ (one per
converter), added under the module's name, and the commands of installed plugins
(tfr_convert.sources says how one registers)."""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import click

from ..errors import TfrConvertError
from ..version import __version__
from . import commands
from .translate import Group

ENTRY_POINTS = "tfr_convert.converters"  # the group plugins register under (tfr_convert.sources)


#: how long `--help` waits for the plugins it describes to import, all together: one
#: that takes longer is listed as not loaded, and never holds the help up
PLUGIN_LOAD_SECONDS = 3.0


@functools.cache
def _entries() -> tuple:
    """The entry points installed under ENTRY_POINTS, built-in commands' own included.
    Read only when a name is not built in or the list is asked for: scanning every
    installed package's metadata is start-up time a built-in command should not pay."""
    from importlib.metadata import entry_points

    return tuple(entry_points(group=ENTRY_POINTS))


def _plugins() -> dict:
    """Entry point name -> entry point, of the plugins that can run (the first of a name;
    none named like a built-in command that is not that command)."""
    plugins: dict = {}
    for entry in _entries():
        if entry.name not in plugins and not _shadowed(entry):
            plugins[entry.name] = entry
    return plugins


@functools.cache
def _built_in() -> dict[str, str]:
    """Built-in command name -> its entry point's value."""
    return {name: f"{module.__name__}:command" for name, module in commands.modules().items()}


def _shadowed(entry: Any) -> bool:
    """A plugin named like a built-in command, which runs instead of it."""
    return entry.name in _built_in() and entry.value != _built_in()[entry.name]


class _Loading:
    """One plugin's import, on a thread of its own, so that `--help` can stop waiting for
    it; whatever the import raises (SystemExit too) is kept, never let through."""

    def __init__(self, entry: Any) -> None:
        self.entry = entry
        self.command: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._load, name=f"tfr-convert plugin {entry.name}", daemon=True)
        self.thread.start()

    def _load(self) -> None:
        try:
            self.command = self.entry.load()
        except BaseException as e:  # a plugin's sys.exit() or bug ends nothing but its own loading
            self.error = e


class _Commands(Group):
    _deadline: float | None = None  # while --help lists the commands: when it stops waiting for plugins
    _loading: dict[str, _Loading] | None = None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_plugins()})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands, each plugin imported at the same time as the others and waited
        for PLUGIN_LOAD_SECONDS at most; then the plugins that cannot run, and why."""
        self._loading = {name: _Loading(entry) for name, entry in _plugins().items() if name not in self.commands}
        self._deadline = time.monotonic() + PLUGIN_LOAD_SECONDS
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._deadline = None
        unused = [e for e in _entries() if _shadowed(e)]
        if unused:
            with formatter.section("Plugins not used"):
                formatter.write_dl([(e.name, f"{e.value}: named like a built-in command, not run") for e in unused])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        built_in = super().get_command(ctx, name)
        if built_in is not None or name not in _plugins():
            return built_in
        entry = _plugins()[name]
        loading = (self._loading or {}).get(name) or _Loading(entry)
        wait = None if self._deadline is None else max(0.0, self._deadline - time.monotonic())
        loading.thread.join(wait)
        if loading.thread.is_alive():
            return _broken(
                name, f"the plugin command {name!r} ({entry.value}) did not load in {PLUGIN_LOAD_SECONDS:g} s"
            )
        if loading.error is not None:  # a plugin's own bug, exit or broken install: named, not a traceback
            e = loading.error
            why = f"exits at import (code {e.code})" if isinstance(e, SystemExit) else f"cannot be loaded: {e}"
            return _broken(name, f"the plugin command {name!r} ({entry.value}) {why}")
        if not isinstance(loading.command, click.Command):
            return _broken(name, f"the plugin command {name!r} ({entry.value}) is not a click command")
        return loading.command


def _broken(name: str, why: str) -> click.Command:
    """A plugin that cannot run, standing in for it: --help lists it as such, and running
    it is that error (exit 1), whatever its arguments."""

    def fail(**_: object) -> None:
        raise TfrConvertError(why)

    return click.Command(
        name,
        callback=fail,
        help=why,
        short_help="(cannot be loaded)",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tfr-convert")
def convert() -> None:
    """Convert MNIST, CIFAR, image folders and annotated images (boxes) to sharded TFRecord
    (or ArrayRecord) datasets."""


for _name, _module in commands.modules().items():
    convert.add_command(_module.command, _name)
