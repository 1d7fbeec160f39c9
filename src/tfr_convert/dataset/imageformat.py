"""Which image format a byte string holds, from its magic bytes alone (no decoder).

Shared by the converters' image policy and by the inspector, which must not
depend on any converter.
"""

from __future__ import annotations

# Magic bytes -> format name; the formats TensorFlow's decode_image reads come first.
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"BM", "bmp"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
)


def sniff_format(data: bytes | memoryview) -> str | None:
    """The image format from its first bytes, or None if it is none we know by magic."""
    head = bytes(data[:12])  # a view of a record's bytes too
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None
