"""One module per input format. `REGISTRY` maps a subcommand to its converter class,
imported on first use: each converter pulls in what it needs (tarfile, Pillow, csv)
and the others should not pay for it at start-up."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Converter

REGISTRY: dict[str, str] = {
    "mnist": "tfr_convert.converters.mnist:MnistConverter",
    "cifar": "tfr_convert.converters.cifar:CifarConverter",
    "images": "tfr_convert.converters.images:ImagesConverter",
    "detection": "tfr_convert.converters.detection:DetectionConverter",
}


def converter_class(name: str) -> type[Converter]:
    module, _, attr = REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module), attr)
