"""tfr-convert: datasets people download -> sharded, verified TFRecord files."""

from __future__ import annotations

__version__ = "0.1.0"
