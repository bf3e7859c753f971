"""SQL filters (``filter=`` of to_table / scanner / count_rows) against pylance 14.

* a dataset of 3 fragments (with deleted rows) of int/float/string/bool/date/
  timestamp(tz)/decimal/nullable/struct columns, written by pylance;
* every expression pylance accepts in a broad list gives the same table and
  the same count_rows, also with limit/offset and with a projection that
  leaves the filtered columns out;
* where lancelet is more lenient than pylance (pylance refuses to convert
  literals such as ``i32 > 1.5`` or ``d = '2024-01-01'``), the results equal
  an equivalent expression pylance accepts;
* bad expressions raise ``lancelet.InvalidInputError`` naming the problem.
"""
from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pytest
from datagen import assert_tables_equal

import lancelet

pytestmark = pytest.mark.pylance

N = 700


def _table(n: int = N, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)

    def mask(frac=0.15):
        return rng.random(n) < frac

    def nullable(values, frac=0.15):
        m = mask(frac)
        return [None if m[i] else v for i, v in enumerate(values)]

    words = ["apple", "Apple", "banana", "a_c", "abc", "x%y", "it's", "", "zeta", "émile", "A%", "b'c"]
    f64 = rng.normal(0, 10, n).round(2)
    f64[rng.random(n) < 0.03] = np.nan
    base_ts = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    st_x = nullable(rng.integers(-5, 10, n).tolist())
    st_y = nullable([words[i] for i in rng.integers(0, len(words), n)])
    st_valid = ~mask(0.1)
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "i32": pa.array(nullable(rng.integers(-100, 100, n).tolist()), pa.int32()),
        "u8": pa.array(rng.integers(0, 256, n), pa.uint8()),
        "i16": pa.array(rng.integers(-300, 300, n), pa.int16()),
        "f64": pa.array(nullable(f64.tolist()), pa.float64()),
        "f32": pa.array(rng.normal(0, 3, n).round(1), pa.float32()),
        "s": pa.array(nullable([words[i] for i in rng.integers(0, len(words), n)]), pa.string()),
        "ls": pa.array([words[i] for i in rng.integers(0, len(words), n)], pa.large_string()),
        "b": pa.array(nullable([bool(v) for v in rng.integers(0, 2, n)]), pa.bool_()),
        "d": pa.array(nullable([datetime.date(2023, 12, 1) + datetime.timedelta(days=int(v))
                                for v in rng.integers(0, 90, n)]), pa.date32()),
        "ts": pa.array(nullable([base_ts + datetime.timedelta(minutes=int(v)) for v in rng.integers(0, 3000, n)]),
                       pa.timestamp("us", tz="UTC")),
        "tsn": pa.array([datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=int(v))
                         for v in rng.integers(0, 200_000, n)], pa.timestamp("ns")),
        "dec": pa.array(nullable([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-50_000, 50_000, n)]),
                        pa.decimal128(10, 2)),
        "st": pa.StructArray.from_arrays(
            [pa.array(st_x, pa.int64()), pa.array(st_y, pa.string())], names=["x", "y"],
            mask=pa.array(~st_valid)),
        "weird name": pa.array(rng.integers(0, 10, n), pa.int64()),
        "Mixed": pa.array(rng.integers(0, 10, n), pa.int32()),
    })


@pytest.fixture(scope="module")
def ds_path(tmp_path_factory):
    import lance
    p = str(tmp_path_factory.mktemp("filter") / "ds")
    lance.write_dataset(_table(), p, max_rows_per_file=250)
    lance.dataset(p).delete("id % 17 = 3 OR id BETWEEN 300 AND 320")
    return p


# expressions pylance accepts
SAME = [
    # comparisons, every type
    "i32 > 10", "i32 >= 10", "i32 < -50", "i32 <= 0", "i32 = 7", "i32 != 7", "i32 <> 7", "10 < i32",
    "u8 > 200", "u8 = 0", "i16 < -250", "id % 10 = 0",
    "f64 > 5", "f64 < -5.5", "f64 = 1.5", "f64 > 100", "f32 > 1", "f32 <= -2.5",
    "s = 'apple'", "s = \"apple\"", "s != 'apple'", "s < 'b'", "s >= 'zeta'", "s = 'it''s'", "s = ''", "ls = 'banana'",
    "b", "NOT b", "b = true", "b = false", "b IS TRUE", "b IS NOT TRUE", "b IS FALSE", "b IS NOT FALSE",
    "d = date '2024-01-15'", "d > date '2024-02-01'", "d < date '2023-12-10' OR d > date '2024-02-25'",
    "date '2024-01-01' = d",
    "ts > timestamp '2024-01-02 10:00:00'", "ts <= timestamp '2024-01-01 06:30:00'",
    "tsn > timestamp '2024-01-02 00:00:00'",
    "d = timestamp '2024-01-01 00:00:00'",
    "dec > 100", "dec < -200", "dec = 0", "dec + 1 > 2",
    "st.x > 3", "st.x = 0", "st.y = 'apple'", "st.x IS NULL", "st IS NULL", "st IS NOT NULL", "st.y LIKE 'a%'",
    "`weird name` > 5", "`Mixed` = 3", "mixed = 3", "MIXED > 7", "ID < 20", "`st`.`x` < 0",
    # null handling
    "i32 IS NULL", "i32 IS NOT NULL", "f64 IS NULL", "s IS NULL", "d IS NULL", "ts IS NULL", "dec IS NULL",
    "i32 = NULL", "i32 > 10 OR i32 IS NULL", "NOT (i32 > 10)", "i32 IS DISTINCT FROM 5", "i32 IS NOT DISTINCT FROM 5",
    "s = 'apple' OR NULL", "b OR i32 > 50", "b AND i32 > 0",
    # logic
    "i32 > 0 AND f64 > 0", "i32 > 0 OR f64 > 0", "NOT (i32 > 0 AND s = 'apple')", "(i32 > 0 OR b) AND NOT s LIKE 'a%'",
    "true", "false", "1 = 1", "1 = 2",
    # IN / BETWEEN
    "i32 IN (1, 2, 3, 50, -7)", "i32 NOT IN (1, 2, 3)", "i32 IN (1, NULL)", "i32 NOT IN (1, NULL)",
    "s IN ('apple', 'banana')", "s NOT IN ('apple', 'banana')", "u8 IN (0, 255, 7)",
    "i32 BETWEEN -10 AND 10", "i32 NOT BETWEEN -10 AND 10", "f64 BETWEEN -1 AND 1",
    "d BETWEEN date '2024-01-01' AND date '2024-01-31'", "st.x BETWEEN 1 AND 3",
    # LIKE
    "s LIKE 'a%'", "s LIKE '%a%'", "s LIKE 'a_c'", "s LIKE 'a\\_c'", "s LIKE 'x\\%y'", "s LIKE '%'", "s LIKE ''",
    "s NOT LIKE 'a%'", "s ILIKE 'a%'", "s NOT ILIKE 'APP%'", "ls LIKE '%na%'", "s LIKE '_'", "s LIKE 'b''c'",
    # arithmetic
    "i32 + 1 > 50", "i32 - 5 < 0", "i32 * 2 = 20", "i32 / 3 = 2", "i32 % 7 = 1", "-i32 > 10", "i32 = -2 + 4",
    "i32 * 1000000000000 > 5", "f64 / 0 > 1", "f64 * 2 > i32", "u8 + i16 > 300", "id * 2 + 1 > 1300",
    "f32 + 1.5 > 2",
    # CAST
    "CAST(i32 AS string) = '7'", "CAST(i32 AS double) / 2 > 10.25", "CAST(d AS string) = '2024-01-15'",
    "CAST('2024-01-15' AS date) = d", "CAST(i32 AS decimal(10, 2)) > 1.5", "CAST(i32 AS bigint) > 1",
    "CAST(i16 AS int) > 1", "CAST(u8 AS smallint) > 100", "CAST(i32 AS float) > 1", "CAST(i32 AS boolean)",
    # functions
    "lower(s) = 'apple'", "upper(s) = 'APPLE'", "length(s) = 5",
]


def _pylance(path, **kw):
    import lance
    return lance.dataset(path).to_table(**kw)


def _pylance_count(path, f):
    import lance
    return lance.dataset(path).count_rows(filter=f)


@pytest.mark.parametrize("f", SAME)
def test_same_as_pylance(ds_path, f):
    ds = lancelet.dataset(ds_path)
    want = _pylance(ds_path, filter=f)
    assert_tables_equal(ds.to_table(filter=f), want, context=f)
    assert ds.count_rows(filter=f) == _pylance_count(ds_path, f) == want.num_rows


@pytest.mark.parametrize("f", ["i32 > 10", "s LIKE 'a%' OR st.x > 2", "b IS NOT TRUE", "d > date '2024-01-10'"])
@pytest.mark.parametrize("limit,offset", [(5, None), (40, 13), (None, 100), (1000, 0), (3, 1000)])
def test_limit_offset(ds_path, f, limit, offset):
    ds = lancelet.dataset(ds_path)
    kw = dict(filter=f, limit=limit, offset=offset)
    assert_tables_equal(ds.to_table(**kw), _pylance(ds_path, **kw), context=str(kw))
    sc = ds.scanner(**kw)
    assert sc.count_rows() == _pylance(ds_path, **kw).num_rows


@pytest.mark.parametrize("columns", [["id"], ["s", "id"], [], ["st"]])
@pytest.mark.parametrize("f", ["i32 > 10 AND f64 < 0", "st.y = 'apple'", "`weird name` = 3"])
def test_projection_without_filter_columns(ds_path, f, columns):
    ds = lancelet.dataset(ds_path)
    kw = dict(filter=f, columns=columns)
    got = ds.to_table(**kw)
    want = _pylance(ds_path, **kw)
    assert got.schema.names == columns
    assert got.num_rows == want.num_rows
    if columns:
        assert_tables_equal(got, want, context=str(kw))


def test_with_row_id_and_batches(ds_path):
    ds = lancelet.dataset(ds_path)
    kw = dict(filter="i32 > 0 AND s IS NOT NULL", with_row_id=True, columns=["id"])
    assert_tables_equal(ds.to_table(**kw), _pylance(ds_path, **kw))
    batches = list(ds.to_batches(batch_size=17, **kw))
    assert sum(b.num_rows for b in batches) == _pylance(ds_path, **kw).num_rows


def test_fragment_filter(ds_path):
    import lance
    ds = lancelet.dataset(ds_path)
    for frag, pfrag in zip(ds.get_fragments(), lance.dataset(ds_path).get_fragments()):
        assert frag.count_rows("i32 > 0") == pfrag.count_rows("i32 > 0")
        assert_tables_equal(frag.to_table(filter="s = 'apple'"), pfrag.to_table(filter="s = 'apple'"))


# where pylance refuses a literal conversion, lancelet converts like DataFusion
LENIENT = [
    ("i32 > 1.5", "i32 >= 2"),
    ("i32 = 2.0", "i32 = 2"),
    ("i32 = 2.5", "false"),
    ("i32 = '7'", "i32 = 7"),
    ("u8 > -1", "true"),
    ("u8 < 300", "true"),
    ("d = '2024-01-15'", "d = date '2024-01-15'"),
    ("d > '2024-02-01'", "d > date '2024-02-01'"),
    ("d BETWEEN '2024-01-01' AND '2024-01-31'", "d BETWEEN date '2024-01-01' AND date '2024-01-31'"),
    ("ts > '2024-01-02 10:00:00'", "ts > timestamp '2024-01-02 10:00:00'"),
    ("ts > '2024-01-02T10:00:00Z'", "ts > timestamp '2024-01-02 10:00:00'"),
    ("tsn <= '2024-01-02'", "tsn <= timestamp '2024-01-02 00:00:00'"),
    ("dec > 1.5", "dec > CAST(1.5 AS decimal(10, 2))"),
    ("dec = 1.50", "dec = CAST(1.5 AS decimal(10, 2))"),
    ("dec = '1.50'", "dec = CAST(1.5 AS decimal(10, 2))"),
    ("d < timestamp '2024-01-10 12:00:00'", "d <= date '2024-01-10'"),
]


@pytest.mark.parametrize("ours,theirs", LENIENT)
def test_lenient_coercion(ds_path, ours, theirs):
    ds = lancelet.dataset(ds_path)
    want = _pylance(ds_path, filter=theirs)
    assert_tables_equal(ds.to_table(filter=ours), want, context=ours)
    assert ds.count_rows(filter=ours) == want.num_rows


ERRORS = [
    ("nope > 1", r"no column named `nope`.*available columns: id, i32, u8"),
    ("st.z = 1", r"struct column `st` has no field `z`.*fields: x, y"),
    ("i32.x = 1", r"not a struct"),
    ("`mixed` = 1", r"no column named `mixed`"),
    ("i32 >", r"syntax error.*EOF"),
    ("i32 > 1 garbage", r"unexpected `garbage` at line 1, column 9"),
    ("i32 = 1 AND", r"syntax error"),
    ("(i32 > 1", r"syntax error"),
    ("", r"empty filter"),
    ("i32", r"must be a boolean expression"),
    ("NULL", r"must be a boolean expression"),
    ("1", r"must be a boolean expression"),
    ("i32 + 1", r"must be a boolean expression"),
    ("b = 1", r"cannot compare"),
    ("s = 2", r"cannot compare"),
    ("s > d", r"cannot convert|Cannot cast|cannot compare"),
    ("i32 = 'x'", r"cannot convert the literal"),
    ("d = 'not a date'", r"cannot convert the literal"),
    ("date '2024-13-45' = d", r"not a valid"),
    ("i32 LIKE 'a%'", r"LIKE needs a string"),
    ("s REGEXP 'a'", r"unsupported"),
    ("s LIKE 'a' ESCAPE '!'", r"escape"),
    ("foo(i32) = 1", r"unsupported function `foo`"),
    ("i32 IN (SELECT 1)", r"unsupported"),
    ("i32 AND b", r"boolean"),
    ("_rowid = 'x'", r"cannot convert the literal"),   # row columns are UInt64 (test_rowid_filters.py)
    ("i32 / 0 = 1", r"[Dd]ivide by zero"),
    ("CAST(s AS int) = 1", r"Cannot cast string"),
    ("CAST(i32 AS interval) = 1", r"unsupported type"),
]


@pytest.mark.parametrize("f,match", ERRORS)
def test_errors(ds_path, f, match):
    ds = lancelet.dataset(ds_path)
    with pytest.raises(lancelet.InvalidInputError, match=match):
        ds.to_table(filter=f)
    with pytest.raises(lancelet.InvalidInputError, match=match):
        ds.count_rows(filter=f)


def test_errors_before_io(ds_path, tmp_path):
    # a bad filter fails when the scan is planned, not while streaming
    ds = lancelet.dataset(ds_path)
    with pytest.raises(lancelet.InvalidInputError, match="nope"):
        ds.scanner(filter="nope = 1").to_reader()
    with pytest.raises(TypeError, match="SQL string"):  # a wrong Python type (docs/errors.md)
        ds.to_table(filter=123)


ZERO_FILTERS = ["x = 0.0", "x = -0.0", "x = 0", "x < 0.0", "x <= -0.0", "x > -0.0", "x >= 0.0", "x <> 0.0",
                "x IN (0.0)", "x IN (-0.0, 5.0)", "x NOT IN (0.0)", "x BETWEEN -1.0 AND -0.0", "x > 1.0",
                "x = x", "x <> x", "-x = 0.0", "x + 0.0 = 0.0", "f = 0.0", "f = -0.0", "f < 0.0",
                "f IN (0.0, 1.0)", "x = 0.0 AND f = -0.0", "x = 0.0 OR x IS NULL"]


@pytest.mark.parametrize("index", [None, "BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER"])
def test_float_zeros_and_nans_as_pylance(tmp_path, index):
    """-0.0 equals 0.0 (IEEE), NaN equals itself and sorts above every number
    (total order): pylance's semantics, with and without an index on the
    column (each kind is asked with its own lookups: equality, ranges, sets)."""
    import lance

    rng = np.random.default_rng(11)
    pool = np.array([-0.0, 0.0, 1.0, -1.0, np.nan, 2.5])
    n = 3000
    xs = rng.choice(pool, n)
    x = pa.array(xs, mask=rng.random(n) < 0.05)
    t = pa.table({"x": x, "f": pa.array(rng.choice(pool, n).astype("float32")), "id": pa.array(range(n))})
    path = str(tmp_path / "z")
    lance.write_dataset(t, path, max_rows_per_file=1000)
    if index:
        lance.dataset(path).create_scalar_index("x", index)
    theirs, ours = lance.dataset(path), lancelet.dataset(path)
    for f in ZERO_FILTERS:
        want = theirs.to_table(filter=f, columns=["id"])["id"].to_pylist()
        got = ours.to_table(filter=f, columns=["id"])["id"].to_pylist()
        assert sorted(got) == sorted(want), f
        assert ours.count_rows(f) == len(want), f
    # values come back as stored: the sign of a zero is kept
    got = ours.to_table(filter="x = 0.0", columns=["x"])["x"].to_numpy(zero_copy_only=False)
    assert np.signbit(got).any() and (~np.signbit(got)).any()
