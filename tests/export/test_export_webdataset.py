"""tfr-export --to webdataset: tar shards that webdataset itself reads back, sample for
sample: pictures as their stored bytes, labels as .cls, the rest as .json; the path rule
on keys; the same bytes for any worker count."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from helpers import write_class_folders, write_mnist
from hypothesis import given, settings
from hypothesis import strategies as st

from tfr_convert.dataset.wire.example import serialize
from tfr_convert.export.webdataset import member_header
from valid_files import framed, png

wds = pytest.importorskip("webdataset")


def _samples(out: Path, split: str) -> list[dict]:
    index = json.loads((out / f"{split}.shards.json").read_text())
    urls = [str(out / s["url"]) for s in index["shardlist"]]
    samples = list(wds.WebDataset(urls, shardshuffle=False))
    assert len(samples) == sum(s["nsamples"] for s in index["shardlist"])
    return samples


def test_class_folders_come_back_through_webdataset_with_their_bytes_labels_and_names(cli, tmp_path):
    photos, dataset, out = tmp_path / "photos", tmp_path / "ds", tmp_path / "wds"
    write_class_folders(photos, ["cat", "dog", "emu"], 5, seed=0)
    assert cli.convert("images", photos, "--out", dataset, "--split", "train=0.6,test=0.4").exit_code == 0
    result = cli.export(dataset, "--to", "webdataset", "--out", out, "--shard-size", "2KB", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    names = (dataset / "label.labels.txt").read_text().split()
    seen = 0
    for split in ("train", "test"):
        assert len(summary["splits"][split]["shards"]) > 1  # cut at --shard-size
        for sample in _samples(out, split):
            key = sample["__key__"]
            assert sample["png"] == (photos / f"{key}.png").read_bytes()  # the stored bytes, not re-encoded
            assert names[int(sample["cls"])] == key.split("/")[0]
            assert json.loads(sample["json"]) == {"channels": 3, "format": "png", "height": 6, "width": 5}
            seen += 1
    assert seen == 15


def test_any_worker_count_writes_the_same_tars(cli, tmp_path):
    photos, dataset = tmp_path / "photos", tmp_path / "ds"
    write_class_folders(photos, ["a", "b"], 40, seed=1)
    assert cli.convert("images", photos, "--out", dataset).exit_code == 0
    outs = []
    for workers in ("1", "3"):
        out = tmp_path / f"w{workers}"
        assert (
            cli.export(
                dataset, "--to", "webdataset", "--out", out, "--workers", workers, "--shard-size", "8KB"
            ).exit_code
            == 0
        )
        outs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert outs[0] == outs[1] and len(outs[0]) > 3


def test_raw_pixels_become_npy_and_records_without_a_name_are_keyed_by_their_place(cli, tmp_path):
    src, dataset, out = tmp_path / "src", tmp_path / "ds", tmp_path / "wds"
    arrays = write_mnist(src, n_train=6, n_test=2)
    assert cli.convert("mnist", src, "--out", dataset, "--no-shuffle").exit_code == 0
    assert cli.export(dataset, "--to", "webdataset", "--out", out).exit_code == 0
    samples = _samples(out, "train")
    assert [s["__key__"] for s in samples] == [f"{i:08d}" for i in range(6)]
    pixels = np.load(io.BytesIO(samples[2]["npy"]))
    assert pixels.shape == (28, 28, 1) and np.array_equal(pixels[..., 0], arrays["train"][0][2])
    assert int(samples[2]["cls"]) == arrays["train"][1][2]


def _records(path: Path, names: list[str]) -> Path:
    path.write_bytes(
        framed([serialize({"image": png(seed=i), "filename": n, "note": b"\xff\x00"}) for i, n in enumerate(names)])
    )
    return path


@pytest.mark.parametrize(
    ("names", "said"),
    [
        (["ok.png", "../up.png"], "is not a relative path inside the output"),
        (["ok.png", "/abs/x.png"], "is not a relative path inside the output (is absolute"),
        (["a/x.png", "a/x.jpg"], "its key 'a/x' (from its file name) repeats an earlier record's"),
    ],
)
def test_a_key_that_would_climb_out_or_repeat_is_refused_naming_the_record(cli, tmp_path, names, said):
    out = tmp_path / "wds"
    result = cli.export(_records(tmp_path / "in.tfrecord", names), "--to", "webdataset", "--out", out)
    assert result.exit_code == 1 and said in result.output, result.output
    assert "in.tfrecord" in result.output and "record 1" in result.output
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.tfrecord", *(["wds"] if out.exists() else [])]


def test_bytes_that_are_not_text_ride_in_the_json_as_base64(cli, tmp_path):
    out = tmp_path / "wds"
    assert cli.export(_records(tmp_path / "in.tfrecord", ["x.png"]), "--to", "webdataset", "--out", out).exit_code == 0
    (sample,) = _samples(out, "train")
    assert json.loads(sample["json"]) == {"note": {"base64": "/wA="}}


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=260),
    st.integers(0, 8**11 + 5) | st.integers(0, 1 << 20),
)
def test_a_member_header_is_tarfiles_own_for_any_name_and_size(name, size):
    """The fast header (the export's) against tarfile's GNU format: long names, non-ASCII
    names, sizes past the octal field's."""
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o444, 0
    assert member_header(name, size) == info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


def test_a_tar_of_large_and_small_members_is_the_tar_tarfile_writes_of_them(cli, tmp_path):
    """Members of 4 KiB and more are written on their own and the rest gathered with the
    headers and paddings: the file is still tarfile's, byte for byte."""
    from PIL import Image

    rng = np.random.default_rng(3)
    for n in range(12):
        folder = tmp_path / "pics" / f"c{n % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        side = 64 if n % 3 else 4  # noise PNGs of about 12 KiB, and of a few hundred bytes
        Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)).save(folder / f"{n:02d}.png")
    dataset, out = tmp_path / "ds", tmp_path / "out"
    assert cli.convert("images", tmp_path / "pics", "--out", dataset, "--no-shuffle").exit_code == 0
    assert cli.export(dataset, "--to", "webdataset", "--out", out, "--shard-size", "40KB").exit_code == 0
    tars = sorted(out.glob("*.tar"))
    assert len(tars) > 1
    sizes = []
    for path in tars:
        with tarfile.open(path) as written:
            members = [(m.name, written.extractfile(m).read()) for m in written.getmembers()]
        again = io.BytesIO()
        with tarfile.open(fileobj=again, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), 0o444, 0
                tar.addfile(info, io.BytesIO(data))
        assert path.read_bytes() == again.getvalue(), path.name
        sizes += [len(data) for _, data in members]
    assert max(sizes) >= 4096 > min(sizes)  # both ways of writing a member


def test_the_export_moves_a_pictures_bytes_without_importing_numpy(cli, tmp_path):
    """Start-up time: numpy is imported where pixels are (raw pictures to .npy, --to
    images' PNGs), not for a folder of photos kept as they are."""
    import subprocess
    import sys

    write_class_folders(tmp_path / "photos", ["cat", "dog"], 3, seed=4)
    assert cli.convert("images", tmp_path / "photos", "--out", tmp_path / "ds").exit_code == 0
    code = (
        "import sys; from tfr_convert.cli.export import export; "
        f"export([{str(tmp_path / 'ds')!r}, '--to', 'webdataset', '--out', {str(tmp_path / 'w')!r}, '--quiet'], "
        "standalone_mode=False); print('numpy' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "False"
    assert len(list((tmp_path / "w").glob("train-*.tar"))) >= 1
