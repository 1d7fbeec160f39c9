"""--to parquet: one file per split (`OUT/SPLIT.parquet`, which pandas, pyarrow, DuckDB
and `datasets.load_dataset("parquet", data_dir=OUT)` read), one row per record.

Columns follow the schema: a feature holding one value in every record is a scalar
column, any other a list column (int64, float32, binary; text where the metadata says
so). Images stay their stored bytes. Rows are gathered into row groups of about
`row_group_bytes` of records, so memory stays bounded whatever the dataset's size. Class
names and the source ride in the file's key-value metadata (`tfr_convert`). The files are
staged (staging.py) and moved into place once every split is written.
"""

from __future__ import annotations

import json
from typing import Any

from .. import optional
from ..dataset.features import FeatureSpec
from ..errors import SourceError
from ..storage import fs
from .engine import Chunk, ExportOptions, Failed, Job, Kept, run_staged
from .source import ExportSource, parsed
from .staging import Staging

ROW_GROUP_BYTES = 64 << 20


def arrow_type(pa: Any, spec: FeatureSpec, text: bool) -> Any:
    scalar = {"int64": pa.int64(), "float32": pa.float32(), "string": pa.string() if text else pa.binary()}[spec.dtype]
    return scalar if spec.shape == () else pa.list_(scalar)


class _Column:
    """One feature: how a record's values become its cell."""

    def __init__(self, name: str, spec: FeatureSpec, text: bool) -> None:
        self.name, self.scalar, self.text = name, spec.shape == (), text and spec.dtype == "string"
        self.optional = spec.per_object  # some records lack it (a table's null under --nulls omit): a null
        self.kind = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}[spec.dtype]

    def cell(self, entry: tuple[str | None, list[Any]] | None) -> Any:
        if entry is None:
            if self.optional:
                return None
            raise SourceError(f"no feature {self.name!r}, which the first records all have")
        kind, values = entry
        if kind not in (self.kind, None):
            raise SourceError(f"feature {self.name!r} is a {kind}, a {self.kind} in the first records")
        if self.text:
            try:
                values = [v.decode("utf-8") for v in values]
            except UnicodeDecodeError:
                raise SourceError(f"feature {self.name!r} is not UTF-8 text, as its metadata says") from None
        if not self.scalar:
            return values
        if len(values) != 1:
            raise SourceError(f"feature {self.name!r} holds {len(values)} values, one in each of the first records")
        return values[0]


class ParquetJob(Job):
    """Workers turn chunks into Arrow record batches; here they are gathered into row
    groups of about `row_group_bytes` of records and written, a file per split."""

    def __init__(self, source: ExportSource, staging: Staging, row_group_bytes: int) -> None:
        pa = optional.pyarrow("tfr-export --to parquet")
        schema, text = source.schema(absent=True), source.text_features()
        metadata = {"tfr_convert": json.dumps(source.exported(), sort_keys=True)}
        fields = [pa.field(name, arrow_type(pa, spec, name in text)) for name, spec in schema.items()]
        self.arrow_schema = pa.schema(fields, metadata=metadata)
        self.columns = [_Column(name, spec, name in text) for name, spec in schema.items()]
        self.row_group_bytes = row_group_bytes
        self.chunk_bytes = min(self.chunk_bytes, row_group_bytes)  # a row group is whole chunks
        self._staging: Staging | None = staging  # parent side only
        self._writer: Any = None
        self._file: Any = None
        self._batches: list[Any] = []
        self._gathered = self._rows = 0

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_staging": None, "_writer": None, "_file": None, "_batches": []}

    def work(self, chunk: Chunk) -> tuple[list[Any], Any]:
        import pyarrow as pa

        names = {c.name for c in self.columns}
        results: list[Any] = []
        rows: list[list[Any]] = []
        size = 0
        for where, payload in chunk.records:
            try:
                example = parsed(payload)
                extra = example.keys() - names
                if extra:
                    raise SourceError(f"feature {sorted(extra)[0]!r}, which the first records do not have")
                rows.append([c.cell(example.get(c.name)) for c in self.columns])
            except SourceError as e:
                results.append(Failed(where, str(e)))
                continue
            results.append(Kept(where))
            size += len(payload)
        arrays = [pa.array([row[i] for row in rows], type=field.type) for i, field in enumerate(self.arrow_schema)]
        return results, (pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema), size)

    def begin(self, split: str) -> None:
        import pyarrow.parquet as pq

        assert self._staging is not None
        self._file = self._staging.open(f"{split}.parquet")
        self._writer = pq.ParquetWriter(self._file, self.arrow_schema)
        self._rows = 0

    def take(self, split: str, where: str, result: Kept) -> str | None:
        self._rows += 1
        return None

    def take_chunk(self, split: str, result: Any) -> None:
        batch, size = result
        self._batches.append(batch)
        self._gathered += size
        if self._gathered >= self.row_group_bytes:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        self._writer.write_table(pa.Table.from_batches(self._batches, schema=self.arrow_schema))
        self._batches, self._gathered = [], 0

    def end(self, split: str) -> dict[str, Any]:
        if self._gathered or self._rows == 0:
            self._flush()
        self._batches, self._gathered = [], 0
        self.close()
        assert self._staging is not None
        return {"file": fs.join(self._staging.out, f"{split}.parquet")}

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()  # a file it was given stays open
            self._file.close()
            self._writer = self._file = None


def write(source: ExportSource, out: str, options: ExportOptions, row_group_bytes: int = ROW_GROUP_BYTES) -> dict:
    """Write every split; {split: {file, records}}."""
    return run_staged(source, out, options, lambda staging: ParquetJob(source, staging, row_group_bytes))
