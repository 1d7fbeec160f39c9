"""Object stores and other remote filesystems, through fsspec.

A path with a scheme (`s3://`, `gs://`, `az://`, `hdfs://`, `memory://`...) is
served by the fsspec implementation registered for that scheme (s3fs, gcsfs,
adlfs, pyarrow's HDFS...). Each backend keeps its own conventions for
credentials and endpoints (`AWS_ENDPOINT_URL`, `AWS_PROFILE`,
`STORAGE_EMULATOR_HOST`, `AZURE_STORAGE_CONNECTION_STRING`...); what they do not
cover is given as storage options (`--storage-options JSON`), which travel to
worker processes in the environment variable `TFR_CONVERT_STORAGE_OPTIONS`.

This module resolves a path to (filesystem, key), turns a backend's own
exceptions into OSError (so one `except OSError` serves local and remote
paths), and knows which conditional writes a store offers (the output lock).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
from collections.abc import Iterator
from typing import Any

from ..errors import MissingExtra, OptionError
from ..optional import extra_hint

OPTIONS_ENV = "TFR_CONVERT_STORAGE_OPTIONS"

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")

# The extra that installs each scheme's fsspec backend.
EXTRAS = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "adl": "azure",
}

# Modules whose exceptions are a store's I/O failures (a refused connection, missing
# credentials, a throttled request), reported like any OSError.
_BACKEND_MODULES = (
    "botocore",
    "aiobotocore",
    "aiohttp",
    "s3fs",
    "gcsfs",
    "google",
    "adlfs",
    "azure",
    "fsspec",
    "requests",
    "urllib3",
    "pyarrow",
)


def scheme(path: str) -> str | None:
    m = _SCHEME.match(str(path))
    return m[1].lower() if m else None


def install_hint(path: str) -> str:
    """What to install for a path's scheme."""
    name = scheme(path) or ""
    if name in EXTRAS:
        return extra_hint(EXTRAS[name])
    if name == "hdfs":
        return "pip install fsspec pyarrow"
    return f"pip install fsspec and the fsspec backend for {name}://"


def configure(options: dict[str, Any] | None) -> None:
    """Storage options for every remote path of this process and of the processes it
    starts: {option: value} for every scheme, or {scheme: {option: value}} for one."""
    if options is None:
        os.environ.pop(OPTIONS_ENV, None)
    else:
        os.environ[OPTIONS_ENV] = json.dumps(options)


def parse_options(text: str) -> dict[str, Any]:
    """`--storage-options` / TFR_CONVERT_STORAGE_OPTIONS: a JSON object; ValueError if not."""
    try:
        options = json.loads(text)
    except ValueError as e:
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(options, dict):
        raise ValueError('must be a JSON object, e.g. \'{"s3": {"endpoint_url": "http://host:9000"}}\'')
    return options


def options_for(protocol: str) -> dict[str, Any]:
    text = os.environ.get(OPTIONS_ENV)
    options: dict[str, Any] = {}
    if text:
        try:
            given = parse_options(text)
        except ValueError as e:
            raise OptionError(f"{OPTIONS_ENV}: {e}") from None
        options = {k: v for k, v in given.items() if not isinstance(v, dict) or k not in _PROTOCOL_KEYS}
        options.update(given.get(protocol) if isinstance(given.get(protocol), dict) else {})
    if protocol in ("gs", "gcs") and os.environ.get("STORAGE_EMULATOR_HOST") and "token" not in options:
        # An emulator takes no credentials (Google's own clients go anonymous for it); without
        # this, gcsfs would look for credentials on a metadata server that is not there.
        options["token"] = "anon"
    return options


_PROTOCOL_KEYS = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "hdfs", "http", "https", "memory", "file"}


def filesystem(path: str) -> tuple[Any, str]:
    """(the fsspec filesystem of a remote path, the path as that filesystem names it)."""
    protocol = scheme(path) or "file"
    if protocol in ("gs", "gcs") and os.environ.get("STORAGE_EMULATOR_HOST"):
        # gcsfs's experimental zonal-bucket layer speaks gRPC to the storage endpoint, which
        # an emulator does not serve (every call then retries until it times out)
        os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    try:
        import fsspec
    except ImportError:
        raise MissingExtra(f"a remote path ({protocol}://) needs fsspec: {install_hint(path)}") from None
    options = options_for(protocol)
    options.setdefault("use_listings_cache", False)  # this process writes, then lists what it wrote
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except ImportError:
        raise MissingExtra(f"a remote path ({protocol}://) needs its fsspec backend: {install_hint(path)}") from None
    except ValueError:
        raise OptionError(f"{path}: no filesystem is known for {protocol}:// (fsspec has none of that name)") from None
    with translated(path):
        fs = cls(**options)
    return fs, cls._strip_protocol(path)


def is_backend_error(e: BaseException) -> bool:
    """Whether an exception (or a class it derives from) comes from a storage backend."""
    return any(c.__module__.startswith(_BACKEND_MODULES) for c in type(e).__mro__[:-2])


@contextlib.contextmanager
def translated(path: str) -> Iterator[None]:
    """A backend's exceptions as OSError naming `path` (a FileNotFoundError stays one)."""
    try:
        yield
    except Exception as e:
        if isinstance(e, OSError):
            e.filename = e.filename or path
            raise
        if not is_backend_error(e):
            raise
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise OSError(errno.EIO, f"{type(e).__name__}: {text}", path) from None


def precondition_failed(e: OSError) -> bool:
    """Whether a conditional write was refused because the object exists or changed
    (s3fs reports HTTP 412 as EINVAL with S3's message; gcsfs as FileExistsError)."""
    return isinstance(e, FileExistsError) or "pre-condition" in str(e).lower() or "precondition" in str(e).lower()


def create_exclusive(path: str, data: bytes) -> bool:
    """Write an object only if none is there (an atomic conditional write on S3 and GCS);
    False if one is."""
    fs, key = filesystem(path)
    try:
        with translated(path):
            fs.pipe_file(key, data, mode="create")
    except OSError as e:
        if precondition_failed(e):
            return False
        raise
    return True


def replace_if_unchanged(path: str, data: bytes, etag: str | None) -> bool | None:
    """Overwrite an object only if it is still the version `etag` names (S3's If-Match):
    True done, False it changed; None where the store offers no such write."""
    fs, key = filesystem(path)
    if etag is None or type(fs).__module__.split(".")[0] != "s3fs":
        return None
    try:
        with translated(path):
            fs.pipe_file(key, data, IfMatch=etag)
    except OSError as e:
        if precondition_failed(e):
            return False
        raise
    return True


def version_of(info: dict[str, Any]) -> str | None:
    """An object's version tag from its listing (S3's ETag, GCS's generation)."""
    value = info.get("ETag") or info.get("generation") or info.get("etag")
    return str(value) if value is not None else None


def modified_of(info: dict[str, Any]) -> float | None:
    """An object's last-modified time (seconds since the epoch, the store's clock), if known."""
    import datetime

    for key in ("LastModified", "mtime", "updated", "last_modified", "created"):
        value = info.get(key)
        if isinstance(value, datetime.datetime):
            return value.timestamp()
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None
