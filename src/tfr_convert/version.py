"""The version of tfr-convert: one place, read by the package metadata and every writer of it."""

__version__ = "0.1.0"
