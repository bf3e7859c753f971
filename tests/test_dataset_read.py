"""lancelet reads Lance datasets (the table format) exactly like pylance 14 does.

* every fixture dataset under tests/fixtures/pylance-14 at every version vs
  ``lance.dataset(p, version=v).to_table()``, and the latest vs expected.json;
* datasets pylance writes here: mixed 2.0/2.1/2.2 data files, V1 manifest names,
  stable row ids through deletes/updates/compaction, add_columns leaving
  fragments without a column, deletions below and above the 5000-row
  .arrow/.bin switch, legacy (0.1) data files;
* ``_rowid``/``_rowaddr``, offset/limit, take and take_row_ids vs pylance;
* errors: missing/corrupt manifest, dangling data file, bad deletion file,
  unknown version/tag, unknown feature flag.
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import FIXTURES_DIR
from datagen import assert_tables_equal, jsonable

import lancelet

pytestmark = pytest.mark.pylance

FIXTURE_DATASETS = sorted(p for p in FIXTURES_DIR.glob("*") if (p / "_versions").is_dir())


def _versions(path):
    import lance
    return [v["version"] for v in lance.dataset(str(path)).versions()]


def _pylance(path, version=None, **kw):
    import lance
    return lance.dataset(str(path), version=version).to_table(**kw)


def _check_same(path, version=None, context="", **kw):
    got = lancelet.dataset(str(path), version=version).to_table(**kw)
    want = _pylance(path, version, **kw)
    assert_tables_equal(got, want, context=f"{context or path} v{version} {kw}")
    return got


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------

@pytest.mark.parametrize("path", FIXTURE_DATASETS, ids=[p.name for p in FIXTURE_DATASETS])
def test_fixture_latest_matches_expected_json(path):
    expected = json.loads((path / "expected.json").read_text())
    ds = lancelet.dataset(str(path))
    assert ds.version == expected["version"] == ds.latest_version
    kw = {"with_row_id": True} if path.name == "stable_row_ids" else {}
    t = ds.to_table(**kw)
    assert t.num_rows == expected["num_rows"] == ds.count_rows()
    assert json.loads(json.dumps(jsonable(t.to_pylist()))) == expected["rows"]
    assert str(t.schema) + "\n" == (path / "expected_schema.txt").read_text()


@pytest.mark.parametrize("path", FIXTURE_DATASETS, ids=[p.name for p in FIXTURE_DATASETS])
def test_fixture_every_version_matches_pylance(path):
    import lance
    for v in _versions(path):
        _check_same(path, v)
        _check_same(path, v, with_row_id=True, with_row_address=True)
        ours, theirs = lancelet.dataset(str(path), version=v), lance.dataset(str(path), version=v)
        assert ours.version == v
        assert ours.schema == theirs.schema
        assert ours.count_rows() == theirs.count_rows()
        assert ours.has_stable_row_ids == theirs.has_stable_row_ids
        fo, ft = ours.get_fragments(), theirs.get_fragments()
        assert [f.fragment_id for f in fo] == [f.fragment_id for f in ft]
        for a, b in zip(fo, ft):
            assert a.physical_rows == b.physical_rows
            assert a.count_rows() == b.count_rows()
            assert a.deletion_file() == b.deletion_file()
            assert [(d.path, list(d.fields), list(d.column_indices), d.file_major_version, d.file_minor_version)
                    for d in a.data_files()] == \
                   [(d.path, list(d.fields), list(d.column_indices), d.file_major_version, d.file_minor_version)
                    for d in b.data_files()]


@pytest.mark.parametrize("path", FIXTURE_DATASETS, ids=[p.name for p in FIXTURE_DATASETS])
def test_fixture_versions_and_tags(path):
    import lance
    ours, theirs = lancelet.dataset(str(path)), lance.dataset(str(path))
    assert ours.versions() == theirs.versions()
    assert ours.tags.list() == theirs.tags.list()


def test_fixture_tag_and_checkout(fixtures_dir):
    p = str(fixtures_dir / "ops_history")
    ds = lancelet.dataset(p, version="t1")
    assert ds.version == 2
    assert ds.tags.get_version("t1") == 2
    assert_tables_equal(ds.to_table(), _pylance(p, "t1"))
    old = lancelet.dataset(p).checkout_version(3)
    assert old.version == 3 and old.latest_version == 10
    assert_tables_equal(old.to_table(), _pylance(p, 3))
    assert old.checkout_version("t1").version == 2


def test_fixture_manifest_names(fixtures_dir):
    v1 = fixtures_dir / "v1_manifest_names"
    assert sorted(os.listdir(v1 / "_versions"))[:2] == ["1.manifest", "2.manifest"]
    assert [v["version"] for v in lancelet.dataset(str(v1)).versions()] == [1, 2]
    v2 = fixtures_dir / "two_versions"
    assert "18446744073709551614.manifest" in os.listdir(v2 / "_versions")
    assert lancelet.dataset(str(v2), version=1).count_rows() == 3


# --------------------------------------------------------------------------
# datasets written by pylance here
# --------------------------------------------------------------------------

def _table(start, n):
    return pa.table({
        "x": pa.array(range(start, start + n), pa.int64()),
        "s": pa.array([None if i % 7 == 0 else f"s{i}" for i in range(start, start + n)]),
        "st": pa.array([{"a": i, "b": float(i) / 2} for i in range(start, start + n)]),
    })


def _all_versions_match(path, **kw):
    for v in _versions(path):
        _check_same(path, v, **kw)
        _check_same(path, v, with_row_id=True, with_row_address=True, **kw)


def test_mixed_file_versions(tmp_path):
    import lance
    p = str(tmp_path / "mixed")
    lance.write_dataset(_table(0, 50), p, data_storage_version="2.0")
    lance.write_dataset(_table(50, 60), p, mode="append", data_storage_version="2.1")
    lance.write_dataset(_table(110, 70), p, mode="append", data_storage_version="2.2")
    lance.dataset(p).delete("x % 5 = 0")
    ds = lancelet.dataset(p)
    assert [(d.file_major_version, d.file_minor_version) for f in ds.get_fragments() for d in f.data_files()] == \
        [(2, 0), (2, 1), (2, 2)]
    _all_versions_match(p)
    _check_same(p, columns=["st", "x"], offset=30, limit=100)


def test_legacy_dataset(tmp_path):
    import lance
    p = str(tmp_path / "legacy")
    lance.write_dataset(_table(0, 40), p, data_storage_version="legacy")
    lance.write_dataset(_table(40, 40), p, mode="append", data_storage_version="legacy")
    lance.dataset(p).delete("x = 3 or x = 41")
    assert lancelet.dataset(p).get_fragments()[0].data_files()[0].file_major_version == 0
    _all_versions_match(p)


def test_v1_manifest_names_generated(tmp_path):
    import lance
    p = str(tmp_path / "v1")
    lance.write_dataset(_table(0, 10), p, enable_v2_manifest_paths=False)
    lance.write_dataset(_table(10, 10), p, mode="append")
    lance.dataset(p).delete("x = 4")
    assert {"1.manifest", "2.manifest", "3.manifest"} <= set(os.listdir(Path(p) / "_versions"))
    _all_versions_match(p)


def test_stable_row_ids_deletes_updates_compaction(tmp_path):
    import lance
    p = str(tmp_path / "stable")
    lance.write_dataset(_table(0, 100), p, enable_stable_row_ids=True, max_rows_per_file=40)
    lance.write_dataset(_table(100, 30), p, mode="append")
    ds = lance.dataset(p)
    ds.delete("x % 9 = 0")
    ds.update({"s": "'upd'"}, where="x > 20 and x < 30")
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    lance.dataset(p).delete("x = 50")
    _all_versions_match(p)
    ours, theirs = lancelet.dataset(p), lance.dataset(p)
    assert ours.has_stable_row_ids
    ids = theirs.to_table(with_row_id=True)["_rowid"].to_pylist()
    pick = ids[::7][::-1] + [ids[3]]
    assert_tables_equal(ours.take_row_ids(pick), theirs._take_rows(pick))
    assert_tables_equal(ours.take_row_ids(pick, columns=["s"]), theirs._take_rows(pick, columns=["s"]))
    # ids of deleted rows are left out, like pylance
    assert ours.take_row_ids([0, 9, 50, 1]).to_pydict() == theirs._take_rows([0, 9, 50, 1]).to_pydict()


@pytest.mark.parametrize("pattern", ["x % 2 = 0", "x % 3 != 0", "x % 50 = 7", "x > 10 and x < 900", "x % 64 < 40"])
def test_stable_row_ids_compacted_sequences(tmp_path, pattern):
    """Compaction rewrites row id sequences of survivors as ranges with holes,
    bitmaps or arrays, depending on how dense they are."""
    import lance
    p = str(tmp_path / "seq")
    lance.write_dataset(pa.table({"x": pa.array(range(1000), pa.int64())}), p, enable_stable_row_ids=True,
                        max_rows_per_file=300)
    lance.dataset(p).delete(pattern)
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=10000)
    lance.dataset(p).update({"x": "x + 100000"}, where="x % 10 = 1")
    _all_versions_match(p)
    ours, theirs = lancelet.dataset(p), lance.dataset(p)
    ids = theirs.to_table(with_row_id=True)["_rowid"].to_pylist()
    assert_tables_equal(ours.take_row_ids(ids[::-3]), theirs._take_rows(ids[::-3]))


def test_add_columns_missing_in_some_fragments(tmp_path):
    import lance
    p = str(tmp_path / "addcol")
    lance.write_dataset(_table(0, 30), p, max_rows_per_file=10)
    ds = lance.dataset(p)
    ds.add_columns({"y": "x * 2"})               # every fragment gets a second data file
    ds = lance.dataset(p)
    ds.add_columns(pa.field("z", pa.int32()))    # metadata only: no fragment has z -> nulls
    lance.write_dataset(_table(30, 5).append_column("y", pa.array(range(60, 70, 2), pa.int64()))
                        .append_column("z", pa.array([1, None, 3, 4, 5], pa.int32())), p, mode="append")
    ds = lance.dataset(p)
    ds.drop_columns(["s"])
    ds = lance.dataset(p)
    ds.alter_columns({"path": "y", "name": "yy"})
    frags = lancelet.dataset(p).get_fragments()
    assert len(frags[0].data_files()) == 2 and len(frags[-1].data_files()) == 1
    _all_versions_match(p)
    _check_same(p, columns=["z", "yy"])


def test_deletions_arrow_and_bitmap(tmp_path):
    import lance
    p = str(tmp_path / "dels")
    lance.write_dataset(pa.table({"x": pa.array(range(30000), pa.int64())}), p, max_rows_per_file=10000)
    ds = lance.dataset(p)
    ds.delete("x < 4999 or (x >= 10000 and x < 16000) or x = 25000")
    kinds = sorted(f.deletion_file().rsplit(".", 1)[1] for f in lancelet.dataset(p).get_fragments())
    assert kinds == ["arrow", "arrow", "bin"]
    _all_versions_match(p)
    for kw in ({"offset": 4000, "limit": 3000}, {"offset": 9999}, {"limit": 1}, {"limit": 0}, {"batch_size": 777}):
        _check_same(p, **kw)
    batches = list(lancelet.dataset(p).to_batches(batch_size=1000))
    assert max(b.num_rows for b in batches) <= 1000
    assert sum(b.num_rows for b in batches) == lance.dataset(p).count_rows()


def test_take_after_deletes(tmp_path):
    import lance
    p = str(tmp_path / "take")
    lance.write_dataset(_table(0, 100), p, max_rows_per_file=25)
    lance.dataset(p).delete("x < 30 and x % 2 = 0")
    ours, theirs = lancelet.dataset(p), lance.dataset(p)
    idx = [0, 5, 84, 3, 3, 40, 12]
    assert_tables_equal(ours.take(idx), theirs.take(idx))
    assert_tables_equal(ours.take(idx, columns=["s", "x"]), theirs.take(idx, columns=["s", "x"]))
    assert_tables_equal(ours.take(pa.array([1, 2], pa.int64())), theirs.take([1, 2]))
    with pytest.raises(lancelet.InvalidInputError):
        ours.take([ours.count_rows()])
    addrs = theirs.to_table(with_row_address=True)["_rowaddr"].to_pylist()
    pick = addrs[::-9]
    assert_tables_equal(ours.take_row_ids(pick), theirs._take_rows(pick))
    assert ours.take_row_ids([0]).num_rows == 0      # row 0 of fragment 0 is deleted
    with pytest.raises(lancelet.InvalidInputError, match="fragment 77"):
        ours.take_row_ids([77 << 32])


def test_scanner_api(tmp_path):
    import lance
    p = str(tmp_path / "scan")
    lance.write_dataset(_table(0, 50), p, max_rows_per_file=20)
    ds = lancelet.dataset(p)
    sc = ds.scanner(columns=["x"], limit=7, offset=3, with_row_id=True)
    assert sc.count_rows() == 7
    assert_tables_equal(sc.to_table(), _pylance(p, columns=["x"], limit=7, offset=3, with_row_id=True))
    assert pa.table(sc).num_rows == 7
    assert sc.to_reader().read_all().num_rows == 7
    assert pa.table(ds).num_rows == 50
    assert ds.to_table(columns=[]).num_rows == 50
    with pytest.raises(lancelet.InvalidInputError, match="nope"):
        ds.to_table(columns=["nope"])
    # filters themselves are covered by test_filter.py
    assert_tables_equal(ds.to_table(filter="x > 3"), _pylance(p, filter="x > 3"))
    assert ds.count_rows(filter="x > 3") == _pylance(p, filter="x > 3").num_rows


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

def _small(tmp_path, name="e"):
    import lance
    p = tmp_path / name
    lance.write_dataset(_table(0, 20), str(p))
    return p


def _manifest(p: Path) -> Path:
    return sorted((p / "_versions").glob("*.manifest"))[0]


def test_error_missing_dataset_version_tag(tmp_path):
    with pytest.raises(lancelet.NotFoundError, match="no manifests"):
        lancelet.dataset(str(tmp_path / "nothing"))
    p = _small(tmp_path)
    with pytest.raises(lancelet.NotFoundError, match="version 9"):
        lancelet.dataset(str(p), version=9)
    with pytest.raises(lancelet.NotFoundError, match='tag "nope"'):
        lancelet.dataset(str(p), version="nope")
    with pytest.raises(lancelet.NotFoundError):
        lancelet.dataset(str(p)).checkout_version(2)


def test_error_corrupt_manifest(tmp_path):
    p = _small(tmp_path)
    m = _manifest(p)
    data = m.read_bytes()
    m.write_bytes(data[:-3])
    with pytest.raises(lancelet.CorruptFileError, match=m.name):
        lancelet.dataset(str(p))
    m.write_bytes(data[: len(data) // 2] + b"\xff" * (len(data) - len(data) // 2 - 16) + data[-16:])
    with pytest.raises(lancelet.CorruptFileError, match=m.name):
        lancelet.dataset(str(p))


def test_error_unknown_reader_flag(tmp_path):
    p = _small(tmp_path)
    m = _manifest(p)
    data = bytearray(m.read_bytes())
    pos = struct.unpack("<Q", data[-16:-8])[0]
    (n,) = struct.unpack("<I", data[pos:pos + 4])
    # a later occurrence of scalar field 9 (reader_feature_flags) wins: set bit 64
    body = bytes(data[pos + 4:pos + 4 + n]) + bytes([9 << 3, 64])
    m.write_bytes(bytes(data[:pos]) + struct.pack("<I", len(body)) + body + struct.pack("<Q", pos) + bytes(data[-8:]))
    with pytest.raises(lancelet.UnsupportedError, match="0x40"):
        lancelet.dataset(str(p))


def test_error_dangling_data_file(tmp_path):
    p = _small(tmp_path)
    f = next((p / "data").glob("*.lance"))
    f.unlink()
    ds = lancelet.dataset(str(p))           # opening reads only the manifest
    with pytest.raises(lancelet.NotFoundError, match=f.name + ".*fragment 0"):
        ds.to_table()
    with pytest.raises(lancelet.NotFoundError, match=f.name):
        ds.take([1])
    with pytest.raises(lancelet.NotFoundError, match=f.name):
        list(ds.to_batches())


def test_error_deletion_file_out_of_range(tmp_path):
    import lance
    p = _small(tmp_path)
    lance.dataset(str(p)).delete("x = 2")
    dfile = next((p / "_deletions").glob("*.arrow"))
    schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
    with pa.OSFile(str(dfile), "wb") as sink, pa.ipc.new_file(sink, schema) as w:
        w.write_batch(pa.record_batch([pa.array([2, 20], pa.uint32())], schema=schema))
    with pytest.raises(lancelet.CorruptFileError, match=r"row 20.*20 rows"):
        lancelet.dataset(str(p)).to_table()
    dfile.write_bytes(b"not arrow")
    with pytest.raises(lancelet.CorruptFileError, match=dfile.name):
        lancelet.dataset(str(p)).to_table()
    dfile.unlink()
    with pytest.raises(lancelet.NotFoundError, match=dfile.name):
        lancelet.dataset(str(p)).to_table()


def test_bad_arguments(tmp_path):
    p = _small(tmp_path)
    ds = lancelet.dataset(str(p))
    with pytest.raises(lancelet.InvalidInputError):
        ds.to_table(limit=-1)
    with pytest.raises(lancelet.InvalidInputError):
        ds.take([-1])
    with pytest.raises(lancelet.InvalidInputError):
        lancelet.dataset(str(p), version=-1)
    # local paths ignore object-store options, as pylance does; bad ones are refused
    assert lancelet.dataset(str(p), storage_options={"aws_region": "x"}).count_rows() == ds.count_rows()
    with pytest.raises(TypeError):  # a wrong Python type (docs/errors.md)
        lancelet.dataset(str(p), storage_options=["aws_region"])
    with pytest.raises(lancelet.InvalidInputError):
        lancelet.dataset("nosuchstore://bucket/ds")


def test_feature_flags(tmp_path):
    import lance
    p = str(tmp_path / "flags")
    lance.write_dataset(_table(0, 10), p, enable_stable_row_ids=True)
    first = lancelet.dataset(p).feature_flags
    assert first.reader & 2 and "stable_row_ids" in first.reader_names
    assert "deletion_files" not in first.reader_names
    lance.dataset(p).delete("x = 1")
    now = lancelet.dataset(p).feature_flags
    assert now.reader & 1 and "deletion_files" in now.reader_names and "deletion_files" in now.writer_names
    assert lancelet.dataset(p, version=1).feature_flags == first
    plain = lancelet.write_dataset(_table(0, 3), str(tmp_path / "plain")).feature_flags
    assert "stable_row_ids" not in plain.reader_names
    assert len(plain.reader_names) == bin(plain.reader).count("1")
