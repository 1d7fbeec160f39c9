"""`tfr-convert`: the group, with one subcommand per module of commands/ (one per
converter), added under the module's name."""

from __future__ import annotations

import click

from .. import __version__
from . import commands
from .translate import Group


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tfr-convert")
def convert() -> None:
    """Convert MNIST, CIFAR, image folders and annotated images (boxes) to sharded TFRecord
    (or ArrayRecord) datasets."""


for _name, _module in commands.modules().items():
    convert.add_command(_module.command, _name)
