"""A throw-away local S3 + DynamoDB server (moto's ``moto_server``) for the
external manifest store tests (``s3+ddb://``).

``start(log_dir)`` launches ``moto_server`` bound to 127.0.0.1 on a free
port and waits until it answers; it returns a :class:`DdbServer` whose
``storage_options`` are what a pylance user passes for it, with helpers to
create buckets and DynamoDB tables (pylance's key schema) through boto3.
``stop()`` ends the process it started. moto comes from ``moto[server]``
(installed by scripts/setup.sh); :func:`available` says whether it is.
"""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import time
from pathlib import Path

from s3_server import _free_ports, stop_process

REGION = "us-east-1"
KEY = "lanceletkey"
SECRET = "lanceletsecret"


def moto_server_binary() -> str | None:
    beside = Path(sys.executable).parent / "moto_server"
    return shutil.which("moto_server") or (str(beside) if beside.exists() else None)


def available() -> str | None:
    """None when moto's server and boto3 are installed, else why not."""
    try:
        import boto3  # noqa: F401
        import moto  # noqa: F401
    except ImportError as e:
        return f"moto[server] is not installed ({e}); scripts/setup.sh installs it"
    if moto_server_binary() is None:
        return "moto_server is not on PATH; install moto[server] (scripts/setup.sh does)"
    return None


@dataclasses.dataclass
class DdbServer:
    proc: subprocess.Popen
    endpoint: str
    log: Path

    @property
    def storage_options(self) -> dict[str, str]:
        """The options a pylance user would pass (S3 and DynamoDB here)."""
        return {
            "endpoint": self.endpoint,
            "aws_access_key_id": KEY,
            "aws_secret_access_key": SECRET,
            "region": REGION,
            "allow_http": "true",
            "dynamodb_endpoint": self.endpoint,
        }

    def client(self, service: str):
        import boto3
        return boto3.client(service, endpoint_url=self.endpoint, aws_access_key_id=KEY,
                            aws_secret_access_key=SECRET, region_name=REGION)

    def create_bucket(self, name: str) -> None:
        self.client("s3").create_bucket(Bucket=name)

    def create_table(self, name: str) -> None:
        """A table with pylance's key: HASH base_uri (S), RANGE version (N)."""
        self.client("dynamodb").create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "base_uri", "KeyType": "HASH"},
                       {"AttributeName": "version", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "base_uri", "AttributeType": "S"},
                                  {"AttributeName": "version", "AttributeType": "N"}],
            BillingMode="PAY_PER_REQUEST")

    def items(self, table: str, base_uri: str) -> list[dict]:
        """The items of one dataset, oldest version first, as DynamoDB JSON."""
        got = self.client("dynamodb").query(
            TableName=table, KeyConditionExpression="base_uri = :b",
            ExpressionAttributeValues={":b": {"S": base_uri}}, ConsistentRead=True)
        return got["Items"]

    def stop(self) -> None:
        stop_process(self.proc)


def start(log_dir: Path, timeout: float = 60.0) -> DdbServer:
    binary = moto_server_binary()
    if binary is None:
        raise RuntimeError(available())
    (port,) = _free_ports(1)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / "moto.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(port)], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = DdbServer(proc, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            server.client("s3").list_buckets()
            return server
        except Exception as e:  # not up yet
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"moto_server did not answer in {timeout}s: {e}") from e
            time.sleep(0.2)
