"""Remote paths against real object stores started on 127.0.0.1 (tests/object_stores.py):
SeaweedFS's S3 gateway and fake-gcs-server, reached through fsspec (s3fs, gcsfs) with
each backend's own environment variables, by real tfr-convert processes.

Every converter reads from and writes to s3://, and gives the bytes of the same
conversion done on local files; gs:// is tried with a converter and the inspector.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import hint, write_cifar, write_mnist
from object_stores import download_tree, upload_tree
from PIL import Image

SCRIPTS = Path(sysconfig.get_path("scripts"))


def run(bucket, command: str, *args, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPTS / command), *map(str, args)], capture_output=True, text=True,
                          env=env or bucket.env, timeout=300)  # fmt: skip


def local_files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def same_dataset(remote: dict[str, bytes], local: dict[str, bytes], renamed: tuple[str, str] | None = None) -> None:
    """The same files, byte for byte; `renamed`: (a local input's path, the remote one), as
    warnings in the manifest name them."""
    assert sorted(remote) == sorted(local)
    for name in local:
        expected = local[name]
        if renamed and name == "manifest.json":
            expected = expected.replace(renamed[0].encode(), renamed[1].encode())
        assert remote[name] == expected, name


def class_folders_with_csv(root: Path) -> Path:
    """Images in class folders (JPEG and PNG, varied sizes) and a labels.csv with an extra column."""
    rows = ["file,label,weight"]
    for c, cls in enumerate(("cat", "dog", "owl")):
        (root / cls).mkdir(parents=True)
        for i in range(5):
            fmt = "JPEG" if i % 2 else "PNG"
            name = f"{cls}/{i:03d}.{fmt.lower()[:3]}"
            Image.new("RGB", (8 + i, 9 + c), (i * 40, c * 60, 7)).save(root / name, fmt)
            rows.append(f"{name},{cls},{i}.5")
    (root / "labels.csv").write_text("\n".join(rows) + "\n")
    return root


# ---------------------------------------------------------------- every converter, to and from s3://


def test_mnist_from_and_to_s3_gives_the_local_runs_bytes(s3, tmp_path):
    write_mnist(tmp_path / "src")
    upload_tree(s3.fs, tmp_path / "src", f"{s3.name}/mnist-src")
    common = ["--validation-size", 8, "--num-shards", 2, "--quiet"]
    local = run(s3, "tfr-convert", "mnist", tmp_path / "src", "--out", tmp_path / "local", *common)
    remote = run(s3, "tfr-convert", "mnist", f"{s3.url}/mnist-src", "--out", f"{s3.url}/mnist", *common)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    # shards and every metadata file (sources are named by file name and sha256)
    same_dataset(download_tree(s3.fs, f"{s3.name}/mnist"), local_files(tmp_path / "local"))


def test_cifar_archive_from_s3_to_s3_gives_the_local_runs_bytes(s3, tmp_path):
    archive = write_cifar(tmp_path / "src", archive=True)["path"]
    s3.fs.pipe_file(f"{s3.name}/in/{archive.name}", archive.read_bytes())
    local = run(s3, "tfr-convert", "cifar", archive, "--out", tmp_path / "local", "--quiet")
    remote = run(s3, "tfr-convert", "cifar", f"{s3.url}/in/{archive.name}", "--out", f"{s3.url}/cifar", "--quiet")
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    same_dataset(download_tree(s3.fs, f"{s3.name}/cifar"), local_files(tmp_path / "local"))


def test_images_and_csv_read_in_place_on_s3_give_the_local_runs_bytes(s3, tmp_path):
    src = class_folders_with_csv(tmp_path / "pets")
    upload_tree(s3.fs, src, f"{s3.name}/pets")
    common = ["--label-column", "label", "--split", "train=0.6,test=0.4", "--image-format", "png",
              "--examples-per-shard", 4, "--workers", 2, "--quiet"]  # fmt: skip
    local = run(s3, "tfr-convert", "images", src, "--labels", src / "labels.csv", "--out", tmp_path / "local", *common)
    remote = run(s3, "tfr-convert", "images", f"{s3.url}/pets", "--labels", f"{s3.url}/pets/labels.csv",
                 "--out", f"{s3.url}/out", *common)  # fmt: skip
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    same_dataset(download_tree(s3.fs, f"{s3.name}/out"), local_files(tmp_path / "local"))


def test_class_folders_on_s3_keep_mode_give_the_local_runs_bytes(s3, tmp_path):
    src = class_folders_with_csv(tmp_path / "pets")
    (src / "labels.csv").unlink()
    upload_tree(s3.fs, src, f"{s3.name}/pets")
    local = run(s3, "tfr-convert", "images", src, "--out", tmp_path / "local", "--quiet")
    remote = run(s3, "tfr-convert", "images", f"{s3.url}/pets", "--out", f"{s3.url}/out", "--quiet")
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    same_dataset(download_tree(s3.fs, f"{s3.name}/out"), local_files(tmp_path / "local"))


@pytest.mark.parametrize("fmt", ["csv", "coco", "voc"])
def test_detection_from_and_to_s3_gives_the_local_runs_bytes(s3, tmp_path, fmt):
    from detection_inputs import WRITERS, write_images

    images = write_images(tmp_path / "shop" / "images")  # named "shop" by default, here and in the bucket
    annotations = WRITERS[fmt](tmp_path)
    upload_tree(s3.fs, images, f"{s3.name}/shop/images")
    if annotations.is_dir():
        upload_tree(s3.fs, annotations, f"{s3.name}/{annotations.name}")
    else:
        s3.fs.pipe_file(f"{s3.name}/{annotations.name}", annotations.read_bytes())
    origin = ["--voc-origin", "1"] if fmt == "voc" else []  # the fixture counts VOC pixels from 1, as the devkit
    local = run(s3, "tfr-convert", "detection", images, "--annotations", annotations, "--out", tmp_path / "local",
                "--quiet", *origin)  # fmt: skip
    remote = run(s3, "tfr-convert", "detection", f"{s3.url}/shop/images", "--annotations", f"{s3.url}/{annotations.name}",
                 "--out", f"{s3.url}/out", "--quiet", *origin)  # fmt: skip
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    same_dataset(
        download_tree(s3.fs, f"{s3.name}/out"), local_files(tmp_path / "local"), (str(images), f"{s3.url}/shop/images")
    )
    assert "without boxes" in json.loads(s3.fs.cat_file(f"{s3.name}/out/manifest.json"))["warnings"][0]


def test_a_bad_remote_annotation_is_named_by_its_remote_path(s3, tmp_path):
    from detection_inputs import write_csv, write_images

    images = write_images(tmp_path / "images")
    upload_tree(s3.fs, images, f"{s3.name}/images")
    csv = write_csv(tmp_path / "boxes.csv")
    s3.fs.pipe_file(f"{s3.name}/boxes.csv", csv.read_bytes().replace(b",cat,2,", b",cat,x,"))
    result = run(s3, "tfr-convert", "detection", f"{s3.url}/images", "--annotations", f"{s3.url}/boxes.csv",
                 "--out", f"{s3.url}/out")  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert f"{s3.url}/boxes.csv line 2: xmin" in result.stderr and "/tmp" not in result.stderr
    assert not s3.fs.exists(f"{s3.name}/out/dataset_info.json")


def test_a_missing_remote_source_is_exit_1_naming_it(s3, tmp_path):
    result = run(s3, "tfr-convert", "mnist", f"{s3.url}/nowhere", "--out", f"{s3.url}/out")
    assert result.returncode == 1 and f"{s3.url}/nowhere" in result.stderr and "Traceback" not in result.stderr


def test_array_record_to_s3_and_index_files_beside_remote_shards(s3, tmp_path):
    pytest.importorskip("array_record")
    write_mnist(tmp_path / "src")
    common = ["mnist", tmp_path / "src", "--format", "array_record", "--num-shards", 2, "--quiet"]
    assert run(s3, "tfr-convert", *common, "--out", tmp_path / "local").returncode == 0
    remote = run(s3, "tfr-convert", *common, "--out", f"{s3.url}/ar")
    assert remote.returncode == 0, remote.stderr
    same_dataset(download_tree(s3.fs, f"{s3.name}/ar"), local_files(tmp_path / "local"))
    here = run(s3, "tfr-inspect", tmp_path / "local", "--verify", "--json")
    there = run(s3, "tfr-inspect", f"{s3.url}/ar", "--verify", "--json")
    assert there.returncode == 0 and there.stdout == here.stdout.replace(str(tmp_path / "local"), f"{s3.url}/ar")
    indexed = run(s3, "tfr-convert", "mnist", tmp_path / "src", "--out", f"{s3.url}/tf", "--index", "--num-shards", 1)
    assert indexed.returncode == 0, indexed.stderr
    assert run(s3, "tfr-convert", "mnist", tmp_path / "src", "--out", tmp_path / "tf", "--index", "--num-shards", 1,
               "--quiet").returncode == 0  # fmt: skip
    same_dataset(download_tree(s3.fs, f"{s3.name}/tf"), local_files(tmp_path / "tf"))
    assert any(name.endswith(".index") for name in local_files(tmp_path / "tf"))


# ---------------------------------------------------------------- gs://


def test_mnist_to_gcs_and_inspected_there(gcs, tmp_path):
    write_mnist(tmp_path / "src")
    upload_tree(gcs.fs, tmp_path / "src", f"{gcs.name}/src")
    local = run(gcs, "tfr-convert", "mnist", tmp_path / "src", "--out", tmp_path / "local", "--num-shards", 2)
    remote = run(gcs, "tfr-convert", "mnist", f"{gcs.url}/src", "--out", f"{gcs.url}/mnist", "--num-shards", 2)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    same_dataset(download_tree(gcs.fs, f"{gcs.name}/mnist"), local_files(tmp_path / "local"))
    for mode in (["--verify"], ["--count"], ["--stats"], ["--head", "2"]):
        here = run(gcs, "tfr-inspect", tmp_path / "local", *mode, "--json")
        there = run(gcs, "tfr-inspect", f"{gcs.url}/mnist", *mode, "--json")
        assert there.returncode == 0, there.stderr
        assert there.stdout == here.stdout.replace(str(tmp_path / "local"), f"{gcs.url}/mnist"), mode


# ---------------------------------------------------------------- tfr-inspect, streaming


def test_inspect_reads_an_s3_dataset_in_place_in_every_mode(s3, tmp_path):
    write_mnist(tmp_path / "src")
    assert run(s3, "tfr-convert", "mnist", tmp_path / "src", "--out", tmp_path / "local", "--num-shards", 2,
               "--quiet").returncode == 0  # fmt: skip
    upload_tree(s3.fs, tmp_path / "local", f"{s3.name}/mnist")
    there, here = f"{s3.url}/mnist", str(tmp_path / "local")

    def both(target: str, mode: list[str]) -> None:
        remote = run(s3, "tfr-inspect", there + target, *mode, "--json")
        local = run(s3, "tfr-inspect", here + target, *mode, "--json")
        assert remote.returncode == local.returncode, (target, mode, remote.stderr)
        assert remote.stdout == local.stdout.replace(here, there), (target, mode)
        assert remote.stdout and not remote.stderr

    cases = [(target, mode) for target in ("", "/mnist-train.tfrecord-*", "/mnist-test.tfrecord-00001-of-00002")
             for mode in ([], ["--count"], ["--verify"], ["--stats"], ["--head", "3"])]  # fmt: skip
    with ThreadPoolExecutor(3) as pool:  # each its own processes, waiting on the store as much as working
        for done in [pool.submit(both, *case) for case in cases]:
            done.result()
    grid = run(s3, "tfr-inspect", there, "--grid", f"{there}/grid.png")
    assert grid.returncode == 0, grid.stderr
    assert s3.fs.cat_file(f"{s3.name}/mnist/grid.png")[:8] == b"\x89PNG\r\n\x1a\n"
    report = run(s3, "tfr-inspect", there, "--report", f"{there}/report.html", "--json")
    assert report.returncode == 0, report.stderr
    local_report = run(s3, "tfr-inspect", here, "--report", tmp_path / "report.html", "--json")
    page = s3.fs.cat_file(f"{s3.name}/mnist/report.html").decode()
    assert page.replace(there, here) == (tmp_path / "report.html").read_text()
    assert json.loads(report.stdout)["thumbnails"] == json.loads(local_report.stdout)["thumbnails"] > 0


# ---------------------------------------------------------------- tfr-export, to and from a bucket


def test_export_to_s3_writes_the_local_exports_files_for_every_target(s3, tmp_path):
    from detection_inputs import write_coco, write_images

    write_mnist(tmp_path / "src")
    assert run(s3, "tfr-convert", "mnist", tmp_path / "src", "--out", tmp_path / "digits", "--num-shards", 2,
               "--quiet").returncode == 0  # fmt: skip
    images = write_images(tmp_path / "pets")
    assert run(s3, "tfr-convert", "detection", images, "--annotations", write_coco(tmp_path / "c.json"), "--out",
               tmp_path / "pets-ds", "--quiet").returncode == 0  # fmt: skip
    upload_tree(s3.fs, tmp_path / "digits", f"{s3.name}/digits")

    def both(dataset: str, target: list[str]) -> None:
        name = "-".join(target)
        local = run(s3, "tfr-export", tmp_path / dataset, "--to", *target, "--out", tmp_path / name, "--workers", 2)
        remote = run(s3, "tfr-export", tmp_path / dataset, "--to", *target, "--out", f"{s3.url}/{name}",
                     "--workers", 2)  # fmt: skip
        assert local.returncode == 0 and remote.returncode == 0, remote.stderr
        assert download_tree(s3.fs, f"{s3.name}/{name}") == local_files(tmp_path / name), name
        assert remote.stdout == local.stdout.replace(str(tmp_path / name), f"{s3.url}/{name}")

    cases = [("digits", ["images"]), ("digits", ["images", "--layout", "csv"]), ("digits", ["parquet"]),
             ("pets-ds", ["coco"]), ("pets-ds", ["yolo"]), ("pets-ds", ["webdataset"]), ("digits", ["hf"])]  # fmt: skip
    with ThreadPoolExecutor(3) as pool:
        for done in [pool.submit(both, *case) for case in cases]:
            done.result()
    # read from the bucket too, on spawned workers: the same files again
    both = run(s3, "tfr-export", f"{s3.url}/digits", "--to", "images", "--layout", "csv", "--out",
               f"{s3.url}/again", "--workers", 2)  # fmt: skip
    assert both.returncode == 0, both.stderr
    assert download_tree(s3.fs, f"{s3.name}/again") == local_files(tmp_path / "images---layout-csv")


def test_verify_names_a_corrupted_object_and_the_byte_offset(s3, tmp_path):
    from tfr_convert.containers.scan import scan_records

    write_mnist(tmp_path / "src")
    out = f"{s3.url}/mnist"
    assert run(s3, "tfr-convert", "mnist", tmp_path / "src", "--out", out, "--num-shards", 2).returncode == 0
    key = f"{s3.name}/mnist/mnist-train.tfrecord-00001-of-00002"
    data = bytearray(s3.fs.cat_file(key))
    (tmp_path / "shard").write_bytes(data)
    fourth = [r.offset for r in scan_records(str(tmp_path / "shard"))][3]
    data[fourth + 100] ^= 0xFF  # inside the fourth record's payload
    s3.fs.pipe_file(key, bytes(data))
    result = run(s3, "tfr-inspect", out, "--verify")
    assert result.returncode == 1
    assert f"FAIL  s3://{key}: record 3 at byte offset {fourth}: data_crc" in result.stdout
    assert "sha256 differs from manifest.json" in result.stdout


def test_a_scheme_whose_backend_is_missing_is_exit_2_naming_the_extra(tmp_path):
    fake = tmp_path / "fake" / "adlfs"  # the [azure] extra's backend, made absent for real
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named adlfs')\n")
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    write_mnist(tmp_path / "src")
    for command, args in (("tfr-inspect", ["az://box/data"]),
                          ("tfr-convert", ["mnist", tmp_path / "src", "--out", "az://box/out"])):  # fmt: skip
        result = subprocess.run([str(SCRIPTS / command), *map(str, args)], capture_output=True, text=True, env=env,
                                timeout=120)  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert hint("azure") in result.stderr and "Traceback" not in result.stderr
    unknown = subprocess.run(
        [str(SCRIPTS / "tfr-inspect"), "nosuch://x/y"], capture_output=True, text=True, timeout=120
    )
    assert unknown.returncode == 2 and "no filesystem is known for nosuch://" in unknown.stderr


def test_storage_options_reach_the_store_without_environment(s3, s3_server, tmp_path):
    write_mnist(tmp_path / "src")
    bare = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    options = json.dumps({"s3": {"endpoint_url": s3_server.endpoint, "key": "tfr-test-key",
                                 "secret": "tfr-test-secret"}})  # fmt: skip
    result = run(s3, "tfr-convert", "mnist", tmp_path / "src", "--out", f"{s3.url}/o", "--storage-options", options,
                 "--workers", 2, env=bare)  # fmt: skip
    assert result.returncode == 0, result.stderr
    inspected = run(s3, "tfr-inspect", f"{s3.url}/o", "--verify", "--storage-options", options, env=bare)
    assert inspected.returncode == 0, inspected.stderr
    bad = run(s3, "tfr-inspect", f"{s3.url}/o", "--storage-options", "[1, 2]", env=bare)
    assert bad.returncode == 2 and "JSON object" in bad.stderr


# ---------------------------------------------------------------- Beam on several worker processes


def _beam_on_s3(s3, tmp_path, beam_options: str, env: dict[str, str]) -> None:
    """An image folder on S3 converted by Beam with `beam_options` to S3, without TensorFlow: the
    local engine's bytes, and nothing from the runner or its workers on the terminal with --quiet."""
    pytest.importorskip("apache_beam")
    env = {**s3.env, "PYTHONPATH": env["PYTHONPATH"]}
    src = class_folders_with_csv(tmp_path / "pets")
    upload_tree(s3.fs, src, f"{s3.name}/pets")
    common = ["images", f"{s3.url}/pets", "--labels", f"{s3.url}/pets/labels.csv", "--label-column", "label",
              "--split", "train=0.6,test=0.4", "--image-format", "png", "--examples-per-shard", 3, "--quiet"]  # fmt: skip
    local = run(s3, "tfr-convert", *common, "--out", f"{s3.url}/local")
    beam = run(
        s3, "tfr-convert", *common, "--out", f"{s3.url}/beam", "--engine", "beam", "--beam-options", beam_options
    )
    assert local.returncode == 0 and beam.returncode == 0, beam.stderr
    assert beam.stderr == ""
    written = download_tree(s3.fs, f"{s3.name}/beam")
    assert len([n for n in written if ".tfrecord-" in n]) == 5
    assert written == download_tree(s3.fs, f"{s3.name}/local")


def test_beam_direct_runner_on_two_worker_processes_writes_the_local_engines_bytes_to_s3(s3, tmp_path, no_tensorflow):
    _beam_on_s3(s3, tmp_path, "--direct_running_mode=multi_processing --direct_num_workers=2", no_tensorflow)


def test_beam_dask_runner_on_two_worker_processes_writes_the_local_engines_bytes_to_s3(s3, tmp_path, no_tensorflow):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:  # fmt: skip
        with distributed.Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            pids = set(client.run(os.getpid).values())
        assert len(pids) == 2 and os.getpid() not in pids  # two processes besides this one
        _beam_on_s3(s3, tmp_path, "--runner=apache_beam.runners.dask.dask_runner.DaskRunner "
                                  f"--dask_client_address={cluster.scheduler_address}", no_tensorflow)  # fmt: skip


def test_tables_read_from_s3_give_the_local_runs_shards(s3, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    src = tmp_path / "tables"
    (src / "pq").mkdir(parents=True)
    pq.write_table(pa.table({"x": list(range(30)), "s": [f"r{i}" for i in range(30)]}), src / "pq" / "train.parquet")
    pq.write_table(pa.table({"x": [100, 101], "s": ["t0", "t1"]}), src / "pq" / "test.parquet")
    (src / "rows.csv").write_text("x,s\n" + "".join(f"{i},c{i}\n" for i in range(12)))
    upload_tree(s3.fs, src, f"{s3.name}/tables")
    for name, args in (("pq", []), ("rows.csv", ["--split", "train=0.5,test=0.5"])):
        common = [*args, "--workers", 2, "--quiet", "--name", "t"]
        local = run(s3, "tfr-convert", "table", src / name, "--out", tmp_path / f"local-{name}", *common)
        remote = run(s3, "tfr-convert", "table", f"{s3.url}/tables/{name}", "--out", f"{s3.url}/out-{name}", *common)
        assert local.returncode == 0 and remote.returncode == 0, remote.stderr
        got = download_tree(s3.fs, f"{s3.name}/out-{name}")
        shards = {k: v for k, v in local_files(tmp_path / f"local-{name}").items() if ".tfrecord-" in k}
        assert len(shards) == 2 and {k: got[k] for k in shards} == shards
