"""`tfr-convert`: the group, with one subcommand per module of commands/ (one per
converter), added under the module's name, and the commands of installed plugins
(tfr_convert.sources says how one registers)."""

from __future__ import annotations

import functools

import click

from ..errors import TfrConvertError
from ..version import __version__
from . import commands
from .translate import Group

ENTRY_POINTS = "tfr_convert.converters"  # the group plugins register under (tfr_convert.sources)


@functools.cache
def _plugins() -> dict:
    """Entry point name -> entry point, of the plugins installed. Read only when a name
    is not built in or the list is asked for: scanning every installed package's
    metadata is start-up time a built-in command should not pay."""
    from importlib.metadata import entry_points

    return {entry.name: entry for entry in entry_points(group=ENTRY_POINTS)}


class _Commands(Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_plugins()})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        found = super().get_command(ctx, name)
        if found is not None or name not in _plugins():
            return found
        entry = _plugins()[name]
        try:
            command = entry.load()
        except Exception as e:  # a plugin's own bug or a broken install: named, not a traceback
            return _broken(name, f"the plugin command {name!r} ({entry.value}) cannot be loaded: {e}")
        if not isinstance(command, click.Command):
            return _broken(name, f"the plugin command {name!r} ({entry.value}) is not a click command")
        return command


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
