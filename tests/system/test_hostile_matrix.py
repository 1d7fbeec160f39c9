"""The hostile-input matrix: every command, against every input family it reads.

For each (command, family) the cases are generated from a valid input of that family:
truncated at its structural boundaries (chunks, markers, record headers, header
fields), sizes and counts that lie, nesting past any limit, names holding line breaks
and control characters, empty and one-byte files, the largest values of their types.
Each runs as a real subprocess under an address-space limit (RLIMIT_AS) and a timeout,
and must end in one of two ways: refused (exit 1, one `error:` line on stderr naming
the hostile file, nothing left under OUT), or, where a cut leaves a valid input of its
own (a CSV cut at a line's end), converted (exit 0); never a traceback, a signal, a
hang or a memory blow-up.

A command joins by its entry in MATRIX; `test_every_command_is_in_the_matrix` fails
for a command of tfr-convert (built in), tfr-inspect or tfr-export that has none.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from helpers import write_cifar

from tfr_convert.cli import commands
from tfr_convert.containers.crc import masked_crc
from tfr_convert.converters.published.idx import FILES, idx_bytes
from valid_files import arrow_stream, examples, flac, framed, jpeg, mp4, packet_starts, parquet, png, rows_that_lie, wav

SCRIPTS = Path(sys.executable).parent
ADDRESS_SPACE = 3 << 30  # RLIMIT_AS: the imports (numpy, pyarrow, PyAV) need ~1 GiB of it
TIMEOUT = 90
MOST_CUTS = 7  # truncations per valid input: spread evenly over its boundaries


@dataclass
class Case:
    """One hostile input: files written under the case's folder, the command's arguments
    (`{dir}` is that folder), what the error must name, and whether a run may succeed."""

    name: str
    files: dict[str, bytes]
    argv: list[str]
    names: str  # the file (relative to the case's folder) the error line must name
    may_convert: bool = False  # a cut that leaves a valid input (or a value that is fine)
    folders: list[str] = field(default_factory=list)  # empty folders the case needs


# ------------------------------------------------------------------ valid inputs


def png_boundaries(data: bytes) -> list[int]:
    found, at = [8], 8
    while at + 8 <= len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        found += [at + 4, at + 8, at + 8 + length, at + 12 + length]
        at += 12 + length
    return found


def jpeg_boundaries(data: bytes) -> list[int]:
    found, at = [2], 2
    while at + 4 <= len(data) and data[at] == 0xFF:
        marker = data[at + 1]
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        found += [at, at + 4]
        if marker == 0xDA:  # start of scan: the entropy-coded data follows, to the EOI
            found += [at + 2 + length + (len(data) - at) // 2, len(data) - 2]
            break
        at += 2 + length
    return found


def record_boundaries(data: bytes) -> list[int]:
    found, at = [], 0
    while at + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[at : at + 8])
        found += [at, at + 8, at + 12, at + 12 + length // 2, at + 12 + length]
        at += 16 + length
    return found


def whole_records(data: bytes) -> list[int]:
    """Where each record of a TFRecord file ends (and 0): the cuts that leave a valid file."""
    found, at = [0], 0
    while at + 12 <= len(data):
        at += 16 + struct.unpack("<Q", data[at : at + 8])[0]
        found.append(at)
    return found


def riff_boundaries(data: bytes) -> list[int]:
    found, at = [4, 8, 12], 12
    while at + 8 <= len(data):
        (length,) = struct.unpack("<I", data[at + 4 : at + 8])
        found += [at + 4, at + 8, at + 8 + length // 2]
        at += 8 + length + (length & 1)
    return found


def box_boundaries(data: bytes) -> list[int]:
    """MP4 / QuickTime top-level boxes: each box's size, type and middle."""
    found, at = [], 0
    while at + 8 <= len(data):
        (size,) = struct.unpack(">I", data[at : at + 4])
        found += [at + 4, at + 8, at + size // 2]
        if size < 8:
            break
        at += size
    return found


def evenly(offsets: list[int], size: int, most: int = MOST_CUTS) -> list[int]:
    """Up to `most` distinct cut points in (0, size), spread over `offsets`, and size - 1."""
    inside = sorted({o for o in offsets if 0 < o < size})
    if len(inside) > most:
        inside = [inside[round(i * (len(inside) - 1) / (most - 1))] for i in range(most)]
    return sorted({*inside, size - 1})


def cuts(name: str, data: bytes, offsets: list[int]) -> list[tuple[str, bytes]]:
    """(label, the first k bytes of `data`) for each cut point, with the empty and one-byte file."""
    found = [(f"{name} empty", b""), (f"{name} one byte", data[:1])]
    return found + [(f"{name} cut at {k}", data[:k]) for k in evenly(offsets, len(data))]


# ------------------------------------------------------------------ the families, per command


def images_family(kind: str) -> list[Case]:
    data, boundaries = (png(), png_boundaries) if kind == "png" else (jpeg(), jpeg_boundaries)
    name = f"c/bad.{'png' if kind == 'png' else 'jpg'}"
    ok = {"c/ok.png": png(seed=3), "d/ok2.png": png(seed=4)}
    cases = [
        Case(label, {**ok, name: cut}, ["images", "{dir}", "--check", "decode", "--workers", "2"], name)
        for label, cut in cuts(kind, data, boundaries(data))
    ]
    if kind == "png":  # a header that claims 2^31 - 1 pixels a side, its CRC right
        ihdr = bytearray(data[:33])
        struct.pack_into(">II", ihdr, 16, 2**31 - 1, 2**31 - 1)
        struct.pack_into(">I", ihdr, 29, zlib.crc32(bytes(ihdr[12:29])))
        cases.append(Case("png lying size", {**ok, name: bytes(ihdr) + data[33:]}, ["images", "{dir}"], name))
    else:  # a frame header that claims 65535 x 65535
        at = data.index(b"\xff\xc0")
        big = data[: at + 5] + struct.pack(">HH", 65535, 65535) + data[at + 9 :]
        cases.append(Case("jpeg lying size", {**ok, name: big}, ["images", "{dir}", "--check", "decode"], name))
    return cases


def labels_csv_family(command: str) -> list[Case]:
    """A labels CSV of `images` / `audio` / `video` (the files it names are fine)."""
    payload = {"images": ("a.png", png()), "audio": ("a.wav", wav()), "video": ("a.mp4", mp4())}[command]
    files = {f"root/{payload[0]}": payload[1]}
    good = f"path,label\n{payload[0]},cat\n".encode()
    argv = [command, "{dir}/root", "--labels", "{dir}/labels.csv"]
    bad = {
        "csv not utf-8": b"path,label\n\xff\xfe,cat\n",
        "csv utf-16": "path,label\na,b\n".encode("utf-16"),
        "csv unclosed quote": b'path,label\n"a.png,cat\n',
        "csv line of 17 MiB": b"path,label\n" + b"x" * (17 << 20) + b"\n",
        "csv path climbs out": b"path,label\n../../etc/passwd,cat\n",
        "csv path absolute": b"path,label\n/etc/passwd,cat\n",
        "csv label with a line break": b"path,label\n" + payload[0].encode() + b',"ca\nt"\n',
        "csv 100000 columns": b",".join(b"c%d" % i for i in range(100_000))
        + b"\n"
        + b",".join([b"1"] * 100_000)
        + b"\n",
    }
    cases = [Case(label, {**files, "labels.csv": text}, argv, "labels.csv") for label, text in bad.items()]
    cases += [Case(label, {**files, "labels.csv": cut}, argv, "labels.csv", may_convert=True)
              for label, cut in cuts("csv", good, [good.index(b"\n") + 1, len(good) - 1])]  # fmt: skip
    for case in cases:  # a header without a row, a row without its label: refused, but never a crash
        case.may_convert = case.may_convert or case.name in ("csv path climbs out", "csv path absolute",
                                                             "csv label with a line break", "csv 100000 columns")  # fmt: skip
    return cases


def hostile_names_family(command: str) -> list[Case]:
    """File and folder names holding line breaks and control characters: converted with
    the name escaped, or refused in one line: never two `error:` lines, never a crash."""
    payload = {"images": ("png", png()), "audio": ("wav", wav()), "video": ("mp4", mp4())}[command]
    names = ["a\nerror: forged.{}", "tab\there.{}", "bell\x07.{}", "cr\rhere.{}"]
    cases = []
    for name in names:
        rel = f"cat{chr(10)}dog/" + name.format(payload[0])
        cases.append(Case(repr(name), {rel: payload[1], f"dog/b.{payload[0]}": payload[1]}, [command, "{dir}"],
                          "{dir}", may_convert=True))  # fmt: skip
    return cases


def idx_family() -> list[Case]:
    images = idx_bytes(np.zeros((6, 4, 4), np.uint8))
    labels = idx_bytes(np.zeros(6, np.uint8))
    valid = {FILES["train", "images"]: images, FILES["train", "labels"]: labels,
             FILES["test", "images"]: images, FILES["test", "labels"]: labels}  # fmt: skip
    target = FILES["train", "images"]
    cases = [
        Case(label, {**valid, target: cut}, ["mnist", "{dir}"], target)
        for label, cut in cuts("idx", images, [4, 8, 12, 16, 16 + 16, len(images) - 16])
    ]
    lies = {
        "idx count that lies": struct.pack(">IIII", 2051, 2**31 - 1, 28, 28) + images[16:],
        "idx rows that lie": struct.pack(">IIII", 2051, 6, 2**31 - 1, 2**31 - 1) + images[16:],
        "idx wrong magic": struct.pack(">I", 2049) + images[4:],
        "idx rank 200": struct.pack(">I", 0x0800 | 200) + images[4:],
    }
    cases += [Case(label, {**valid, target: data}, ["mnist", "{dir}"], target) for label, data in lies.items()]
    gz = gzip.compress(images, mtime=0)
    cases += [
        Case(label, {**valid, target + ".gz": cut, target: b""}, ["mnist", "{dir}"], target)
        for label, cut in cuts("idx.gz", gz, [10, len(gz) // 2, len(gz) - 8])[2:]
    ]
    for case in cases[-3:]:  # the plain file beside it is empty: whichever is read, it is named
        del case.files[target]
    return cases


def cifar_family(tmp: Path) -> list[Case]:
    src = write_cifar(tmp / "cifar-valid")["path"]
    valid = {f"cifar-10-batches-py/{p.name}": p.read_bytes() for p in Path(src).iterdir()}
    target = "cifar-10-batches-py/data_batch_1"
    data = valid[target]
    argv = ["cifar", "{dir}/cifar-10-batches-py"]
    cases = [Case(label, {**valid, target: cut}, argv, target)
             for label, cut in cuts("pickle", data, [2, 20, len(data) // 4, len(data) // 2, len(data) - 2])]  # fmt: skip
    hostile = {
        "pickle of a class": b"\x80\x02cos\nsystem\nq\x00.",
        "pickle nested 100000 deep": b"\x80\x02" + b"]" * 100_000 + b"e" * 99_999 + b".",
        "pickle of a huge int": b"\x80\x02}q\x00(U\x04dataq\x01\x8a\xff" + b"\xff" * 255 + b"u.",
    }
    cases += [Case(label, {**valid, target: data}, argv, target) for label, data in hostile.items()]
    return cases


COCO = {
    "images": [{"id": 1, "file_name": "a.png", "width": 6, "height": 5}],
    "annotations": [{"id": 1, "image_id": 1, "category_id": 3, "bbox": [1, 1, 2, 2], "area": 4, "iscrowd": 0}],
    "categories": [{"id": 3, "name": "cat"}],
}


def detection_family(fmt: str) -> list[Case]:
    image = {"images/a.png": png()}
    if fmt == "coco":
        text = json.dumps(COCO).encode()
        path, argv = "train.json", ["detection", "{dir}/images", "--annotations", "{dir}/train.json"]
        hostile = {
            "coco nested 100000 deep": b'{"images": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "coco width 1e400": text.replace(b'"width": 6', b'"width": 1e400'),
            "coco id 2^70": text.replace(b'"image_id": 1', b'"image_id": 1180591620717411303424'),
            "coco file name climbs out": text.replace(b'"a.png"', b'"../../etc/passwd"'),
            "coco category with a line break": text.replace(b'"cat"', b'"c\\nat"'),
            "coco a list": b"[1, 2]",
        }
        boundaries = [i for i, c in enumerate(text) if c in b"{[,:"]
    elif fmt == "voc":
        text = (b"<annotation><filename>a.png</filename><size><width>6</width><height>5</height><depth>3</depth>"
                b"</size><object><name>cat</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>3</xmax><ymax>3</ymax>"
                b"</bndbox></object></annotation>")  # fmt: skip
        path, argv = "voc/a.xml", ["detection", "{dir}/images", "--annotations", "{dir}/voc"]
        hostile = {
            "voc billion laughs": b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
            + b"".join(b'<!ENTITY %s "%s">' % (bytes([98 + i]), (b"&" + bytes([97 + i]) + b";") * 10) for i in range(8))
            + b"]><annotation><filename>&i;</filename></annotation>",
            "voc external entity": b'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
            b"<annotation><filename>&e;</filename></annotation>",
            "voc nested 100000 deep": b"<annotation>" + b"<a>" * 100_000 + b"</a>" * 100_000 + b"</annotation>",
            "voc xmax 1e400": text.replace(b"<xmax>3</xmax>", b"<xmax>1e400</xmax>"),
        }
        boundaries = [i for i, c in enumerate(text) if c == ord("<")]
    elif fmt == "yolo":
        text = b"0 0.5 0.5 0.2 0.2\n"
        path, argv = "labels/a.txt", ["detection", "{dir}/images", "--annotations", "{dir}/labels",
                                      "--annotation-format", "yolo", "--classes", "{dir}/classes.txt"]  # fmt: skip
        image["classes.txt"] = b"cat\n"
        hostile = {
            "yolo nan": b"0 nan 0.5 0.2 0.2\n",
            "yolo inf": b"0 0.5 inf 0.2 0.2\n",
            "yolo class 2^70": b"1180591620717411303424 0.5 0.5 0.2 0.2\n",
            "yolo 100000 fields": b"0 " + b"0.5 " * 100_000 + b"\n",
            "yolo not utf-8": b"0 0.5 0.5 0.2 \xff\n",
        }
        boundaries = [i for i, c in enumerate(text) if c == ord(" ")]
    else:  # csv
        text = b"filename,width,height,class,xmin,ymin,xmax,ymax\na.png,6,5,cat,1,1,3,3\n"
        path, argv = "boxes.csv", ["detection", "{dir}/images", "--annotations", "{dir}/boxes.csv"]
        hostile = {
            "csv boxes width 2^70": text.replace(b"a.png,6", b"a.png,1180591620717411303424"),
            "csv boxes name climbs out": text.replace(b"a.png,", b"../../etc/passwd,"),
            "csv boxes xmax nan": text.replace(b",3,3\n", b",nan,3\n"),
        }
        boundaries = [i for i, c in enumerate(text) if c in b",\n"]
    cases = [Case(label, {**image, path: data}, argv, path) for label, data in hostile.items()]
    cases += [Case(label, {**image, path: cut}, argv, path, may_convert=fmt in ("yolo", "csv"))
              for label, cut in cuts(fmt, text, boundaries)]  # fmt: skip
    for case in cases:  # an annotation file cut short may still be a (smaller) valid one, or name no box
        case.may_convert = case.may_convert or case.name in ("coco file name climbs out", "yolo 100000 fields")
    return cases


def segmentation_family() -> list[Case]:
    mask = png(6, 5, "L")
    files = {"images/a.png": png(), "images/b.png": png(seed=2), "masks/b.png": png(6, 5, "L", seed=3)}
    argv = ["segmentation", "{dir}/images", "--masks", "{dir}/masks"]
    cases = [Case(label, {**files, "masks/a.png": cut}, argv, "masks/a.png")
             for label, cut in cuts("mask", mask, png_boundaries(mask))]  # fmt: skip
    cases.append(Case("mask of another size", {**files, "masks/a.png": png(7, 5, "L")}, argv, "masks/a.png"))
    return cases


def tfrecord_family(command: str) -> list[Case]:
    data = framed(examples())
    huge = struct.pack("<Q", 2**62)
    lying = huge + struct.pack("<I", masked_crc(huge)) + data[12:]
    argv = {
        "records": ["records", "{dir}/data.tfrecord"],
        "inspect": ["{dir}/data.tfrecord", "--stats"],
        "inspect-verify": ["{dir}/data.tfrecord", "--verify"],
        "inspect-diff": ["{dir}/old.tfrecord", "{dir}/data.tfrecord", "--diff"],  # the hostile file as NEW
        "export": ["{dir}/data.tfrecord", "--to", "images", "--layout", "csv"],
    }[command]
    old = {"old.tfrecord": data} if command == "inspect-diff" else {}
    whole = set(whole_records(data))  # a cut between records leaves a valid file of fewer
    cases = [Case(label, {**old, "data.tfrecord": cut}, argv, "data.tfrecord",
                  may_convert=len(cut) in whole and (command.startswith("inspect") or len(cut) > 0))
             for label, cut in cuts("tfrecord", data, record_boundaries(data))]  # fmt: skip
    cases.append(Case("tfrecord length 2^62 with its CRC", {**old, "data.tfrecord": lying}, argv, "data.tfrecord"))
    gz = gzip.compress(data, mtime=0)
    cases += [Case(label, {**old, "data.tfrecord.gz": cut}, [a.replace("data.tfrecord", "data.tfrecord.gz") for a in argv],
                   "data.tfrecord.gz") for label, cut in cuts("gzip", gz, [10, len(gz) // 2, len(gz) - 8])[2:]]  # fmt: skip
    return cases


def array_record_family() -> list[Case]:
    import tempfile

    from array_record.python.array_record_module import ArrayRecordWriter

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.array_record")
        writer = ArrayRecordWriter(path, "group_size:1")
        for record in examples():
            writer.write(record)
        writer.close()
        data = Path(path).read_bytes()
    argv = ["records", "{dir}/data.array_record"]
    return [Case(label, {"data.array_record": cut}, argv, "data.array_record")
            for label, cut in cuts("array_record", data, [8, 16, 32, len(data) // 2, len(data) - 16, len(data) - 8])]  # fmt: skip


def dataset_metadata_family(command: str) -> list[Case]:
    """A dataset folder of good shards whose metadata files are damaged."""
    shard = framed(examples())
    info = {"name": "d", "splits": [{"name": "train", "shardLengths": ["4"], "numBytes": str(len(shard))}]}
    base = {"d/d-train.tfrecord-00000-of-00001": shard, "d/dataset_info.json": json.dumps(info).encode()}
    argv = {"inspect": ["{dir}/d", "--verify"], "export": ["{dir}/d", "--to", "parquet"],
            "export-hf": ["{dir}/d", "--to", "hf"], "records": ["records", "{dir}/d"],
            "inspect-diff": ["{dir}/old", "{dir}/d", "--diff"]}[command]  # fmt: skip
    if command == "inspect-diff":  # the damaged dataset as NEW, against a sound one
        base |= {f"old/{name.split('/')[1]}": data for name, data in base.items()}
    bad = {
        "dataset_info a list": b"[1, 2]",
        "dataset_info nested 100000 deep": b'{"splits": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "dataset_info not utf-8": b'{"name": "\xff"}',
        "dataset_info split name with a line break": json.dumps(
            {**info, "splits": [{**info["splits"][0], "name": "tr\nain"}]}).encode(),
        "dataset_info shard length 2^70": json.dumps(
            {**info, "splits": [{**info["splits"][0], "shardLengths": [str(2**70)]}]}).encode(),
    }  # fmt: skip
    cases = [Case(label, {**base, "d/dataset_info.json": text}, argv, "d", may_convert=True)
             for label, text in bad.items()]  # fmt: skip
    for text, label in ((b"[]", "manifest a list"), (b"{" * 5000, "manifest cut")):
        cases.append(Case(label, {**base, "d/manifest.json": text}, argv, "d", may_convert=True))
    return cases


def table_family(kind: str) -> list[Case]:
    import pyarrow as pa

    argv = ["table", "{dir}/data." + kind]
    if kind == "csv":
        text = b"a,b,c\n1,x,2.5\n2,y,3.5\n"
        hostile = {
            "csv row of another width": b"a,b\n1,2\n3,4,5\n",
            "csv one line of 1 GiB": None,  # made by the runner as a sparse file: see write_case
            "csv 100000 columns": b",".join(b"c%d" % i for i in range(100_000)) + b"\n" + b",".join([b"1"] * 100_000),
            "csv two byte-order marks": b"\xef\xbb\xbf\xef\xbb\xbfa,b\n1,2\n",
            "csv int 2^70": b"a\n1180591620717411303424\n",
            "csv NUL": b"a,b\n1,\x002\n",
        }
        boundaries = [i + 1 for i, c in enumerate(text) if c == ord("\n")] + [text.index(b"x")]
    elif kind == "parquet":
        text = parquet()
        deep_type, deep_value = pa.int64(), 1
        for _ in range(300):
            deep_type, deep_value = pa.struct([("a", deep_type)]), {"a": deep_value}
        dictionary = pa.DictionaryArray.from_arrays(pa.array(np.zeros(3000, np.int32)), pa.array([b"x" * (1 << 20)]))
        hostile = {
            "parquet uint64 top": parquet(pa.table({"x": pa.array([1, 2**64 - 1], pa.uint64())})),
            "parquet struct 300 deep": parquet(pa.table({"x": pa.array([deep_value], deep_type)}), store_schema=False),
            "parquet dictionary bomb": parquet(pa.table({"s": dictionary}), compression="zstd", store_schema=False),
            "parquet value of 100 MiB": parquet(pa.table({"s": [b"y" * (100 << 20)]}), compression="zstd",
                                                use_dictionary=False),
            "parquet footer length lies": text[:-8] + struct.pack("<I", 2**31 - 1) + b"PAR1",
            "parquet footer claims 2^40 rows": rows_that_lie(12345, 2**40),
            "parquet no rows": parquet(pa.table({"x": pa.array([], pa.int64())})),
        }  # fmt: skip
        boundaries = [4, len(text) // 2, len(text) - 8, len(text) - 4]
    elif kind == "jsonl":
        text = b'{"a": 1, "b": [1, 2], "c": {"d": "x"}}\n{"a": 2, "b": [3], "c": {"d": "y"}}\n'
        hostile = {
            "jsonl nested 10000 deep": b'{"a": ' * 10_000 + b"1" + b"}" * 10_000 + b"\n",
            "jsonl nested 500 deep": b'{"a": ' * 500 + b"1" + b"}" * 500 + b"\n",
            "jsonl lists 10000 deep": b'{"a": ' + b"[" * 10_000 + b"]" * 10_000 + b"}\n",
            "jsonl int 2^64-1": b'{"a": 18446744073709551615}\n',
            "jsonl a list": b"[1, 2]\n",
        }
        boundaries = [i for i, c in enumerate(text) if c in b"{[,:\n"]
    else:  # arrow
        text = arrow_stream()
        hostile = {"arrow message length lies": b"\xff\xff\xff\xff" + struct.pack("<i", 2**31 - 1) + text[8:]}
        boundaries = [4, 8, len(text) // 3, len(text) // 2, len(text) - 8]
    # converted as they are: a wide table (in linear time), integers past int64 as text
    # (CSV) or floats (JSON, as pyarrow reads them)
    fine = ("csv 100000 columns", "csv int 2^70", "jsonl int 2^64-1")
    cases = [Case(label, {"data." + kind: data or b""}, argv, "data." + kind, may_convert=label in fine)
             for label, data in hostile.items()]  # fmt: skip
    # a CSV or JSON Lines file cut at a line's end is a shorter valid one; an Arrow stream
    # needs no end-of-stream marker (its last 8 bytes)
    cases += [Case(label, {"data." + kind: cut}, argv, "data." + kind,
                   may_convert=kind in ("csv", "jsonl") or (kind == "arrow" and len(cut) >= len(text) - 8))
              for label, cut in cuts(kind, text, boundaries)]  # fmt: skip
    return cases


def huggingface_family() -> list[Case]:
    state = {"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": None}
    base = {"hf/state.json": json.dumps(state).encode(), "hf/data-00000-of-00001.arrow": arrow_stream(),
            "hf/dataset_info.json": b'{"features": {}}'}  # fmt: skip
    argv = ["table", "{dir}/hf"]
    bad = {
        "hf state.json a list": {"hf/state.json": b"[1]"},
        "hf dataset_info.json a list": {"hf/dataset_info.json": b"[1]"},
        "hf _split an int": {"hf/state.json": json.dumps({**state, "_split": 3}).encode()},
        "hf data file climbs out": {"hf/state.json": json.dumps({"_data_files": [{"filename": "../x.arrow"}]}).encode()},
        "hf state.json nested 100000 deep": {"hf/state.json": b'{"a": ' * 100_000 + b"1" + b"}" * 100_000},
        "hf dataset_dict.json a list": {"hf/dataset_dict.json": b"[1]"},
        "hf split outside its folder": {"hf/dataset_dict.json": b'{"splits": ["../../etc"]}'},
        "hf split with a line break": {"hf/dataset_dict.json": b'{"splits": ["tr\\nain"]}'},
    }  # fmt: skip
    cases = []
    for label, files in bad.items():
        named = next(iter(files)).rsplit("/", 1)[0] if "split" in label and "dict" in str(files) else next(iter(files))
        cases.append(Case(label, {**base, **files}, argv, named))
    data = base["hf/data-00000-of-00001.arrow"]
    cases += [Case(label, {**base, "hf/data-00000-of-00001.arrow": cut}, argv, "hf/data-00000-of-00001.arrow",
                   may_convert=len(cut) >= len(data) - 8)
              for label, cut in cuts("hf arrow", data, [8, len(data) // 2, len(data) - 8])]  # fmt: skip
    return cases


def audio_family(kind: str) -> list[Case]:
    other = {"a/ok.wav": wav()}
    argv = ["audio", "{dir}"]
    if kind == "wav":
        data = wav()
        cases = [Case(label, {**other, "a/bad.wav": cut}, argv, "a/bad.wav")
                 for label, cut in cuts("wav", data, riff_boundaries(data))]  # fmt: skip
        lying = data[:40] + struct.pack("<I", 2**32 - 2) + data[44:]
        fmt_lies = data[:22] + struct.pack("<H", 65535) + data[24:]  # 65535 channels
        cases += [
            Case("wav data size lies", {**other, "a/bad.wav": lying}, argv, "a/bad.wav"),
            Case("wav 65535 channels", {**other, "a/bad.wav": fmt_lies}, argv, "a/bad.wav"),
            Case("wav 2 hours", {**other, "a/bad.wav": b""}, argv, "a/bad.wav"),  # made sparse by write_case
            Case("headerless samples named .wav", {**other, "a/bad.wav": b"\x00\x01" * 100}, argv, "a/bad.wav"),
            # no recording by its name: left out with a warning
            Case("headerless raw", {**other, "a/bad.raw": b"\x00\x01" * 100}, argv, "a/bad.raw", may_convert=True),
        ]
        return cases
    data = flac()
    return [Case(label, {**other, "a/bad.flac": cut}, argv, "a/bad.flac")
            for label, cut in cuts("flac", data, [4, 8, 42, len(data) // 2])]  # fmt: skip


def video_family() -> list[Case]:
    data = mp4()
    other = {"a/ok.mp4": data}
    argv = ["video", "{dir}", "--frame-format", "jpeg"]
    cases = [Case(label, {**other, "a/bad.mp4": cut}, argv, "a/bad.mp4", may_convert=True)
             for label, cut in cuts("mp4", data, box_boundaries(data))]  # fmt: skip
    for case in cases[:2]:  # empty and one byte: no clip at all
        case.may_convert = False
    cases.append(Case("not a clip", {**other, "a/bad.mp4": b"\x00" * 4096}, argv, "a/bad.mp4"))
    # its index first (as streaming sites write clips): cut between two frames, it still
    # lists all 50 and the 25 before the cut decode without an error
    fast = mp4(frames=50, faststart=True)
    cases.append(Case("faststart mp4 cut at half", {**other, "a/bad.mp4": fast[: packet_starts(fast)[25]]}, argv,
                      "a/bad.mp4"))  # fmt: skip
    return cases


def _tar(members: list[tuple[str, bytes, bytes]]) -> bytes:
    """A tar of (name, type, data) members, dated 0 (type: tarfile's REGTYPE, SYMTYPE...)."""
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.REGTYPE:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.linkname = "elsewhere" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
                tar.addfile(info)
    return buffer.getvalue()


def webdataset_family() -> list[Case]:
    import tarfile

    sample = [("k0.png", png(seed=1)), ("k0.cls", b"1"), ("k0.json", b'{"a": 1}'), ("k1.png", png(seed=2)),
              ("k1.cls", b"0"), ("k1.json", b'{"a": 2}')]  # fmt: skip
    members = [(name, tarfile.REGTYPE, data) for name, data in sample]
    data = _tar(members)
    argv = ["webdataset", "{dir}/data.tar"]
    starts = list(range(0, len(data), 512))
    cases = [Case(label, {"data.tar": cut}, argv, "data.tar", may_convert=k >= 2)
             for k, (label, cut) in enumerate(cuts("tar", data, starts))]  # fmt: skip
    for label, name, kind in (
        ("member climbing out", "../k2.png", tarfile.REGTYPE),
        ("a sample's later member climbing out", "k1.x/../../k2.png", tarfile.REGTYPE),
        ("a sample's later member's name part of 300 bytes", "k1." + "x" * 300, tarfile.REGTYPE),
        ("absolute member", "/tmp/k2.png", tarfile.REGTYPE),
        ("symlink member", "k2.png", tarfile.SYMTYPE),
        ("hard link member", "k2.png", tarfile.LNKTYPE),
        ("device member", "k2.png", tarfile.CHRTYPE),
        ("fifo member", "k2.png", tarfile.FIFOTYPE),
    ):
        cases.append(Case(label, {"data.tar": _tar([*members, (name, kind, png(seed=3))])}, argv, "data.tar"))
    claimed = bytearray(_tar(members[:1]))  # its first member's header says 2^40 bytes, its checksum right
    claimed[124:136] = b"\x80" + (2**40).to_bytes(11, "big")  # (GNU's base-256 size: past 11 octal digits)
    claimed[148:156] = b"        "
    claimed[148:156] = b"%06o\0 " % sum(claimed[:512])
    cases.append(Case("member claiming 2^40 bytes", {"data.tar": bytes(claimed)}, argv, "data.tar"))
    gzipped = ["webdataset", "{dir}/data.tar.gz"]
    padded = gzip.compress(data + bytes(64 << 20), mtime=0)  # 64 MiB of zeros behind the samples: a tar's end
    cases.append(
        Case("gzipped tar of 64 MiB of padding", {"data.tar.gz": padded}, gzipped, "data.tar.gz", may_convert=True)
    )
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)  # 300 MiB of zeros, about 300 KiB gzipped
    bomb = deflate.compress(data) + b"".join(deflate.compress(bytes(1 << 20)) for _ in range(300)) + deflate.flush()
    cases.append(Case("gzip bomb", {"data.tar.gz": bomb}, gzipped, "data.tar.gz"))
    cases.append(Case("gzipped tar cut short", {"data.tar.gz": padded[: len(padded) // 2]}, gzipped, "data.tar.gz",
                      may_convert=True))  # fmt: skip
    cases.append(Case("no gzip", {"data.tar.gz": data}, gzipped, "data.tar.gz"))
    return cases


def carried_hf_features_family() -> list[Case]:
    """A dataset whose huggingface_features.json (what `tfr-export --to hf` gives back) is
    damaged or lies about the columns: ignored where it does not fit, never a crash."""
    shard = framed(examples())
    info = {"name": "d", "splits": [{"name": "train", "shardLengths": ["4"], "numBytes": str(len(shard))}]}
    base = {"d/d-train.tfrecord-00000-of-00001": shard, "d/dataset_info.json": json.dumps(info).encode()}
    bad = {
        "a list": b"[1, 2]",
        "nested 100000 deep": b'{"features": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "not utf-8": b'{"features": {"\xff": 1}}',
        "a Value of no dtype": json.dumps({"features": {"label": {"_type": "Value", "dtype": "evil"}}}).encode(),
        "a ClassLabel of no names": json.dumps({"features": {"label": {"_type": "ClassLabel", "names": 7}}}).encode(),
        "a List of length -5": json.dumps(
            {"features": {"label": {"_type": "List", "length": -5, "feature": {"_type": "Value", "dtype": "int8"}}}}
        ).encode(),
        "a string where ints are": json.dumps({"features": {"label": {"_type": "Value", "dtype": "string"}}}).encode(),
        "a column that is not there": json.dumps({"features": {"zz": {"_type": "Image"}}}).encode(),
    }
    argv = ["{dir}/d", "--to", "hf"]
    return [Case(label, {**base, "d/huggingface_features.json": text}, argv, "d", may_convert=True)
            for label, text in bad.items()]  # fmt: skip


def hf_features_family() -> list[Case]:
    """A dataset whose features.json (what `tfr-export --to hf` maps to `datasets` features)
    lies in its numbers and types: one line naming it, never a crash."""
    shard = framed(examples())
    info = {"name": "d", "splits": [{"name": "train", "shardLengths": ["4"], "numBytes": str(len(shard))}]}
    base = {"d/d-train.tfrecord-00000-of-00001": shard, "d/dataset_info.json": json.dumps(info).encode()}
    tensor = "tensorflow_datasets.core.features.tensor_feature.Tensor"

    def features(description: dict) -> bytes:
        return json.dumps({"featuresDict": {"features": {"label": description}}}).encode()

    bad = {
        "a dimension that is no number": {"pythonClassName": tensor, "tensor": {"dtype": "int64",
                                          "shape": {"dimensions": ["abc"]}}},
        "a dtype no tensor has": {"pythonClassName": tensor, "tensor": {"dtype": "evil", "shape": {}}},
        "numClasses that is no number": {"pythonClassName": "x.ClassLabel", "classLabel": {"numClasses": "many"}},
        "a sampleRate that is a list": {"pythonClassName": "x.Audio", "audio": {"sampleRate": [1]}},
    }  # fmt: skip
    argv = ["{dir}/d", "--to", "hf"]
    return [Case(label, {**base, "d/features.json": features(d)}, argv, "d/features.json") for label, d in bad.items()]


def export_records_family() -> list[Case]:
    return tfrecord_family("export")


# command -> {family: the cases}; the command is `tfr-convert COMMAND` unless it is inspect or export
MATRIX: dict[str, dict[str, Callable[[Path], list[Case]]]] = {
    "mnist": {"idx": lambda tmp: idx_family()},
    "cifar": {"pickle": cifar_family},
    "images": {
        "png": lambda tmp: images_family("png"),
        "jpeg": lambda tmp: images_family("jpeg"),
        "labels csv": lambda tmp: labels_csv_family("images"),
        "names": lambda tmp: hostile_names_family("images"),
    },
    "detection": {fmt: (lambda f: lambda tmp: detection_family(f))(fmt) for fmt in ("coco", "voc", "yolo", "csv")},
    "segmentation": {"png masks": lambda tmp: segmentation_family()},
    "records": {
        "tfrecord": lambda tmp: tfrecord_family("records"),
        "array_record": lambda tmp: array_record_family(),
        "dataset metadata": lambda tmp: dataset_metadata_family("records"),
    },
    "table": {
        **{kind: (lambda k: lambda tmp: table_family(k))(kind) for kind in ("csv", "parquet", "jsonl", "arrow")},
        "huggingface": lambda tmp: huggingface_family(),
    },
    "audio": {
        "wav": lambda tmp: audio_family("wav"),
        "flac": lambda tmp: audio_family("flac"),
        "labels csv": lambda tmp: labels_csv_family("audio"),
        "names": lambda tmp: hostile_names_family("audio"),
    },
    "video": {
        "mp4": lambda tmp: video_family(),
        "labels csv": lambda tmp: labels_csv_family("video"),
        "names": lambda tmp: hostile_names_family("video"),
    },
    "webdataset": {"tar": lambda tmp: webdataset_family()},
    "inspect": {
        "tfrecord": lambda tmp: tfrecord_family("inspect"),
        "tfrecord --verify": lambda tmp: tfrecord_family("inspect-verify"),
        "dataset metadata": lambda tmp: dataset_metadata_family("inspect"),
        "tfrecord --diff": lambda tmp: tfrecord_family("inspect-diff"),
        "dataset metadata --diff": lambda tmp: dataset_metadata_family("inspect-diff"),
    },
    "export": {
        "tfrecord": lambda tmp: export_records_family(),
        "dataset metadata": lambda tmp: dataset_metadata_family("export"),
        "dataset metadata --to hf": lambda tmp: dataset_metadata_family("export-hf"),
        "carried hf features": lambda tmp: carried_hf_features_family(),
        "features.json --to hf": lambda tmp: hf_features_family(),
    },
}


# ------------------------------------------------------------------ running a case


def write_case(case: Case, folder: Path) -> None:
    folder.mkdir(parents=True)
    for rel, data in case.files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if case.name == "csv one line of 1 GiB":  # sparse: a GiB of NULs after a header, costing no disk
        with open(folder / case.names, "wb") as f:
            f.write(b"a,b\n")
            f.truncate(1 << 30)
    if case.name == "wav 2 hours":  # a header that says 2 h of 44.1 kHz stereo, its samples sparse
        samples = 2 * 3600 * 44100 * 4
        head = wav(0, 44100, 2)
        head = head[:4] + struct.pack("<I", 36 + samples) + head[8:40] + struct.pack("<I", samples)
        with open(folder / case.names, "wb") as f:
            f.write(head)
            f.truncate(len(head) + samples)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_case(case: Case, command: str, folder: Path) -> str | None:
    """What is wrong with how the command handled `case`, or None."""
    write_case(case, folder)
    out = folder.parent / f"{folder.name}-out"
    argv = [a.replace("{dir}", str(folder)) for a in case.argv]
    if command == "inspect":
        program, argv = "tfr-inspect", argv
    elif command == "export":
        program, argv = "tfr-export", [*argv, "--out", str(out)]
    else:
        program, argv = "tfr-convert", [*argv, "--out", str(out), "--quiet"]
    try:
        proc = subprocess.run([str(SCRIPTS / program), *argv], capture_output=True, text=True, errors="replace",
                              timeout=TIMEOUT, preexec_fn=_limit_memory, stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"still running after {TIMEOUT} s"
    lines = proc.stderr.strip().splitlines()
    if proc.returncode < 0 or proc.returncode > 2 or "Traceback" in proc.stderr:
        return f"exit {proc.returncode}: {proc.stderr[-1500:]}"
    if proc.returncode == 0:
        if not case.may_convert:
            return f"converted (exit 0), where it must be refused: {proc.stderr[-500:]}"
        return None
    if "--diff" in argv and proc.returncode == 1 and not lines and case.may_convert:
        # a cut that leaves a valid file of fewer records differs: the report on stdout says so
        return None if "differ:" in proc.stdout else f"exit 1, no error and no difference: {proc.stdout[-800:]}"
    if "--verify" in argv and proc.returncode == 1 and not lines:  # the report, on stdout, names each problem
        named = case.names.replace("{dir}", str(folder))
        return None if named in proc.stdout else f"the report does not name {named}: {proc.stdout[-800:]}"
    errors = [line for line in lines if line.startswith("error:")]
    if len(errors) != 1 or not lines[-1].startswith("error:"):
        return f"{len(errors)} error lines, where one ends stderr: {proc.stderr[-1500:]}"
    named = case.names.replace("{dir}", str(folder))
    if named != str(folder) and str(folder / named) not in errors[0] and named not in errors[0]:
        return f"the error does not name {named}: {errors[0]}"
    if program != "tfr-inspect" and out.exists() and any(out.iterdir()):
        return f"left {sorted(p.name for p in out.iterdir())} under OUT"
    return None


def _cases(command: str, family: str, tmp: Path) -> list[Case]:
    cases = MATRIX[command][family](tmp)
    assert cases, f"{command} / {family} generates no case"
    return cases


@pytest.mark.parametrize(
    "command, family", [(c, f) for c, families in MATRIX.items() for f in families], ids=lambda v: v.replace(" ", "-")
)
def test_hostile_inputs_are_refused_in_one_line_or_converted_never_a_crash(command, family, tmp_path):
    pytest.importorskip("pyarrow" if command == "table" else "PIL")
    cases = _cases(command, family, tmp_path)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        outcomes = list(pool.map(lambda ic: run_case(ic[1], command, tmp_path / f"case{ic[0]}"), enumerate(cases)))
    wrong = [f"{case.name}: {why}" for case, why in zip(cases, outcomes, strict=True) if why is not None]
    assert not wrong, "\n\n".join(wrong)


def test_every_command_is_in_the_matrix():
    """A command that reads input and is missing from MATRIX fails here, not in a user's hands."""
    assert set(MATRIX) == {*commands.modules(), "inspect", "export"}
