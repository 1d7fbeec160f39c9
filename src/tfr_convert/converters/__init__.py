"""One module per input format; `REGISTRY` maps a subcommand name to its converter."""

from __future__ import annotations

from .base import Converter
from .cifar import CifarConverter
from .images import ImagesConverter
from .mnist import MnistConverter

REGISTRY: dict[str, type[Converter]] = {
    MnistConverter.command: MnistConverter,
    CifarConverter.command: CifarConverter,
    ImagesConverter.command: ImagesConverter,
}

__all__ = ["REGISTRY", "CifarConverter", "Converter", "ImagesConverter", "MnistConverter"]
