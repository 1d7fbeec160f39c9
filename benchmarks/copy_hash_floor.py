"""The least work of a reshard whose manifest lists each shard's sha256, spread over
every core: copy SRC to DST (read and write in 8 MiB blocks, as `cat` does) while a pool
of one thread per core takes the sha256 of SRC's --parts equal parts (the shards).

    python benchmarks/copy_hash_floor.py SRC DST [--parts 8]

Both the copy and hashlib's sha256 release the GIL, so the threads run on all cores at
once. No record is framed or checked: this is a floor, not a reshard.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

BLOCK = 8 << 20


def copy(src: str, dst: str) -> None:
    buffer = memoryview(bytearray(BLOCK))
    with open(src, "rb", buffering=0) as f, open(dst, "wb", buffering=0) as g:
        while n := f.readinto(buffer):
            g.write(buffer[:n])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--parts", type=int, default=8)
    args = parser.parse_args()
    size = os.path.getsize(args.src)
    bounds = [size * k // args.parts for k in range(args.parts + 1)]
    with open(args.src, "rb", buffering=0) as f:

        def sha256(part: int) -> str:
            digest, buffer = hashlib.sha256(), bytearray(BLOCK)
            for at in range(bounds[part], bounds[part + 1], BLOCK):
                n = os.preadv(f.fileno(), [memoryview(buffer)[: min(BLOCK, bounds[part + 1] - at)]], at)
                digest.update(memoryview(buffer)[:n])
            return digest.hexdigest()

        with ThreadPoolExecutor(1) as copier, ThreadPoolExecutor(os.cpu_count() or 1) as hashers:
            copied = copier.submit(copy, args.src, args.dst)
            digests = list(hashers.map(sha256, range(args.parts)))
            copied.result()
    print(len(digests), "parts hashed")


if __name__ == "__main__":
    main()
