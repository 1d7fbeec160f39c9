"""tfr-inspect: what is inside TFRecord files, read without TensorFlow.

One module per mode: summary (default and --count), verify, stats, grid,
index; paths resolves what PATH arguments name.
"""

from __future__ import annotations

from .grid import grid
from .index import index_lines, write_indexes
from .stats import format_stats, stats
from .summary import count, format_files, format_summary, human_bytes, summarize
from .verify import format_verify, verify

__all__ = [
    "count", "format_files", "format_stats", "format_summary", "format_verify", "grid", "human_bytes",
    "index_lines", "stats", "summarize", "verify", "write_indexes",
]  # fmt: skip
