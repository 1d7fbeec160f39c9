"""The engines that drive a run: a converter's items, encoded (encode.py) on this
machine's cores (local.py, with workers.py) or on Apache Beam (beam.py), through the
choices both share (core.py: splits, naming, the finish), resumable (resume.py)."""
