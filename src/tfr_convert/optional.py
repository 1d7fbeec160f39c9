"""Optional dependencies: imported where used, or one line saying which extra installs them.

Conversion and inspection need none of them. TensorFlow is the `tf` extra, which
`tfr_convert.load()` uses; remote paths need their fsspec backend (stores.py says which).
"""

from __future__ import annotations

import functools
import json
import os
from types import ModuleType

from .errors import MissingExtra


def extra_hint(extra: str) -> str:
    """The command that adds `extra` to this very install: from the checkout or the wheel
    it was installed from (pip records where, PEP 610's direct_url.json), else by name
    from a package index."""
    source, editable = _installed_from()
    return f"pip install {'-e ' if editable else ''}'{source or 'tfr-convert'}[{extra}]'"


@functools.cache
def _installed_from() -> tuple[str | None, bool]:
    """(the local folder or wheel this package was installed from, or None; editable?)"""
    try:
        from importlib.metadata import distribution

        text = distribution("tfr-convert").read_text("direct_url.json")
        direct_url = json.loads(text) if text else {}
    except Exception:  # no metadata at all (run from a source tree): the name is the best hint
        return None, False
    url = direct_url.get("url", "") if isinstance(direct_url, dict) else ""
    if not url.startswith("file://"):
        return None, False
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(url).path), bool((direct_url.get("dir_info") or {}).get("editable"))


def tensorflow(what: str) -> ModuleType:
    """The tensorflow module; `what` (e.g. "tfr_convert.load()") names what needs it."""
    try:
        import tensorflow as tf
    except ImportError:
        raise MissingExtra(f"{what} needs TensorFlow: {extra_hint('tf')}") from None
    return tf


def pyarrow(what: str) -> ModuleType:
    """The pyarrow module (with pyarrow.parquet loaded); `what` names what needs it."""
    if _PYARROW:  # asked for once per column and batch: the environment is set once
        return _PYARROW[0]
    # Arrow's allocator (mimalloc) otherwise holds on to the pages of the columns a large
    # table's planning reads and lets go (a hundred MB and more at ten million rows);
    # with no delay it gives them back when freed. Read once, when it first allocates:
    # a caller's own setting, or a pyarrow imported earlier, is left as it is.
    os.environ.setdefault("MIMALLOC_PURGE_DELAY", "0")
    try:
        import pyarrow
        import pyarrow.parquet  # a submodule: loaded here, so that its absence is told here too
    except ImportError:
        raise MissingExtra(f"{what} needs pyarrow: {extra_hint('parquet')}") from None
    _PYARROW.append(pyarrow)
    return pyarrow


_PYARROW: list[ModuleType] = []


def av(what: str) -> ModuleType:
    """PyAV (FFmpeg, in its wheels); `what` names what needs it."""
    try:
        import av
    except ImportError:
        raise MissingExtra(f"{what} needs PyAV: {extra_hint('video')}") from None
    return av


def soundfile(what: str) -> ModuleType:
    """The soundfile module (libsndfile, in its wheels); `what` names what needs it."""
    try:
        import soundfile
    except (ImportError, OSError):  # OSError: the module is there, its libsndfile is not
        raise MissingExtra(f"{what} needs soundfile: {extra_hint('audio')}") from None
    return soundfile
