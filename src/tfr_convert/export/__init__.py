"""tfr-export: records back out of TFRecord / ArrayRecord files and datasets.

    source.py   what is exported: splits of records, read like tfr-inspect reads them,
                the schema (inferred from the records) and what metadata says of it
    parquet.py  --to parquet: a file per split, one row per record, row groups of bounded size

It reads as inspect/ does and imports no converter and no writer of shards.
"""

TARGETS = ("parquet",)
