"""``cleanup_old_versions`` removes every file no retained version needs,
and keeps every file a retained version, a tag or a branch needs: checked
against pylance 14 on copies of one dataset (same stats, same files left),
with histories written by either library, and every retained version, tag
and branch read back by both libraries afterwards."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import lancelet

STAT_KEYS = ("bytes_removed", "old_versions", "data_files_removed", "transaction_files_removed",
             "index_files_removed", "deletion_files_removed", "failed_deletes")


def _files(path) -> list:
    out = []
    for root, _, names in os.walk(path):
        out.extend(os.path.relpath(os.path.join(root, n), path) for n in names)
    return sorted(out)


def _stats(s) -> dict:
    return {k: getattr(s, k) for k in STAT_KEYS}


def _table(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"v{i % 13}" for i in ids],
                     "f": pa.array([i * 0.5 for i in ids], pa.float64())})


def _issue_history(path: str, writer, version: str, stable: bool) -> None:
    """The issue's shape: 4 fragments with deletions, a tag on version 2,
    an update, a compaction and an ``add_columns``, then an orphan data
    file. ``writer`` (lance or lancelet) makes every commit."""
    writer.write_dataset(_table(400), path, max_rows_per_file=100, data_storage_version=version,
                         enable_stable_row_ids=stable)
    ds = writer.dataset(path)
    ds.delete("id % 7 = 0")                                   # v2: a deletion file per fragment
    ds.tags.create("t2", 2)
    ds = writer.dataset(path)
    ds.update({"s": "'upd'"}, where="id % 5 = 0")            # new deletion files + a new fragment
    ds = writer.dataset(path)
    ds.delete("id % 11 = 0")                                  # replaces the deletion files again
    ds = writer.dataset(path)
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    ds = writer.dataset(path)
    ds.add_columns({"z": "id * 2"})
    with open(os.path.join(path, "data", "orphan.lance"), "wb") as f:
        f.write(b"o" * 100)


def _read_same(path: str, versions, tags=()) -> None:
    for v in list(versions) + list(tags):
        a = lance.dataset(path, version=v).to_table(with_row_id=True)
        b = lancelet.dataset(path, version=v).to_table(with_row_id=True)
        assert a.equals(b), v


def _twins(tmp_path, base: str):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    return ours, theirs


POLICIES = {
    "older-than-0-unverified": dict(older_than=timedelta(0), delete_unverified=True),
    "retain-3": dict(retain_versions=3),
    "older-than-0": dict(older_than=timedelta(0)),
}


@pytest.mark.parametrize("policy", list(POLICIES), ids=list(POLICIES))
@pytest.mark.parametrize("version,stable", [("2.2", False), ("2.0", True)], ids=["2.2", "2.0-stable"])
@pytest.mark.parametrize("writer", [lance, lancelet], ids=["pylance-history", "lancelet-history"])
def test_nothing_left_behind(tmp_path, writer, version, stable, policy):
    base = str(tmp_path / "base")
    _issue_history(base, writer, version, stable)
    ours, theirs = _twins(tmp_path, base)
    kw = dict(POLICIES[policy], error_if_tagged_old_versions=False)
    s_theirs = lance.dataset(theirs).cleanup_old_versions(**kw)
    s_ours = lancelet.dataset(ours).cleanup_old_versions(**kw)
    assert _stats(s_ours) == _stats(s_theirs)
    assert repr(s_ours) == repr(s_theirs)
    assert _files(ours) == _files(theirs)
    # the history really exercises every kind of file
    assert s_ours.transaction_files_removed >= 2 and s_ours.old_versions >= 2
    if policy == "older-than-0-unverified":
        assert s_ours.deletion_files_removed >= 4 and s_ours.data_files_removed >= 2
    kept = [v["version"] for v in lance.dataset(ours).versions()]
    assert kept == [v["version"] for v in lancelet.dataset(ours).versions()]
    assert 2 in kept
    _read_same(ours, kept, tags=["t2"])


def _branch_history(path: str) -> dict:
    """pylance makes branches: ``feat`` from main's
    version 2, ``feat/sub`` from ``feat``, commits on both, a tag on a
    branch version; then main moves on (deletes, an update, a compaction)
    so that main's own newer versions need none of version 2's files."""
    lance.write_dataset(_table(300), path, max_rows_per_file=100)
    ds = lance.dataset(path)
    ds.delete("id < 10")                                     # main v2
    feat = ds.create_branch("feat", 2)
    feat.delete("id = 150")                                  # feat v3: its own deletion file
    lance.write_dataset(_table(50, 1000), feat.uri, mode="append")  # feat v4: its own data file
    feat = lance.dataset(feat.uri)
    sub = lance.dataset(path).create_branch("feat/sub", ("feat", 3))
    sub.delete("id = 250")
    lance.dataset(path).tags.create("on-branch", ("feat", 3))
    ds = lance.dataset(path)
    ds.delete("id = 50")                                     # main v3
    ds = lance.dataset(path)
    ds.update({"s": "'u'"}, where="id < 120")                # main v4
    ds = lance.dataset(path)
    ds.optimize.compact_files(target_rows_per_fragment=1000)  # main v5 (+)
    with open(os.path.join(path, "data", "orphan.lance"), "wb") as f:
        f.write(b"o" * 10)
    return {b: lance.dataset(path).checkout_version((b, None)).to_table() for b in ("feat", "feat/sub")}


def _in_place(tmp_path, path: str, clean, branches=("feat", "feat/sub")):
    """Run ``clean(path)`` on the dataset where it was made: branch
    manifests name the main line's files by the absolute path of its root,
    so a copy elsewhere would not show what a cleanup must keep. The
    dataset is snapshotted first and put back after (mtimes kept)."""
    snap = str(tmp_path / "snapshot")
    if not os.path.exists(snap):
        shutil.copytree(path, snap)
    stats = clean(path)
    left = _files(path)
    reads = {b: lance.dataset(path).checkout_version((b, None)).to_table() for b in branches}
    kept = [v["version"] for v in lance.dataset(path).versions()]
    shutil.rmtree(path)
    shutil.copytree(snap, path)
    return stats, left, reads, kept


@pytest.mark.parametrize("policy", ["older-than-0-unverified", "older-than-0"])
def test_branches_keep_what_they_need(tmp_path, policy):
    base = str(tmp_path / "base")
    before = _branch_history(base)
    # (error_if_tagged_old_versions=False: a cleanup that took the tag on
    # a branch version for one on the main line must not stop here)
    kw = dict(POLICIES[policy], error_if_tagged_old_versions=False)
    s_theirs, left_theirs, reads_theirs, kept_theirs = _in_place(
        tmp_path, base, lambda p: lance.dataset(p).cleanup_old_versions(**kw))
    s_ours, left_ours, reads_ours, kept_ours = _in_place(
        tmp_path, base, lambda p: lancelet.dataset(p).cleanup_old_versions(**kw))
    assert _stats(s_ours) == _stats(s_theirs)
    assert left_ours == left_theirs
    assert kept_ours == kept_theirs
    assert s_ours.old_versions >= 2
    # every branch still reads, in pylance, after either cleanup; the
    # branch trees and records are untouched
    for b, want in before.items():
        assert reads_ours[b].equals(want), b
        assert reads_theirs[b].equals(want), b
    for p in _files(base):
        if p.startswith("tree/") or p.startswith("_refs/"):
            assert p in left_ours, p
    # once more for lancelet, to read what it kept with both libraries
    lancelet.dataset(base).cleanup_old_versions(**kw)
    branch_root = os.path.join(base, "tree", "feat")
    for v in lance.dataset(branch_root).versions():
        a = lance.dataset(branch_root, version=v["version"]).to_table()
        b = lancelet.dataset(branch_root, version=v["version"]).to_table()
        assert a.equals(b), v
    _read_same(base, kept_ours)


def test_tags_on_branches(tmp_path):
    base = str(tmp_path / "base")
    _branch_history(base)
    ds = lancelet.dataset(base)
    tags = ds.tags.list()
    assert tags == {k: {**v} for k, v in lance.dataset(base).tags.list().items()}
    assert tags["on-branch"]["branch"] == "feat" and tags["on-branch"]["version"] == 3
    # the tag names feat's version 3, not main's: both libraries open that
    by_tag = lancelet.dataset(base, version="on-branch")
    assert by_tag.version == 3
    assert by_tag.to_table().equals(lance.dataset(base, version="on-branch").to_table())
    assert not by_tag.to_table().equals(lancelet.dataset(base, version=3).to_table())
    # a tag copied from it names the same branch version, in pylance too
    ds.tags.create("copy", "on-branch")
    assert lance.dataset(base).tags.list()["copy"]["branch"] == "feat"
    assert lance.dataset(base, version="copy").to_table().equals(by_tag.to_table())
    ds.tags.delete("copy")
    # and a tag on a branch version does not keep main's version 3
    kw = dict(older_than=timedelta(0), delete_unverified=True)
    s_theirs, left_theirs, _, kept_theirs = _in_place(
        tmp_path, base, lambda p: lance.dataset(p).cleanup_old_versions(**kw))
    s_ours, left_ours, _, kept_ours = _in_place(
        tmp_path, base, lambda p: lancelet.dataset(p).cleanup_old_versions(**kw))
    assert (_stats(s_ours), left_ours, kept_ours) == (_stats(s_theirs), left_theirs, kept_theirs)
    assert 3 not in kept_ours


def _lancelet_branch_history(path: str) -> dict:
    """:func:`_branch_history`'s shape, every commit and branch made by
    lancelet."""
    lancelet.write_dataset(_table(300), path, max_rows_per_file=100)
    ds = lancelet.dataset(path)
    ds.delete("id < 10")                                     # main v2
    feat = ds.create_branch("feat", 2)
    feat.delete("id = 150")                                  # feat v3
    feat.insert(_table(50, 1000))                            # feat v4
    sub = lancelet.dataset(path).create_branch("feat/sub", ("feat", 3))
    sub.delete("id = 250")
    lancelet.dataset(path).tags.create("on-branch", ("feat", 3))
    ds = lancelet.dataset(path)
    ds.delete("id = 50")                                     # main v3
    ds.update({"s": "'u'"}, where="id < 120")                # main v4
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    with open(os.path.join(path, "data", "orphan.lance"), "wb") as f:
        f.write(b"o" * 10)
    return {b: lance.dataset(path).checkout_version((b, None)).to_table() for b in ("feat", "feat/sub")}


def test_lancelet_branches_keep_what_they_need(tmp_path):
    """Branches and a tag on a branch made by lancelet: both libraries'
    cleanups of the main line keep the same files, and every branch reads
    after either."""
    base = str(tmp_path / "base")
    before = _lancelet_branch_history(base)
    kw = dict(POLICIES["older-than-0-unverified"], error_if_tagged_old_versions=False)
    s_theirs, left_theirs, reads_theirs, kept_theirs = _in_place(
        tmp_path, base, lambda p: lance.dataset(p).cleanup_old_versions(**kw))
    s_ours, left_ours, reads_ours, kept_ours = _in_place(
        tmp_path, base, lambda p: lancelet.dataset(p).cleanup_old_versions(**kw))
    assert (_stats(s_ours), left_ours, kept_ours) == (_stats(s_theirs), left_theirs, kept_theirs)
    assert s_ours.old_versions >= 2 and 2 in kept_ours  # the version feat was made from stays
    for b, want in before.items():
        assert reads_ours[b].equals(want) and reads_theirs[b].equals(want), b


def _branch_cleanup_history(path: str, maker) -> None:
    """A branch ``b`` with five versions of its own (appends and deletes):
    a tag names its version 3, ``b/c`` is made from its version 4; main
    has versions of its own too."""
    maker.write_dataset(_table(100), path, max_rows_per_file=50)
    maker.dataset(path).create_branch("b", 1)
    for i in range(4):
        b = maker.dataset(path).checkout_version(("b", None))
        if i % 2:
            b.delete(f"id % {i + 3} = 0")
        else:
            b.insert(_table(10, 1000 + 100 * i))
    maker.dataset(path).tags.create("tb", ("b", 3))
    c = maker.dataset(path).create_branch("b/c", ("b", 4))
    c.insert(_table(5, 5000))
    maker.write_dataset(_table(10, 9000), path, mode="append")


@pytest.mark.parametrize("maker", [lance, lancelet], ids=["pylance-branches", "lancelet-branches"])
def test_cleanup_on_a_branch(tmp_path, maker):
    """Cleaning a branch (opened on it) removes its old versions and their
    files, as pylance's does; it keeps the version a tag on it names, the
    version a branch was made from and the files that branch uses, and
    never touches the main line."""
    base = str(tmp_path / "base")
    _branch_cleanup_history(base, maker)
    want = {(b, v["version"]): lance.dataset(base).checkout_version((b, v["version"])).to_table()
            for b in ("b", "b/c") for v in lance.dataset(os.path.join(base, "tree", b)).versions()}
    main_files = [p for p in _files(base) if not p.startswith("tree/")]
    kw = dict(older_than=timedelta(0), delete_unverified=True, error_if_tagged_old_versions=False)

    def clean(lib):
        return lambda p: lib.dataset(p).checkout_version(("b", None)).cleanup_old_versions(**kw)

    s_theirs, left_theirs, _, _ = _in_place(tmp_path, base, clean(lance), ("b", "b/c"))
    s_ours, left_ours, _, _ = _in_place(tmp_path, base, clean(lancelet), ("b", "b/c"))
    assert _stats(s_ours) == _stats(s_theirs)
    assert left_ours == left_theirs
    assert s_ours.old_versions >= 1
    assert [p for p in left_ours if not p.startswith("tree/")] == main_files
    # what stays reads as before in both libraries (b: tagged 3, parent 4, latest)
    clean(lancelet)(base)
    left = {(b, v["version"]) for b in ("b", "b/c") for v in lance.dataset(os.path.join(base, "tree", b)).versions()}
    assert {("b", 3), ("b", 4), ("b", 5)} <= left
    for key in left:
        for lib in (lance, lancelet):
            assert lib.dataset(base).checkout_version(key).to_table().equals(want[key]), key
    # a tagged branch version in range stops lancelet's cleanup, as pylance's
    with pytest.raises(ValueError, match="tb"):
        lancelet.dataset(base).checkout_version(("b", None)).cleanup_old_versions(older_than=timedelta(0))


def test_shallow_clone_from_a_tag_survives_cleanups(tmp_path):
    """A clone made from a tag (pylance's shallow_clone): the source's
    cleanup keeps the tagged version's files, so the clone reads on; the
    clone's cleanup never touches the source's files."""
    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    lancelet.write_dataset(_table(200), src, max_rows_per_file=50)
    ds = lancelet.dataset(src)
    ds.delete("id < 20")                                     # v2
    ds.tags.create("release", 2)
    lance.dataset(src).shallow_clone(clone, "release")
    ds = lancelet.dataset(src)
    ds.update({"s": "'u'"}, where="id < 100")                # v3
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    want = lance.dataset(clone).to_table()
    kw = dict(older_than=timedelta(0), delete_unverified=True, error_if_tagged_old_versions=False)
    stats = lancelet.dataset(src).cleanup_old_versions(**kw)
    assert stats.old_versions >= 1
    for lib in (lance, lancelet):
        assert lib.dataset(clone).to_table().equals(want)
    # the clone moves on and cleans up: the source keeps every file
    c = lancelet.dataset(clone)
    c.delete("id % 3 = 0")
    c.insert(_table(5, 7000))
    src_files = {p: os.path.getsize(os.path.join(src, p)) for p in _files(src)}
    lancelet.dataset(clone).cleanup_old_versions(**kw)
    assert {p: os.path.getsize(os.path.join(src, p)) for p in _files(src)} == src_files
    assert lance.dataset(clone).to_table().equals(lancelet.dataset(clone).to_table())
    assert lance.dataset(src, version="release").to_table().equals(want)
