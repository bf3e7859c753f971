"""What each public operation returns, against pylance 14 (issue 29, defect 4).

Every operation runs in both libraries on two copies of the same small
dataset; the results must have the same type family (None, int, dict,
metrics object), the same keys or attribute names, the same value types and
the same values. Then the two copies must hold the same rows, each read by
the other library (the operations did the same thing). ``cleanup_old_versions``
is left to tests/test_cleanup.py.
"""
from __future__ import annotations

import datetime
import importlib
import shutil
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest

import lancelet
import lancelet.file

pytestmark = pytest.mark.pylance


def _table(n: int = 12, start: int = 0) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "v": pa.array([float(i) for i in range(start, start + n)]),
        "s": pa.array([f"s{i % 4}" for i in range(start, start + n)]),
    })


@pytest.fixture(scope="module")
def base(tmp_path_factory, lance_mod) -> Path:
    """Four fragments of 3 rows, written by pylance, then one more version."""
    p = tmp_path_factory.mktemp("op_results") / "base"
    lance_mod.write_dataset(_table(), str(p), max_rows_per_file=3)
    lance_mod.dataset(str(p)).insert(_table(3, 100))
    return p


def _public(obj: Any) -> dict:
    """The public data attributes of a result object (methods left out)."""
    return {a: getattr(obj, a) for a in dir(obj) if not a.startswith("_") and not callable(getattr(obj, a))}


def _shape(r: Any) -> Any:
    """A result as plain data to compare: None, scalars with their type,
    dicts key by key, other objects attribute by attribute."""
    if r is None or isinstance(r, (bool, str, float)):
        return r
    if isinstance(r, int):
        return ("int", r)
    if isinstance(r, dict):
        return {"dict": {k: _shape(v) for k, v in r.items()}}
    if isinstance(r, datetime.datetime):
        return ("datetime", r.tzinfo is not None)
    return {type(r).__name__: {k: _shape(v) for k, v in _public(r).items()}}


def _rows(ds: Any) -> list:
    return sorted(ds.to_table().to_pylist(), key=lambda r: r["id"])


def _both(tmp_path: Path, base: Path, lance_mod, op: Callable[[Any, Any], Any], *, prepare=None):
    """Run ``op(module, dataset)`` on a copy with pylance and on a copy with
    lancelet; return both results and both datasets after it."""
    out = []
    for name, mod in (("pl", lance_mod), ("ll", lancelet)):
        p = tmp_path / name
        shutil.copytree(base, p)
        if prepare is not None:
            prepare(lance_mod, lance_mod.dataset(str(p)))
        ds = mod.dataset(str(p))
        out.append((op(mod, ds), ds, p))
    (pr, pds, pp), (lr, lds, lp) = out
    # the same change, each checked by the other library
    assert _rows(lancelet.dataset(str(pp))) == _rows(lance_mod.dataset(str(lp)))
    # each object moved to the new version in place, as pylance's does
    assert lds.version == pds.version
    return pr, lr


def _merge_source() -> pa.Table:
    return pa.table({"id": pa.array([2, 5, 50, 51], pa.int64()), "v": [-1.0, -2.0, -3.0, -4.0],
                     "s": ["a", "b", "c", "d"]})


OPS = {
    "delete": lambda m, ds: ds.delete("id < 4 OR id = 100"),
    "delete-nothing": lambda m, ds: ds.delete("id > 1000"),
    "update": lambda m, ds: ds.update({"v": "v + 1"}, where="id < 3"),
    "update-all": lambda m, ds: ds.update({"s": "'z'"}),
    "merge_insert-upsert": lambda m, ds: ds.merge_insert("id").when_matched_update_all()
    .when_not_matched_insert_all().execute(_merge_source()),
    "merge_insert-insert-only": lambda m, ds: ds.merge_insert("id").when_not_matched_insert_all()
    .execute(_merge_source()),
    "merge_insert-delete-matched": lambda m, ds: ds.merge_insert("id").when_matched_delete()
    .execute(_merge_source()),
    "merge_insert-by-source-delete": lambda m, ds: ds.merge_insert("id").when_matched_update_all()
    .when_not_matched_by_source_delete("id < 8").execute(_merge_source()),
    "insert": lambda m, ds: ds.insert(_table(2, 200)),
    "add_columns": lambda m, ds: ds.add_columns({"w": "id * 2"}),
    "add_columns-null": lambda m, ds: ds.add_columns(pa.field("n", pa.int32())),
    "alter_columns": lambda m, ds: ds.alter_columns({"path": "s", "name": "s2"}),
    "alter_columns-cast": lambda m, ds: ds.alter_columns({"path": "v", "data_type": pa.float32()}),
    "drop_columns": lambda m, ds: ds.drop_columns(["s"]),
    "merge": lambda m, ds: ds.merge(pa.table({"id": pa.array([0, 2, 7], pa.int64()), "z": [1, 2, 3]}), "id"),
    "create_scalar_index": lambda m, ds: ds.create_scalar_index("id", "BTREE"),
    "compact_files": lambda m, ds: ds.optimize.compact_files(),
    "compact_files-deletions": lambda m, ds: (ds.delete("id % 2 = 0"),
                                              ds.optimize.compact_files(target_rows_per_fragment=4))[1],
    "compact_files-nothing": lambda m, ds: (ds.optimize.compact_files(), ds.optimize.compact_files())[1],
    "restore": lambda m, ds: m.dataset(ds.uri, version=1).restore(),
    "tags.create": lambda m, ds: ds.tags.create("t1", 1),
}

# ``_both`` compares the object's version after the op; restore moves the
# object it is called on, which ``OPS`` does not return: checked below.


@pytest.mark.parametrize("name", sorted(OPS))
def test_operation_result_matches_pylance(tmp_path, base, lance_mod, name):
    pr, lr = _both(tmp_path, base, lance_mod, OPS[name])
    assert _shape(lr) == _shape(pr), f"{name}: lancelet returned {lr!r}, pylance {pr!r}"


def test_index_operations(tmp_path, base, lance_mod):
    """create_scalar_index, optimize_indices and drop_index return None and
    move the dataset object."""
    def ops(m, ds):
        got = [ds.create_scalar_index("id", "BTREE")]
        ds.insert(_table(2, 300))
        got.append(ds.optimize.optimize_indices())
        got.append(ds.drop_index("id_idx"))
        return got

    pr, lr = _both(tmp_path, base, lance_mod, ops)
    assert lr == pr == [None, None, None]


def test_restore_moves_the_object(tmp_path, base, lance_mod):
    versions = []
    for mod, name in ((lance_mod, "pl"), (lancelet, "ll")):
        p = tmp_path / name
        shutil.copytree(base, p)
        old = mod.dataset(str(p), version=1)
        assert old.restore() is None
        versions.append((old.version, old.latest_version, old.count_rows()))
    assert versions[0] == versions[1]


def test_tags(tmp_path, base, lance_mod):
    def ops(m, ds):
        created = ds.tags.create("t1", 1)
        got_version = ds.tags.get_version("t1")
        listed = ds.tags.list()
        deleted = ds.tags.delete("t1")
        return created, got_version, listed, deleted

    (pc, pv, pl, pd), (lc, lv, ll, ld) = _both(tmp_path, base, lance_mod, ops)
    assert (lc, lv, ld) == (pc, pv, pd) == (None, 1, None)
    assert type(ll) is type(pl) is dict and ll.keys() == pl.keys()
    lt, pt = ll["t1"], pl["t1"]
    assert lt.keys() == pt.keys()
    for k in ("branch", "version", "manifest_size", "metadata"):
        assert lt[k] == pt[k], k
    for k in ("created_at", "updated_at"):
        assert _shape(lt[k]) == _shape(pt[k]), k


def test_distributed_compaction(tmp_path, base, lance_mod):
    """Compaction.plan / task.execute / Compaction.commit: the rewrite
    result has pylance's attributes, commit returns the metrics."""
    def ops(m, ds):
        compaction = importlib.import_module(f"{m.__name__}.optimize").Compaction
        plan = compaction.plan(ds, {"target_rows_per_fragment": 100})
        results = [t.execute(ds) for t in plan.tasks]
        committed = compaction.commit(ds, results)
        return plan, results, committed

    prs, lrs = [], []
    for mod, name, out in ((lance_mod, "pl", prs), (lancelet, "ll", lrs)):
        p = tmp_path / name
        shutil.copytree(base, p)
        ds = mod.dataset(str(p))
        out.extend(ops(mod, ds))
        out.append(mod.dataset(str(p)).version)
    (pplan, pres, pcommit, pver), (lplan, lres, lcommit, lver) = prs, lrs
    assert (lplan.read_version, lplan.num_tasks()) == (pplan.read_version, pplan.num_tasks())
    assert len(lres) == len(pres)
    for lr, pr in zip(lres, pres):
        assert set(_public(pr)) <= set(_public(lr)), set(_public(pr)) - set(_public(lr))
        assert lr.read_version == pr.read_version
        assert _shape(lr.metrics) == _shape(pr.metrics)
        assert [f.id for f in lr.original_fragments] == [f.id for f in pr.original_fragments]
    assert _shape(lcommit) == _shape(pcommit)
    assert lver == pver


def test_file_writer_results(tmp_path, lance_mod):
    """LanceFileWriter: write returns None, close the rows written (None
    the second time), as pylance's."""
    got = []
    for mod, name in ((lance_mod, "pl"), (lancelet, "ll")):
        w = importlib.import_module(f"{mod.__name__}.file").LanceFileWriter(str(tmp_path / f"{name}.lance"), _table().schema)
        got.append((w.write_batch(_table(5)), w.write_batch(_table(7, 5)), w.close(), w.close()))
    assert got[0] == got[1] == (None, None, 12, None)
