"""Array-metadata consolidation (``mode="array_meta"``) and consolidation
of a chosen set of fragments (``fragment_uris=``) against tiledb-py 0.36.1
both ways: twin arrays (byte copies) are consolidated by each library, the
files both write hold the same entries, and tiledb-py reads the same
metadata / cells from either; each library vacuums the other's result."""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import tiledb
from test_tiledb_consolidate import DENSE_COLS, _files, _fragment_names, _meta_payload, _state
from test_tiledb_ops import SPARSE_COLS, _dense_array, _sparse_array

import lancelet.tiledb as lt
from lancelet.exceptions import CorruptFileError, InvalidInputError, UnsupportedError

META = tiledb.Config({"sm.consolidation.mode": "array_meta"})
META_VAC = tiledb.Config({"sm.vacuum.mode": "array_meta"})


# ------------------------------------------------------------------ array metadata


def _meta(uri, timestamp=None):
    with tiledb.open(uri, timestamp=timestamp) as A:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in A.meta.items()}


def _random_value(rng: random.Random):
    kind = rng.randrange(7)
    if kind == 0:
        return rng.randrange(-2**40, 2**40)
    if kind == 1:
        return rng.random() * 1e6
    if kind == 2:
        return "".join(rng.choice("abcé€ ") for _ in range(rng.randrange(0, 12)))
    if kind == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 9)))
    if kind == 4:
        return tuple(rng.randrange(-99, 99) for _ in range(rng.randrange(1, 5)))
    if kind == 5:
        dt = rng.choice([np.int8, np.uint16, np.int32, np.uint64, np.float32, np.float64])
        return np.array([rng.randrange(0, 100) for _ in range(rng.randrange(1, 6))], dtype=dt)
    return (rng.random(), rng.random())


def _metadata_array(uri: str, seed: int, writes: int = 6) -> list:
    """A dense array whose metadata tiledb-py writes at t=10, 20, ...: puts,
    overwrites (also changing type) and deletions of random keys."""
    dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 9), tile=5, dtype=np.int32))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr(name="a", dtype=np.int64)]))
    rng = random.Random(seed)
    keys = ["k", "key", "é", "z" * 20, "a/b", "", "K1", "k1"]
    stamps, present = [], set()
    for w in range(writes):
        t = 10 * (w + 1)
        with tiledb.open(uri, "w", timestamp=t) as A:
            for _ in range(rng.randrange(1, 5)):
                key = rng.choice(keys)
                if key in present and rng.random() < 0.3:
                    del A.meta[key]
                    present.discard(key)
                else:
                    A.meta[key] = _random_value(rng)
                    present.add(key)
            if w == 2:
                A.meta["gone"] = 1
            if w == 4:
                del A.meta["gone"]
        stamps.append(t)
    return stamps


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_array_meta_consolidate_and_vacuum_both_ways(tmp_path, seed):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    stamps = _metadata_array(ours, seed)
    shutil.copytree(ours, theirs)
    opens = [None, 5, stamps[1], stamps[3], (stamps[1], stamps[4]), (stamps[2], stamps[2])]
    want = {str(ts): _meta(ours, ts) for ts in opens}
    lt.consolidate(ours, mode="array_meta")
    tiledb.consolidate(theirs, config=META)
    mine, tdb = _files(ours, "__meta"), _files(theirs, "__meta")
    new_mine = sorted(set(mine) - set(_files(theirs, "__meta")))
    new_tdb = sorted(set(tdb) - set(mine))
    # one merged file and its .vac, named for the first t1 and last t2
    assert [n.endswith(".vac") for n in new_mine] == [n.endswith(".vac") for n in new_tdb] == [False, True]
    assert new_mine[0].split("_")[:4] == new_tdb[0].split("_")[:4] == ["", "", "10", str(stamps[-1])]
    assert _meta_payload(Path(ours) / "__meta" / new_mine[0]) == _meta_payload(Path(theirs) / "__meta" / new_tdb[0])
    assert (Path(ours) / "__meta" / new_mine[1]).read_text() == (Path(theirs) / "__meta" / new_tdb[1]).read_text()
    for u in (ours, theirs):
        for ts in opens:
            assert _meta(u, ts) == want[str(ts)], ts
    # a second array pair: each library vacuums the other's consolidation
    ours2, theirs2 = str(tmp_path / "ours2"), str(tmp_path / "theirs2")
    shutil.copytree(theirs, ours2)
    shutil.copytree(ours, theirs2)
    lt.vacuum(ours, mode="array_meta")
    lt.vacuum(ours2, mode="array_meta")
    tiledb.vacuum(theirs, config=META_VAC)
    tiledb.vacuum(theirs2, config=META_VAC)
    for u in (ours, ours2, theirs, theirs2):
        (only,) = _files(u, "__meta")
        assert only.startswith(f"__10_{stamps[-1]}_")
        assert _meta(u) == want["None"]
        assert _meta(u, stamps[1]) == {}  # the merged file lies outside [0, t2]
    # nothing left to merge: both do nothing
    lt.consolidate(ours, mode="array_meta")
    assert len(_files(ours, "__meta")) == 1


def test_array_meta_range_cuts_and_deleted_keys(tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 9), tile=5, dtype=np.int32))
    tiledb.Array.create(ours, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr(name="a", dtype=np.int64)]))
    for t, op in [(10, ("put", "a", 1)), (20, ("put", "b", "x")), (30, ("del", "a")), (40, ("del", "b")), (50, ("put", "c", 2.5))]:
        with tiledb.open(ours, "w", timestamp=t) as A:
            if op[0] == "put":
                A.meta[op[1]] = op[2]
            else:
                del A.meta[op[1]]
    shutil.copytree(ours, theirs)
    # [10, 40]: every key written there is deleted again: no merged file,
    # only a .vac listing the four files, in both libraries
    lt.consolidate(ours, mode="array_meta", timestamp=(10, 40))
    tiledb.consolidate(theirs, config=tiledb.Config({"sm.consolidation.mode": "array_meta",
                                                     "sm.consolidation.timestamp_start": "10",
                                                     "sm.consolidation.timestamp_end": "40"}))
    for u in (ours, theirs):
        names = _files(u, "__meta")
        vac = [n for n in names if n.endswith(".vac")]
        assert len(names) == 6 and len(vac) == 1 and vac[0].startswith("__10_40_")
        assert len((Path(u) / "__meta" / vac[0]).read_text().splitlines()) == 4
        assert _meta(u) == {"c": 2.5}
        assert _meta(u, 25) == {"a": 1, "b": "x"}  # the .vac's range is not inside [0, 25]
    lt.vacuum(ours, mode="array_meta")
    tiledb.vacuum(theirs, config=META_VAC)
    assert [n.split("_")[2:4] for n in _files(ours, "__meta")] == [n.split("_")[2:4] for n in _files(theirs, "__meta")] == [["50", "50"]]
    assert _meta(ours) == _meta(theirs) == {"c": 2.5}


def test_array_meta_errors(tmp_path):
    uri = str(tmp_path / "m")
    _metadata_array(uri, 7, writes=3)
    listing = _files(uri, "__meta")
    first = Path(uri) / "__meta" / listing[0]
    first.write_bytes(first.read_bytes()[:-3])
    with pytest.raises(CorruptFileError):
        lt.consolidate(uri, mode="array_meta")
    assert _files(uri, "__meta") == listing
    with pytest.raises(UnsupportedError, match="group_meta"):
        lt.consolidate(uri, mode="group_meta")
    lt.vacuum(uri, mode="array_meta")  # nothing consolidated: nothing removed
    assert _files(uri, "__meta") == listing


# ------------------------------------------------------------------ fragment_uris


def _dense_four(uri: str) -> None:
    """1-d dense (tiles of 5): t=1 [0,4], t=2 [5,9], t=3 [0,1], t=4 [6,9]."""
    dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 19), tile=5, dtype=np.int32))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[
        tiledb.Attr(name="a", dtype=np.int64), tiledb.Attr(name="s", dtype=str, var=True)]))
    for t, (lo, hi) in zip((1, 2, 3, 4), ((0, 4), (5, 9), (0, 1), (6, 9))):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[lo:hi + 1] = {"a": np.arange(lo, hi + 1) * 10 + t, "s": np.array([f"s{t}-{i}" for i in range(lo, hi + 1)], dtype=object)}


def _sparse_four(uri: str, allows_duplicates: bool = False) -> None:
    """Sparse 1-d: t=1..4 write x in {1, 2, t+3}: x=1, 2 are rewritten by
    every fragment; x=4 (t=1) and x=7 (t=4) are written once."""
    dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, allows_duplicates=allows_duplicates,
                                                attrs=[tiledb.Attr(name="a", dtype=np.int64)]))
    for t in (1, 2, 3, 4):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array([1, 2, t + 3] if t != 3 else [40, 41, 42])] = {"a": np.array([t, t, t]) * 100}


def _dense_rows(uri, timestamp=None):
    with tiledb.open(uri, timestamp=timestamp) as A:
        r = A[:]
    return list(zip(r["a"].tolist(), r["s"].tolist()))


def _sparse_rows(uri, timestamp=None):
    with tiledb.open(uri, timestamp=timestamp) as A:
        r = A[:]
    return sorted(zip(r["x"].tolist(), r["a"].tolist()))


@pytest.mark.parametrize("pick", [(1, 3), (0, 1), (1, 2, 3), (0, 1, 2, 3), (2, 3)])
def test_dense_fragment_uris_both_ways(tmp_path, pick):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _dense_four(ours)
    shutil.copytree(ours, theirs)
    names = _fragment_names(ours)
    sel = [names[i] for i in pick]
    before = _dense_rows(ours)
    lance_before = _state(ours, ["x", "a", "s"])
    try:
        tiledb.consolidate(theirs, fragment_uris=sel)
        refused = None
    except tiledb.TileDBError as e:
        refused = e
    if refused is not None:
        # TileDB refuses (an older fragment not listed meets the union's tiles): so does lancelet, changing nothing
        listing = sorted(str(p.relative_to(ours)) for p in Path(ours).rglob("*"))
        with pytest.raises(InvalidInputError, match="overlaps"):
            lt.consolidate(ours, fragment_uris=sel)
        assert sorted(str(p.relative_to(ours)) for p in Path(ours).rglob("*")) == listing
        return
    # absolute URIs work as names do
    lt.consolidate(ours, fragment_uris=[str(Path(ours) / "__fragments" / n) for n in sel])
    info = [[(f.timestamp_range, f.nonempty_domain, f.cell_num) for f in tiledb.FragmentInfoList(u)] for u in (ours, theirs)]
    assert info[0] == info[1]
    vacs = [[n for n in _files(u, "__commits") if n.endswith(".vac")] for u in (ours, theirs)]
    assert [v[0].split("_")[:4] for v in vacs[0]] == [v[0].split("_")[:4] for v in vacs[1]]
    assert sorted((Path(ours) / "__commits" / vacs[0][0]).read_text().splitlines()) == \
        sorted((Path(theirs) / "__commits" / vacs[1][0]).read_text().splitlines()) == sorted(f"/__fragments/{n}" for n in sel)
    for u in (ours, theirs):
        assert _dense_rows(u) == before
        assert _state(u, ["x", "a", "s"]) == lance_before
    lt.vacuum(theirs)
    tiledb.vacuum(ours)
    for u in (ours, theirs):
        assert len(_files(u, "__fragments")) == 4 - len(pick) + 1
        assert _dense_rows(u) == before
        assert _state(u, ["x", "a", "s"]) == lance_before


@pytest.mark.parametrize("dups", [False, True])
@pytest.mark.parametrize("pick", [(0, 1), (1, 3), (0, 1, 2, 3), (0, 3), (0, 2)])
def test_sparse_fragment_uris(tmp_path, pick, dups):
    """Any set, contiguous in time or not: (0, 3) and (0, 2) skip t=2 / t=1
    fragments that rewrite the same cells. The merge keeps every cell
    version with its timestamp (as TileDB's), so a fragment written between
    the merged ones still wins where it is newer, and time travel into the
    merged range reads as before. Files and metadata equal tiledb-py's."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _sparse_four(ours, dups)
    shutil.copytree(ours, theirs)
    names = _fragment_names(ours)
    sel = [names[i] for i in pick]
    opens = [None, 1, 2, 3, (2, 3), (3, 4), (2, 4), 4]
    before = {str(ts): _sparse_rows(ours, ts) for ts in opens}
    tiledb.consolidate(theirs, fragment_uris=sel)
    lt.consolidate(ours, fragment_uris=sel)
    assert [f.timestamp_range for f in tiledb.FragmentInfoList(ours)] == [f.timestamp_range for f in tiledb.FragmentInfoList(theirs)]
    _same_merged_fragment(ours, theirs, nslots=3 + 1)
    for u in (ours, theirs):
        for ts in opens:
            assert _sparse_rows(u, ts) == before[str(ts)], (u, ts)
            assert _state(u, ["x", "a"], ts) == _state(theirs, ["x", "a"], ts)
    lt.vacuum(ours)
    tiledb.vacuum(theirs)
    for u in (ours, theirs):
        assert len(_files(u, "__fragments")) == 4 - len(pick) + 1
        for ts in opens:
            assert _sparse_rows(u, ts) == before[str(ts)], (u, ts)


def _same_merged_fragment(ours, theirs, nslots):
    """The merged fragments (t1 != t2) of twins: data files byte-equal,
    metadata tiles equal, footers equal but for gzip-dependent offsets."""
    from test_tiledb_write import footer_tail_without_offsets, metadata_tiles

    def merged(u):
        (f,) = [p for p in (Path(u) / "__fragments").iterdir() if p.name.split("_")[2] != p.name.split("_")[3]]
        return f
    fo, ft = merged(ours), merged(theirs)
    assert fo.name.split("_")[:4] == ft.name.split("_")[:4]
    assert sorted(p.name for p in fo.iterdir()) == sorted(p.name for p in ft.iterdir())
    for f in fo.iterdir():
        if f.name != "__fragment_metadata.tdb":
            assert f.read_bytes() == (ft / f.name).read_bytes(), f.name
    (ta, fa), (tb, fb) = metadata_tiles(fo), metadata_tiles(ft)
    assert ta == tb
    assert footer_tail_without_offsets(fa, nslots) == footer_tail_without_offsets(fb, nslots)


def test_fragment_uris_bad_input(tmp_path):
    uri = str(tmp_path / "d")
    _dense_array(uri)
    names = _fragment_names(uri)
    before = _state(uri, DENSE_COLS)
    listing = sorted(str(p.relative_to(uri)) for p in Path(uri).rglob("*"))
    with pytest.raises(InvalidInputError, match="found 1 of the 2"):
        lt.consolidate(uri, fragment_uris=[names[0], "__1_1_" + "0" * 32 + "_22"])
    with pytest.raises(InvalidInputError, match="listed twice"):
        lt.consolidate(uri, fragment_uris=[names[0], names[0]])
    with pytest.raises(InvalidInputError, match="not a fragment"):
        lt.consolidate(uri, fragment_uris=[names[0], str(Path(uri) / "__commits" / names[1])])
    with pytest.raises(InvalidInputError):
        lt.consolidate(uri, fragment_uris=names[0])
    lt.consolidate(uri, fragment_uris=[names[0]])  # one fragment: nothing to do, as TileDB
    assert sorted(str(p.relative_to(uri)) for p in Path(uri).rglob("*")) == listing
    with pytest.warns(DeprecationWarning):
        lt.consolidate(uri, fragment_uris=names[:2], timestamp=(0, 1))
    assert len(_fragment_names(uri)) == len(names) - 1
    assert _state(uri, DENSE_COLS) == before


def test_sparse_fragment_uris_with_overwrites_match_tiledb(tmp_path):
    """The house sparse array (three fragments rewriting each other's
    cells, nullable strings, lists): merging the two newest writes the
    files tiledb-py writes and reads as before at every open range."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _sparse_array(ours)
    shutil.copytree(ours, theirs)
    names = _fragment_names(ours)
    before = _state(ours, SPARSE_COLS)
    lt.consolidate(ours, fragment_uris=names[1:])
    tiledb.consolidate(theirs, fragment_uris=names[1:])
    assert _state(ours, SPARSE_COLS) == _state(theirs, SPARSE_COLS) == before
    _same_merged_fragment(ours, theirs, nslots=3 + 1 + 2 + 1)
    assert [f.timestamp_range for f in tiledb.FragmentInfoList(ours)] == [(3, 3), (4, 5)]
    for ts in (4, (4, 4), (3, 4), 5):
        assert _state(ours, SPARSE_COLS, ts) == _state(theirs, SPARSE_COLS, ts)


# ------------------------------------------------------------------ deletes in sparse merges


def _deletes_array(uri: str) -> None:
    dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, capacity=3, attrs=[
        tiledb.Attr(name="a", dtype=np.int64), tiledb.Attr(name="s", dtype=str, var=True, nullable=True)]))
    for t in (1, 2):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array([1, 2, 3 + t])] = {"a": np.array([t, t * 10, t * 100]), "s": np.array([f"s{t}", None, "x" * t], dtype=object)}
    with tiledb.open(uri, "d", timestamp=3) as A:
        A.query(cond="a >= 10").submit()
    with tiledb.open(uri, "w", timestamp=4) as A:
        A[np.array([7, 2])] = {"a": np.array([7, 8]), "s": np.array(["seven", "eight"], dtype=object)}
    with tiledb.open(uri, "d", timestamp=5) as A:
        A.query(cond="a == 7").submit()


def _rows_at(uri, ts):
    with tiledb.open(uri, timestamp=ts) as A:
        r = A[:]
    return sorted(zip(r["x"].tolist(), r["a"].tolist(), r["s"].tolist()))


def test_sparse_merges_keep_delete_metadata_as_tiledb(tmp_path):
    """Deleted cell versions stay in the merge with TileDB's delete metadata
    (dt.tdb: when, dci.tdb: which processed condition) so that reads opened
    before a delete still see them; merging such a merge again carries it.
    Files equal tiledb-py's, reads equal at every open range."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _deletes_array(ours)
    shutil.copytree(ours, theirs)
    opens = [None, 1, 2, 3, 4, 5, (2, 4), (4, 5), 7, (6, 7), 6]

    def same():
        _same_merged_fragment(ours, theirs, nslots=2 + 1 + 1 + 3)
        for ts in opens:
            assert _rows_at(ours, ts) == _rows_at(theirs, ts), ts
            assert _state(ours, ["x", "a", "s"], ts) == _state(theirs, ["x", "a", "s"], ts)

    lt.consolidate(ours)
    tiledb.consolidate(theirs)
    same()
    # another write and delete on lancelet's merge, copied: each library
    # merges lancelet's merge (carrying its delete metadata) with them
    with tiledb.open(ours, "w", timestamp=6) as A:
        A[np.array([2, 9])] = {"a": np.array([60, 61]), "s": np.array([None, "nine"], dtype=object)}
    with tiledb.open(ours, "d", timestamp=7) as A:
        A.query(cond="a == 2 or a == 61").submit()
    shutil.rmtree(theirs)
    shutil.copytree(ours, theirs)
    lt.vacuum(ours)
    tiledb.vacuum(theirs)
    lt.consolidate(ours)
    tiledb.consolidate(theirs)
    lt.vacuum(ours)
    tiledb.vacuum(theirs)
    same()
