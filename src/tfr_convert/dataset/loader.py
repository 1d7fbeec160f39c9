"""`tfr_convert.load`: a dataset directory -> a `tf.data.Dataset` of decoded features.

Everything it needs is in the directory: the parse spec comes from
features.json, how raw image bytes become pixels from the manifest's
`raw_image`, the shard list and counts from dataset_info.json. The shards are
checked against the metadata (present, sizes) before TensorFlow sees them, so a
mismatch is a clear TfrConvertError, not a stack trace from inside tf.data.

This is the one module that imports TensorFlow, and only when `load` runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .. import containers
from ..errors import SourceError
from ..optional import tensorflow
from ..storage import fs
from .existing import ExistingDataset

_SLICE = re.compile(r"^(?P<split>[A-Za-z][A-Za-z0-9_]*)(\[(?P<start>-?\d+%?)?:(?P<stop>-?\d+%?)?\])?$")


@dataclass(frozen=True)
class ShardSlice:
    path: str
    skip: int
    take: int


def _bound(text: str | None, total: int, default: int) -> int:
    if text is None:
        return default
    value = round(total * int(text[:-1]) / 100) if text.endswith("%") else int(text)
    if value < 0:
        value += total
    return min(max(value, 0), total)


def plan_split(directory: str | ExistingDataset, split: str) -> tuple[list[ShardSlice], int]:
    """Shard slices (and the example count) of `split`, e.g. "train", "train[:10%]", "test[100:200]".

    Shards must be present with the sizes the manifest records.
    """
    dataset = directory if isinstance(directory, ExistingDataset) else ExistingDataset(directory)
    directory = dataset.path
    splits = dataset.splits()
    m = _SLICE.match(split.replace(" ", ""))
    if not m or m["split"] not in splits:
        raise SourceError(f"{directory}: no split {split!r} (splits: {', '.join(splits)}; slices like train[:10%])")
    lengths = splits[m["split"]]
    total = sum(lengths)
    start, stop = _bound(m["start"], total, 0), _bound(m["stop"], total, total)
    recorded = dataset.recorded_shards()
    slices, first = [], 0
    for name, length in zip(dataset.shard_names(m["split"]), lengths, strict=True):
        path = fs.join(directory, name)
        if not fs.isfile(path):
            raise SourceError(f"{path}: shard listed in dataset_info.json is missing")
        if name in recorded and fs.getsize(path) != recorded[name].get("bytes"):
            raise SourceError(
                f"{path}: {fs.getsize(path)} bytes, manifest.json says {recorded[name].get('bytes')} "
                "(the shard was changed after conversion; run tfr-inspect --verify)"
            )
        lo, hi = max(start, first), min(stop, first + length)
        if hi > lo:
            slices.append(ShardSlice(path, lo - first, hi - lo))
        first += length
    return slices, max(stop - start, 0)


def _records(tf: Any, slices: list[Any], read_shard: Any, shuffle_files: bool, seed: int | None) -> Any:
    """The split's records: its shards' slices (in a seeded shuffled order if asked), read
    side by side (interleave), in a deterministic order."""
    files = tf.data.Dataset.from_tensor_slices(
        (
            tf.constant([s.path for s in slices], tf.string),
            tf.constant([s.skip for s in slices], tf.int64),
            tf.constant([s.take for s in slices], tf.int64),
        )
    )
    if shuffle_files:
        files = files.shuffle(len(slices), seed=seed)
    return files.interleave(
        read_shard,
        cycle_length=min(len(slices), 8) or 1,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )


def _decoders(dataset: ExistingDataset):
    """(parse spec, {feature: decode fn}) from features.json and the manifest."""
    tf = tensorflow("tfr_convert.load()")

    directory = dataset.path
    if not dataset.features:
        raise SourceError(f"{directory}: not a tfr-convert dataset (no features.json)")
    raw = dataset.options.get("raw_image") or {}
    spec, decode, labels = {}, {}, []
    for name, (feature, per_object, _) in dataset.flat_features.items():
        if per_object:  # one value per object (a detection's boxes): a 1-D tensor, as long as the objects
            dtype = tf.int64 if "classLabel" in feature else tf.string if "text" in feature else None
            dtype = dtype or _dtypes(tf).get((feature.get("tensor") or {}).get("dtype"))
            if dtype is None:
                raise SourceError(f"{directory}/features.json: per-object feature {name!r} of an unknown kind")
            spec[name], fn = tf.io.FixedLenSequenceFeature([], dtype, allow_missing=True), None
        elif "classLabel" in feature:
            spec[name], fn = tf.io.FixedLenFeature([], tf.int64), None
            labels.append(name)
        elif "text" in feature:
            spec[name], fn = tf.io.FixedLenFeature([], tf.string), None
        elif "image" in feature or "video" in feature:
            spec[name], fn = _picture(tf, feature)
        elif "audio" in feature:
            spec[name], fn = _audio(tf, feature["audio"])
        elif "tensor" in feature:
            spec[name], fn = _tensor(tf, feature["tensor"], raw if name == raw.get("feature") else None)
        else:
            raise SourceError(f"{directory}/features.json: feature {name!r} of an unknown kind")
        if fn is not None:
            decode[name] = fn
    return spec, decode, labels


def _dtypes(tf: Any) -> dict[str, Any]:
    """The dtypes features.json names, as TensorFlow's."""
    return {"int64": tf.int64, "float32": tf.float32, "string": tf.string}


def _picture(tf: Any, feature: dict[str, Any]) -> tuple[Any, Any]:
    """An Image (decoded to uint8 (H, W, C)) or a Video (one encoded picture per frame:
    (frames, height, width, channels))."""
    if "image" in feature:
        shape = [int(d) for d in feature["image"].get("shape", {}).get("dimensions", [])]
        channels = shape[2] if len(shape) == 3 and shape[2] > 0 else 3
        static = [d if d > 0 else None for d in shape] if shape else [None, None, channels]

        def image(x, channels=channels, static=static):
            pixels = tf.io.decode_image(x, channels=channels, expand_animations=False)
            pixels.set_shape(static)
            return pixels

        return tf.io.FixedLenFeature([], tf.string), image
    dims = [int(d) for d in feature["video"].get("shape", {}).get("dimensions", [])] or [-1, -1, -1, 3]

    def video(x, dims=dims):
        frames = tf.map_fn(
            lambda f: tf.io.decode_image(f, channels=dims[3], expand_animations=False),
            tf.sparse.to_dense(x),
            fn_output_signature=tf.TensorSpec([None, None, dims[3]], tf.uint8),
        )
        frames.set_shape([d if d > 0 else None for d in dims])
        return frames

    return tf.io.VarLenFeature(tf.string), video


def _audio(tf: Any, audio: dict[str, Any]) -> tuple[Any, Any]:
    """A recording: a file's bytes (decoded by the reader), one bytes value of samples, or
    samples of the file's type stored as an int64 or float list."""
    if audio.get("lazyDecode"):
        return tf.io.FixedLenFeature([], tf.string), None
    dims = [int(d) for d in audio.get("shape", {}).get("dimensions", [])] or [-1]
    dtype = tf.dtypes.as_dtype(audio.get("dtype", "int16"))
    if str(audio.get("encoding", "")).upper() == "BYTES":
        return tf.io.FixedLenFeature([], tf.string), lambda x: tf.reshape(tf.io.decode_raw(x, dtype), [-1, *dims[1:]])
    return (
        tf.io.VarLenFeature(tf.float32 if dtype.is_floating else tf.int64),
        lambda x: tf.reshape(tf.cast(tf.sparse.to_dense(x), dtype), [-1, *dims[1:]]),
    )


def _tensor(tf: Any, tensor: dict[str, Any], raw: dict[str, Any] | None) -> tuple[Any, Any]:
    """A tensor: raw pixels in one bytes value, or values of its dtype (a first dimension
    of unknown length, -1: as many as each record holds). `raw`: the manifest's note of a
    raw image written before raw images were described as such."""
    if tensor.get("encoding") == "bytes":
        shape = [int(d) for d in tensor["shape"]["dimensions"]]
        dtype = tf.dtypes.as_dtype(tensor["dtype"])
        return tf.io.FixedLenFeature([], tf.string), lambda x: tf.reshape(tf.io.decode_raw(x, dtype), shape)
    dims = [int(d) for d in (tensor.get("shape") or {}).get("dimensions", [])]
    dtype = _dtypes(tf)[tensor["dtype"]]
    unknown = bool(dims) and dims[0] < 0
    spec = (
        tf.io.FixedLenSequenceFeature(dims[1:], dtype, allow_missing=True)
        if unknown
        else tf.io.FixedLenFeature(dims, dtype)
    )
    if raw is None:
        return spec, None
    shape = [int(d) for d in raw["shape"]]
    return spec, lambda x: tf.reshape(tf.io.decode_raw(x, tf.uint8), shape)


def load(
    directory: str,
    split: str = "train",
    *,
    as_supervised: bool = False,
    batch_size: int | None = None,
    shuffle_files: bool = False,
    shuffle_buffer: int | None = None,
    seed: int | None = None,
    label: str | None = None,
    drop_remainder: bool = False,
):
    """A `tf.data.Dataset` of one split of a tfr-convert (or TFDS-layout) directory.

    Examples are dicts of decoded features: raw image bytes become uint8 tensors
    of their stored shape, PNG/JPEG images uint8 (H, W, C) with the stored
    channel count, class labels int64. With `as_supervised`, (image, label)
    pairs; the label is the ClassLabel feature, or `label=` names one.
    Shards are read in parallel (interleave) and prefetched; `shuffle_files`
    shuffles shard order, `shuffle_buffer` examples (both seeded by `seed`).
    """
    tf = tensorflow("tfr_convert.load()")

    dataset_dir = ExistingDataset(directory)  # its metadata is read once, for all of the below
    slices, _ = plan_split(dataset_dir, split)
    spec, decoders, labels = _decoders(dataset_dir)
    container = containers.get(dataset_dir.file_format)
    read_shard = container.tf_shards(dataset_dir.options.get("compression", "none"), fs.is_remote(directory))
    if as_supervised:
        image_name = next(iter(decoders), None)
        label_name = label or (labels[0] if len(labels) == 1 else None)
        if image_name is None or label_name is None or label_name not in spec:
            raise SourceError(
                f"{directory}: as_supervised needs one image feature and one label "
                f"(class labels here: {labels or 'none'}; name one with label=...)"
            )

    dataset = _records(tf, slices, read_shard, shuffle_files, seed)

    def parse(record):
        example = tf.io.parse_single_example(record, spec)
        for name, fn in decoders.items():
            example[name] = fn(example[name])
        if as_supervised:
            return example[image_name], example[label_name]
        return example

    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shuffle_buffer:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed)
    if batch_size and any(per_object for _, per_object, _ in dataset_dir.flat_features.values()):
        # objects per example differ (and so may image sizes): such a batch is ragged
        dataset = dataset.ragged_batch(batch_size, drop_remainder=drop_remainder)
    elif batch_size:
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return dataset.prefetch(tf.data.AUTOTUNE)
