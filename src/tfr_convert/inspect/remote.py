"""Remote tfr-inspect inputs (gs://, s3://, hdfs://, ram://...): copied to a local
temporary folder through the file layer tfr-convert uses for remote sources
(`fs.stage`, tf.io.gfile), read there like any local file, and named by their
remote paths again in the report."""

from __future__ import annotations

from typing import Any

from .. import fs
from ..errors import SourceError


def localize(paths: list[str]) -> tuple[list[str], dict[str, str]]:
    """(the paths to read, local ones as given; {local copy: remote path it stands for})."""
    local, names = [], {}
    for path in paths:
        if not fs.is_remote(path):
            local.append(path)
            continue
        matches = [path] if fs.exists(path) else sorted(fs.glob(path))
        if not matches:
            raise SourceError(f"{path}: no such file, directory or glob match")
        for match in matches:
            copy = fs.stage(match)
            names[copy] = match.rstrip("/")
            local.append(copy)
    return local, names


def renamed(value: Any, names: dict[str, str]) -> Any:
    """A report (JSON-like) or its text with each local copy's path put back as its remote one."""
    if isinstance(value, str):
        for copy, remote in names.items():
            value = value.replace(copy, remote)
        return value
    if isinstance(value, dict):
        return {k: renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v, names) for v in value]
    return value
