"""Legacy (v0.1) datasets with dictionary columns, written by pylance 14
(``data_storage_version="legacy"``): the keys are pages of the data file,
the values sit in the file that holds the schema (the manifest file, and
the data file's embedded copy), located by ``Field.dictionary``. lancelet
reads them as pylance does, and keeps them readable when it commits on top."""

from __future__ import annotations

import glob
import os

import lance
import pyarrow as pa
import pytest
from datagen import assert_tables_equal

import lancelet
import lancelet.file

pytestmark = pytest.mark.pylance

DICT_S = pa.array(["red", "green", "blue", None])   # stored as "", read back as null (as pylance does)
DICT_I = pa.array([10, -20, 30], pa.int64())


def table(start, n):
    keys_s = pa.array([None if i % 11 == 0 else i % 4 for i in range(start, start + n)], pa.int32())
    keys_i = pa.array([(i * 7) % 3 for i in range(start, start + n)], pa.int8())
    return pa.table({
        "x": pa.array(range(start, start + n), pa.int64()),
        "ds": pa.DictionaryArray.from_arrays(keys_s, DICT_S),
        "di": pa.DictionaryArray.from_arrays(keys_i, DICT_I),
        "s": pa.array([f"s{i}" for i in range(start, start + n)]),
    })


def check_every_version(p, **kw):
    latest = lance.dataset(p).latest_version
    assert lancelet.dataset(p).latest_version == latest
    for v in range(1, latest + 1):
        want = lance.dataset(p, version=v).to_table(**kw)
        got = lancelet.dataset(p, version=v).to_table(**kw)
        assert got.schema == want.schema
        assert_tables_equal(got, want, context=f"v{v} {kw}")


@pytest.fixture
def legacy_dict(tmp_path):
    p = str(tmp_path / "legacy-dict")
    lance.write_dataset(table(0, 100), p, data_storage_version="legacy", max_rows_per_file=60,
                        max_rows_per_group=25)
    lance.write_dataset(table(100, 30), p, mode="append")
    lance.dataset(p).delete("x % 9 = 0")
    return p


def test_reads_like_pylance(legacy_dict):
    p = legacy_dict
    ds = lancelet.dataset(p)
    assert ds.schema.field("ds").type == pa.dictionary(pa.int32(), pa.string())
    assert {d.file_major_version for f in ds.get_fragments() for d in f.data_files()} == {0}
    check_every_version(p)
    check_every_version(p, columns=["di", "x"])
    got = ds.to_table()
    # the legacy format keeps no validity: a null key reads as key 0, as in pylance
    assert got["ds"].null_count == 0
    assert got["ds"].combine_chunks().dictionary.to_pylist() == DICT_S.to_pylist()
    values = DICT_S.to_pylist()
    assert got["ds"].to_pylist() == [values[0 if i % 11 == 0 else i % 4] for i in got["x"].to_pylist()]
    assert got["di"].combine_chunks().dictionary.to_pylist() == DICT_I.to_pylist()
    assert_tables_equal(ds.take([0, 50, 99]), lance.dataset(p).take([0, 50, 99]))
    assert_tables_equal(ds.to_table(filter="x > 100", columns=["ds"]),
                        lance.dataset(p).to_table(filter="x > 100", columns=["ds"]))


def test_data_file_alone(legacy_dict):
    """A legacy data file embeds its schema and the dictionary values."""
    ds = lance.dataset(legacy_dict)
    frag = ds.get_fragments()[0]
    path = os.path.join(legacy_dict, "data", frag.data_files()[0].path)
    got = lancelet.file.LanceFileReader(path).read()
    want = frag.to_table(with_row_address=False)
    # the fragment scan drops deleted rows; the file holds them all
    assert got.num_rows == frag.physical_rows
    keep = [i for i in range(got.num_rows) if got["x"][i].as_py() % 9 != 0]
    assert_tables_equal(got.take(keep), want)


def test_lancelet_commits_keep_the_dictionaries(legacy_dict):
    p = legacy_dict
    ds = lancelet.dataset(p)
    assert ds.delete("x < 5")["num_deleted_rows"] == 4
    lancelet.dataset(p).tags.create("t", 3)
    lancelet.dataset(p, version=2).restore()
    for m in glob.glob(os.path.join(p, "_versions", "*.manifest")):
        with open(m, "rb") as f:
            assert f.read(3) == b"red"      # the values stay where Field.dictionary says
    check_every_version(p)
    assert lance.dataset(p).count_rows() == lancelet.dataset(p).count_rows()
    lance.dataset(p).delete("x = 7")
    check_every_version(p)
