"""V1 (directory listing) and compatibility mode, against pylance 14 as
the oracle where it follows the spec; where pylance 14 does not (root
lookups from directories only, no marker on root deregister, empty
directories listed as tables) these tests check the spec's behaviour."""

from __future__ import annotations

import os

import lance_namespace as ln
import pytest
from nshelp import both, ipc, local_path, rows, table, top, tree

import lancelet
import lancelet.namespace as lns

lance = pytest.importorskip("lance")


def v1(root):
    return both(root, manifest_enabled=False)


def test_v1_layout_and_interop(tmp_path):
    ours, theirs = v1(tmp_path)
    ours.create_table(id=["a"], request_data=table(0))
    theirs.create_table(ln.CreateTableRequest(id=["b"]), ipc(table(1)))
    d = ours.declare_table(id=["c"])
    assert os.listdir(local_path(d.location)) == [".lance-reserved"]
    assert theirs.describe_table(ln.DescribeTableRequest(id=["c"], check_declared=True)).is_only_declared
    for ns in (ours, theirs):
        assert ns.list_tables(ln.ListTablesRequest(id=[])).tables == ["a", "b", "c"]
        assert ns.list_tables(ln.ListTablesRequest(id=[], include_declared=False)).tables == ["a", "b"]
    assert lance.dataset(namespace_client=theirs, table_id=["a"]).to_table() == table(0)
    assert lancelet.dataset(namespace_client=ours, table_id=["b"]).to_table() == table(1)
    # pylance writes the declared table and keeps the marker: a real table
    lance.write_dataset(table(2), namespace_client=theirs, table_id=["c"], mode="append")
    assert ".lance-reserved" in os.listdir(tmp_path / "c.lance")
    assert ours.describe_table(id=["c"], check_declared=True).is_only_declared is False
    assert lancelet.dataset(namespace_client=ours, table_id=["c"]).to_table() == table(2)
    # deregister writes the marker, both stop seeing it, data stays
    ours.deregister_table(id=["a"])
    assert (tmp_path / "a.lance" / ".lance-deregistered").exists()
    for ns in (ours, theirs):
        assert ns.list_tables(ln.ListTablesRequest(id=[])).tables == ["b", "c"]
    with pytest.raises(lns.TableNotFoundError):
        ours.deregister_table(id=["a"])
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.create_table(id=["a"], request_data=table())  # its directory still holds the data
    # V1 re-registration at <name>.lance takes the marker away
    ours.register_table(id=["a"], location="a.lance")
    assert theirs.list_tables(ln.ListTablesRequest(id=[])).tables == ["a", "b", "c"]
    with pytest.raises(lns.UnsupportedError):
        ours.register_table(id=["z"], location="a.lance")
    # drop deletes the directory
    ours.drop_table(id=["b"])
    assert not (tmp_path / "b.lance").exists()
    with pytest.raises(lns.TableNotFoundError):
        ours.drop_table(id=["b"])
    assert "__manifest" not in top(tmp_path)


def test_v1_refuses_nesting(tmp_path):
    ours, _ = v1(tmp_path)
    for f in [
        lambda: ours.create_namespace(id=["p"]),
        lambda: ours.list_tables(id=["p"]),
        lambda: ours.list_namespaces(id=["p"]),
        lambda: ours.create_table(id=["p", "t"], request_data=table()),
        lambda: ours.declare_table(id=["p", "t"]),
        lambda: ours.describe_table(id=["p", "t"]),
        lambda: ours.declare_table(id=["t"], properties={"k": "v"}),
    ]:
        with pytest.raises(lns.UnsupportedError):
            f()
    ours.create_table(id=["t"], request_data=table())
    with pytest.raises(lns.UnsupportedError):
        ours.rename_table(id=["t"], new_table_name="u")
    assert ours.list_namespaces(id=[]).namespaces == []
    assert ours.describe_namespace(id=[]).properties == {}
    assert top(tmp_path) == ["t.lance"]


def test_v1_what_is_not_a_table(tmp_path):
    ours, theirs = v1(tmp_path)
    (tmp_path / "empty.lance" / "data").mkdir(parents=True)  # empty directories
    (tmp_path / "file.lance").write_bytes(b"")  # a file, not a directory
    (tmp_path / "bad$name.lance").mkdir()
    (tmp_path / "bad$name.lance" / "x").write_bytes(b"1")
    (tmp_path / "notlance").mkdir()
    (tmp_path / "notlance" / "x").write_bytes(b"1")
    ours.create_table(id=["real"], request_data=table())
    assert ours.list_tables(id=[]).tables == ["real"]
    with pytest.raises(lns.TableNotFoundError):
        ours.describe_table(id=["empty"])
    # an emptied directory may take a new table
    ours.create_table(id=["empty"], request_data=table())
    assert ours.list_tables(id=[]).tables == ["empty", "real"]


def test_compat_merges_manifest_and_directories(tmp_path):
    ours, theirs = both(tmp_path)
    v1_ours, v1_theirs = v1(tmp_path)
    v1_theirs.create_table(ln.CreateTableRequest(id=["old"]), ipc(table(0)))  # a V1 table, no manifest
    assert ours.list_tables(id=[]).tables == ["old"]
    assert lancelet.dataset(namespace_client=ours, table_id=["old"]).to_table() == table(0)
    ours.create_table(id=["new"], request_data=table(1))  # a row at new.lance
    assert rows(tmp_path)[0]["location"] == "new.lance"
    assert (tmp_path / "new.lance" / "_versions").is_dir()
    assert not (tmp_path / "new.lance" / ".lance-reserved").exists()
    assert v1_theirs.list_tables(ln.ListTablesRequest(id=[])).tables == ["new", "old"]  # V1 readers see both
    ours.create_namespace(id=["ns"])
    ours.create_table(id=["ns", "t"], request_data=table(2))
    assert ours.list_tables(id=[]).tables == ["new", "old"]
    with pytest.raises(lns.NamespaceAlreadyExistsError):
        ours.create_namespace(id=["old"])  # the V1 table has that id
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.create_table(id=["old"], request_data=table())
    # a registered root row is found by name even at another location
    lance.write_dataset(table(3), str(tmp_path / "sub" / "deep.lance"))
    ours.register_table(id=["reg"], location="sub/deep.lance")
    assert ours.list_tables(id=[]).tables == ["new", "old", "reg"]
    assert lancelet.dataset(namespace_client=ours, table_id=["reg"]).to_table() == table(3)


def test_compat_migration_and_v1_only_tables(tmp_path):
    ours, theirs = both(tmp_path)
    _, v1_theirs = v1(tmp_path)
    for n in ("m", "d", "x", "r"):
        v1_theirs.create_table(ln.CreateTableRequest(id=[n]), ipc(table()))
    # migrate: register the V1 table at its own directory
    ours.register_table(id=["m"], location="m.lance", properties={"migrated": "yes"})
    assert [r["object_id"] for r in rows(tmp_path)] == ["m"]
    assert ours.describe_table(id=["m"]).properties == {"migrated": "yes"}
    assert ours.list_tables(id=[]).tables == ["d", "m", "r", "x"]
    # V1-only tables can be deregistered and dropped in compatibility mode
    ours.deregister_table(id=["d"])
    assert (tmp_path / "d.lance" / ".lance-deregistered").exists()
    ours.drop_table(id=["x"])
    assert not (tmp_path / "x.lance").exists()
    assert ours.list_tables(id=[]).tables == ["m", "r"]
    # deregistering a root row at <name>.lance also writes the marker, so
    # neither directory listing nor pylance brings it back
    ours.deregister_table(id=["m"])
    assert (tmp_path / "m.lance" / ".lance-deregistered").exists()
    assert ours.list_tables(id=[]).tables == ["r"]
    assert theirs.list_tables(ln.ListTablesRequest(id=[])).tables == ["r"]
    # register it back: the marker goes
    ours.register_table(id=["m"], location="m.lance")
    assert not (tmp_path / "m.lance" / ".lance-deregistered").exists()
    assert v1_theirs.list_tables(ln.ListTablesRequest(id=[])).tables == ["m", "r"]


def test_compat_rename_root_table(tmp_path):
    ours, theirs = both(tmp_path)
    _, v1_theirs = v1(tmp_path)
    v1_theirs.create_table(ln.CreateTableRequest(id=["old"]), ipc(table(0)))  # V1-only
    ours.create_table(id=["rowed"], request_data=table(1))  # a manifest row at rowed.lance
    ours.rename_table(id=["old"], new_table_name="new1")
    ours.rename_table(id=["rowed"], new_table_name="new2")
    for n in ("old", "rowed"):
        assert (tmp_path / f"{n}.lance" / ".lance-deregistered").exists()
        with pytest.raises(lns.TableNotFoundError):
            ours.describe_table(id=[n])
    assert ours.list_tables(id=[]).tables == ["new1", "new2"]
    assert lancelet.dataset(namespace_client=ours, table_id=["new1"]).to_table() == table(0)
    assert local_path(ours.describe_table(id=["new2"]).location) == tmp_path / "rowed.lance"
    # pylance reads and writes the renamed table through lancelet's namespace
    lance.write_dataset(table(5, 1), namespace_client=ours, table_id=["new2"], mode="append")
    assert lance.dataset(namespace_client=ours, table_id=["new2"]).to_table() == lance.dataset(
        str(tmp_path / "rowed.lance")).to_table()
    assert lance.dataset(namespace_client=ours, table_id=["new2"]).count_rows() == 6
    # the name is free again: a new table takes a fresh directory, the old data stays
    r = ours.create_table(id=["rowed"], request_data=table(9, 1))
    assert os.path.basename(r.location) != "rowed.lance" and r.location.endswith("_rowed")
    assert lancelet.dataset(namespace_client=ours, table_id=["new2"]).count_rows() == 6


def test_v2_only_mode(tmp_path):
    ours, theirs = both(tmp_path, dir_listing_enabled=False)
    _, v1_theirs = v1(tmp_path)
    v1_theirs.create_table(ln.CreateTableRequest(id=["v1"]), ipc(table()))
    assert ours.list_tables(id=[]).tables == []  # directories are not looked at
    r = ours.create_table(id=["t"], request_data=table())
    assert os.path.basename(r.location).endswith("_t") and not r.location.endswith(".lance")
    assert theirs.list_tables(ln.ListTablesRequest(id=[])).tables == ["t"]


def test_drop_leaves_nothing(tmp_path):
    ours, _ = both(tmp_path)
    ours.create_namespace(id=["p"])
    before = tree(tmp_path)
    ours.create_table(id=["p", "t"], request_data=table())
    ours.create_table(id=["r"], request_data=table())
    ours.drop_table(id=["p", "t"])
    ours.drop_table(id=["r"])
    after = [p for p in tree(tmp_path) if not p.startswith("__manifest")]
    assert after == [p for p in before if not p.startswith("__manifest")] == []
