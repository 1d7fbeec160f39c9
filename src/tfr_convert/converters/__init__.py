"""One module per input format; `REGISTRY` maps a subcommand name to its converter."""

from __future__ import annotations

from .base import Converter
from .cifar import CifarConverter
from .mnist import MnistConverter

REGISTRY: dict[str, type[Converter]] = {
    MnistConverter.command: MnistConverter,
    CifarConverter.command: CifarConverter,
}

__all__ = ["REGISTRY", "CifarConverter", "Converter", "MnistConverter"]
