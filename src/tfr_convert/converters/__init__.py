"""One module per input format; `REGISTRY` maps a subcommand name to its converter."""

from __future__ import annotations

from .base import Converter
from .mnist import MnistConverter

REGISTRY: dict[str, type[Converter]] = {
    MnistConverter.command: MnistConverter,
}

__all__ = ["REGISTRY", "Converter", "MnistConverter"]
