"""The names of everything a run writes, shared by the writers and the readers: shard
files, the metadata files, the temporaries and the work folder.

`ShardName` is the only place that formats or parses
`{name}-{split}.{format}-{index:05d}-of-{count:05d}` (TFDS's default template; format
is tfrecord or array_record).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

INFO, FEATURES, MANIFEST = "dataset_info.json", "features.json", "manifest.json"
#: the keypoints' names and skeleton (pairs of keypoints counted from 1, as COCO gives them)
KEYPOINTS = "keypoints.json"
#: every temporary a run writes into the output directory starts with this
TEMP_PREFIX = ".tfr-convert-tmp-"
# Where a run into a remote (or mount point) DIR works, inside DIR; while its commit is
# under way (or was cut short) the folder holds this record.
WORK_FOLDER, COMMITTING = ".tfr-convert", "committing"


@dataclass(frozen=True)
class ShardName:
    name: str
    split: str
    index: int
    count: int
    file_format: str = "tfrecord"

    _PATTERN = re.compile(
        r"^(?P<name>.+)-(?P<split>[^-/]+)\.(?P<format>tfrecord|array_record)-(?P<index>\d{5,})-of-(?P<count>\d{5,})$"
    )
    TFDS_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.split}.{self.file_format}-{self.index:05d}-of-{self.count:05d}"

    @classmethod
    def parse(cls, filename: str) -> ShardName | None:
        m = cls._PATTERN.match(os.path.basename(filename))
        if not m:
            return None
        return cls(m["name"], m["split"], int(m["index"]), int(m["count"]), m["format"])
