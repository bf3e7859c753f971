"""read(filter=...), explain() and tile pruning, against tiledb-py 0.36.1
(which writes the arrays and, with query conditions, gives the oracle)."""
from __future__ import annotations

import numpy as np
import pyarrow.compute as pc
import pytest
import tiledb

import lancelet.tiledb as lt
from lancelet.exceptions import InvalidInputError


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    """Two fragments; `a` grows with `x` so tiles hold disjoint ranges."""
    uri = str(tmp_path_factory.mktemp("q") / "sparse")
    dims = [tiledb.Dim(name="x", domain=(0, 9999), tile=100, dtype=np.int64),
            tiledb.Dim(name="y", domain=(0, 99), tile=10, dtype=np.int32)]
    attrs = [tiledb.Attr(name="a", dtype=np.int64),
             tiledb.Attr(name="k", dtype="ascii", var=True),
             tiledb.Attr(name="u", dtype=np.uint16, nullable=True),
             tiledb.Attr(name="f", dtype=np.float32)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=True, capacity=50))
    rng = np.random.default_rng(0)
    for t, (lo, hi) in ((1, (0, 3000)), (2, (2000, 2600))):
        x = np.arange(lo, hi, dtype=np.int64)
        n = len(x)
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[x, (x % 100).astype(np.int32)] = {
                "a": x * 10 + t,
                "k": np.array(["k%04d" % (v // 7) for v in x], dtype=object),
                "u": np.ma.masked_array(rng.integers(0, 500, n).astype(np.uint16), mask=(x % 11 == 0)),
                "f": rng.normal(size=n).astype(np.float32),
            }
    return uri


def _theirs(uri, cond):
    with tiledb.open(uri) as A:
        r = A.query(cond=cond, order="G")[:] if cond else A.query(order="G")[:]
    return sorted(zip(r["x"].tolist(), r["a"].tolist()))


CASES = [
    ("a < 5000", "a < 5000"),
    ("a >= 25000 AND a <= 25500", "a >= 25000 and a <= 25500"),
    ("x > 2990 OR x < 3", "x > 2990 or x < 3"),
    ("k = 'k0300'", "k == 'k0300'"),
    ("k > 'k0420'", "k > 'k0420'"),
    ("u IS NULL AND a < 3000", None),
    ("a IN (20002, 30, 99990)", "a in [20002, 30, 99990]"),
    ("NOT (y < 99)", "y >= 99"),
    ("f > 1.5 AND a < 20000", "f > 1.5 and a < 20000"),
]


@pytest.mark.parametrize("sql,cond", CASES)
def test_sparse_filter_matches_tiledb(sparse, sql, cond):
    arr = lt.open_array(sparse)
    t = arr.read(filter=sql, order="C")
    got = sorted(zip(t["x"].to_pylist(), t["a"].to_pylist()))
    if cond is None:  # tiledb-py has no IS NULL: filter its full read
        with tiledb.open(sparse) as A:
            r = A.query(order="G")[:]
        mask = np.ma.getmaskarray(r["u"]) & (r["a"] < 3000)
        want = sorted(zip(r["x"][mask].tolist(), r["a"][mask].tolist()))
    else:
        want = _theirs(sparse, cond)
    assert got == want
    # pruning never changes the result: same rows as filtering a full read
    full = arr.read(order="C")
    if sql.startswith("u IS NULL"):
        mask = pc.and_(pc.is_null(full["u"]), pc.less(full["a"], 3000))
        assert t.to_pylist() == full.filter(mask).to_pylist()


def test_explain_counts_pruning(sparse):
    arr = lt.open_array(sparse)
    e = arr.explain()
    assert e["fragments"] == 2
    assert e["tiles_total"] == 3000 // 50 + 600 // 50 == 72
    assert e["tiles_read"] == 72
    # a > every value: statistics prune every tile
    assert arr.explain(filter="a > 1000000")["tiles_read"] == 0
    assert arr.read(filter="a > 1000000").num_rows == 0
    # a narrow value range touches one or two tiles per fragment
    narrow = arr.explain(filter="a >= 25000 AND a < 25100")
    assert 1 <= narrow["tiles_read"] <= 4
    # the R-tree prunes by subarray; the filter prunes further
    sub = arr.explain(subarray=[(0, 499), None])
    assert sub["tiles_read"] == 10
    assert arr.explain(subarray=[(0, 499), None], filter="a < 1000")["tiles_read"] == 2
    # strings (ASCII keeps min/max), null counts, dimensions via MBRs
    assert arr.explain(filter="k = 'k0300'")["tiles_read"] <= 2
    assert arr.explain(filter="x = 42")["tiles_read"] == 1
    # floats are not pruned on (NaN); UTF-8 strings keep no min/max
    assert arr.explain(filter="f > 100")["tiles_read"] == 72


def test_filter_errors(sparse):
    arr = lt.open_array(sparse)
    with pytest.raises(InvalidInputError):
        arr.read(filter="nope > 3")
    with pytest.raises(InvalidInputError):
        arr.read(filter="a >")
    with pytest.raises(InvalidInputError):
        arr.explain(filter="k + 1 > 'x'")


def test_filter_on_columns_not_returned(sparse):
    arr = lt.open_array(sparse)
    t = arr.read(attrs=["k"], dims=False, filter="x < 5 AND a % 2 = 1")
    assert t.column_names == ["k"]
    assert t["k"].to_pylist() == ["k0000"] * 5


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("q") / "dense")
    dims = [tiledb.Dim(name="r", domain=(1, 40), tile=10, dtype=np.int32),
            tiledb.Dim(name="c", domain=(1, 30), tile=10, dtype=np.int32)]
    attrs = [tiledb.Attr(name="v", dtype=np.int32), tiledb.Attr(name="w", dtype=np.float64, nullable=True)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs))
    r, c = np.meshgrid(np.arange(1, 41), np.arange(1, 31), indexing="ij")
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[:] = {"v": (r * 100 + c).astype(np.int32), "w": np.ma.masked_array((r + c).astype(float), mask=(c == 5))}
    with tiledb.open(uri, "w", timestamp=2) as A:  # overwrite rows 11..20 with small values
        A[11:21, 1:31] = {"v": np.full((10, 30), 7, np.int32), "w": np.ma.masked_array(np.zeros((10, 30)), mask=False)}
    return uri


def test_dense_filter_drops_rows_and_prunes_tiles(dense):
    arr = lt.open_array(dense)
    with tiledb.open(dense) as A:
        full = A[:]
    rr, cc = np.meshgrid(np.arange(1, 41), np.arange(1, 31), indexing="ij")
    for sql, keep in [("v >= 3000", full["v"] >= 3000), ("v = 7", full["v"] == 7),
                      ("w IS NULL", np.ma.getmaskarray(full["w"])), ("v < 500 AND c > 20", (full["v"] < 500) & (cc > 20))]:
        t = arr.read(filter=sql)
        assert t["r"].to_pylist() == rr[keep].tolist(), sql
        assert t["c"].to_pylist() == cc[keep].tolist(), sql
        assert t["v"].to_pylist() == full["v"][keep].tolist(), sql
    e = arr.explain()
    assert e == {"fragments": 2, "tiles_total": 12 + 3, "tiles_read": 12}
    # rows 31..40 (tiles of the first fragment) hold v >= 3101
    assert arr.explain(filter="v > 3100")["tiles_read"] == 3
    # every v of fragment 2 is 7; fragment 1's tiles under it are hidden
    assert arr.explain(filter="v = 7")["tiles_read"] == 3
    assert arr.explain(subarray=[(1, 10), (1, 10)])["tiles_read"] == 1
