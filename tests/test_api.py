"""The public Python API surface of lancelet (file-level reader/writer, exceptions, Arrow C stream)."""
from __future__ import annotations

import math
import pathlib

import numpy as np
import pyarrow as pa
import pytest
from datagen import assert_tables_equal, pylance_read

import lancelet
import lancelet.exceptions as lex
import lancelet.file


def _table(n=1000):
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "name": pa.array([None if i % 7 == 0 else f"name-{i}" for i in range(n)]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * 3, dtype=np.float32)), 3),
        "tags": pa.array([[f"t{j}" for j in range(i % 3)] for i in range(n)], pa.list_(pa.string())),
    }, metadata={"origin": "test_api"})


@pytest.fixture
def written(tmp_path):
    t = _table()
    p = tmp_path / "api.lance"
    lancelet.file.write_table(t, str(p))
    return t, p


# ---------------------------------------------------------------- exceptions

def test_exception_hierarchy():
    assert issubclass(lex.LanceletError, Exception)
    for name in ("CorruptFileError", "UnsupportedError", "NotFoundError", "InvalidInputError"):
        cls = getattr(lex, name)
        assert issubclass(cls, lex.LanceletError), name
        assert cls is not lex.LanceletError
        assert getattr(lancelet, name) is cls, f"lancelet.{name} must be lancelet.exceptions.{name}"
    assert lancelet.LanceletError is lex.LanceletError
    # siblings are distinct
    subs = {lex.CorruptFileError, lex.UnsupportedError, lex.NotFoundError, lex.InvalidInputError}
    assert len(subs) == 4
    for a in subs:
        for b in subs - {a}:
            assert not issubclass(a, b)


def test_exceptions_carry_messages():
    e = lex.CorruptFileError("boom /x.lance")
    assert "boom" in str(e)
    with pytest.raises(lancelet.LanceletError):
        raise lex.NotFoundError("nope")


def test_not_found_is_raised_with_path(tmp_path):
    p = tmp_path / "nope" / "missing.lance"
    with pytest.raises(lancelet.NotFoundError) as ei:
        lancelet.file.LanceFileReader(str(p)).read()
    assert "missing.lance" in str(ei.value)


# ---------------------------------------------------------------- reader basics

def test_reader_properties(written):
    t, p = written
    r = lancelet.file.LanceFileReader(str(p))
    assert isinstance(r.schema, pa.Schema)
    assert r.schema == t.schema
    assert r.schema.metadata == t.schema.metadata
    assert r.num_rows == t.num_rows == 1000
    assert r.version == "2.2"  # default writer version
    assert_tables_equal(r.read(), t)


def test_read_returns_table_with_projection_order(written):
    t, p = written
    r = lancelet.file.LanceFileReader(str(p))
    got = r.read(columns=["tags", "id"])
    assert isinstance(got, pa.Table)
    assert got.schema.names == ["tags", "id"]
    assert_tables_equal(got, t.select(["tags", "id"]))


def test_read_offset_limit(written):
    t, p = written
    r = lancelet.file.LanceFileReader(str(p))
    assert_tables_equal(r.read(offset=10, limit=5), t.slice(10, 5))
    assert_tables_equal(r.read(offset=990), t.slice(990))
    assert_tables_equal(r.read(limit=3), t.slice(0, 3))
    assert r.read(offset=1000).num_rows == 0
    assert r.read(offset=5, limit=0).num_rows == 0
    assert r.read(offset=5, limit=0).schema == t.schema


def test_take(written):
    t, p = written
    r = lancelet.file.LanceFileReader(str(p))
    idx = [999, 0, 500, 500, 3]
    assert_tables_equal(r.take(idx), t.take(idx))
    assert_tables_equal(r.take(np.array(idx)), t.take(idx))
    assert_tables_equal(r.take(pa.array(idx, pa.uint32())), t.take(idx))
    assert_tables_equal(r.take(idx, columns=["name"]), t.select(["name"]).take(idx))
    assert r.take([]).num_rows == 0


def test_take_out_of_range_is_invalid_input(written):
    _, p = written
    r = lancelet.file.LanceFileReader(str(p))
    with pytest.raises(lancelet.InvalidInputError):
        r.take([0, 1000])


def test_unknown_column_is_a_lancelet_error(written):
    _, p = written
    r = lancelet.file.LanceFileReader(str(p))
    with pytest.raises(lancelet.LanceletError) as ei:
        r.read(columns=["id", "no_such_column"])
    assert "no_such_column" in str(ei.value)


def test_reader_accepts_pathlib_and_file_uri(written):
    t, p = written
    assert_tables_equal(lancelet.file.LanceFileReader(pathlib.Path(p)).read(), t)
    assert_tables_equal(lancelet.file.LanceFileReader(p.as_uri()).read(), t)


def test_reader_is_reusable(written):
    t, p = written
    r = lancelet.file.LanceFileReader(str(p))
    for _ in range(3):
        assert_tables_equal(r.read(offset=100, limit=10), t.slice(100, 10))
    assert_tables_equal(r.read(), t)


# ---------------------------------------------------------------- to_batches / C stream

@pytest.mark.parametrize("batch_size", [1, 7, 100, 999, 1000, 4096])
def test_to_batches_batch_size(written, batch_size):
    t, p = written
    rdr = lancelet.file.LanceFileReader(str(p)).to_batches(batch_size=batch_size)
    assert isinstance(rdr, pa.RecordBatchReader)
    assert rdr.schema == t.schema
    batches = list(rdr)
    sizes = [b.num_rows for b in batches]
    assert sum(sizes) == t.num_rows
    assert all(0 < s <= batch_size for s in sizes), sizes
    assert len(batches) == math.ceil(t.num_rows / batch_size), sizes
    assert_tables_equal(pa.Table.from_batches(batches, schema=rdr.schema), t)


def test_to_batches_default_and_columns(written):
    t, p = written
    r = lancelet.file.LanceFileReader(str(p))
    assert_tables_equal(r.to_batches().read_all(), t)
    got = r.to_batches(columns=["vec"], batch_size=300).read_all()
    assert_tables_equal(got, t.select(["vec"]))


def test_arrow_c_stream(written):
    t, p = written
    r = lancelet.file.LanceFileReader(str(p))
    assert hasattr(r, "__arrow_c_stream__")
    assert_tables_equal(pa.table(r), t)
    rbr = pa.RecordBatchReader.from_stream(r)
    assert rbr.schema == t.schema
    assert_tables_equal(rbr.read_all(), t)
    # consumable more than once (each call makes a fresh stream)
    assert_tables_equal(pa.RecordBatchReader.from_stream(r).read_all(), t)


def test_arrow_c_stream_requested_schema(written):
    t, p = written
    r = lancelet.file.LanceFileReader(str(p))
    capsule = r.__arrow_c_stream__(None)
    assert type(capsule).__name__ == "PyCapsule"


# ---------------------------------------------------------------- writer

def test_writer_context_manager(tmp_path):
    t = _table(50)
    p = tmp_path / "cm.lance"
    with lancelet.file.LanceFileWriter(str(p), schema=t.schema) as w:
        w.write(t.slice(0, 20))
        w.write(t.slice(20).to_batches()[0])
    assert p.exists()
    assert_tables_equal(lancelet.file.read_table(str(p)), t)
    assert_tables_equal(pylance_read(p), t)


def test_abandoned_large_writer_leaves_no_file(tmp_path):
    """Pages are streamed while the file is written (past 8 MiB a staged
    multipart upload starts); a writer abandoned by an exception leaves
    nothing in the directory, staged parts included; so does a bad batch
    after streaming began (the writer is abandoned: later calls raise,
    see test_file_writer_poison.py)."""
    import numpy as np
    n = 60_000
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.random.default_rng(3).random(n * 64, dtype=np.float32)), 64)
    t = pa.table({"id": pa.array(np.arange(n), pa.int64()), "vec": vec})
    p = tmp_path / "big.lance"
    with pytest.raises(RuntimeError, match="stop"):
        with lancelet.file.LanceFileWriter(str(p), schema=t.schema) as w:
            w.write(t)
            w.write(t)
            raise RuntimeError("stop")
    import gc
    gc.collect()
    assert list(tmp_path.iterdir()) == []

    with pytest.raises(lancelet.InvalidInputError, match="failed earlier.*1 columns"):
        with lancelet.file.LanceFileWriter(str(p), schema=t.schema) as w:
            w.write(t)
            with pytest.raises(lancelet.InvalidInputError, match="1 columns"):
                w.write(pa.table({"id": pa.array([1], pa.int64())}))
            assert list(tmp_path.iterdir()) == []  # removed at once, not when the writer is dropped
    assert list(tmp_path.iterdir()) == []

    with lancelet.file.LanceFileWriter(str(p), schema=t.schema) as w:
        w.write(t)
        w.write(t)
    assert [x.name for x in tmp_path.iterdir()] == ["big.lance"]
    want = pa.concat_tables([t, t])
    assert_tables_equal(lancelet.file.read_table(str(p)), want)
    assert_tables_equal(pylance_read(p), want)


def test_v2_0_struct_column_spanning_batches_has_one_page(tmp_path, lance_mod):
    """pylance reads a 2.0 struct column only as one page; pages leave the
    writer as they are made, so a struct column whose pages were already
    streamed must not get an extra empty page at the end."""
    import numpy as np
    n = 200_000
    t = pa.table({"s": pa.StructArray.from_arrays(
        [pa.array(np.arange(n), pa.int64()), pa.array([f"value-{i:08d}-" + "x" * (i % 40) for i in range(n)])],
        names=["a", "b"])})
    p = tmp_path / "struct20.lance"
    with lancelet.file.LanceFileWriter(str(p), schema=t.schema, version="2.0") as w:
        w.write(t)
        w.write(t)
    want = pa.concat_tables([t, t])
    assert_tables_equal(pylance_read(p), want)
    assert_tables_equal(lancelet.file.read_table(str(p)), want)


def test_writer_accepts_table_batch_and_reader(tmp_path):
    t = _table(90)
    p = tmp_path / "kinds.lance"
    w = lancelet.file.LanceFileWriter(str(p))  # schema taken from the first write
    w.write(t.slice(0, 30))
    w.write(t.slice(30, 30).combine_chunks().to_batches()[0])
    w.write(pa.RecordBatchReader.from_batches(t.schema, t.slice(60).to_batches(max_chunksize=7)))
    w.close()
    assert_tables_equal(lancelet.file.read_table(str(p)), t)


def test_writer_empty_file_with_schema(tmp_path):
    t = _table(0)
    p = tmp_path / "empty.lance"
    with lancelet.file.LanceFileWriter(str(p), schema=t.schema):
        pass
    r = lancelet.file.LanceFileReader(str(p))
    assert r.num_rows == 0
    assert r.schema == t.schema
    assert r.read().num_rows == 0
    assert pylance_read(p).schema == t.schema


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_writer_versions(tmp_path, version, lance_mod):
    t = _table(100)
    p = tmp_path / f"v{version}.lance"
    with lancelet.file.LanceFileWriter(str(p), schema=t.schema, version=version) as w:
        w.write(t)
    assert lancelet.file.LanceFileReader(str(p)).version == version
    md = lance_mod.file.LanceFileReader(str(p)).metadata()
    expected = {"2.0": {(0, 3), (2, 0)}, "2.1": {(2, 1)}, "2.2": {(2, 2)}}[version]
    assert (md.major_version, md.minor_version) in expected


@pytest.mark.parametrize("version", ["9.9", "2.9", "banana"])
def test_writer_bad_version(tmp_path, version):
    with pytest.raises((lancelet.InvalidInputError, lancelet.UnsupportedError)):
        w = lancelet.file.LanceFileWriter(str(tmp_path / "bad.lance"), schema=_table(1).schema, version=version)
        w.write(_table(1))
        w.close()


def test_write_after_close_fails(tmp_path):
    t = _table(5)
    w = lancelet.file.LanceFileWriter(str(tmp_path / "closed.lance"), schema=t.schema)
    w.write(t)
    w.close()
    with pytest.raises(lancelet.LanceletError):
        w.write(t)


def test_read_table_write_table(tmp_path):
    t = _table(300)
    p = tmp_path / "rt.lance"
    lancelet.file.write_table(t, str(p))
    assert_tables_equal(lancelet.file.read_table(str(p)), t)
    assert_tables_equal(lancelet.file.read_table(str(p), columns=["name"]), t.select(["name"]))
    p2 = tmp_path / "rt21.lance"
    lancelet.file.write_table(t, str(p2), version="2.1")
    assert lancelet.file.LanceFileReader(str(p2)).version == "2.1"
    assert_tables_equal(pylance_read(p2), t)


def test_write_table_overwrites(tmp_path):
    p = tmp_path / "ow.lance"
    lancelet.file.write_table(_table(10), str(p))
    lancelet.file.write_table(_table(3), str(p))
    assert lancelet.file.read_table(str(p)).num_rows == 3


def test_memory_uri():
    t = _table(20)
    uri = "memory://lancelet-test/a.lance"
    lancelet.file.write_table(t, uri)
    assert_tables_equal(lancelet.file.read_table(uri), t)
