"""Datasets committed through an external manifest store: ``s3+ddb://``
URIs, S3 plus a DynamoDB table deciding each version (moto's local server,
see ddb_server.py; docs/commit-store.md has the protocol). lancelet and
pylance read each other's versions, write the same DynamoDB items, commit
concurrently without losing anything, survive a writer killed mid-commit,
and finish a commit a writer left half-done."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from datetime import timedelta

import ddb_server
import lance
import pyarrow as pa
import pytest

import lancelet

BUCKET = "ddbbucket"
TABLE = "manifests"
V2 = "{:020d}.manifest"


def v2_name(version: int) -> str:
    return V2.format(2**64 - 1 - version)


@pytest.fixture(scope="session")
def ddb(tmp_path_factory):
    why = ddb_server.available()
    if why:
        pytest.skip(why)
    server = ddb_server.start(tmp_path_factory.mktemp("moto"))
    try:
        server.create_bucket(BUCKET)
        server.create_table(TABLE)
        yield server
    finally:
        server.stop()


@pytest.fixture
def so(ddb):
    return ddb.storage_options


@pytest.fixture
def base(request):
    """A fresh dataset path inside the bucket (the store's base_uri)."""
    return f"t/{request.node.name.replace('[', '-').rstrip(']')}-{uuid.uuid4().hex[:8]}"


def ddb_uri(base: str, table: str = TABLE) -> str:
    return f"s3+ddb://{BUCKET}/{base}?ddbTableName={table}"


def tbl(start, n):
    return pa.table({
        "x": pa.array(range(start, start + n), pa.int64()),
        "s": pa.array([None if i % 7 == 0 else f"v{i}" for i in range(start, start + n)], pa.string()),
    })


def same_every_version(uri, so):
    ours = lancelet.dataset(uri, storage_options=so)
    theirs = lance.dataset(uri, storage_options=so)
    assert ours.latest_version == theirs.latest_version
    assert [v["version"] for v in ours.versions()] == [v["version"] for v in theirs.versions()]
    for v in range(1, ours.latest_version + 1):
        a = lance.dataset(uri, version=v, storage_options=so).to_table()
        b = lancelet.dataset(uri, version=v, storage_options=so).to_table()
        assert a.schema.remove_metadata() == b.schema.remove_metadata()
        assert a.to_pylist() == b.to_pylist(), f"version {v}"
    return ours.latest_version


def gapless(ddb, base, uri, so):
    """Versions 1..latest in both libraries' histories and in the store,
    every item final (pointing at its version's manifest)."""
    latest = lancelet.dataset(uri, storage_options=so).latest_version
    want = list(range(1, latest + 1))
    assert [v["version"] for v in lancelet.dataset(uri, storage_options=so).versions()] == want
    assert [v["version"] for v in lance.dataset(uri, storage_options=so).versions()] == want
    items = ddb.items(TABLE, base)
    assert [int(i["version"]["N"]) for i in items] == want
    assert [i["path"]["S"] for i in items] == [f"{base}/_versions/{v2_name(v)}" for v in want]
    return latest


def test_pylance_writes_lancelet_reads(ddb, base, so):
    uri = ddb_uri(base)
    lance.write_dataset(tbl(0, 30), uri, max_rows_per_file=10, storage_options=so)
    lance.write_dataset(tbl(30, 5), uri, mode="append", storage_options=so)
    lance.dataset(uri, storage_options=so).delete("x < 3 OR x = 31")
    lance.dataset(uri, storage_options=so).update({"s": "upper(s)"}, where="x > 20")
    lance.dataset(uri, storage_options=so).tags.create("two", 2)
    assert same_every_version(uri, so) == 4
    assert lancelet.dataset(uri, version="two", storage_options=so).count_rows() == 35
    assert lancelet.dataset(uri, storage_options=so).to_table()["x"].to_pylist() == \
        lance.dataset(uri, storage_options=so).to_table()["x"].to_pylist()
    assert gapless(ddb, base, uri, so) == 4
    # the dataset reached as s3:// (no store) is the same files
    plain = lancelet.dataset(f"s3://{BUCKET}/{base}", storage_options=so)
    assert plain.latest_version == 4


def test_lancelet_writes_pylance_reads(ddb, base, so):
    uri = ddb_uri(base)
    ds = lancelet.write_dataset(tbl(0, 30), uri, max_rows_per_file=10, storage_options=so)
    assert ds.version == 1 and ds.uri == uri
    ds = lancelet.write_dataset(tbl(30, 5), uri, mode="append", storage_options=so)
    assert ds.version == 2
    ds = lancelet.dataset(uri, storage_options=so)
    assert ds.delete("x % 4 = 0")["num_deleted_rows"] == 9
    ds = lancelet.dataset(uri, storage_options=so)
    ds.update({"s": "'u'"}, where="x < 5")
    ds = lancelet.dataset(uri, storage_options=so)
    ds.tags.create("before", 3)
    ds.optimize.compact_files()
    latest = same_every_version(uri, so)
    assert latest >= 5
    assert lance.dataset(uri, version="before", storage_options=so).count_rows() == 26
    assert gapless(ddb, base, uri, so) == latest
    # restore, then cleanup: the store keeps deciding, both still read
    lancelet.dataset(uri, version=2, storage_options=so).restore()
    lancelet.dataset(uri, storage_options=so).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True,
                                                                    error_if_tagged_old_versions=False)
    theirs = lance.dataset(uri, storage_options=so)
    assert theirs.version == latest + 1 and theirs.count_rows() == 35
    assert lancelet.dataset(uri, storage_options=so).to_table() == theirs.to_table()
    lance.write_dataset(tbl(100, 2), uri, mode="append", storage_options=so)
    assert lancelet.dataset(uri, storage_options=so).count_rows() == 37


def test_items_equal_pylances(ddb, so):
    """The same operations through both libraries leave items with the same
    attributes, types and values (paths under each dataset; sizes of each
    library's own manifests)."""
    items = {}
    s3 = ddb.client("s3")
    for lib in (lance, lancelet):
        base = f"items/{lib.__name__}-{uuid.uuid4().hex[:8]}"
        uri = ddb_uri(base)
        lib.write_dataset(tbl(0, 10), uri, storage_options=so)
        lib.write_dataset(tbl(10, 10), uri, mode="append", storage_options=so)
        lib.dataset(uri, storage_options=so).delete("x = 3")
        got = ddb.items(TABLE, base)
        assert len(got) == 3
        for item in got:
            v = int(item["version"]["N"])
            path = f"{base}/_versions/{v2_name(v)}"
            assert item["path"] == {"S": path}
            assert item["base_uri"] == {"S": base}
            assert item["size"] == {"N": str(s3.head_object(Bucket=BUCKET, Key=path)["ContentLength"])}
        items[lib.__name__] = got
    for theirs, ours in zip(items["lance"], items["lancelet"]):
        assert sorted(theirs) == sorted(ours) == ["base_uri", "committer", "path", "size", "version"]
        assert {k: list(v) for k, v in theirs.items()} == {k: list(v) for k, v in ours.items()}
        assert ours["committer"] == theirs["committer"] == {"S": "lancedb"}
        assert ours["version"] == theirs["version"]
    # no staging manifest left behind by either
    for lib in ("lance", "lancelet"):
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"items/{lib}-")["Contents"]]
        assert not [k for k in keys if ".manifest-" in k], keys


def test_mixed_writers(ddb, base, so):
    uri = ddb_uri(base)
    lance.write_dataset(tbl(0, 10), uri, storage_options=so)
    lancelet.write_dataset(tbl(10, 10), uri, mode="append", storage_options=so)
    lance.dataset(uri, storage_options=so).delete("x = 11")
    lancelet.dataset(uri, storage_options=so).delete("x = 2")
    lance.write_dataset(tbl(50, 1), uri, mode="overwrite", storage_options=so)
    lancelet.write_dataset(tbl(60, 2), uri, mode="append", storage_options=so)
    assert same_every_version(uri, so) == 6
    assert gapless(ddb, base, uri, so) == 6
    assert lance.dataset(uri, storage_options=so).to_table()["x"].to_pylist() == [50, 60, 61]


def _make_half_done(ddb, base, uri, so, lib):
    """Two versions; then version 2 as a writer that died right after
    claiming it leaves it: the item points at a staging manifest, and the
    final manifest is not there yet."""
    lib.write_dataset(tbl(0, 10), uri, storage_options=so)
    lib.write_dataset(tbl(10, 5), uri, mode="append", storage_options=so)
    s3, dynamo = ddb.client("s3"), ddb.client("dynamodb")
    final = f"{base}/_versions/{v2_name(2)}"
    staging = f"{final}-{uuid.uuid4()}"
    s3.copy_object(Bucket=BUCKET, Key=staging, CopySource={"Bucket": BUCKET, "Key": final})
    s3.delete_object(Bucket=BUCKET, Key=final)
    item = ddb.items(TABLE, base)[1]
    item["path"] = {"S": staging}
    dynamo.put_item(TableName=TABLE, Item=item)
    return final, staging


@pytest.mark.parametrize("reader", ["lancelet", "lance"])
def test_a_reader_finishes_a_half_done_commit(ddb, base, so, reader):
    uri = ddb_uri(base)
    final, staging = _make_half_done(ddb, base, uri, so, lancelet)
    lib = {"lancelet": lancelet, "lance": lance}[reader]
    assert lib.dataset(uri, storage_options=so).count_rows() == 15
    # finished: the final manifest is there, the item points at it, the
    # staging file is gone, and both libraries see version 2
    s3 = ddb.client("s3")
    s3.head_object(Bucket=BUCKET, Key=final)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=base)["Contents"]]
    assert staging not in keys
    assert ddb.items(TABLE, base)[1]["path"] == {"S": final}
    assert same_every_version(uri, so) == 2
    lancelet.write_dataset(tbl(20, 1), uri, mode="append", storage_options=so)
    assert gapless(ddb, base, uri, so) == 3


def test_a_half_done_commit_of_pylance_is_finished_by_lancelet(ddb, base, so):
    uri = ddb_uri(base)
    final, staging = _make_half_done(ddb, base, uri, so, lance)
    assert lancelet.dataset(uri, version=2, storage_options=so).count_rows() == 15
    assert ddb.items(TABLE, base)[1]["path"] == {"S": final}
    assert same_every_version(uri, so) == 2


WORKER = textwrap.dedent("""
    import sys, time, json
    import pyarrow as pa
    kind, uri, wid, n, so = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
    def row(x):
        return pa.table({"x": pa.array([x], pa.int64()), "w": pa.array([wid], pa.int64())})
    if kind == "lancelet":
        import lancelet as lib
    else:
        import lance as lib
    for k in range(n):
        for attempt in range(100):
            try:
                lib.write_dataset(row(wid * 1000 + k), uri, mode="append", storage_options=so)
                break
            except Exception as e:  # a conflict after the library's own retries
                if attempt == 99:
                    raise
                time.sleep(0.02)
        print(wid * 1000 + k, flush=True)
""")


def _spawn(tmp_path, kind, uri, wid, n, so):
    script = tmp_path / "worker.py"
    if not script.exists():
        script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, str(script), kind, uri, str(wid), str(n), json.dumps(so)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)


def test_concurrent_writers_lose_nothing(ddb, base, so, tmp_path):
    uri = ddb_uri(base)
    lancelet.write_dataset(pa.table({"x": pa.array([-1], pa.int64()), "w": pa.array([-1], pa.int64())}), uri,
                           storage_options=so)
    n = 5
    kinds = [("lancelet", 1), ("lancelet", 2), ("lance", 8), ("lance", 9)]
    procs = [_spawn(tmp_path, kind, uri, w, n, so) for kind, w in kinds]
    acked = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        acked += [int(x) for x in out.split()]
    assert len(acked) == 4 * n
    got = lancelet.dataset(uri, storage_options=so).to_table()["x"].to_pylist()
    assert sorted(got) == sorted([-1] + acked)
    assert gapless(ddb, base, uri, so) == 1 + 4 * n
    same_every_version(uri, so)


def test_a_killed_writer_leaves_a_readable_dataset(ddb, base, so, tmp_path):
    """A lancelet writer SIGKILLed at random points of its commits (the
    protocol takes several requests, so kills land between its steps):
    after each kill both libraries read the same latest version, every
    acknowledged row is there, the next commit succeeds and versions stay
    gapless."""
    uri = ddb_uri(base)
    lancelet.write_dataset(pa.table({"x": pa.array([-1], pa.int64()), "w": pa.array([-1], pa.int64())}), uri,
                           storage_options=so)
    rng = random.Random(33)
    acked = []
    for round_ in range(5):
        p = _spawn(tmp_path, "lancelet", uri, round_ + 1, 1000, so)
        # let it start committing (interpreter start-up and import first)
        t0 = time.monotonic()
        first = p.stdout.readline()
        assert first, p.stderr.read()[-3000:]
        acked.append(int(first))
        time.sleep(rng.uniform(0.0, 0.4))
        os.kill(p.pid, signal.SIGKILL)
        out, _ = p.communicate(timeout=60)
        acked += [int(x) for x in out.split()]
        assert time.monotonic() - t0 < 120
        ours = lancelet.dataset(uri, storage_options=so)
        theirs = lance.dataset(uri, storage_options=so)
        assert ours.version == theirs.version
        got = ours.to_table()["x"].to_pylist()
        assert sorted(got) == sorted(theirs.to_table()["x"].to_pylist())
        assert set(acked) <= set(got)
        # the next commit succeeds, through either library
        nxt = (lancelet if round_ % 2 else lance)
        nxt.write_dataset(pa.table({"x": pa.array([-100 - round_], pa.int64()), "w": pa.array([0], pa.int64())}),
                          uri, mode="append", storage_options=so)
        assert lancelet.dataset(uri, storage_options=so).version == ours.version + 1
        gapless(ddb, base, uri, so)


def test_bad_uris_and_stores(ddb, base, so):
    t = tbl(0, 3)
    for bad in [f"s3+ddb://{BUCKET}/{base}", f"s3+ddb://{BUCKET}/{base}?ddbTableName={TABLE}&x=1",
                f"s3+ddb://{BUCKET}/{base}?table={TABLE}", f"s3+ddb://{BUCKET}/{base}?ddbTableName="]:
        with pytest.raises(ValueError) as theirs:
            lance.dataset(bad, storage_options=so)
        with pytest.raises(lancelet.exceptions.InvalidInputError) as ours:
            lancelet.dataset(bad, storage_options=so)
        assert isinstance(ours.value, type(theirs.value))
        with pytest.raises(lancelet.exceptions.InvalidInputError):
            lancelet.write_dataset(t, bad, storage_options=so)
    # a table that does not exist
    missing = ddb_uri(base, "no_such_table")
    with pytest.raises(OSError):
        lance.write_dataset(t, missing, storage_options=so)
    with pytest.raises(lancelet.exceptions.NotFoundError) as e:
        lancelet.write_dataset(t, missing, storage_options=so)
    assert "no_such_table" in str(e.value)
    with pytest.raises(lancelet.exceptions.NotFoundError):
        lancelet.dataset(missing, storage_options=so)
    # an endpoint nobody listens on: bounded retries, then an error naming it
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    t0 = time.monotonic()
    with pytest.raises(lancelet.exceptions.LanceletIOError) as e:
        lancelet.write_dataset(t, ddb_uri(base), storage_options=dict(so, dynamodb_endpoint=dead))
    assert dead in str(e.value) and time.monotonic() - t0 < 30
    # DYNAMODB_ENDPOINT fills in a missing dynamodb_endpoint
    uri = ddb_uri(base)
    lancelet.write_dataset(t, uri, storage_options=so)
    no_endpoint = {k: v for k, v in so.items() if k != "dynamodb_endpoint"}
    env = dict(os.environ, DYNAMODB_ENDPOINT=so["dynamodb_endpoint"], PYTHONPATH=os.pathsep.join(sys.path))
    code = f"import lancelet; print(lancelet.dataset({uri!r}, storage_options={no_endpoint!r}).count_rows())"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "3"
    # nothing was half-committed by the failures above
    assert gapless(ddb, base, uri, so) == 1


def test_an_item_pointing_at_a_missing_manifest(ddb, base, so):
    uri = ddb_uri(base)
    lancelet.write_dataset(tbl(0, 3), uri, storage_options=so)
    ddb.client("dynamodb").put_item(TableName=TABLE, Item={
        "base_uri": {"S": base}, "version": {"N": "2"}, "committer": {"S": "lancedb"}, "size": {"N": "100"},
        "path": {"S": f"{base}/_versions/{v2_name(2)}-{uuid.uuid4()}"}})
    with pytest.raises(lancelet.exceptions.NotFoundError) as e:
        lancelet.dataset(uri, storage_options=so)
    assert "version 2" in str(e.value)
    with pytest.raises((OSError, ValueError)):
        lance.dataset(uri, storage_options=so)
    with pytest.raises(lancelet.exceptions.NotFoundError):
        lancelet.write_dataset(tbl(3, 1), uri, mode="append", storage_options=so)
    assert len(ddb.items(TABLE, base)) == 2
    # version 1 still reads
    assert lancelet.dataset(f"s3://{BUCKET}/{base}", version=1, storage_options=so).count_rows() == 3


def test_more_operations_through_the_store(ddb, base, so):
    """merge_insert, add_columns and a scalar index commit through the
    store like any other operation; pylance reads every version."""
    uri = ddb_uri(base)
    lancelet.write_dataset(tbl(0, 20), uri, max_rows_per_file=10, storage_options=so)
    ds = lancelet.dataset(uri, storage_options=so)
    ds.merge_insert("x").when_matched_update_all().when_not_matched_insert_all().execute(tbl(15, 10))
    lancelet.dataset(uri, storage_options=so).add_columns({"y": "x * 2"})
    lancelet.dataset(uri, storage_options=so).create_scalar_index("x", "BTREE")
    latest = same_every_version(uri, so)
    assert gapless(ddb, base, uri, so) == latest == 4
    theirs = lance.dataset(uri, storage_options=so)
    assert theirs.count_rows() == 25 and theirs.to_table(filter="x = 24")["y"].to_pylist() == [48]
    assert [i.name for i in theirs.describe_indices()] == ["x_idx"]


@pytest.mark.parametrize("lib", ["lancelet", "lance"])
@pytest.mark.parametrize("died_after", ["stage", "claim", "copy", "finalize"])
def test_every_step_a_writer_can_die_at(ddb, base, so, died_after, lib):
    """The state a writer of version 2 leaves when it dies after each step
    of the protocol, made by hand: both libraries read the same version
    (1 before the claim, 2 after), and the next commit, by either, is the
    version after it."""
    uri = ddb_uri(base)
    lancelet.write_dataset(tbl(0, 10), uri, storage_options=so)
    lancelet.write_dataset(tbl(10, 5), uri, mode="append", storage_options=so)
    s3, dynamo = ddb.client("s3"), ddb.client("dynamodb")
    final = f"{base}/_versions/{v2_name(2)}"
    staging = f"{final}-{uuid.uuid4()}"
    s3.copy_object(Bucket=BUCKET, Key=staging, CopySource={"Bucket": BUCKET, "Key": final})
    item = ddb.items(TABLE, base)[1]
    if died_after == "stage":
        dynamo.delete_item(TableName=TABLE, Key={"base_uri": item["base_uri"], "version": item["version"]})
    if died_after in ("stage", "claim"):
        s3.delete_object(Bucket=BUCKET, Key=final)
    if died_after in ("claim", "copy"):
        dynamo.put_item(TableName=TABLE, Item=dict(item, path={"S": staging}))
    committed = died_after != "stage"
    reader = {"lancelet": lancelet, "lance": lance}[lib]
    want = 2 if committed else 1
    assert reader.dataset(uri, storage_options=so).version == want
    assert lancelet.dataset(uri, storage_options=so).version == lance.dataset(uri, storage_options=so).version == want
    assert lancelet.dataset(uri, storage_options=so).count_rows() == (15 if committed else 10)
    assert same_every_version(uri, so) == want
    reader.write_dataset(tbl(100, 1), uri, mode="append", storage_options=so)
    assert gapless(ddb, base, uri, so) == want + 1
    assert lance.dataset(uri, storage_options=so).count_rows() == lancelet.dataset(uri, storage_options=so).count_rows()


@pytest.mark.parametrize("cleaner", ["lancelet", "lance"])
def test_orphaned_staging_manifests_and_cleanup(ddb, base, so, cleaner):
    """Staging manifests (``_versions/<name>-<uuid>``) a crashed writer left
    behind for versions that were committed by someone else: pylance 14's
    ``cleanup_old_versions`` removes the old versions' final manifests and
    leaves these files in place (checked here, whichever library cleans);
    lancelet does the same, and both still read the dataset the same after
    the other's cleanup."""
    uri = ddb_uri(base)
    for k in range(3):
        lancelet.write_dataset(tbl(k * 10, 10), uri, mode="append" if k else "create", storage_options=so)
    s3 = ddb.client("s3")
    orphans = []
    for v in (1, 3):
        final = f"{base}/_versions/{v2_name(v)}"
        orphan = f"{final}-{uuid.uuid4()}"
        s3.copy_object(Bucket=BUCKET, Key=orphan, CopySource={"Bucket": BUCKET, "Key": final})
        orphans.append(orphan)
    time.sleep(1.1)
    lance.write_dataset(tbl(30, 1), uri, mode="append", storage_options=so)
    mod = {"lancelet": lancelet, "lance": lance}[cleaner]
    stats = mod.dataset(uri, storage_options=so).cleanup_old_versions(older_than=timedelta(seconds=0))
    assert stats.old_versions == 3
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{base}/_versions/")["Contents"])
    assert keys == sorted([f"{base}/_versions/{v2_name(4)}"] + orphans)
    # neither library mistakes an orphan for a version
    assert [v["version"] for v in lancelet.dataset(uri, storage_options=so).versions()] == [4]
    assert [v["version"] for v in lance.dataset(uri, storage_options=so).versions()] == [4]
    assert lancelet.dataset(uri, storage_options=so).count_rows() == lance.dataset(uri, storage_options=so).count_rows() == 31
    lancelet.write_dataset(tbl(40, 1), uri, mode="append", storage_options=so)
    assert lance.dataset(uri, storage_options=so).version == 5


def test_bad_input_exception_classes_against_pylance(ddb, base, so):
    """Which built-in class each bad input raises, next to pylance 14's:
    a missing table on write is an OSError in both (lancelet: NotFoundError);
    an unreachable endpoint an OSError in both after bounded retries. A bad
    URI is a ValueError in lancelet on read and write (pylance 14: ValueError
    on read, OSError on write: lancelet keeps one class for one mistake)."""
    t = tbl(0, 2)
    bad = f"s3+ddb://{BUCKET}/{base}?ddbTableName={TABLE}&extra=1"
    with pytest.raises(OSError):
        lance.write_dataset(t, bad, storage_options=so)
    with pytest.raises(lancelet.exceptions.InvalidInputError) as e:
        lancelet.write_dataset(t, bad, storage_options=so)
    assert "ddbTableName" in str(e.value)
    missing = ddb_uri(base, "absent_table")
    with pytest.raises(OSError):
        lance.write_dataset(t, missing, storage_options=so)
    with pytest.raises(OSError) as e:
        lancelet.write_dataset(t, missing, storage_options=so)
    assert isinstance(e.value, lancelet.exceptions.NotFoundError) and "absent_table" in str(e.value)
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    for mod in (lance, lancelet):
        t0 = time.monotonic()
        with pytest.raises(OSError) as e:
            mod.write_dataset(t, ddb_uri(base), storage_options=dict(so, dynamodb_endpoint=dead))
        assert time.monotonic() - t0 < 30
    assert dead in str(e.value)
    # nothing was written by any of the failures
    assert ddb.items(TABLE, base) == []
    listed = ddb.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=f"{base}/_versions/")
    assert listed.get("KeyCount", 0) == 0
