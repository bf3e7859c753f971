"""The distributed merge_insert's core (``_native.merge_task`` /
``_native.merge_commit``, what every Spark task and the driver of
``lancelet.spark.merge_insert`` call), without Spark: the join Spark would
do is done here with pyarrow, its rows are dealt to several "tasks" at
random, and the result must equal the single-process
``Dataset.merge_insert`` on the same inputs (rows, types, stats), read by
pylance; over data storage versions, stable row ids, a scalar index,
conditions, and a concurrent pylance append."""

from __future__ import annotations

import os
import random
import secrets

import lance
import pyarrow as pa
import pytest

import lancelet
from lancelet import _inputs, _native
from lancelet.exceptions import InvalidInputError
from lancelet.spark.merge import SOURCE_MARK, TARGET_PREFIX, _spec

pytestmark = pytest.mark.filterwarnings("ignore:The 'list_indices' method is deprecated:DeprecationWarning")

HOW = {(True, True): "full outer", (True, False): "left outer", (False, True): "right outer", (False, False): "inner"}


def _table(rng: random.Random, ids, tag: str) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([None if rng.random() < 0.1 else f"{tag}{rng.randrange(1000)}" for _ in ids], pa.string()),
        "score": pa.array([rng.random() * 100 for _ in ids], pa.float64()),
        "grp": pa.array([rng.randrange(5) for _ in ids], pa.int32()),
    })


def _make(path, version: str, stable: bool, rng: random.Random, n: int = 400) -> None:
    ids = list(range(n))
    t = _table(rng, ids, "t")
    lance.write_dataset(t.slice(0, n // 2), path, data_storage_version=version, enable_stable_row_ids=stable,
                        max_rows_per_file=120)
    lance.write_dataset(t.slice(n // 2), path, mode="append", max_rows_per_file=120)
    lance.dataset(path).delete("id % 17 = 3")
    lance.dataset(path).create_scalar_index("id", "BTREE")


def _distributed(path, source: pa.Table, spec, tasks: int, seed: int, before_commit=None):
    """What the Spark job does, with a pyarrow join and ``tasks`` tasks."""
    ds = lancelet.dataset(path)
    keys, _, _, insert, by_source, _ = spec
    columns = list(_native.merge_columns(ds._native, source.schema, spec))
    stable = ds.has_stable_row_ids
    t = ds.scanner(columns=columns, with_row_address=True, with_row_id=stable).to_table()
    t = t.rename_columns([TARGET_PREFIX + c for c in t.column_names])
    t = t.set_column(t.schema.get_field_index(TARGET_PREFIX + "_rowaddr"), TARGET_PREFIX + "_rowaddr",
                     t.column(TARGET_PREFIX + "_rowaddr").cast(pa.int64()))
    if stable:
        t = t.set_column(t.schema.get_field_index(TARGET_PREFIX + "_rowid"), TARGET_PREFIX + "_rowid",
                         t.column(TARGET_PREFIX + "_rowid").cast(pa.int64()))
    s = source.append_column(SOURCE_MARK, pa.array([True] * source.num_rows))
    joined = s.join(t, keys=keys, right_keys=[TARGET_PREFIX + k for k in keys], join_type=HOW[(insert, by_source)],
                    coalesce_keys=False)
    order = list(range(joined.num_rows))
    random.Random(seed).shuffle(order)
    joined = joined.take(pa.array(order, pa.int64())) if order else joined
    prefix = f"{secrets.token_hex(6)}-"
    upd, ins, offsets, stats = [], [], {}, [0, 0, 0]
    cut = sorted(random.Random(seed + 1).sample(range(joined.num_rows + 1), min(tasks - 1, joined.num_rows + 1)))
    bounds = [0] + cut + [joined.num_rows]
    for a, b in zip(bounds, bounds[1:]):
        u, i, af, (ni, nu, nd) = _native.merge_task(ds._native, joined.slice(a, b - a), spec, prefix)
        upd += [bytes(x) for x in u]
        ins += [bytes(x) for x in i]
        for fid, offs in af:
            offsets.setdefault(fid, []).append(bytes(offs))
        stats = [stats[0] + ni, stats[1] + nu, stats[2] + nd]
    # the deletion tasks: one per touched fragment, offsets from every merge task
    deletions, names = [], []
    try:
        for fid in sorted(offsets):
            (f, d, rows), name = _native.merge_deletions(ds._native, fid, b"".join(offsets[fid]), prefix)
            deletions.append((f, None if d is None else bytes(d), bytes(rows)))
            names += [name] if name else []
        if before_commit:
            before_commit()
        native_ds, why = _native.merge_commit(ds._native, upd, ins, deletions, tuple(stats), _inputs.commit_args())
    except BaseException:
        native_ds = None
        raise
    finally:
        _native.staged_close_job(path, prefix, None)
        ok = native_ds is not None
        _native.staged_cleanup(path, prefix, _native.staged_file_names(upd + ins) if ok else [], None)
        _native.merge_cleanup_deletions(path, prefix, ds.version, names if ok else [], None)
    return native_ds, why, {"num_inserted_rows": stats[0], "num_updated_rows": stats[1], "num_deleted_rows": stats[2]}


def _single(path, source: pa.Table, spec):
    keys, matched, cond, insert, by_source, by_cond = spec
    b = lancelet.dataset(path).merge_insert(keys)
    if matched == "update":
        b = b.when_matched_update_all(cond)
    elif matched == "delete":
        b = b.when_matched_delete()
    if insert:
        b = b.when_not_matched_insert_all()
    if by_source:
        b = b.when_not_matched_by_source_delete(by_cond)
    return b.execute(source)


def _rows(path):
    t = lance.dataset(path).to_table()
    return t.schema, sorted(t.to_pylist(), key=lambda r: (r["id"] is None, r["id"] or 0, repr(r)))


CLAUSES = {
    "upsert": ("update_all", "insert_all", "keep", None),
    "update_condition": ("source.score > target.score", "insert_all", "keep", None),
    "delete_matched": ("delete", "do_nothing", "keep", None),
    "insert_only": ("do_nothing", "insert_all", "keep", None),
    "replace_range": ("update_all", "insert_all", "grp < 2", None),
    "sync": ("update_all", "insert_all", "delete", None),
    "partial_columns": ("update_all", "do_nothing", "keep", ["id", "score"]),
}


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("clause", sorted(CLAUSES))
def test_distributed_equals_single_process(tmp_path, version, stable, clause):
    when_matched, when_not, by_source, cols = CLAUSES[clause]
    seed = hash((version, stable, clause)) % 10_000
    rng = random.Random(seed)
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _make(a, version, stable, random.Random(seed))
    _make(b, version, stable, random.Random(seed))
    ids = rng.sample(range(300), 120) + list(range(400, 460)) + [None]
    source = _table(rng, ids, "s")
    if cols:
        source = source.select(cols).filter(pa.compute.is_valid(source.column("id")))
    spec = _spec("id", when_matched, when_not, by_source)
    native_ds, why, stats = _distributed(a, source, spec, tasks=4, seed=seed)
    assert native_ds is not None, why
    expected = _single(b, source, spec)
    assert stats == expected
    assert _rows(a) == _rows(b)
    da, db = lance.dataset(a), lance.dataset(b)
    assert da.version == db.version
    assert da.count_rows() == db.count_rows()
    assert da.list_indices()[0]["name"] == db.list_indices()[0]["name"]
    # the index still answers (pylance reads through it)
    probe = "id = 450" if when_not == "insert_all" else "id = 5"
    assert da.to_table(filter=probe).to_pylist() == db.to_table(filter=probe).to_pylist()
    if stable:
        # updated rows kept their row ids, inserted ones got fresh ones (the
        # same ids as single-process, perhaps given in another order)
        ra = da.to_table(columns=["id"], with_row_id=True).to_pylist()
        rb = db.to_table(columns=["id"], with_row_id=True).to_pylist()
        kept = sorted((r["_rowid"], r["id"]) for r in ra if r["_rowid"] < 400)
        assert kept == sorted((r["_rowid"], r["id"]) for r in rb if r["_rowid"] < 400)
        assert sorted(r["_rowid"] for r in ra) == sorted(r["_rowid"] for r in rb)


def test_duplicate_source_keys_across_tasks_is_pylances_error(tmp_path):
    path = str(tmp_path / "d")
    _make(path, "2.2", False, random.Random(1))
    before = lance.dataset(path).version
    source = _table(random.Random(2), [5, 7, 5], "s")
    spec = _spec("id", "update_all", "insert_all", "keep")
    # every row in a task of its own: no task sees both rows of key 5
    with pytest.raises(InvalidInputError, match="Ambiguous merge inserts are prohibited"):
        _distributed(path, source, spec, tasks=3, seed=3)
    assert lance.dataset(path).version == before
    # within one task the message names the key, as pylance's does
    with pytest.raises(InvalidInputError, match=r"\(id = 5\)"):
        _distributed(path, source, spec, tasks=1, seed=3)
    with pytest.raises(OSError, match="Ambiguous merge inserts are prohibited"):
        lance.dataset(path).merge_insert("id").when_matched_update_all().execute(source)


def test_when_matched_fail(tmp_path):
    path = str(tmp_path / "f")
    _make(path, "2.1", False, random.Random(4))
    spec = _spec("id", "fail", "insert_all", "keep")
    with pytest.raises(InvalidInputError, match="found matching row with key values: id = 7"):
        _distributed(path, _table(random.Random(5), [7, 1000], "s"), spec, tasks=1, seed=1)
    native_ds, _, stats = _distributed(path, _table(random.Random(5), [1000, 1001], "s"), spec, tasks=2, seed=1)
    assert native_ds is not None
    assert stats == {"num_inserted_rows": 2, "num_updated_rows": 0, "num_deleted_rows": 0}
    assert lance.dataset(path).to_table(filter="id >= 1000").num_rows == 2


def test_concurrent_pylance_append_is_rebased(tmp_path):
    path = str(tmp_path / "c")
    _make(path, "2.2", True, random.Random(6))
    extra = _table(random.Random(7), list(range(900, 950)), "x")
    source = _table(random.Random(8), list(range(0, 100, 3)) + [500], "s")
    spec = _spec("id", "update_all", "insert_all", "keep")
    native_ds, why, stats = _distributed(path, source, spec, tasks=3, seed=2,
                                         before_commit=lambda: lance.write_dataset(extra, path, mode="append"))
    assert native_ds is not None, why
    got = lance.dataset(path).to_table()
    ids = got.column("id").to_pylist()
    assert len(ids) == len(set(ids))
    assert set(range(900, 950)) <= set(ids) and 500 in ids
    live = set(range(400)) - {i for i in range(400) if i % 17 == 3}
    assert stats["num_inserted_rows"] == sum(1 for i in source.column("id").to_pylist() if i not in live)
    by_id = {r["id"]: r for r in got.to_pylist()}
    for r in source.to_pylist():
        assert by_id[r["id"]] == r


def test_concurrent_update_of_same_rows_asks_for_a_rerun(tmp_path):
    path = str(tmp_path / "r")
    _make(path, "2.2", False, random.Random(9))
    before_files = set(p.name for p in (tmp_path / "r" / "data").iterdir())
    source = _table(random.Random(10), [1, 2, 4], "s")
    spec = _spec("id", "update_all", "insert_all", "keep")
    native_ds, why, _ = _distributed(path, source, spec, tasks=2, seed=4,
                                     before_commit=lambda: lance.dataset(path).update({"score": "0.5"}, "id < 10"))
    assert native_ds is None and why
    # the stale run left no data files of its own
    after = set(p.name for p in (tmp_path / "r" / "data").iterdir())
    assert len(after - before_files) == len(after) - len(before_files)
    assert lance.dataset(path).to_table(filter="id = 1").column("score").to_pylist() == [0.5]


@pytest.mark.parametrize("bad,match", [
    (pa.table({"name": ["x"]}), "key column \"id\" is not in the source"),
    (pa.table({"id": [1], "nope": [1]}), "\"nope\" is not in the dataset"),
    (pa.table({"id": pa.array([1], pa.int32())}), "has type Int32 but the dataset's has type Int64"),
])
def test_bad_source_is_refused_before_writing(tmp_path, bad, match):
    path = str(tmp_path / "bad")
    _make(path, "2.2", False, random.Random(11))
    ds = lancelet.dataset(path)
    with pytest.raises(InvalidInputError, match=match):
        _native.merge_columns(ds._native, bad.schema, _spec("id", "update_all", "insert_all", "keep"))


def test_commit_refuses_foreign_fragments_and_addresses(tmp_path):
    path = str(tmp_path / "x")
    _make(path, "2.2", False, random.Random(12))
    ds = lancelet.dataset(path)
    deletions_before = set(os.listdir(os.path.join(path, "_deletions")))
    with pytest.raises(InvalidInputError, match="not a DataFragment"):
        _native.merge_commit(ds._native, [b"\xff\xff"], [], [], (0, 0, 0), None)
    with pytest.raises(InvalidInputError, match="fragment 99"):
        _native.merge_deletions(ds._native, 99, (1).to_bytes(4, "little"), "job-")
    (f, d, rows), name = _native.merge_deletions(ds._native, 0, (1).to_bytes(4, "little"), "job-")
    with pytest.raises(InvalidInputError, match="fragment 99"):
        _native.merge_commit(ds._native, [], [], [(99, d, rows)], (0, 0, 1), None)
    with pytest.raises(InvalidInputError, match="two staged deletions"):
        _native.merge_commit(ds._native, [], [], [(f, d, rows), (f, d, rows)], (0, 0, 2), None)
    with pytest.raises(InvalidInputError, match="not a bitmap"):
        _native.merge_commit(ds._native, [], [], [(f, d, b"junk")], (0, 0, 1), None)
    with pytest.raises(InvalidInputError, match="row 999"):
        _native.merge_deletions(ds._native, 0, (999).to_bytes(4, "little"), "job-")
    assert name in os.listdir(os.path.join(path, "_deletions"))
    # the job's cleanup finds the file by its tag; nothing else is touched
    assert _native.merge_cleanup_deletions(path, "job-", ds.version, [], None) == 1
    assert set(os.listdir(os.path.join(path, "_deletions"))) == deletions_before
    assert lancelet.dataset(path).version == ds.version


def _orphan_deletion_files(path) -> set:
    """Deletion files no version references."""
    ds = lance.dataset(path)
    referenced = set()
    for v in ds.versions():
        for f in ds.checkout_version(v["version"]).get_fragments():
            if f.deletion_file():
                referenced.add(os.path.basename(f.deletion_file()))
    return set(os.listdir(os.path.join(path, "_deletions"))) - referenced


@pytest.mark.parametrize("stable", [False, True])
def test_concurrent_pylance_delete_of_other_rows_is_merged(tmp_path, stable):
    """pylance deletes other rows of the fragments the job touches after the
    tasks wrote their deletion files: the commit merges both deletion
    vectors (no re-run), loses neither delete, and removes the tasks' files
    it replaced."""
    path = str(tmp_path / "m")
    _make(path, "2.1", stable, random.Random(13))
    source = _table(random.Random(14), list(range(0, 400, 4)) + [700], "s")
    spec = _spec("id", "update_all", "insert_all", "keep")
    native_ds, why, stats = _distributed(path, source, spec, tasks=3, seed=5,
                                         before_commit=lambda: lance.dataset(path).delete("id % 4 = 1"))
    assert native_ds is not None, why
    got = lance.dataset(path).to_table()
    ids = got.column("id").to_pylist()
    assert len(ids) == len(set(ids))
    live = {i for i in range(400) if i % 17 != 3 and i % 4 != 1} | set(source.column("id").to_pylist())
    assert set(ids) == live
    by_id = {r["id"]: r for r in got.to_pylist()}
    assert all(by_id[r["id"]] == r for r in source.to_pylist())
    assert stats["num_updated_rows"] + stats["num_inserted_rows"] == source.num_rows
    assert _orphan_deletion_files(path) == set()
    assert lancelet.dataset(path).to_table().sort_by("id").equals(got.sort_by("id"))


def test_concurrent_pylance_delete_of_same_rows_asks_for_a_rerun(tmp_path):
    path = str(tmp_path / "s")
    _make(path, "2.2", False, random.Random(15))
    source = _table(random.Random(16), [1, 2, 200], "s")
    spec = _spec("id", "delete", "do_nothing", "keep")
    native_ds, why, _ = _distributed(path, source, spec, tasks=2, seed=6,
                                     before_commit=lambda: lance.dataset(path).delete("id = 2"))
    assert native_ds is None and "both removed rows" in why
    assert _orphan_deletion_files(path) == set()
    assert sorted(lance.dataset(path).to_table(filter="id < 3").column("id").to_pylist()) == [0, 1]
