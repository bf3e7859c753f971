"""update / merge_insert / delete against pylance 14: the same operation on
the same dataset gives the same result, each library reads and keeps
writing what the other wrote, concurrent commits rebase or re-run as
pylance's do, and bad input is refused with the dataset unchanged."""

from __future__ import annotations

import datetime
import random
import shutil

import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import CommitConflictError, InvalidInputError

lance = pytest.importorskip("lance")

VERSIONS = ("2.0", "2.1", "2.2")
SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("s", pa.string()),
    pa.field("f", pa.float64()),
    pa.field("v", pa.list_(pa.float32(), 3)),
    pa.field("st", pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())])),
])


def table(ids, tag="s", seed=0):
    rng = np.random.default_rng(seed)
    ids = list(ids)
    n = len(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([None if i % 7 == 3 else f"{tag}{i}" for i in ids], pa.string()),
        "f": pa.array(rng.normal(size=n)),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.normal(size=3 * n).astype(np.float32)), 3),
        "st": pa.array([{"a": i % 5, "b": None if i % 4 == 0 else f"b{i}"} for i in ids], SCHEMA.field("st").type),
    }, schema=SCHEMA)


def make(path, version, stable, writer="lancelet", n=60):
    """A dataset of `n` rows in fragments of 16, with some rows deleted."""
    lib = lancelet if writer == "lancelet" else lance
    lib.write_dataset(table(range(n)), path, max_rows_per_file=16, data_storage_version=version, enable_stable_row_ids=stable)
    lib.dataset(path).delete("id % 11 = 5 OR id = 17")


def twins(tmp_path, version, stable, writer="lancelet", n=60):
    """Two identical copies (by file copy) of one dataset: lancelet works on
    the first, pylance on the second."""
    a, b = str(tmp_path / "ll"), str(tmp_path / "pl")
    make(a, version, stable, writer, n)
    shutil.copytree(a, b)
    return a, b


def full(path, lib, sort=False):
    t = lib.dataset(path).to_table(with_row_id=True)
    return t.sort_by("id") if sort else t


def assert_same_result(a, b, sort=False, row_ids=True):
    """Both datasets read the same by both libraries (rows, order, schema,
    row ids), and have the same history."""
    for lib in (lance, lancelet):
        ta, tb = full(a, lib, sort), full(b, lib, sort)
        if not row_ids:
            ta, tb = ta.drop_columns(["_rowid"]), tb.drop_columns(["_rowid"])
        assert ta.schema.remove_metadata() == tb.schema.remove_metadata()
        assert ta.to_pylist() == tb.to_pylist(), lib.__name__
    la, lb = lance.dataset(a), lance.dataset(b)
    assert la.version == lb.version
    assert [type(t.operation).__name__ for t in la.get_transactions(3)] == [type(t.operation).__name__ for t in lb.get_transactions(3)]
    fa = [(f.fragment_id, f.metadata.physical_rows, [d.fields for d in f.metadata.files]) for f in la.get_fragments()]
    fb = [(f.fragment_id, f.metadata.physical_rows, [d.fields for d in f.metadata.files]) for f in lb.get_fragments()]
    assert fa == fb
    assert la.schema == lb.schema


def last_txn(path):
    return lance.dataset(path).get_transactions(1)[0]


UPDATES = [
    ({"s": "upper(s)", "f": "f * 2 + 1"}, "id % 3 = 0"),
    ({"id": "id + 1000"}, "s IS NULL OR id > 50"),
    ({"f": "0"}, None),
    ({"s": "'nothing'"}, "id < 0"),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
def test_update_like_pylance(tmp_path, version, stable):
    a, b = twins(tmp_path, version, stable, writer="pylance" if stable else "lancelet")
    for updates, where in UPDATES:
        r1 = lancelet.dataset(a).update(updates, where)
        r2 = lance.dataset(b).update(updates, where)
        assert r1 == r2
        assert_same_result(a, b)
        t, u = last_txn(a), last_txn(b)
        assert type(t.operation).__name__ == "Update" and t.operation.update_mode == "rewrite_rows"
        assert sorted(t.operation.fields_for_preserving_frag_bitmap) == sorted(u.operation.fields_for_preserving_frag_bitmap)
        assert t.operation.fields_modified == u.operation.fields_modified == []
        assert t.read_version == u.read_version
    # pylance keeps writing on lancelet's result, lancelet on pylance's
    lance.dataset(a).update({"s": "'p'"}, "id % 2 = 0")
    lancelet.dataset(b).update({"s": "'p'"}, "id % 2 = 0")
    assert_same_result(a, b)
    lance.dataset(a).delete("id % 5 = 0")
    lancelet.dataset(b).delete("id % 5 = 0")
    assert_same_result(a, b)


MERGES = [
    # (on, when_matched, condition, insert, by_source, by_source_expr, source ids)
    ("id", "update", None, True, False, None, [3, 100, 5, 7, 101, 59]),
    ("id", "update", "target.f < source.f", False, False, None, list(range(0, 60, 4))),
    ("id", "delete", None, True, False, None, [1, 2, 200]),
    ("id", "update", None, False, True, "id > 40", [10, 20, 300]),
    (["id", "s"], "update", None, True, False, None, [8, 9, 400]),
    ("id", "nothing", None, True, False, None, [500, 501, 6]),
    ("id", "update", None, True, False, None, [999]),
]


def run_merge(ds, spec, source):
    on, matched, cond, insert, by_source, expr, _ = spec
    b = ds.merge_insert(on)
    if matched == "update":
        b = b.when_matched_update_all(cond) if cond else b.when_matched_update_all()
    elif matched == "delete":
        b = b.when_matched_delete()
    if insert:
        b = b.when_not_matched_insert_all()
    if by_source:
        b = b.when_not_matched_by_source_delete(expr)
    return b.execute(source)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
def test_merge_insert_like_pylance(tmp_path, version, stable):
    a, b = twins(tmp_path, version, stable, writer="lancelet" if stable else "pylance")
    for k, spec in enumerate(MERGES):
        source = table(spec[-1], tag=f"m{k}_", seed=k + 1)
        r1 = run_merge(lancelet.dataset(a), spec, source)
        r2 = run_merge(lance.dataset(b), spec, source)
        assert r1 == r2, spec
        # pylance orders rewritten rows as its hash join meets them: compare
        # by key (row ids included: they follow the rows).
        assert_same_result(a, b, sort=True, row_ids=stable)
        assert type(last_txn(a).operation).__name__ == "Update"
    lance.dataset(a).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(table([1, 2, 700]))
    lancelet.dataset(b).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(table([1, 2, 700]))
    assert_same_result(a, b, sort=True, row_ids=stable)


def test_merge_insert_source_subset_and_row_ids(tmp_path):
    a, b = twins(tmp_path, "2.2", True)
    src = pa.table({"id": pa.array([4, 900, 6], pa.int64()), "s": ["u4", "i900", "u6"]})
    for lib, p in ((lancelet, a), (lance, b)):
        assert lib.dataset(p).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src) == {
            "num_inserted_rows": 1, "num_updated_rows": 2, "num_deleted_rows": 0}
    assert_same_result(a, b, sort=True)
    t = lancelet.dataset(a).to_table(with_row_id=True).sort_by("id").to_pylist()
    row = {r["id"]: r for r in t}
    assert row[4]["s"] == "u4" and row[4]["_rowid"] == 4 and row[4]["st"] == {"a": 4, "b": None}
    assert row[900]["f"] is None and row[900]["_rowid"] == 60


def test_random_ops_like_pylance(tmp_path):
    """Seeded random updates and merges on twin datasets, compared after
    every step."""
    for seed in range(3):
        rng = random.Random(seed)
        version = rng.choice(VERSIONS)
        stable = rng.random() < 0.5
        d = tmp_path / f"r{seed}"
        d.mkdir()
        a, b = twins(d, version, stable, n=rng.randint(20, 80))
        next_id = 1000
        for step in range(6):
            if rng.random() < 0.5:
                col = rng.choice(["s", "f", "id"])
                value = {"s": "lower(s)", "f": f"f + {rng.randint(1, 9)}", "id": "id + 500"}[col]
                where = rng.choice([None, f"id % {rng.randint(2, 5)} = {rng.randint(0, 1)}", f"id < {rng.randint(0, 90)}", "s IS NULL"])
                assert lancelet.dataset(a).update({col: value}, where) == lance.dataset(b).update({col: value}, where)
            else:
                ids = lance.dataset(b).to_table(columns=["id"])["id"].to_pylist()
                src_ids = rng.sample(ids, min(len(ids), rng.randint(0, 8))) + list(range(next_id, next_id + rng.randint(0, 4)))
                next_id += 10
                rng.shuffle(src_ids)
                spec = ("id", rng.choice(["update", "delete", "nothing"]), None, rng.random() < 0.7,
                        rng.random() < 0.2, rng.choice([None, "f > 0"]), src_ids)
                if spec[1] == "nothing" and not spec[3] and not spec[4]:
                    continue
                source = table(src_ids, tag=f"r{step}_", seed=step)
                assert run_merge(lancelet.dataset(a), spec, source) == run_merge(lance.dataset(b), spec, source)
            assert_same_result(a, b, sort=True, row_ids=stable)


def test_bad_input_leaves_dataset_unchanged(tmp_path):
    p = str(tmp_path / "ds")
    make(p, "2.2", False)
    ds = lancelet.dataset(p)
    v = ds.version
    bad_updates = [
        ({"zz": "1"}, None), ({"id": "zz + 1"}, None), ({"id": "id +"}, None), ({"id": "'abc'"}, None),
        ({"id": "1"}, "zz > 1"), ({}, None), ({"id": "1"}, "id +"),
    ]
    for updates, where in bad_updates:
        with pytest.raises(InvalidInputError):
            ds.update(updates, where)
    src = table([1, 1])
    with pytest.raises(InvalidInputError, match="both match"):
        ds.merge_insert("id").when_matched_update_all().execute(src)
    with pytest.raises(InvalidInputError, match="change nothing"):
        ds.merge_insert("id").execute(table([1]))
    with pytest.raises(InvalidInputError, match="zz"):
        ds.merge_insert("zz").when_matched_update_all().execute(table([1]))
    with pytest.raises(InvalidInputError, match="zz"):
        ds.merge_insert("id").when_matched_update_all().execute(pa.table({"id": pa.array([1], pa.int64()), "zz": [1]}))
    with pytest.raises(InvalidInputError, match="Int32"):
        ds.merge_insert("id").when_matched_update_all().execute(pa.table({"id": pa.array([1], pa.int32())}))
    with pytest.raises(InvalidInputError):
        ds.merge_insert("id").when_matched_update_all("source.nope > 1").execute(table([1]))
    with pytest.raises(InvalidInputError, match="both the source and the dataset"):
        ds.merge_insert("id").when_matched_update_all("f > 0").execute(table([1]))
    with pytest.raises(InvalidInputError):
        ds.merge_insert("id").when_not_matched_by_source_delete("id >").execute(table([1]))
    assert lancelet.dataset(p).version == v == ds.version
    # non-nullable column receiving nulls
    q = str(tmp_path / "nn")
    lancelet.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64())}, schema=pa.schema([pa.field("id", pa.int64(), False)])), q)
    with pytest.raises(InvalidInputError, match="id"):
        lancelet.dataset(q).update({"id": "NULL"})
    assert lancelet.dataset(q).version == 1


def test_empty_operations_commit_like_pylance(tmp_path):
    a, b = twins(tmp_path, "2.2", False)
    for lib, p in ((lancelet, a), (lance, b)):
        d = lib.dataset(p)
        d.delete("id < 0")
        d.update({"s": "'x'"}, "id < 0")
        d.merge_insert("id").when_matched_update_all().execute(table([12345]))
    assert_same_result(a, b)
    assert [type(t.operation).__name__ for t in lance.dataset(a).get_transactions(3)] == ["Update", "Update", "Delete"]


def test_progress(tmp_path, capsys):
    p = str(tmp_path / "ds")
    make(p, "2.2", False)
    events = []
    lancelet.dataset(p).update({"s": "'x'"}, "id > 30", progress=events.append)
    n = len(lancelet.dataset(p, version=2).get_fragments())
    assert events[0] == {"stage": "update", "done": 0, "total": n} and events[-1] == {"stage": "update", "done": n, "total": n}
    assert all(a["done"] <= b["done"] for a, b in zip(events, events[1:]))
    events.clear()
    lancelet.dataset(p).merge_insert("id").when_matched_update_all().execute(table([1, 2]), progress=events.append)
    assert events[-1]["stage"] == "merge_insert" and events[-1]["done"] == events[-1]["total"]
    lancelet.dataset(p).update({"s": "'y'"}, progress=True)
    assert "lancelet update:" in capsys.readouterr().err

    def boom(_):
        raise RuntimeError("stop here")
    v = lancelet.dataset(p).version
    with pytest.raises(RuntimeError, match="stop here"):
        lancelet.dataset(p).update({"s": "'z'"}, progress=boom)
    assert lancelet.dataset(p).version == v


# ----------------------------------------------------------------------------
# concurrent commits: a stale object commits after another writer
# ----------------------------------------------------------------------------

def fresh(tmp_path, name, stable=False):
    p = str(tmp_path / name)
    lancelet.write_dataset(table(range(40)), p, max_rows_per_file=10, enable_stable_row_ids=stable)
    return p


@pytest.mark.parametrize("other_lib", ["lance", "lancelet"])
def test_stale_update_over_delete_of_other_rows_is_rebased(tmp_path, other_lib):
    p = fresh(tmp_path, "ds")
    stale = lancelet.dataset(p)
    (lance if other_lib == "lance" else lancelet).dataset(p).delete("id = 2")
    assert stale.update({"s": "'u'"}, "id = 1 OR id = 15", conflict_retries=0) == {"num_rows_updated": 2}
    t = last_txn(p)
    assert t.read_version == 2  # rebased on the delete, deletion vectors merged
    rows = {r["id"]: r["s"] for r in lance.dataset(p).to_table().to_pylist()}
    assert 2 not in rows and rows[1] == rows[15] == "u" and len(rows) == 39


@pytest.mark.parametrize("other_lib", ["lance", "lancelet"])
def test_stale_update_of_same_rows_reruns(tmp_path, other_lib):
    p = fresh(tmp_path, "ds", stable=True)
    stale = lancelet.dataset(p)
    (lance if other_lib == "lance" else lancelet).dataset(p).update({"s": "'other'"}, "id < 5")
    v = lancelet.dataset(p).version
    with pytest.raises(CommitConflictError):
        lancelet.dataset(p, version=1).update({"s": "'mine'"}, "id = 3", conflict_retries=0)
    assert lancelet.dataset(p).version == v
    assert stale.update({"s": "s || '!'"}, "id = 3") == {"num_rows_updated": 1}
    row = [r for r in lance.dataset(p).to_table(with_row_id=True).to_pylist() if r["id"] == 3][0]
    assert row["s"] == "other!" and row["_rowid"] == 3  # re-run on the latest version
    assert last_txn(p).read_version == v


def test_stale_update_over_add_columns_reruns(tmp_path):
    p = fresh(tmp_path, "ds")
    stale = lancelet.dataset(p)
    lance.dataset(p).add_columns({"z": "id * 10"})
    stale.update({"s": "'u'"}, "id = 1")
    rows = {r["id"]: r for r in lance.dataset(p).to_table().to_pylist()}
    assert rows[1]["s"] == "u" and rows[1]["z"] == 10  # not lost: the update ran again


def test_stale_operations_over_compaction_rerun(tmp_path):
    p = fresh(tmp_path, "ds")
    lancelet.dataset(p).delete("id % 3 = 0")
    stale = lancelet.dataset(p)
    lance.dataset(p).optimize.compact_files()
    assert stale.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(table([1, 99])) == {
        "num_inserted_rows": 1, "num_updated_rows": 1, "num_deleted_rows": 0}
    ids = sorted(lance.dataset(p).to_table()["id"].to_pylist())
    assert ids == sorted([i for i in range(40) if i % 3] + [99])
    stale2 = lancelet.dataset(p, version=2)
    assert stale2.delete("id = 2")["num_deleted_rows"] == 1
    assert 2 not in lance.dataset(p).to_table()["id"].to_pylist()


def test_pylance_stale_over_lancelet(tmp_path):
    p = fresh(tmp_path, "ds")
    stale = lance.dataset(p)
    lancelet.dataset(p).update({"s": "'ll'"}, "id < 3")
    stale.update({"s": "s || '+pl'"}, "id = 1 OR id = 30")
    rows = {r["id"]: r["s"] for r in lancelet.dataset(p).to_table().to_pylist()}
    assert rows[1] == "ll+pl" and rows[30] == "s30+pl" and rows[2] == "ll"
    stale = lance.dataset(p)
    lancelet.dataset(p).delete("id = 5")
    stale.delete("id = 6")  # pylance rebases over lancelet's delete of the same fragment
    assert sorted(lancelet.dataset(p).to_table()["id"].to_pylist()) == [i for i in range(40) if i not in (5, 6)]


def test_overwrite_is_refused_and_retry_arguments(tmp_path):
    p = fresh(tmp_path, "ds")
    stale = lancelet.dataset(p)
    lance.write_dataset(table(range(3)), p, mode="overwrite")
    with pytest.raises(CommitConflictError):
        stale.update({"s": "'x'"})
    with pytest.raises(CommitConflictError):
        stale.delete("id = 1")
    assert lancelet.dataset(p).version == 2
    for bad in (-1, 1.5, "3"):
        with pytest.raises(InvalidInputError):
            lancelet.dataset(p).update({"s": "'x'"}, conflict_retries=bad)
    with pytest.raises(InvalidInputError):
        lancelet.dataset(p).delete("id = 1", retry_timeout=-datetime.timedelta(seconds=1))
    assert lancelet.dataset(p).delete("id = 1", conflict_retries=0, retry_timeout=datetime.timedelta(seconds=1)) == {"num_deleted_rows": 1}


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_all_null_child_of_valid_struct_read_by_pylance(tmp_path, version):
    """Found by the merge tests: an all-null page under a valid struct needs
    its level buffers (pylance's reader indexes them)."""
    st = pa.struct([("a", pa.int32()), ("b", pa.string())])
    t = pa.table({"st": pa.array([{"a": 1, "b": None}, {"a": 2, "b": None}], st)})
    p = str(tmp_path / "ds")
    lancelet.write_dataset(t, p, data_storage_version=version)
    assert lance.dataset(p).to_table() == t
