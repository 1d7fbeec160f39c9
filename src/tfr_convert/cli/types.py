"""Every ParamType of both commands: a value that cannot be right is refused while
parsing, naming the option (exit 2), before anything is read."""

from __future__ import annotations

import re
from typing import Any

import click

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "k": 1 << 10,
    "m": 1 << 20,
    "g": 1 << 30,
    "t": 1 << 40,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}


class LocalOrRemotePath(click.Path):
    """click.Path for local paths; a path with a scheme (s3://...) is taken as it is
    and checked when it is opened (through fsspec, which only then is imported)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ..storage.fs import is_remote

        if is_remote(str(value)):
            return str(value)
        return super().convert(value, param, ctx)


class SplitOrPath(LocalOrRemotePath):
    """PATH, or SPLIT=PATH (`val=ann/val.json`): (the split as TFDS names it, or None;
    the path, checked as LocalOrRemotePath checks it). A value that is a path as it
    stands is a path, even with an '=' in it."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        from ..dataset.splits import SPLIT_FOLDERS, SPLIT_NAME
        from ..storage.fs import exists

        text = str(value)
        split, sep, path = text.partition("=")
        if not sep or exists(text) or not SPLIT_NAME.fullmatch(split):
            return None, super().convert(text, param, ctx)
        return SPLIT_FOLDERS.get(split.lower(), split), super().convert(path, param, ctx)


class ByteSize(click.ParamType):
    """`128MB` (SI), `64MiB` / `64M` (binary) or plain bytes."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
        if not m or m[2].lower() not in _SIZE_UNITS:
            self.fail(f"{value!r} is not a size like 128MB, 64MiB or 1000000", param, ctx)
        size = int(float(m[1]) * _SIZE_UNITS[m[2].lower()])
        if size < 1:
            self.fail(f"{value!r} must be at least one byte", param, ctx)
        return size


class StorageOptions(click.ParamType):
    """`--storage-options`: a JSON object of fsspec options, for every remote path
    ({"endpoint_url": ...}) or per scheme ({"s3": {...}, "gs": {...}})."""

    name = "JSON"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> dict[str, Any]:
        from ..storage.stores import parse_options

        if isinstance(value, dict):
            return value
        try:
            return parse_options(str(value))
        except ValueError as e:
            self.fail(f"{value!r}: {e}", param, ctx)


class DatasetName(click.ParamType):
    """A name usable in shard file names and by TFDS: letters, digits, underscores."""

    name = "name"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", str(value)):
            self.fail(f"{value!r}: use letters, digits and underscores, starting with a letter", param, ctx)
        return str(value)


class Version(click.ParamType):
    """A dataset version as TFDS writes them: MAJOR.MINOR.PATCH."""

    name = "version"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", str(value)):
            self.fail(f"{value!r}: a version is MAJOR.MINOR.PATCH, e.g. 1.1.0 (TFDS's form)", param, ctx)
        return str(value)


class Split(click.ParamType):
    """`train=0.8,validation=0.1,test=0.1`."""

    name = "split"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        from ..dataset.splits import SplitSpec

        try:
            return SplitSpec.parse(str(value))
        except ValueError as e:
            self.fail(f"{value!r}: {e}", param, ctx)


class Size2D(click.ParamType):
    """`WxH`, e.g. 224x224."""

    name = "WxH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, int]:
        m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", str(value))
        if not m or int(m[1]) < 1 or int(m[2]) < 1:
            self.fail(f"{value!r} is not WIDTHxHEIGHT, e.g. 224x224", param, ctx)
        return int(m[1]), int(m[2])


class Color(click.ParamType):
    """`R,G,B` or `white` / `black`."""

    name = "R,G,B"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, int, int]:
        named = {"white": (255, 255, 255), "black": (0, 0, 0)}
        if str(value).lower() in named:
            return named[str(value).lower()]
        parts = str(value).split(",")
        if len(parts) != 3 or not all(p.strip().isdigit() and int(p) <= 255 for p in parts):
            self.fail(f"{value!r} is not R,G,B with values 0..255 (or white, black)", param, ctx)
        return int(parts[0]), int(parts[1]), int(parts[2])


class Delimiter(click.ParamType):
    """A CSV separator: one character, or `tab`."""

    name = "separator"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = "\t" if str(value).lower() in ("tab", "\\t") else str(value)
        if len(text) != 1 or text in '"\r\n' or text.isalnum():
            self.fail(f"{value!r} is not a separator like , ; tab or |", param, ctx)
        return text


class ColumnNames(click.ParamType):
    """`a,b,c`: column names (a repeated option adds to them)."""

    name = "NAMES"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        names = tuple(n.strip() for n in str(value).split(","))
        if not all(names):
            self.fail(f"{value!r}: an empty column name (write a,b,c)", param, ctx)
        return names


class ExtensionMap(click.ParamType):
    """`EXT=FEATURE`: a webdataset member's extension and the feature it becomes."""

    name = "EXT=FEATURE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        ext, sep, feature = str(value).partition("=")
        if not sep or not ext.strip() or not feature.strip():
            self.fail(f"{value!r} is not EXT=FEATURE (an extension and its feature's name)", param, ctx)
        return ext.strip().lower().lstrip("."), feature.strip()


class Rename(click.ParamType):
    """`OLD=NEW`: a column and the feature name it is written under."""

    name = "OLD=NEW"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        old, sep, new = str(value).partition("=")
        if not sep or not old.strip() or not new.strip():
            self.fail(f"{value!r} is not OLD=NEW (a column and its feature's name)", param, ctx)
        return old.strip(), new.strip()
