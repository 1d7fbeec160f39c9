"""The TFRecord record format, in memory: no files here.

A record on disk (after decompression) is

    uint64 length (LE) | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)

Encoders leave HEADER_SIZE bytes before and FOOTER_SIZE bytes after every
payload they produce; `seal` fills those margins in place, so framing copies
nothing. `frame` is the one-record form of the same bytes.
"""

from __future__ import annotations

import struct

from .crc import crc32c, mask_array, masked_crc

HEADER_SIZE = 12  # length (8) + length CRC (4)
FOOTER_SIZE = 4

u32 = struct.Struct("<I")
u64 = struct.Struct("<Q")
header_struct = struct.Struct("<QI")  # length, masked CRC of the length


def header(length: int) -> bytes:
    packed = u64.pack(length)
    return packed + u32.pack(masked_crc(packed))


def frame(data: bytes) -> bytes:
    """One record exactly as `tf.io.TFRecordWriter` puts it on disk (uncompressed)."""
    return header(len(data)) + data + u32.pack(masked_crc(data))


def seal(blob: bytearray | memoryview, sizes: list[int]) -> None:
    """Fill the header and footer of every record slot in `blob`, in place.

    Slot i is sizes[i] bytes: HEADER_SIZE free bytes, the payload, FOOTER_SIZE
    free bytes. Headers and footers are scattered with numpy; only the payload
    CRCs need a call per record.
    """
    import numpy as np  # here: scanning files, which imports this module, needs no numpy

    n = len(sizes)
    if not n:
        return
    flat = np.frombuffer(blob, np.uint8)
    slots = np.asarray(sizes, np.int64)
    starts = np.zeros(n, np.int64)
    np.cumsum(slots[:-1], out=starts[1:])
    lengths = slots - (HEADER_SIZE + FOOTER_SIZE)
    # few distinct lengths: one header each (not np.unique, whose first call imports numpy.ma)
    distinct = np.array(sorted(set(lengths.tolist())), np.int64)
    which = np.searchsorted(distinct, lengths)
    headers = np.frombuffer(b"".join(header(int(length)) for length in distinct), np.uint8).reshape(-1, HEADER_SIZE)
    flat[starts[:, None] + np.arange(HEADER_SIZE)] = headers[which]
    view = memoryview(blob).cast("B") if isinstance(blob, memoryview) else memoryview(blob)
    ends = starts + slots - FOOTER_SIZE
    crcs = np.fromiter(
        (crc32c(view[s:e]) for s, e in zip((starts + HEADER_SIZE).tolist(), ends.tolist(), strict=True)),
        np.uint32,
        n,
    )
    flat[ends[:, None] + np.arange(FOOTER_SIZE)] = mask_array(crcs).astype("<u4").view(np.uint8).reshape(n, 4)
