"""Delete commits, consolidated delete metadata and per-cell timestamps,
read against tiledb-py 0.36.1, which writes every array here (delete
queries, fragment and commit consolidation, time travel)."""
from __future__ import annotations

import numpy as np
import pytest
import tiledb

import lancelet.tiledb as lt
from lancelet.exceptions import CorruptFileError, InternalError, LanceletError, UnsupportedError


def _schema(dups=False):
    dom = tiledb.Domain(tiledb.Dim(name="d", domain=(0, 999), tile=50, dtype=np.int64))
    attrs = [tiledb.Attr(name="a", dtype=np.int32),
             tiledb.Attr(name="s", dtype=str, var=True),
             tiledb.Attr(name="n", dtype=np.float64, nullable=True)]
    return tiledb.ArraySchema(domain=dom, attrs=attrs, sparse=True, capacity=8, allows_duplicates=dups)


def _write(uri, t, coords, seed):
    rng = np.random.default_rng(seed)
    n = len(coords)
    with tiledb.open(uri, "w", timestamp=t) as A:
        A[np.asarray(coords, dtype=np.int64)] = {
            "a": rng.integers(0, 100, n).astype(np.int32),
            "s": np.array(["s%d" % v for v in rng.integers(0, 9, n)], dtype=object),
            "n": np.ma.masked_array(rng.normal(size=n), mask=rng.random(n) < 0.2),
        }


def _delete(uri, t, cond):
    with tiledb.open(uri, "d", timestamp=t) as A:
        A.query(cond=cond).submit()


def _history(uri, dups=False):
    """Three writes and three deletes, interleaved."""
    tiledb.Array.create(uri, _schema(dups))
    _write(uri, 10, range(0, 120), 1)
    _delete(uri, 20, "a < 30 or s == 's3'")
    _write(uri, 30, range(60, 200, 2), 2)
    _delete(uri, 40, "(d >= 100 and d < 150) and not (a >= 50)")
    _write(uri, 50, range(100, 130), 3)
    _delete(uri, 50, "s in ['s1', 's2']")


def _rows(t):
    dec = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    n = t["n"]
    if isinstance(n, np.ma.MaskedArray):
        n = [None if m else x for x, m in zip(n.data.tolist(), np.ma.getmaskarray(n).tolist())]
    elif hasattr(n, "to_pylist"):
        n = n.to_pylist()
    else:
        n = list(n)
    cols = [t[k].to_pylist() if hasattr(t[k], "to_pylist") else np.asarray(t[k]).tolist() for k in ("d", "a", "s")]
    return sorted(zip(cols[0], cols[1], [dec(x) for x in cols[2]], [None if x is None or x != x else round(x, 9) for x in n]),
                  key=repr)


def _same(uri, ts=None, **read):
    with tiledb.open(uri, timestamp=ts) as A:
        theirs = A.query(order="G")[:]
    ours = lt.open_array(uri, timestamp=ts).read(order="C", **read)
    assert _rows(ours) == _rows(theirs), ts
    assert ours["d"].to_pylist() == sorted(ours["d"].to_pylist())
    return ours


TIMES = [None, 10, 19, 20, 35, 40, 49, 50, (15, 45), (20, 20), (41, 60)]


@pytest.mark.parametrize("dups", [False, True])
def test_delete_commits_match_tiledb(tmp_path, dups):
    uri = str(tmp_path / "a")
    _history(uri, dups)
    for ts in TIMES:
        _same(uri, ts)
    arr = lt.open_array(uri)
    assert not any(f.has_delete_meta for f in arr.fragments())


@pytest.mark.parametrize("mode", ["fragments", "commits", "fragments_purge"])
def test_consolidated_deletes_match_tiledb(tmp_path, mode):
    uri = str(tmp_path / "a")
    _history(uri)
    cfg = {"sm.consolidation.mode": mode.split("_")[0]}
    if mode.endswith("purge"):
        cfg["sm.consolidation.purge_deleted_cells"] = "true"
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    for ts in TIMES:
        _same(uri, ts)
    frags = lt.open_array(uri).fragments()
    if mode == "fragments":
        merged = [f for f in frags if f.timestamp_range[0] != f.timestamp_range[1]]
        assert merged and all(f.has_delete_meta and f.has_timestamps for f in merged)
        names = sorted(p.name for p in (tmp_path / "a" / "__fragments").iterdir()
                       if (p / "dt.tdb").exists() and (p / "dci.tdb").exists())
        assert names == sorted(f.name for f in merged)
    if mode == "fragments_purge":
        assert not any(f.has_delete_meta for f in frags)
    # vacuuming the consolidated fragments leaves the same array
    tiledb.vacuum(uri)
    for ts in (None, 50, (41, 60)):
        _same(uri, ts)


def test_per_cell_timestamps_partial_fragments(tmp_path):
    """A consolidated fragment [10, 50] carries t.tdb: opening at a range
    that only overlaps it keeps the cells written inside the range."""
    uri = str(tmp_path / "a")
    tiledb.Array.create(uri, _schema())
    for i, t in enumerate((10, 20, 30, 40, 50)):
        _write(uri, t, range(i * 10, i * 10 + 40), i)
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "fragments",
                                                  "sm.consolidation.with_timestamps": "true"}))
    tiledb.vacuum(uri)
    frags = lt.open_array(uri).fragments()
    assert len(frags) == 1 and frags[0].has_timestamps and frags[0].timestamp_range == (10, 50)
    for ts in (15, 20, 35, (20, 30), (25, 45), (31, 39), (50, 60), (0, 5)):
        _same(uri, ts)


def test_filter_and_deletes_together(tmp_path):
    uri = str(tmp_path / "a")
    _history(uri)
    ours = lt.open_array(uri).read(filter="a >= 40 AND d < 150", order="C")
    with tiledb.open(uri) as A:
        theirs = A.query(cond="a >= 40 and d < 150", order="G")[:]
    assert sorted(zip(ours["d"].to_pylist(), ours["a"].to_pylist())) == sorted(zip(theirs["d"].tolist(), theirs["a"].tolist()))


def test_update_commits_are_unsupported_and_bad_deletes_corrupt(tmp_path):
    uri = tmp_path / "a"
    _history(str(uri))
    dels = sorted((uri / "__commits").glob("*.del"))
    orig = dels[0].read_bytes()
    # every byte flip of a delete commit: a read or a typed error
    for i in range(0, len(orig)):
        b = bytearray(orig)
        b[i] ^= 0xFF
        dels[0].write_bytes(bytes(b))
        try:
            lt.open_array(str(uri)).read()
        except InternalError:
            raise
        except LanceletError:
            pass
    dels[0].write_bytes(orig[:-3])
    with pytest.raises(CorruptFileError, match=dels[0].name):
        lt.open_array(str(uri))
    dels[0].write_bytes(orig)
    upd = dels[0].with_name(dels[0].name.replace(".del", ".upd"))
    dels[0].rename(upd)
    with pytest.raises(UnsupportedError, match="update"):
        lt.open_array(str(uri))


def test_committed_fuzz_seed_arrays_match_tiledb():
    """tests/fixtures/tiledb_fuzz (make_arrays.py): RLE/dictionary strings,
    bit shuffle, deletes, a commits and a fragments consolidation."""
    from pathlib import Path

    base = Path(__file__).resolve().parent / "fixtures" / "tiledb_fuzz"
    uri = str(base / "sparse_deletes")
    for ts in (None, 1, 2, 3, 4, (2, 3), (3, 4)):
        ours = lt.open_array(uri, timestamp=ts).read(order="C")
        with tiledb.open(uri, timestamp=ts) as A:
            theirs = A.query(order="G")[:]
        assert ours["d"].to_pylist() == theirs["d"].tolist(), ts
        assert ours["a"].to_pylist() == theirs["a"].tolist(), ts
        assert ours["r"].to_pylist() == [x.decode() for x in theirs["r"].tolist()], ts
        k = theirs["k"]
        assert ours["k"].to_pylist() == [None if m else v for v, m in zip(k.data.tolist(), np.ma.getmaskarray(k).tolist())], ts
    frags = lt.open_array(uri).fragments()
    assert [(f.timestamp_range, f.has_delete_meta, f.has_timestamps) for f in frags] == [((1, 3), True, True)]
    h = str(base / "hilbert")
    with tiledb.open(h) as A:
        assert lt.open_array(h).read()["v"].to_pylist() == A[:]["v"].tolist()
