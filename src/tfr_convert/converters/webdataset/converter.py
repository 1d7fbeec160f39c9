"""`tfr-convert webdataset`: samples of webdataset tar shards, an Example each.

A sample's members become features by their extension: a picture (jpg, jpeg, png, webp,
gif, bmp, tiff) becomes `image` as `tfr-convert images` stores pictures (kept as they are
by default, with `format`, `height`, `width`, `channels`, and `filename` = KEY.EXT); `cls`
the class label `label` (its integer text is the id; names from --classes, else the ids
themselves); `json` its fields, flattened ('/' joins nested keys; the fields the picture
states already left out); `npy` a tensor of its values (integers int64, floats float32);
any other extension a bytes feature of that name. `--map EXT=FEATURE` names a member's
feature (EXT=label makes it the class label, names from --classes or its values, sorted).
Splits come from the shards' names (train-*.tar, val-*.tar...), else --split by ratio.
"""

from __future__ import annotations

import io
import json
import marshal
import os
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...dataset.features import FeatureSpec
from ...dataset.splits import SPLIT_FOLDERS, SplitSpec, split_by_ratio
from ...errors import OptionError, SourceError
from ...pictures.imaging import DecodePolicy
from ...pictures.stored_image import stored
from ...storage import fs
from ..base import Converter, Options, SourceContext
from ..listing.folders import dataset_name
from .tars import GZIPPED, Sample, gunzipped, samples

PICTURES = ("jpg", "jpeg", "png", "webp", "gif", "bmp", "tiff", "tif")
#: what a picture states of itself: json fields of these names are left to it
PICTURE_FEATURES = ("format", "height", "width", "channels", "filename")
LABEL = "label"


@dataclass(frozen=True)
class WebdatasetOptions(Options):
    classes_file: str | None = None
    maps: tuple[tuple[str, str], ...] = ()
    split: SplitSpec | None = None
    image_format: str = "keep"
    policy: DecodePolicy = field(default_factory=DecodePolicy)
    #: the .json's fields that become features: ("*",) every one, () none (the .json is one
    #: bytes feature, `json`), else these (flattened names: caption, meta/score)
    json_fields: tuple[str, ...] = ("*",)

    def problem(self) -> str | None:
        if self.image_format not in ("keep", "png", "jpeg"):
            return f"--image-format {self.image_format}: choose keep, png or jpeg"
        exts = [ext for ext, _ in self.maps]
        if len(set(exts)) != len(exts):
            return "--map names an extension twice"
        return None


def _split_of(shard: str) -> str | None:
    """The split a shard's name says (train-000.tar, val_3.tar...), or None."""
    head = fs.basename(shard).split(".", 1)[0].replace("_", "-").split("-", 1)[0].lower()
    return SPLIT_FOLDERS.get(head)


class WebdatasetConverter(Converter):
    command = "webdataset"
    description = "Samples of webdataset tar shards, a feature per member."
    chunk_size = 16

    def __init__(self, shards: list[str], options: WebdatasetOptions, context: SourceContext | None = None) -> None:
        self.options = options = self.begin(options, context)
        self.shards = shards
        self.dataset_name = dataset_name(fs.dirname(shards[0])) if shards else None  # the shards' folder's
        self.maps = dict(options.maps)
        self._fds: dict[str, int] = {}
        self._fds_pid = 0
        self._inflated = self._spooled(shards)  # a gzipped shard -> the local file it is read from
        listed = self._listed(shards)
        if not listed:  # (a shard cut short before its first sample says so)
            raise SourceError(
                f"{self.warnings[0]}; no sample is left"
                if self.warnings
                else f"{', '.join(shards[:3])}: no samples in the shards"
            )
        self.picture = self._picture_ext(listed)
        # the class label's member: the one --map names label, else cls (unless --map names another feature for it)
        self.label_ext = next((e for e, f in self.maps.items() if f == LABEL), None) or self._class_member(listed)
        self.labels: dict[str, list[str]] = {}
        self._ids = self._label_ids(listed)
        self.features = self._declare(listed)
        self._splits = self._split(listed)

    # ------------------------------------------------------------ listing

    def _spooled(self, shards: list[str]) -> dict[str, str]:
        """Where each gzipped shard is inflated to: a local file of this run's (removed when
        the converter is let go of, by the process that made it)."""
        gzipped = [s for s in shards if s.endswith(GZIPPED)]
        if not gzipped:
            return {}
        import tempfile
        import weakref

        spool = tempfile.mkdtemp(prefix="tfr-convert-gunzip-")
        weakref.finalize(self, _remove_spool, spool, os.getpid())
        return {s: os.path.join(spool, f"{n}.tar") for n, s in enumerate(gzipped)}

    def _listed(self, shards: list[str]) -> list[Sample]:
        """Every shard's samples, in order (gzipped ones inflated first); local shards listed
        in parts on forked processes where the engine lends them, their warnings in order."""

        def list_some(lo: int, hi: int) -> tuple[list[Sample], list[str]]:
            found: list[Sample] = []
            warnings: list[str] = []
            for shard in shards[lo:hi]:
                read = gunzipped(shard, self._inflated[shard], warnings) if shard in self._inflated else shard
                found += samples(read, warnings, shard)
            return found, warnings

        fill = self.context.fill_in_parts
        parts = None
        if fill is not None and len(shards) > 1 and not any(fs.is_remote(s) for s in shards):
            parts = fill(lambda lo, hi: marshal.dumps(list_some(lo, hi)), len(shards))
        if parts is None:
            listed, warnings = list_some(0, len(shards))
        else:
            listed, warnings = [], []
            for data in parts:
                found, said = marshal.loads(data)  # this process's own children's bytes
                listed += found
                warnings += said
        self.warnings += warnings
        return listed

    def _picture_ext(self, listed: list[Sample]) -> str | None:
        exts = {m[0] for s in listed for m in s[2] if m[0] in PICTURES and m[0] not in self.maps}
        for s in listed:
            found = [m[0] for m in s[2] if m[0] in exts]
            if len(found) > 1:
                raise SourceError(f"{s[0]}: sample {s[1]!r} has two pictures ({', '.join(found)})")
        return "picture" if exts else None

    def _class_member(self, listed: list[Sample]) -> str | None:
        """The member that is the class label unless --map names one: .cls, else .cls2
        (webdataset's two integer-label extensions), where samples have it and --map does
        not name another feature for it."""
        present = {m[0] for s in listed for m in s[2]}
        return next((e for e in ("cls", "cls2") if e in present and e not in self.maps), None)

    def _label_ids(self, listed: list[Sample]) -> dict[tuple[str, str], int]:
        """Each labelled sample's class id; the class names (self.labels)."""
        texts = {}
        for s in listed:
            member = next((m for m in s[2] if m[0] == self.label_ext), None)
            if member is not None:
                data = self._read(s[0], member)[:1024]
                texts[(s[0], s[1])] = data.decode("utf-8", "replace").strip()
        if not texts:
            return {}
        names = None
        if self.options.classes_file:
            names = fs.read_bytes(self.options.classes_file).decode("utf-8").splitlines()
        if self.label_ext in ("cls", "cls2") and all(t.isdigit() for t in texts.values()):
            ids = {k: int(t) for k, t in texts.items()}
            names = names or [str(i) for i in range(max(ids.values()) + 1)]
            for (shard, key), i in ids.items():
                if i >= len(names):
                    raise SourceError(f"{shard}: sample {key!r}: class {i}, but --classes names {len(names)}")
        else:
            names = names or sorted(set(texts.values()))
            index = {n: i for i, n in enumerate(names)}
            ids = {}
            for (shard, key), text in texts.items():
                if text not in index:
                    raise SourceError(f"{shard}: sample {key!r}: class {text!r} is not one --classes names")
                ids[(shard, key)] = index[text]
        self.labels = {LABEL: names}
        return ids

    def _declare(self, listed: list[Sample]) -> dict[str, FeatureSpec]:
        """The features, typed from the first sample holding each member; those some
        samples lack in `optional_features`."""
        held = Counter(self._name(m[0]) for s in listed for m in s[2])
        features: dict[str, FeatureSpec] = {"filename": FeatureSpec.tensor("string")}
        optional: set[str] = set()
        if self.picture is not None:
            of_picture = {
                "image": FeatureSpec.image((None, None, 3), None),
                "format": FeatureSpec.tensor("string"),
                "height": FeatureSpec.tensor("int64"),
                "width": FeatureSpec.tensor("int64"),
                "channels": FeatureSpec.tensor("int64"),
            }
            features |= of_picture
            optional |= set(of_picture) if held["picture"] < len(listed) else set()
        if self._ids:
            features[LABEL] = FeatureSpec.class_label(len(self.labels[LABEL]))
            optional |= {LABEL} if len(self._ids) < len(listed) else set()
        for name in sorted(held):
            if name in ("picture", LABEL):
                continue
            first = next(s for s in listed if any(self._name(m[0]) == name for m in s[2]))
            if self._json_flattened(name):
                fields = self._json(first)
                chosen = self.options.json_fields
                if chosen != ("*",):
                    missing = [f for f in chosen if f not in fields]
                    if missing:
                        raise OptionError(
                            f"--json-fields {missing[0]}: the first sample's .json ({first[0]}: sample "
                            f"{first[1]!r}) has no such field; it has {', '.join(sorted(fields)) or 'none'}"
                        )
                    fields = {k: v for k, v in fields.items() if k in chosen}
                features |= {k: _spec(v) for k, v in fields.items() if k not in features}
                optional |= set(fields)  # a field of one sample's json may be missing in another's
                continue
            member = next(m for m in first[2] if self._name(m[0]) == name)
            if member[0] == "npy":
                values = _npy(self._read(first[0], member))
                features[name] = FeatureSpec.tensor("int64" if values.dtype.kind == "i" else "float32", (None,))
            else:
                features[name] = FeatureSpec.tensor("string")
            optional |= {name} if held[name] < len(listed) else set()
        self.optional_features = frozenset(optional)
        return features

    def _json_flattened(self, name: str) -> bool:
        """Whether the member of this feature name is the .json whose fields become features."""
        return name == "json" and "json" not in self.maps.values() and self.options.json_fields != ()

    def _name(self, ext: str) -> str:
        if ext in self.maps:
            return self.maps[ext]
        if ext in PICTURES:
            return "picture"
        if ext == self.label_ext:
            return LABEL
        return ext

    def _split(self, listed: list[Sample]) -> dict[str, list[Sample]]:
        named = {s: _split_of(s) for s in self.shards}
        if all(named.values()):
            out: dict[str, list[Sample]] = {}
            for s in listed:
                out.setdefault(named[s[0]], []).append(s)  # type: ignore[arg-type]
            return out
        if self.options.split is None:
            return {"train": listed}
        splits, said = split_by_ratio(
            listed, self.key, self.options.split, self.context.seed, per_item=self.context.per_item_splits
        )
        self.warnings += [said] if said else []
        return splits

    # ------------------------------------------------------------ converter interface

    def source_splits(self) -> dict[str, list[Hashable]]:
        splits, self._splits = self._splits, {}
        return splits  # type: ignore[return-value]

    def key(self, item: Hashable) -> str:
        sample: Sample = item  # type: ignore[assignment]
        ext = next((m[0] for m in sample[2] if self._name(m[0]) == "picture"), None)
        return f"{sample[1]}.{ext}" if ext else sample[1]

    def describe(self, item: Hashable) -> str:
        sample: Sample = item  # type: ignore[assignment]
        return f"{sample[0]}: sample {sample[1]!r}"

    def label_of(self, item: Hashable) -> Hashable | None:
        sample: Sample = item  # type: ignore[assignment]
        return self._ids.get((sample[0], sample[1]))

    def features_of(self, item: Hashable) -> dict[str, Any]:
        sample: Sample = item  # type: ignore[assignment]
        name_of = self.key(sample)
        features: dict[str, Any] = {"filename": name_of}
        for member in sample[2]:
            name = self._name(member[0])
            if name == LABEL:
                features[LABEL] = self._ids[(sample[0], sample[1])]
                continue
            data = self._read(sample[0], member)
            if name == "picture":
                o = self.options
                picture = stored(data, name_of, o.image_format, o.policy)
                features |= {
                    "image": picture.data,
                    "format": picture.format,
                    "height": picture.height,
                    "width": picture.width,
                    "channels": picture.channels,
                }
            elif self._json_flattened(name):
                features |= {k: v for k, v in _flat(_loaded(data)).items() if k in self.features}
            elif member[0] == "npy":
                features[name] = _npy(data)
            else:
                features[name] = data
        return features

    def observe(self, features: dict[str, Any]) -> Hashable:
        return features.get("format")

    def finish(self, observations: Counter[Hashable]) -> list[str]:
        formats = {f for f in observations if f is not None}
        if self.picture is not None and len(formats) == 1:
            self.features["image"] = FeatureSpec.image((None, None, 3), formats.pop())
        return []

    def input_roots(self) -> list[str]:
        return []

    def item_sizes(self, items: Sequence[Hashable]) -> list[int]:
        return [sum(member[2] for member in sample[2]) for sample in items]  # type: ignore[index]

    def sources(self) -> list[dict[str, Any]]:
        return [{"file": fs.basename(s), "bytes": fs.getsize(s)} for s in self.shards]

    def recorded_options(self) -> dict[str, Any]:
        o = self.options
        return {
            "maps": dict(o.maps),
            "split": o.split.describe() if o.split else None,
            "image_format": o.image_format,
            "json_fields": list(o.json_fields),
        }

    def _read(self, shard: str, member: Any) -> bytes:
        """A member's bytes: read with the listing where it is small, else by offset (a
        local shard through one descriptor per process)."""
        if len(member) > 3 and member[3] is not None:
            return member[3].encode("latin-1")
        shard = self._inflated.get(shard, shard)
        if fs.is_remote(shard):
            return fs.read_range(shard, member[1], member[2])
        if self._fds_pid != os.getpid():  # descriptors are per process (workers fork)
            self._fds, self._fds_pid = {}, os.getpid()
        fd = self._fds.get(shard)
        if fd is None:
            fd = self._fds[shard] = os.open(shard, os.O_RDONLY)
        data = os.pread(fd, member[2], member[1])
        if len(data) != member[2]:
            raise SourceError(
                f"{shard}: ends before its member of {member[2]} bytes at byte {member[1]} (changed since listed)"
            )
        return data

    def __getstate__(self) -> dict[str, Any]:  # open descriptors stay in their process
        return {**self.__dict__, "_fds": {}, "_fds_pid": 0}

    def _json(self, sample: Sample) -> dict[str, Any]:
        member = next(m for m in sample[2] if m[0] == "json")
        flat = _flat(_loaded(self._read(sample[0], member)))
        return {k: v for k, v in flat.items() if not (self.picture and k in PICTURE_FEATURES)}


def _remove_spool(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # not in a forked worker, whose copy of this finalizer also runs
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def _loaded(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise SourceError(f"its .json is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise SourceError("its .json is not an object of fields")
    return value


def _flat(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects as '/'-joined names; {"base64": ...} as its bytes; values as the
    serializer takes them (bool as int)."""
    import base64

    out: dict[str, Any] = {}
    for k, v in value.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and set(v) == {"base64"} and isinstance(v["base64"], str):
            out[name] = base64.b64decode(v["base64"])
        elif isinstance(v, dict):
            out |= _flat(v, f"{name}/")
        elif isinstance(v, bool):
            out[name] = int(v)
        elif v is None:
            continue
        else:
            out[name] = v
    return out


def _spec(value: Any) -> FeatureSpec:
    """A json field's feature, from its first value: a value, or a list of them."""
    first = value[0] if isinstance(value, list) and value else value
    dtype = "int64" if isinstance(first, int) else "float32" if isinstance(first, float) else "string"
    return FeatureSpec.tensor(dtype, (None,) if isinstance(value, list) else ())


def _npy(data: bytes) -> Any:
    import numpy as np

    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError) as e:
        raise SourceError(f"its .npy is not an array numpy reads: {e}") from None
    return array.reshape(-1).astype(np.int64 if array.dtype.kind in "iub" else np.float32)
