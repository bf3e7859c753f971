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
