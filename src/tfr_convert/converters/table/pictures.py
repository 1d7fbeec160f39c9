"""A table's picture columns (`table --image-column`, and every Hugging Face `Image`
feature): their values as picture bytes, stored by the shared image policy.

A value is the picture's bytes (a binary column), a path relative to --image-root (a
text column), or a Hugging Face `Image` struct `{bytes, path}` (the bytes, else the
path). A path from the data is read only inside --image-root, links resolved.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from ...dataset.features import FeatureSpec
from ...errors import OptionError, SourceError
from ...optional import pyarrow
from ...pictures.imaging import DEFAULT_CHROMA, DecodePolicy
from ...pictures.stored_image import stored
from ...storage import fs

IMAGE_FORMATS = ("keep", "png", "jpeg")


@dataclass(frozen=True)
class ImagePolicy:
    """How a table's pictures are stored: the images command's options that apply."""

    image_format: str = "keep"
    quality: int = 95
    chroma: str = DEFAULT_CHROMA  # a re-encoded JPEG's chroma subsampling
    policy: DecodePolicy = field(default_factory=DecodePolicy)
    root: str | None = None  # where paths in the data are read from (--image-root)

    def problem(self) -> str | None:
        if self.image_format not in IMAGE_FORMATS:
            return f"--image-format {self.image_format}: choose {', '.join(IMAGE_FORMATS)}"
        if self.image_format == "keep" and self.policy.resize is not None:
            return "--resize re-encodes: use --image-format png or jpeg"
        return None


@dataclass(frozen=True)
class ImageColumn:
    source: str  # the column as the table names it
    name: str  # the feature's name
    kind: str  # bytes, path or struct


def image_column(source: str, name: str, t: Any, root: str | None) -> ImageColumn:
    """What a column of pictures holds, by its Arrow type; OptionError if no picture."""
    pa = pyarrow("tfr-convert table")
    types = pa.types
    if types.is_binary(t) or types.is_large_binary(t):
        return ImageColumn(source, name, "bytes")
    if types.is_string(t) or types.is_large_string(t):
        if root is None:
            raise OptionError(
                f"--image-column {source} holds paths: give --image-root, the folder they are relative to"
            )
        return ImageColumn(source, name, "path")
    if types.is_struct(t) and {f.name for f in t} >= {"bytes"}:
        return ImageColumn(source, name, "struct")
    raise OptionError(
        f"--image-column {source} is of type {t}: a picture column holds bytes, paths, or Hugging Face "
        "Image structs {bytes, path}"
    )


class TableImages:
    """The picture columns of one run: their features, values and what was seen of them."""

    def __init__(self, columns: list[ImageColumn], policy: ImagePolicy) -> None:
        self.columns, self.policy = columns, policy
        self._real_root = None
        if policy.root is not None and not fs.is_remote(policy.root):
            self._real_root = os.path.realpath(policy.root)
        self._seen: tuple[Hashable, ...] = ()

    def features(self) -> dict[str, FeatureSpec]:
        encoding = self.policy.image_format if self.policy.image_format != "keep" else None
        channels = self.policy.policy.channels or 3
        size = self.policy.policy.resize
        height, width = (size[1], size[0]) if size else (None, None)
        return {c.name: FeatureSpec.image((height, width, channels), encoding) for c in self.columns}

    def values(self, row: dict[str, Any]) -> dict[str, bytes]:
        """{feature: stored picture} of one row's values ({source: Arrow value}); the
        observation of the row is kept for `observed`."""
        cell, seen = {}, []
        for column in self.columns:
            value = row[column.source]
            if value is None:
                seen.append(None)
                continue
            data = self._bytes(column, value)
            policy = self.policy
            picture = stored(
                data, column.source, policy.image_format, policy.policy, policy.quality, chroma=policy.chroma
            )
            cell[column.name] = picture.data
            seen.append((picture.format, picture.height, picture.width, picture.channels, picture.flag))
        self._seen = tuple(seen)
        return cell

    def observed(self) -> tuple[Hashable, ...]:
        return self._seen

    def _bytes(self, column: ImageColumn, value: Any) -> bytes:
        if column.kind == "bytes":
            return value
        if column.kind == "struct":
            if value.get("bytes") is not None:
                return value["bytes"]
            value = value.get("path")
            if value is None:
                raise SourceError(f"column {column.source!r}: a picture with neither bytes nor a path")
            if self.policy.root is None:
                raise SourceError(f"column {column.source!r}: a picture by path ({value}): give --image-root")
        return self._read(column, value)

    def _read(self, column: ImageColumn, rel: str) -> bytes:
        root = self.policy.root
        assert root is not None
        if fs.is_remote(root):
            clean = os.path.normpath(rel.replace("\\", "/"))
            path = fs.join(root, clean)
        else:
            path = os.path.normpath(os.path.join(root, rel))
            clean = os.path.relpath(path, root)
        if os.path.isabs(clean) or clean == ".." or clean.startswith(".." + os.sep) or clean.startswith("../"):
            raise SourceError(f"column {column.source!r}: path {rel!r} leads outside --image-root {root}")
        try:
            return fs.read_bytes(path, inside=self._real_root)
        except OSError as e:
            raise SourceError(f"column {column.source!r}: cannot read {path}: {e.strerror or e}") from None

    def finish(self, features: dict[str, FeatureSpec], observations: Counter[Hashable]) -> list[str]:
        """Each picture feature's shape and encoding from what was stored; a word on pictures
        re-encoded so that TensorFlow reads them upright."""
        warnings = []
        for i, column in enumerate(self.columns):
            seen = [o[i] for o in observations if isinstance(o, tuple) and o[i] is not None]  # type: ignore[index]
            if not seen:
                continue
            heights, widths = {h for _, h, _, _, _ in seen}, {w for _, _, w, _, _ in seen}
            channels, formats = {c for _, _, _, c, _ in seen}, {f for f, *_ in seen}
            spec = features[column.name]
            features[column.name] = dataclasses.replace(  # per_object kept: a picture an Example may lack
                spec,
                shape=(
                    heights.pop() if len(heights) == 1 else None,
                    widths.pop() if len(widths) == 1 else None,
                    channels.pop() if len(channels) == 1 and channels <= {1, 3, 4} else spec.shape[2],
                ),
                encoding=spec.encoding or (formats.pop() if len(formats) == 1 and formats <= {"png", "jpeg"} else None),
            )
            flagged = sorted({flag for *_, flag in seen if flag is not None})
            if flagged:
                count = sum(1 for *_, flag in seen if flag is not None)
                warnings.append(
                    f"column {column.source!r}: re-encoded {count} picture{'s' if count > 1 else ''} "
                    f"({', '.join(flagged)}), so that TensorFlow decodes them upright"
                )
        return warnings
