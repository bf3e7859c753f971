"""Datasets on Google Cloud Storage (``gs://``), on a local fake-gcs-server
(see gcs_server.py), against pylance; and the validation of GCS and Azure
storage options.

What holds on this emulator (io/gcs.rs explains why):
- lancelet reads and writes with pylance's default-client options
  (``google_base_url``, ``google_skip_signature``, ``allow_http``); it
  writes through GCS's JSON API, where the emulator honours
  ``ifGenerationMatch=0``, so concurrent committers never both win a
  version (several writer processes race below);
- pylance's default GCS client only reads here (the emulator refuses its
  XML-API writes); its OpenDAL client (``use_opendal``) reads and writes,
  storing ``gs://b/p`` under ``p/p/`` — lancelet, given the same options,
  reaches the same objects, and reads them as ``gs://b/p`` with the
  default options when they were written as ``gs://b`` with ``root=/p``.
- ``az://`` is not tested against a server (no emulator is installable
  here): only its option handling is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import lancelet

BUCKET = "lancelet-gcs"


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    import gcs_server
    server = gcs_server.start(tmp_path_factory.mktemp("fake-gcs"))
    try:
        server.create_bucket(BUCKET)
        yield server
    finally:
        server.stop()


@pytest.fixture
def so(gcs):
    return gcs.storage_options


@pytest.fixture
def name(request):
    return f"{request.node.name.replace('[', '-').rstrip(']')}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def uri(gcs, name):
    return f"gs://{BUCKET}/{name}"


def tbl(start, n):
    return pa.table({
        "x": pa.array(range(start, start + n), pa.int64()),
        "s": pa.array([None if i % 7 == 0 else f"v{i}" for i in range(start, start + n)], pa.string()),
    })


def same_every_version(uri, ll_opts, pl_opts, pl_uri=None):
    """Every version reads the same in both libraries (pylance through
    ``pl_uri`` with ``pl_opts``)."""
    pl_uri = pl_uri or uri
    ll = lancelet.dataset(uri, storage_options=ll_opts)
    pl = lance.dataset(pl_uri, storage_options=pl_opts)
    assert ll.latest_version == pl.latest_version
    assert [v["version"] for v in ll.versions()] == [v["version"] for v in pl.versions()]
    for v in range(1, ll.latest_version + 1):
        a = lance.dataset(pl_uri, version=v, storage_options=pl_opts).to_table()
        b = lancelet.dataset(uri, version=v, storage_options=ll_opts).to_table()
        assert a.schema.remove_metadata() == b.schema.remove_metadata()
        assert a.to_pylist() == b.to_pylist(), f"version {v}"


def test_round_trips_lancelet_writes_pylance_reads(uri, so):
    ds = lancelet.write_dataset(tbl(0, 250), uri, max_rows_per_file=100, storage_options=so)
    assert ds.version == 1 and len(ds.get_fragments()) == 3 and ds.uri == uri
    ds = lancelet.write_dataset(tbl(250, 30), uri, mode="append", storage_options=so)
    assert ds.version == 2
    ds = lancelet.dataset(uri, storage_options=so)
    assert ds.delete("x % 5 = 0")["num_deleted_rows"] == 56
    ds = lancelet.dataset(uri, storage_options=so)
    ds.update({"s": "'upd'"}, where="x < 10")
    ds = lancelet.dataset(uri, storage_options=so)
    assert ds.version == 4
    ds.tags.create("before-compaction", 4)
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    ds = lancelet.dataset(uri, storage_options=so)
    latest = ds.version
    assert latest >= 5 and len(ds.get_fragments()) == 1
    same_every_version(uri, so, so)
    want = [x for x in range(280) if x % 5]
    got = lancelet.dataset(uri, storage_options=so).to_table().sort_by("x")
    assert got["x"].to_pylist() == want
    assert got["s"].to_pylist()[:8] == ["upd"] * 8
    assert lancelet.dataset(uri, storage_options=so).take([0, 3])["x"].to_pylist() == \
        lance.dataset(uri, storage_options=so).take([0, 3])["x"].to_pylist()
    assert lancelet.dataset(uri, version="before-compaction", storage_options=so).count_rows() == len(want)
    # cleanup: everything older than the latest and the tagged version goes
    ds.tags.delete("before-compaction")
    stats = lancelet.dataset(uri, storage_options=so).cleanup_old_versions(older_than=timedelta(0))
    assert stats.old_versions == latest - 1, stats
    assert [v["version"] for v in lance.dataset(uri, storage_options=so).versions()] == [latest]
    assert sorted(lance.dataset(uri, storage_options=so).to_table()["x"].to_pylist()) == want


def test_large_data_file_streams_as_resumable_upload(uri, so):
    """A data file above one upload part (8 MiB) goes up in chunks of a
    resumable upload; both libraries read every byte back."""
    import numpy as np
    rng = np.random.default_rng(7)
    n = 40_000
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 128, dtype=np.float32)), 128)
    t = pa.table({"id": pa.array(np.arange(n), pa.int64()), "vec": vec})
    assert t.nbytes > 2 * (8 << 20)
    lancelet.write_dataset(t, uri, storage_options=so)
    assert lancelet.dataset(uri, storage_options=so).to_table().equals(t)
    assert lance.dataset(uri, storage_options=so).to_table().equals(t)


def test_pylance_opendal_writes_lancelet_reads_and_appends(gcs, name, so):
    """pylance's OpenDAL client writes ``gs://b`` with ``root=/name``;
    lancelet reads it as ``gs://b/name`` with the default options and with
    pylance's own OpenDAL options, appends, and pylance reads that."""
    od = gcs.opendal_options(root=f"/{name}")
    base = f"gs://{BUCKET}"
    lance.write_dataset(tbl(0, 40), base, max_rows_per_file=15, storage_options=od)
    lance.write_dataset(tbl(40, 5), base, mode="append", storage_options=od)
    lance.dataset(base, storage_options=od).delete("x < 4")
    assert any(o.startswith(f"{name}/_versions/") for o in gcs.objects(BUCKET, name + "/"))
    same_every_version(f"{base}/{name}", so, od, pl_uri=base)
    # the same URI and OpenDAL options reach the same objects
    assert lancelet.dataset(base, storage_options=od).count_rows() == 41
    lancelet.dataset(base, storage_options=od).insert(tbl(100, 2))
    lancelet.dataset(f"{base}/{name}", storage_options=so).delete("x = 100")
    same_every_version(f"{base}/{name}", so, od, pl_uri=base)
    assert lance.dataset(base, storage_options=od).to_table()["x"].to_pylist() == list(range(4, 45)) + [101]


def test_lancelet_writes_pylance_opendal_reads_and_writes(gcs, uri, name, so):
    lancelet.write_dataset(tbl(0, 20), uri, storage_options=so)
    od = gcs.opendal_options(root=f"/{name}")
    base = f"gs://{BUCKET}"
    assert lance.dataset(base, storage_options=od).to_table() == tbl(0, 20)
    lance.write_dataset(tbl(20, 3), base, mode="append", storage_options=od)
    same_every_version(uri, so, od, pl_uri=base)


def test_opendal_path_uris_are_stored_as_pylance_stores_them(gcs, name):
    """pylance's OpenDAL client stores ``gs://b/p`` under ``p/p/``; lancelet
    given the same URI and options reads and writes the same objects."""
    od = gcs.opendal_options()
    uri = f"gs://{BUCKET}/{name}"
    lance.write_dataset(tbl(0, 10), uri, storage_options=od)
    assert any(o.startswith(f"{name}/{name}/_versions/") for o in gcs.objects(BUCKET, name))
    assert lancelet.dataset(uri, storage_options=od).to_table() == tbl(0, 10)
    lancelet.dataset(uri, storage_options=od).insert(tbl(10, 1))
    assert lance.dataset(uri, storage_options=od).count_rows() == 11
    assert not any(o.startswith(f"{name}/_versions/") for o in gcs.objects(BUCKET, name))


WORKER = textwrap.dedent("""
    import sys, time, json
    import pyarrow as pa
    import lancelet
    uri, wid, n, so = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
    acked, lost_races = [], 0
    for k in range(n):
        row = pa.table({"x": pa.array([wid * 1000 + k], pa.int64()), "w": pa.array([wid], pa.int64())})
        for attempt in range(100):
            try:
                lancelet.dataset(uri, storage_options=so).insert(row)
                acked.append(wid * 1000 + k)
                break
            except lancelet.CommitConflictError:
                lost_races += 1
                time.sleep(0.005)
    print(json.dumps({"acked": acked, "lost_races": lost_races}))
""")


def test_concurrent_committers_never_both_win_a_version(uri, so, tmp_path):
    """Writer processes race on the same versions: every commit is kept,
    versions stay gapless, and some commits found their version taken (the
    conditional create refused them, so the race did happen)."""
    lancelet.write_dataset(pa.table({"x": pa.array([-1], pa.int64()), "w": pa.array([-1], pa.int64())}), uri,
                           storage_options=so)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    writers, n = 4, 4
    procs = [subprocess.Popen([sys.executable, str(script), uri, str(w), str(n), json.dumps(so)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for w in range(1, writers + 1)]
    acked, lost = [], 0
    for pr in procs:
        out, err = pr.communicate(timeout=300)
        assert pr.returncode == 0, err.decode()[-3000:]
        got = json.loads(out.decode().strip().splitlines()[-1])
        acked += got["acked"]
        lost += got["lost_races"]
    assert len(acked) == writers * n
    ll = lancelet.dataset(uri, storage_options=so)
    assert sorted(ll.to_table()["x"].to_pylist()) == sorted(acked + [-1]), "lost or duplicated rows"
    assert [v["version"] for v in ll.versions()] == list(range(1, 2 + writers * n))
    assert sorted(lance.dataset(uri, storage_options=so).to_table()["x"].to_pylist()) == sorted(acked + [-1])


def test_manifest_create_is_conditional(uri, so):
    """Writing a version that exists is refused by the store (not by a
    check made before writing): a stale handle's commit conflicts, and the
    version it aimed at keeps its first manifest."""
    lancelet.write_dataset(tbl(0, 3), uri, storage_options=so)
    stale = lancelet.dataset(uri, storage_options=so)
    lancelet.dataset(uri, storage_options=so).insert(tbl(3, 1))
    stale.insert(tbl(10, 1))  # rebased onto version 2 after the conflict: version 3
    got = lancelet.dataset(uri, storage_options=so)
    assert got.version == 3
    assert sorted(got.to_table()["x"].to_pylist()) == [0, 1, 2, 3, 10]
    assert lancelet.dataset(uri, version=2, storage_options=so).to_table()["x"].to_pylist() == [0, 1, 2, 3]


def test_missing_bucket_and_dataset(gcs, so):
    missing = "gs://no-such-bucket-here/ds"
    with pytest.raises(lancelet.exceptions.LanceletIOError) as e:
        lancelet.write_dataset(tbl(0, 3), missing, storage_options=dict(so, client_max_retries="0"))
    assert missing in str(e.value)
    absent = f"gs://{BUCKET}/absent-{uuid.uuid4().hex[:8]}"
    with pytest.raises(lancelet.exceptions.NotFoundError) as e:
        lancelet.dataset(absent, storage_options=so)
    assert absent in str(e.value)


@pytest.mark.parametrize("opts, words", [
    ({"endpoint": "http://127.0.0.1:1"}, "use_opendal=true"),
    ({"root": "/p"}, "use_opendal=true"),
    ({"allow_anonymous": "true"}, "use_opendal=true"),
    ({"use_opendal": "true", "google_base_url": "http://h"}, "default GCS client"),
    ({"use_opendal": "true", "predefined_acl": "publicRead"}, "no equivalent"),
    ({"use_opendal": "maybe"}, "not a boolean"),
    ({"google_skip_signature": "true", "google_storage_token": "t"}, "give one of them"),
    ({"use_opendal": "true", "allow_anonymous": "true", "token": "t"}, "give one of them"),
    ({"client_max_retries": "many"}, "not a number"),
    ({"google_service_account": "/no/such/key.json"}, "gs://b/p"),
])
def test_gcs_options_that_cannot_be_honoured(opts, words):
    with pytest.raises(lancelet.exceptions.InvalidInputError) as e:
        lancelet.dataset("gs://b/p", storage_options=opts)
    assert words in str(e.value)


@pytest.mark.parametrize("uri, opts, words", [
    ("az:///p", {}, "names no container"),
    ("az://c/p", {"root": "/x"}, "use_opendal=true"),
    ("az://c/p", {"use_opendal": "true", "client_id": "x"}, "OpenDAL"),
    ("az://c/p", {"client_retry_timeout": "soon"}, "not a number"),
    ("az://c/p", {}, "az://c/p"),  # no account configured anywhere
])
def test_azure_options_are_checked(uri, opts, words, monkeypatch):
    for k in list(os.environ):
        if k.startswith("AZURE_"):
            monkeypatch.delenv(k)
    with pytest.raises(lancelet.exceptions.InvalidInputError) as e:
        lancelet.dataset(uri, storage_options=opts)
    assert words in str(e.value)
