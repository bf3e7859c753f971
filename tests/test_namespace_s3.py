"""Directory namespaces on S3 (the SeaweedFS server of s3_server.py),
shared by lancelet and pylance: nested V2 tables, compatibility-mode root
tables, markers, drop, and emptied prefixes (which SeaweedFS keeps as
directories) not taken for tables."""

from __future__ import annotations

import uuid

import lance_namespace as ln
import pytest
from nshelp import ipc, table

import lancelet
import lancelet.namespace as lns

lance = pytest.importorskip("lance")


@pytest.fixture
def root(s3_server):
    return f"s3://lancelet/ns-{uuid.uuid4().hex[:10]}"


def pair(root, so, **props):
    import lance.namespace

    ours = lns.DirectoryNamespace(root=root, storage_options=so, **props)
    theirs = lance.namespace.DirectoryNamespace(root=root, **{f"storage.{k}": v for k, v in so.items()},
                                                **{k: str(v).lower() for k, v in props.items()})
    return ours, theirs


def test_s3_both_ways(s3_server, root):
    so = s3_server.storage_options
    ours, theirs = pair(root, so)
    ours.create_namespace(id=["a"])
    ours.create_namespace(id=["a", "b"])
    r = ours.create_table(id=["a", "b", "t"], request_data=table(0), properties={"k": "v"})
    assert r.location.startswith(root + "/") and r.storage_options == so
    theirs.create_table(ln.CreateTableRequest(id=["a", "p"]), ipc(table(1)))
    theirs.create_table(ln.CreateTableRequest(id=["root_t"]), ipc(table(2)))
    assert ours.list_tables(id=["a"]).tables == ["p"]
    assert ours.list_tables(id=[]).tables == ["root_t"]
    assert theirs.list_tables(ln.ListTablesRequest(id=["a", "b"])).tables == ["t"]
    assert theirs.describe_table(ln.DescribeTableRequest(id=["a", "b", "t"])).properties == {"k": "v"}
    assert lance.dataset(namespace_client=theirs, table_id=["a", "b", "t"], storage_options=so).to_table() == table(0)
    assert lance.dataset(namespace_client=ours, table_id=["a", "b", "t"]).to_table() == table(0)
    assert lancelet.dataset(namespace_client=ours, table_id=["a", "p"]).to_table() == table(1)
    assert lancelet.dataset(namespace_client=theirs, table_id=["root_t"], storage_options=so).to_table() == table(2)
    lancelet.write_dataset(table(5), namespace_client=ours, table_id=["a", "w"])
    lance.write_dataset(table(6), namespace_client=ours, table_id=["a", "w"], mode="append", storage_options=so)
    assert lancelet.dataset(namespace_client=ours, table_id=["a", "w"]).count_rows() == 10
    ours.rename_table(id=["a", "w"], new_table_name="w2", new_namespace_id=["a", "b"])
    assert lance.dataset(namespace_client=theirs, table_id=["a", "b", "w2"], storage_options=so).count_rows() == 10


def test_s3_compat_markers_and_drop(s3_server, root):
    so = s3_server.storage_options
    ours, theirs = pair(root, so)
    v1_ours, v1_theirs = pair(root, so, manifest_enabled=False)
    v1_theirs.create_table(ln.CreateTableRequest(id=["old"]), ipc(table()))
    ours.create_table(id=["new"], request_data=table(1))
    assert ours.list_tables(id=[]).tables == ["new", "old"]
    assert v1_ours.list_tables(id=[]).tables == ["new", "old"]
    ours.declare_table(id=["decl"])
    assert v1_theirs.describe_table(ln.DescribeTableRequest(id=["decl"], check_declared=True)).is_only_declared
    ours.deregister_table(id=["new"])
    assert v1_ours.list_tables(id=[]).tables == ["decl", "old"]
    ours.drop_table(id=["old"])
    ours.drop_table(id=["decl"])
    # the emptied prefixes may still be listed by the server: not tables
    assert ours.list_tables(id=[]).tables == []
    assert v1_ours.list_tables(id=[]).tables == []
    with pytest.raises(lns.TableNotFoundError):
        ours.describe_table(id=["old"])
    # a dropped name can be created again in its emptied directory
    ours.create_table(id=["old"], request_data=table(7))
    assert lance.dataset(namespace_client=theirs, table_id=["old"], storage_options=so).to_table() == table(7)


def test_s3_bad_names_and_locations(s3_server, root):
    ours, _ = pair(root, s3_server.storage_options)
    for bad in ["..", "a/b", "a$b", ""]:
        with pytest.raises(lns.InvalidInputError):
            ours.create_table(id=[bad], request_data=table())
    for loc in ["../x", "s3://lancelet/other", "/abs"]:
        with pytest.raises(lns.InvalidInputError):
            ours.register_table(id=["t"], location=loc)
    assert ours.list_tables(id=[]).tables == []


def test_s3_names_with_spaces_and_non_ascii_letters(s3_server, root):
    """On S3 too, a table's objects live under the raw UTF-8 name the
    manifest's location gives (pylance's keys), whichever library wrote it."""
    so = s3_server.storage_options
    ours, theirs = pair(root, so)
    ours.create_namespace(id=["p"])
    names = ["q1 ü", "%41 #1", "😀"]
    for i, n in enumerate(names):
        theirs.create_table(ln.CreateTableRequest(id=["p", f"{n} P"]), ipc(table(i)))
        ours.create_table(id=["p", f"{n} L"], request_data=table(10 + i))
    ours.declare_table(id=["p", "decl ü"])
    both_names = sorted([f"{n} P" for n in names] + [f"{n} L" for n in names])
    assert ours.list_tables(id=["p"], include_declared=False).tables == both_names
    assert theirs.list_tables(ln.ListTablesRequest(id=["p"])).tables == sorted(both_names + ["decl ü"])
    locs = {r["object_id"]: r["location"]
            for r in lance.dataset(f"{root}/__manifest", storage_options=so).to_table().to_pylist()}
    for i, n in enumerate(names):
        for suffix, data in (("P", table(i)), ("L", table(10 + i))):
            ident = ["p", f"{n} {suffix}"]
            assert locs["$".join(ident)].endswith("_" + "$".join(ident))
            d = ours.describe_table(id=ident, check_declared=True)
            assert d.is_only_declared is False
            assert lancelet.dataset(namespace_client=ours, table_id=ident).to_table() == data
            assert lancelet.dataset(namespace_client=theirs, table_id=ident, storage_options=so).to_table() == data
            assert lance.dataset(namespace_client=theirs, table_id=ident, storage_options=so).to_table() == data
    assert ours.describe_table(id=["p", "decl ü"], check_declared=True).is_only_declared is True
    ours.drop_table(id=["p", "q1 ü P"])
    assert "q1 ü P" not in theirs.list_tables(ln.ListTablesRequest(id=["p"])).tables
