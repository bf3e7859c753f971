"""Compaction (``Dataset.optimize.compact_files``, ``lancelet.optimize.Compaction``)
against pylance 14 as the oracle, both directions.

* planner parity: on seeded random fragment layouts (sizes, deletions,
  indices, options) lancelet plans exactly pylance's tasks, and compacting
  gives the same fragments (ids, row counts, rows, stable row ids and
  version sequences byte for byte);
* interop: lancelet compacts pylance's datasets (2.0/2.1/2.2, plain and
  stable row ids, deletions, multi-file fragments, dropped columns) and
  pylance reads them as its own and writes on them; pylance compacts
  lancelet's;
* conflicts through a stale dataset object, distributed tasks (pickled),
  progress reports, bad options.
"""

from __future__ import annotations

import pickle
import random
import re
import shutil

import lance
import lance.debug
import numpy as np
import pyarrow as pa
import pytest
from lance.optimize import Compaction as LanceCompaction

import lancelet
from lancelet.exceptions import CommitConflictError, InvalidInputError, UnsupportedError
from lancelet.optimize import Compaction, CompactionMetrics, CompactionTask, RewriteResult

VERSIONS = ["2.0", "2.1", "2.2"]


def _table(start: int, n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed + start)
    return pa.table({
        "x": pa.array(np.arange(start, start + n), pa.int64()),
        "s": pa.array([None if i % 7 == 0 else f"row {i} " + "w" * int(rng.integers(0, 12)) for i in range(start, start + n)],
                      pa.string()),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, dtype=np.float32)), 4),
    })


def _layout(path, sizes, deletions, *, version="2.2", stable=False, writer="pylance") -> None:
    """A dataset with one fragment per entry of ``sizes`` (x = 0, 1, ...)
    and rows ``x % m == r`` deleted per fragment for each ``(frag, m, r)``."""
    start = 0
    for i, n in enumerate(sizes):
        mode = "append" if i else "create"
        if writer == "pylance":
            lance.write_dataset(_table(start, n), path, mode=mode, data_storage_version=version,
                                enable_stable_row_ids=stable)
        else:
            lancelet.write_dataset(_table(start, n), path, mode=mode, data_storage_version=version,
                                   enable_stable_row_ids=stable)
        start += n
    bounds = np.cumsum([0] + list(sizes))
    for frag, m, r in deletions:
        lo, hi = bounds[frag], bounds[frag + 1]
        pred = f"x >= {lo} and x < {hi} and x % {m} = {r}"
        if writer == "pylance":
            lance.dataset(path).delete(pred)
        else:
            lancelet.dataset(path).delete(pred)


def _plan_ids(plan) -> list:
    return [[f.id for f in t.fragments] for t in plan.tasks]


def _frag_meta(path):
    """What both libraries must agree on for each fragment of the latest version."""
    out = []
    for f in lance.dataset(path).get_fragments():
        j = f.metadata.to_json()
        files = [(d["fields"], d["column_indices"], d["file_major_version"], d["file_minor_version"]) for d in j["files"]]
        out.append((j["id"], j["physical_rows"], files, j["deletion_file"] is not None, j["row_id_meta"],
                    j["created_at_version_meta"], j["last_updated_at_version_meta"]))
    return out


def _txn_kinds(path, last: int) -> list:
    """``(operation, read_version)`` of the last transactions, oldest first,
    as pylance reads them."""
    texts = lance.debug.list_transactions(lance.dataset(path), last)
    return [(re.search(r"operation: (\w+)", t).group(1), int(re.search(r"read_version: (\d+)", t).group(1)))
            for t in reversed(texts)]


def _rows(path, lib=lance) -> pa.Table:
    ds = lib.dataset(path)
    return ds.to_table(with_row_id=True)


# ---------------------------------------------------------------------------
# planner parity on seeded random layouts


def _random_case(seed: int):
    rnd = random.Random(seed)
    n = rnd.randint(1, 12)
    sizes = [rnd.choice([rnd.randint(1, 60), rnd.randint(60, 250)]) for _ in range(n)]
    deletions = [(i, rnd.randint(2, 9), rnd.randint(0, 1)) for i in range(n) if sizes[i] > 3 and rnd.random() < 0.4]
    target = rnd.choice([40, 100, 150, 300, 1000])
    options = {"target_rows_per_fragment": target}
    if rnd.random() < 0.3:
        options["materialize_deletions_threshold"] = rnd.choice([0.0, 0.05, 0.2, 0.5])
    if rnd.random() < 0.15:
        options["materialize_deletions"] = False
    index_upto = rnd.randint(1, n) if rnd.random() < 0.3 else None
    stable = rnd.random() < 0.4
    return sizes, deletions, options, index_upto, stable


@pytest.mark.parametrize("seed", range(24))
def test_planner_and_result_match_pylance(tmp_path, seed):
    sizes, deletions, options, index_upto, stable = _random_case(seed)
    base = str(tmp_path / "base")
    if index_upto is None:
        _layout(base, sizes, deletions, stable=stable)
    else:
        # an index over the first fragments, then more fragments appended
        _layout(base, sizes[:index_upto], [d for d in deletions if d[0] < index_upto], stable=stable)
        lance.dataset(base).create_scalar_index("x", "BTREE")
        start = sum(sizes[:index_upto])
        for n in sizes[index_upto:]:
            lance.write_dataset(_table(start, n), base, mode="append")
            start += n
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)

    want = _plan_ids(LanceCompaction.plan(lance.dataset(theirs), options))
    got = [t.fragment_ids for t in Compaction.plan(lancelet.dataset(ours), options).tasks]
    assert got == want, (sizes, deletions, options, index_upto)

    m_theirs = lance.dataset(theirs).optimize.compact_files(**options)
    ds = lancelet.dataset(ours)
    m_ours = ds.optimize.compact_files(**options)
    assert (m_ours.fragments_removed, m_ours.fragments_added, m_ours.files_removed, m_ours.files_added) == \
        (m_theirs.fragments_removed, m_theirs.fragments_added, m_theirs.files_removed, m_theirs.files_added)
    assert ds.version == lance.dataset(theirs).version
    assert _frag_meta(ours) == _frag_meta(theirs)
    assert _rows(ours).equals(_rows(theirs))
    if want:
        assert _txn_kinds(ours, 2) == _txn_kinds(theirs, 2)
    # lancelet reads what pylance compacted and the other way round
    assert lancelet.dataset(theirs).to_table(with_row_id=True).equals(_rows(theirs))


# ---------------------------------------------------------------------------
# interop: every version, plain / stable row ids, deletions, multi-file fragments


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
def test_lancelet_compacts_pylance_dataset(tmp_path, version, stable):
    path = str(tmp_path / "ds")
    _layout(path, [120, 80, 200, 30, 30, 90], [(0, 3, 0), (2, 2, 1), (4, 5, 0)], version=version, stable=stable)
    # a second data file per fragment (pylance add_columns), then a dropped column
    lance.dataset(path).add_columns({"y": "x * 2", "z": "x + 1"})
    lance.dataset(path).drop_columns(["s"])
    before = lance.dataset(path).to_table(with_row_id=True)
    v0 = lance.dataset(path).version
    assert len(lance.dataset(path).get_fragments()[0].data_files()) == 2

    theirs = str(tmp_path / "theirs")
    shutil.copytree(path, theirs)
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=200)
    ds = lancelet.dataset(path)
    metrics = ds.optimize.compact_files(target_rows_per_fragment=200)
    assert isinstance(metrics, CompactionMetrics) and metrics.fragments_removed > 0
    assert ds.version == v0 + 2

    pl = lance.dataset(path)
    assert [k for k, _ in _txn_kinds(path, 2)] == ["ReserveFragments", "Rewrite"]
    assert {rv for _, rv in _txn_kinds(path, 2)} == {v0}
    after = pl.to_table(with_row_id=True)
    assert after.drop(["_rowid"]).equals(before.drop(["_rowid"]))
    if stable:
        assert after["_rowid"].equals(before["_rowid"])
    # as pylance compacts it: same fragments, one data file each holding
    # only the live fields (the dropped column is gone), no deletions
    assert _frag_meta(path) == _frag_meta(theirs)
    files = lambda p: [(d.fields, d.column_indices, d.file_major_version, d.file_minor_version)  # noqa: E731
                       for f in lance.dataset(p).get_fragments() for d in f.data_files()]
    assert files(path) == files(theirs)
    assert lance.dataset(theirs).to_table(with_row_id=True).equals(after)
    assert lancelet.dataset(path).to_table(with_row_id=True).equals(after)
    # pylance keeps writing on it
    lance.write_dataset(pa.table({"x": pa.array([10_000], pa.int64()), "v": before["v"].combine_chunks()[:1],
                                  "y": pa.array([1], pa.int64()), "z": pa.array([2], pa.int64())}),
                        path, mode="append")
    pl = lance.dataset(path)
    pl.delete("x = 1")
    pl.optimize.compact_files(target_rows_per_fragment=200)
    assert lancelet.dataset(path).to_table().equals(lance.dataset(path).to_table())
    assert lancelet.dataset(path).count_rows() == before.num_rows  # +1 appended, -1 deleted


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
def test_pylance_compacts_lancelet_dataset(tmp_path, version, stable):
    path = str(tmp_path / "ds")
    _layout(path, [50, 70, 20, 200, 10], [(1, 2, 0), (3, 4, 1)], version=version, stable=stable, writer="lancelet")
    before = lancelet.dataset(path).to_table(with_row_id=True)
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=100)
    after = lancelet.dataset(path).to_table(with_row_id=True)
    assert after.drop(["_rowid"]).equals(before.drop(["_rowid"]))
    if stable:
        assert after["_rowid"].equals(before["_rowid"])
    assert after.equals(lance.dataset(path).to_table(with_row_id=True))
    # and lancelet compacts again on top of pylance's compaction
    ds = lancelet.dataset(path)
    ds.delete("x < 40")
    ds.optimize.compact_files(target_rows_per_fragment=100, materialize_deletions_threshold=0.0)
    assert lance.dataset(path).to_table().equals(lancelet.dataset(path).to_table())


def test_plain_rowids_change_to_new_addresses(tmp_path):
    path = str(tmp_path / "ds")
    _layout(path, [10, 10, 10], [(1, 2, 0)])
    lancelet.dataset(path).optimize.compact_files()
    t = lance.dataset(path).to_table(with_row_id=True, with_row_address=True)
    frag = lance.dataset(path).get_fragments()[0].fragment_id
    assert frag == 3
    assert t["_rowid"].to_pylist() == [(frag << 32) + i for i in range(25)]
    assert t["_rowaddr"].equals(t["_rowid"])


# ---------------------------------------------------------------------------
# indices


def test_index_coverage_without_remapping(tmp_path):
    """Bins never mix fragments covered by different index sets, and the
    compacted dataset answers right with and without the index."""
    path = str(tmp_path / "ds")
    _layout(path, [100, 100, 100], [(1, 10, 3)])
    lance.dataset(path).create_scalar_index("x", "BTREE")
    _layout_more = _table(300, 50)
    lance.write_dataset(_layout_more, path, mode="append")
    ds = lancelet.dataset(path)
    plan = Compaction.plan(ds, {"target_rows_per_fragment": 1000})
    assert [t.fragment_ids for t in plan.tasks] == [[0, 1, 2]]  # the unindexed fragment 3 is alone
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    pl = lance.dataset(path)
    for q in ["x = 5", "x = 113", "x = 150", "x >= 290 and x < 310", "x = 320"]:
        assert pl.to_table(filter=q).equals(pl.to_table(filter=q, use_scalar_index=False)), q
        assert lancelet.dataset(path).to_table(filter=q)["x"].to_pylist() == pl.to_table(filter=q)["x"].to_pylist()


def test_index_with_stable_row_ids_stays_correct(tmp_path):
    """pylance 14's BTREE files hold row addresses even with stable row ids:
    lancelet's compaction rewrites the index for the new addresses, as
    pylance's does (same coverage, same rows indexed, same answers)."""
    base = str(tmp_path / "base")
    _layout(base, [100, 100, 200], [(0, 3, 0)], stable=True)
    lance.dataset(base).create_scalar_index("x", "BTREE")
    lance.dataset(base).delete("x = 250")  # fragment 2 is not rewritten and stays indexed
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    lancelet.dataset(ours).optimize.compact_files(target_rows_per_fragment=150)
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=150)
    (mine,) = lance.dataset(ours).describe_indices()
    (ref,) = lance.dataset(theirs).describe_indices()
    assert mine.num_rows_indexed == ref.num_rows_indexed
    assert sorted(mine.segments[0].fragment_ids) == sorted(ref.segments[0].fragment_ids)
    assert mine.segments[0].uuid != lance.dataset(base).describe_indices()[0].segments[0].uuid
    pl = lance.dataset(ours)
    assert len(pl.get_fragments()) == 2
    for q in ["x = 3", "x = 4", "x = 150", "x = 250", "x = 251", "x = 350", "x > 95 and x < 105"]:
        want = pl.to_table(filter=q, use_scalar_index=False)
        assert pl.to_table(filter=q).equals(want), q
        assert lancelet.dataset(ours).to_table(filter=q).equals(want), q
        assert "ScalarIndexQuery" in pl.scanner(filter=q).explain_plan(), q


# ---------------------------------------------------------------------------
# nothing to do, conflicts, distributed API


def test_nothing_to_do_commits_nothing(tmp_path):
    path = str(tmp_path / "ds")
    _layout(path, [100, 900, 100], [], writer="lancelet")
    ds = lancelet.dataset(path)
    assert ds.optimize.compact_files(target_rows_per_fragment=300) == CompactionMetrics()
    assert ds.version == lancelet.dataset(path).latest_version == 3
    assert Compaction.plan(ds, {"target_rows_per_fragment": 300}).tasks == []
    assert Compaction.commit(ds, []) == CompactionMetrics()
    assert lancelet.dataset(path).latest_version == 3


def test_stale_dataset_conflicts(tmp_path):
    path = str(tmp_path / "ds")
    _layout(path, [50, 50, 50], [], writer="lancelet")
    stale = lancelet.dataset(path)
    lance.dataset(path).delete("x = 60")  # pylance changes fragment 1
    latest = lance.dataset(path).version
    files = sorted((tmp_path / "ds" / "data").iterdir())
    with pytest.raises(CommitConflictError, match="Delete"):
        stale.optimize.compact_files()
    assert lancelet.dataset(path).latest_version == latest, "a refused compaction leaves no version"
    assert sorted((tmp_path / "ds" / "data").iterdir()) == files, "and no files"
    assert stale.version == latest - 1
    # a stale object over an append is rebased; the appended rows stay
    stale = lancelet.dataset(path)
    lance.write_dataset(_table(1000, 5), path, mode="append")
    stale.optimize.compact_files()
    assert sorted(lance.dataset(path).to_table()["x"].to_pylist()) == sorted(
        [x for x in range(150) if x != 60] + list(range(1000, 1005)))


def test_distributed_tasks_pickle_and_commit(tmp_path):
    path = str(tmp_path / "ds")
    _layout(path, [30] * 8, [(2, 3, 1)], writer="lancelet", stable=True)
    ds = lancelet.dataset(path)
    before = ds.to_table(with_row_id=True)
    plan = Compaction.plan(ds, {"target_rows_per_fragment": 100})
    assert plan.read_version == ds.version and plan.num_tasks() == 2
    tasks = [pickle.loads(pickle.dumps(t)) for t in plan.tasks]
    assert all(isinstance(t, CompactionTask) for t in tasks)
    # tasks may run against any version object of the dataset
    lancelet.write_dataset(_table(500, 3), path, mode="append")
    other = lancelet.dataset(path)
    results = [pickle.loads(pickle.dumps(t.execute(other))) for t in tasks]
    assert all(isinstance(r, RewriteResult) and r.read_version == plan.read_version for r in results)
    assert [f.id for f in results[0].old_fragments] == tasks[0].fragment_ids
    m = Compaction.commit(ds, results)
    assert m.fragments_removed == 8 and ds.version == plan.read_version + 3
    after = lancelet.dataset(path).to_table(with_row_id=True)
    assert after.slice(3).equals(before)  # appended fragment first, then the compacted rows
    assert [k for k, _ in _txn_kinds(path, 2)] == ["ReserveFragments", "Rewrite"]


def test_distributed_conflict_removes_files(tmp_path):
    path = str(tmp_path / "ds")
    _layout(path, [30] * 4, [], writer="lancelet")
    ds = lancelet.dataset(path)
    plan = Compaction.plan(ds, {"target_rows_per_fragment": 1000})
    results = [t.execute(ds) for t in plan.tasks]
    written = [p for r in results for p in r.data_files]
    assert all((tmp_path / "ds" / "data" / p).exists() for p in written)
    lancelet.dataset(path).delete("x = 1")
    with pytest.raises(CommitConflictError):
        Compaction.commit(ds, results)
    assert not any((tmp_path / "ds" / "data" / p).exists() for p in written)


# ---------------------------------------------------------------------------
# options, progress, config defaults


def test_options_checked(tmp_path):
    path = str(tmp_path / "ds")
    _layout(path, [10, 10], [], writer="lancelet")
    ds = lancelet.dataset(path)
    for bad in [dict(target_rows_per_fragment=0), dict(target_rows_per_fragment="10"),
                dict(materialize_deletions=1), dict(materialize_deletions_threshold="x"), dict(batch_size=-1),
                dict(bogus=1)]:
        with pytest.raises(InvalidInputError):
            ds.optimize.compact_files(**bad)
    with pytest.raises(UnsupportedError, match="max_source_rows"):
        ds.optimize.compact_files(max_source_rows=10)
    with pytest.raises(UnsupportedError, match="force_binary_copy"):
        ds.optimize.compact_files(compaction_mode="force_binary_copy")
    with pytest.raises(InvalidInputError):
        Compaction.commit(ds, ["not a result"])
    assert lancelet.dataset(path).latest_version == 2


def test_progress_and_config_defaults(tmp_path):
    path = str(tmp_path / "ds")
    _layout(path, [10] * 6, [], writer="lancelet")
    # pylance's lance.compaction.* config keys set the defaults
    lance.dataset(path).update_config({"lance.compaction.target_rows_per_fragment": "20"})
    events = []
    ds = lancelet.dataset(path)
    m = ds.optimize.compact_files(progress=events.append)
    assert m.fragments_added == 3
    assert events[0] == {"stage": "rewrite", "done": 0, "total": 3}
    assert events[-1] == {"stage": "rewrite", "done": 3, "total": 3}  # every report comes before the commit

    def broken(_):
        raise RuntimeError("display gone")

    lancelet.write_dataset(_table(60, 5), path, mode="append")
    lancelet.write_dataset(_table(65, 5), path, mode="append")
    v = lancelet.dataset(path).version
    with pytest.raises(RuntimeError, match="display gone"):  # aborts, see docs/errors.md
        lancelet.dataset(path).optimize.compact_files(progress=broken)
    assert lance.dataset(path).version == v
    assert lancelet.dataset(path).to_table()["x"].to_pylist() == list(range(70))
