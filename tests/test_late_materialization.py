"""Late materialization of filtered scans, pinned by the I/O statistics.

A filtered scan reads the filter's columns first and the other output
columns only for the rows that pass (see rust/lancelet/src/table/select.rs
and file/fetch.rs). These tests count the bytes and requests a scan makes
through its dataset handle (``Dataset._native.io_stats()``), never time:

* a filter that matches nothing reads exactly what a scan of the filter's
  columns alone reads: no payload column is fetched or decoded;
* a filter column that is also an output column is read once;
* ``count_rows(filter)`` reads the filter's columns once;
* a selective filter fetches only a small part of the payload columns
  (the chunks / full-zip entries of its rows), a dense one reads pages whole;
* results (rows, order, ``_rowid``/``_rowaddr``, deletions, stable row ids,
  limit/offset, batch sizes, fragments) equal pylance's and a plain scan
  filtered afterwards, on datasets written by lancelet and by pylance.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from datagen import assert_tables_equal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet

lance = pytest.importorskip("lance")
pytestmark = pytest.mark.pylance

N = 24_000
DIM = 96  # 384-byte vectors: full-zip pages


def _table(n: int = N, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon"])
    txt = [f"row {i} " + "x" * int(rng.integers(0, 40)) for i in range(n)]
    return pa.table({
        "k": pa.array(np.arange(n), pa.int64()),
        "r": pa.array(rng.integers(0, 1000, n), pa.int32()),
        "cat": pa.array(words[rng.integers(0, len(words), n)]),
        "txt": pa.array(txt),
        "f": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.1),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * DIM, dtype=np.float32)), DIM),
    })


def _write(writer: str, path: str, stable: bool) -> None:
    t = _table()
    if writer == "lancelet":
        lancelet.write_dataset(t, path, max_rows_per_file=10_000, enable_stable_row_ids=stable)
        lancelet.dataset(path).delete("k % 7 = 3 OR (k >= 5000 AND k < 5100)")
    else:
        lance.write_dataset(t, path, max_rows_per_file=10_000, enable_stable_row_ids=stable)
        lance.dataset(path).delete("k % 7 = 3 OR (k >= 5000 AND k < 5100)")


@pytest.fixture(scope="module", params=["lancelet", "pylance"])
def path(request, tmp_path_factory):
    p = str(tmp_path_factory.mktemp("late") / request.param)
    _write(request.param, p, stable=False)
    return p


@pytest.fixture(scope="module")
def stable_path(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("late") / "stable")
    _write("lancelet", p, stable=True)
    return p


def io(path, fn):
    """(result, requests, bytes) of ``fn(dataset)`` on a fresh handle."""
    ds = lancelet.dataset(path)
    r0, b0 = ds._native.io_stats()
    out = fn(ds)
    r1, b1 = ds._native.io_stats()
    return out, r1 - r0, b1 - b0


def test_no_match_reads_only_the_filter_columns(path):
    _, req_k, bytes_k = io(path, lambda ds: ds.to_table(columns=["k"]))
    for flt in ["k < 0", "k > 1000000", "cat = 'zeta'"]:
        col = flt.split()[0]
        _, req_c, bytes_c = io(path, lambda ds: ds.to_table(columns=[col]))
        got, req, nbytes = io(path, lambda ds: ds.to_table(filter=flt))
        assert got.num_rows == 0
        assert (req, nbytes) == (req_c, bytes_c), flt
    _, _, full = io(path, lambda ds: ds.to_table())
    assert bytes_k < full / 20


def test_filter_column_in_the_output_is_read_once(path):
    _, req_k, bytes_k = io(path, lambda ds: ds.to_table(columns=["k"]))
    got, req, nbytes = io(path, lambda ds: ds.to_table(columns=["k"], filter="k >= 0"))
    assert got.num_rows == lancelet.dataset(path).count_rows()
    assert (req, nbytes) == (req_k, bytes_k)


def test_count_rows_reads_the_filter_columns_once(path):
    _, req_a, bytes_a = io(path, lambda ds: ds.to_table(columns=["r", "cat"]))
    n, req, nbytes = io(path, lambda ds: ds.count_rows(filter="r < 10 AND cat = 'beta'"))
    assert n == lance.dataset(path).count_rows(filter="r < 10 AND cat = 'beta'")
    assert (req, nbytes) == (req_a, bytes_a)


def test_selective_filter_fetches_little_payload(path):
    _, _, bytes_r = io(path, lambda ds: ds.to_table(columns=["r"]))
    _, _, full = io(path, lambda ds: ds.to_table())
    # about 0.1 % of the rows, spread over every page
    got, req, nbytes = io(path, lambda ds: ds.to_table(filter="r = 500"))
    assert 0 < got.num_rows < N / 200
    assert nbytes - bytes_r < full / 10
    # the vectors of the passing rows only: entries, not pages
    got, _, vec_bytes = io(path, lambda ds: ds.to_table(columns=["v"], filter="r = 500"))
    assert vec_bytes - bytes_r < 40 * got.num_rows * DIM * 4


def test_dense_filter_reads_whole_pages(path):
    # nearly every row passes: the payload is read as in a plain scan
    _, req_full, full = io(path, lambda ds: ds.to_table())
    got, req, nbytes = io(path, lambda ds: ds.to_table(filter="r >= 1"))
    assert got.num_rows > 0.99 * lancelet.dataset(path).count_rows()
    assert nbytes <= full * 1.02
    assert req <= req_full * 1.5


FILTERS = [
    "k < 0", "k < 3", "k >= 23990", "r = 500", "r < 100", "r >= 1", "cat = 'beta'",
    "txt LIKE 'row 1%'", "f > 1.5", "f IS NULL", "r < 50 AND cat <> 'beta'", "k < 40 OR r = 7",
    "_rowaddr < 100", "_rowid >= 12000 AND r < 500",
]


@pytest.mark.parametrize("flt", FILTERS)
def test_results_match_pylance(path, flt):
    kw = dict(filter=flt, with_row_id=True, with_row_address=True)
    got = lancelet.dataset(path).to_table(**kw)
    want = lance.dataset(path).to_table(**kw)
    assert_tables_equal(got, want, context=flt)
    cols = ["txt", "v", "k"]
    got = lancelet.dataset(path).to_table(columns=cols, filter=flt, limit=37, offset=11)
    want = lance.dataset(path).to_table(columns=cols, filter=flt, limit=37, offset=11)
    assert_tables_equal(got, want, context=f"{flt} limit/offset")
    assert lancelet.dataset(path).count_rows(filter=flt) == lance.dataset(path).count_rows(filter=flt)


@pytest.mark.parametrize("flt", ["r < 300", "_rowid % 5 = 0", "k >= 11000 AND cat = 'gamma'"])
def test_stable_row_ids(stable_path, flt):
    kw = dict(filter=flt, with_row_id=True, with_row_address=True)
    assert_tables_equal(lancelet.dataset(stable_path).to_table(**kw), lance.dataset(stable_path).to_table(**kw),
                        context=flt)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lo=st.integers(-5, 1005), width=st.integers(0, 1010), batch=st.sampled_from([None, 1, 100, 4096]),
       offset=st.integers(0, 300), limit=st.one_of(st.none(), st.integers(0, 500)),
       cols=st.sampled_from([None, ["v"], ["txt", "r"], ["k"], []]), frags=st.sampled_from([None, [2, 0], [1]]))
def test_filtered_scan_is_a_filtered_plain_scan(stable_path, lo, width, batch, offset, limit, cols, frags):
    """Any filter, projection, batch size, fragment list, offset and limit:
    the same rows, in the same order, as a plain scan filtered afterwards."""
    ds = lancelet.dataset(stable_path)
    flt = f"r >= {lo} AND r < {lo + width}"
    fragments = None if frags is None else [ds.get_fragment(i) for i in frags]
    got = ds.scanner(columns=cols, filter=flt, batch_size=batch, offset=offset, limit=limit, with_row_id=True,
                     fragments=fragments).to_reader().read_all()
    plain = ds.to_table(with_row_id=True, fragments=fragments)
    want = plain.filter(pc.and_(pc.greater_equal(plain["r"], lo), pc.less(plain["r"], lo + width)))
    want = want.slice(offset, limit if limit is not None else want.num_rows)
    want = want.select((cols if cols is not None else _table().column_names) + ["_rowid"])
    assert got.num_rows == want.num_rows
    assert got.equals(want.cast(got.schema)) if got.num_rows else True
    if batch is not None:
        assert all(b.num_rows <= batch for b in ds.to_batches(columns=cols, filter=flt, batch_size=batch))


@pytest.mark.parametrize("flt", ["r < 40", "cat = 'delta' AND f > 0", "k < 0"])
def test_fragment_scans_match_pylance(path, flt):
    """Fragment-level filtered scans and counts (lancelet's fragments against
    pylance's), with row ids and addresses."""
    mine, ref = lancelet.dataset(path), lance.dataset(path)
    for f in mine.get_fragments():
        g = ref.get_fragment(f.fragment_id)
        kw = dict(filter=flt, with_row_id=True, with_row_address=True)
        assert_tables_equal(f.to_table(**kw), g.to_table(**kw), context=f"fragment {f.fragment_id} {flt}")
        assert f.count_rows(flt) == g.count_rows(flt)


pyspark = None
try:  # the Spark reader's per-task code runs without a JVM
    from lancelet.spark.source import LanceOptions, plan_slices, read_slice
    from lancelet.spark.types import spark_arrow_schema, spark_schema
    pyspark = True
except ImportError:  # pragma: no cover (pyspark is a test dependency)
    pass


@pytest.mark.skipif(pyspark is None, reason="pyspark not installed")
@pytest.mark.parametrize("rows_per_partition", [3_000, 1 << 20])
def test_spark_reader_slices_match_pylance(stable_path, rows_per_partition):
    """The Spark reader's tasks (fragment slices, a pushed-down filter on top
    of the ``filter`` option) give, concatenated, pylance's filtered scan."""
    ds = lancelet.dataset(stable_path)
    opts = LanceOptions(uri=stable_path, filter="r < 400")
    cols = ["k", "txt", "v", "f"]
    target = spark_arrow_schema(spark_schema(ds.schema))
    target = pa.schema([target.field(c) for c in cols])
    batches = [b for part in plan_slices(ds, rows_per_partition)
               for b in read_slice(opts, part, cols, target, "cat <> 'beta'")]
    got = pa.Table.from_batches(batches, target)
    want = lance.dataset(stable_path).to_table(columns=cols, filter="(r < 400) AND (cat <> 'beta')")
    assert got.num_rows == want.num_rows > 0
    assert got.column("k").equals(want.column("k").cast(got.schema.field("k").type))
    assert got.column("txt").to_pylist() == want.column("txt").to_pylist()
    assert got.column("v").to_pylist() == want.column("v").to_pylist()
