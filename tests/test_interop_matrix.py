"""Interop matrix: type x version x shape, in both directions.

(a) pylance writes -> lancelet reads (full read, projections, ranges across pages, take)
(b) lancelet writes -> pylance reads
(c) lancelet writes -> lancelet reads

Cells pylance 14.0.2 refuses to write are *not* skipped silently: they are listed by
``datagen.pylance_rejection`` / ``datagen.SHAPE_REJECTIONS`` and checked as explicit
expected rejections (for pylance: the exact error; for lancelet: a typed LanceletError).
"""
from __future__ import annotations

import glob
import os

import datagen as dg
import numpy as np
import pyarrow as pa
import pytest
from datagen import assert_tables_equal, pylance_read, pylance_write

import lancelet
import lancelet.file
from lancelet.exceptions import InvalidInputError, UnsupportedError

pytestmark = pytest.mark.pylance

# footer (major, minor) pylance uses per version string; 2.0 files say 0.3 (2.0 also accepted by readers)
FOOTER_VERSIONS = {"2.0": {(0, 3), (2, 0)}, "2.1": {(2, 1)}, "2.2": {(2, 2)}}

CELLS = [(t, v, s) for t in dg.TYPE_CASES for v in dg.VERSIONS for s in dg.CELL_SHAPES
         if dg.pylance_rejection(t, v, struct_nulls=False) is None]
REJECTED = [(t, v) for t in dg.TYPE_CASES for v in dg.VERSIONS
            if dg.pylance_rejection(t, v, struct_nulls=False) is not None]
# 2.0 cannot store null struct rows: every struct-bearing type that 2.0 otherwise accepts
NULL_STRUCT_2_0 = [t for t, ty in dg.TYPE_CASES.items()
                   if dg.has_struct(ty) and dg.pylance_rejection(t, "2.0", struct_nulls=False) is None]


def _cell_id(c):
    return "-".join(c)


def _write_lancelet(table: pa.Table, path, version, batch_rows=None):
    with lancelet.file.LanceFileWriter(str(path), schema=table.schema, version=version) as w:
        if batch_rows:
            for b in table.to_batches(max_chunksize=batch_rows):
                w.write(b)
        else:
            w.write(table)


def _pylance_footer(lance_mod, path):
    md = lance_mod.file.LanceFileReader(str(path)).metadata()
    return md.major_version, md.minor_version


# --------------------------------------------------------------------------
# the type matrix
# --------------------------------------------------------------------------

@pytest.mark.parametrize("cell", CELLS, ids=_cell_id)
def test_pylance_writes_lancelet_reads(cell, lance_path):
    type_name, version, shape = cell
    table = dg.make_cell_table(type_name, version, shape)
    p = lance_path(type_name)
    pylance_write(table, p, version)
    oracle = pylance_read(p)
    assert_tables_equal(oracle, table, context=f"oracle sanity {cell}")
    r = lancelet.file.LanceFileReader(str(p))
    assert r.version == version
    assert r.num_rows == table.num_rows
    assert r.schema == oracle.schema
    assert_tables_equal(r.read(), oracle, context=str(cell))
    assert_tables_equal(r.read(columns=["col"]), oracle.select(["col"]), context=f"{cell} columns=['col']")


@pytest.mark.parametrize("cell", CELLS, ids=_cell_id)
def test_lancelet_writes_pylance_reads(cell, lance_path, lance_mod):
    type_name, version, shape = cell
    table = dg.make_cell_table(type_name, version, shape)
    p = lance_path(type_name)
    lancelet.file.write_table(table, str(p), version=version)
    assert _pylance_footer(lance_mod, p) in FOOTER_VERSIONS[version]
    assert lance_mod.file.LanceFileReader(str(p)).metadata().num_rows == table.num_rows
    assert_tables_equal(pylance_read(p), table, context=str(cell))


@pytest.mark.parametrize("cell", CELLS, ids=_cell_id)
def test_lancelet_roundtrip(cell, lance_path):
    type_name, version, shape = cell
    table = dg.make_cell_table(type_name, version, shape)
    p = lance_path(type_name)
    _write_lancelet(table, p, version, batch_rows=100)  # several write() calls
    r = lancelet.file.LanceFileReader(str(p))
    assert r.version == version
    assert r.num_rows == table.num_rows
    assert_tables_equal(r.read(), table, context=str(cell))
    idx = [table.num_rows - 1, 0, 5, 5, 100]
    assert_tables_equal(r.take(idx), table.take(idx), context=f"{cell} take")


# --------------------------------------------------------------------------
# expected rejections (facts about pylance 14.0.2, and lancelet must refuse with a typed error)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("cell", REJECTED, ids=_cell_id)
def test_pylance_rejects(cell, lance_path):
    type_name, version = cell
    rej = dg.pylance_rejection(type_name, version, struct_nulls=False)
    table = dg.make_cell_table(type_name, version, "mixed")
    with pytest.raises(rej.exc, match=rej.match):
        pylance_write(table, lance_path(), version)


@pytest.mark.parametrize("cell", REJECTED, ids=_cell_id)
def test_lancelet_rejects_what_pylance_rejects(cell, lance_path):
    type_name, version = cell
    table = dg.make_cell_table(type_name, version, "mixed")
    p = lance_path()
    with pytest.raises((UnsupportedError, InvalidInputError)):
        lancelet.file.write_table(table, str(p), version=version)


@pytest.mark.parametrize("type_name", NULL_STRUCT_2_0)
def test_pylance_2_0_rejects_null_struct_rows(type_name, lance_path):
    table = dg.make_null_struct_table(type_name)
    with pytest.raises(ValueError, match="does not encode struct validity"):
        pylance_write(table, lance_path(), "2.0")


@pytest.mark.parametrize("type_name", NULL_STRUCT_2_0)
def test_lancelet_2_0_rejects_null_struct_rows(type_name, lance_path):
    table = dg.make_null_struct_table(type_name)
    with pytest.raises(InvalidInputError):
        lancelet.file.write_table(table, str(lance_path()), version="2.0")


@pytest.mark.parametrize("type_name", NULL_STRUCT_2_0)
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_null_struct_rows_fine_in_2_1_and_2_2(type_name, version, lance_path):
    table = dg.make_null_struct_table(type_name)
    p1, p2 = lance_path(), lance_path()
    pylance_write(table, p1, version)
    assert_tables_equal(lancelet.file.LanceFileReader(str(p1)).read(), table)
    lancelet.file.write_table(table, str(p2), version=version)
    assert_tables_equal(pylance_read(p2), table)


@pytest.mark.parametrize("key", sorted(dg.SHAPE_REJECTIONS), ids=_cell_id)
def test_pylance_shape_rejections(key, lance_path):
    make, rej = dg.SHAPE_REJECTIONS[key]
    with pytest.raises(rej.exc, match=rej.match):
        pylance_write(make(), lance_path(), key[1])


@pytest.mark.parametrize("version", ["0.1", "legacy"])
def test_pylance_file_writer_refuses_legacy(version, lance_path):
    table = pa.table({"a": pa.array([1, 2], pa.int32())})
    with pytest.raises(NotImplementedError, match="Lance v1 files must be created with"):
        pylance_write(table, lance_path(), version)


def test_pylance_sliced_nested_struct_panics(lance_path):
    """Fact behind datagen.unslice(): pylance 14.0.2 cannot write a sliced struct<struct<..>> array."""
    t = pa.table({"c": pa.array([{"inner": {"a": i}} for i in range(10)],
                                pa.struct([("inner", pa.struct([("a", pa.int32())]))]))})
    import lance.file
    w = lance.file.LanceFileWriter(str(lance_path()), t.schema, version="2.2")
    with pytest.raises(BaseException, match="end <= self.len"):
        w.write_batch(t.slice(3, 5))


@pytest.mark.parametrize("version", dg.VERSIONS)
def test_lancelet_writes_sliced_nested_struct(version, lance_path):
    t = dg.make_cell_table("struct_nested", version, "nonull")
    p = lance_path()
    _write_lancelet(t.slice(7, 200), p, version, batch_rows=33)
    assert_tables_equal(pylance_read(p), t.slice(7, 200))
    assert_tables_equal(lancelet.file.LanceFileReader(str(p)).read(), t.slice(7, 200))


# --------------------------------------------------------------------------
# legacy (0.1) files: pylance can write them only through write_dataset
# --------------------------------------------------------------------------

def _legacy_dataset(lance_mod, tmp_path, table):
    d = tmp_path / "legacy_ds"
    lance_mod.write_dataset(table, str(d), data_storage_version="legacy")
    files = sorted(glob.glob(str(d / "data" / "*.lance")))
    assert len(files) == 1
    return files[0], lance_mod.dataset(str(d)).to_table()


@pytest.mark.parametrize("shape", ["mixed", "nonull"])
@pytest.mark.parametrize("type_name", dg.LEGACY_TYPES)
def test_legacy_pylance_writes_lancelet_reads(type_name, shape, tmp_path, lance_mod):
    table = dg.make_cell_table(type_name, "2.1", shape, n=120)
    path, oracle = _legacy_dataset(lance_mod, tmp_path, table)
    r = lancelet.file.LanceFileReader(path)
    assert r.version == "0.1"
    assert r.num_rows == table.num_rows
    # Dictionary values are read from the file's embedded schema copy (see
    # test_legacy_dictionary.py). The legacy format is lossy (nulls/empties);
    # lancelet must return what pylance returns.
    assert_tables_equal(r.read(), oracle, check_metadata=False, context=f"legacy {type_name}/{shape}")


def test_pylance_legacy_is_lossy_and_file_reader_refuses(tmp_path, lance_mod):
    """Facts recorded for the legacy cells above."""
    table = pa.table({"i": pa.array([1, None], pa.int32()), "s": pa.array(["", "x"])})
    path, oracle = _legacy_dataset(lance_mod, tmp_path, table)
    assert oracle.to_pylist() == [{"i": 1, "s": None}, {"i": 0, "s": "x"}]
    with pytest.raises(OSError, match="v1 metadata"):
        lance_mod.file.LanceFileReader(path).read_all()
    with open(path, "rb") as f:
        f.seek(-4, os.SEEK_END)
        assert f.read() == b"LANC"


# --------------------------------------------------------------------------
# wide tables: projections, ranges across pages, take
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wide_files(tmp_path_factory):
    """version -> (table, pylance-written path, lancelet-written path)."""
    out = {}
    d = tmp_path_factory.mktemp("wide")
    for v in dg.VERSIONS:
        t = dg.wide_table(v, n=2000)
        pp = d / f"pylance_{v}.lance"
        pylance_write(t, pp, v, batch_rows=250, data_cache_bytes=64 * 1024)  # several pages per column
        lp = d / f"lancelet_{v}.lance"
        lancelet.file.write_table(t, str(lp), version=v)
        out[v] = (t, pp, lp)
    return out


@pytest.mark.parametrize("writer", ["pylance", "lancelet"])
@pytest.mark.parametrize("version", dg.VERSIONS)
def test_wide_full_read(version, writer, wide_files):
    t, pp, lp = wide_files[version]
    r = lancelet.file.LanceFileReader(str(pp if writer == "pylance" else lp))
    assert_tables_equal(r.read(), t, context=f"wide {version} by {writer}")
    if writer == "lancelet":
        assert_tables_equal(pylance_read(lp), t, context=f"wide {version} lancelet->pylance")


@pytest.mark.parametrize("writer", ["pylance", "lancelet"])
@pytest.mark.parametrize("version", dg.VERSIONS)
def test_wide_projection(version, writer, wide_files):
    t, pp, lp = wide_files[version]
    r = lancelet.file.LanceFileReader(str(pp if writer == "pylance" else lp))
    rng = np.random.default_rng(7)
    names = t.schema.names
    subsets = [[names[-1]], [names[3], names[0]], list(reversed(names[5:15]))]
    subsets += [list(rng.choice(names, size=k, replace=False)) for k in (2, 5, 12)]
    for cols in subsets:
        cols = [str(c) for c in cols]
        got = r.read(columns=cols)
        assert got.schema.names == cols, "projection must keep the requested order"
        assert_tables_equal(got, t.select(cols), context=f"columns={cols}")
    # projection combined with a range and with take
    cols = [names[1], names[-2]]
    assert_tables_equal(r.read(columns=cols, offset=100, limit=50), t.select(cols).slice(100, 50))
    assert_tables_equal(r.take([9, 3, 3], columns=cols), t.select(cols).take([9, 3, 3]))


RANGES = [(0, 1), (0, 250), (249, 2), (250, 250), (123, 1000), (1999, 1), (1500, 500), (0, 2000), (2000, 0),
          (1337, None), (0, None)]


@pytest.mark.parametrize("writer", ["pylance", "lancelet"])
@pytest.mark.parametrize("version", dg.VERSIONS)
def test_wide_ranges(version, writer, wide_files, lance_mod):
    t, pp, lp = wide_files[version]
    path = pp if writer == "pylance" else lp
    if writer == "pylance":  # make sure the ranges really cross page boundaries
        md = lance_mod.file.LanceFileReader(str(pp)).metadata()
        assert max(len(c.pages) for c in md.columns) > 1
    r = lancelet.file.LanceFileReader(str(path))
    for offset, limit in RANGES:
        got = r.read(offset=offset, limit=limit)
        exp = t.slice(offset, limit) if limit is not None else t.slice(offset)
        assert_tables_equal(got, exp, context=f"{version}/{writer} read(offset={offset}, limit={limit})")


@pytest.mark.parametrize("writer", ["pylance", "lancelet"])
@pytest.mark.parametrize("version", dg.VERSIONS)
def test_wide_take(version, writer, wide_files, lance_mod):
    t, pp, lp = wide_files[version]
    r = lancelet.file.LanceFileReader(str(pp if writer == "pylance" else lp))
    rng = np.random.default_rng(3)
    cases = {
        "sorted": sorted(set(rng.integers(0, 2000, 60).tolist())),
        "unsorted_dups": rng.integers(0, 2000, 80).tolist() + [0, 0, 1999],
        "edges": [1999, 0, 250, 249, 251],
        "single": [1000],
        "empty": [],
        "numpy": np.array([5, 1, 5], dtype=np.uint64),
    }
    for name, idx in cases.items():
        got = r.take(idx)
        assert_tables_equal(got, t.take(pa.array(np.asarray(idx, dtype=np.int64))), context=f"take {name}")
    if writer == "pylance":
        srt = cases["sorted"]
        # (pylance cannot take FSL<struct> together with other columns, see datagen.pylance_read)
        cols = [c for c in t.schema.names if not dg.has_fsl_of_struct(t.schema.field(c).type)]
        oracle = lance_mod.file.LanceFileReader(str(pp), columns=cols).take_rows(srt).to_table()
        assert_tables_equal(r.take(srt, columns=cols), oracle, context="take vs pylance take_rows")


# --------------------------------------------------------------------------
# encoding shapes
# --------------------------------------------------------------------------

SHAPE_CELLS = [pytest.param(s.name, v, marks=[pytest.mark.slow] if s.slow else [], id=f"{s.name}-{v}")
               for s in dg.ENCODING_SHAPES.values() for v in s.versions]


@pytest.mark.parametrize("shape_name,version", SHAPE_CELLS)
def test_shape_pylance_writes_lancelet_reads(shape_name, version, lance_path):
    shape = dg.ENCODING_SHAPES[shape_name]
    table = shape.make(version)
    p = lance_path(shape_name)
    pylance_write(table, p, version, batch_rows=shape.batch_rows, **shape.pylance_writer_kwargs)
    oracle = pylance_read(p)
    assert_tables_equal(oracle, table, context=f"oracle sanity {shape_name}/{version}")
    r = lancelet.file.LanceFileReader(str(p))
    assert r.version == version
    assert r.num_rows == table.num_rows
    assert_tables_equal(r.read(), oracle, context=f"{shape_name}/{version}")
    n = table.num_rows
    for offset, limit in [(0, 1), (n // 2 - 3, 7), (n - 1, 1), (n // 3, n // 3)]:
        assert_tables_equal(r.read(offset=offset, limit=limit), table.slice(offset, limit),
                            context=f"{shape_name}/{version} read({offset},{limit})")
    idx = np.random.default_rng(n).integers(0, n, 40).tolist() + [n - 1, 0]
    assert_tables_equal(r.take(idx), table.take(idx), context=f"{shape_name}/{version} take")


@pytest.mark.parametrize("shape_name,version", SHAPE_CELLS)
def test_shape_lancelet_writes_pylance_reads(shape_name, version, lance_path, lance_mod):
    shape = dg.ENCODING_SHAPES[shape_name]
    table = shape.make(version)
    p = lance_path(shape_name)
    _write_lancelet(table, p, version, batch_rows=shape.batch_rows)
    assert _pylance_footer(lance_mod, p) in FOOTER_VERSIONS[version]
    assert_tables_equal(pylance_read(p), table, context=f"{shape_name}/{version}")


@pytest.mark.parametrize("shape_name,version", SHAPE_CELLS)
def test_shape_lancelet_roundtrip(shape_name, version, lance_path):
    shape = dg.ENCODING_SHAPES[shape_name]
    table = shape.make(version)
    p = lance_path(shape_name)
    _write_lancelet(table, p, version, batch_rows=shape.batch_rows)
    r = lancelet.file.LanceFileReader(str(p))
    assert r.version == version
    assert_tables_equal(r.read(), table, context=f"{shape_name}/{version}")
    n = table.num_rows
    assert_tables_equal(r.read(offset=n // 2), table.slice(n // 2), context="read tail (limit=None)")
    total = sum(b.num_rows for b in r.to_batches(batch_size=max(1, n // 7)))
    assert total == n
