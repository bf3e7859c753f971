"""ZONEMAP and BLOOMFILTER indices against pylance 14.

* the files lancelet writes equal pylance's for the same data (schemas,
  schema metadata, every decoded column — min/max/null/NaN counts, zones,
  the bloom filters' bytes — and the null bitmap in global buffer 1), for
  each data storage version, with and without stable row ids, for every
  column type pylance takes; the manifest entries agree (type URLs,
  ``index_version``, ZONEMAP's details bytes);
* pylance uses lancelet's indices and lancelet uses pylance's (same plan
  lines, same rows as an unindexed scan);
* a seeded random history (appends, deletes, optimize_indices, compactions
  by either library) where every random filter answers as an unindexed scan
  and as pylance;
* listing, statistics, parameters and errors as pylance's.
"""
from __future__ import annotations

import datetime
import decimal
import os
import random
import re
import shutil

import pyarrow as pa
import pytest
from manifest_raw import index_entries
from test_indices import _entry_fields, assert_index_files_equal, index_files
from test_indices_random import random_filter as random_tree

import lancelet
from lancelet.exceptions import InvalidInputError
from lancelet.indices import IndexConfig

lance = pytest.importorskip("lance")
from lance.indices import IndexConfig as PlIndexConfig  # noqa: E402

pytestmark = pytest.mark.pylance


def ids(t: pa.Table) -> list:
    """The row ids of a result sorted by id (rows are told apart by id; the
    tables hold NaNs, which Table.equals never takes as equal)."""
    return sorted(t["id"].to_pylist())


def make_table(n: int, seed: int = 1, start: int = 0) -> pa.Table:
    rng = random.Random(seed)
    x = []
    for _ in range(n):
        r = rng.random()
        x.append(None if r < 0.05 else float("nan") if r < 0.08 else rng.choice([0.0, -0.0]) if r < 0.11
                 else round(rng.uniform(-100, 100), 1))
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "x": pa.array(x, pa.float64()),
        "s": pa.array([None if rng.random() < 0.07 else f"s{rng.randrange(0, 300):03d}" for _ in range(n)], pa.string()),
        "k": pa.array([None if rng.random() < 0.1 else rng.randrange(-50, 50) for _ in range(n)], pa.int32()),
    })


# (column, pylance config, lancelet config)
SPECS = [
    ("id", "ZONEMAP", 100, "id_zm"),
    ("x", "ZONEMAP", 64, "x_zm"),
    ("s", "ZONEMAP", 8192, "s_zm"),
    ("k", "BLOOMFILTER", 128, "k_bf"),
    ("s", "BLOOMFILTER", 100, "s_bf"),
    ("x", "BLOOMFILTER", 50, "x_bf"),
]


def _configs(kind, size):
    if kind == "ZONEMAP":
        p = {"rows_per_zone": size}
    else:
        p = {"number_of_items": size, "probability": 0.01}
    return PlIndexConfig(kind.lower(), p), IndexConfig(kind.lower(), p)


def build_both(tmp_path, version="2.1", stable=False, n=2500, per_file=700):
    base = tmp_path / "base"
    lance.write_dataset(make_table(n), str(base), max_rows_per_file=per_file, data_storage_version=version,
                        enable_stable_row_ids=stable)
    lance.dataset(str(base)).delete("id % 13 = 0 OR (id > 900 AND id < 1000)")
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    lds, pds = lancelet.dataset(str(ours)), lance.dataset(str(theirs))
    for col, kind, size, name in SPECS:
        pc, lc = _configs(kind, size)
        pds.create_scalar_index(col, pc, name=name)
        lds.create_scalar_index(col, lc, name=name)
    return str(ours), str(theirs)


def _details(path):
    """name -> (type_url, details value bytes) of the latest manifest's entries."""
    return {e["name"]: (e["type_url"], e["details"]) for e in index_entries(path)}


# lancelet's filters order -0.0 < 0.0 (Arrow's total order) where pylance's
# DataFusion takes them as equal: comparisons of x with a zero are checked
# against each library's own unindexed scan only.
SIGNED_ZERO = re.compile(r"x (=|!=|<|<=|>|>=|IN \() ?-?0\.0\b")

QUERIES = ["x = 0.0", "x = -0.0", "x IN (0.0, 12.5)", "id = 1200", "id IN (5, 77, 1500, 2001)", "id BETWEEN 300 AND 310", "id > 2400", "x > 50", "x <= -99",
           "x IS NULL", "x IS NOT NULL", "x = 0.5", "s = 's013'", "s IN ('s001', 's002', 's003', 's004', 's005')",
           "s IS NULL", "s < 's010'", "k = 7", "k IN (1, 2)", "k IS NULL", "k = 7 AND id < 600", "id < 20 OR k = 5",
           "x > 10 AND s = 's100'", "id = 100000", "s = 'nope'"]


@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable"])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_files_equal_pylance(tmp_path, version, stable):
    ours, theirs = build_both(tmp_path, version, stable)
    for _col, kind, _size, name in SPECS:
        assert_index_files_equal(index_files(ours, name), index_files(theirs, name), kind)
        assert _entry_fields(ours, name) == _entry_fields(theirs, name), name
    assert _details(ours) == _details(theirs)
    # both libraries answer from both indices as an unindexed scan, with the same plan line
    for flt in QUERIES:
        want = lance.dataset(theirs).to_table(filter=flt, use_scalar_index=False).sort_by("id")
        mine = lancelet.dataset(theirs).to_table(filter=flt, use_scalar_index=False).sort_by("id")
        if not SIGNED_ZERO.search(flt):
            assert ids(mine) == ids(want), flt
        for path in (ours, theirs):
            pl, ld = lance.dataset(path), lancelet.dataset(path)
            assert ids(pl.to_table(filter=flt)) == ids(want), (flt, path)
            assert ids(ld.to_table(filter=flt)) == ids(mine), (flt, path)
            if SIGNED_ZERO.search(flt):
                continue  # DataFusion shows `x = 0.0` as `x IN [-0,0]`
            pline = [ln.strip() for ln in pl.scanner(filter=flt).explain_plan().splitlines() if "ScalarIndexQuery" in ln]
            lline = [ln.strip() for ln in ld.scanner(filter=flt).explain_plan().splitlines() if "ScalarIndexQuery" in ln]
            assert lline == pline, (flt, path)


TYPED = {
    "i8": pa.array([1, -2, None, 4, 5, 6, 1, 100], pa.int8()),
    "i16": pa.array([1, -2, None, 4, 5, 6, 1, 300], pa.int16()),
    "u32": pa.array([1, 2, None, 4, 5, 6, 1, 2**31], pa.uint32()),
    "u64": pa.array([1, 2, None, 4, 5, 2**63, 1, 7], pa.uint64()),
    "f32": pa.array([1.5, -0.0, None, float("nan"), 5, 0.0, 1.5, -3], pa.float32()),
    "f64": pa.array([1.5, 0.0, None, 2.25, float("nan"), -0.0, 1e300, -1e-300], pa.float64()),
    "d32": pa.array([1, 2, None, 4, 5, 6, 19000, -5], pa.date32()),
    "d64": pa.array([86400000 * i if i != 2 else None for i in range(8)], pa.date64()),
    "ts": pa.array([1, 2, None, 4, 5, 6, 10**15, -1], pa.timestamp("us")),
    "tz": pa.array([1, 2, None, 4, 5, 6, 7, 8], pa.timestamp("ms", tz="UTC")),
    "t32": pa.array([1, 2, None, 4, 5, 6, 7, 86399], pa.time32("s")),
    "t64": pa.array([1, 2, None, 4, 5, 6, 7, 8], pa.time64("ns")),
    "bin": pa.array([b"a", b"b", None, b"", b"zz", b"a", b"\x00\xff", b"q"], pa.binary()),
    "lbin": pa.array([b"a", b"b", None, b"", b"zz", b"a", b"\x00\xff", b"q"], pa.large_binary()),
    "ls": pa.array(["a", "b", None, "", "zz", "a", "é", "q"], pa.large_string()),
    "str": pa.array(["a", "b", None, "", "zz", "a", "é", "q"], pa.string()),
}
ZONEMAP_ONLY = {
    "b": pa.array([True, False, None, True, False, True, True, True]),
    "dec": pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("2.5"), decimal.Decimal("-1"), decimal.Decimal("0"),
                     decimal.Decimal("3"), decimal.Decimal("7.25"), decimal.Decimal("-9")], pa.decimal128(10, 2)),
    "fsb": pa.array([b"aa", b"bb", None, b"cc", b"dd", b"ee", b"aa", b"zz"], pa.binary(2)),
}


def test_every_type_equals_pylance(tmp_path):
    cols = {**TYPED, **ZONEMAP_ONLY}
    base = tmp_path / "base"
    lance.write_dataset(pa.table(cols), str(base), max_rows_per_file=5)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    lds, pds = lancelet.dataset(str(ours)), lance.dataset(str(theirs))
    for c in cols:
        pds.create_scalar_index(c, PlIndexConfig("zonemap", {"rows_per_zone": 2}), name=f"{c}_zm")
        lds.create_scalar_index(c, IndexConfig("zonemap", {"rows_per_zone": 2}), name=f"{c}_zm")
        if c in TYPED:
            pds.create_scalar_index(c, PlIndexConfig("bloomfilter", {"number_of_items": 3, "probability": 0.05}),
                                    name=f"{c}_bf")
            lds.create_scalar_index(c, IndexConfig("bloomfilter", {"number_of_items": 3, "probability": 0.05}),
                                    name=f"{c}_bf")
    for c in cols:
        for suffix, kind in [("zm", "ZONEMAP"), ("bf", "BLOOMFILTER")]:
            if suffix == "bf" and c not in TYPED:
                continue
            name = f"{c}_{suffix}"
            assert_index_files_equal(index_files(str(ours), name), index_files(str(theirs), name), kind)
            assert _entry_fields(str(ours), name) == _entry_fields(str(theirs), name), name
    assert _details(str(ours)) == _details(str(theirs))
    # equality on every value of every column, both ways
    t = pa.table(cols)
    for path in (ours, theirs):
        ld = lancelet.dataset(str(path))
        for c in cols:
            for v in t[c].to_pylist():
                if v is None:
                    continue
                flt = lancelet_filter(c, v, t[c].type)
                if flt is None:
                    continue
                want = ld.to_table(filter=flt, use_scalar_index=False)
                got = ld.to_table(filter=flt)
                assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, want.to_pylist())), flt
                assert "ScalarIndexQuery" in ld.scanner(filter=flt).explain_plan(), flt


def lancelet_filter(c, v, t):
    if isinstance(v, float):
        return None if v != v else f"{c} = {v!r}"
    if isinstance(v, bool):
        return f"{c} = {'true' if v else 'false'}"
    if isinstance(v, int) and pa.types.is_integer(t):
        return f"{c} = {v}"
    if isinstance(v, str):
        return f"{c} = '{v}'"
    return None


def leaf(rng: random.Random, hi: int) -> str:
    k = rng.randrange(-5, hi)
    s = f"'s{rng.randrange(0, 320):03d}'"
    choices = [
        lambda: f"id = {k}",
        lambda: f"id IN ({', '.join(str(rng.randrange(0, hi)) for _ in range(rng.randrange(1, 7)))})",
        lambda: f"id {rng.choice(['<', '<=', '>', '>='])} {k}",
        lambda: f"id BETWEEN {k} AND {k + rng.randrange(0, 300)}",
        lambda: f"id != {k}",
        lambda: f"x {rng.choice(['<', '<=', '>', '>=', '='])} {rng.choice([0.0, -0.0, 50.5, -20.0, 99.9, -100.0])}",
        lambda: f"x {rng.choice(['<', '>'])} {rng.uniform(-120, 120):.1f}",
        lambda: "x IS NULL",
        lambda: "x IS NOT NULL",
        lambda: f"s = {s}",
        lambda: f"s IN ({s}, 's{rng.randrange(0, 300):03d}', 's{rng.randrange(0, 300):03d}', 's{rng.randrange(0, 300):03d}')",
        lambda: f"s {rng.choice(['<', '>=', '!='])} {s}",
        lambda: "s IS NULL",
        lambda: "s IS NOT NULL",
        lambda: f"k = {rng.randrange(-55, 55)}",
        lambda: f"k IN ({rng.randrange(-55, 55)}, {rng.randrange(-55, 55)})",
        lambda: "k IS NULL",
        lambda: f"k > {rng.randrange(-60, 60)}",
        lambda: "k % 3 = 0",
    ]
    return rng.choice(choices)()


def random_filter(rng: random.Random, hi: int) -> str:
    return random_tree(rng, hi, leaf=leaf)


def check(path: str, rng: random.Random, step: str, n: int = 30, hi: int = 5000):
    ds = lancelet.dataset(path)
    pl = lance.dataset(path)
    used = 0
    for _ in range(n):
        flt = random_filter(rng, hi)
        want = ds.to_table(filter=flt, use_scalar_index=False).sort_by("id")
        got = ds.to_table(filter=flt).sort_by("id")
        assert ids(got) == ids(want), f"{step}: {flt}: {got.num_rows} rows with indices, {want.num_rows} without"
        assert ds.count_rows(filter=flt) == want.num_rows, f"{step}: count_rows({flt})"
        theirs = pl.to_table(filter=flt).sort_by("id")
        if not SIGNED_ZERO.search(flt):
            assert ids(theirs) == ids(want), f"{step}: {flt}: pylance gives {theirs.num_rows} rows, lancelet {want.num_rows}"
        used += "ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan()
    return used


@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable"])
def test_random_history(tmp_path, stable):
    rng = random.Random(4321 + stable)
    path = str(tmp_path / "ds")
    lance.write_dataset(make_table(2000, seed=3), path, max_rows_per_file=600, data_storage_version="2.1",
                        enable_stable_row_ids=stable)
    lance.dataset(path).delete("id % 11 = 4")
    ds = lancelet.dataset(path)
    for col, kind, size, name in SPECS:
        ds.create_scalar_index(col, _configs(kind, size)[1], name=name)
    assert check(path, rng, "created") > 0
    ds.insert(make_table(400, seed=5, start=3000))
    assert check(path, rng, "append") > 0
    ds.delete("id % 7 = 3 OR s = 's006'")
    check(path, rng, "delete")
    lance.dataset(path).update({"k": "k + 1"}, where="id < 300 OR id > 3300")
    check(path, rng, "pylance update of an indexed column")
    ds = lancelet.dataset(path)
    ds.optimize.optimize_indices()
    check(path, rng, "optimize_indices")
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=900)
    check(path, rng, "pylance compaction")
    ds = lancelet.dataset(path)
    ds.optimize.optimize_indices()
    assert check(path, rng, "optimize after compaction") > 0
    ds.insert(make_table(300, seed=6, start=4000))
    ds.delete("id % 5 = 1")
    check(path, rng, "append + delete")
    ds = lancelet.dataset(path)
    ds.optimize.compact_files(target_rows_per_fragment=1500)
    check(path, rng, "lancelet compaction")
    # pylance-built indices used by lancelet through the same steps
    pl = lance.dataset(path)
    for col, kind, size, name in SPECS:
        pl.create_scalar_index(col, _configs(kind, size)[0], name=name)
    assert check(path, rng, "pylance rebuilt") > 0
    lance.dataset(path).insert(make_table(200, seed=8, start=7000))
    check(path, rng, "pylance append")


def test_maintenance_like_pylance(tmp_path):
    """append keeps old coverage; optimize covers everything with the old
    zone size; compaction (either library) leaves the old bitmap (covering
    nothing) as pylance does."""
    path = str(tmp_path / "ds")
    lance.write_dataset(make_table(1000), path, max_rows_per_file=400)
    ds = lancelet.dataset(path)
    ds.create_scalar_index("id", IndexConfig("zonemap", {"rows_per_zone": 50}))
    ds.create_scalar_index("s", "BLOOMFILTER", number_of_items=64)
    ds.insert(make_table(100, start=5000))
    plan = ds.scanner(filter="id = 5010").explain_plan()
    assert "ScalarIndexQuery: query=[id = 5010]@id_idx(ZoneMap)" in plan
    assert ds.to_table(filter="id = 5010")["id"].to_pylist() == [5010]
    before = {i["name"]: i for i in ds.list_indices()}
    assert sorted(before["id_idx"]["fragment_ids"]) == [0, 1, 2]
    ds.optimize.optimize_indices()
    after = {i["name"]: i for i in ds.list_indices()}
    assert sorted(after["id_idx"]["fragment_ids"]) == [0, 1, 2, 3]
    assert after["id_idx"]["uuid"] != before["id_idx"]["uuid"]
    st = lance.dataset(path).index_statistics("id_idx")
    assert st["indices"] == [{"num_zones": 22, "rows_per_zone": 50}]
    st = lance.dataset(path).index_statistics("s_idx")
    assert st["indices"][0]["number_of_items"] == 64
    for k, lib in enumerate((lancelet, lance)):
        lancelet.dataset(path).insert(make_table(50, start=9000 + 100 * k))
        lib.dataset(path).optimize.compact_files(target_rows_per_fragment=5000)
        listed = {i["name"]: i for i in lance.dataset(path).list_indices()}
        ours = {i["name"]: i for i in lancelet.dataset(path).list_indices()}
        frags = {f.fragment_id for f in lance.dataset(path).get_fragments()}
        for n in ("id_idx", "s_idx"):
            assert not (set(listed[n]["fragment_ids"]) & frags)
            assert set(ours[n]["fragment_ids"]) == set(listed[n]["fragment_ids"])
        ld = lancelet.dataset(path)
        assert ld.to_table(filter="id = 7")["id"].to_pylist() == [7]
        assert ids(ld.to_table(filter="s = 's005'")) == ids(ld.to_table(filter="s = 's005'", use_scalar_index=False))
        lancelet.dataset(path).optimize.optimize_indices()
        ours = {i["name"]: i for i in lancelet.dataset(path).list_indices()}
        frags = {f.fragment_id for f in lance.dataset(path).get_fragments()}
        assert all(set(ours[n]["fragment_ids"]) == frags for n in ("id_idx", "s_idx"))


def test_listing_and_statistics(tmp_path):
    ours, theirs = build_both(tmp_path)
    for path in (ours, theirs):
        ld, pl = lancelet.dataset(path), lance.dataset(path)
        mine = {i["name"]: (i["type"], i["fields"], sorted(i["fragment_ids"])) for i in ld.list_indices()}
        want = {i["name"]: (i["type"], i["fields"], sorted(i["fragment_ids"])) for i in pl.list_indices()}
        assert mine == want
        assert {v[0] for v in mine.values()} == {"ZoneMap", "BloomFilter"}
        d1 = {d.name: (d.type_url, d.num_rows_indexed, list(d.fields), list(d.field_names)) for d in ld.describe_indices()}
        d2 = {d.name: (d.type_url, d.num_rows_indexed, list(d.fields), list(d.field_names)) for d in pl.describe_indices()}
        assert d1 == d2
        for name in mine:
            a, b = ld.index_statistics(name), pl.index_statistics(name)
            b.pop("updated_at_timestamp_ms")
            a.pop("updated_at_timestamp_ms")
            assert a == b, name


def test_plan_lines_match_pylance(tmp_path):
    path = str(tmp_path / "ds")
    lance.write_dataset(make_table(1000), path, max_rows_per_file=300)
    pl = lance.dataset(path)
    pl.create_scalar_index("id", "ZONEMAP")
    pl.create_scalar_index("x", PlIndexConfig("zonemap", {"rows_per_zone": 40}))
    pl.create_scalar_index("s", "BLOOMFILTER")
    pl.create_scalar_index("k", "BLOOMFILTER")
    pl = lance.dataset(path)
    ld = lancelet.dataset(path)
    for flt in ["id = 5", "id IN (1, 2, 3, 4, 5)", "id IN (1, 17)", "id < 10", "id >= 990", "id BETWEEN 10 AND 20",
                "id IS NULL", "id IS NOT NULL", "x > 15", "x IS NULL", "x IS NOT NULL", "id != 3",
                "s = 's003'", "s IN ('s001', 's002')", "s IN ('s001', 's002', 's003', 's004', 's005')", "s IS NULL",
                "s IS NOT NULL", "s != 's3'", "s > 's100'", "k = 3 OR k = 4", "k = 3 AND id < 50", "NOT (s = 's001')",
                "x > 3 OR id = 2", "x >= 3 AND x < 10", "x > 3 AND s = 's001'", "id = 5 AND id + 1 > 3"]:
        want = [ln.strip() for ln in pl.scanner(filter=flt).explain_plan().splitlines() if "ScalarIndexQuery" in ln]
        got = [ln.strip() for ln in ld.scanner(filter=flt).explain_plan().splitlines() if "ScalarIndexQuery" in ln]
        assert got == want, flt
        assert ids(ld.to_table(filter=flt)) == ids(ld.to_table(filter=flt, use_scalar_index=False)), flt


def test_parameters_and_errors(tmp_path):
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"i": pa.array([1, 2, 3], pa.int32()), "b": [True, False, None],
                                  "l": pa.array([[1], [2], None], pa.list_(pa.int32())),
                                  "d": pa.array([decimal.Decimal("1")] * 3, pa.decimal128(5, 1)),
                                  "t": pa.array([datetime.date(2020, 1, 1)] * 3)}), path)
    ds = lancelet.dataset(path)
    v = ds.version
    with pytest.raises(InvalidInputError, match="zone capacity must be greater than zero"):
        ds.create_scalar_index("i", IndexConfig("zonemap", {"rows_per_zone": 0}))
    with pytest.raises(InvalidInputError, match="zone capacity must be greater than zero"):
        ds.create_scalar_index("i", IndexConfig("bloomfilter", {"number_of_items": 0}))
    with pytest.raises(InvalidInputError, match="InvalidFpp"):
        ds.create_scalar_index("i", IndexConfig("bloomfilter", {"probability": 1.5}))
    with pytest.raises(InvalidInputError, match="rows_per_zone"):
        ds.create_scalar_index("i", IndexConfig("zonemap", {"rows_per_zone": -1}))
    with pytest.raises(InvalidInputError, match="rows_per_zone"):
        ds.create_scalar_index("i", "ZONEMAP", rows_per_zone="x")
    with pytest.raises(InvalidInputError, match="does not take 'rows_per_zone' for BLOOMFILTER"):
        ds.create_scalar_index("i", "BLOOMFILTER", rows_per_zone=3)
    with pytest.raises(InvalidInputError, match="Bloom filter index does not support data type: Boolean"):
        ds.create_scalar_index("b", "BLOOMFILTER")
    with pytest.raises(InvalidInputError, match=r"Decimal128\(5, 1\)"):
        ds.create_scalar_index("d", "BLOOMFILTER")
    with pytest.raises(InvalidInputError, match="non-nested field"):
        ds.create_scalar_index("l", "BLOOMFILTER")
    with pytest.raises(InvalidInputError):
        ds.create_scalar_index("l", "ZONEMAP")
    assert lancelet.dataset(path).version == v
    assert not os.path.isdir(os.path.join(path, "_indices")) or os.listdir(os.path.join(path, "_indices")) == []
    # unknown parameters are ignored, as pylance ignores them
    ds.create_scalar_index("i", IndexConfig("zonemap", {"foo": 1}))
    ds.create_scalar_index("t", "BLOOMFILTER", number_of_items=2, probability=0.0)
    ds.create_scalar_index("b", "ZONEMAP", rows_per_zone=2)
    assert lance.dataset(path).index_statistics("b_idx")["indices"] == [{"num_zones": 2, "rows_per_zone": 2}]
    assert lance.dataset(path).to_table(filter="t = date '2020-01-01'").num_rows == 3
    assert lancelet.dataset(path).to_table(filter="b = true")["i"].to_pylist() == [1]


def test_parameters_cross_the_binding_as_their_own_argument(tmp_path):
    """Parameters go to the native call as a JSON object beside the type
    (no ``TYPE:{json}`` strings); the type argument is only a type."""
    from lancelet import _native
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"i": pa.array(range(20), pa.int32())}), path)
    ds = lancelet.dataset(path)
    v = ds.version
    with pytest.raises(InvalidInputError, match="unknown index type"):
        ds.create_scalar_index("i", 'ZONEMAP:{"rows_per_zone": 4}')
    with pytest.raises(InvalidInputError, match="rows_per_zone must be a non-negative integer"):
        _native.dataset_create_scalar_index(ds._native, "i", "ZONEMAP", None, True, None, params='{"rows_per_zone": -4}')
    with pytest.raises(InvalidInputError, match="index parameters must be an object"):
        _native.dataset_create_scalar_index(ds._native, "i", "ZONEMAP", None, True, None, params="[4]")
    assert lancelet.dataset(path).version == v
    native = _native.dataset_create_scalar_index(ds._native, "i", "ZONEMAP", "zm", True, None, params='{"rows_per_zone": 4}')
    ds._become(native)
    assert lance.dataset(path).index_statistics("zm")["indices"] == [{"num_zones": 5, "rows_per_zone": 4}]
    ds.create_scalar_index("i", "BLOOMFILTER", name="bf", number_of_items=7, probability=0.01)
    st = lance.dataset(path).index_statistics("bf")["indices"][0]
    assert (st["number_of_items"], st["probability"]) == (7, 0.01)


def test_corrupt_index_files(tmp_path):
    """A damaged index file raises a typed error, never a panic."""
    from lancelet.exceptions import LanceletError
    path = str(tmp_path / "ds")
    lance.write_dataset(make_table(300), path)
    ds = lancelet.dataset(path)
    ds.create_scalar_index("id", "ZONEMAP")
    ds.create_scalar_index("s", "BLOOMFILTER")
    for entry in ds.list_indices():
        d = os.path.join(path, "_indices", entry["uuid"])
        [f] = os.listdir(d)
        data = bytearray(open(os.path.join(d, f), "rb").read())
        for i in range(0, len(data) - 40, 97):
            data[i] ^= 0x5A
        open(os.path.join(d, f), "wb").write(bytes(data))
    for flt in ["id = 5", "s = 's001'"]:
        try:
            got = lancelet.dataset(path).to_table(filter=flt)
        except LanceletError:
            continue
        assert ids(got) == ids(lancelet.dataset(path).to_table(filter=flt, use_scalar_index=False))
