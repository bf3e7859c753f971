"""Operations over whole TileDB arrays: ``lancelet.tiledb.to_lance`` (read by
pylance, compared with tiledb-py's read of the same array) and the region
plans that stream it (and partition the Spark source).

Arrays are written by tiledb-py 0.36.1 in each test: dense with fills and
overlapping fragments, sparse with overwrites, strings, nullable and list
attributes, several timestamps.
"""
from __future__ import annotations

import math
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import tiledb

import lancelet
import lancelet.tiledb as lt
from lancelet import _tiledb_lance
from lancelet.exceptions import (
    AlreadyExistsError,
    CorruptFileError,
    InvalidInputError,
    LanceletError,
    NotFoundError,
)

# ------------------------------------------------------------------ helpers


def _norm(v):
    """One comparable Python value from tiledb-py's numpy or pylance's Arrow."""
    if isinstance(v, np.ndarray):
        return [_norm(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def _tiledb_table(uri, timestamp=None, sub=None, attrs=None) -> pa.Table:
    """tiledb-py's read, ``sub`` inclusive. Its Arrow path keeps values as
    stored (the numpy path strips the NUL of string fills and loses string
    nulls) but refuses list attributes: those come from the numpy path,
    matched by coordinates."""
    with tiledb.open(uri, timestamp=timestamp) as A:
        schema = A.schema
        names = attrs if attrs is not None else [schema.attr(i).name for i in range(schema.nattr)]
        is_list = {n: schema.attr(n).isvar and schema.attr(n).dtype.kind not in "US" for n in names}
        if sub is None:
            sub = [slice(*d.domain) if not schema.sparse else slice(None) for d in schema.domain]
            if schema.sparse and A.nonempty_domain() is None:
                sub = None
        key = tuple(sub) if sub is not None else slice(None)
        dims = [d.name for d in schema.domain]
        table = A.query(return_arrow=True, coords=True, attrs=[n for n in names if not is_list[n]]).df[key]
        lists = [n for n in names if is_list[n]]
        if lists:
            r = A.query(coords=True, attrs=lists).multi_index[key]
            by_coords = {tuple(_norm(r[d][i]) for d in dims): i for i in range(len(r[dims[0]]))}
            rows = [by_coords[tuple(_norm(v) for v in row)] for row in zip(*(table[d].to_pylist() for d in dims))]
            for n in lists:
                table = table.append_column(n, pa.array([_norm(r[n][i]) for i in rows]))
        return table.select(dims + names)


def _lance_rows(uri, names) -> list:
    import lance

    t = lance.dataset(uri).to_table()
    cols = []
    for n in names:
        c = t[n]
        if pa.types.is_timestamp(c.type):
            c = c.cast(pa.int64())
        cols.append([_norm(x) for x in c.to_pylist()])
    return sorted(zip(*cols), key=repr)


def _table_rows(t: pa.Table, names) -> list:
    cols = []
    for n in names:
        c = t[n]
        if pa.types.is_timestamp(c.type):
            c = c.cast(pa.int64())
        cols.append([_norm(x) for x in c.to_pylist()])
    return sorted(zip(*cols), key=repr)


def _dense_array(uri: str) -> None:
    """10x12 dense int32 dims (tiles 3x4); fragments at t=10 (rows 1-7),
    t=20 (a block overwriting part of it), t=30 (one cell in the fill area):
    rows 8-10 are mostly fills."""
    dom = tiledb.Domain(
        tiledb.Dim(name="r", domain=(1, 10), tile=3, dtype=np.int32),
        tiledb.Dim(name="c", domain=(0, 11), tile=4, dtype=np.int32),
    )
    schema = tiledb.ArraySchema(domain=dom, attrs=[
        tiledb.Attr(name="v", dtype=np.float64, nullable=True, filters=tiledb.FilterList([tiledb.ZstdFilter()])),
        tiledb.Attr(name="s", dtype=str, var=True),
        tiledb.Attr(name="n", dtype=np.int32),
        tiledb.Attr(name="ts", dtype="datetime64[ms]"),
    ])
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(11)
    with tiledb.open(uri, "w", timestamp=10) as A:
        v = rng.normal(size=(7, 12))
        A[1:8, 0:12] = {"v": np.ma.masked_array(v, mask=rng.random((7, 12)) < 0.2),
                        "s": np.array([f"s{i}é" * (i % 4) for i in range(84)], dtype=object).reshape(7, 12),
                        "n": np.arange(84, dtype=np.int32).reshape(7, 12),
                        "ts": (np.arange(84) + 1_700_000_000_000).astype("datetime64[ms]").reshape(7, 12)}
    with tiledb.open(uri, "w", timestamp=20) as A:
        A[2:6, 3:9] = {"v": np.ma.masked_array(np.full((4, 6), 2.5), mask=np.zeros((4, 6), bool)),
                       "s": np.array(["new"] * 24, dtype=object).reshape(4, 6),
                       "n": np.full((4, 6), -7, np.int32),
                       "ts": np.full((4, 6), 5, "datetime64[ms]")}
    with tiledb.open(uri, "w", timestamp=30) as A:
        A[9:10, 10:11] = {"v": np.ma.masked_array(np.full((1, 1), 9.0), mask=[[False]]),
                          "s": np.array(["late"], dtype=object).reshape(1, 1),
                          "n": np.full((1, 1), 99, np.int32), "ts": np.full((1, 1), 9, "datetime64[ms]")}


def _sparse_array(uri: str, capacity: int = 5) -> None:
    """Sparse (int64 x float64), small tiles, three fragments that overwrite
    each other's cells, nullable strings and int lists."""
    dom = tiledb.Domain(
        tiledb.Dim(name="x", domain=(0, 1000), tile=100, dtype=np.int64),
        tiledb.Dim(name="y", domain=(0.0, 10.0), tile=2.0, dtype=np.float64),
    )
    schema = tiledb.ArraySchema(domain=dom, sparse=True, capacity=capacity, attrs=[
        tiledb.Attr(name="i", dtype=np.int64),
        tiledb.Attr(name="u", dtype=str, var=True, nullable=True),
        tiledb.Attr(name="l", dtype=np.int32, var=True),
    ])
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(5)
    xs = rng.integers(0, 60, 80)
    ys = np.round(rng.uniform(0, 10, 80), 0)
    for w, t in enumerate((3, 4, 5)):
        sl = slice(w * 20, w * 20 + 40)
        pts = sorted(set(zip(xs[sl].tolist(), ys[sl].tolist())))
        x = np.array([p[0] for p in pts], np.int64)
        y = np.array([p[1] for p in pts], np.float64)
        n = len(x)
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[x, y] = {"i": np.arange(n, dtype=np.int64) + 1000 * w,
                       "u": np.array([None if j % 4 == 0 else f"ü{w}-{j}" for j in range(n)], dtype=object),
                       "l": np.array([np.arange(j % 3, dtype=np.int32) + w for j in range(n)], dtype=object)}


DENSE_COLS = ["r", "c", "v", "s", "n", "ts"]
SPARSE_COLS = ["x", "y", "i", "u", "l"]


@pytest.fixture(scope="module")
def dense_uri(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("tdb") / "dense")
    _dense_array(uri)
    return uri


@pytest.fixture(scope="module")
def sparse_uri(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("tdb") / "sparse")
    _sparse_array(uri)
    return uri


# ------------------------------------------------------------------ to_lance


def test_oracle_reads_without_the_racy_tile_merge():
    """conftest.py turns off TileDB 2.30's preprocess tile merge, whose race
    crashes the oracle now and then (scripts/tiledb_oracle_race.py): every
    context the tests make, and every subprocess, must see it off."""
    import os
    import subprocess
    import sys
    key = "sm.query.sparse_global_order.preprocess_tile_merge"
    assert tiledb.Ctx().config()[key] == "0"
    assert tiledb.Config()[key] == "0"
    code = f"import tiledb; print(tiledb.Ctx().config()[{key!r}])"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=os.environ).stdout.strip() == "0"


@pytest.mark.parametrize("timestamp", [None, 10, 20, (15, 30)])
@pytest.mark.parametrize("batch_size", [7, 40, 65536])
def test_to_lance_dense_matches_tiledb(tmp_path, dense_uri, timestamp, batch_size):
    dest = str(tmp_path / "d.lance")
    ds = lt.to_lance(dense_uri, dest, timestamp=timestamp, batch_size=batch_size)
    assert isinstance(ds, lancelet.Dataset)
    want = _tiledb_table(dense_uri, timestamp)
    assert _lance_rows(dest, DENSE_COLS) == _table_rows(want, DENSE_COLS)
    assert ds.count_rows() == 120


@pytest.mark.parametrize("timestamp", [None, 4, (4, 5)])
@pytest.mark.parametrize("batch_size", [3, 12, 65536])
def test_to_lance_sparse_matches_tiledb(tmp_path, sparse_uri, timestamp, batch_size):
    dest = str(tmp_path / "s.lance")
    lt.to_lance(sparse_uri, dest, timestamp=timestamp, batch_size=batch_size)
    want = _tiledb_table(sparse_uri, timestamp)
    assert _lance_rows(dest, SPARSE_COLS) == _table_rows(want, SPARSE_COLS)


def test_to_lance_subarray_attrs_dims(tmp_path, dense_uri, sparse_uri):
    dest = str(tmp_path / "a.lance")
    lt.to_lance(dense_uri, dest, subarray=[[(2, 3), (8, 10)], (1, 9)], attrs=["n", "s"], batch_size=5)
    want = _tiledb_table(dense_uri, sub=[[slice(2, 3), slice(8, 10)], slice(1, 9)], attrs=["n", "s"])
    assert _lance_rows(dest, ["r", "c", "n", "s"]) == _table_rows(want, ["r", "c", "n", "s"])
    import lance

    assert lance.dataset(dest).schema.names == ["r", "c", "n", "s"]
    dest2 = str(tmp_path / "b.lance")
    lt.to_lance(sparse_uri, dest2, subarray=[(10, 40), (2.0, 8.0)], attrs="u", dims=False, batch_size=4)
    assert lance.dataset(dest2).schema.names == ["u"]
    want = _tiledb_table(sparse_uri, sub=[slice(10, 40), slice(2.0, 8.0)], attrs=["u"])
    assert _lance_rows(dest2, ["u"]) == _table_rows(want, ["u"])


def test_to_lance_filter(tmp_path, sparse_uri):
    dest = str(tmp_path / "f.lance")
    lt.to_lance(sparse_uri, dest, filter="i >= 1000 AND u IS NOT NULL", attrs=["u"], batch_size=6)
    full = lt.open_array(sparse_uri).read()
    keep = full.filter(pc.and_(pc.greater_equal(full["i"], 1000), pc.is_valid(full["u"])))
    assert _lance_rows(dest, ["x", "y", "u"]) == _table_rows(keep, ["x", "y", "u"])
    assert len(keep) > 0


def test_to_lance_modes(tmp_path, sparse_uri):
    import lance

    dest = str(tmp_path / "m.lance")
    lt.to_lance(sparse_uri, dest, timestamp=3)
    n3 = lance.dataset(dest).count_rows()
    with pytest.raises(AlreadyExistsError):
        lt.to_lance(sparse_uri, dest)
    lt.to_lance(sparse_uri, dest, mode="append", timestamp=(4, 4), max_rows_per_file=7)
    n4 = _tiledb_table(sparse_uri, (4, 4)).num_rows
    ds = lance.dataset(dest)
    assert ds.count_rows() == n3 + n4 and ds.version == 2
    lt.to_lance(sparse_uri, dest, mode="overwrite")
    assert _lance_rows(dest, SPARSE_COLS) == _table_rows(_tiledb_table(sparse_uri), SPARSE_COLS)
    assert lance.dataset(dest).version == 3


def test_to_lance_bad_arguments_raise_typed_errors(tmp_path, dense_uri):
    dest = str(tmp_path / "bad.lance")
    with pytest.raises(InvalidInputError):
        lt.to_lance(dense_uri, dest, attrs=["nope"])
    with pytest.raises(InvalidInputError):
        lt.to_lance(dense_uri, dest, subarray=[(0, 3), None])  # outside the domain
    with pytest.raises(InvalidInputError):
        lt.to_lance(dense_uri, dest, subarray=[(1, 2)])  # one entry for two dims
    with pytest.raises(InvalidInputError):
        lt.to_lance(dense_uri, dest, filter="no_such_column > 1")
    with pytest.raises(InvalidInputError):
        lt.to_lance(dense_uri, dest, filter="n >")
    with pytest.raises(InvalidInputError):
        lt.to_lance(dense_uri, dest, mode="upsert")
    with pytest.raises(InvalidInputError):
        lt.to_lance(dense_uri, dest, batch_size=0)
    with pytest.raises(InvalidInputError):
        lt.to_lance(dense_uri, dest, timestamp=(5, 1))
    with pytest.raises(NotFoundError):
        lt.to_lance(str(tmp_path / "missing"), dest)
    assert not Path(dest).exists()


def test_to_lance_failure_mid_stream_leaves_dataset_unchanged(tmp_path, dense_uri):
    """A corrupt data tile met after the first regions were written: the
    error is the reader's typed one and the dataset keeps its version."""
    import lance

    src = tmp_path / "src"
    shutil.copytree(dense_uri, src)
    dest = str(tmp_path / "keep.lance")
    lt.to_lance(str(src), dest, timestamp=10)
    before = lance.dataset(dest).to_table()
    # corrupt the t=30 fragment (one cell in row 9): only the last regions read it
    frag = next(p for p in (src / "__fragments").iterdir() if p.name.startswith("__30_30_"))
    data = frag / "a2.tdb"
    data.write_bytes(data.read_bytes()[:-9])  # a truncated data tile
    with pytest.raises(CorruptFileError):
        lt.to_lance(str(src), dest, mode="append", batch_size=12)
    with pytest.raises(LanceletError):
        lt.to_lance(str(src), dest, mode="overwrite", batch_size=12)
    ds = lance.dataset(dest)
    assert ds.version == 1
    assert ds.to_table().equals(before)


# ------------------------------------------------------------------ region plans


def _concat_read(arr, sub, target, **kw):
    batches = list(_tiledb_lance.iter_batches(arr, sub, batch_size=target, **kw))
    schema = pa.schema(arr._native.arrow_schema(None, True))
    return pa.Table.from_batches(batches, schema=schema)


@pytest.mark.parametrize("seed", range(6))
def test_regions_cover_the_read_exactly(dense_uri, sparse_uri, seed):
    """Seeded random subarrays and targets: the regions are disjoint, each
    about the target, and together read exactly what one read does."""
    rnd = random.Random(seed)
    dense = lt.open_array(dense_uri)
    r0 = rnd.randint(1, 10)
    sub = [[(r0, rnd.randint(r0, 10))], None] if seed % 2 else None
    for target in (1, rnd.randint(2, 30), 1000):
        whole = dense.read(subarray=sub, order="C")
        got = _concat_read(dense, sub, target)
        assert _table_rows(got, DENSE_COLS) == _table_rows(whole, DENSE_COLS)
        regions = _tiledb_lance.plan_regions(dense, sub, target)
        sizes = [dense.read(subarray=r, attrs=[]).num_rows for r in regions]
        assert sum(sizes) == whole.num_rows
        # whole space tiles are never split, so a region holds at most a tile more than asked
        assert max(sizes) <= max(target, 12)
        if target >= 12 * 12:
            assert len(regions) == 1
    sparse = lt.open_array(sparse_uri)
    x0 = rnd.randint(0, 50)
    sub = [(x0, x0 + rnd.randint(0, 40)), (float(rnd.randint(0, 5)), 10.0)] if seed % 2 else None
    whole = sparse.read(subarray=sub)
    for target in (1, rnd.randint(2, 20), 10_000):
        got = _concat_read(sparse, sub, target)
        assert _table_rows(got, SPARSE_COLS) == _table_rows(whole, SPARSE_COLS)
        regions = _tiledb_lance.plan_regions(sparse, sub, target)
        if target == 10_000:
            assert len(regions) <= 1
        else:
            assert len(regions) > 1 or whole.num_rows <= target


def test_regions_of_string_dims_and_empty_arrays(tmp_path):
    uri = str(tmp_path / "strs")
    dom = tiledb.Domain(tiledb.Dim(name="k", dtype="ascii", var=True),
                        tiledb.Dim(name="t", domain=(0, 99), tile=10, dtype=np.int32))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, capacity=3,
                                                attrs=[tiledb.Attr(name="v", dtype=np.int32)]))
    arr = lt.open_array(uri)
    assert _tiledb_lance.plan_regions(arr, None, 5) == []
    dest = str(tmp_path / "empty.lance")
    ds = lt.to_lance(uri, dest)
    assert ds.count_rows() == 0
    import lance

    assert lance.dataset(dest).schema.names == ["k", "t", "v"]
    keys = ["a", "a", "ab", "b", "ba", "c", "c", "c", "d", "zz", "zz\x01"]
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[np.array(keys, dtype=object), np.arange(len(keys), dtype=np.int32)] = {"v": np.arange(len(keys), dtype=np.int32)}
    arr = lt.open_array(uri)
    regions = _tiledb_lance.plan_regions(arr, None, 3)
    assert len(regions) > 1
    got = _concat_read(arr, None, 3)
    assert _table_rows(got, ["k", "t", "v"]) == _table_rows(arr.read(), ["k", "t", "v"])
    dest2 = str(tmp_path / "strs.lance")
    lt.to_lance(uri, dest2, batch_size=2)
    assert _lance_rows(dest2, ["k", "t", "v"]) == _table_rows(_tiledb_table(uri), ["k", "t", "v"])
