"""Branches (issue 34, item 3) against pylance 14, both ways: pylance makes
branches and commits on them, lancelet reads, lists and commits on; lancelet
makes them, pylance reads and commits on; every read compared with the
other library and with a model of what each branch holds. Commits on a
branch leave the main line byte for byte as it was. Bad names and unknown
references raise the classes pylance raises, and write nothing."""

from __future__ import annotations

import hashlib
import json
import os
import random
import uuid

import lance
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import InvalidReferenceError, NotFoundError, ReferenceExistsError, ReferenceNotFoundError

LIBS = {"lance": lance, "lancelet": lancelet}


def _table(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{i % 7}" for i in ids]})


def _ids(ds, **kw) -> list:
    return sorted(ds.to_table(columns=["id"], **kw).column("id").to_pylist())


def _files(path) -> dict:
    """Every file below ``path`` (relative path -> sha256)."""
    out = {}
    for root, _, names in os.walk(path):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = hashlib.sha256(f.read()).hexdigest()
    return out


def _main_files(path) -> dict:
    """The main line's files: everything but branch trees and refs (and the
    hint, which only says what the listing says)."""
    return {k: v for k, v in _files(path).items()
            if not k.startswith(("tree/", "_refs/")) and not k.endswith("latest_version_hint.json")}


def _same_reads(uri, branch, versions) -> None:
    for v in versions:
        a = lance.dataset(uri).checkout_version((branch, v)).to_table()
        b = lancelet.dataset(uri).checkout_version((branch, v)).to_table()
        assert a.equals(b), (branch, v)


def test_pylance_branches_read_and_continued_by_lancelet(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(range(100)), uri, max_rows_per_file=40)
    ds = lance.dataset(uri)
    ds.delete("id < 5")                                       # main v2
    feat = ds.create_branch("feat", 2)
    feat.insert(_table(range(1000, 1010)))                    # feat v3
    sub = lance.dataset(uri).create_branch("feat/sub", ("feat", 3))
    sub.delete("id = 1001")                                   # feat/sub v4
    lance.dataset(uri).tags.create("t-feat", ("feat", 3))
    main_before = _main_files(uri)

    ours, theirs = lancelet.dataset(uri), lance.dataset(uri)
    assert ours.branches.list() == theirs.branches.list()
    for order in (None, "asc", "desc"):
        assert ours.branches.list_ordered(order) == theirs.branches.list_ordered(order)
    assert ours.tags.list() == theirs.tags.list()
    _same_reads(uri, "feat", [2, 3])
    _same_reads(uri, "feat/sub", [3, 4])
    assert lancelet.dataset(uri, version="t-feat").to_table().equals(lance.dataset(uri, version="t-feat").to_table())
    # the tree opened directly is the branch, as in pylance
    assert lancelet.dataset(f"{uri}/tree/feat").to_table().equals(lance.dataset(f"{uri}/tree/feat").to_table())

    # lancelet commits on pylance's branch: append, delete, update, compaction
    b = lancelet.dataset(uri).checkout_version(("feat", None))
    assert b.version == 3 and b.uri == uri
    b.insert(_table(range(2000, 2005)))                       # v4
    b.delete("id % 10 = 3")                                   # v5
    b.update({"s": "'upd'"}, where="id >= 2000")              # v6
    b.optimize.compact_files(target_rows_per_fragment=1000)   # v7 (and v8: fragments reserved first)
    last = b.version
    assert last >= 7
    want = sorted([i for i in list(range(5, 100)) + list(range(1000, 1010)) + list(range(2000, 2005)) if i % 10 != 3])
    assert _ids(b) == want
    theirs_b = lance.dataset(uri).checkout_version(("feat", None))
    assert theirs_b.version == last
    assert theirs_b.to_table().sort_by("id").equals(b.to_table().sort_by("id"))
    assert set(theirs_b.to_table(filter="id >= 2000").column("s").to_pylist()) == {"upd"}
    _same_reads(uri, "feat", range(2, last + 1))
    # main is untouched, byte for byte, and so is the other branch
    assert _main_files(uri) == main_before
    assert _ids(lance.dataset(uri)) == list(range(5, 100))
    _same_reads(uri, "feat/sub", [3, 4])
    # pylance goes on after lancelet, lancelet reads it
    theirs_b.insert(_table([3000]))
    assert _ids(lancelet.dataset(uri).checkout_version(("feat", last + 1))) == sorted(want + [3000])
    # the versions lancelet wrote carry the branch and base paths pylance wrote
    for v in (3, last):
        assert "base_paths" in lancelet.dataset(uri).checkout_version(("feat", v)).feature_flags.reader_names


def _record(path, name) -> dict:
    with open(os.path.join(path, "_refs", "branches", name + ".json")) as f:
        text = f.read()
    return text, json.loads(text)


@pytest.mark.parametrize("maker", ["lance", "lancelet"])
def test_layout_matches_pylance(tmp_path, maker):
    """The same steps made by each library give the same files (names of
    records and manifests, counts of transactions) and records with the
    same keys in the same order."""
    lib = LIBS[maker]
    layouts = {}
    for who, w in LIBS.items():
        uri = str(tmp_path / who)
        lance.write_dataset(_table(range(30)), uri)
        lance.write_dataset(_table(range(30, 40)), uri, mode="append")
        d = w.dataset(uri)
        d.create_branch("feat", 1)
        d.create_branch("feat/sub", ("feat", 1))
        names = sorted(p for p in _files(uri) if p.startswith(("tree/", "_refs/")))
        layouts[who] = [("txn" if p.endswith(".txn") else p) for p in names]
        text, rec = _record(uri, "feat%2Fsub")
        assert list(rec) == ["parentBranch", "identifier", "parentVersion", "createAt", "manifestSize", "metadata"]
        assert rec["parentBranch"] == "feat" and rec["parentVersion"] == 1
        feat = json.loads(_record(uri, "feat")[0])
        assert rec["identifier"]["version_mapping"][0] == feat["identifier"]["version_mapping"][0]
        assert len(rec["identifier"]["version_mapping"]) == 2
        assert text.startswith('{\n  "parentBranch": "feat",\n  "identifier": {\n    "version_mapping": [\n      [\n')
        # manifestSize: the parent version's manifest
        feat_v1 = [p for p in os.listdir(os.path.join(uri, "tree", "feat", "_versions")) if p.endswith(".manifest")]
        assert rec["manifestSize"] == os.path.getsize(os.path.join(uri, "tree", "feat", "_versions", feat_v1[0]))
    assert layouts["lance"] == layouts["lancelet"]
    # whichever made them, both read the branches the same
    uri = str(tmp_path / maker)
    b = lib.dataset(uri).checkout_version(("feat/sub", 1))
    assert _ids(b) == list(range(30))
    _same_reads(uri, "feat", [1])
    _same_reads(uri, "feat/sub", [1])
    assert lancelet.dataset(uri).branches.list() == lance.dataset(uri).branches.list()


def test_lancelet_branches_read_and_continued_by_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(_table(range(50)), uri, max_rows_per_file=20)
    ds = lancelet.dataset(uri)
    ds.delete("id < 3")                                       # v2
    ds.tags.create("t2", 2)
    lancelet.write_dataset(_table(range(50, 60)), uri, mode="append")  # v3
    main_before = _main_files(uri)
    ds = lancelet.dataset(uri)
    f = ds.create_branch("feat", "t2")                        # from a tag
    assert (f.version, f.uri) == (2, f"{uri}/tree/feat")
    f.insert(_table(range(100, 110)))                         # feat v3
    f.delete("id = 105")                                      # feat v4 (own deletion file)
    g = ds.create_branch("g")                                 # None: the latest of main (v3)
    assert g.version == 3
    s = ds.create_branch("feat/sub", ("feat", 3))
    s.update({"s": "'x'"}, where="id = 101")                  # feat/sub v4
    ds.tags.create("t-sub", ("feat/sub", 4))
    f.tags.create("t-feat", 4)                                # a number on a branch: that branch's
    h = f.create_branch("h", 3)                               # a number: of the current branch
    assert lance.dataset(uri).branches.list()["h"]["parent_branch"] == "feat"
    assert _ids(h) == sorted(list(range(3, 50)) + list(range(100, 110)))
    assert _main_files(uri) == main_before

    theirs = lance.dataset(uri)
    assert theirs.branches.list() == lancelet.dataset(uri).branches.list()
    assert theirs.tags.list() == lancelet.dataset(uri).tags.list()
    assert theirs.tags.list()["t-feat"]["branch"] == "feat"
    _same_reads(uri, "feat", [2, 3, 4])
    _same_reads(uri, "feat/sub", [3, 4])
    _same_reads(uri, "g", [3])
    _same_reads(uri, "h", [3])
    assert lance.dataset(uri, version="t-sub").to_table().equals(lancelet.dataset(uri, version="t-sub").to_table())
    assert lance.dataset(uri, version="t-sub").to_table(filter="id = 101").column("s").to_pylist() == ["x"]
    # pylance commits on lancelet's branches; lancelet reads
    pf = lance.dataset(uri).checkout_version(("feat", None))
    pf.insert(_table([900]))
    pf.delete("id = 100")
    pf.optimize.compact_files(target_rows_per_fragment=1000)
    _same_reads(uri, "feat", [5, 6, 7])
    assert _ids(lancelet.dataset(uri).checkout_version(("feat", None))) == \
        sorted(list(range(3, 50)) + [101, 102, 103, 104, 106, 107, 108, 109, 900])
    # pylance branches from lancelet's branch
    lance.dataset(uri).create_branch("feat/p", ("feat", 4))
    _same_reads(uri, "feat/p", [4])
    assert _main_files(uri) == main_before


def test_checkout_latest_and_tuple_versions(tmp_path):
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(_table(range(10)), uri)
    b = lancelet.dataset(uri).create_branch("b", 1)
    old = lancelet.dataset(uri).checkout_version(("b", 1))
    b.insert(_table([10]))
    assert old.checkout_latest() is None and old.version == 2
    assert _ids(old) == list(range(11))
    assert lancelet.dataset(uri).checkout_version(("main", None)).version == 1
    assert lancelet.dataset(uri).checkout_version((None, 1)).version == 1
    assert old.checkout_version(1).version == 1 and _ids(old.checkout_version(1)) == list(range(10))
    assert lancelet.dataset(uri, version=("b", 2)).version == 2
    main = lancelet.dataset(uri)
    main.checkout_latest()
    assert main.version == 1


BAD_NAMES = ["main", "", "a b", "a..b", "/x", "x/", "a//b", "x.lock", "a/b.lock", "a\\b", "a:b", "a*b", "x~", "a@{b"]


def test_bad_input_typed_and_nothing_written(tmp_path):
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(_table(range(10)), uri)
    lancelet.write_dataset(_table(range(10, 12)), uri, mode="append")
    ds = lancelet.dataset(uri)
    ds.create_branch("feat", 1)
    ds.tags.create("t1", 1)
    before = _files(uri)
    for name in BAD_NAMES:
        with pytest.raises(OSError):
            lance.dataset(uri).create_branch(name, 1)
        with pytest.raises(InvalidReferenceError) as e:
            ds.create_branch(name, 1)
        assert isinstance(e.value, OSError) and isinstance(e.value, ValueError)
        assert _files(uri) == before, name
    with pytest.raises(ReferenceExistsError, match="feat"):
        ds.create_branch("feat", 2)
    for ref in [99, "nosuchtag", ("nob", 1), ("feat", 99)]:
        with pytest.raises(OSError):
            lance.dataset(uri).create_branch("new", ref)
        with pytest.raises(NotFoundError):
            ds.create_branch("new", ref)
    for ref in [("nob", 1), ("feat", 99), 99, "nosuchtag"]:
        with pytest.raises(OSError):
            lance.dataset(uri).checkout_version(ref)
        with pytest.raises(NotFoundError):
            ds.checkout_version(ref)
    with pytest.raises(ValueError):
        lance.dataset(uri).branches.delete("nob")
    with pytest.raises(ReferenceNotFoundError):
        ds.branches.delete("nob")
    with pytest.raises(NotFoundError):
        ds.tags.create("t9", ("nob", 1))
    with pytest.raises(NotFoundError):
        ds.tags.create("t9", ("feat", 7))
    with pytest.raises(TypeError):
        ds.checkout_version(1.5)
    with pytest.raises(ValueError):
        ds.branches.list_ordered("sideways")
    assert _files(uri) == before
    # a branch others were made from, or one a tag names, stays
    ds.create_branch("feat/sub", ("feat", 1))
    ds.tags.create("tf", ("feat", 1))
    before = _files(uri)
    with pytest.raises(OSError):
        lance.dataset(uri).branches.delete("feat")
    with pytest.raises(InvalidReferenceError, match="feat/sub"):
        ds.branches.delete("feat")
    ds.branches.delete("feat/sub")
    with pytest.raises(InvalidReferenceError, match="tf"):
        ds.branches.delete("feat")
    assert _files(uri) == {k: v for k, v in before.items() if not k.startswith("tree/feat/sub") and "feat%2Fsub" not in k}


def test_delete_keeps_nested_trees_of_other_branches(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(range(10)), uri)
    ds = lance.dataset(uri)
    ds.create_branch("b", 1).insert(_table([100]))
    ds.create_branch("b/data", 1).insert(_table([200]))      # its tree lies inside b's, b is not its parent
    lancelet.dataset(uri).branches.delete("b")
    assert set(lance.dataset(uri).branches.list()) == {"b/data"}
    assert not os.path.exists(os.path.join(uri, "_refs", "branches", "b.json"))
    assert sorted(os.listdir(os.path.join(uri, "tree", "b"))) == ["data"]
    _same_reads(uri, "b/data", [1, 2])
    assert _ids(lance.dataset(uri).checkout_version(("b/data", 2))) == list(range(10)) + [200]
    # and the name is free again
    lancelet.dataset(uri).create_branch("b", 1)
    _same_reads(uri, "b", [1])


def test_replace_metadata(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(range(5)), uri)
    lance.dataset(uri).create_branch("b", 1)
    lancelet.dataset(uri).branches.replace_metadata("b", {"owner": "me", "q": 'a "b"'})
    assert lance.dataset(uri).branches.list()["b"]["metadata"] == {"owner": "me", "q": 'a "b"'}
    lance.dataset(uri).branches.replace_metadata("b", {"x": "y"})
    assert lancelet.dataset(uri).branches.list() == lance.dataset(uri).branches.list()
    with pytest.raises(ReferenceNotFoundError):
        lancelet.dataset(uri).branches.replace_metadata("nob", {})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_branch_histories(tmp_path, seed):
    """Random appends, deletes and branch creations on random branches by
    random libraries; after each step both libraries read every version
    of every branch as the model says."""
    rng = random.Random(seed)
    uri = str(tmp_path / "ds")
    lib = LIBS[rng.choice(list(LIBS))]
    lib.write_dataset(_table(range(20)), uri)
    model = {None: {1: list(range(20))}}
    next_id = 1000
    for step in range(8):
        lib = LIBS[rng.choice(list(LIBS))]
        branch = rng.choice(list(model))
        latest = max(model[branch])
        op = rng.choice(["append", "delete", "branch"])
        d = lib.dataset(uri).checkout_version((branch, None))
        if op == "append":
            new = list(range(next_id, next_id + rng.randint(1, 5)))
            next_id += 100
            d.insert(_table(new))
            model[branch][latest + 1] = sorted(model[branch][latest] + new)
        elif op == "delete":
            k = rng.randint(2, 5)
            d.delete(f"id % {k} = 0")
            model[branch][latest + 1] = [i for i in model[branch][latest] if i % k != 0]
        else:
            v = rng.choice(list(model[branch]))
            name = f"b{step}" if rng.random() < 0.5 or branch is None else f"{branch}/c{step}"
            src = v if rng.random() < 0.5 else (branch, v)
            lib.dataset(uri).checkout_version((branch, v)).create_branch(name, src)
            model[name] = {v: model[branch][v]}
        for b, versions in model.items():
            for v, want in versions.items():
                for reader in LIBS.values():
                    assert _ids(reader.dataset(uri).checkout_version((b, v))) == want, (seed, step, reader, b, v)
    assert lancelet.dataset(uri).branches.list() == lance.dataset(uri).branches.list()


def test_branches_on_s3(s3_server):
    so = s3_server.storage_options
    uri = f"s3://lancelet/branches-{uuid.uuid4().hex[:8]}"
    lance.write_dataset(_table(range(30)), uri, storage_options=so)
    lance.dataset(uri, storage_options=so).create_branch("p", 1).insert(_table([100]))
    ours = lancelet.dataset(uri, storage_options=so)
    assert ours.branches.list() == lance.dataset(uri, storage_options=so).branches.list()
    b = ours.checkout_version(("p", None))
    assert _ids(b) == list(range(30)) + [100]
    b.insert(_table([101]))
    b.delete("id < 5")
    q = ours.create_branch("p/q", ("p", 3))                   # before the delete
    q.insert(_table([200]))
    ours.tags.create("tq", ("p/q", 4))
    theirs = lance.dataset(uri, storage_options=so)
    assert _ids(theirs.checkout_version(("p", 4))) == list(range(5, 30)) + [100, 101]
    assert _ids(theirs.checkout_version(("p/q", 4))) == list(range(30)) + [100, 101, 200]
    assert _ids(lance.dataset(uri, version="tq", storage_options=so)) == list(range(30)) + [100, 101, 200]
    assert _ids(theirs) == list(range(30))
    theirs.checkout_version(("p/q", None)).insert(_table([300]))
    assert _ids(lancelet.dataset(uri, storage_options=so).checkout_version(("p/q", 5))) == \
        list(range(30)) + [100, 101, 200, 300]
    ours.tags.delete("tq")
    ours.branches.delete("p/q")
    assert list(lance.dataset(uri, storage_options=so).branches.list()) == ["p"]


@pytest.mark.parametrize("maker", ["lance", "lancelet"])
def test_inherited_index_on_a_branch(tmp_path, maker):
    """A branch inherits its parent's indices (their files stay with the
    parent, marked with its base id): filtered scans use them in both
    libraries."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(range(600)), uri, max_rows_per_file=100)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    LIBS[maker].dataset(uri).create_branch("b", 2)
    assert len(lancelet.dataset(uri).checkout_version(("b", 2)).list_indices()) == 1
    for lib in LIBS.values():
        d = lib.dataset(uri).checkout_version(("b", None))
        assert _ids(d, filter="id = 7 OR id = 507") == [7, 507]
    assert "ScalarIndexQuery" in lancelet.dataset(uri).checkout_version(("b", 2)).scanner(filter="id = 7").explain_plan()
    # (a compaction on the branch remapping the inherited index: known
    # issue, see docs/branches.md "Not done")
