"""Datasets and files on S3 (a local SeaweedFS server, see s3_server.py):
lancelet and pylance write and read each other's datasets through
``storage_options``, commits stay put-if-not-exists under concurrent
writers, and storage failures are typed errors that name the URI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid

import lance
import pyarrow as pa
import pytest

import lancelet
import lancelet.file


def tbl(start, n):
    return pa.table({
        "x": pa.array(range(start, start + n), pa.int64()),
        "s": pa.array([None if i % 7 == 0 else f"v{i}" for i in range(start, start + n)], pa.string()),
    })


@pytest.fixture
def uri(s3_server, request):
    """A fresh dataset URI in the server's bucket."""
    return f"s3://lancelet/{request.node.name.replace('[', '-').rstrip(']')}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def so(s3_server):
    return s3_server.storage_options


def same_every_version(uri, so):
    ll = lancelet.dataset(uri, storage_options=so)
    assert ll.latest_version == lance.dataset(uri, storage_options=so).latest_version
    for v in range(1, ll.latest_version + 1):
        a = lance.dataset(uri, version=v, storage_options=so).to_table()
        b = lancelet.dataset(uri, version=v, storage_options=so).to_table()
        assert a.schema.remove_metadata() == b.schema.remove_metadata()
        assert a.to_pylist() == b.to_pylist(), f"version {v}"


def test_lancelet_writes_both_read(uri, so):
    ds = lancelet.write_dataset(tbl(0, 250), uri, max_rows_per_file=100, storage_options=so)
    assert ds.version == 1 and len(ds.get_fragments()) == 3
    assert ds.uri == uri
    got = lancelet.dataset(uri, storage_options=so)
    assert got.to_table() == tbl(0, 250)
    assert got.to_table(columns=["x"], filter="x >= 240")["x"].to_pylist() == list(range(240, 250))
    assert got.take([5, 199, 0])["x"].to_pylist() == [5, 199, 0]
    assert got.count_rows("s IS NULL") == 36
    theirs = lance.dataset(uri, storage_options=so)
    assert theirs.version == 1
    assert theirs.to_table() == tbl(0, 250)
    # checkout keeps the storage options
    assert got.checkout_version(1).count_rows() == 250


def test_pylance_writes_lancelet_reads(uri, so):
    lance.write_dataset(tbl(0, 30), uri, max_rows_per_file=10, storage_options=so)
    lance.write_dataset(tbl(30, 5), uri, mode="append", storage_options=so)
    lance.dataset(uri, storage_options=so).delete("x < 3 OR x = 31")
    d = lance.dataset(uri, storage_options=so)
    d.tags.create("t", 2)
    same_every_version(uri, so)
    ll = lancelet.dataset(uri, version="t", storage_options=so)
    assert ll.version == 2 and ll.count_rows() == 35
    got = lancelet.dataset(uri, storage_options=so).to_table(with_row_id=True)
    assert got["x"].to_pylist() == [x for x in range(35) if x >= 3 and x != 31]


def test_append_delete_and_pylance_on_top(uri, so):
    ds = lancelet.write_dataset(tbl(0, 20), uri, max_rows_per_file=10, storage_options=so)
    ds = lancelet.write_dataset(tbl(20, 5), uri, mode="append", storage_options=so)
    assert ds.version == 2
    ds.insert(tbl(25, 5))
    ds = lancelet.dataset(uri, storage_options=so)
    assert ds.delete("x % 4 = 0")["num_deleted_rows"] == 8
    assert ds.version == 4
    ds.tags.create("before", 3)
    lance.write_dataset(tbl(100, 3), uri, mode="append", storage_options=so)
    lance.dataset(uri, storage_options=so).delete("x = 101")
    same_every_version(uri, so)
    final = lancelet.dataset(uri, storage_options=so)
    assert final.to_table()["x"].to_pylist() == [x for x in range(30) if x % 4] + [100, 102]
    assert lancelet.dataset(uri, version="before", storage_options=so).count_rows() == 30
    final.checkout_version(2).restore()
    assert lance.dataset(uri, storage_options=so).count_rows() == 25


def test_files_on_s3(uri, so):
    path = f"{uri}/one.lance"
    t = tbl(0, 1000)
    with lancelet.file.LanceFileWriter(path, t.schema, storage_options=so) as w:
        w.write(t)
    r = lancelet.file.LanceFileReader(path, storage_options=so)
    assert r.num_rows == 1000 and r.read() == t
    assert r.take([999, 3])["x"].to_pylist() == [999, 3]
    import lance.file
    theirs = lance.file.LanceFileReader(path, storage_options=so).read_all().to_table()
    assert theirs == t


def test_environment_fills_in_missing_options(uri, so, monkeypatch):
    lancelet.write_dataset(tbl(0, 3), uri, storage_options=so)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", so["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", so["aws_secret_access_key"])
    monkeypatch.setenv("AWS_ENDPOINT", so["aws_endpoint"])
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    monkeypatch.setenv("AWS_REGION", so["aws_region"])
    assert lancelet.dataset(uri).count_rows() == 3
    # an option given explicitly wins over the environment
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    assert lancelet.dataset(uri, storage_options={"aws_secret_access_key": so["aws_secret_access_key"]}).count_rows() == 3
    with pytest.raises(lancelet.exceptions.LanceletIOError):
        lancelet.dataset(uri)


def test_bad_credentials_and_missing_bucket(uri, so):
    lancelet.write_dataset(tbl(0, 3), uri, storage_options=so)
    bad = dict(so, aws_secret_access_key="not-the-secret")
    with pytest.raises(lancelet.exceptions.LanceletIOError) as e:
        lancelet.dataset(uri, storage_options=bad)
    assert uri in str(e.value)
    with pytest.raises(lancelet.exceptions.LanceletIOError) as e:
        lancelet.write_dataset(tbl(0, 3), uri, mode="append", storage_options=bad)
    assert uri in str(e.value)
    missing = "s3://no-such-bucket-here/ds"
    with pytest.raises(lancelet.exceptions.LanceletIOError) as e:
        lancelet.dataset(missing, storage_options=so)
    assert missing in str(e.value)
    with pytest.raises(lancelet.exceptions.LanceletIOError) as e:
        lancelet.write_dataset(tbl(0, 3), missing, storage_options=so)
    assert missing in str(e.value)
    # a dataset that is not there (bucket fine) is NotFound
    with pytest.raises(lancelet.exceptions.NotFoundError) as e:
        lancelet.dataset(uri + "-absent", storage_options=so)
    assert uri + "-absent" in str(e.value)
    with pytest.raises(lancelet.exceptions.InvalidInputError):
        lancelet.dataset("s3:///no-bucket", storage_options=so)
    with pytest.raises(lancelet.exceptions.InvalidInputError):
        lancelet.dataset(uri, storage_options=dict(so, client_max_retries="many"))
    with pytest.raises(TypeError):  # a wrong Python type (docs/errors.md)
        lancelet.dataset(uri, storage_options={1: "x"})


def test_commits_without_conditional_put_are_refused(uri, so):
    lancelet.write_dataset(tbl(0, 3), uri, storage_options=so)
    off = dict(so, aws_conditional_put="disabled")
    assert lancelet.dataset(uri, storage_options=off).count_rows() == 3
    with pytest.raises(lancelet.exceptions.UnsupportedError):
        lancelet.write_dataset(tbl(3, 3), uri, mode="append", storage_options=off)
    assert lancelet.dataset(uri, storage_options=so).latest_version == 1


WORKER = textwrap.dedent("""
    import sys, time, json
    import pyarrow as pa
    kind, uri, wid, n, so = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
    acked = []
    def row(x):
        return pa.table({"x": pa.array([x], pa.int64()), "w": pa.array([wid], pa.int64())})
    if kind == "lancelet":
        import lancelet
        for k in range(n):
            for attempt in range(50):
                try:
                    lancelet.dataset(uri, storage_options=so).insert(row(wid * 1000 + k))
                    acked.append(wid * 1000 + k)
                    break
                except lancelet.CommitConflictError:
                    time.sleep(0.01)
    else:
        import lance
        for k in range(n):
            lance.write_dataset(row(wid * 1000 + k), uri, mode="append", storage_options=so)
            acked.append(wid * 1000 + k)
    print(json.dumps(acked))
""")


def test_concurrent_writers_on_s3(uri, so, tmp_path):
    lancelet.write_dataset(pa.table({"x": pa.array([-1], pa.int64()), "w": pa.array([-1], pa.int64())}), uri,
                           storage_options=so)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    n = 5
    kinds = [("lancelet", 1), ("lancelet", 2), ("lance", 9)]
    procs = [subprocess.Popen([sys.executable, str(script), kind, uri, str(w), str(n), json.dumps(so)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for kind, w in kinds]
    acked = []
    for pr in procs:
        out, err = pr.communicate(timeout=300)
        assert pr.returncode == 0, err.decode()[-3000:]
        acked += json.loads(out.decode().strip().splitlines()[-1])
    assert len(acked) == len(kinds) * n
    ll = lancelet.dataset(uri, storage_options=so)
    xs = ll.to_table()["x"].to_pylist()
    assert sorted(xs) == sorted(acked + [-1]), "lost or duplicated rows"
    assert [v["version"] for v in ll.versions()] == list(range(1, 2 + len(kinds) * n))
    assert sorted(lance.dataset(uri, storage_options=so).to_table()["x"].to_pylist()) == sorted(xs)


def test_cli_on_s3(uri, so):
    lancelet.write_dataset(tbl(0, 5), uri, storage_options=so)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    opts = [a for k, v in so.items() for a in ("-o", f"{k}={v}")]
    out = subprocess.run([sys.executable, "-m", "lancelet", "cat", uri, "--format", "csv", *opts],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "x,s" and len(lines) == 6, lines
    out = subprocess.run([sys.executable, "-m", "lancelet", "inspect", uri, "--json", *opts],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["version"] == 1
    out = subprocess.run([sys.executable, "-m", "lancelet", "inspect", uri, "-o", "nonsense"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and "KEY=VALUE" in out.stderr


def test_large_file_streams_as_multipart_upload(uri, so):
    """A data file larger than one upload part (8 MiB) goes up as a
    multipart upload while it is encoded; both readers see every byte."""
    import numpy as np
    rng = np.random.default_rng(5)
    n = 40_000
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 128, dtype=np.float32)), 128)
    t = pa.table({"id": pa.array(np.arange(n), pa.int64()), "vec": vec,
                  "s": pa.array([f"row-{i}-{'x' * (i % 50)}" for i in range(n)])})
    assert t.nbytes > 2 * (8 << 20)
    lancelet.write_dataset(t, uri, storage_options=so)
    assert lancelet.dataset(uri, storage_options=so).to_table().equals(t)
    assert lance.dataset(uri, storage_options=so).to_table().equals(t)
