"""The converters' commands: one module per `tfr-convert` subcommand, named as it.

Each module defines `command` (a click command: the converter's own options, mapped
onto its converter's options class, with the options every converter shares) and
`CONVERTERS` (the converter classes behind it, as "module:Class", imported only when
the command runs: each pulls in what it needs, numpy, Pillow, csv, and the others
should not pay for it at start-up). `tfr-convert` adds every module found here, so a
new converter is its module in converters/, its options class, and one module here.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> dict[str, ModuleType]:
    """Subcommand name -> its module, for every module in this package."""
    return {info.name: importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)}


def converter_classes(module: ModuleType) -> list[type]:
    """The converter classes a command's module names in its CONVERTERS."""
    classes = []
    for spec in module.CONVERTERS:
        name, _, attr = spec.partition(":")
        classes.append(getattr(importlib.import_module(name), attr))
    return classes
