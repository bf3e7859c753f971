"""``spark.read.format("lancelet_tiledb")`` equals tiledb-py's read of the
same array, with several partitions, on dense and sparse arrays of several
overlapping fragments (newer cells must win across partition boundaries)."""

from __future__ import annotations

import pkgutil

import pyarrow as pa
import pytest
from test_tiledb_ops import _dense_array, _norm, _sparse_array, _tiledb_table

import lancelet.tiledb as lt
from lancelet import _tiledb_lance

pytestmark = pytest.mark.spark


def _rows(t: pa.Table, names) -> list:
    cols = []
    for n in names:
        c = t[n]
        if pa.types.is_timestamp(c.type):
            # microseconds, as Spark keeps them; TileDB's NaT fill is null in Spark
            per_us = {"s": 10**6, "ms": 1000, "us": 1}[c.type.unit]
            cols.append([None if v is None or v == -(2**63) else v * per_us for v in c.cast(pa.int64()).to_pylist()])
            continue
        cols.append([_norm(x) for x in c.to_pylist()])
    return sorted(zip(*cols), key=repr)


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    root = tmp_path_factory.mktemp("tdb_spark")
    _dense_array(str(root / "dense"))
    _sparse_array(str(root / "sparse"), capacity=4)
    return str(root / "dense"), str(root / "sparse")


def _load(spark, uri, **options):
    r = spark.read.format("lancelet_tiledb")
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(uri)


@pytest.mark.parametrize("timestamp", [None, 20, (15, 30)])
def test_dense_partitions_equal_tiledb(spark, arrays, timestamp):
    dense, _ = arrays
    opts = {"rows_per_partition": 24}
    if timestamp is not None:
        opts["timestamp"] = ",".join(map(str, timestamp)) if isinstance(timestamp, tuple) else timestamp
    df = _load(spark, dense, **opts)
    # 10x12 cells, space tiles 3x4: tile rows of 36 cells are cut in two
    assert df.rdd.getNumPartitions() == len(_tiledb_lance.plan_regions(lt.open_array(dense), None, 24)) == 7
    cols = ["r", "c", "v", "s", "n", "ts"]
    assert df.columns == cols
    got = df.toArrow()
    assert _rows(got, cols) == _rows(_tiledb_table(dense, timestamp), cols)


@pytest.mark.parametrize("timestamp", [None, 4, (4, 5)])
def test_sparse_partitions_equal_tiledb(spark, arrays, timestamp):
    _, sparse = arrays
    opts = {"rows_per_partition": 10}
    if timestamp is not None:
        opts["timestamp"] = ",".join(map(str, timestamp)) if isinstance(timestamp, tuple) else timestamp
    df = _load(spark, sparse, **opts)
    assert df.rdd.getNumPartitions() > 3
    cols = ["x", "y", "i", "u", "l"]
    got = df.toArrow()
    assert _rows(got, cols) == _rows(_tiledb_table(sparse, timestamp), cols)


def test_options_attrs_dims_subarray_filter(spark, arrays):
    dense, sparse = arrays
    df = _load(spark, dense, attrs="n,s", dims="false", subarray="[[[2, 3], [8, 10]], [1, 9]]",
               rows_per_partition=8)
    assert df.columns == ["n", "s"]
    want = _tiledb_table(dense, sub=[[slice(2, 3), slice(8, 10)], slice(1, 9)], attrs=["n", "s"])
    assert _rows(df.toArrow(), ["n", "s"]) == _rows(want, ["n", "s"])
    df = _load(spark, sparse, attrs="u", subarray="[[10, 40], null]", filter="i >= 1000", rows_per_partition=5)
    assert df.columns == ["x", "y", "u"]
    full = lt.open_array(sparse).read(subarray=[(10, 40), None])
    keep = full.filter(pa.compute.greater_equal(full["i"], 1000))
    assert _rows(df.toArrow(), ["x", "y", "u"]) == _rows(keep, ["x", "y", "u"])
    # a filter counted in Spark too
    assert _load(spark, sparse, rows_per_partition=7).where("i >= 2000").count() == sum(
        1 for v in lt.open_array(sparse).read()["i"].to_pylist() if v >= 2000)


def test_new_writes_are_seen_by_new_loads(spark, tmp_path):
    import numpy as np
    import tiledb

    uri = str(tmp_path / "pin")
    _sparse_array(uri)
    before = _load(spark, uri, rows_per_partition=10).count()
    lists = np.empty(1, dtype=object)
    lists[0] = np.arange(2, dtype=np.int32)
    with tiledb.open(uri, "w") as A:  # a write now (wall-clock timestamp)
        A[np.array([999], np.int64), np.array([9.0])] = {"i": np.array([1], np.int64),
                                                         "u": np.array(["x"], dtype=object), "l": lists}
    # a new load sees the new cell
    assert _load(spark, uri, rows_per_partition=10).count() == before + 1


def test_bad_options_raise(spark, arrays):
    dense, _ = arrays
    for opts in ({"attrs": "nope"}, {"subarray": "[[0, 3], null]"}, {"subarray": "not json"},
                 {"rows_per_partition": "0"}, {"timestamp": "x"}, {"dims": "maybe"}, {"filter": "n >"}):
        with pytest.raises(Exception) as e:
            _load(spark, dense, **opts).collect()
        assert "InvalidInputError" in str(e.value) or "must" in str(e.value) or "subarray" in str(e.value), opts


def test_auto_registration_package():
    """PySpark registers the DefaultSource of importable pyspark_* packages."""
    assert "pyspark_lancelet_tiledb" in {m.name for m in pkgutil.iter_modules()}
    import pyspark_lancelet_tiledb

    assert pyspark_lancelet_tiledb.DefaultSource.name() == "lancelet_tiledb"


def test_region_plan_is_the_partitioning(arrays):
    """Partitions are disjoint regions of about rows_per_partition cells."""
    dense, sparse = arrays
    arr = lt.open_array(dense)
    regions = _tiledb_lance.plan_regions(arr, None, 24)
    sizes = [arr.read(subarray=r, attrs=[]).num_rows for r in regions]
    assert sum(sizes) == 120 and max(sizes) <= 24
