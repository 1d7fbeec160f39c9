"""--to hf: a Hugging Face `save_to_disk` folder, which `datasets.load_from_disk` opens
as a DatasetDict: OUT/dataset_dict.json lists the splits, and each split is a Dataset
folder OUT/SPLIT/ of Arrow stream files `data-00000-of-0000N.arrow`, a dataset_info.json
with the features (hf_features.py) and a state.json. pyarrow writes them; `datasets` is
not needed.

As `datasets` shards, a split of B bytes of records is cut into ceil(B / --shard-size)
files (no more than it has rows) whose row counts differ by at most one, decided before
any is written from the split's record count and file sizes: the same files for any
worker count. Chunks of records become Arrow record batches (on workers where pixels or
samples are encoded, else here); they are written in record order, so memory holds a
bounded window of chunks whatever the dataset's size.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import IO, Any

from .. import optional
from ..dataset.naming import FEATURES
from ..errors import SourceError
from ..storage import fs
from . import hf_features
from .engine import Chunk, ExportOptions, Failed, Job, Kept, run_staged
from .hf_features import Leaf, Node
from .source import ExportSource, parsed
from .staging import Staging

SHARD_BYTES = 500 << 20  # `datasets`' own max_shard_size


class HfJob(Job):
    def __init__(
        self, source: ExportSource, nodes: dict[str, Node], staging: Staging, shard_bytes: int, limit: int | None
    ) -> None:
        self.pa = optional.pyarrow("tfr-export --to hf")
        pa = self.pa
        self.nodes = nodes
        self.features = {name: node.hf for name, node in nodes.items()}
        fields = [pa.field(name, hf_features.arrow_type(pa, node)) for name, node in nodes.items()]
        metadata = {
            "huggingface": json.dumps({"info": {"features": self.features}}),
            "tfr_convert": json.dumps(source.exported(), sort_keys=True),  # as --to parquet's
        }
        self.schema = pa.schema(
            [pa.field(n, node.carried or f.type) for (n, node), f in zip(nodes.items(), fields, strict=True)],
            metadata=metadata,
        )
        self.media = _audio_plan(source, nodes)
        # a picture's bytes go into its column as views of the record (hf_features.binary_column)
        self._scratch = hf_features.Scratch()  # where those columns are laid out, chunk after chunk
        self._views = frozenset(
            leaf.key for leaf in _leaves(nodes) if leaf.kind == "image" and leaf.dims[:1] != (None,)
        )
        # cells made of values as they are: cheaper here than sending records to workers;
        # pixels to PNG or samples to WAV are worth them
        self.parallel = any(leaf.kind in ("raw_image", "audio") for leaf in _leaves(nodes))
        self.description = source.dataset.info.get("description", "") if source.dataset is not None else ""
        self.shard_bytes, self.limit = shard_bytes, limit
        self._source = source
        self._staging: Staging | None = staging  # parent side only
        self._split = ""
        self._plan: list[int] = []  # rows of each of the split's files
        self._writer: Any = None
        self._file: IO[bytes] | None = None
        self._files: list[str] = []
        self._rows = 0  # in the file being written

    def __getstate__(self) -> dict[str, Any]:
        state = {**self.__dict__, "_staging": None, "_writer": None, "_file": None}
        return state | {"pa": None, "_source": None, "_scratch": hf_features.Scratch()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.pa = optional.pyarrow("tfr-export --to hf")

    # ------------------------------------------------------------ workers

    def work(self, chunk: Chunk) -> tuple[list[Any], Any]:
        results: list[Any] = []
        rows: list[list[Any]] = []
        for where, payload in chunk.records:
            try:
                example = parsed(payload, self._views)
                rows.append([_value(node, example, self.media) for node in self.nodes.values()])
            except SourceError as e:
                results.append(Failed(where, str(e)))
                continue
            results.append(Kept(where))
        return results, self._batch(rows, chunk)

    def _batch(self, rows: list[list[Any]], chunk: Chunk) -> Any:
        pa = self.pa
        arrays = []
        for i, (name, node) in enumerate(self.nodes.items()):
            try:
                array = hf_features.column(pa, node, [row[i] for row in rows], self._scratch)
                arrays.append(array.cast(node.carried) if node.carried is not None else array)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as e:
                first = chunk.records[0][0] if chunk.records else chunk.split
                raise SourceError(f"{first} (or a record after it in its chunk): column {name!r}: {e}") from None
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    # ------------------------------------------------------------ here, in record order

    def begin(self, split: str) -> None:
        self._split, self._files, self._rows = split, [], 0
        count = self._source.count(split)
        count = min(count, self.limit) if self.limit is not None else count
        size = sum(fs.getsize(path) for path in self._source.splits[split])
        shards = max(1, min(count, math.ceil(size / self.shard_bytes)))  # no file planned empty
        # as `Dataset.shard(n, i, contiguous=True)` cuts: counts differing by at most one
        self._plan = [count // shards + (i < count % shards) for i in range(shards)]

    def take(self, split: str, where: str, result: Kept) -> str | None:
        return None

    def take_chunk(self, split: str, result: Any) -> None:
        batch = result
        while batch.num_rows:
            if self._writer is None:
                self._open()
            room = (
                self._plan[len(self._files) - 1] - self._rows if len(self._files) < len(self._plan) else batch.num_rows
            )
            if room <= 0:
                self._close_file()
                continue
            part = batch.slice(0, room)
            self._writer.write_batch(part)
            self._rows += part.num_rows
            batch = batch.slice(part.num_rows)

    def _open(self) -> None:
        pa = self.pa
        assert self._staging is not None
        name = f"{self._split}/data-{len(self._files):05d}-of-{len(self._plan):05d}.arrow"
        local = self._staging.local_path(name)
        self._file = pa.OSFile(local, "wb") if local is not None else self._staging.open(name)
        self._writer = pa.ipc.new_stream(self._file, self.schema)
        self._files.append(name)
        self._rows = 0

    def _close_file(self) -> None:
        if self._writer is not None:
            self._writer.close()
            assert self._file is not None
            self._file.close()
            self._writer = self._file = None

    def end(self, split: str) -> dict[str, Any]:
        self._close_file()
        while len(self._files) < len(self._plan):  # records left out under --on-error skip: empty files
            self._open()
            self._close_file()
        assert self._staging is not None
        state = {
            "_data_files": [{"filename": name.rsplit("/", 1)[1]} for name in self._files],
            "_fingerprint": self._fingerprint(split),
            "_format_columns": None,
            "_format_kwargs": {},
            "_format_type": None,
            "_output_all_columns": False,
            "_split": split,
        }
        info = {"citation": "", "description": self.description, "features": self.features,
                "homepage": "", "license": ""}  # fmt: skip
        self._staging.put(f"{split}/state.json", _json(state))
        self._staging.put(f"{split}/dataset_info.json", _json(info))
        return {"files": [fs.join(self._staging.out, name) for name in self._files]}

    def close(self) -> None:
        self._close_file()

    def _fingerprint(self, split: str) -> str:
        """What `datasets` keeps to tell datasets apart: here, of the features and the
        split's input files (names and sizes) and row counts, so the same export of the
        same input says the same."""
        digest = hashlib.blake2b(json.dumps(self.features, sort_keys=True).encode(), digest_size=8)
        for path in self._source.splits[split]:
            digest.update(f"\0{fs.basename(path)}\0{fs.getsize(path)}".encode())
        digest.update(repr(self._plan).encode())
        return digest.hexdigest()


def _value(node: Node, example: dict, media: Any) -> Any:
    if node.leaf is not None:
        return hf_features.cell(node.leaf, example, media)
    return {name: _value(child, example, media) for name, child in node.fields.items()}


def _json(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _audio_plan(source: ExportSource, nodes: dict[str, Node]) -> Any:
    """--to audio's plan for the (first) Audio feature, which makes its file's bytes."""
    audio = [leaf.key for leaf in _leaves(nodes) if leaf.kind == "audio"]
    if not audio:
        return None
    from .media import media_plan

    return media_plan(source, "audio", "csv", audio[0], None)


def _leaves(nodes: dict[str, Node]) -> list[Leaf]:
    """The leaves under the nodes, dicts walked into."""
    found: list[Leaf] = []
    for node in nodes.values():
        found += [node.leaf] if node.leaf is not None else _leaves(node.fields)
    return found


def columns(source: ExportSource) -> dict[str, Node]:
    """The dataset's columns: from its features.json (and the features it carries), else
    from what the records hold."""
    pa = optional.pyarrow("tfr-export --to hf")
    names, text = source.class_names(), source.text_features()
    dataset = source.dataset
    if dataset is None or not dataset.features:
        return hf_features.flat_tree(source.schema(absent=True), names, text)
    try:
        nodes = hf_features.tree(dataset.features, names, text)
    except SourceError as e:
        raise SourceError(f"{fs.join(dataset.path, FEATURES)}: {e}") from None
    return hf_features.carry(pa, nodes, dataset.hf_features)


def write(source: ExportSource, out: str, options: ExportOptions, shard_bytes: int = SHARD_BYTES) -> dict:
    """Write every split, then dataset_dict.json; {split: {records, files}}."""
    nodes = columns(source)

    def job(staging: Staging) -> HfJob:
        staging.put("dataset_dict.json", _json({"splits": list(source.splits)}))
        return HfJob(source, nodes, staging, shard_bytes, options.limit)

    return run_staged(source, out, options, job)
