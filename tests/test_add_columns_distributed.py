"""Distributed add_columns: lancelet.distributed.plan_add_columns (plan,
pickle, write fragments anywhere in any order, one commit) and
lancelet.spark.add_columns (a task per fragment, one driver commit; a
failed job commits nothing and leaves no files). Also reading evolved
datasets through the distributed/Spark paths."""
from __future__ import annotations

import os
import pickle

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet
import lancelet.distributed as dist
from lancelet.exceptions import CommitConflictError, InvalidInputError


def _make(uri, version="2.2", stable=False):
    t = pa.table({"id": pa.array(range(30), pa.int64()), "text": [f"t{i}" for i in range(30)]})
    lance.write_dataset(t, uri, max_rows_per_file=10, data_storage_version=version, enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 7 = 3")
    return lance.dataset(uri)


def _double(batch):
    return pa.record_batch([pc.multiply(batch["id"], 2)], names=["id2"])


def _files(uri):
    return sorted(os.listdir(os.path.join(uri, "data")))


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("stable", [False, True])
def test_plan_write_commit_any_order(tmp_path, version, stable):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _make(a, version, stable)
    _make(b, version, stable)
    schema = pa.schema([("id2", pa.int64())])
    plan = dist.plan_add_columns(a, schema, read_columns=["id"])
    assert list(plan.fragment_ids) == [0, 1, 2]
    plan = pickle.loads(pickle.dumps(plan))
    staged = [plan.write(fid, _double) for fid in reversed(plan.fragment_ids)]
    ds = plan.commit(staged)
    assert ds.version == 3
    lance.dataset(b).add_columns(_double, read_columns=["id"])
    la, lb = lance.dataset(a), lance.dataset(b)
    assert [[(d.fields, d.column_indices) for d in f.metadata.files] for f in la.get_fragments()] == \
        [[(d.fields, d.column_indices) for d in f.metadata.files] for f in lb.get_fragments()]
    assert type(la.get_transactions(1)[0].operation).__name__ == "Merge"
    assert la.to_table(with_row_id=True).equals(lb.to_table(with_row_id=True))
    assert lancelet.dataset(a).to_table(with_row_id=True).equals(lb.to_table(with_row_id=True))
    # only the committed job files remain
    assert all(not f.startswith(plan.file_prefix) or f in {d.path for fr in la.get_fragments() for d in fr.metadata.files}
               for f in _files(a))


def test_plan_checks_and_conflicts(tmp_path):
    u = str(tmp_path / "d")
    _make(u)
    with pytest.raises(InvalidInputError, match="text"):
        dist.plan_add_columns(u, pa.schema([("text", pa.string())]))
    with pytest.raises(InvalidInputError, match="nope"):
        dist.plan_add_columns(u, pa.schema([("z", pa.int64())]), read_columns=["nope"])
    before = _files(u)
    plan = dist.plan_add_columns(u, pa.schema([("id2", pa.int64())]), read_columns=["id", "_rowaddr"])
    staged = [plan.write(fid, _double) for fid in plan.fragment_ids]
    with pytest.raises(InvalidInputError, match="fragment"):
        plan.commit(staged[:2])  # a fragment is missing
    with pytest.raises(InvalidInputError, match="twice"):
        plan.commit(staged + staged[:1])
    # a concurrent append: the Merge must not commit
    lance.dataset(u).insert(pa.table({"id": pa.array([100], pa.int64()), "text": ["x"]}))
    with pytest.raises(CommitConflictError):
        plan.commit(staged)
    assert lance.dataset(u).version == 3
    plan.abort()
    assert [f for f in _files(u) if f.startswith(plan.file_prefix)] == []
    # a task finishing after the abort removes its own file
    with pytest.raises(CommitConflictError):
        plan.write(plan.fragment_ids[0], _double)
    assert [f for f in _files(u) if f.startswith(plan.file_prefix)] == []
    assert len(_files(u)) == len(before) + 1  # only the append's file is new


def test_wrong_function_output(tmp_path):
    u = str(tmp_path / "d")
    _make(u)
    plan = dist.plan_add_columns(u, pa.schema([("id2", pa.int64())]), read_columns=["id"])
    with pytest.raises(InvalidInputError, match="id2"):
        plan.write(0, lambda b: pa.record_batch([b["id"]], names=["other"]))
    with pytest.raises(ZeroDivisionError):
        plan.write(0, lambda b: 1 / 0)
    plan.abort()
    assert [f for f in _files(u) if f.startswith(plan.file_prefix)] == []


def test_distributed_write_onto_evolved_dataset(tmp_path):
    """The distributed write path appends to a dataset whose fragments have
    several data files, dropped and cast columns."""
    u = str(tmp_path / "d")
    ds = _make(u)
    ds.add_columns({"len": "length(text)"})
    ds.alter_columns({"path": "id", "data_type": pa.int32()})
    ds.drop_columns(["text"])
    schema = lancelet.dataset(u).schema
    wp = dist.plan_write(u, schema, mode="append")
    staged = wp.write(pa.table({"id": pa.array([500, 501], pa.int32()), "len": pa.array([1, 2], pa.int32())}))
    wp.commit(staged)
    want = lance.dataset(u).to_table()
    assert lancelet.dataset(u).to_table().equals(want)
    assert want.num_rows == 30 - 4 + 2


@pytest.mark.spark
def test_spark_add_columns(tmp_path, spark):
    import lancelet.spark

    u = str(tmp_path / "d")
    _make(u, "2.1", stable=True)
    ds = lancelet.spark.add_columns(u, _double, pa.schema([("id2", pa.int64())]), read_columns=["id"], spark=spark,
                                    batch_size=4)
    assert ds.version == 3
    t = lance.dataset(u).to_table()
    assert t["id2"].to_pylist() == [i * 2 for i in t["id"].to_pylist()]
    assert type(lance.dataset(u).get_transactions(1)[0].operation).__name__ == "Merge"
    # Spark reads the evolved dataset (fragments with two data files)
    df = spark.read.format("lancelet").load(u)
    assert sorted(r["id2"] for r in df.collect()) == sorted(t["id2"].to_pylist())


@pytest.mark.spark
def test_spark_add_columns_failure_commits_nothing(tmp_path, spark):
    import lancelet.spark

    u = str(tmp_path / "d")
    _make(u)
    before = (lance.dataset(u).version, _files(u))

    def bad(batch):
        if 20 in batch["id"].to_pylist():
            raise ValueError("task failure")
        return _double(batch)

    with pytest.raises(Exception, match="task failure"):
        lancelet.spark.add_columns(u, bad, pa.schema([("id2", pa.int64())]), read_columns=["id"], spark=spark)
    assert (lance.dataset(u).version, _files(u)) == before
