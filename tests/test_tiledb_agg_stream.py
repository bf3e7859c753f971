"""aggregate() against tiledb-py 0.36.1's .query().agg(), tile metadata used
for whole tiles; to_batches() streams exactly what read() returns."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
import tiledb

import lancelet.tiledb as lt
from lancelet.exceptions import InvalidInputError

OPS_N = ["sum", "min", "max", "mean", "count", "null_count"]
OPS = ["sum", "min", "max", "mean", "count"]


def _eq(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12)
    return a == b


def _same(ours, theirs):
    assert ours.keys() == theirs.keys()
    for k in ours:
        assert ours[k].keys() == theirs[k].keys(), k
        for op in ours[k]:
            assert _eq(ours[k][op], theirs[k][op]), (k, op, ours[k][op], theirs[k][op])


def _theirs(uri, req, sl=slice(None), ts=None):
    with tiledb.open(uri, timestamp=ts) as A:
        r = A.query().agg(req)[sl]
    return r if len(req) > 1 else {next(iter(req)): r}


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("agg") / "s")
    dom = tiledb.Domain(tiledb.Dim(name="d", domain=(0, 9999), tile=100, dtype=np.int64))
    attrs = [tiledb.Attr(name="i", dtype=np.int32, nullable=True), tiledb.Attr(name="u", dtype=np.uint64),
             tiledb.Attr(name="f", dtype=np.float64), tiledb.Attr(name="s", dtype=str, var=True)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=attrs, sparse=True, capacity=64))
    rng = np.random.default_rng(1)
    for t, (lo, hi) in ((1, (0, 2000)), (2, (1500, 1700)), (3, (5000, 5600))):
        d = np.arange(lo, hi, dtype=np.int64)
        n = len(d)
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[d] = {"i": pa.array([None if v % 13 == 0 else int(x) for v, x in zip(d, rng.integers(-1000, 1000, n))], pa.int32()),
                    "u": rng.integers(0, 2**40, n).astype(np.uint64), "f": rng.normal(size=n),
                    "s": np.array(["x%d" % v for v in d], dtype=object)}
    with tiledb.open(uri, "d", timestamp=4) as A:
        A.query(cond="u < 10000000000").submit()
    return uri


def _req():
    return {"i": OPS_N, "u": OPS, "f": OPS}


@pytest.mark.parametrize("ts", [None, 1, 2, 3])
def test_aggregates_match_tiledb(sparse, ts):
    arr = lt.open_array(sparse, timestamp=ts)
    _same(arr.aggregate(_req()), _theirs(sparse, _req(), ts=ts))
    for lo, hi in [(100, 1999), (1550, 1650), (3000, 4000), (0, 9999), (4990, 5010)]:
        _same(arr.aggregate(_req(), subarray=[(lo, hi)]), _theirs(sparse, _req(), slice(lo, hi + 1), ts=ts))


def test_whole_tiles_come_from_metadata(sparse):
    arr = lt.open_array(sparse, timestamp=1)  # one fragment, no deletes in range
    vals, counts = arr._native.aggregate([("i", OPS_N), ("u", OPS)], None, True)
    assert counts["tiles_read"] == 0 and counts["tiles_total"] == math.ceil(2000 / 64)
    _same(dict(vals), _theirs(sparse, {"i": OPS_N, "u": OPS}, ts=1))
    # a subarray cutting two tiles reads just those two
    vals, counts = arr._native.aggregate([("u", OPS)], [[(10, 1000)]], True)
    assert counts["tiles_read"] == 2
    _same(dict(vals), _theirs(sparse, {"u": OPS}, slice(10, 1001), ts=1))
    # overlapping fragments and deletes force reads of the tiles they touch
    _, all_counts = lt.open_array(sparse)._native.aggregate([("u", OPS)], None, True)
    assert all_counts["tiles_read"] == all_counts["tiles_total"]  # the delete at t=4 applies to every fragment
    _, c2 = lt.open_array(sparse, timestamp=3)._native.aggregate([("u", OPS)], None, True)
    assert 0 < c2["tiles_read"] < c2["tiles_total"]  # only tiles under the t=2 overwrite


def test_aggregate_dense_and_errors(tmp_path):
    """TileDB's dense rules: whole tiles from metadata (padding counted in
    mean), overlapped or partial tiles from the cells written, unwritten
    cells only in count."""
    uri = str(tmp_path / "d")
    dims = [tiledb.Dim(name="r", domain=(1, 20), tile=5, dtype=np.int32), tiledb.Dim(name="c", domain=(1, 6), tile=3, dtype=np.int32)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=[tiledb.Attr(name="v", dtype=np.int16),
                                                                                  tiledb.Attr(name="w", dtype=np.float32)]))
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[3:9, 2:5] = {"v": np.arange(1, 19, dtype=np.int16).reshape(6, 3), "w": np.linspace(0, 1, 18, dtype=np.float32).reshape(6, 3)}
    req = {"v": OPS, "w": OPS}
    subs = [(None, slice(None)), ([(1, 5), (1, 3)], (slice(1, 6), slice(1, 4))), ([(3, 8), (2, 4)], (slice(3, 9), slice(2, 5))),
            ([(10, 19), (1, 5)], (slice(10, 20), slice(1, 6))), ([(1, 2), (1, 6)], (slice(1, 3), slice(1, 7)))]
    for t in (1, 2):
        if t == 2:
            with tiledb.open(uri, "w", timestamp=2) as A:
                A[1:3, 1:3] = {"v": np.full((2, 2), 100, np.int16), "w": np.full((2, 2), 7, np.float32)}
        arr = lt.open_array(uri)
        for sub, sl in subs:
            _same(arr.aggregate(req, subarray=sub), _theirs(uri, req, sl))
    with pytest.raises(InvalidInputError, match="null_count"):
        arr.aggregate({"v": ["null_count"]})
    with pytest.raises(InvalidInputError):
        arr.aggregate({"v": ["median"]})
    with pytest.raises(InvalidInputError):
        arr.aggregate({"nope": ["sum"]})
    assert arr.aggregate({"v": "count"}) == {"v": {"count": 120}}


def test_string_min_max(sparse):
    arr = lt.open_array(sparse, timestamp=1)
    t = arr.read()
    vals = sorted(t["s"].to_pylist())
    assert arr.aggregate({"s": ["min", "max", "count"]}) == {"s": {"min": vals[0], "max": vals[-1], "count": len(vals)}}


@pytest.mark.parametrize("order", [None, "C", "F", "U"])
@pytest.mark.parametrize("batch_size", [1, 7, 100, 65536])
def test_to_batches_equals_read_dense(tmp_path_factory, order, batch_size):
    uri = str(tmp_path_factory.getbasetemp() / "stream_dense")
    import os
    if not os.path.exists(uri):
        dims = [tiledb.Dim(name="r", domain=(1, 30), tile=4, dtype=np.int32), tiledb.Dim(name="c", domain=(1, 17), tile=5, dtype=np.int32)]
        tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=[tiledb.Attr(name="v", dtype=np.int64),
                                                                                      tiledb.Attr(name="s", dtype=str, var=True)]))
        with tiledb.open(uri, "w", timestamp=1) as A:
            A[:] = {"v": np.arange(30 * 17).reshape(30, 17), "s": np.array(["s%d" % i for i in range(30 * 17)], dtype=object).reshape(30, 17)}
        with tiledb.open(uri, "w", timestamp=2) as A:
            A[5:12, 3:9] = {"v": -np.arange(7 * 6).reshape(7, 6), "s": np.array(["n"] * 42, dtype=object).reshape(7, 6)}
    arr = lt.open_array(uri)
    for sub, flt in [(None, None), ([[(2, 4), (20, 28)], (3, 15)], None), (None, "v < 0 OR c = 2")]:
        want = arr.read(subarray=sub, order=order, filter=flt)
        reader = arr.to_batches(subarray=sub, order=order, filter=flt, batch_size=batch_size)
        assert isinstance(reader, pa.RecordBatchReader)
        batches = list(reader)
        assert all(b.num_rows <= batch_size for b in batches)
        assert pa.Table.from_batches(batches, schema=want.schema).equals(want)


@pytest.mark.parametrize("order", ["C", "F"])
def test_to_batches_equals_read_sparse(sparse, order):
    arr = lt.open_array(sparse)
    for sub in [None, [[(10, 400), (1600, 5100)]]]:
        want = arr.read(subarray=sub, order=order)
        batches = list(arr.to_batches(subarray=sub, order=order, batch_size=100))
        assert len(batches) > 10 and all(b.num_rows <= 100 for b in batches)
        assert pa.Table.from_batches(batches, schema=want.schema).equals(want)
    # "U": the same cells, every batch bounded
    u = list(arr.to_batches(batch_size=128))
    assert all(b.num_rows <= 128 for b in u)
    t = pa.Table.from_batches(u)
    assert sorted(t["d"].to_pylist()) == arr.read(order="C")["d"].to_pylist()


def test_to_batches_is_lazy_and_typed(sparse, tmp_path):
    import shutil
    dst = tmp_path / "copy"
    shutil.copytree(sparse, dst)
    arr = lt.open_array(str(dst))
    reader = arr.to_batches(order="C", batch_size=50)
    first = reader.read_next_batch()
    assert first.num_rows == 50
    # damage a data file after the stream started: later slabs fail typed
    for f in (dst / "__fragments").rglob("a1.tdb"):
        f.write_bytes(f.read_bytes()[:10])
    from lancelet.exceptions import CorruptFileError
    with pytest.raises(CorruptFileError):
        for _ in reader:
            pass
    with pytest.raises(InvalidInputError):
        arr.to_batches(batch_size=0)
    with pytest.raises(InvalidInputError):
        arr.to_batches(filter="nope = 1")
