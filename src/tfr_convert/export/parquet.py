"""--to parquet: one file per split (`OUT/SPLIT.parquet`, which pandas, pyarrow, DuckDB
and `datasets.load_dataset("parquet", data_dir=OUT)` read), one row per record.

Columns follow the schema: a feature holding one value in every record is a scalar
column, any other a list column (int64, float32, binary; text where the metadata says
so). Images stay their stored bytes. Rows are gathered into row groups of about
`row_group_bytes` of records, so memory stays bounded whatever the dataset's size. Class
names and the source ride in the file's key-value metadata (`tfr_convert`). Each file is
written under a temporary name and renamed once every split is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .. import fs, optional
from ..errors import SourceError
from ..features import FeatureSpec
from .source import ExportSource

ROW_GROUP_BYTES = 64 << 20
PARTIAL = ".partial"


def arrow_type(pa: Any, spec: FeatureSpec, text: bool) -> Any:
    scalar = {"int64": pa.int64(), "float32": pa.float32(), "string": pa.string() if text else pa.binary()}[spec.dtype]
    return scalar if spec.shape == () else pa.list_(scalar)


class _Column:
    """One feature's values for the row group being gathered."""

    def __init__(self, name: str, spec: FeatureSpec, text: bool) -> None:
        self.name, self.scalar, self.text = name, spec.shape == (), text and spec.dtype == "string"
        self.kind = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}[spec.dtype]
        self.values: list[Any] = []

    def add(self, found: tuple[str | None, list[Any]] | None, where: str) -> None:
        if found is None:
            raise SourceError(f"{where}: no feature {self.name!r}, which the first records all have")
        kind, values = found
        if kind not in (self.kind, None):
            raise SourceError(f"{where}: feature {self.name!r} is a {kind}, a {self.kind} in the first records")
        if self.text:
            try:
                values = [v.decode("utf-8") for v in values]
            except UnicodeDecodeError:
                raise SourceError(f"{where}: feature {self.name!r} is not UTF-8 text, as its metadata says") from None
        if self.scalar:
            if len(values) != 1:
                raise SourceError(
                    f"{where}: feature {self.name!r} holds {len(values)} values, one in each of the first records"
                )
            self.values.append(values[0])
        else:
            self.values.append(values)


def write(
    source: ExportSource,
    out: str,
    *,
    limit: int | None = None,
    row_group_bytes: int = ROW_GROUP_BYTES,
    progress: Callable[[int], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Write every split; {split: {file, records}}."""
    pa = optional.pyarrow("tfr-export --to parquet")
    schema = source.schema()
    text = source.text_features()
    metadata = {"tfr_convert": json.dumps({"class_names": source.class_names(), "splits": list(source.splits)})}
    arrow_schema = pa.schema(
        [pa.field(name, arrow_type(pa, spec, name in text)) for name, spec in schema.items()], metadata=metadata
    )
    columns = [_Column(name, spec, name in text) for name, spec in schema.items()]
    fs.makedirs(out)
    written: dict[str, dict[str, Any]] = {}
    partial: list[str] = []
    try:
        for split in source.splits:
            path = fs.join(out, f"{split}.parquet")
            partial.append(path + PARTIAL)
            records = _write_split(
                source.examples(split, limit), columns, arrow_schema, path + PARTIAL, row_group_bytes, progress
            )
            written[split] = {"file": path, "records": records}
        for path in partial:
            fs.rename(path, path.removesuffix(PARTIAL))
    except BaseException:
        for path in partial:
            if fs.exists(path):
                fs.remove(path)
        raise
    return written


def _write_split(examples, columns, arrow_schema, path, row_group_bytes, progress) -> int:
    """Write one split's (where, example, payload bytes); their count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = {c.name for c in columns}
    rows = gathered = 0

    def flush(writer) -> None:
        arrays = [pa.array(c.values, type=arrow_schema.field(c.name).type) for c in columns]
        writer.write_table(pa.Table.from_arrays(arrays, schema=arrow_schema))
        for c in columns:
            c.values = []

    with fs.open_file(path) as f, pq.ParquetWriter(f, arrow_schema) as writer:
        for where, example, size in examples:
            extra = example.keys() - names
            if extra:
                raise SourceError(f"{where}: feature {sorted(extra)[0]!r}, which the first records do not have")
            for column in columns:
                column.add(example.get(column.name), where)
            rows += 1
            gathered += size
            if progress is not None:
                progress(1)
            if gathered >= row_group_bytes:
                flush(writer)
                gathered = 0
        if gathered or rows == 0:
            flush(writer)
    return rows
