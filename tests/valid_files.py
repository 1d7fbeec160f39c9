"""Small valid files of each kind the sources read (PNG, JPEG, WAV, FLAC, MP4, framed
records, Parquet, Arrow): what the hostile suites damage, and what they compare with."""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

import numpy as np
from PIL import Image

from tfr_convert.containers.crc import masked_crc
from tfr_convert.dataset.wire.example import serialize


def png(w: int = 6, h: int = 5, mode: str = "RGB", seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    shape = (h, w, 3) if mode == "RGB" else (h, w)
    out = io.BytesIO()
    Image.fromarray(rng.integers(0, 4 if mode == "L" else 256, shape, dtype=np.uint8), mode).save(out, "PNG")
    return out.getvalue()


def jpeg(w: int = 16, h: int = 12) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.random.default_rng(1).integers(0, 256, (h, w, 3), dtype=np.uint8)).save(out, "JPEG")
    return out.getvalue()


def wav(frames: int = 400, rate: int = 8000, channels: int = 1) -> bytes:
    samples = (np.sin(np.arange(frames * channels) / 5) * 3000).astype("<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * 2 * channels, 2 * channels, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def flac() -> bytes:
    import soundfile

    out = io.BytesIO()
    soundfile.write(out, (np.sin(np.arange(800) / 5) * 3000).astype(np.int16), 8000, format="FLAC")
    return out.getvalue()


def mp4(frames: int = 6, faststart: bool = False) -> bytes:
    """A clip of `frames` flat 32x32 frames; `faststart`: its index (moov) before its
    frames, as streaming sites write them, so a cut file still lists every frame."""
    import tempfile

    import av

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "clip.mp4")
        options = {"movflags": "faststart"} if faststart else {}
        with av.open(path, "w", format="mp4", options=options) as container:
            stream = container.add_stream("mpeg4", rate=10)
            stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
            for i in range(frames):
                pixels = np.full((32, 32, 3), i * 30 % 256, np.uint8)
                for packet in stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        return Path(path).read_bytes()


def packet_starts(clip: bytes) -> list[int]:
    """Where each frame of a clip begins in its file."""
    import av

    with av.open(io.BytesIO(clip)) as container:
        return [p.pos for p in container.demux(container.streams.video[0]) if p.pos is not None and p.pos >= 0]


def framed(records: list[bytes]) -> bytes:
    out = b""
    for data in records:
        head = struct.pack("<Q", len(data))
        out += head + struct.pack("<I", masked_crc(head)) + data + struct.pack("<I", masked_crc(data))
    return out


def examples(n: int = 4) -> list[bytes]:
    return [serialize({"image": png(seed=i), "label": i % 2, "filename": f"x{i}.png"}) for i in range(n)]


def parquet(table=None, **options) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = table if table is not None else pa.table({"x": [1, 2, 3], "s": ["a", "b", "c"]})
    out = io.BytesIO()
    pq.write_table(table, out, **options)
    return out.getvalue()


def rows_that_lie(rows: int, claimed: int) -> bytes:
    """A Parquet file of `rows` rows whose footer says `claimed` wherever it says `rows`
    (the file's, the row group's and the column's counts: thrift's zigzag varints)."""
    import pyarrow as pa

    def varint(value: int) -> bytes:
        value, out = (value << 1) ^ (value >> 63), b""
        while value > 0x7F:
            out, value = out + bytes([value & 0x7F | 0x80]), value >> 7
        return out + bytes([value])

    data = parquet(pa.table({"x": np.arange(rows)}), compression="none")
    (length,) = struct.unpack("<I", data[-8:-4])
    footer = data[-8 - length : -8].replace(varint(rows), varint(claimed))
    return data[: -8 - length] + footer + struct.pack("<I", len(footer)) + b"PAR1"


def arrow_stream(table=None) -> bytes:
    import pyarrow as pa
    from pyarrow import ipc

    table = table if table is not None else pa.table({"x": [1, 2, 3], "s": ["a", "b", "c"]})
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


# ------------------------------------------------------------------ where a file can be cut
