"""Where a run's records end up: shards cut and written (shards.py), a local directory
swapped in whole (local.py) or an object-store prefix committed from a record
(remote.py, remote_lock.py, uploads.py), the resume journal (journal.py) and the
metadata beside the shards (metadata.py); opening.py chooses between them."""
