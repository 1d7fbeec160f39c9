"""Features -> serialized `tf.train.SequenceExample`s, as YouTube-8M and MediaPipe write
clips: a context (an Example's features: field 1 of both messages, so the same bytes)
and feature lists (field 2: under each name, one Feature per step), the names in the
order `serialize` writes an Example's, so the same inputs give the same bytes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .example import delimited, feature_bytes, key_field, key_order, serialize


def serialize_sequence(context: Mapping[str, Any], lists: Mapping[str, Sequence[Any]]) -> bytes:
    """A context features dict and {name: each step's value} -> SequenceExample bytes."""
    entries = []
    for name in key_order(lists):
        steps = b"".join(delimited(b"\x0a", feature_bytes(name, step)) for step in lists[name])
        entries.append(delimited(b"\x0a", key_field(name) + delimited(b"\x12", steps)))
    return serialize(context) + (delimited(b"\x12", b"".join(entries)) if entries else b"")
