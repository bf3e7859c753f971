"""The write side of datasets: lancelet writes, pylance 14 reads (and keeps
writing), and the other way round; commits under concurrency; failures
leave the dataset unchanged."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import lance
import pyarrow as pa
import pyarrow.ipc
import pytest

import lancelet


def tbl(start, n, with_s=True):
    cols = {"x": pa.array(range(start, start + n), pa.int64())}
    if with_s:
        cols["s"] = pa.array([None if i % 7 == 0 else f"v{i}" for i in range(start, start + n)], pa.string())
    return pa.table(cols)


def same(lance_ds, ll_ds):
    a = lance_ds.to_table()
    b = ll_ds.to_table()
    assert a.schema.remove_metadata() == b.schema.remove_metadata()
    assert a.to_pylist() == b.to_pylist()


def check_every_version(path):
    ll = lancelet.dataset(path)
    for v in range(1, ll.latest_version + 1):
        same(lance.dataset(path, version=v), lancelet.dataset(path, version=v))


def test_create_append_overwrite_read_by_pylance(tmp_path):
    p = str(tmp_path / "ds")
    ds = lancelet.write_dataset(tbl(0, 25), p, max_rows_per_file=10)
    assert ds.version == 1 and len(ds.get_fragments()) == 3
    ds = lancelet.write_dataset(tbl(25, 5), p, mode="append")
    assert ds.version == 2
    ds.insert(tbl(30, 3))
    assert ds.version == 3
    lancelet.write_dataset(tbl(100, 4), p, mode="overwrite")
    check_every_version(p)
    l3 = lance.dataset(p, version=3)
    assert l3.to_table()["x"].to_pylist() == list(range(33))
    assert [f.fragment_id for f in l3.get_fragments()] == [0, 1, 2, 3, 4]
    assert lance.dataset(p).to_table()["x"].to_pylist() == [100, 101, 102, 103]
    # layout: V2 manifest names, hint, transaction files, data file names
    names = sorted(os.listdir(os.path.join(p, "_versions")))
    assert names == sorted([f"{2**64 - 1 - v:020d}.manifest" for v in range(1, 5)] + ["latest_version_hint.json"])
    assert json.load(open(os.path.join(p, "_versions", "latest_version_hint.json"))) == {"version": 4}
    txns = sorted(os.listdir(os.path.join(p, "_transactions")))
    assert [t.split("-", 1)[0] for t in txns] == ["0", "1", "2", "3"]
    assert all(re.fullmatch(r"\d+-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.txn", t) for t in txns)
    for f in os.listdir(os.path.join(p, "data")):
        assert re.fullmatch(r"[01]{24}[0-9a-f]{26}\.lance", f), f
    # pylance sees the transactions embedded in the manifests
    ops = [type(t.operation).__name__ for t in lance.dataset(p).get_transactions(4)] if hasattr(lance.LanceDataset, "get_transactions") else []
    if ops:
        assert ops[0] in ("Overwrite",)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_file_versions(tmp_path, version):
    p = str(tmp_path / "ds")
    t = pa.table({"i": pa.array([1, None, 3], pa.int32()), "l": pa.array([[1], None, []], pa.list_(pa.int64())),
                  "st": pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": None}, {"a": None, "b": "z"}])})
    lancelet.write_dataset(t, p, data_storage_version=version)
    lancelet.write_dataset(t, p, mode="append")
    ld = lance.dataset(p)
    assert ld.data_storage_version == version
    assert ld.to_table().to_pylist() == t.to_pylist() * 2


def test_delete_files_like_pylance(tmp_path):
    p = str(tmp_path / "ds")
    ds = lancelet.write_dataset(tbl(0, 100), p)
    assert ds.delete("x < 3 or x = 50")["num_deleted_rows"] == 4
    assert ds.version == 2
    [f] = ds.get_fragments()
    name = f.deletion_file()
    assert re.fullmatch(r"_deletions/0-1-\d+\.arrow", name)
    r = pa.ipc.open_file(os.path.join(p, name))
    assert r.schema == pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
    assert sorted(r.read_all()["row_id"].to_pylist()) == [0, 1, 2, 50]
    check_every_version(p)
    assert lance.dataset(p).count_rows() == 96

    p2 = str(tmp_path / "big")
    ds = lancelet.write_dataset(tbl(0, 6000), p2)
    assert ds.delete("x < 4999")["num_deleted_rows"] == 4999
    assert lance.dataset(p2).get_fragments()[0].deletion_file().endswith(".arrow") if hasattr(lance.LanceFragment, "deletion_file") else True
    assert ds.get_fragments()[0].deletion_file().endswith(".arrow")
    assert ds.delete("x = 4999")["num_deleted_rows"] == 1
    assert ds.get_fragments()[0].deletion_file().endswith(".bin")
    with open(os.path.join(p2, ds.get_fragments()[0].deletion_file()), "rb") as fh:
        assert fh.read(4) == b"\x3a\x30\x00\x00"
    check_every_version(p2)
    assert lance.dataset(p2).count_rows() == 1000
    # deleting a whole fragment drops it
    ds.delete("x >= 0")
    assert lance.dataset(p2).count_rows() == 0 and lance.dataset(p2).get_fragments() == []


def test_tags_and_restore(tmp_path):
    p = str(tmp_path / "ds")
    ds = lancelet.write_dataset(tbl(0, 5), p)
    ds.insert(tbl(5, 5))
    ds.tags.create("t1", 1)
    text = open(os.path.join(p, "_refs", "tags", "t1.json")).read()
    j = json.loads(text)
    assert list(j) == ["branch", "version", "createdAt", "updatedAt", "manifestSize", "metadata"]
    assert j["version"] == 1 and j["branch"] is None and j["metadata"] == {}
    assert j["manifestSize"] == os.path.getsize(os.path.join(p, "_versions", f"{2**64 - 2:020d}.manifest"))
    assert text.startswith('{\n  "branch": null,\n  "version": 1,\n')
    lt = lance.dataset(p).tags.list()
    assert lt["t1"]["version"] == 1 and lt["t1"]["manifest_size"] == j["manifestSize"]
    assert lance.dataset(p, version="t1").count_rows() == 5
    with pytest.raises(lancelet.AlreadyExistsError):
        ds.tags.create("t1", 2)
    with pytest.raises(lancelet.NotFoundError):
        ds.tags.create("t9", 99)
    # pylance can delete and re-create our tag
    lance.dataset(p).tags.delete("t1")
    lance.dataset(p).tags.create("t1", 2)
    assert lancelet.dataset(p, version="t1").count_rows() == 10
    ds.tags.delete("t1")
    assert lance.dataset(p).tags.list() == {}
    with pytest.raises(lancelet.NotFoundError):
        ds.tags.delete("t1")
    # restore
    old = lancelet.dataset(p, version=1)
    old.restore()
    assert old.version == 3
    check_every_version(p)
    assert lance.dataset(p).count_rows() == 5
    lance.dataset(p).insert(tbl(50, 1))  # pylance keeps going on top
    assert lancelet.dataset(p).to_table()["x"].to_pylist() == [0, 1, 2, 3, 4, 50]


def test_stable_row_ids_like_pylance(tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    a = lancelet.write_dataset(tbl(0, 10), ours, enable_stable_row_ids=True)
    b = lance.write_dataset(tbl(0, 10), theirs, enable_stable_row_ids=True)
    a.insert(tbl(10, 5))
    b.insert(tbl(10, 5))
    a.delete("x = 3 or x = 12")
    b.delete("x = 3 or x = 12")
    for v in (1, 2, 3):
        x = lance.dataset(ours, version=v).to_table(with_row_id=True)
        y = lance.dataset(theirs, version=v).to_table(with_row_id=True)
        assert x.to_pylist() == y.to_pylist()
        assert lancelet.dataset(ours, version=v).to_table(with_row_id=True).to_pylist() == y.to_pylist()
    assert lancelet.dataset(ours).has_stable_row_ids
    # row version columns, when pylance exposes them
    try:
        cols = ["x", "_row_created_at_version", "_row_last_updated_at_version"]
        x = lance.dataset(ours).to_table(columns=cols)
        y = lance.dataset(theirs).to_table(columns=cols)
    except Exception:
        return
    assert x.to_pylist() == y.to_pylist()


def test_pylance_continues_on_lancelet_dataset(tmp_path):
    p = str(tmp_path / "ds")
    lancelet.write_dataset(tbl(0, 30), p, max_rows_per_file=10)
    ld = lance.dataset(p)
    ld.insert(tbl(30, 5))
    ld.delete("x < 2")
    lancelet.dataset(p).insert(tbl(35, 5))
    lancelet.dataset(p).delete("x >= 38")
    ld = lance.dataset(p)
    ld.optimize.compact_files()
    check_every_version(p)
    want = [i for i in range(38) if i >= 2]
    assert sorted(lancelet.dataset(p).to_table()["x"].to_pylist()) == want
    assert sorted(lance.dataset(p).to_table()["x"].to_pylist()) == want
    lancelet.dataset(p).insert(tbl(90, 1))
    assert sorted(lance.dataset(p).to_table()["x"].to_pylist()) == want + [90]


def test_lancelet_continues_on_pylance_dataset(tmp_path):
    p = str(tmp_path / "ds")
    lance.write_dataset(tbl(0, 10), p)
    ds = lancelet.dataset(p)
    ds.insert(tbl(10, 10))
    assert ds.delete("x >= 5 and x < 15")["num_deleted_rows"] == 10
    check_every_version(p)
    assert lance.dataset(p).to_table()["x"].to_pylist() == list(range(5)) + list(range(15, 20))
    # with a btree index present, the index survives our commits
    lance.dataset(p).create_scalar_index("x", "BTREE")
    lancelet.dataset(p).insert(tbl(20, 1))
    assert [i["name"] for i in lance.dataset(p).list_indices()] == ["x_idx"]
    assert lance.dataset(p).to_table(filter="x = 20")["x"].to_pylist() == [20]


def test_inputs_and_modes(tmp_path):
    import pandas as pd
    p = str(tmp_path / "ds")
    lancelet.write_dataset(pd.DataFrame({"x": [1, 2], "s": ["a", None]}), p)
    reader = pa.RecordBatchReader.from_batches(tbl(0, 1).schema, iter(tbl(10, 6).to_batches(max_chunksize=2)))
    lancelet.write_dataset(reader, p, mode="append")
    assert lance.dataset(p).to_table()["x"].to_pylist() == [1, 2, 10, 11, 12, 13, 14, 15]
    with pytest.raises(lancelet.AlreadyExistsError):
        lancelet.write_dataset(tbl(0, 1), p)
    with pytest.raises(lancelet.InvalidInputError):
        lancelet.write_dataset(tbl(0, 1), p, mode="bogus")
    # empty dataset
    e = lancelet.write_dataset(tbl(0, 0), str(tmp_path / "empty"))
    assert lance.dataset(str(tmp_path / "empty")).count_rows() == 0 and e.count_rows() == 0


def test_schema_mismatch_names_the_field(tmp_path):
    p = str(tmp_path / "ds")
    ds = lancelet.write_dataset(tbl(0, 3), p)
    # leaving out a nullable column is fine, as in pylance (see test_append_schema.py)
    ds.insert(tbl(0, 2, with_s=False))
    assert lancelet.dataset(p).to_table()["s"].to_pylist()[-2:] == [None, None]
    bad = tbl(0, 2).append_column("extra", pa.array([1, 2]))
    with pytest.raises(lancelet.InvalidInputError, match='"extra"'):
        lancelet.write_dataset(bad, p, mode="append")
    wrong_type = pa.table({"x": pa.array(["a"]), "s": pa.array(["b"])})
    with pytest.raises(lancelet.InvalidInputError, match='"x"'):
        ds.insert(wrong_type)
    assert lancelet.dataset(p).version == 2


def test_bad_batch_mid_stream_leaves_dataset_unchanged(tmp_path):
    p = str(tmp_path / "ds")
    lancelet.write_dataset(tbl(0, 3), p)
    before = sorted(os.listdir(os.path.join(p, "_versions")))

    def gen():
        yield tbl(3, 3).to_batches()[0]
        yield tbl(6, 3).to_batches()[0]
        raise RuntimeError("boom in the middle")

    reader = pa.RecordBatchReader.from_batches(tbl(0, 1).schema, gen())
    with pytest.raises(lancelet.LanceletError, match="boom"):
        lancelet.write_dataset(reader, p, mode="append", max_rows_per_file=2)
    assert sorted(os.listdir(os.path.join(p, "_versions"))) == before
    assert lance.dataset(p).version == 1 and lance.dataset(p).count_rows() == 3
    # a batch with nulls in a non-nullable field, mid-stream
    schema = pa.schema([pa.field("x", pa.int64(), nullable=False)])
    q = str(tmp_path / "nn")
    lancelet.write_dataset(pa.table({"x": [1]}, schema=schema), q)
    good = pa.record_batch([pa.array([2], pa.int64())], schema=schema)
    bad = pa.record_batch([pa.array([None], pa.int64())], names=["x"])
    reader = pa.RecordBatchReader.from_batches(pa.schema([pa.field("x", pa.int64())]), iter([good.cast(pa.schema([pa.field("x", pa.int64())])), bad]))
    with pytest.raises(lancelet.InvalidInputError, match='"x"'):
        lancelet.write_dataset(reader, q, mode="append")
    assert lance.dataset(q).version == 1


def test_delete_predicates(tmp_path):
    p = str(tmp_path / "ds")
    ds = lancelet.write_dataset(tbl(0, 20), p)
    assert ds.delete("s is null")["num_deleted_rows"] == 3
    assert ds.delete("s in ('v1', 'v2')")["num_deleted_rows"] == 2
    assert ds.delete("x > 100")["num_deleted_rows"] == 0
    assert ds.version == 4  # a delete matching nothing still commits, as pylance's
    assert ds.delete("s LIKE 'v1%' AND x BETWEEN 10 AND 12")["num_deleted_rows"] == 3
    assert ds.version == 5
    with pytest.raises(lancelet.InvalidInputError):
        ds.delete("no_such_column = 1")
    assert lance.dataset(p).to_table()["x"].to_pylist() == [3, 4, 5, 6, 8, 9, 13, 15, 16, 17, 18, 19]
    check_every_version(p)


WORKER = textwrap.dedent("""
    import sys, time, json
    import pyarrow as pa
    kind, path, wid, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    acked = []
    if kind == "lancelet":
        import lancelet
        for k in range(n):
            x = wid * 1000 + k
            for attempt in range(50):
                try:
                    lancelet.dataset(path).insert(pa.table({"x": pa.array([x], pa.int64()), "w": pa.array([wid], pa.int64())}))
                    acked.append(x)
                    break
                except lancelet.CommitConflictError:
                    time.sleep(0.01)
    else:
        import lance
        for k in range(n):
            x = wid * 1000 + k
            lance.write_dataset(pa.table({"x": pa.array([x], pa.int64()), "w": pa.array([wid], pa.int64())}), path, mode="append")
            acked.append(x)
    print(json.dumps(acked))
""")


def test_concurrent_writers(tmp_path):
    p = str(tmp_path / "ds")
    lancelet.write_dataset(pa.table({"x": pa.array([-1], pa.int64()), "w": pa.array([-1], pa.int64())}), p)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    n = 6
    procs = [subprocess.Popen([sys.executable, str(script), "lancelet", p, str(w), str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for w in range(1, 4)]
    procs.append(subprocess.Popen([sys.executable, str(script), "lance", p, "9", str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env))
    acked = []
    for pr in procs:
        out, err = pr.communicate(timeout=300)
        assert pr.returncode == 0, err.decode()[-3000:]
        acked += json.loads(out.decode().strip().splitlines()[-1])
    assert len(acked) == 4 * n
    ll = lancelet.dataset(p)
    xs = ll.to_table()["x"].to_pylist()
    assert sorted(xs) == sorted(acked + [-1]), "lost or duplicated rows"
    assert len(xs) == len(set(xs))
    assert [v["version"] for v in ll.versions()] == list(range(1, ll.latest_version + 1))
    assert ll.latest_version == 1 + 4 * n
    assert sorted(lance.dataset(p).to_table()["x"].to_pylist()) == sorted(xs)


def test_conflicts_and_rebase(tmp_path):
    p = str(tmp_path / "ds")
    lancelet.write_dataset(tbl(0, 20), p, max_rows_per_file=10)
    a, b, c, c2 = (lancelet.dataset(p) for _ in range(4))
    assert a.delete("x = 1")["num_deleted_rows"] == 1                       # v2, fragment 0
    assert b.delete("x = 15")["num_deleted_rows"] == 1                      # other fragment: rebased -> v3
    assert c.delete("x = 2")["num_deleted_rows"] == 1                       # fragment 0, other row: deletions merged -> v4
    with pytest.raises(lancelet.CommitConflictError):
        c2.delete("x = 1", conflict_retries=0)          # the same row: must re-run, not allowed to
    assert c2.delete("x = 1")["num_deleted_rows"] == 0                      # re-run on v4: nothing left to delete -> v5
    d = lancelet.dataset(p, version=1)
    d.insert(tbl(100, 1))                               # append over deletes: rebased -> v6
    e = lancelet.dataset(p, version=6)
    lance.write_dataset(tbl(500, 2), p, mode="overwrite")  # v7 by pylance
    with pytest.raises(lancelet.CommitConflictError):
        e.insert(tbl(200, 1))                           # append over an overwrite: conflict
    assert lancelet.dataset(p).latest_version == 7
    check_every_version(p)
    assert lance.dataset(p, version=6).to_table()["x"].to_pylist() == [0] + list(range(3, 15)) + list(range(16, 20)) + [100]


def test_many_chunk_table_and_stream_write_the_same_dataset(tmp_path):
    """A table's chunks are gathered into larger units of work; a stream's
    batches are not. Both give the same fragments and rows, and pylance
    reads them as written (strings, vectors, nulls across chunk edges)."""
    import numpy as np

    rng = np.random.default_rng(3)
    chunks = []
    for i in range(40):
        n = int(rng.integers(1, 3000))
        vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 16, dtype=np.float32)), 16)
        chunks.append(pa.record_batch({
            "id": pa.array(np.arange(n, dtype=np.int64) + 10_000 * i),
            "s": pa.array([f"w{int(x)} text {i}" if x % 7 else None for x in rng.integers(0, 500, n)]),
            "v": vec,
        }))
    table = pa.Table.from_batches(chunks)
    a, b = str(tmp_path / "from_table"), str(tmp_path / "from_stream")
    lancelet.write_dataset(table, a, max_rows_per_file=20_000)
    lancelet.write_dataset(pa.RecordBatchReader.from_batches(table.schema, chunks), b, max_rows_per_file=20_000)
    for uri in (a, b):
        ds = lance.dataset(uri)
        assert ds.to_table().equals(table.combine_chunks())
        assert [f.count_rows() for f in ds.get_fragments()] == [f.count_rows() for f in lance.dataset(a).get_fragments()]
    assert lancelet.dataset(a).to_table().equals(lancelet.dataset(b).to_table())
