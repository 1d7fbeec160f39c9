"""Files wherever they are: one façade over the local disk and fsspec's stores (fs.py,
stores.py), bounded and hashing reads (reading.py), downloads, and fingerprints of what a run read."""
