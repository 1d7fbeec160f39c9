"""Tables: `tfr-convert table` (converter.py) over CSV, Parquet, JSON Lines, Arrow and
Hugging Face files (files.py, rows.py, json_nesting.py, json_numbers.py), their columns
and types (columns.py, arrow_features.py, arrow_numpy.py), splits (splits.py) and
pictures (pictures.py).
"""
