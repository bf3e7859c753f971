"""One rule for callbacks that raise (docs/errors.md, "Your callbacks
raise"): the caller's own exception propagates unchanged, nothing is
committed, the files written are removed (the directory is byte for byte
as before) and both libraries open the dataset at the same version.

Each operation runs once on a copy to record its progress events; then,
for the first, a middle and the last event, it runs on the original with
a callback raising at that event."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import lancelet


class Cancelled(Exception):
    """The caller's own exception type."""


def _snapshot(path) -> dict:
    out = {}
    for root, _, names in os.walk(path):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = f.read()
    return out


def _table(start: int, n: int) -> pa.Table:
    r = range(start, start + n)
    return pa.table({"x": pa.array(r, pa.int64()), "s": [f"v{i % 7}" for i in r],
                     "tags": [[f"t{i % 3}", f"t{i % 5}"] for i in r]})


def _dataset(path, version="2.1", stable=False) -> None:
    """Six small fragments written by pylance, deletions, an index."""
    lance.write_dataset(_table(0, 120), path, max_rows_per_file=20, data_storage_version=version,
                        enable_stable_row_ids=stable)
    ds = lance.dataset(path)
    ds.delete("x % 5 = 1")
    ds.create_scalar_index("x", "BTREE")


def _update(ds, cb):
    ds.update({"s": "'changed'"}, "x > 30", progress=cb)


def _merge_insert(ds, cb):
    src = _table(100, 40).select(["x", "s"])
    ds.merge_insert("x").when_matched_update_all().when_not_matched_insert_all().execute(src, progress=cb)


def _add_sql(ds, cb):
    ds.add_columns({"y": "x * 2"}, progress=cb)


def _add_udf(ds, cb):
    ds.add_columns(lambda b: pa.record_batch([pa.compute.multiply(b["x"], 3)], names=["z"]),
                   read_columns=["x"], progress=cb)


def _btree(ds, cb):
    ds.create_scalar_index("s", "BTREE", progress=cb)


def _bitmap(ds, cb):
    ds.create_scalar_index("s", "BITMAP", name="s_bitmap", progress=cb)


def _label_list(ds, cb):
    ds.create_scalar_index("tags", "LABEL_LIST", progress=cb)


def _compact(ds, cb):
    ds.optimize.compact_files(target_rows_per_fragment=50, num_threads=2, progress=cb)


def _compact_deferred(ds, cb):
    ds.optimize.compact_files(target_rows_per_fragment=50, defer_index_remap=True, progress=cb)


OPERATIONS = {
    "update": _update,
    "merge_insert": _merge_insert,
    "add_columns_sql": _add_sql,
    "add_columns_udf": _add_udf,
    "btree": _btree,
    "bitmap": _bitmap,
    "label_list": _label_list,
    "compact": _compact,
    "compact_deferred": _compact_deferred,
}


def _events(path, op) -> list:
    copy = str(path) + "-dry"
    shutil.copytree(path, copy)
    events = []
    ds = lancelet.dataset(copy)
    v = ds.version
    op(ds, events.append)
    assert ds.version > v, "the dry run commits"
    shutil.rmtree(copy)
    return events


def _raise_at(k: int, error: Exception):
    seen = []

    def cb(event):
        assert set(event) == {"stage", "done", "total"}
        seen.append(event)
        if len(seen) == k + 1:
            raise error
    return cb


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_raising_callback_aborts(tmp_path, name):
    op = OPERATIONS[name]
    path = str(tmp_path / "ds")
    _dataset(path)
    events = _events(path, op)
    assert len(events) >= 2, events
    assert all(e["done"] <= e["total"] for e in events)
    before = _snapshot(path)
    version = lance.dataset(path).version
    rows = lance.dataset(path).to_table().sort_by("x")
    for k in sorted({0, len(events) // 2, len(events) - 1}):
        error = Cancelled(f"cancelled at event {k}")
        with pytest.raises(Cancelled) as raised:
            op(lancelet.dataset(path), _raise_at(k, error))
        assert raised.value is error, "the callback's own exception object comes back"
        assert _snapshot(path) == before, f"{name}: files changed after an abort at event {k} ({events[k]})"
        assert lancelet.dataset(path).version == version == lance.dataset(path).version
        assert lance.dataset(path).to_table().sort_by("x") == rows
    # and the operation still works afterwards
    ds = lancelet.dataset(path)
    op(ds, None)
    assert lance.dataset(path).version == ds.version > version


def test_stable_row_ids_update_abort(tmp_path):
    path = str(tmp_path / "ds")
    _dataset(path, "2.2", stable=True)
    before = _snapshot(path)
    with pytest.raises(KeyboardInterrupt):
        lancelet.dataset(path).update({"s": "'z'"}, "x > 10", progress=_raise_at(3, KeyboardInterrupt()))
    assert _snapshot(path) == before


def test_udf_exception_is_unchanged(tmp_path):
    path = str(tmp_path / "ds")
    _dataset(path)
    before = _snapshot(path)
    error = Cancelled("from the UDF")
    calls = []

    def udf(b):
        calls.append(1)
        if len(calls) == 3:
            raise error
        return pa.record_batch([b["x"]], names=["w"])

    with pytest.raises(Cancelled) as raised:
        lancelet.dataset(path).add_columns(udf, read_columns=["x"])
    assert raised.value is error and _snapshot(path) == before


def _cleanup_history(path) -> None:
    lance.write_dataset(_table(0, 60), path, max_rows_per_file=20)
    for i in range(3):
        lance.dataset(path).insert(_table(60 + 10 * i, 10))
    lance.dataset(path).delete("x < 5")
    lancelet.dataset(path).optimize.compact_files()


def test_cleanup_abort(tmp_path):
    path = str(tmp_path / "ds")
    _cleanup_history(path)
    latest = lance.dataset(path).version
    events = []
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    lancelet.dataset(copy).cleanup_old_versions(older_than=timedelta(0), progress=events.append)
    stages = [e["stage"] for e in events]
    first_delete = stages.index("delete")
    assert events[first_delete]["done"] == 0 and set(stages[:first_delete]) == {"read"}
    before = _snapshot(path)
    # before the removal starts: nothing is removed
    for k in (0, first_delete):
        error = Cancelled(k)
        with pytest.raises(Cancelled) as raised:
            lancelet.dataset(path).cleanup_old_versions(older_than=timedelta(0), progress=_raise_at(k, error))
        assert raised.value is error and _snapshot(path) == before
    # part-way: what is left is complete, the latest untouched
    with pytest.raises(Cancelled):
        lancelet.dataset(path).cleanup_old_versions(older_than=timedelta(0), progress=_raise_at(first_delete + 2, Cancelled()))
    kept = [v["version"] for v in lance.dataset(path).versions()]
    assert latest in kept and len(kept) < latest
    for v in kept:
        assert lance.dataset(path, version=v).to_table() == lancelet.dataset(path, version=v).to_table()
    # a later cleanup finishes the job
    lancelet.dataset(path).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert [v["version"] for v in lance.dataset(path).versions()] == [latest]
