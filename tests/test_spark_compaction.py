"""``lancelet.spark.compact_files``: one Spark task per compaction task, one
commit on the driver; a failed job commits nothing and removes its files."""

from __future__ import annotations

import os

import lance
import lance.debug
import pyarrow as pa
import pytest

import lancelet
import lancelet.spark as ls
from lancelet.optimize import Compaction, CompactionMetrics

pytestmark = pytest.mark.spark


def _dataset(path, fragments=8, rows=40):
    for i in range(fragments):
        t = pa.table({"x": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
                      "s": [f"s{j}" for j in range(i * rows, (i + 1) * rows)]})
        lancelet.write_dataset(t, path, mode="append" if i else "create", enable_stable_row_ids=True)
    lancelet.dataset(path).delete("x % 9 = 4")


def test_spark_compaction_commits_once(spark, tmp_path):
    path = str(tmp_path / "ds")
    _dataset(path)
    before = lancelet.dataset(path).to_table(with_row_id=True)
    v0 = lancelet.dataset(path).version
    plan = Compaction.plan(lancelet.dataset(path), {"target_rows_per_fragment": 100})
    assert plan.num_tasks() == 2
    m = ls.compact_files(path, spark=spark, target_rows_per_fragment=100)
    assert isinstance(m, CompactionMetrics) and m.fragments_removed == 8 and m.fragments_added == 2
    ds = lance.dataset(path)
    assert ds.version == v0 + 2
    txns = lance.debug.list_transactions(ds, 2)  # newest first
    assert [t.split("operation: ")[1].split(" ")[0] for t in txns] == ["Rewrite", "ReserveFragments"]
    assert lancelet.dataset(path).to_table(with_row_id=True).equals(before)
    assert ds.to_table(with_row_id=True).equals(before)
    # only referenced data files are left
    referenced = {d.path for f in ds.get_fragments() for d in f.data_files()}
    old = {d.path for f in lance.dataset(path, version=v0).get_fragments() for d in f.data_files()}
    assert set(os.listdir(os.path.join(path, "data"))) == referenced | old
    # nothing to do: no job, no commit
    assert ls.compact_files(path, spark=spark, target_rows_per_fragment=100) == CompactionMetrics()
    assert lancelet.dataset(path).version == v0 + 2


def test_failed_spark_job_commits_nothing(spark, tmp_path):
    path = str(tmp_path / "ds")
    _dataset(path)
    ds = lancelet.dataset(path)
    files_before = set(os.listdir(os.path.join(path, "data")))
    # break one fragment of the last task: its task fails, the others succeed
    last = ds.get_fragments()[-1].data_files()[0].path
    victim = os.path.join(path, "data", last)
    os.rename(victim, victim + ".moved")
    with pytest.raises(Exception):  # noqa: B017 (raised in a Spark task)
        ls.compact_files(path, spark=spark, target_rows_per_fragment=100)
    os.rename(victim + ".moved", victim)
    assert lancelet.dataset(path).version == ds.version
    assert set(os.listdir(os.path.join(path, "data"))) == files_before, "the job's files are removed"
    assert lancelet.dataset(path).to_table().equals(ds.to_table())
