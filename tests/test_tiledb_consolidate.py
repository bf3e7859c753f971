"""Consolidation and vacuuming (``lancelet.tiledb.consolidate`` / ``vacuum``)
against tiledb-py 0.36.1 both ways: tiledb-py reads what lancelet
consolidated or vacuumed exactly as before (data and fragment info), lancelet
reads what tiledb-py consolidated or vacuumed exactly as tiledb-py does, and
the files both write for twin arrays hold the same entries."""
from __future__ import annotations

import os
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import tiledb
from test_tiledb_ops import SPARSE_COLS, _dense_array, _sparse_array, _table_rows, _tiledb_table

import lancelet.tiledb as lt
from lancelet.exceptions import CorruptFileError, InvalidInputError, LanceletIOError, NotFoundError, UnsupportedError

DENSE_COLS = ["r", "c", "v", "s", "n", "ts"]


def _files(uri, sub):
    d = Path(uri) / sub
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def _kinds(uri, sub="__commits"):
    return sorted(os.path.splitext(n)[1] for n in _files(uri, sub))


def _fragment_info(uri):
    return [(f.timestamp_range, f.cell_num, f.nonempty_domain, os.path.basename(f.uri))
            for f in tiledb.FragmentInfoList(uri)]


def _state(uri, cols, timestamp=None):
    """What tiledb-py and lancelet both read, which must agree."""
    theirs = _table_rows(_tiledb_table(uri, timestamp), cols)
    ours = _table_rows(lt.open_array(uri, timestamp=timestamp).read(), cols)
    assert ours == theirs
    return theirs


def _twins(tmp_path, make, n=2):
    uris = []
    for i in range(n):
        u = str(tmp_path / f"twin{i}")
        make(u)
        uris.append(u)
    return uris


def _con_entries(uri):
    out = []
    for n in _files(uri, "__commits"):
        if n.endswith(".con"):
            out.append((Path(uri) / "__commits" / n).read_bytes().decode().splitlines())
    return out


def _fragment_names(uri):
    return [os.path.basename(f.uri) for f in tiledb.FragmentInfoList(uri)]


# ------------------------------------------------------------------ commits


@pytest.mark.parametrize("make,cols", [(_sparse_array, SPARSE_COLS), (_dense_array, DENSE_COLS)])
def test_consolidate_and_vacuum_commits_both_ways(tmp_path, make, cols):
    ours, theirs = _twins(tmp_path, make)
    before = _state(ours, cols)
    info = _fragment_info(ours)
    lt.consolidate(ours, mode="commits")
    tiledb.consolidate(theirs, config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    assert _kinds(ours) == _kinds(theirs)
    # the same commits listed (names differ between twins only by uuid)
    assert [len(e) for e in _con_entries(ours)] == [len(e) for e in _con_entries(theirs)]
    assert sorted(_con_entries(ours)[0]) == sorted(f"__commits/{n}.wrt" for n in _fragment_names(ours))
    assert _state(ours, cols) == before and _state(theirs, cols) == before
    assert _fragment_info(ours) == info
    for ts in (10, 20, (15, 30), 4, (4, 5)):
        _state(ours, cols, ts)
    lt.vacuum(ours, mode="commits")
    tiledb.vacuum(theirs, config=tiledb.Config({"sm.vacuum.mode": "commits"}))
    assert _kinds(ours) == _kinds(theirs) == [".con"]
    assert _state(ours, cols) == before and _state(theirs, cols) == before
    assert _fragment_info(ours) == info


def test_second_commit_consolidation_and_vacuum(tmp_path):
    ours, theirs = _twins(tmp_path, _sparse_array)
    for u, con, vac in ((ours, lambda u: lt.consolidate(u, config={"sm.consolidation.mode": "commits"}),
                         lambda u: lt.vacuum(u, config={"sm.vacuum.mode": "commits"})),
                        (theirs, lambda u: tiledb.consolidate(u, config=tiledb.Config({"sm.consolidation.mode": "commits"})),
                         lambda u: tiledb.vacuum(u, config=tiledb.Config({"sm.vacuum.mode": "commits"})))):
        con(u)
        with tiledb.open(u, "w", timestamp=9) as A:
            A[np.array([7], np.int64), np.array([1.0])] = {"i": np.array([5], np.int64),
                                                           "u": np.array(["late"], dtype=object),
                                                           "l": _lists([[1, 2]])}
        con(u)
        assert _kinds(u) == [".con", ".con", ".wrt", ".wrt", ".wrt", ".wrt"]
        vac(u)
        assert _kinds(u) == [".con"]
        assert len(_con_entries(u)[0]) == 4
    assert _state(ours, SPARSE_COLS) == _state(theirs, SPARSE_COLS)
    # lancelet also vacuums what tiledb-py consolidated, and the other way
    assert _state(ours, SPARSE_COLS, 4) == _state(theirs, SPARSE_COLS, 4)


def _lists(values):
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = np.array(v, dtype=np.int32)
    return out


def test_lancelet_vacuums_tiledb_consolidated_commits(tmp_path):
    uri = str(tmp_path / "a")
    _sparse_array(uri)
    before = _state(uri, SPARSE_COLS)
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    lt.vacuum(uri, mode="commits")
    assert _kinds(uri) == [".con"]
    assert _state(uri, SPARSE_COLS) == before


# ------------------------------------------------------------------ fragment metadata


def _meta_payload(path: Path) -> bytes:
    """The decoded generic tile of a .meta file (one Gzip filter)."""
    b = path.read_bytes()
    version, persisted, size, _dt, _cs, enc, plen = struct.unpack_from("<IQQBQBI", b, 0)
    assert version == 22 and enc == 0
    pos = 34 + plen
    (nchunks,) = struct.unpack_from("<Q", b, pos)
    pos += 8
    out = b""
    for _ in range(nchunks):
        orig, filt, mlen = struct.unpack_from("<III", b, pos)
        pos += 12 + mlen
        out += zlib.decompress(b[pos:pos + filt])
        pos += filt
    assert len(out) == size and pos == len(b) == 34 + plen + persisted
    return out


@pytest.mark.parametrize("make,cols", [(_sparse_array, SPARSE_COLS), (_dense_array, DENSE_COLS)])
def test_consolidate_fragment_meta_matches_tiledb(tmp_path, make, cols):
    ours = str(tmp_path / "ours")
    make(ours)
    theirs = str(tmp_path / "theirs")
    shutil.copytree(ours, theirs)  # the same fragments: the .meta payloads must be equal
    before = _state(ours, cols)
    info = _fragment_info(ours)
    lt.consolidate(ours, mode="fragment_meta")
    tiledb.consolidate(theirs, config=tiledb.Config({"sm.consolidation.mode": "fragment_meta"}))
    (mine,) = _files(ours, "__fragment_meta")
    (tdb,) = _files(theirs, "__fragment_meta")
    # timestamped names: the same range and version, another uuid
    assert mine.split("_")[:4] == tdb.split("_")[:4] and mine.endswith("_22.meta") and mine != tdb
    assert _meta_payload(Path(ours) / "__fragment_meta" / mine) == _meta_payload(Path(theirs) / "__fragment_meta" / tdb)
    # tiledb-py opens the array through our .meta
    assert _state(ours, cols) == before
    assert _fragment_info(ours) == info
    # a second consolidation of the same fragments: both files end at the
    # same time, and TileDB's vacuum keeps every file ending at the latest
    for u, con, vac in ((ours, lambda u: lt.consolidate(u, mode="fragment_meta"),
                         lambda u: lt.vacuum(u, mode="fragment_meta")),
                        (theirs, lambda u: tiledb.consolidate(u, config=tiledb.Config({"sm.consolidation.mode": "fragment_meta"})),
                         lambda u: tiledb.vacuum(u, config=tiledb.Config({"sm.vacuum.mode": "fragment_meta"})))):
        con(u)
        vac(u)
        assert len(_files(u, "__fragment_meta")) == 2
    # after a newer fragment, only the newest .meta is kept
    frag = sorted(_files(ours, "__fragments"))[-1]
    newer = f"__90_90_{'f' * 32}_22"  # a copy of a fragment, committed at t=90
    for u in (ours, theirs):
        shutil.copytree(Path(u) / "__fragments" / frag, Path(u) / "__fragments" / newer)
        (Path(u) / "__commits" / (newer + ".wrt")).write_bytes(b"")
    lt.consolidate(ours, mode="fragment_meta")
    lt.vacuum(ours, mode="fragment_meta")
    tiledb.consolidate(theirs, config=tiledb.Config({"sm.consolidation.mode": "fragment_meta"}))
    tiledb.vacuum(theirs, config=tiledb.Config({"sm.vacuum.mode": "fragment_meta"}))
    (mine,) = _files(ours, "__fragment_meta")
    (tdb,) = _files(theirs, "__fragment_meta")
    assert mine.split("_")[3] == tdb.split("_")[3] == "90"
    assert _meta_payload(Path(ours) / "__fragment_meta" / mine) == _meta_payload(Path(theirs) / "__fragment_meta" / tdb)
    assert _state(ours, cols) == _state(theirs, cols)


def test_fragment_meta_needs_two_fragments(tmp_path):
    uri = str(tmp_path / "one")
    dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 9), tile=5, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, attrs=[tiledb.Attr(name="v", dtype=np.int32)]))
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[np.array([1])] = {"v": np.array([1], np.int32)}
    lt.consolidate(uri, mode="fragment_meta")
    assert _files(uri, "__fragment_meta") == []


# ------------------------------------------------------------------ fragments


def _sparse_disjoint(uri: str) -> None:
    """Sparse, three fragments (t=3, 4, 5) that write disjoint cells: a
    merge of them needs no per-cell timestamps to read right."""
    dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 1000), tile=100, dtype=np.int64),
                        tiledb.Dim(name="y", domain=(0.0, 10.0), tile=2.0, dtype=np.float64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, capacity=4, attrs=[
        tiledb.Attr(name="i", dtype=np.int64), tiledb.Attr(name="u", dtype=str, var=True, nullable=True),
        tiledb.Attr(name="l", dtype=np.int32, var=True)]))
    for w, t in enumerate((3, 4, 5)):
        x = np.arange(10, dtype=np.int64) * 3 + w
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[x, (x % 10).astype(np.float64)] = {"i": x * 10, "u": np.array([None if v % 4 == 0 else f"u{v}" for v in x], dtype=object),
                                                 "l": _lists([list(range(v % 3)) for v in x])}


@pytest.mark.parametrize("commits_first", [False, True])
@pytest.mark.parametrize("make,cols,ts,ranges", [
    (_sparse_disjoint, SPARSE_COLS, (3, 4), [(3, 4), (5, 5)]),
    (_dense_array, DENSE_COLS, (10, 20), [(10, 20), (30, 30)]),
])
def test_vacuum_fragments_consolidated_by_tiledb(tmp_path, commits_first, make, cols, ts, ranges):
    """tiledb-py merges fragments (lancelet's fragment writer is not on main
    yet); lancelet reads the result, vacuums it like tiledb-py vacuums the
    twin, and tiledb-py reads lancelet's vacuumed array identically."""
    ours, theirs = _twins(tmp_path, make)
    before = _state(ours, cols)
    for u in (ours, theirs):
        if commits_first:
            tiledb.consolidate(u, config=tiledb.Config({"sm.consolidation.mode": "commits"}))
            tiledb.vacuum(u, config=tiledb.Config({"sm.vacuum.mode": "commits"}))
        tiledb.consolidate(u, config=tiledb.Config({"sm.consolidation.mode": "fragments"}), timestamp=ts)
        # lancelet reads the consolidated array (the .vac hides the merged fragments)
        assert _state(u, cols) == before
        assert [f.timestamp_range for f in lt.open_array(u).fragments()] == ranges
    lt.vacuum(ours, mode="fragments")
    tiledb.vacuum(theirs, config=tiledb.Config({"sm.vacuum.mode": "fragments"}))
    assert _kinds(ours) == _kinds(theirs)
    assert len(_files(ours, "__fragments")) == len(_files(theirs, "__fragments")) == 2
    if commits_first:
        ign = [n for n in _files(ours, "__commits") if n.endswith(".ign")]
        tign = [n for n in _files(theirs, "__commits") if n.endswith(".ign")]
        assert len(ign) == len(tign) == 1
        assert ign[0].split("_")[:4] == tign[0].split("_")[:4]
        mine = (Path(ours) / "__commits" / ign[0]).read_text().splitlines()
        assert len(mine) == len((Path(theirs) / "__commits" / tign[0]).read_text().splitlines()) == 2
        assert all(line.startswith("__commits/__") and line.endswith(".wrt") for line in mine)
    assert _state(ours, cols) == before == _state(theirs, cols)
    assert [f[0] for f in _fragment_info(ours)] == [f[0] for f in _fragment_info(theirs)] == ranges
    # time travel after consolidation: the merged fragment as a whole
    assert _state(ours, cols, (ranges[0][0], ranges[1][1])) == before
    _state(ours, cols, ranges[1])
    _state(theirs, cols, ranges[1])


def test_vacuum_dense_fragments_and_consolidated_commits_again(tmp_path):
    uri = str(tmp_path / "d")
    _dense_array(uri)
    before = _state(uri, DENSE_COLS)
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "fragments"}))
    lt.vacuum(uri)  # the default mode: fragments
    assert len(_files(uri, "__fragments")) == 1
    assert _state(uri, DENSE_COLS) == before
    lt.consolidate(uri, mode="commits")
    lt.vacuum(uri, mode="commits")
    assert _kinds(uri) == [".con"]
    assert _state(uri, DENSE_COLS) == before
    with tiledb.open(uri) as A:
        assert len(A.query(coords=True)[:]["v"].reshape(-1)) == 120


def test_reads_tiledb_merges_with_per_cell_timestamps(tmp_path):
    """tiledb-py keeps every cell version with its timestamp when it merges
    sparse fragments that overwrite each other: lancelet reads the merge as
    tiledb-py does, at every open range, before and after vacuuming."""
    uri = str(tmp_path / "s")
    _sparse_array(uri)
    ranges = [None, 3, 4, (4, 4), (3, 5), (4, 5), 5]
    want = {str(ts): _state(uri, SPARSE_COLS, ts) for ts in ranges}
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "fragments"}), timestamp=(3, 4))
    assert lt.open_array(uri).fragments()[0].has_timestamps
    for ts in ranges:
        assert _state(uri, SPARSE_COLS, ts) == want[str(ts)], ts
    lt.vacuum(uri)
    assert len(_files(uri, "__fragments")) == 2
    for ts in ranges:
        assert _state(uri, SPARSE_COLS, ts) == want[str(ts)], ts


# ------------------------------------------------------------------ fragment consolidation by lancelet


def _tiledb_only(uri, cols, timestamp=None):
    return _table_rows(_tiledb_table(uri, timestamp), cols)


@pytest.mark.parametrize("make,cols,ranges", [
    (_sparse_array, SPARSE_COLS, [(3, 5)]),
    (_sparse_disjoint, SPARSE_COLS, [(3, 5)]),
    (_dense_array, DENSE_COLS, [(10, 30)]),
])
def test_consolidate_fragments_both_ways(tmp_path, make, cols, ranges):
    """lancelet merges fragments; tiledb-py reads the result as before, and
    as its own twin merged by tiledb-py; either library vacuums either's
    merge and the data stays."""
    ours, mixed, theirs = _twins(tmp_path, make, 3)
    before = _state(ours, cols)
    lt.consolidate(ours)                      # mode "fragments" is the default
    lt.consolidate(mixed, mode="fragments")
    tiledb.consolidate(theirs, config=tiledb.Config({"sm.consolidation.mode": "fragments"}))
    for u in (ours, mixed):
        assert _state(u, cols) == before      # both readers, .vac hides the merged fragments
        assert [f.timestamp_range for f in lt.open_array(u).fragments()] == ranges
        assert len(_kinds(u)) and ".vac" in _kinds(u)
    assert _tiledb_only(theirs, cols) == before
    assert [f[0] for f in _fragment_info(ours)] == [f[0] for f in _fragment_info(theirs)] == ranges
    lt.vacuum(ours, mode="fragments")
    tiledb.vacuum(mixed, config=tiledb.Config({"sm.vacuum.mode": "fragments"}))
    tiledb.vacuum(theirs, config=tiledb.Config({"sm.vacuum.mode": "fragments"}))
    for u in (ours, mixed, theirs):
        assert len(_files(u, "__fragments")) == 1
        assert _kinds(u) == [".wrt"]
        assert _tiledb_only(u, cols) == before
    assert _state(ours, cols) == _state(mixed, cols) == before
    if make is not _dense_array:
        # the twins were written alike: lancelet's merge has tiledb-py's files
        from test_tiledb_consolidate_sets import _same_merged_fragment
        _same_merged_fragment(ours, theirs, nslots=3 + 1 + 2 + 1)
    info = tiledb.FragmentInfoList(ours)
    assert [f.timestamp_range for f in info] == ranges and not info[0].has_consolidated_metadata
    # a sparse merge keeps every cell version with its timestamp (as
    # TileDB's): opened in the middle of its range, both libraries read the
    # cells as they were then (the same as before consolidating); a dense
    # merge has none (TileDB never writes them for dense arrays), so TileDB
    # 2.30 leaves it out there, and so does lancelet
    mid = (ranges[0][0] + 1, ranges[0][1] - 1)
    seen = _state(ours, cols, mid)
    assert seen == _state(theirs, cols, mid)
    assert len(lt.open_array(ours, timestamp=mid).fragments()) == (make is not _dense_array)
    assert [f.has_timestamps for f in lt.open_array(ours).fragments()] == [make is not _dense_array]


def test_consolidate_fragments_of_a_range_and_refusals(tmp_path):
    uri = str(tmp_path / "d")
    _dense_array(uri)
    before = _state(uri, DENSE_COLS)
    # t=20 and t=30 only: the t=10 fragment overlaps their box, so TileDB's
    # rule forbids the merge (fills would hide it) and nothing is written
    lt.consolidate(uri, timestamp=(20, 30))
    assert len(_files(uri, "__fragments")) == 3 and ".vac" not in _kinds(uri)
    # a box much larger than what was written: refused at amplification 1.0
    lt.consolidate(uri, timestamp=(10, 20), config={"sm.consolidation.amplification": "0.5"})
    assert len(_files(uri, "__fragments")) == 3
    lt.consolidate(uri, timestamp=(10, 20))
    assert [f.timestamp_range for f in lt.open_array(uri).fragments()] == [(10, 20), (30, 30)]
    assert _state(uri, DENSE_COLS) == before
    assert [fi.timestamp_range for fi in tiledb.FragmentInfoList(uri)] == [(10, 20), (30, 30)]
    # one fragment left in a range: nothing to do
    lt.consolidate(uri, timestamp=(30, 30))
    assert len(_files(uri, "__fragments")) == 4


def test_failed_fragment_consolidation_leaves_the_array_unchanged(tmp_path):
    from lancelet import _native

    uri = str(tmp_path / "s")
    _sparse_array(uri)
    listing = sorted(str(p.relative_to(uri)) for p in Path(uri).rglob("*"))
    _native._tiledb_fail_point("before_commit")
    try:
        with pytest.raises(LanceletIOError, match="injected failure"):
            lt.consolidate(uri)
    finally:
        _native._tiledb_fail_point(None)
    assert sorted(str(p.relative_to(uri)) for p in Path(uri).rglob("*")) == listing
    frag = sorted((Path(uri) / "__fragments").iterdir())[0] / "a0.tdb"
    frag.write_bytes(frag.read_bytes()[:-5])
    with pytest.raises(CorruptFileError):
        lt.consolidate(uri)
    assert sorted(str(p.relative_to(uri)) for p in Path(uri).rglob("*")) == listing


# ------------------------------------------------------------------ errors


def test_bad_arguments_and_failures_leave_the_array_unchanged(tmp_path):
    uri = str(tmp_path / "s")
    _sparse_array(uri)
    with pytest.raises(InvalidInputError):
        lt.consolidate(uri, mode="everything")
    with pytest.raises(InvalidInputError):
        lt.vacuum(uri, mode="nope")
    with pytest.raises(UnsupportedError):
        lt.consolidate(uri, mode="group_meta")
    with pytest.raises(InvalidInputError):
        lt.vacuum(uri, timestamp=(5, 1))
    with pytest.raises(NotFoundError):
        lt.consolidate(str(tmp_path / "missing"), mode="commits")
    with pytest.raises(NotFoundError):
        lt.vacuum(str(tmp_path / "missing"), mode="commits")
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    con = next(p for p in (Path(uri) / "__commits").iterdir() if p.suffix == ".con")
    con.write_bytes(con.read_bytes()[:-1])  # last entry loses its newline
    listing = sorted(os.listdir(Path(uri) / "__commits"))
    with pytest.raises(CorruptFileError):
        lt.consolidate(uri, mode="commits")
    with pytest.raises(CorruptFileError):
        lt.vacuum(uri, mode="commits")
    assert sorted(os.listdir(Path(uri) / "__commits")) == listing
