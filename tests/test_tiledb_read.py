"""lancelet.tiledb reads TileDB arrays exactly as tiledb-py 0.36.1 does.

Two sources of truth: the fixture arrays in tests/fixtures/tiledb (written by
tiledb-py, with the expected.json read back from it and make_fixtures.py
that made both), and arrays tiledb-py writes during the test, whose reads we
compare cell for cell.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import tiledb

import lancelet.tiledb as lt
from lancelet.exceptions import CorruptFileError, InvalidInputError, NotFoundError, UnsupportedError

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tiledb"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
NAMES = sorted(EXPECTED)


# ------------------------------------------------------------ fixture arrays


@pytest.mark.parametrize("name", NAMES)
def test_fixture_reads_match_expected(name):
    arr = lt.open_array(str(FIXTURES / name))
    t = arr.read(order="C")
    exp = EXPECTED[name]
    assert t.column_names == ["d", "a_int", "a_str", "a_null", "a_nstr"]
    for col in ("d", "a_int", "a_str", "a_null", "a_nstr"):
        assert t[col].to_pylist() == exp[col], col
    assert [int(v) for v in t["a_null"].is_valid().to_pylist()] == exp["a_null_validity_raw"]


@pytest.mark.parametrize("name", NAMES)
def test_fixture_schema_and_fragments(name):
    arr = lt.open_array(str(FIXTURES / name))
    s = arr.schema
    assert s.sparse == name.startswith("sparse")
    assert s.version == 22
    assert [d.name for d in s.dims] == ["d"]
    assert s.dims[0].domain == (1, 8) and s.dims[0].tile == 4
    assert [a.name for a in s.attrs] == ["a_int", "a_str", "a_null", "a_nstr"]
    assert [a.dtype for a in s.attrs] == [pa.int32(), pa.large_string(), pa.float64(), pa.large_string()]
    assert [a.nullable for a in s.attrs] == [False, False, True, True]
    kind = name.split("_", 1)[1]
    want = {
        "none": [],
        "zstd": [lt.ZstdFilter(3)],
        "gzip": [lt.GzipFilter(6)],
        "lz4": [lt.LZ4Filter(-1)],
        "shuffle_zstd": [lt.ByteShuffleFilter(), lt.ZstdFilter(3)],
    }[kind]
    assert s.attrs[0].filters == want
    assert s.offsets_filters == want
    frags = arr.fragments()
    assert [f.timestamp_range for f in frags] == [(1, 1), (2, 2)]
    assert all(f.version == 22 and f.sparse == s.sparse for f in frags)
    if s.sparse:
        assert [f.cell_num for f in frags] == [6, 2]
        assert [f.nonempty_domain for f in frags] == [((1, 8),), ((2, 5),)]
    else:
        # dense cell_num counts whole space tiles (extent 4)
        assert [f.cell_num for f in frags] == [8, 4]
        assert [f.nonempty_domain for f in frags] == [((1, 8),), ((3, 4),)]
    assert arr.nonempty_domain() == ((1, 8),)


@pytest.mark.parametrize("name", ["dense_zstd", "sparse_zstd"])
def test_fixture_time_travel(name):
    first = lt.open_array(str(FIXTURES / name), timestamp=1)
    assert len(first.fragments()) == 1
    t = first.read(order="C")
    if name.startswith("dense"):
        assert t["a_int"].to_pylist() == [10, 20, 30, 40, 50, 60, 70, 80]
        assert t["a_str"].to_pylist() == ["a", "bb", "", "dddd", "héllo", "f", "gg", "hhh"]
    else:
        assert t["d"].to_pylist() == [1, 3, 4, 6, 7, 8]
    second_only = lt.open_array(str(FIXTURES / name), timestamp=(2, 2))
    t = second_only.read(order="C")
    if name.startswith("dense"):
        # cells outside the one fragment are fills; a_int's fill is INT32_MIN
        assert t["a_int"].to_pylist() == [-(2**31)] * 2 + [300, 400] + [-(2**31)] * 4
        assert t["a_null"].to_pylist()[2:4] == [33.0, None]
    else:
        assert t["d"].to_pylist() == [2, 5]
    assert lt.open_array(str(FIXTURES / name), timestamp=0).nonempty_domain() is None


def test_fixture_subarrays_and_projection():
    dense = lt.open_array(str(FIXTURES / "dense_gzip"))
    t = dense.read(subarray=[(2, 5)], attrs=["a_str"])
    assert t.column_names == ["d", "a_str"]
    assert t["d"].to_pylist() == [2, 3, 4, 5]
    assert t["a_str"].to_pylist() == ["bb", "X", "YY", "héllo"]
    t = dense.read(subarray=[[(1, 1), (7, 8)]], attrs=["a_int"], dims=False)
    assert t.column_names == ["a_int"]
    assert t["a_int"].to_pylist() == [10, 70, 80]
    sparse = lt.open_array(str(FIXTURES / "sparse_lz4"))
    t = sparse.read(subarray=[[(2, 3), (8, 8)]], attrs=["a_int", "a_nstr"])
    assert t["d"].to_pylist() == [2, 3, 8]
    assert t["a_int"].to_pylist() == [200, 30, 80]
    assert t["a_nstr"].to_pylist() == [None, "rr", None]


def test_bad_input_raises_typed_errors(tmp_path):
    arr = lt.open_array(str(FIXTURES / "dense_none"))
    with pytest.raises(InvalidInputError):
        arr.read(subarray=[(0, 3)])  # outside the domain
    with pytest.raises(InvalidInputError):
        arr.read(subarray=[(5, 3)])
    with pytest.raises(InvalidInputError):
        arr.read(attrs=["nope"])
    with pytest.raises(InvalidInputError):
        arr.read(order="X")
    with pytest.raises(NotFoundError):
        lt.open_array(str(tmp_path / "missing"))


def _copy(name, tmp_path):
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    for p in dst.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    return dst


@pytest.mark.parametrize("name", ["dense_none", "dense_zstd", "sparse_gzip", "sparse_lz4", "dense_shuffle_zstd"])
def test_corrupt_data_tiles_are_corrupt_file_errors(tmp_path, name):
    dst = _copy(name, tmp_path)
    frag = sorted((dst / "__fragments").iterdir())[0]
    target = frag / "a0.tdb"
    data = bytearray(target.read_bytes())
    target.write_bytes(bytes(data[: len(data) // 2]))  # truncated
    with pytest.raises(CorruptFileError, match="a0.tdb"):
        lt.open_array(str(dst)).read()


def test_corrupt_metadata_and_schema(tmp_path):
    dst = _copy("sparse_zstd", tmp_path)
    frag = sorted((dst / "__fragments").iterdir())[0]
    meta = frag / "__fragment_metadata.tdb"
    b = bytearray(meta.read_bytes())
    b[-8:] = (10**9).to_bytes(8, "little")  # footer length past the file
    meta.write_bytes(bytes(b))
    with pytest.raises(CorruptFileError, match="__fragment_metadata"):
        lt.open_array(str(dst))
    schema = next((dst / "__schema").iterdir())
    b = bytearray(schema.read_bytes())
    b[0] = 99  # generic tile version
    schema.write_bytes(bytes(b))
    with pytest.raises(UnsupportedError, match="version 99"):
        lt.open_array(str(dst))


def test_byte_flips_never_panic(tmp_path):
    """Flip each byte of a small fragment's files: every outcome is a read
    or a typed lancelet error, never an internal error or a crash."""
    from lancelet.exceptions import InternalError, LanceletError

    dst = _copy("sparse_zstd", tmp_path)
    frag = sorted((dst / "__fragments").iterdir())[1]
    for f in sorted(frag.iterdir()):
        orig = f.read_bytes()
        for i in range(0, len(orig), max(1, len(orig) // 40)):
            b = bytearray(orig)
            b[i] ^= 0xFF
            f.write_bytes(bytes(b))
            try:
                lt.open_array(str(dst)).read()
            except InternalError:
                raise
            except LanceletError:
                pass
        f.write_bytes(orig)


# ------------------------------------------------ interop with tiledb-py


def _tiledb_read(uri, sparse, **kw):
    with tiledb.open(uri, **kw) as A:
        if sparse:
            return A.query(order="G")[:]
        return A[:]


def _assert_same(ours: pa.Table, theirs: dict, names):
    for n in names:
        want = theirs[n]
        got = ours[n]
        if isinstance(want, np.ma.MaskedArray):
            mask = np.ma.getmaskarray(want)
            assert got.is_null().to_pylist() == mask.tolist(), n
            want = want.data
        wl = [w.decode() if isinstance(w, bytes) else w for w in want.tolist()]
        gl = got.to_pylist()
        if pa.types.is_floating(got.type):
            np.testing.assert_array_equal(np.array(gl, dtype=float), np.array(wl, dtype=float), err_msg=n)
        else:
            assert gl == wl, n


FILTER_CASES = {
    "none": [],
    "gzip": [tiledb.GzipFilter(level=9)],
    "zstd": [tiledb.ZstdFilter(level=-1)],
    "lz4": [tiledb.LZ4Filter()],
    "bzip2": [tiledb.Bzip2Filter(level=5)],
    "rle": [tiledb.RleFilter()],
    "byteshuffle_lz4": [tiledb.ByteShuffleFilter(), tiledb.LZ4Filter()],
    "bitwidth": [tiledb.BitWidthReductionFilter(window=64)],
    # PositiveDeltaFilter: tiledb-py 0.36.1 itself crashes (SIGSEGV) writing
    # this table with it, so it has no interop case yet.
    "delta": [tiledb.DeltaFilter()],
    "double_delta": [tiledb.DoubleDeltaFilter()],
    "xor_zstd": [tiledb.XORFilter(), tiledb.ZstdFilter()],
    "md5": [tiledb.ChecksumMD5Filter()],
    "sha256_gzip": [tiledb.GzipFilter(), tiledb.ChecksumSHA256Filter()],
}

INT_ATTRS = ("i8", np.int8), ("u16", np.uint16), ("i32", np.int32), ("i64", np.int64), ("u64", np.uint64)


def _int_data(rng, n):
    out = {}
    for name, dt in INT_ATTRS:
        info = np.iinfo(dt)
        lo, hi = max(info.min, -(2**40)), min(info.max, 2**40)
        base = rng.integers(lo // 2, hi // 2, dtype=np.int64).astype(dt)
        steps = rng.integers(-3, 40, size=n).astype(dt) if info.min < 0 else rng.integers(0, 40, size=n).astype(dt)
        out[name] = (base + np.cumsum(steps, dtype=dt)).astype(dt)
    return out


@pytest.mark.parametrize("case", sorted(FILTER_CASES))
@pytest.mark.parametrize("sparse", [False, True])
def test_interop_filters(tmp_path, case, sparse):
    rng = np.random.default_rng(abs(hash((case, sparse))) % 2**32)
    n = 300
    fl = tiledb.FilterList(FILTER_CASES[case])
    dim = tiledb.Dim(name="x", domain=(0, n - 1), tile=64, dtype=np.int64, filters=fl if sparse else None)
    attrs = [tiledb.Attr(name=nm, dtype=dt, filters=fl) for nm, dt in INT_ATTRS]
    ints_only = case in ("delta", "double_delta", "bitwidth")
    attrs += [
        tiledb.Attr(name="f64", dtype=np.float64, filters=None if ints_only else fl),
        tiledb.Attr(name="s", dtype=str, var=True, filters=None if ints_only or case == "rle" else fl),
    ]
    schema = tiledb.ArraySchema(
        domain=tiledb.Domain(dim), attrs=attrs, sparse=sparse, capacity=50,
        offsets_filters=fl, coords_filters=fl if sparse else None,
    )
    uri = str(tmp_path / "arr")
    tiledb.Array.create(uri, schema)
    data = _int_data(rng, n)
    data["f64"] = rng.normal(size=n)
    data["s"] = np.array(["v%d" % rng.integers(0, 10**rng.integers(0, 6)) for _ in range(n)], dtype=object)
    with tiledb.open(uri, "w", timestamp=1) as A:
        if sparse:
            A[np.arange(n)] = data
        else:
            A[:] = data
    names = [nm for nm, _ in INT_ATTRS] + ["f64", "s"]
    theirs = _tiledb_read(uri, sparse)
    ours = lt.open_array(uri).read(order="C")
    _assert_same(ours, theirs, ["x"] * sparse + names)


def test_interop_float_scale_and_bitshuffle(tmp_path):
    uri = str(tmp_path / "fs")
    dim = tiledb.Dim(name="x", domain=(0, 99), tile=100, dtype=np.int32)
    attrs = [
        tiledb.Attr(name="f", dtype=np.float64,
                    filters=tiledb.FilterList([tiledb.FloatScaleFilter(0.5, 10.0, 4), tiledb.ZstdFilter()])),
        tiledb.Attr(name="b", dtype=np.int32, filters=tiledb.FilterList([tiledb.BitShuffleFilter()])),
    ]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=attrs))
    with tiledb.open(uri, "w") as A:
        A[:] = {"f": np.linspace(0, 40, 100), "b": np.arange(100, dtype=np.int32)}
    arr = lt.open_array(uri)
    theirs = _tiledb_read(uri, False)
    _assert_same(arr.read(attrs=["f"]), theirs, ["f"])
    _assert_same(arr.read(attrs=["b"]), theirs, ["b"])


def test_interop_dense_2d_fragments_orders_and_time_travel(tmp_path):
    uri = str(tmp_path / "d2")
    dom = tiledb.Domain(
        tiledb.Dim(name="r", domain=(1, 10), tile=3, dtype=np.int32),
        tiledb.Dim(name="c", domain=(0, 11), tile=4, dtype=np.int32),
    )
    for cell_order, tile_order in [("row-major", "row-major"), ("col-major", "row-major"), ("row-major", "col-major")]:
        u = f"{uri}_{cell_order}_{tile_order}"
        schema = tiledb.ArraySchema(
            domain=dom, cell_order=cell_order, tile_order=tile_order,
            attrs=[tiledb.Attr(name="v", dtype=np.float32, filters=tiledb.FilterList([tiledb.ZstdFilter()])),
                   tiledb.Attr(name="n", dtype=np.uint8)],
        )
        tiledb.Array.create(u, schema)
        rng = np.random.default_rng(7)
        with tiledb.open(u, "w", timestamp=10) as A:
            A[1:11, 0:12] = {"v": rng.normal(size=(10, 12)).astype(np.float32),
                             "n": rng.integers(0, 200, size=(10, 12)).astype(np.uint8)}
        with tiledb.open(u, "w", timestamp=20) as A:
            A[2:6, 0:3] = {"v": np.full((4, 3), 7.5, np.float32), "n": np.arange(12, dtype=np.uint8).reshape(4, 3)}
        with tiledb.open(u, "w", timestamp=30) as A:
            A[9:10, 5:6] = {"v": np.full((1, 1), -1, np.float32), "n": np.zeros((1, 1), np.uint8)}
        for ts in (None, 10, 20, (15, 30)):
            with tiledb.open(u, timestamp=ts) as A:
                for sub in [(slice(1, 11), slice(0, 12)), (slice(2, 10), slice(3, 9))]:
                    theirs = A.query(order="C")[sub]
                    lo_hi = [(s.start, s.stop - 1) for s in sub]
                    ours = lt.open_array(u, timestamp=ts).read(subarray=lo_hi, order="C")
                    for nm in ("v", "n"):
                        want = theirs[nm]
                        got = ours[nm]
                        flat = want.reshape(-1)
                        if isinstance(flat, np.ma.MaskedArray):
                            assert got.is_null().to_pylist() == np.ma.getmaskarray(flat).tolist()
                            flat = flat.filled(0)
                            got = got.fill_null(0)
                        # NaN fills compare equal here
                        np.testing.assert_array_equal(np.array(got.to_pylist(), dtype=flat.dtype), flat,
                                                      err_msg=str((u, ts, sub, nm)))
                    f_order = lt.open_array(u, timestamp=ts).read(subarray=lo_hi, order="F")
                    np.testing.assert_array_equal(np.array(f_order["v"].to_pylist(), dtype=np.float32),
                                                  theirs["v"].T.reshape(-1))


def test_interop_sparse_2d_strings_duplicates_and_types(tmp_path):
    uri = str(tmp_path / "s2")
    dom = tiledb.Domain(
        tiledb.Dim(name="k", dtype="ascii", var=True, filters=tiledb.FilterList([tiledb.ZstdFilter()])),
        tiledb.Dim(name="t", domain=(0.0, 1000.0), tile=100.0, dtype=np.float64),
    )
    schema = tiledb.ArraySchema(
        domain=dom, sparse=True, capacity=7, cell_order="hilbert",
        attrs=[tiledb.Attr(name="i", dtype=np.int64),
               tiledb.Attr(name="ts", dtype="datetime64[ms]"),
               tiledb.Attr(name="b", dtype=np.bool_),
               tiledb.Attr(name="l", dtype=np.int32, var=True),
               tiledb.Attr(name="u", dtype=str, var=True, nullable=True)],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(3)
    keys = np.array(["k%02d" % rng.integers(0, 15) for _ in range(60)], dtype=object)
    ts = np.round(rng.uniform(0, 1000, 60), 1)
    for w, t in enumerate((5, 6)):
        with tiledb.open(uri, "w", timestamp=t) as A:
            sl = slice(0, 40) if w == 0 else slice(20, 60)
            k, x = keys[sl], ts[sl]
            n = len(k)
            A[k, x] = {"i": np.arange(n, dtype=np.int64) + 1000 * w,
                       "ts": np.arange(n).astype("datetime64[ms]") + np.timedelta64(1_700_000_000_000, "ms"),
                       "b": (np.arange(n) % 3 == 0),
                       "l": np.array([np.arange(j % 4, dtype=np.int32) for j in range(n)], dtype=object),
                       "u": np.array([None if j % 5 == 0 else "ü%d" % j for j in range(n)], dtype=object)}
    with tiledb.open(uri) as A:
        theirs = A.query(order="G").df[:]
    ours = lt.open_array(uri).read(order="C").to_pandas()
    theirs["k"] = [x.decode() if isinstance(x, bytes) else x for x in theirs["k"]]
    theirs = theirs.sort_values(["k", "t"]).reset_index(drop=True)
    ours = ours.sort_values(["k", "t"]).reset_index(drop=True)
    assert ours["k"].tolist() == theirs["k"].tolist()
    assert ours["t"].tolist() == theirs["t"].tolist()
    assert ours["i"].tolist() == theirs["i"].tolist()
    assert ours["b"].tolist() == theirs["b"].tolist()
    assert (ours["ts"].values.astype("datetime64[ms]") == theirs["ts"].values.astype("datetime64[ms]")).all()
    assert [list(x) for x in ours["l"]] == [list(x) for x in theirs["l"]]
    # tiledb-py's .df shows null strings as "": compare values, then nulls
    # against the validity we wrote (every fifth cell of each write).
    assert [x or "" for x in ours["u"]] == [x or "" for x in theirs["u"]]
    nulls = ours["u"].isna()
    assert nulls.any()
    assert (theirs["u"][nulls].fillna("") == "").all()
    sub = lt.open_array(uri).read(subarray=[("k03", "k07"), (100.0, 600.0)], attrs=["i"])
    with tiledb.open(uri) as A:
        want = A.query(order="G", attrs=["i"]).multi_index["k03":"k07", 100.0:600.0]
    assert sorted(zip(sub["k"].to_pylist(), sub["t"].to_pylist(), sub["i"].to_pylist())) == sorted(
        zip([x.decode() if isinstance(x, bytes) else x for x in want["k"].tolist()], want["t"].tolist(), want["i"].tolist())
    )
    ned = lt.open_array(uri).nonempty_domain()
    with tiledb.open(uri) as A:
        tned = A.nonempty_domain()
    assert ned[1] == tned[1]
    assert ned[0] == tuple(x.decode() if isinstance(x, bytes) else x for x in tned[0])


def test_interop_sparse_duplicates_allowed(tmp_path):
    uri = str(tmp_path / "dups")
    dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 9), tile=10, dtype=np.uint32))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, allows_duplicates=True,
                                                attrs=[tiledb.Attr(name="v", dtype=np.int16)]))
    for t in (1, 2):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array([1, 1, 5], np.uint32)] = {"v": np.array([t, 10 * t, 100 * t], np.int16)}
    ours = lt.open_array(uri).read()
    assert sorted(zip(ours["x"].to_pylist(), ours["v"].to_pylist())) == [(1, 1), (1, 2), (1, 10), (1, 20), (5, 100), (5, 200)]


def test_file_uris_name_the_directory_tiledb_names(tmp_path):
    """TileDB takes a file:// URI's path literally (`a%20b` is the directory
    `a%20b`), unlike Lance, which decodes it: lancelet reads a TileDB array
    at the directory TileDB wrote, through the same URI."""
    dom = tiledb.Domain(tiledb.Dim(name="d", domain=(0, 3), tile=4, dtype=np.int64))
    schema = tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr(name="a", dtype=np.int64)], sparse=False)
    for i, name in enumerate(["a%20b", "ü x"]):
        uri = f"file://{tmp_path}/{name}"
        tiledb.Array.create(uri, schema)
        with tiledb.open(uri, "w") as a:
            a[:] = np.arange(4, dtype=np.int64) + 10 * i
        assert (tmp_path / name).is_dir()
        assert lt.open_array(uri).read()["a"].to_pylist() == [10 * i + k for k in range(4)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a%20b", "ü x"]
