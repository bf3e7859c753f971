"""Index maintenance across the two libraries, byte for byte: fragment
bitmaps after updates, deletes, appends, merge_insert and compaction, and
compactions / optimize_indices after a deferred remap
(``compact_files(defer_index_remap=True)``, the ``__lance_frag_reuse``
index) by either library.

Every step runs once through lancelet (copy A) and once through pylance
14.0.2 (copy B) from the same state; the index sections must agree on every
entry's name, fields, versions and fragment bitmap bytes, and every filter
must give the same rows indexed, unindexed and in pylance."""

from __future__ import annotations

import os
import shutil

import lance
import pyarrow as pa
import pytest
from lance.file import LanceFileReader
from manifest_raw import comparable, index_entries

import lancelet

FILTERS = [
    "id = 137", "id >= 100 and id < 160", "id < 40 or id > 330", "cat = 'c3'", "cat IN ('c1', 'c2')",
    "array_has_any(tags, ['t1'])", "array_contains(tags, 't2') and id > 200", "id > 250 and cat = 'c4'",
]


def _table(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": [f"c{i % 10}" for i in ids],
        "num": pa.array([i * 3 for i in ids], pa.int64()),
        "tags": [[f"t{i % 3}", f"t{i % 4 + 3}"] for i in ids],
    })


def _base(path: str, version: str = "2.1", stable: bool = False) -> None:
    lance.write_dataset(_table(0, 360), path, max_rows_per_file=60, data_storage_version=version,
                        enable_stable_row_ids=stable)
    ds = lance.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    ds.delete("id % 10 = 3")


def _ids(t: pa.Table) -> list:
    return sorted(t.column("id").to_pylist())


def _check(path: str, where: str) -> None:
    """Every filter: lancelet with indices == without == pylance."""
    mine = lancelet.dataset(path)
    theirs = lance.dataset(path)
    for f in FILTERS:
        want = _ids(mine.to_table(columns=["id"], filter=f, use_scalar_index=False))
        assert _ids(mine.to_table(columns=["id"], filter=f)) == want, (where, f, "lancelet indexed")
        assert _ids(theirs.to_table(columns=["id"], filter=f)) == want, (where, f, "pylance")
    assert "ScalarIndexQuery" in mine.scanner(filter="id = 137").explain_plan(), where


def _latest(path: str) -> list:
    return comparable(index_entries(path, lance.dataset(path).version))


def _btree_fragments(path: str) -> set:
    """Fragments the addresses of the BTREE index on id point into."""
    [idx] = [i for i in lance.dataset(path).list_indices() if i["name"] == "id_idx"]
    ids = LanceFileReader(os.path.join(path, "_indices", idx["uuid"], "page_data.lance")).read_all().to_table()["ids"]
    return {a >> 32 for a in ids.to_pylist()}


def _copies(tmp_path, base: str):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    shutil.copytree(base, a)
    shutil.copytree(base, b)
    return a, b


def _defer(lib, path: str) -> None:
    lib.dataset(path).optimize.compact_files(target_rows_per_fragment=150, defer_index_remap=True)


def _compact_again(lib, path: str) -> None:
    lib.dataset(path).delete("id % 10 = 4 or id % 10 = 5")
    lib.dataset(path).optimize.compact_files(target_rows_per_fragment=150)


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_lancelet_compaction_after_pylance_deferred_remap(tmp_path, version):
    base = str(tmp_path / "base")
    _base(base, version)
    _defer(lance, base)
    assert "__lance_frag_reuse" in [i["name"] for i in lancelet.dataset(base).list_indices()]
    _check(base, "after pylance's deferred compaction")
    a, b = _copies(tmp_path, base)
    _compact_again(lancelet, a)
    _compact_again(lance, b)
    assert lance.dataset(a).version == lance.dataset(b).version
    assert _latest(a) == _latest(b), "the same index section as pylance's"
    # the rewritten BTREE holds current addresses: the deferred mapping was
    # applied before this compaction's
    live = {f.fragment_id for f in lance.dataset(a).get_fragments()}
    assert _btree_fragments(a) <= live
    _check(a, "lancelet compaction after pylance's deferred one")
    # pylance's own compaction (copy b) leaves a stale BTREE (see below);
    # lancelet still answers right there
    for f in FILTERS:
        b_ds = lancelet.dataset(b)
        assert _ids(b_ds.to_table(columns=["id"], filter=f)) == _ids(b_ds.to_table(columns=["id"], filter=f, use_scalar_index=False)), f
    # and pylance keeps using and maintaining it
    lance.dataset(a).insert(_table(1000, 20))
    lance.dataset(a).optimize.optimize_indices()
    _check(a, "pylance optimize_indices afterwards")


def test_pylance_compaction_after_lancelet_deferred_remap(tmp_path):
    base = str(tmp_path / "base")
    _base(base)
    a, b = _copies(tmp_path, base)
    _defer(lancelet, a)
    _defer(lance, b)
    assert _latest(a) == _latest(b), "lancelet's deferred remap writes pylance's index section"
    _check(a, "after lancelet's deferred compaction")
    for path in (a, b):
        _compact_again(lance, path)
    assert _latest(a) == _latest(b)
    # pylance 14 rewrites the BTREE without applying the deferred mapping:
    # its addresses stay in the compacted-away fragments, pylance then misses
    # rows for it (on its own datasets too, and optimize_indices sees nothing
    # to do). lancelet notices (an address lands in no fragment the index
    # covers or the version has) and scans instead: its answers stay right.
    assert not _btree_fragments(a) & {f.fragment_id for f in lance.dataset(a).get_fragments()}, "pylance's stale BTREE"
    mine = lancelet.dataset(a)
    for f in FILTERS:
        want = _ids(mine.to_table(columns=["id"], filter=f, use_scalar_index=False))
        assert _ids(mine.to_table(columns=["id"], filter=f)) == want, f
        if f.startswith(("cat", "array_has_any")):  # no BTREE involved: pylance is right too
            assert _ids(lance.dataset(a).to_table(columns=["id"], filter=f)) == want, f
    assert _ids(lance.dataset(a).to_table(columns=["id"], filter="id = 137")) == [], "pylance 14's own answer"
    mine.create_scalar_index("id", "BTREE")
    _check(a, "rebuilt after pylance's compaction")


@pytest.mark.parametrize("deferred_by", ["lance", "lancelet"])
def test_optimize_indices_after_deferred_remap(tmp_path, deferred_by):
    base = str(tmp_path / "base")
    _base(base)
    _defer(lance if deferred_by == "lance" else lancelet, base)
    lance.dataset(base).insert(_table(2000, 30))
    a, b = _copies(tmp_path, base)
    lancelet.dataset(a).optimize.optimize_indices()
    lance.dataset(b).optimize.optimize_indices()
    assert [n for n, *_ in _latest(a)] == [n for n, *_ in _latest(b)]
    assert [e[-1] for e in _latest(a)] == [e[-1] for e in _latest(b)], "same coverage"
    for path in (a, b):
        _check(path, "optimize_indices after a deferred remap")
    live = {f.fragment_id for f in lance.dataset(a).get_fragments()}
    assert _btree_fragments(a) <= live


def test_describe_indices_lists_frag_reuse(tmp_path):
    base = str(tmp_path / "base")
    _base(base)
    _defer(lance, base)
    mine = {d.name: d for d in lancelet.dataset(base).describe_indices()}
    theirs = {d.name: d for d in lance.dataset(base).describe_indices()}
    assert sorted(mine) == sorted(theirs)
    for name, d in theirs.items():
        m = mine[name]
        assert (m.type_url, m.index_type, m.num_rows_indexed, m.fields, m.field_names, m.total_size_bytes) == \
            (d.type_url, d.index_type, d.num_rows_indexed, d.fields, d.field_names, d.total_size_bytes), name


STEPS = [
    ("update an unindexed column", lambda ds: ds.update({"num": "num + 1"}, "id < 50")),
    ("update an indexed column", lambda ds: ds.update({"cat": "'c9'"}, "id % 7 = 0")),
    ("delete", lambda ds: ds.delete("id % 9 = 0")),
    ("delete a whole fragment", lambda ds: ds.delete("id >= 300 and id < 360")),
    ("append", lambda ds: ds.insert(_table(500, 30))),
    # all columns: with a source lacking some and an index on the key,
    # pylance 14 rewrites the matched rows' columns in place (an Update in
    # REWRITE_COLUMNS mode) where lancelet moves the rows (REWRITE_ROWS)
    ("merge_insert", lambda ds: ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        .execute(pa.concat_tables([_table(10, 8), _table(900, 3)]))),
    ("compaction", lambda ds: ds.optimize.compact_files(target_rows_per_fragment=150)),
    ("update after compaction", lambda ds: ds.update({"num": "0"}, "id > 100 and id < 120")),
]


@pytest.mark.parametrize("stable", [False, True], ids=["plain", "stable-row-ids"])
def test_fragment_bitmaps_byte_for_byte(tmp_path, stable):
    base = str(tmp_path / "base")
    _base(base, "2.1", stable)
    a, b = _copies(tmp_path, base)
    for name, step in STEPS:
        step(lancelet.dataset(a))
        step(lance.dataset(b))
        assert lance.dataset(a).version == lance.dataset(b).version, name
        assert _latest(a) == _latest(b), name
    _check(a, "after every step")


def test_deferring_is_refused_with_stable_row_ids(tmp_path):
    from lancelet.exceptions import UnsupportedError

    base = str(tmp_path / "base")
    _base(base, "2.2", stable=True)
    v = lance.dataset(base).version
    with pytest.raises(OSError, match="stable row IDs"):
        _defer(lance, base)
    with pytest.raises(UnsupportedError, match="stable row ids"):
        _defer(lancelet, base)
    assert lance.dataset(base).version == v
