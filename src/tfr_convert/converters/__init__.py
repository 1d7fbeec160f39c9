"""One module per input format. `REGISTRY` maps a subcommand to its converter class,
imported on first use: each converter pulls in what it needs (tarfile, Pillow, csv)
and the others should not pay for it at start-up."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Converter

#: subcommand -> the converter classes behind it (EMNIST is a variant of `mnist`)
REGISTRY: dict[str, tuple[str, ...]] = {
    "mnist": ("tfr_convert.converters.mnist:MnistConverter", "tfr_convert.converters.emnist:EmnistConverter"),
    "cifar": ("tfr_convert.converters.cifar:CifarConverter",),
    "images": ("tfr_convert.converters.images:ImagesConverter",),
    "detection": ("tfr_convert.converters.detection:DetectionConverter",),
}

#: `--variant` of the commands that read published datasets, as their converters name
#: them (mnist's, emnist's and cifar_files' VARIANTS; tests/test_cli.py holds the two to each other): here,
#: so that the command line lists them without importing the converters and numpy
VARIANTS: dict[str, tuple[str, ...]] = {
    "mnist": (
        "mnist",
        "fashion_mnist",
        "kmnist",
        "emnist/byclass",
        "emnist/bymerge",
        "emnist/balanced",
        "emnist/letters",
        "emnist/digits",
        "emnist/mnist",
    ),
    "cifar": ("cifar10", "cifar100"),
}


def converter_classes(name: str) -> list[type[Converter]]:
    """The converter classes of a subcommand."""
    found = []
    for spec in REGISTRY[name]:
        module, _, attr = spec.partition(":")
        found.append(getattr(importlib.import_module(module), attr))
    return found
