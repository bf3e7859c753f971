"""``lancelet.spark.merge_insert`` / ``lancelet.spark.delete`` end to end in
Spark (local[2]): the result equals the single-process
``Dataset.merge_insert`` on the same inputs (pylance reads both), the
stats are pylance's, bad input is refused before any task writes, and a
failed job commits nothing and leaves no files. The clause x version x
stable-row-id matrix runs without Spark in test_merge_staged.py; these
are the few end-to-end jobs."""

from __future__ import annotations

import os
import random
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet
import lancelet.spark as ls
from lancelet.exceptions import InvalidInputError

pytestmark = pytest.mark.spark


def _table(rng: random.Random, ids, tag: str) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([None if rng.random() < 0.1 else f"{tag}{rng.randrange(1000)}" for _ in ids], pa.string()),
        "score": pa.array([rng.random() * 100 for _ in ids], pa.float64()),
        "grp": pa.array([rng.randrange(5) for _ in ids], pa.int32()),
    })


def _make(path, version: str, stable: bool, seed: int, n: int = 3000) -> None:
    t = _table(random.Random(seed), list(range(n)), "t")
    lance.write_dataset(t, path, data_storage_version=version, enable_stable_row_ids=stable, max_rows_per_file=700)
    lance.dataset(path).delete("id % 13 = 5")
    lance.dataset(path).create_scalar_index("id", "BTREE")


def _rows(path):
    t = lance.dataset(path).to_table()
    return t.schema, sorted(t.to_pylist(), key=lambda r: (r["id"] is None, r["id"] or 0, repr(r)))


def _files(path, sub: str = "data") -> set:
    d = Path(path) / sub
    return set(os.listdir(d)) if d.exists() else set()


@pytest.mark.parametrize("version,stable", [("2.2", True), ("2.1", False), ("2.0", False)])
def test_upsert_and_sync_equal_single_process(spark, tmp_path, version, stable):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _make(a, version, stable, 1)
    _make(b, version, stable, 1)
    rng = random.Random(2)
    source = _table(rng, rng.sample(range(3000), 800) + list(range(5000, 5300)) + [None], "s")
    df = spark.createDataFrame(source.to_pandas().astype({"id": "Int64"}), "id long, name string, score double, grp int")

    # an upsert with a condition (the dataset's own rows win where their score is higher)
    cond = "source.score > target.score"
    got = ls.merge_insert(df, a, "id", when_matched=cond)
    want = lancelet.dataset(b).merge_insert("id").when_matched_update_all(cond).when_not_matched_insert_all().execute(source)
    assert got == want and all(type(v) is int for v in got.values())
    assert _rows(a) == _rows(b)

    # a sync of one group: source rows replace it, dataset rows of the group the source lacks go
    part = source.filter(pa.compute.equal(source.column("grp"), 1))
    dfp = spark.createDataFrame(part.to_pandas().astype({"id": "Int64"}), "id long, name string, score double, grp int")
    got = ls.merge_insert(dfp, a, "id", when_not_matched_by_source="grp = 1")
    want = (lancelet.dataset(b).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            .when_not_matched_by_source_delete("grp = 1").execute(part))
    assert got == want
    assert _rows(a) == _rows(b)
    assert lance.dataset(a).version == lance.dataset(b).version
    assert lance.dataset(a).to_table(filter="id = 5100").to_pylist() == lance.dataset(b).to_table(filter="id = 5100").to_pylist()

    # a delete by keys (a key listed twice is fine)
    keys = spark.createDataFrame([(i,) for i in [1, 2, 2, 7, 99999]], "id long")
    got = ls.delete(a, keys, "id")
    n = lancelet.dataset(b).merge_insert("id").when_matched_delete().execute(pa.table({"id": pa.array([1, 2, 7, 99999], pa.int64())}))
    assert got == n
    assert _rows(a) == _rows(b)
    assert not any(f.endswith(".lance") and f not in _referenced(a) for f in _files(a))


def _referenced(path) -> set:
    ds = lancelet.dataset(path)
    return {df.path for f in ds.get_fragments() for df in f.data_files()}


def test_bad_input_and_failed_jobs_commit_nothing(spark, tmp_path):
    path = str(tmp_path / "bad")
    _make(path, "2.1", False, 3, n=500)
    before, files, deletions = lance.dataset(path).version, _files(path), _files(path, "_deletions")
    cases = [
        (spark.createDataFrame([("x", 1.0)], "name string, score double"), "key column \"id\" is not in the source"),
        (spark.createDataFrame([("1", 1.0)], "id string, score double"), "source column 'id' has Spark type string"),
        (spark.createDataFrame([(1, 1)], "id long, extra int"), "\"extra\" is not in the dataset"),
    ]
    for df, match in cases:
        with pytest.raises(InvalidInputError, match=match):
            ls.merge_insert(df, path, "id")
    with pytest.raises(InvalidInputError, match="when_not_matched must be"):
        ls.merge_insert(cases[0][0], path, "id", when_not_matched="update")
    # duplicate keys in the source: pylance's error, after the tasks wrote; nothing stays
    dup = spark.createDataFrame([(7, "a", 1.0, 1), (7, "b", 2.0, 1), (600, "c", 3.0, 2)],
                                "id long, name string, score double, grp int")
    with pytest.raises(InvalidInputError, match="Ambiguous merge inserts are prohibited"):
        ls.merge_insert(dup, path, "id")
    # when_matched="fail"
    with pytest.raises(InvalidInputError, match="found matching row with key values: id = 7"):
        ls.merge_insert(dup.limit(1), path, "id", when_matched="fail")
    # delete: a key missing from the keys, or typed differently
    with pytest.raises(InvalidInputError, match="key column 'id' is not in keys_df"):
        ls.delete(path, spark.createDataFrame([(1,)], "other long"), "id")
    with pytest.raises(InvalidInputError, match="source column 'id' has Spark type int"):
        ls.delete(path, spark.createDataFrame([(1,)], "id int"), "id")
    assert lance.dataset(path).version == before
    assert _files(path) == files
    assert _files(path, "_deletions") == deletions


@pytest.mark.parametrize("fail", ["merge", "merge-exit", "deletions", "deletions-exit"])
def test_job_failing_midway_leaves_nothing(spark, tmp_path, monkeypatch, fail):
    """One task fails after writing its files (raising, or dying without a
    word): no version is committed and no data or deletion file of the job
    stays, those of the other tasks and of the dead one included."""
    import time

    path = str(tmp_path / "midway")
    _make(path, "2.2", True, 8, n=2000)
    before, files, deletions = lance.dataset(path).version, _files(path), _files(path, "_deletions")
    rng = random.Random(9)
    # every fragment touched (fragment 0 too: the deletion hook's), inserts too
    source = _table(rng, list(range(0, 2000, 3)) + list(range(9000, 9100)), "s")
    df = spark.createDataFrame(source.to_pandas(), "id long, name string, score double, grp int")
    monkeypatch.setenv("LANCELET_SPARK_MERGE_FAIL_TASK", fail)
    with pytest.raises(Exception, match="fails after writing" if not fail.endswith("exit") else "."):
        ls.merge_insert(df, path, "id")
    monkeypatch.delenv("LANCELET_SPARK_MERGE_FAIL_TASK")
    assert lance.dataset(path).version == before
    # a cancelled task still running removes its own files once it sees the job closed
    deadline = time.time() + 30
    while (_files(path), _files(path, "_deletions")) != (files, deletions) and time.time() < deadline:
        time.sleep(0.5)
    assert _files(path) == files
    assert _files(path, "_deletions") == deletions
    # the same job without the failure commits
    stats = ls.merge_insert(df, path, "id")
    assert stats["num_inserted_rows"] == 100 + sum(1 for i in range(0, 2000, 3) if i % 13 == 5)
    assert lance.dataset(path).version == before + 1


def test_upsert_and_delete_while_pylance_deletes(spark, tmp_path):
    """pylance deletes other rows of the fragments the job touches while the
    Spark job runs: the commit merges both deletion vectors (or re-runs);
    no concurrent delete is lost, every source row is in."""
    import threading

    path = str(tmp_path / "cdel")
    _make(path, "2.1", False, 10, n=2100)
    rng = random.Random(11)
    keys = rng.sample([i for i in range(2100) if i % 4 == 0], 300)
    source = _table(rng, keys + list(range(8000, 8050)), "s")
    df = spark.createDataFrame(source.to_pandas(), "id long, name string, score double, grp int")
    stop = threading.Event()
    gone = []

    def delete():
        k = 0
        while not stop.is_set() and k < 15:
            lo = 140 * k
            lance.dataset(path).delete(f"id >= {lo} AND id < {lo + 140} AND id % 4 = 1")
            gone.extend(i for i in range(lo, lo + 140) if i % 4 == 1)
            k += 1
            stop.wait(0.2)

    t = threading.Thread(target=delete)
    t.start()
    try:
        stats = ls.merge_insert(df, path, "id")
        dstats = ls.delete(path, spark.createDataFrame([(i,) for i in keys[:50]], "id long"), "id")
    finally:
        stop.set()
        t.join()
    assert dstats["num_deleted_rows"] == 50
    got = lance.dataset(path).to_table()
    ids = got.column("id").to_pylist()
    assert len(ids) == len(set(ids))
    assert not set(gone) & set(ids), "a concurrent delete was lost"
    assert not set(keys[:50]) & set(ids)
    by_id = {r["id"]: r for r in got.to_pylist()}
    assert all(by_id[r["id"]] == r for r in source.to_pylist() if r["id"] not in keys[:50])
    assert stats["num_updated_rows"] + stats["num_inserted_rows"] == 350
    assert lancelet.dataset(path).to_table().sort_by("id").equals(got.sort_by("id"))


def test_upsert_while_pylance_appends(spark, tmp_path):
    """pylance appends while the Spark job runs: the merge is rebased over
    them (or re-run), nothing appended is lost, every source row is in."""
    import threading

    path = str(tmp_path / "conc")
    _make(path, "2.2", True, 5, n=1500)
    rng = random.Random(6)
    source = _table(rng, rng.sample(range(1500), 300) + list(range(7000, 7100)), "s")
    df = spark.createDataFrame(source.to_pandas(), "id long, name string, score double, grp int")
    stop = threading.Event()
    appended = []

    def append():
        k = 0
        while not stop.is_set() and k < 20:
            ids = list(range(20000 + 10 * k, 20000 + 10 * k + 10))
            lance.write_dataset(_table(random.Random(k), ids, "c"), path, mode="append")
            appended.extend(ids)
            k += 1
            stop.wait(0.3)

    t = threading.Thread(target=append)
    t.start()
    try:
        stats = ls.merge_insert(df, path, "id")
    finally:
        stop.set()
        t.join()
    live = set(range(1500)) - {i for i in range(1500) if i % 13 == 5}
    want_ins = sum(1 for i in source.column("id").to_pylist() if i not in live)
    assert stats == {"num_inserted_rows": want_ins, "num_updated_rows": 400 - want_ins, "num_deleted_rows": 0}
    got = lance.dataset(path).to_table()
    ids = got.column("id").to_pylist()
    assert len(ids) == len(set(ids))
    assert set(appended) <= set(ids)
    by_id = {r["id"]: r for r in got.to_pylist()}
    assert all(by_id[r["id"]] == r for r in source.to_pylist())
    assert lancelet.dataset(path).count_rows() == len(ids)
