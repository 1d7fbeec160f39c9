"""tfr-convert webdataset: shards written by webdataset itself, read back through TFDS;
splits from shard names, brace patterns, a truncated last shard, --map and --classes."""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

wds = pytest.importorskip("webdataset")


def _png(seed: int, size=(5, 6)) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (*size, 3), dtype=np.uint8)).save(buffer, "PNG")
    return buffer.getvalue()


def _shards(root: Path, names: list[str], per_shard: int = 4, **extra) -> dict[str, dict]:
    """Shards written with webdataset's TarWriter: {key: the sample written}."""
    root.mkdir(parents=True, exist_ok=True)
    written = {}
    for s, name in enumerate(names):
        with wds.TarWriter(str(root / name)) as sink:
            for i in range(per_shard):
                key = f"{name.split('.')[0]}/{i:04d}"
                sample = {"__key__": key, "png": _png(10 * s + i), "cls": (i + s) % 3,
                          "json": {"caption": f"a photo {s}.{i}", "meta": {"score": 0.25 * i}}}  # fmt: skip
                sample |= {k: (v(i) if callable(v) else v) for k, v in extra.items()}
                sink.write(sample)
                written[key] = sample
    return written


def test_samples_come_back_through_tfds_with_their_bytes_labels_fields_and_splits(cli, tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    written = _shards(tmp_path / "in", ["train-0.tar", "train-1.tar", "val-0.tar"])
    result = cli.convert(
        "webdataset", tmp_path / "in" / "{train-{0..1},val-0}.tar", "--out", tmp_path / "out", "--json"
    )
    assert result.exit_code == 0, result.output
    assert {s: v["examples"] for s, v in json.loads(result.stdout)["splits"].items()} == {"train": 8, "validation": 4}
    builder = tfds.builder_from_directory(str(tmp_path / "out"))
    assert builder.info.features["label"].names == ["0", "1", "2"]
    seen = 0
    for split in ("train", "validation"):
        for e in tfds.as_numpy(builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})):
            key = e["filename"].decode().rsplit(".", 1)[0]
            sample = written[key]
            assert e["image"] == sample["png"] and e["label"] == sample["cls"]
            assert e["caption"].decode() == sample["json"]["caption"]
            assert e["meta/score"] == pytest.approx(sample["json"]["meta"]["score"])
            assert (e["height"], e["width"], e["format"]) == (5, 6, b"png")
            seen += 1
    assert seen == 12


def test_a_last_shard_cut_short_keeps_the_samples_before_the_cut_and_says_what_was_lost(cli, tmp_path):
    _shards(tmp_path / "in", ["a.tar", "b.tar"])
    cut = tmp_path / "in" / "b.tar"
    data = cut.read_bytes()
    cut.write_bytes(data[: data.index(b"b/0002.png") + 512 + 40])  # inside the third sample's picture
    result = cli.convert("webdataset", tmp_path / "in" / "*.tar", "--out", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["splits"]["train"]["examples"] == 6  # 4 of a.tar, 2 of b.tar
    (said,) = [w for w in summary["warnings"] if "b.tar" in w]
    assert "member 'b/0002.png' claims" in said and "past the end of the file" in said
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert said in manifest["warnings"]
    cut.write_bytes(data[: data.index(b"b/0002.png") + 700])  # in the padding after its picture: the header to come
    result = cli.convert("webdataset", tmp_path / "in" / "*.tar", "--out", tmp_path / "again", "--json")
    summary = json.loads(result.stdout)
    assert summary["splits"]["train"]["examples"] == 6  # its sample may lack members: lost too
    assert any("ends inside a member or its header" in w and "the sample 'b/0002'" in w for w in summary["warnings"])


def test_gzipped_shards_give_the_bytes_plain_ones_give_and_one_cut_short_keeps_what_came_before(cli, tmp_path):
    import gzip

    _shards(tmp_path / "plain", ["train-0.tar", "train-1.tar"])
    (tmp_path / "gz").mkdir()
    for name in ("train-0.tar", "train-1.tar"):
        data = (tmp_path / "plain" / name).read_bytes()
        (tmp_path / "gz" / f"{name}.gz").write_bytes(gzip.compress(data[:2000]) + gzip.compress(data[2000:]))
    plain = cli.convert("webdataset", tmp_path / "plain" / "*.tar", "--out", tmp_path / "a", "--name", "ds")
    zipped = cli.convert("webdataset", tmp_path / "gz" / "*.tar.gz", "--out", tmp_path / "b", "--name", "ds")
    assert plain.exit_code == 0 and zipped.exit_code == 0, zipped.output
    shards = sorted(p.name for p in (tmp_path / "a").glob("ds-*"))
    assert shards and all((tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes() for n in shards)
    assert not [p for p in Path(tempfile.gettempdir()).glob("tfr-convert-gunzip-*") if p.stat().st_uid == os.getuid()
                and p.stat().st_mtime > (tmp_path / "b").stat().st_mtime - 60]  # fmt: skip
    cut = tmp_path / "gz" / "train-1.tar.gz"
    whole = gzip.compress((tmp_path / "plain" / "train-1.tar").read_bytes())
    cut.write_bytes(whole[: len(whole) * 3 // 5])
    result = cli.convert("webdataset", tmp_path / "gz" / "*.tar.gz", "--out", tmp_path / "c", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert 4 < summary["splits"]["train"]["examples"] < 8  # train-0's 4, and train-1's before the cut
    assert any("train-1.tar.gz: its gzip stream ends before its end" in w for w in summary["warnings"])
    assert any(
        "train-1.tar.gz: ends inside a member" in w or "train-1.tar.gz: member" in w for w in summary["warnings"]
    )


def test_json_fields_chooses_the_fields_or_keeps_the_json_whole_and_cls2_is_a_label(cli, tmp_path):
    written = _shards(tmp_path / "in", ["train-0.tar"], cls2=lambda i: 2 - i % 3)
    for sample in written.values():
        del sample["cls"]
    for name in ("train-0.tar",):  # the same samples, .cls2 their only label
        with wds.TarWriter(str(tmp_path / "in" / name)) as sink:
            for sample in written.values():
                sink.write(sample)
    picked = cli.convert("webdataset", tmp_path / "in" / "train-0.tar", "--out", tmp_path / "a",
                         "--json-fields", "meta/score", "--json")  # fmt: skip
    assert picked.exit_code == 0, picked.output
    features = json.loads((tmp_path / "a" / "features.json").read_text())["featuresDict"]["features"]
    assert "meta/score" in features and "caption" not in features and "label" in features
    records = _records(tmp_path / "a")
    assert sorted(r["label"] for r in records) == sorted(s["cls2"] for s in written.values())
    whole = cli.convert("webdataset", tmp_path / "in" / "train-0.tar", "--out", tmp_path / "b", "--json-fields", "none")
    assert whole.exit_code == 0, whole.output
    by_name = {r["filename"].rsplit(".", 1)[0]: r for r in _records(tmp_path / "b")}
    assert all(json.loads(by_name[k]["json"]) == s["json"] for k, s in written.items())
    missing = cli.convert("webdataset", tmp_path / "in" / "train-0.tar", "--out", tmp_path / "c",
                          "--json-fields", "caption,nope")  # fmt: skip
    assert missing.exit_code == 2 and "--json-fields nope" in missing.stderr and "caption" in missing.stderr
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())


def _records(out: Path) -> list[dict]:
    from tfr_convert.containers import of_file
    from tfr_convert.dataset.wire.example import parse

    found = []
    for shard in sorted(out.glob("*.tfrecord-*")):
        for record in of_file(str(shard)).records(str(shard), 1 << 30):
            values = {k: v[1] for k, v in parse(record.data).items()}
            found.append({k: (v[0].decode() if isinstance(v[0], bytes) and k != "image" else v[0]) if len(v) == 1
                          else v for k, v in values.items()})  # fmt: skip
    return found


def test_map_names_a_members_feature_and_classes_names_the_ids(cli, tmp_path):
    _shards(tmp_path / "in", ["s.tar"], per_shard=6, txt=lambda i: ["cat", "dog"][i % 2],
            npy=lambda i: np.arange(4, dtype=np.int16) * i)  # fmt: skip
    (tmp_path / "names.txt").write_text("cat\ndog\n")
    args = ["webdataset", tmp_path / "in" / "s.tar", "--map", "txt=label", "--map", "cls=old_class", "--classes",
            tmp_path / "names.txt", "--split", "train=0.5,test=0.5", "--out", tmp_path / "out"]  # fmt: skip
    result = cli.convert(*args)
    assert result.exit_code == 0, result.output
    from tfr_convert import containers
    from tfr_convert.dataset.wire.example import parse

    labels = {}
    for shard in (tmp_path / "out").glob("*.tfrecord-*"):
        for record in containers.get("tfrecord").records(str(shard)):
            e = parse(record.data)
            i = int(e["filename"][1][0].decode().split("/")[1].split(".")[0])
            labels[i] = e["label"][1][0]
            assert e["old_class"][1] == [str(i % 3).encode()]
            assert list(e["npy"][1]) == [0, i, 2 * i, 3 * i]
    assert labels == {i: i % 2 for i in range(6)}
    assert (tmp_path / "out" / "label.labels.txt").read_text() == "cat\ndog\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["{dir}/missing-{0..2}.tar"], "missing-0.tar: no such shard or glob match"),
        (["{dir}/s.tar", "--map", "png"], "is not EXT=FEATURE"),
        (["{dir}/s.tar", "--map", "a=x", "--map", "a=y"], "--map names an extension twice"),
    ],
)
def test_bad_arguments_are_named(cli, tmp_path, args, said):
    _shards(tmp_path, ["s.tar"], per_shard=1)
    result = cli.convert("webdataset", *[a.replace("{dir}", str(tmp_path)) for a in args], "--out", tmp_path / "o")
    assert result.exit_code in (1, 2) and said in result.output and "Traceback" not in result.output, result.output


def test_shards_in_a_bucket_convert_to_the_bytes_local_ones_give(cli, tmp_path, s3):
    _shards(tmp_path / "in", ["train-0.tar", "val-0.tar"])
    for shard in (tmp_path / "in").iterdir():
        s3.fs.pipe_file(f"{s3.name}/in/{shard.name}", shard.read_bytes())
    local = cli.convert("webdataset", tmp_path / "in" / "*.tar", "--out", tmp_path / "local", "--name", "ds")
    remote = cli.convert("webdataset", f"s3://{s3.name}/in/{{train,val}}-0.tar", "--out", tmp_path / "remote",
                         "--name", "ds")  # fmt: skip
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    shards = sorted(p.name for p in (tmp_path / "local").glob("ds-*"))
    assert len(shards) == 2
    assert all((tmp_path / "local" / n).read_bytes() == (tmp_path / "remote" / n).read_bytes() for n in shards)


@pytest.mark.parametrize("form", ["GNU_FORMAT", "PAX_FORMAT", "USTAR_FORMAT"])
def test_the_header_reader_lists_what_tarfile_lists(tmp_path, form):
    """converters/webdataset/tars.py reads headers itself (tarfile's walk is the slow part of
    a listing): held to tarfile's own members, long and non-ASCII names included."""
    import tarfile

    from tfr_convert.converters.webdataset.tars import entries

    path = tmp_path / "x.tar"
    names = ["a.png", "d/" + "long" * 40 + ".json", "été/ü.cls", "p" * 90 + "/q" * 40 + ".txt"]
    if form == "USTAR_FORMAT":
        names = [n for n in names if n.isascii() and len(n) < 100]
    with tarfile.open(path, "w", format=getattr(tarfile, form)) as tar:
        folder = tarfile.TarInfo("d")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for i, name in enumerate(names):
            info = tarfile.TarInfo(name)
            info.size = 100 * i + 3
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    with tarfile.open(path) as tar:
        expected = [(m.name, m.offset_data, m.size) for m in tar.getmembers()]
    with open(path, "rb") as f:
        got = [(e.name, e.offset, e.size) for e in entries(f, path.stat().st_size, str(path))]
    assert got == expected
