"""Directory namespaces (lancelet.namespace) against pylance 14's
DirectoryNamespace as the oracle, both ways, on one root: V2 with nested
namespaces, declared / deregistered / registered / dropped / renamed
tables, the __manifest table itself, properties, pagination, errors, and
dataset()/write_dataset() through either library's namespace. V1 and
compatibility mode are in test_namespace_v1.py."""

from __future__ import annotations

import os
import subprocess
import sys

import lance_namespace as ln
import pyarrow as pa
import pytest
from nshelp import both, ipc, local_path, names, rows, table, top

import lancelet
import lancelet.namespace as lns

lance = pytest.importorskip("lance")


def test_import_lancelet_does_not_load_lance_namespace():
    code = ("import sys, lancelet, lancelet.dataset, lancelet.exceptions, lancelet.cli;"
            "assert 'lance_namespace' not in sys.modules, 'loaded';"
            "assert 'lancelet.namespace' not in sys.modules;"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # lancelet.exceptions hands out the namespace errors on demand
    assert lancelet.exceptions.TableNotFoundError is lns.TableNotFoundError


def test_errors_are_both_libraries_classes():
    pairs = [
        (lns.NamespaceNotFoundError, ln.NamespaceNotFoundError, lancelet.NotFoundError),
        (lns.TableNotFoundError, ln.TableNotFoundError, lancelet.NotFoundError),
        (lns.NamespaceAlreadyExistsError, ln.NamespaceAlreadyExistsError, lancelet.AlreadyExistsError),
        (lns.TableAlreadyExistsError, ln.TableAlreadyExistsError, lancelet.AlreadyExistsError),
        (lns.NamespaceNotEmptyError, ln.NamespaceNotEmptyError, lancelet.LanceletError),
        (lns.InvalidInputError, ln.InvalidInputError, lancelet.InvalidInputError),
        (lns.UnsupportedError, ln.UnsupportedOperationError, lancelet.UnsupportedError),
    ]
    for ours, theirs, base in pairs:
        e = ours("boom")
        assert isinstance(e, theirs) and isinstance(e, base) and isinstance(e, lancelet.LanceletError)
        assert str(e) == "boom" and e.code == theirs.code
    assert lns.UnsupportedOperationError is lns.UnsupportedError


def test_nested_v2_written_by_lancelet_read_by_pylance(tmp_path):
    ours, theirs = both(tmp_path)
    ours.create_namespace(id=["a"], properties={"owner": "x"})
    ours.create_namespace(ln.CreateNamespaceRequest(id=["a", "b"]))
    ours.create_namespace({"id": ["a", "b", "c"]})
    for ident, start in ([["a", "t1"], 0], [["a", "b", "t2"], 10], [["a", "b", "c", "t3"], 20]):
        r = ours.create_table(ln.CreateTableRequest(id=ident, properties={"k": ident[-1]}), ipc(table(start)))
        assert r.version == 1
        assert r.properties == {"k": ident[-1]}
    for ns in (ours, theirs):
        assert names(ns.list_namespaces(ln.ListNamespacesRequest(id=[]))) == ["a"]
    assert theirs.list_namespaces(ln.ListNamespacesRequest(id=["a", "b"])).namespaces == ["c"]
    assert theirs.list_tables(ln.ListTablesRequest(id=["a", "b", "c"])).tables == ["t3"]
    assert theirs.describe_namespace(ln.DescribeNamespaceRequest(id=["a"])).properties == {"owner": "x"}
    d = theirs.describe_table(ln.DescribeTableRequest(id=["a", "b", "c", "t3"]))
    assert d.properties == {"k": "t3"}
    assert lance.dataset(namespace_client=theirs, table_id=["a", "b", "c", "t3"]).to_table() == table(20)
    assert lance.dataset(namespace_client=ours, table_id=["a", "b", "t2"]).to_table() == table(10)
    # layout: one __manifest, tables at <8 hex>_<object id>
    dirs = [d for d in top(tmp_path) if d != "__manifest"]
    assert sorted(d[9:] for d in dirs) == ["a$b$c$t3", "a$b$t2", "a$t1"]
    assert all(len(d.split("_")[0]) == 8 and int(d.split("_")[0], 16) >= 0 for d in dirs)
    assert {r["object_id"]: r["object_type"] for r in rows(tmp_path)} == {
        "a": "namespace", "a$b": "namespace", "a$b$c": "namespace",
        "a$t1": "table", "a$b$t2": "table", "a$b$c$t3": "table"}
    ours_d = ours.describe_table(id=["a", "b", "c", "t3"])
    assert local_path(ours_d.location) == local_path(d.location)


def test_nested_v2_written_by_pylance_read_by_lancelet(tmp_path):
    ours, theirs = both(tmp_path)
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["a"], properties={"p": "1"}))
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["a", "b"]))
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["a", "b", "c"]))
    theirs.create_table(ln.CreateTableRequest(id=["a", "b", "c", "t"], properties={"q": "2"}), ipc(table(3)))
    theirs.declare_table(ln.DeclareTableRequest(id=["a", "d"]))
    assert ours.list_namespaces(id=["a"]).namespaces == ["b"]
    assert ours.list_tables(id=["a"]).tables == ["d"]
    assert ours.list_tables(id=["a"], include_declared=False).tables == []
    assert ours.describe_namespace(id=["a"]).properties == {"p": "1"}
    d = ours.describe_table(id=["a", "b", "c", "t"], check_declared=True)
    assert d.properties == {"q": "2"} and d.is_only_declared is False
    assert d.table == "t" and d.namespace == ["a", "b", "c"]
    assert ours.describe_table(id=["a", "d"], check_declared=True).is_only_declared is True
    assert ours.describe_table(id=["a", "d"]).is_only_declared is None
    assert lancelet.dataset(namespace_client=ours, table_id=["a", "b", "c", "t"]).to_table() == table(3)
    assert lancelet.dataset(namespace_client=theirs, table_id=["a", "b", "c", "t"]).to_table() == table(3)
    assert ours.count_table_rows(id=["a", "b", "c", "t"]).count == 5
    assert ours.count_table_rows(id=["a", "b", "c", "t"], predicate="x > 5").count == 2


def test_manifest_table_is_exactly_pylances(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    ours, _ = both(a)
    _, theirs = both(b)
    ours.create_namespace(id=["n"])
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["n"]))
    sa = lance.dataset(str(a / "__manifest")).schema
    sb = lance.dataset(str(b / "__manifest")).schema
    assert sa.equals(sb, check_metadata=True)
    assert sa.field("object_id").metadata == {b"lance-schema:unenforced-primary-key:position": b"0"}
    assert rows(a) == rows(b)
    # pylance's own view of the primary key survives lancelet's schema writing
    assert "unenforced_primary_key_position: Some(0)" in str(lance.dataset(str(a / "__manifest")).lance_schema)


def test_reads_create_nothing(tmp_path):
    ours, _ = both(tmp_path)
    assert ours.list_tables(id=[]).tables == []
    assert ours.list_namespaces(id=[]).namespaces == []
    assert ours.describe_namespace(id=[]).properties == {}
    with pytest.raises(lns.TableNotFoundError):
        ours.describe_table(id=["t"])
    assert top(tmp_path) == []


def test_declared_then_written_by_the_other_library(tmp_path):
    ours, theirs = both(tmp_path)
    ours.create_namespace(id=["p"])
    # lancelet declares, pylance writes through its own namespace
    r = ours.declare_table(id=["p", "d1"], properties={"k": "v"})
    assert r.properties == {"k": "v"}
    assert theirs.describe_table(ln.DescribeTableRequest(id=["p", "d1"], check_declared=True)).is_only_declared
    assert os.listdir(local_path(r.location)) == [".lance-reserved"]
    lance.write_dataset(table(0), namespace_client=theirs, table_id=["p", "d1"], mode="append")
    assert ours.describe_table(id=["p", "d1"], check_declared=True).is_only_declared is False
    assert lancelet.dataset(namespace_client=ours, table_id=["p", "d1"]).to_table() == table(0)
    # pylance declares (via write_dataset create), lancelet appends and reads
    lance.write_dataset(table(0, 2), namespace_client=theirs, table_id=["p", "d2"])
    lancelet.write_dataset(table(2, 2), namespace_client=ours, table_id=["p", "d2"], mode="append")
    assert lance.dataset(namespace_client=theirs, table_id=["p", "d2"]).to_table() == table(0, 4)
    # lancelet's write_dataset(create) declares through pylance's namespace
    lancelet.write_dataset(table(7, 3), namespace_client=theirs, table_id=["p", "d3"])
    assert lance.dataset(namespace_client=theirs, table_id=["p", "d3"]).to_table() == table(7, 3)
    with pytest.raises(ln.TableAlreadyExistsError):
        lancelet.write_dataset(table(7, 3), namespace_client=theirs, table_id=["p", "d3"])
    # pylance's write_dataset(create) declares through lancelet's namespace
    lance.write_dataset(table(9, 1), namespace_client=ours, table_id=["p", "d4"])
    assert lancelet.dataset(namespace_client=ours, table_id=["p", "d4"]).to_table() == table(9, 1)
    assert ours.list_tables(id=["p"]).tables == ["d1", "d2", "d3", "d4"]


def test_failed_first_write_takes_the_declaration_back(tmp_path):
    ours, theirs = both(tmp_path)
    before = rows(tmp_path) if (tmp_path / "__manifest").exists() else []
    with pytest.raises(lancelet.InvalidInputError):
        lancelet.write_dataset(pa.table({}), namespace_client=ours, table_id=["t"])
    with pytest.raises(lns.TableNotFoundError):
        ours.describe_table(id=["t"])
    assert [r for r in rows(tmp_path)] == before
    assert "t.lance" not in top(tmp_path)


def test_deregister_register_drop(tmp_path):
    ours, theirs = both(tmp_path)
    ours.create_namespace(id=["p"])
    loc = ours.create_table(id=["p", "t"], request_data=table(0)).location
    r = ours.deregister_table(id=["p", "t"])
    assert local_path(r.location) == local_path(loc)
    assert os.path.isdir(local_path(loc))  # data kept
    for ns in (ours, theirs):
        with pytest.raises(ln.TableNotFoundError):
            ns.describe_table(ln.DescribeTableRequest(id=["p", "t"]))
    with pytest.raises(lns.TableNotFoundError):
        ours.deregister_table(id=["p", "t"])
    rel = os.path.basename(local_path(loc))
    # register it back under another name, with properties
    reg = ours.register_table(id=["p", "u"], location=rel, properties={"r": "1"})
    assert reg.location == rel and reg.properties == {"r": "1"}
    assert theirs.describe_table(ln.DescribeTableRequest(id=["p", "u"])).properties == {"r": "1"}
    assert lance.dataset(namespace_client=theirs, table_id=["p", "u"]).to_table() == table(0)
    with pytest.raises(lns.InvalidInputError, match="already registered"):
        ours.register_table(id=["p", "v"], location=rel)
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.register_table(id=["p", "u"], location=rel)
    ours.drop_table(id=["p", "u"])
    assert not os.path.exists(local_path(loc))
    with pytest.raises(lns.TableNotFoundError):
        ours.drop_table(id=["p", "u"])
    with pytest.raises(ln.TableNotFoundError):
        theirs.describe_table(ln.DescribeTableRequest(id=["p", "u"]))
    assert [r["object_id"] for r in rows(tmp_path)] == ["p"]


def test_register_over_declared_and_overwrite(tmp_path):
    ours, theirs = both(tmp_path)
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
    lance.write_dataset(table(0), str(tmp_path / "elsewhere" / "x.lance"))
    decl = ours.declare_table(id=["p", "t"], properties={"d": "1"})
    reg = ours.register_table(id=["p", "t"], location="elsewhere/x.lance")
    assert reg.properties == {"d": "1"}  # the declaration's properties are kept
    assert not os.path.exists(local_path(decl.location))  # the placeholder is gone
    assert lance.dataset(namespace_client=theirs, table_id=["p", "t"]).to_table() == table(0)
    lance.write_dataset(table(5), str(tmp_path / "y.lance"))
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.register_table(id=["p", "t"], location="y.lance")
    ours.register_table(id=["p", "t"], location="y.lance", mode="overwrite")
    assert lancelet.dataset(namespace_client=ours, table_id=["p", "t"]).to_table() == table(5)
    assert os.path.isdir(tmp_path / "elsewhere" / "x.lance")  # registered data is never deleted by a re-register


def test_rename(tmp_path):
    ours, theirs = both(tmp_path)
    for ns in (["a"], ["b"]):
        ours.create_namespace(id=ns)
    loc = ours.create_table(id=["a", "t"], request_data=table(0), properties={"k": "v"}).location
    ours.create_table(id=["b", "taken"], request_data=table(1))
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.rename_table(id=["a", "t"], new_table_name="taken", new_namespace_id=["b"])
    with pytest.raises(lns.NamespaceNotFoundError):
        ours.rename_table(id=["a", "t"], new_table_name="x", new_namespace_id=["nope"])
    with pytest.raises(lns.TableNotFoundError):
        ours.rename_table(id=["a", "missing"], new_table_name="x")
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.rename_table(id=["a", "t"], new_table_name="t")
    v_before = lance.dataset(str(tmp_path / "__manifest")).version
    ours.rename_table(ln.RenameTableRequest(id=["a", "t"], new_table_name="t2", new_namespace_id=["b"]))
    assert lance.dataset(str(tmp_path / "__manifest")).version == v_before + 1  # one commit
    with pytest.raises(ln.TableNotFoundError):
        theirs.describe_table(ln.DescribeTableRequest(id=["a", "t"]))
    d = theirs.describe_table(ln.DescribeTableRequest(id=["b", "t2"]))
    assert local_path(d.location) == local_path(loc) and d.properties == {"k": "v"}
    lance.write_dataset(table(5, 1), namespace_client=theirs, table_id=["b", "t2"], mode="append")
    assert lance.dataset(namespace_client=theirs, table_id=["b", "t2"]).to_table() == table(0, 6)
    assert ours.list_tables(id=["a"]).tables == []
    assert ours.list_tables(id=["b"]).tables == ["t2", "taken"]
    # within the same namespace (new_namespace_id defaults to the table's)
    ours.rename_table(id=["b", "t2"], new_table_name="t3")
    assert theirs.list_tables(ln.ListTablesRequest(id=["b"])).tables == ["t3", "taken"]


def test_missing_namespace_and_taken_ids(tmp_path):
    ours, _ = both(tmp_path)
    ours.create_namespace(id=["p"])
    ours.create_table(id=["p", "t"], request_data=table())
    missing = [
        lambda: ours.list_tables(id=["zz"]),
        lambda: ours.list_namespaces(id=["zz"]),
        lambda: ours.describe_namespace(id=["zz"]),
        lambda: ours.namespace_exists(id=["p", "zz"]),
        lambda: ours.drop_namespace(id=["zz"]),
        lambda: ours.create_namespace(id=["zz", "y"]),
        lambda: ours.describe_table(id=["zz", "t"]),
        lambda: ours.table_exists(id=["zz", "t"]),
        lambda: ours.create_table(id=["zz", "t"], request_data=table()),
        lambda: ours.declare_table(id=["zz", "t"]),
        lambda: ours.register_table(id=["zz", "t"], location="x"),
        lambda: ours.deregister_table(id=["zz", "t"]),
        lambda: ours.drop_table(id=["zz", "t"]),
        lambda: ours.rename_table(id=["zz", "t"], new_table_name="u"),
    ]
    for f in missing:
        with pytest.raises(lns.NamespaceNotFoundError):
            f()
    ours.drop_namespace(id=["zz"], mode="skip")
    with pytest.raises(lns.NamespaceAlreadyExistsError):
        ours.create_namespace(id=["p"])
    with pytest.raises(lns.NamespaceAlreadyExistsError):
        ours.create_namespace(id=["p", "t"])  # a table has that id
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.create_table(id=["p"], request_data=table())  # a namespace has that id
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.declare_table(id=["p", "t"])
    with pytest.raises(lns.NamespaceNotEmptyError):
        ours.drop_namespace(id=["p"])
    with pytest.raises(lns.UnsupportedError):
        ours.drop_namespace(id=["p"], behavior="Cascade")
    with pytest.raises(lns.InvalidInputError):
        ours.drop_namespace(id=[])
    with pytest.raises(lns.NamespaceAlreadyExistsError):
        ours.create_namespace(id=[])
    ours.create_namespace(id=["p"], mode="exist_ok")
    ours.namespace_exists(id=[])
    ours.namespace_exists(id=["p"])
    ours.table_exists(id=["p", "t"])
    with pytest.raises(lns.TableNotFoundError):
        ours.table_exists(id=["p", "u"])
    ours.drop_table(id=["p", "t"])
    ours.drop_namespace(id=["p"])
    with pytest.raises(lns.NamespaceNotFoundError):
        ours.drop_namespace(id=["p"])


def test_create_modes_and_input_forms(tmp_path):
    ours, theirs = both(tmp_path)
    r = ours.create_table(ln.CreateTableRequest(id=["t"]), table(0).to_reader())
    assert r.version == 1
    assert ours.create_table(ln.CreateTableRequest(id=["t"], mode="ExistOk"), ipc(table(9))).version == 1
    r = ours.create_table(ln.CreateTableRequest(id=["t"], mode="overwrite"), ipc(table(3, 2)))
    assert r.version == 2
    assert lance.dataset(namespace_client=theirs, table_id=["t"]).to_table() == table(3, 2)
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.create_table(id=["t"], request_data=table())
    with pytest.raises(lns.InvalidInputError, match="mode"):
        ours.create_table(id=["u"], request_data=table(), mode="sometimes")
    with pytest.raises(lns.InvalidInputError, match="IPC"):
        ours.create_table(id=["u"], request_data=b"not arrow")
    with pytest.raises(lns.InvalidInputError):
        ours.list_tables(ln.ListTablesRequest(id=[]), id=[])  # a request and keywords
    with pytest.raises(lns.InvalidInputError):
        ours.list_tables(id="prod")  # a string, not a list
    with pytest.raises(lns.InvalidInputError):
        ours.list_tables()  # no id
    ns = ours.create_namespace(id=["n"], properties={"a": "1"})
    assert ns.properties == {"a": "1"}
    assert ours.create_namespace(id=["n"], mode="exist_ok").properties == {"a": "1"}
    assert ours.create_namespace(id=["n"], mode="overwrite", properties={"b": "2"}).properties == {"b": "2"}
    assert theirs.describe_namespace(ln.DescribeNamespaceRequest(id=["n"])).properties == {"b": "2"}


def test_pagination_tokens_work_across_libraries(tmp_path):
    ours, theirs = both(tmp_path)
    for n in ["e", "a", "d", "c", "b"]:
        theirs.create_namespace(ln.CreateNamespaceRequest(id=[n]))
        ours.create_table(id=[n + "t"], request_data=table())
    got, token = [], None
    while True:
        page = ours.list_namespaces(id=[], limit=2, page_token=token)
        got += page.namespaces
        if page.page_token is None:
            break
        # pylance continues from our token, and the other way round
        theirs_page = theirs.list_namespaces(ln.ListNamespacesRequest(id=[], limit=2, page_token=page.page_token))
        assert theirs_page.namespaces == ours.list_namespaces(id=[], limit=2, page_token=page.page_token).namespaces
        token = page.page_token
    assert got == ["a", "b", "c", "d", "e"]
    p1 = theirs.list_tables(ln.ListTablesRequest(id=[], limit=3))
    assert ours.list_tables(id=[], limit=3).tables == p1.tables == ["at", "bt", "ct"]
    assert ours.list_tables(id=[], page_token=p1.page_token).tables == ["dt", "et"]
    with pytest.raises(lns.InvalidInputError):
        ours.list_tables(id=[], limit=0)


def test_root_properties_and_feature_flags(tmp_path):
    ours, theirs = both(tmp_path)
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
    m = lance.dataset(str(tmp_path / "__manifest"))
    m.update_metadata({"owner": "team", "lance.namespace.manifest.reader_feature_flags": "0"})
    assert ours.describe_namespace(id=[]).properties == {"owner": "team"}
    ours.create_namespace(id=["q"])  # flags 0: fine, and the map is kept
    assert lance.dataset(str(tmp_path / "__manifest")).metadata["owner"] == "team"
    lance.dataset(str(tmp_path / "__manifest")).update_metadata({"lance.namespace.manifest.writer_feature_flags": "2"})
    assert ours.list_namespaces(id=[]).namespaces == ["p", "q"]  # reading is fine
    with pytest.raises(lns.UnsupportedError, match="feature flags"):
        ours.create_namespace(id=["r"])
    lance.dataset(str(tmp_path / "__manifest")).update_metadata({"lance.namespace.manifest.reader_feature_flags": "1"})
    with pytest.raises(lns.UnsupportedError, match="feature flags"):
        ours.list_namespaces(id=[])


def test_unknown_columns_and_object_types_are_kept(tmp_path):
    ours, theirs = both(tmp_path)
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
    theirs.create_table(ln.CreateTableRequest(id=["p", "t"]), ipc(table()))
    # another implementation's catalog: an extra column and a "view" row
    uri = str(tmp_path / "__manifest")
    m = lance.dataset(uri).to_table()
    m = m.append_column("extra", pa.array([f"e{i}" for i in range(m.num_rows)]))
    view = {"object_id": "p$v", "object_type": "view", "location": None, "metadata": None, "base_objects": ["p$t"],
            "extra": "ve"}
    m = pa.concat_tables([m, pa.Table.from_pylist([view], schema=m.schema)])
    lance.write_dataset(m, uri, mode="overwrite")
    assert ours.list_tables(id=["p"]).tables == ["t"]
    ours.create_table(id=["p", "new"], request_data=table())  # an Append
    ours.rename_table(id=["p", "t"], new_table_name="t2")  # an Overwrite
    got = {r["object_id"]: r for r in lance.dataset(uri).to_table().to_pylist()}
    assert got["p$v"]["object_type"] == "view" and got["p$v"]["extra"] == "ve" and got["p$v"]["base_objects"] == ["p$t"]
    assert got["p$t2"]["extra"] is not None and got["p$t2"]["extra"].startswith("e")  # renamed row keeps its values
    assert got["p$new"]["extra"] is None
    with pytest.raises(lns.TableAlreadyExistsError):
        ours.create_table(id=["p", "v"], request_data=table())  # the view's id is taken
    assert theirs.list_tables(ln.ListTablesRequest(id=["p"])).tables == ["new", "t2"]


def test_pylance_indexed_manifest(tmp_path):
    """pylance with inline_optimization_enabled keeps BTREE/bitmap/label-list
    indexes on __manifest; lancelet reads it, appends and deletes rows, and
    pylance (which looks rows up through the indexes) still finds them all."""
    import lance.namespace

    theirs = lance.namespace.DirectoryNamespace(root=str(tmp_path), inline_optimization_enabled="true")
    ours = lns.DirectoryNamespace(root=str(tmp_path))
    for i in range(4):
        theirs.create_namespace(ln.CreateNamespaceRequest(id=[f"n{i}"]))
    theirs.create_table(ln.CreateTableRequest(id=["n0", "t"]), ipc(table()))
    assert lance.dataset(str(tmp_path / "__manifest")).list_indices()
    assert ours.list_namespaces(id=[]).namespaces == ["n0", "n1", "n2", "n3"]
    ours.create_namespace(id=["n4"])
    ours.create_table(id=["n4", "u"], request_data=table(1))
    ours.drop_namespace(id=["n2"])
    ours.deregister_table(id=["n0", "t"])
    assert lance.dataset(str(tmp_path / "__manifest")).list_indices()  # appends and deletes keep them
    for ident in (["n0"], ["n1"], ["n3"], ["n4"]):
        theirs.namespace_exists(ln.NamespaceExistsRequest(id=ident))
    with pytest.raises(ln.NamespaceNotFoundError):
        theirs.namespace_exists(ln.NamespaceExistsRequest(id=["n2"]))
    with pytest.raises(ln.TableNotFoundError):
        theirs.describe_table(ln.DescribeTableRequest(id=["n0", "t"]))
    assert theirs.list_tables(ln.ListTablesRequest(id=["n4"])).tables == ["u"]
    assert lance.dataset(namespace_client=theirs, table_id=["n4", "u"]).to_table() == table(1)
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["n5"]))  # pylance rebuilds on its next change
    assert ours.list_namespaces(id=[]).namespaces == ["n0", "n1", "n3", "n4", "n5"]


def test_connect_and_registration(tmp_path):
    ns = lns.connect("dir", {"root": str(tmp_path)})
    assert isinstance(ns, lns.DirectoryNamespace) and isinstance(ns, ln.LanceNamespace)
    assert isinstance(ln.connect("lancelet", {"root": str(tmp_path)}), lns.DirectoryNamespace)
    assert isinstance(ln.connect("lancelet.namespace.DirectoryNamespace", {"root": str(tmp_path)}),
                      lns.DirectoryNamespace)
    assert type(lns.connect("lance.namespace.DirectoryNamespace", {"root": str(tmp_path)})).__module__ == "lance.namespace"
    with pytest.raises(lns.InvalidInputError):
        lns.DirectoryNamespace(manifest_enabled="true")
    with pytest.raises(lns.InvalidInputError):
        lns.DirectoryNamespace(root=str(tmp_path), manifest_enabled="maybe")
    with pytest.raises(lns.InvalidInputError):
        lns.DirectoryNamespace(root=str(tmp_path), manifest_enabled=False, dir_listing_enabled="false")
    ns = lns.DirectoryNamespace(root=str(tmp_path), manifest_enabled=True, **{"storage.region": "x",
                                                                            "whatever": "ignored"},
                                storage_options={"timeout": "30s"})
    assert ns.storage_options == {"region": "x", "timeout": "30s"}
    r = ns.create_table(id=["t"], request_data=table())
    assert r.storage_options == {"region": "x", "timeout": "30s"}
    assert ns.describe_table(id=["t"]).storage_options == {"region": "x", "timeout": "30s"}
    assert ns.namespace_id() == lns.DirectoryNamespace(root=str(tmp_path)).namespace_id()
    # lancelet.dataset works with these options (local stores ignore them)
    assert lancelet.dataset(namespace_client=ns, table_id=["t"]).count_rows() == 5
    with pytest.raises(lancelet.InvalidInputError):
        lancelet.dataset(str(tmp_path / "t.lance"), namespace_client=ns, table_id=["t"])
    with pytest.raises(lancelet.InvalidInputError):
        lancelet.dataset(namespace_client=ns)


def test_locations_are_plain_paths(tmp_path):
    """Names with %, #, spaces and non-ASCII letters resolve to the same
    directory in both libraries (no percent-encoded file:// locations)."""
    ours, theirs = both(tmp_path)
    ours.create_namespace(id=["ns %41"])
    for name in ["a%41", "b#c", "d e", "ü€", "x?y"]:
        r = ours.create_table(id=["ns %41", name], request_data=table())
        assert os.path.isdir(r.location), r.location
        assert lance.dataset(r.location).count_rows() == 5
        assert lance.dataset(namespace_client=ours, table_id=["ns %41", name]).count_rows() == 5
        assert lance.dataset(namespace_client=theirs, table_id=["ns %41", name]).count_rows() == 5
    # file:// roots give the same plain locations
    uri_ns = lns.DirectoryNamespace(root="file://" + str(tmp_path))
    assert uri_ns.describe_table(id=["ns %41", "a%41"]).location == ours.describe_table(id=["ns %41", "a%41"]).location
    assert ours.list_tables(id=["ns %41"]).tables == ["a%41", "b#c", "d e", "x?y", "ü€"]
