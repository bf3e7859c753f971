"""Schema defaults: what lancelet writes when an argument is left out, and
what it reports for a schema, are what TileDB 2.30 / tiledb-py 0.36.1 do.

Two rules of TileDB, each checked both ways against the oracle:

- Writing: defaults are TileDB's own (an attribute's fill is the type's
  fill value, once per value of a fixed cell and once for a var cell; a
  dimension without a tile extent gets its whole domain, sparse or dense;
  capacity 10000; coords and offsets ``ZstdFilter(-1)``, validity
  ``RleFilter(-1)``). Every case is created by tiledb-py and by lancelet
  from the same arguments; the decoded schema tiles must be byte-identical,
  tiledb-py must describe lancelet's schema exactly as its own (section by
  section of TileDB's dump: array, each dimension, each attribute), and
  lancelet must report the same schema for both arrays.
- Reading: a schema is reported as TileDB loads it: a dimension stored
  without filters of its own reports the array's coordinate filters.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pyarrow as pa
import pytest
import tiledb
from test_tiledb_read import FIXTURES, NAMES
from test_tiledb_write import schema_bytes

import lancelet.tiledb as lt
from lancelet._tiledb_write import _values
from lancelet.exceptions import InvalidInputError, NotFoundError

# ------------------------------------------------------------ comparing


def _sections(uri: str) -> dict:
    """TileDB's description of the schema at `uri` as tiledb-py loads it,
    cut into its sections ("array", "dimension <name>", "attribute <name>")."""
    text = tiledb.ArraySchema.load(uri)._dump()
    out, key = {}, "array"
    for part in re.split(r"\n(?=### )", text.strip()):
        m = re.match(r"### (\w[\w ]*) ###\n- Name: (.*)", part)
        if m:
            key = f"{m.group(1).lower()} {m.group(2)}"
        elif part.startswith("### "):
            key = part.split("\n", 1)[0].strip("# ").lower()
        out[key] = part
    return out


def lt_filters(fl) -> list:
    """A tiledb-py filter list as lancelet's filter objects (same names)."""
    out = []
    for f in fl:
        cls = getattr(lt, type(f).__name__)
        kw = {k: getattr(f, k) for k in cls._fields if k != "reinterp_dtype"}
        out.append(cls(**kw))
    return out


def _norm(v):
    """Fill values comparable with == (NaN equal to NaN)."""
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def lt_view(schema: lt.ArraySchema) -> dict:
    """Everything lancelet reports about a schema, as plain values."""
    return {
        "sparse": schema.sparse, "allows_duplicates": schema.allows_duplicates,
        "cell_order": schema.cell_order, "tile_order": schema.tile_order, "capacity": schema.capacity,
        "coords_filters": schema.coords_filters, "offsets_filters": schema.offsets_filters,
        "validity_filters": schema.validity_filters,
        "dims": [(d.name, d.tiledb_type, d.domain, d.tile, d.filters, d.dtype) for d in schema.dims],
        "attrs": [(a.name, a.tiledb_type, a.cell_val_num, a.var, a.nullable, _norm(a.fill), a.filters, a.dtype)
                  for a in schema.attrs],
        "arrow": schema.arrow_schema,
    }


def assert_reports_like_tiledb(uri: str) -> None:
    """lancelet's report of the schema at `uri` equals tiledb-py's: every
    filter list (dimensions included), orders, capacity, domains, tiles,
    and each fill value tiledb-py can give."""
    got = lt.open_array(uri).schema
    want = tiledb.ArraySchema.load(uri)
    assert got.sparse == want.sparse and got.capacity == want.capacity
    assert (got.cell_order, got.tile_order) == (want.cell_order, want.tile_order)
    assert got.coords_filters == lt_filters(want.coords_filters)
    assert got.offsets_filters == lt_filters(want.offsets_filters)
    assert got.validity_filters == lt_filters(want.validity_filters)
    for i, d in enumerate(got.dims):
        w = want.domain.dim(i)
        assert d.filters == lt_filters(w.filters), f"dimension {d.name}"
        if not w.isvar:
            lo, hi = (x.astype("int64").item() if isinstance(x, np.datetime64) else x.item() for x in w.domain)
            assert d.domain == (lo, hi), f"dimension {d.name}"
            t = w.tile
            assert d.tile == (t.astype("int64").item() if isinstance(t, np.timedelta64) else t.item()), d.name
    for i, a in enumerate(got.attrs):
        w = want.attr(i)
        assert (a.name, a.nullable, a.var) == (w.name, w.isnullable, w.isvar)
        assert a.filters == lt_filters(w.filters), f"attribute {a.name}"
        # tiledb-py gives no fill for nullable attributes, and crashes or
        # fails converting the fill of var-sized numbers.
        if not w.isnullable and (not w.isvar or a.tiledb_type in ("CHAR", "BLOB", "STRING_ASCII", "STRING_UTF8")):
            mine = _values(a.tiledb_type, a.fill if isinstance(a.fill, list) else [a.fill])
            assert mine == np.asarray(w._fill).tobytes(), f"attribute {a.name} fill"


def assert_same_schema(ours: str, theirs: str) -> None:
    """lancelet's array `ours` and tiledb-py's `theirs`, made from the same
    arguments, hold the same schema, as both libraries see it."""
    a, b = _sections(ours), _sections(theirs)
    assert list(a) == list(b)
    for key in b:
        assert a[key] == b[key], f"{key}: lancelet's\n{a[key]}\ntiledb-py's\n{b[key]}"
    assert schema_bytes(ours) == schema_bytes(theirs)
    assert lt_view(lt.open_array(ours).schema) == lt_view(lt.open_array(theirs).schema)
    assert_reports_like_tiledb(theirs)
    assert_reports_like_tiledb(ours)


def create_twins(tmp_path, name, build) -> tuple:
    """`build(lib)` gives an ArraySchema of either library; creates both
    arrays and returns (lancelet uri, tiledb-py uri)."""
    ours, theirs = str(tmp_path / f"{name}_lancelet"), str(tmp_path / f"{name}_tiledb")
    with warnings.catch_warnings():
        # tiledb-py's coords_filters and var=True on fixed-size dtypes
        warnings.simplefilter("ignore", DeprecationWarning)
        tiledb.Array.create(theirs, build(tiledb))
    lt.create_array(ours, build(lt))
    return ours, theirs


# ------------------------------------------------------------ attributes

_NUMBERS = [("int8", np.int8, pa.int8()), ("int16", np.int16, pa.int16()), ("int32", np.int32, pa.int32()),
            ("int64", np.int64, pa.int64()), ("uint8", np.uint8, pa.uint8()), ("uint16", np.uint16, pa.uint16()),
            ("uint32", np.uint32, pa.uint32()), ("uint64", np.uint64, pa.uint64()),
            ("float32", np.float32, pa.float32()), ("float64", np.float64, pa.float64()),
            ("bool", np.bool_, pa.bool_())]
_NUMBERS += [(f"datetime_{u}", f"datetime64[{u}]", pa.timestamp(u)) for u in ("s", "ms", "us", "ns")]


def _attr_cases() -> list:
    """(id, tiledb-py Attr arguments, [lancelet Attr arguments that mean
    the same]): every datatype lancelet writes, fixed, n values per cell
    and var-sized, with the spellings lancelet accepts."""
    cases = []
    for name, np_t, pa_t in _NUMBERS:
        code = np.dtype(np_t).str
        cases.append((name, dict(dtype=np_t), [dict(dtype=np_t), dict(dtype=pa_t)]))
        cases.append((f"{name}_x2", dict(dtype=np.dtype(f"{code},{code}")),
                      [dict(dtype=np.dtype(f"{code},{code}")), dict(dtype=pa.list_(pa_t, 2))]))
        cases.append((f"{name}_var", dict(dtype=np_t, var=True),
                      [dict(dtype=np_t, var=True), dict(dtype=pa.list_(pa_t)), dict(dtype=pa.large_list(pa_t))]))
    cases += [
        ("utf8", dict(dtype=str), [dict(dtype=str), dict(dtype=pa.string()), dict(dtype=pa.large_string())]),
        ("ascii", dict(dtype="ascii"), [dict(dtype="ascii")]),
        ("blob_var", dict(dtype="blob"), [dict(dtype="blob")]),
        ("blob_fixed", dict(dtype="blob", var=False), [dict(dtype="blob", var=False)]),
        ("char_var", dict(dtype=bytes), [dict(dtype=bytes), dict(dtype=pa.binary()), dict(dtype=pa.large_binary()),
                                         dict(dtype="S0")]),
        ("char_1", dict(dtype="S1"), [dict(dtype="S1"), dict(dtype=pa.binary(1))]),
        ("char_3", dict(dtype="S3"), [dict(dtype="S3"), dict(dtype=pa.binary(3))]),
        # Explicit fills go through unchanged.
        ("int32_fill", dict(dtype=np.int32, fill=7), [dict(dtype=np.int32, fill=7)]),
        ("float64_fill", dict(dtype=np.float64, fill=-1.5), [dict(dtype=np.float64, fill=-1.5)]),
        ("utf8_fill", dict(dtype=str, fill="né"), [dict(dtype=str, fill="né")]),
        ("char_var_fill", dict(dtype=bytes, fill=b"zz"), [dict(dtype=bytes, fill=b"zz")]),
        ("datetime_ms_fill", dict(dtype="datetime64[ms]", fill=np.datetime64(5, "ms")),
         [dict(dtype="datetime64[ms]", fill=np.datetime64(5, "ms"))]),
        ("bool_fill", dict(dtype=np.bool_, fill=True), [dict(dtype=np.bool_, fill=True)]),
        ("int32_var_fill", dict(dtype=np.int32, var=True, fill=3), [dict(dtype=pa.list_(pa.int32()), fill=3)]),
        # tiledb-py shapes a fill through a numpy array of the dtype: one
        # number fills a whole cell, bytes are padded or cut to the cell,
        # an empty string is one zero byte.
        ("int32_x2_fill", dict(dtype=np.dtype("i4,i4"), fill=7), [dict(dtype=pa.list_(pa.int32(), 2), fill=7)]),
        ("float64_x2_fill", dict(dtype=np.dtype("f8,f8"), fill=(1.5, 2.5)),
         [dict(dtype=np.dtype("f8,f8"), fill=(1.5, 2.5)), dict(dtype=pa.list_(pa.float64(), 2), fill=[1.5, 2.5])]),
        ("char_3_short_fill", dict(dtype="S3", fill=b"ab"), [dict(dtype="S3", fill=b"ab")]),
        ("char_3_long_fill", dict(dtype="S3", fill=b"abcd"), [dict(dtype=pa.binary(3), fill=b"abcd")]),
        ("utf8_empty_fill", dict(dtype=str, fill=""), [dict(dtype=str, fill="")]),
        ("char_var_empty_fill", dict(dtype=bytes, fill=b""), [dict(dtype=pa.binary(), fill=b"")]),
        ("blob_empty_fill", dict(dtype="blob", fill=b""), [dict(dtype="blob", fill=b"")]),
        ("blob_fixed_empty_fill", dict(dtype="blob", var=False, fill=b""), [dict(dtype="blob", var=False, fill=b"")]),
        ("ascii_fill", dict(dtype="ascii", fill="xy"), [dict(dtype="ascii", fill="xy")]),
        # var=True makes any type var-sized (tiledb-py warns for S3).
        ("char_3_var", dict(dtype="S3", var=True), [dict(dtype="S3", var=True), dict(dtype=pa.binary(3), var=True)]),
        ("int32_x2_var", dict(dtype=np.dtype("i4,i4"), var=True), [dict(dtype=pa.list_(pa.int32(), 2), var=True)]),
    ]
    return cases


ATTR_CASES = _attr_cases()


@pytest.mark.parametrize("nullable", [False, True], ids=["plain", "nullable"])
@pytest.mark.parametrize("case", ATTR_CASES, ids=[c[0] for c in ATTR_CASES])
def test_attribute_defaults_match_tiledb(tmp_path, case, nullable):
    """Every datatype x fixed / n values / var x nullable, in a dense and a
    sparse array with every other argument left out."""
    _, t_kw, l_kws = case
    for sparse in (False, True):
        for i, l_kw in enumerate(l_kws):
            def build(lib, l_kw=l_kw, sparse=sparse):
                kw = t_kw if lib is tiledb else l_kw
                dim = lib.Dim(name="d", domain=(0, 99), dtype=np.int64)
                return lib.ArraySchema(domain=lib.Domain(dim), sparse=sparse,
                                       attrs=[lib.Attr(name="a", nullable=nullable, **kw)])
            ours, theirs = create_twins(tmp_path, f"{sparse}_{i}", build)
            assert_same_schema(ours, theirs)


# ------------------------------------------------------------ dimensions


def _dt(v, unit="ms"):
    return np.datetime64(v, unit)


# (id, tiledb-py Dim arguments, [lancelet Dim arguments], a tile extent
# to give, sparse only)
DIM_CASES = [
    ("int8", dict(dtype=np.int8, domain=(-10, 20)), [dict(dtype=np.int8, domain=(-10, 20))], 3, False),
    ("int16", dict(dtype=np.int16, domain=(-300, 300)), [dict(dtype=pa.int16(), domain=(-300, 300))], 7, False),
    ("int32", dict(dtype=np.int32, domain=(5, 5)), [dict(dtype=np.int32, domain=(5, 5))], 1, False),
    # The largest range an int64 extent holds: 2**63 - 1 values.
    ("int64", dict(dtype=np.int64, domain=(-(2**62), 2**62 - 2)), [dict(dtype=np.int64, domain=(-(2**62), 2**62 - 2))],
     2**40, False),
    # (TileDB's dump prints uint8 values as characters, which tiledb-py
    # decodes as UTF-8: below 128.)
    ("uint8", dict(dtype=np.uint8, domain=(3, 100)), [dict(dtype=np.uint8, domain=(3, 100))], 4, False),
    ("uint16", dict(dtype=np.uint16, domain=(0, 65534)), [dict(dtype=np.uint16, domain=(0, 65534))], 100, False),
    ("uint32", dict(dtype=np.uint32, domain=(7, 10**9)), [dict(dtype=np.uint32, domain=(7, 10**9))], 1000, False),
    ("uint64", dict(dtype=np.uint64, domain=(0, 2**64 - 2)), [dict(dtype=np.uint64, domain=(0, 2**64 - 2))],
     2**40, False),
    ("uint64_default", dict(domain=(1, 1000)), [dict(domain=(1, 1000))], 10, False),
    ("float32", dict(dtype=np.float32, domain=(0.1, 0.3)), [dict(dtype=np.float32, domain=(0.1, 0.3))], 0.05, True),
    ("float64", dict(dtype=np.float64, domain=(-1.5, 2.25)), [dict(dtype=pa.float64(), domain=(-1.5, 2.25))], 0.5, True),
    ("float64_point", dict(dtype=np.float64, domain=(1.0, 1.0)), [dict(dtype=np.float64, domain=(1.0, 1.0))], 0.25,
     True),
    ("ascii", dict(dtype="ascii", var=True), [dict(dtype="ascii"), dict(dtype=str)], None, True),
] + [
    (f"datetime_{u}", dict(dtype=f"datetime64[{u}]", domain=(_dt(-5, u), _dt(10**6, u))),
     [dict(dtype=f"datetime64[{u}]", domain=(_dt(-5, u), _dt(10**6, u))),
      dict(dtype=pa.timestamp(u), domain=(_dt(-5, u), _dt(10**6, u)))], np.timedelta64(1000, u), False)
    for u in ("s", "ms", "us", "ns")
]


@pytest.mark.parametrize("with_tile", [False, True], ids=["no_tile", "tile"])
@pytest.mark.parametrize("case", DIM_CASES, ids=[c[0] for c in DIM_CASES])
def test_dimension_defaults_match_tiledb(tmp_path, case, with_tile):
    """Every dimension datatype, with and without a tile extent (TileDB
    gives a dimension without one its whole domain, in sparse arrays too),
    next to a dimension with filters of its own."""
    _, t_kw, l_kws, tile, sparse_only = case
    if with_tile and tile is None:
        pytest.skip("string dimensions have no tile extent")
    for sparse in ((True,) if sparse_only else (False, True)):
        for i, l_kw in enumerate(l_kws):
            def build(lib, l_kw=l_kw, sparse=sparse):
                kw = dict(t_kw if lib is tiledb else l_kw)
                x = lib.Dim(name="x", **(dict(kw, tile=tile) if with_tile else kw))
                # Dense arrays need one type for every dimension.
                y_kw = dict(dtype=np.int32, domain=(0, 9), tile=5) if sparse else dict(kw, tile=tile)
                y = lib.Dim(name="y", filters=[lib.GzipFilter(3)], **y_kw)
                return lib.ArraySchema(domain=lib.Domain(x, y), sparse=sparse, attrs=[lib.Attr(name="a", dtype=np.int32)])
            ours, theirs = create_twins(tmp_path, f"{sparse}_{i}", build)
            assert_same_schema(ours, theirs)


def test_default_tile_extent_that_does_not_fit_the_type_is_refused(tmp_path):
    """TileDB refuses a missing tile extent on a domain of the type's whole
    range and silently wraps one that does not fit the type (int8 -100..100
    gets -55, with which its own dense writes fail); lancelet refuses both,
    naming the dimension, and writes nothing."""
    for dtype, dom in ((np.int8, (-100, 100)), (np.int64, (-(2**63), 2**63 - 1)), (np.int16, (-(2**15), 2**15 - 2))):
        for sparse in (False, True):
            uri = str(tmp_path / f"{np.dtype(dtype).name}_{sparse}")
            schema = lt.ArraySchema(domain=lt.Domain(lt.Dim("x", domain=dom, dtype=dtype)), sparse=sparse,
                                    attrs=[lt.Attr("a", dtype=np.int32)])
            with pytest.raises(InvalidInputError, match="x"):
                lt.create_array(uri, schema)
            with pytest.raises(NotFoundError):
                lt.open_array(uri)


# ------------------------------------------------------------ array arguments

ARRAY_CASES = [
    ("defaults", {}),
    ("capacity", dict(capacity=77)),
    ("col_major", dict(cell_order="col-major", tile_order="col-major")),
    ("mixed_orders", dict(cell_order="row-major", tile_order="col-major")),
    ("duplicates", dict(allows_duplicates=True)),
    ("no_offsets_validity_filters", dict(offsets_filters=[], validity_filters=[])),
    ("offsets_validity_filters", dict(offsets_filters=["LZ4Filter"], validity_filters=["GzipFilter"])),
    # tiledb-py makes coords_filters every dimension's filters (even over a
    # dimension's own) and stores no coordinate filters of the array.
    ("coords_filters", dict(coords_filters=["LZ4Filter"])),
    ("no_coords_filters", dict(coords_filters=[])),
]


@pytest.mark.parametrize("case", ARRAY_CASES, ids=[c[0] for c in ARRAY_CASES])
def test_array_defaults_match_tiledb(tmp_path, case):
    _, kw = case
    for sparse in (False, True):
        if sparse is False and "allows_duplicates" in kw:
            continue

        def build(lib, sparse=sparse):
            args = {k: ([getattr(lib, f)() for f in v] if k.endswith("filters") else v) for k, v in kw.items()}
            dims = [lib.Dim(name="x", domain=(0, 99), tile=10, dtype=np.int64),
                    lib.Dim(name="y", domain=(1, 4), dtype=np.int64, filters=[lib.ByteShuffleFilter()])]
            attrs = [lib.Attr(name="a", dtype=np.float32), lib.Attr(name="s", dtype=str, nullable=True)]
            return lib.ArraySchema(domain=lib.Domain(*dims), attrs=attrs, sparse=sparse, **args)
        ours, theirs = create_twins(tmp_path, str(sparse), build)
        assert_same_schema(ours, theirs)


# Every filter with its arguments left out, on a type it takes.
FILTER_CASES = [
    ("GzipFilter", np.int32), ("ZstdFilter", np.int32), ("LZ4Filter", np.int32), ("Bzip2Filter", np.int32),
    ("RleFilter", np.int32), ("RleFilter", str), ("DictionaryFilter", str), ("DeltaFilter", np.int32),
    ("DoubleDeltaFilter", np.int32), ("BitWidthReductionFilter", np.int32), ("PositiveDeltaFilter", np.int32),
    ("ByteShuffleFilter", np.int32), ("BitShuffleFilter", np.int32), ("ChecksumMD5Filter", np.int32),
    ("ChecksumSHA256Filter", np.int32), ("XORFilter", np.int32), ("FloatScaleFilter", np.float64),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=[f"{f}-{np.dtype(t).name}" for f, t in FILTER_CASES])
def test_filter_defaults_match_tiledb(tmp_path, case):
    """A filter made without arguments is tiledb-py's (BitWidthReduction's
    window 256, PositiveDelta's 1024, levels -1, float scale 1/0/8), on an
    attribute, as the coordinate, offsets and validity filters."""
    fname, dtype = case
    assert getattr(lt, fname)() == lt_filters([getattr(tiledb, fname)()])[0]

    def build(lib):
        f = getattr(lib, fname)
        var = dtype is str
        return lib.ArraySchema(
            domain=lib.Domain(lib.Dim(name="d", domain=(0, 99), tile=10, dtype=np.int64)), sparse=True,
            attrs=[lib.Attr(name="a", dtype=dtype, nullable=True, filters=[f()])],
            **({} if var or fname in ("FloatScaleFilter", "DictionaryFilter") else
               dict(coords_filters=[f()], offsets_filters=[f()], validity_filters=[f()])))
    ours, theirs = create_twins(tmp_path, "f", build)
    assert_same_schema(ours, theirs)


# ------------------------------------------------------------ reading


@pytest.mark.parametrize("name", NAMES)
def test_fixture_schemas_report_like_tiledb(name):
    """The fixtures tiledb-py wrote: dimensions stored without filters
    (dense_none: an empty list) report the coordinate filters."""
    assert_reports_like_tiledb(str(FIXTURES / name))


def test_dimension_without_filters_reports_coords_filters(tmp_path):
    """A schema whose coordinate filters are not the default and whose
    dimensions have none of their own (tiledb-py cannot create it: its
    coords_filters become the dimensions'; lancelet creates it from a
    schema as read back, which keeps the coordinate filters)."""
    uri = str(tmp_path / "a")
    dims = [lt.Dim("x", domain=(0, 99), tile=10, dtype=np.int64),
            lt.Dim("y", domain=(0, 9), tile=5, dtype=np.int64, filters=[lt.GzipFilter(2)])]
    schema = lt.ArraySchema(domain=lt.Domain(*dims), attrs=[lt.Attr("a", dtype=np.int32)], sparse=True,
                            coords_filters=[lt.LZ4Filter(4)], version=22)
    lt.create_array(uri, schema)
    assert_reports_like_tiledb(uri)
    got = lt.open_array(uri).schema
    assert [d.filters for d in got.dims] == [[lt.LZ4Filter(4)], [lt.GzipFilter(2)]]
    assert got.coords_filters == [lt.LZ4Filter(4)]
    # The coordinates are written and read through those filters.
    lt.write(uri, {"x": np.array([3, 50]), "y": np.array([1, 2]), "a": np.array([7, 8], np.int32)}, timestamp=1)
    with tiledb.open(uri) as A:
        r = A.query(order="G")[:]
    assert r["x"].tolist() == [3, 50] and r["a"].tolist() == [7, 8]
    assert lt.open_array(uri).read()["x"].to_pylist() == [3, 50]


@pytest.mark.parametrize("name", ["dense_none", "sparse_zstd", "dense_shuffle_zstd"])
def test_schema_read_back_recreates_like_tiledb(tmp_path, name):
    """A schema read back and created again: tiledb-py's loaded schema
    carries the resolved dimension filters into the new array, and so
    does lancelet's."""
    src = str(FIXTURES / name)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    tiledb.Array.create(theirs, tiledb.ArraySchema.load(src))
    lt.create_array(ours, lt.open_array(src).schema)
    assert_same_schema(ours, theirs)
