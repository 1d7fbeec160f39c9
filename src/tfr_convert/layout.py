"""Framed records for many examples of one fixed layout, built with numpy.

When every example of a batch serializes to the same bytes except for a few
fixed-width spots — a bytes feature of constant length (pixels), an int64
feature whose value stays below 128 (one varint byte: a label) — there is no
need for one Python object per example. The layout is found by serializing a
prototype through the one serializer (example.serialize) and diffing it
against variants, so the bytes are the serializer's by construction; then one
numpy pass fills every row and a loop computes the data CRCs.

Anything that does not fit the layout makes `frame_uniform` return None, and
the caller falls back to the per-example path.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .example import serialize
from .tfrecord import HEADER_SIZE, crc32c, masked_crc

_MAX_ONE_BYTE_VARINT = 127


def _spots(prototype: dict[str, Any], varying: dict[str, np.ndarray]) -> tuple[bytes, dict[str, int]] | None:
    """The prototype's bytes and where each varying value sits in them, or None."""
    base = {**prototype}
    for name, values in varying.items():
        base[name] = bytes(values.shape[1]) if values.ndim == 2 else 0
    template = serialize(base)
    spots = {}
    for name, values in varying.items():
        changed = {**base, name: b"\xff" * values.shape[1] if values.ndim == 2 else 1}
        other = serialize(changed)
        if len(other) != len(template):
            return None
        diff = np.flatnonzero(np.frombuffer(template, np.uint8) != np.frombuffer(other, np.uint8))
        width = values.shape[1] if values.ndim == 2 else 1
        if len(diff) != width or diff[-1] - diff[0] != width - 1:
            return None
        spots[name] = int(diff[0])
    return template, spots


def frame_uniform(prototype: dict[str, Any], varying: dict[str, np.ndarray]) -> np.ndarray | None:
    """Framed records, one row each, for N examples that equal `prototype` except for `varying`.

    varying: name -> uint8 array (N, L) for a bytes feature of length L, or an
    integer array (N,) with values in 0..127 for an int64 feature. The result is
    a uint8 array (N, record length); row i is exactly
    tfrecord.frame(example.serialize({**prototype, name: value_i, ...})).
    Returns None when the values do not fit one layout.
    """
    n = len(next(iter(varying.values())))
    for values in varying.values():
        if len(values) != n:
            raise ValueError("varying arrays differ in length")
        if values.ndim == 1 and n and (values.min() < 0 or values.max() > _MAX_ONE_BYTE_VARINT):
            return None
    found = _spots(prototype, varying)
    if found is None:
        return None
    template, spots = found
    header = struct.pack("<Q", len(template))
    header += struct.pack("<I", masked_crc(header))
    width = HEADER_SIZE + len(template) + 4
    rows = np.empty((n, width), np.uint8)
    rows[:, :HEADER_SIZE] = np.frombuffer(header, np.uint8)
    rows[:, HEADER_SIZE:-4] = np.frombuffer(template, np.uint8)
    for name, values in varying.items():
        at = HEADER_SIZE + spots[name]
        if values.ndim == 2:
            rows[:, at : at + values.shape[1]] = values
        else:
            rows[:, at] = values
    flat = memoryview(rows).cast("B")  # CRCs over views of the rows: no copies
    crcs = np.fromiter(
        (crc32c(flat[start + HEADER_SIZE : start + width - 4]) for start in range(0, n * width, width)),
        np.uint32,
        n,
    )
    masked = ((crcs >> 15) | (crcs << 17)) + np.uint32(0xA282EAD8)  # tfrecord.masked_crc, all at once (wraps)
    rows[:, -4:] = masked.astype("<u4").view(np.uint8).reshape(n, 4)
    return rows
