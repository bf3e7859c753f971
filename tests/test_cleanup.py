"""``Dataset.cleanup_old_versions`` against pylance 14: the same files go,
with the same counts, and every version kept stays fully readable by both
libraries."""

from __future__ import annotations

import os
import shutil
import time
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import InvalidInputError
from lancelet.optimize import CleanupStats


def _files(path) -> list:
    out = []
    for root, _, names in os.walk(path):
        out.extend(os.path.relpath(os.path.join(root, n), path) for n in names)
    return sorted(out)


def _history(path, writer) -> None:
    """Appends, a delete, an index, a compaction, an overwrite-free history
    of 8 versions, written by ``writer`` (lance or lancelet) where it can."""
    t = lambda a, n: pa.table({"x": pa.array(range(a, a + n), pa.int64()), "s": [f"v{i}" for i in range(a, a + n)]})  # noqa: E731
    writer.write_dataset(t(0, 100), path)
    for i in range(1, 4):
        writer.write_dataset(t(100 * i, 100), path, mode="append")
    writer.dataset(path).delete("x < 50")
    lance.dataset(path).create_scalar_index("x", "BTREE")
    writer.dataset(path).optimize.compact_files()


def _orphans(path, age_days: float) -> list:
    names = ["data/orphan.lance", "_deletions/0-1-99.arrow", "_transactions/9-orphan.txn",
             "_indices/5e9b1a52-5d89-4cbb-9b4c-b2b1a2d0c0d9/part.lance", "_versions/.tmp_abc", "data/notes.txt"]
    when = time.time() - age_days * 86400
    for n in names:
        p = os.path.join(path, n)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"x" * 10)
        os.utime(p, (when, when))
    return names


def _stats(s) -> tuple:
    return (s.bytes_removed, s.old_versions, s.data_files_removed, s.transaction_files_removed,
            s.deletion_files_removed, s.index_files_removed)


def _readable(path, versions) -> None:
    for v in versions:
        a = lance.dataset(path, version=v).to_table(with_row_id=True)
        b = lancelet.dataset(path, version=v).to_table(with_row_id=True)
        assert a.equals(b), v


@pytest.mark.parametrize("writer", [lance, lancelet], ids=["pylance-history", "lancelet-history"])
@pytest.mark.parametrize("orphan_age,unverified", [(0.01, False), (0.01, True), (8, False)],
                         ids=["fresh-orphans", "delete-unverified", "old-orphans"])
def test_same_removals_as_pylance(tmp_path, writer, orphan_age, unverified):
    base = str(tmp_path / "base")
    _history(base, writer)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    for p in (ours, theirs):
        _orphans(p, orphan_age)
    latest = lance.dataset(theirs).version
    s_theirs = lance.dataset(theirs).cleanup_old_versions(older_than=timedelta(0), delete_unverified=unverified)
    s_ours = lancelet.dataset(ours).cleanup_old_versions(older_than=timedelta(0), delete_unverified=unverified)
    assert isinstance(s_ours, CleanupStats)
    assert _stats(s_ours) == _stats(s_theirs)
    assert _files(ours) == _files(theirs)
    assert [v["version"] for v in lancelet.dataset(ours).versions()] == [latest]
    _readable(ours, [latest])


def test_retain_versions_and_tags(tmp_path):
    path = str(tmp_path / "ds")
    _history(path, lancelet)
    ds = lancelet.dataset(path)
    versions = [v["version"] for v in ds.versions()]
    ds.tags.create("keep-me", 3)
    ds.tags.create("also", 2)
    snapshot = _files(path)
    with pytest.raises(InvalidInputError, match="keep-me") as e:
        ds.cleanup_old_versions(retain_versions=2)
    assert "also" in str(e.value)
    assert _files(path) == snapshot, "nothing removed when tagged versions are in range"
    s = ds.cleanup_old_versions(retain_versions=2, error_if_tagged_old_versions=False)
    kept = [2, 3] + versions[-2:]
    assert s.old_versions == len(versions) - len(kept)
    assert [v["version"] for v in lancelet.dataset(path).versions()] == kept
    _readable(path, kept)
    # older_than: nothing is that old, nothing goes
    assert ds.cleanup_old_versions() == CleanupStats()
    with pytest.raises(InvalidInputError):
        ds.cleanup_old_versions(retain_versions=0)
    with pytest.raises(InvalidInputError):
        ds.cleanup_old_versions(older_than=5)


def test_versions_after_the_open_one_stay(tmp_path):
    path = str(tmp_path / "ds")
    _history(path, lancelet)
    old = lancelet.dataset(path, version=3)
    s = old.cleanup_old_versions(older_than=timedelta(0))
    assert s.old_versions == 2
    remaining = [v["version"] for v in lancelet.dataset(path).versions()]
    assert remaining == list(range(3, lancelet.dataset(path).latest_version + 1))
    _readable(path, remaining)


def test_progress(tmp_path):
    path = str(tmp_path / "ds")
    _history(path, lancelet)
    events = []
    lancelet.dataset(path).cleanup_old_versions(older_than=timedelta(0), progress=events.append)
    stages = {e["stage"] for e in events}
    assert stages == {"read", "delete"}
    assert events[-1]["done"] == events[-1]["total"]


def _indexed_history(path, version: str, stable: bool) -> None:
    """Deletions, indices (created, then replaced), an update, a
    compaction and an append, written by lancelet on ``version``."""
    t = lambda a, n: pa.table({"x": pa.array(range(a, a + n), pa.int64()), "s": [f"v{i % 9}" for i in range(a, a + n)]})  # noqa: E731
    lancelet.write_dataset(t(0, 200), path, max_rows_per_file=50, data_storage_version=version,
                           enable_stable_row_ids=stable)
    ds = lancelet.dataset(path)
    ds.delete("x % 7 = 0")                       # v2: deletion files
    ds.create_scalar_index("x", "BTREE")         # v3
    ds.create_scalar_index("s", "BITMAP")        # v4
    ds.delete("x % 7 = 1")                       # v5: the v2 deletion files are replaced
    ds.create_scalar_index("x", "BTREE")         # v6: the v3 index files are replaced
    ds.update({"s": "'u'"}, "x < 30")            # v7: rows move to a new fragment
    ds.optimize.compact_files(target_rows_per_fragment=120)  # v8, v9: indices remapped
    ds.insert(t(200, 20))                        # v10


@pytest.mark.parametrize("version,stable", [("2.0", False), ("2.1", True), ("2.2", False), ("2.2", True)],
                         ids=["2.0", "2.1-stable", "2.2", "2.2-stable"])
def test_indices_and_deletions_across_versions(tmp_path, version, stable):
    base = str(tmp_path / "base")
    _indexed_history(base, version, stable)
    latest = lance.dataset(base).version
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    s_theirs = lance.dataset(theirs).cleanup_old_versions(retain_versions=2)
    s_ours = lancelet.dataset(ours).cleanup_old_versions(retain_versions=2)
    assert _stats(s_ours) == _stats(s_theirs)
    assert _files(ours) == _files(theirs)
    assert s_ours.old_versions == latest - 2
    assert s_ours.deletion_files_removed > 0 and s_ours.index_files_removed > 0 and s_ours.data_files_removed > 0
    kept = [v["version"] for v in lance.dataset(ours).versions()]
    assert kept == [latest - 1, latest]
    _readable(ours, kept)
    for v in kept:
        a, b = lance.dataset(ours, version=v), lancelet.dataset(ours, version=v)
        # every index a retained version lists still has its files and answers
        assert sorted(i["uuid"] for i in a.list_indices()) == sorted(i["uuid"] for i in b.list_indices())
        for i in b.list_indices():
            if not i["name"].startswith("__"):
                assert os.listdir(os.path.join(ours, "_indices", i["uuid"])), i
        for f in ("x = 60", "x >= 100 and x < 130", "s = 'v3'", "s = 'u'"):
            want = a.to_table(filter=f, columns=["x"]).column("x").to_pylist()
            assert sorted(b.to_table(filter=f, columns=["x"]).column("x").to_pylist()) == sorted(want), (v, f)
            assert sorted(b.to_table(filter=f, columns=["x"], use_scalar_index=False).column("x").to_pylist()) == sorted(want)
