"""How each feature should look to readers: the converters declare, metadata describes."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

TFDS_FEATURES = "tensorflow_datasets.core.features."
LABELS_SUFFIX = ".labels.txt"


def labels_filename(feature: str, parents: tuple[str, ...] = ()) -> str:
    """The file holding a ClassLabel feature's names, named as TFDS names it: a '/' in
    the feature name becomes '.', and the names of the FeaturesDicts it is nested in
    come first, joined by '-' (`image-object-class-label.labels.txt`)."""
    return "-".join([*parents, feature.replace("/", ".")]) + LABELS_SUFFIX


def labels_file_of(name: str, nested: bool) -> str:
    """labels_filename of a feature by its serialized key; `nested`: its '/'s separate
    levels of FeaturesDicts (see metadata.features_json)."""
    if not nested:
        return labels_filename(name)
    *parents, leaf = name.split("/")
    return labels_filename(leaf, tuple(parents))


@dataclass(frozen=True)
class FeatureSpec:
    """One feature as the reader should see it.

    kind: "tensor" (dtype int64 / float32 / string, fixed shape), "image"
    (encoded PNG/JPEG bytes with a shape), "raw_image" (uint8 pixels stored as one
    bytes value, of one fixed shape), "class_label" (int64 with names), "audio"
    (TFDS's Audio: samples of `dtype`, or with `encoding` a file of that format's bytes)
    or "video" (TFDS's Video: a bytes value per frame, each a picture of `encoding`).
    per_object: one value per object of the example (a detection's boxes), which
    TFDS sees as a Sequence.
    """

    kind: str
    dtype: str = "int64"
    shape: tuple[int | None, ...] = ()
    encoding: str | None = None
    num_classes: int | None = None
    per_object: bool = False
    #: kind "described": a feature as another dataset's features.json describes it (JSON,
    #: kept as text so that the spec stays hashable), written back as it was
    described: str | None = None
    sample_rate: int | None = None  # an audio feature's
    lazy: bool = False  # an audio feature holding each file's bytes (TFDS decodes them when read)

    @classmethod
    def from_tfds(cls, description: dict[str, Any]) -> FeatureSpec:
        """A feature of a features.json (a top-level entry, nested or not), kept as it is."""
        return cls("described", described=json.dumps(description, sort_keys=True))

    def of_absent(self) -> FeatureSpec:
        """The same feature where an Example may lack it: an image becomes a Sequence of
        0 or 1 images (TFDS reads a missing one as an empty sequence)."""
        return dataclasses.replace(self, per_object=True)

    def of_objects(self) -> FeatureSpec:
        """The same feature, one value per object."""
        return dataclasses.replace(self, per_object=True)

    @classmethod
    def tensor(cls, dtype: str, shape: tuple[int | None, ...] = ()) -> FeatureSpec:
        return cls("tensor", dtype, shape)

    @classmethod
    def image(cls, shape: tuple[int | None, ...], encoding: str) -> FeatureSpec:
        return cls("image", "uint8", shape, encoding)

    @classmethod
    def text(cls) -> FeatureSpec:
        """A UTF-8 string, as TFDS's Text feature (an `id`, say)."""
        return cls("text", "string")

    @classmethod
    def audio(
        cls,
        dtype: str,
        channels: int | None,
        sample_rate: int | None,
        file_format: str | None,
        encoded: bool,
        raw_bytes: bool = False,
    ) -> FeatureSpec:
        """Samples of `dtype` ((None,) one channel, (None, channels) more), as a list or,
        `raw_bytes`, as one bytes value; or `encoded`: each a file's bytes (of
        `file_format`, where all share one), decoded by the reader."""
        shape = (None,) if channels == 1 else (None, channels)
        encoding = "bytes" if raw_bytes else file_format
        return cls("audio", dtype, shape, encoding, sample_rate=sample_rate, lazy=encoded)

    @classmethod
    def video(cls, shape: tuple[int | None, ...], encoding: str) -> FeatureSpec:
        """TFDS's Video: (frames, height, width, channels), one encoded picture per frame."""
        return cls("video", "uint8", shape, encoding)

    @classmethod
    def raw_image(cls, shape: tuple[int | None, ...]) -> FeatureSpec:
        return cls("raw_image", "uint8", shape)

    @property
    def is_image(self) -> bool:
        return self.kind in ("image", "raw_image") or self._tfds_class().endswith("image_feature.Image")

    @property
    def is_class_label(self) -> bool:
        return self.kind == "class_label" or self._tfds_class().endswith("class_label_feature.ClassLabel")

    def _tfds_class(self) -> str:
        return str(json.loads(self.described).get("pythonClassName", "")) if self.described else ""

    @classmethod
    def class_label(cls, num_classes: int) -> FeatureSpec:
        return cls("class_label", "int64", (), None, num_classes)

    def to_tfds(self) -> dict[str, Any]:
        if self.described is not None:
            return json.loads(self.described)
        dims = {"dimensions": [str(-1 if d is None else d) for d in self.shape]} if self.shape else {}
        if self.kind == "class_label":
            return {
                "pythonClassName": TFDS_FEATURES + "class_label_feature.ClassLabel",
                "classLabel": {"numClasses": str(self.num_classes)},
            }
        if self.kind == "audio":
            raw_bytes = self.encoding == "bytes" and not self.lazy
            audio: dict[str, Any] = {"shape": dims, "dtype": self.dtype, "encoding": "BYTES" if raw_bytes else "NONE"}
            if self.sample_rate is not None:
                audio["sampleRate"] = str(self.sample_rate)
            if self.lazy:
                audio |= {"lazyDecode": True, **({"fileFormat": self.encoding} if self.encoding else {})}
            return {"pythonClassName": TFDS_FEATURES + "audio_feature.Audio", "audio": audio}
        if self.kind == "video":
            video = {"shape": dims, "dtype": self.dtype, "encodingFormat": self.encoding}
            return {"pythonClassName": TFDS_FEATURES + "video_feature.Video", "video": video}
        if self.kind == "text":
            return {"pythonClassName": TFDS_FEATURES + "text_feature.Text", "text": {}}
        if self.kind == "raw_image":  # TFDS decodes the bytes (decode_raw) and reshapes them
            return {
                "pythonClassName": TFDS_FEATURES + "tensor_feature.Tensor",
                "tensor": {"shape": dims, "dtype": "uint8", "encoding": "bytes"},
            }
        if self.kind == "image":
            image: dict[str, Any] = {"shape": dims, "dtype": self.dtype}
            if self.encoding:  # absent: mixed or other formats, decoded by content
                image["encodingFormat"] = self.encoding
            return {"pythonClassName": TFDS_FEATURES + "image_feature.Image", "image": image}
        return {
            "pythonClassName": TFDS_FEATURES + "tensor_feature.Tensor",
            "tensor": {"shape": dims, "dtype": self.dtype, "encoding": "none"},
        }


def flatten_tfds(features: dict[str, Any]) -> dict[str, tuple[dict[str, Any], bool, str]]:
    """features.json's (possibly nested) FeaturesDict as the records hold it:
    {serialized key: (TFDS description, per object, labels file name)}. Nested
    FeaturesDicts join their keys with '/'; a Sequence's features are per object."""
    flat: dict[str, tuple[dict[str, Any], bool, str]] = {}

    def walk(entries: dict[str, Any], prefix: tuple[str, ...], per_object: bool) -> None:
        for key, description in entries.items():
            if not isinstance(description, dict):
                continue
            inner, sequence = description, per_object
            if "sequence" in inner:  # a Sequence of one feature or of a FeaturesDict
                inner, sequence = (inner["sequence"] or {}).get("feature") or {}, True
            if "featuresDict" in inner:
                walk((inner["featuresDict"] or {}).get("features") or {}, (*prefix, key), sequence)
            else:
                flat["/".join((*prefix, key))] = (inner, sequence, labels_filename(key, prefix))

    walk(features, (), False)
    return flat
