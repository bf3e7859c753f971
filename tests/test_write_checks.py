"""Writes refuse what cannot be read back, and keep the dataset's version
(issue 15, items 4-8), checked against pylance 14.

4. ``schema=`` with other names than the data: InvalidInputError naming them.
5. Duplicate field names (top level or nested): refused before writing.
6. An empty or unknown ``data_storage_version``: InvalidInputError listing
   the versions accepted.
7. Tag names: a non-str is a TypeError; empty names and names that would
   leave ``_refs/tags/`` are InvalidInputError; pylance's other rules too.
8. Append and overwrite keep the dataset's storage version unless another is
   asked for, and then do what pylance 14 does; both libraries read every
   result, whichever wrote it.
"""
from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

import lancelet
import lancelet.distributed
import lancelet.file
from lancelet.exceptions import InvalidInputError

pytestmark = pytest.mark.pylance


def table(n: int = 3, start: int = 0) -> pa.Table:
    return pa.table({"a": pa.array(range(start, start + n), pa.int64()),
                     "b": pa.array([f"s{i}" for i in range(start, start + n)])})


# -- 4 ---------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["create", "append", "overwrite"])
def test_schema_with_other_names(tmp_path, mode):
    uri = str(tmp_path / "ds")
    if mode != "create":
        lancelet.write_dataset(table(), uri)
    other = pa.schema([("x", pa.int64()), ("b", pa.string())])
    with pytest.raises(InvalidInputError, match=r"only in the data: \['a'\].*only in the schema: \['x'\]"):
        lancelet.write_dataset(table(), uri, mode=mode, schema=other)
    order = pa.schema([("b", pa.string()), ("a", pa.int64())])
    with pytest.raises(InvalidInputError, match="not in the order"):
        lancelet.write_dataset(table(), uri, mode=mode, schema=order)


def test_schema_given_casts_the_data(tmp_path, lance_mod):
    uri = str(tmp_path / "ds")
    wide = pa.schema([("a", pa.int64()), ("b", pa.large_string())])
    lancelet.write_dataset(table(), uri, schema=wide)
    assert lancelet.dataset(uri).schema == wide
    assert lance_mod.dataset(uri).schema == wide
    with pytest.raises(InvalidInputError, match="does not fit the schema"):
        lancelet.write_dataset(table(), str(tmp_path / "d2"), schema=pa.schema([("a", pa.int64()), ("b", pa.int32())]))
    reader = pa.RecordBatchReader.from_batches(table().schema, table().to_batches())
    with pytest.raises(InvalidInputError, match="only in the schema"):
        lancelet.write_dataset(reader, uri, mode="append", schema=pa.schema([("a", pa.int64()), ("c", pa.string())]))


# -- 5 ---------------------------------------------------------------------

def _dup_top():
    return pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["x", "x"])


def _dup_struct():
    fields = [pa.field("a", pa.int64()), pa.field("a", pa.int64())]
    return pa.Table.from_arrays([pa.StructArray.from_arrays([pa.array([1]), pa.array([2])], fields=fields)],
                                names=["s"])


def _dup_list_of_struct():
    fields = [pa.field("k", pa.int64()), pa.field("k", pa.string())]
    items = pa.StructArray.from_arrays([pa.array([1]), pa.array(["a"])], fields=fields)
    return pa.Table.from_arrays([pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), items)], names=["l"])


@pytest.mark.parametrize("make,path", [(_dup_top, '"x"'), (_dup_struct, '"s.a"'), (_dup_list_of_struct, '"l.item.k"')],
                         ids=["top", "struct", "list-of-struct"])
def test_duplicate_names_refused(tmp_path, make, path, lance_mod):
    uri = str(tmp_path / "ds")
    with pytest.raises(InvalidInputError, match=f"duplicate field name {path}"):
        lancelet.write_dataset(make(), uri)
    assert not (tmp_path / "ds" / "_versions").exists() or not any((tmp_path / "ds" / "_versions").iterdir())
    with pytest.raises(InvalidInputError, match="duplicate field name"):
        lancelet.file.write_table(make(), str(tmp_path / "f.lance"))
    if make is _dup_top:  # pylance refuses this one too
        with pytest.raises(Exception, match="Duplicate field name"):
            lance_mod.write_dataset(make(), str(tmp_path / "ref"))


def test_duplicate_names_refused_on_append(tmp_path):
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(pa.table({"x": [1], "y": [2]}), uri)
    dup = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["x", "x"])
    with pytest.raises(InvalidInputError, match='duplicate field name "x"'):
        lancelet.write_dataset(dup, uri, mode="append")
    with pytest.raises(InvalidInputError, match='duplicate field name "x"'):
        lancelet.dataset(uri).insert(dup)
    assert lancelet.dataset(uri).version == 1


# -- 6 ---------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["", "2.5", " 2.1", "V2.1", "abc"])
def test_unknown_storage_version(tmp_path, bad, lance_mod):
    uri = str(tmp_path / "ds")
    with pytest.raises(InvalidInputError) as e:
        lancelet.write_dataset(table(), uri, data_storage_version=bad)
    msg = str(e.value)
    assert repr(bad).replace("'", '"') in msg and "2.0, 2.1, 2.2" in msg, msg
    with pytest.raises(ValueError):  # pylance refuses these too
        lance_mod.write_dataset(table(), str(tmp_path / "ref"), data_storage_version=bad)
    lancelet.write_dataset(table(), uri)
    for mode in ("append", "overwrite"):
        with pytest.raises(InvalidInputError):
            lancelet.write_dataset(table(), uri, mode=mode, data_storage_version=bad)
    with pytest.raises(InvalidInputError):
        lancelet.distributed.plan_write(uri, table().schema, data_storage_version=bad)


# -- 7 ---------------------------------------------------------------------

def test_tag_names(tmp_path, lance_mod):
    uri = str(tmp_path / "ds")
    ds = lancelet.write_dataset(table(), uri)
    for bad in (None, 5, 1.5, b"t"):
        with pytest.raises(TypeError, match="tag"):
            ds.tags.create(bad, 1)
    with pytest.raises(TypeError, match="tag"):
        ds.tags.delete(None)
    for bad in ("", "a/b", "../x", "..", ".", ".x", "x.", "a..b", "a b", "x.lock", "a\\b", "a\x00b", "t" * 251):
        with pytest.raises(InvalidInputError, match="bad tag name"):
            ds.tags.create(bad, 1)
    assert ds.tags.list() == {}
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "ds" / "_refs" / "x.json").exists()
    for good in ("-x", "a.b", "v1.0-rc_2"):
        ds.tags.create(good, 1)
    assert sorted(ds.tags.list()) == sorted(["-x", "a.b", "v1.0-rc_2"])
    assert sorted(lance_mod.dataset(uri).tags.list()) == sorted(ds.tags.list())
    assert lancelet.dataset(uri, version="a.b").version == 1
    # pylance also takes non-ASCII letters; lancelet refuses them (object
    # stores list such names percent-encoded)
    with pytest.raises(InvalidInputError, match="bad tag name"):
        ds.tags.create("é", 1)


# -- 8 ---------------------------------------------------------------------

def describe(ds) -> tuple:
    files = sorted({(d.file_major_version, d.file_minor_version) for f in ds.get_fragments() for d in f.data_files()})
    return ds.data_storage_version, files


# every (base, mode, asked) for datasets lancelet created; those pylance
# created: each base with no version and another version asked for
CELLS = [("lancelet", b, m, a) for b in ("2.0", "2.1", "2.2") for m in ("append", "overwrite")
         for a in (None, "2.0", "2.1", "2.2")] + \
        [("lancelet", "2.0", m, "stable") for m in ("append", "overwrite")] + \
        [("pylance", b, m, a) for b in ("2.0", "2.1", "2.2") for m in ("append", "overwrite")
         for a in (None, "2.2" if b != "2.2" else "2.0")]


@pytest.mark.parametrize("creator,base,mode,asked", CELLS)
def test_storage_version_kept_like_pylance(tmp_path, lance_mod, creator, base, mode, asked):
    ours, ref = str(tmp_path / "ours"), str(tmp_path / "ref")
    if creator == "lancelet":
        lancelet.write_dataset(table(), ours, data_storage_version=base)
    else:
        lance_mod.write_dataset(table(), ours, data_storage_version=base)
    shutil.copytree(ours, ref)
    kw = {} if asked is None else {"data_storage_version": asked}
    lancelet.write_dataset(table(2, 10), ours, mode=mode, **kw)
    lance_mod.write_dataset(table(2, 10), ref, mode=mode, **kw)
    got = describe(lancelet.dataset(ours))
    assert got == describe(lancelet.dataset(ref)), f"lancelet wrote {got}, pylance wrote {describe(lancelet.dataset(ref))}"
    # both libraries read both results
    want = sorted(lance_mod.dataset(ref).to_table().column("a").to_pylist())
    for uri in (ours, ref):
        assert sorted(lancelet.dataset(uri).to_table().column("a").to_pylist()) == want
        assert sorted(lance_mod.dataset(uri).to_table().column("a").to_pylist()) == want
    assert lance_mod.dataset(ours).data_storage_version == lance_mod.dataset(ref).data_storage_version
    # and pylance can write on top of what lancelet wrote
    lance_mod.write_dataset(table(1, 20), ours, mode="append")
    assert lancelet.dataset(ours).count_rows() == len(want) + 1


def test_overwrite_of_legacy_dataset(tmp_path, lance_mod):
    """pylance keeps writing legacy files on an overwrite without a version;
    lancelet cannot write them and says so, and with a 2.x version asked for
    it replaces the dataset as pylance does."""
    uri = str(tmp_path / "legacy")
    lance_mod.write_dataset(table(), uri, data_storage_version="legacy")
    with pytest.raises(lancelet.UnsupportedError, match="legacy"):
        lancelet.write_dataset(table(), uri, mode="overwrite")
    with pytest.raises(lancelet.UnsupportedError, match="legacy"):
        lancelet.write_dataset(table(), uri, mode="append")
    with pytest.raises(InvalidInputError, match="mixed"):
        lancelet.write_dataset(table(), uri, mode="append", data_storage_version="2.1")
    lancelet.write_dataset(table(2, 10), uri, mode="overwrite", data_storage_version="2.1")
    assert describe(lancelet.dataset(uri)) == ("2.1", [(2, 1)])
    assert lance_mod.dataset(uri).count_rows() == 2


def test_distributed_overwrite_keeps_version(tmp_path, lance_mod):
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(table(), uri, data_storage_version="2.0")
    plan = lancelet.distributed.plan_write(uri, table().schema, mode="overwrite")
    plan.commit(plan.write(table(2, 10)))
    assert describe(lancelet.dataset(uri)) == ("2.0", [(2, 0)])
    assert lance_mod.dataset(uri).count_rows() == 2
    plan = lancelet.distributed.plan_write(uri, table().schema, mode="overwrite", data_storage_version="2.1")
    plan.commit(plan.write(table(2, 10)))
    assert describe(lancelet.dataset(uri)) == ("2.1", [(2, 1)])
    assert lance_mod.dataset(uri).count_rows() == 2
