"""Nothing outside the namespace root is ever written, read or deleted:
bad names, ids and locations are refused with InvalidInputError before any
I/O, and manifest rows pointing outside the root (written by another
tool) are refused too. Each case snapshots the root's parent directory and
checks it is unchanged."""

from __future__ import annotations

import os

import lance_namespace as ln
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from nshelp import table, tree

import lancelet.namespace as lns

lance = pytest.importorskip("lance")

BAD_NAMES = ["", ".", "..", "a/b", "../x", "a\\b", "a$b", "tab\there", "nl\n", "nul\x00", "del\x7f", "c1\x85",
             "x" * 250]


@pytest.fixture
def layout(tmp_path):
    """A root with a namespace and a table, and a sibling directory with a
    table of its own that must never be touched."""
    root = tmp_path / "root"
    sibling = tmp_path / "sibling"
    lance.write_dataset(table(), str(sibling / "victim.lance"))
    ns = lns.DirectoryNamespace(root=str(root))
    ns.create_namespace(id=["p"])
    ns.create_table(id=["p", "t"], request_data=table())
    ns.create_table(id=["r"], request_data=table())
    return tmp_path, ns


def _snapshot(path):
    out = {}
    for p in tree(path):
        full = os.path.join(path, p)
        out[p] = None if p.endswith("/") else (os.path.getsize(full), os.stat(full).st_mtime_ns)
    return out


def _all_ops(ns, ident):
    yield lambda: ns.create_table(id=ident, request_data=table())
    yield lambda: ns.declare_table(id=ident)
    yield lambda: ns.describe_table(id=ident)
    yield lambda: ns.table_exists(id=ident)
    yield lambda: ns.drop_table(id=ident)
    yield lambda: ns.deregister_table(id=ident)
    yield lambda: ns.register_table(id=ident, location="x.lance")
    yield lambda: ns.rename_table(id=["r"], new_table_name=ident[-1], new_namespace_id=ident[:-1])
    yield lambda: ns.create_namespace(id=ident)
    yield lambda: ns.drop_namespace(id=ident)
    yield lambda: ns.list_tables(id=ident)
    yield lambda: ns.describe_namespace(id=ident)


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_bad_names_refused_before_io(layout, bad):
    parent, ns = layout
    before = _snapshot(parent)
    for ident in ([bad], ["p", bad], [bad, "t"]):
        for op in _all_ops(ns, ident):
            with pytest.raises(lns.InvalidInputError):
                op()
    assert _snapshot(parent) == before


def test_missing_ids_and_root(layout):
    parent, ns = layout
    before = _snapshot(parent)
    for f in [lambda: ns.describe_table(ln.DescribeTableRequest()),
              lambda: ns.create_table(ln.CreateTableRequest(), b""),
              lambda: ns.list_tables(ln.ListTablesRequest()),
              lambda: ns.drop_table(id=[]),
              lambda: ns.drop_namespace(id=[]),
              lambda: ns.declare_table(id=[])]:
        with pytest.raises(lns.InvalidInputError):
            f()
    assert _snapshot(parent) == before


@pytest.mark.parametrize("location", ["", "/abs/path", "../sibling/victim.lance", "a/../../sibling/victim.lance",
                                      "s3://bucket/x", "file:///tmp/x", "c:/x", "./x", "a//b", "a\\..\\b",
                                      "nothing_here", "p"])
def test_bad_register_locations(layout, location):
    parent, ns = layout
    before = _snapshot(parent)
    with pytest.raises(lns.InvalidInputError):
        ns.register_table(id=["p", "new"], location=location)
    assert _snapshot(parent) == before


def test_manifest_rows_pointing_outside_are_refused(layout):
    parent, ns = layout
    root = parent / "root"
    uri = str(root / "__manifest")
    m = lance.dataset(uri).to_table()
    evil = [{"object_id": oid, "object_type": "table", "location": loc, "metadata": None, "base_objects": None}
            for oid, loc in [("e1", "../sibling/victim.lance"), ("e2", str(parent / "sibling" / "victim.lance")),
                             ("e3", "file://" + str(parent / "sibling" / "victim.lance")), ("e4", None)]]
    lance.write_dataset(pa.concat_tables([m, pa.Table.from_pylist(evil, schema=m.schema)]), uri, mode="overwrite")
    before = _snapshot(parent)
    for oid in ("e1", "e2", "e3", "e4"):
        for op in (lambda: ns.describe_table(id=[oid]), lambda: ns.drop_table(id=[oid]),
                   lambda: ns.deregister_table(id=[oid]), lambda: ns.rename_table(id=[oid], new_table_name="z"),
                   lambda: ns.create_table(id=[oid], request_data=table(), mode="overwrite"),
                   lambda: ns.list_tables(id=[], include_declared=False)):
            with pytest.raises(lns.InvalidInputError):
                op()
    assert _snapshot(parent) == before
    assert ns.list_tables(id=[]).tables == ["e1", "e2", "e3", "e4", "r"]  # listing alone touches nothing
    assert lance.dataset(str(parent / "sibling" / "victim.lance")).count_rows() == 5


def test_v1_bad_names_never_escape(tmp_path):
    """pylance 14 in V1 mode writes ``../x`` outside its root; lancelet refuses."""
    root, outside = tmp_path / "root", tmp_path / "x.lance"
    ns = lns.DirectoryNamespace(root=str(root), manifest_enabled=False)
    for ident in (["../x"], [".."], ["a/b"]):
        with pytest.raises(lns.InvalidInputError):
            ns.create_table(id=ident, request_data=table())
    assert not outside.exists() and not root.exists()


_name_chars = st.characters(codec="utf-8")


@settings(max_examples=150, deadline=None)
@given(name=st.text(_name_chars, min_size=0, max_size=12))
@example(name="A:")  # `A:.lance` would read as a URI: refused up front
@example(name=":a")
def test_any_name_stays_below_the_root(tmp_path_factory, name):
    """Random names either are refused up front or make a table strictly
    inside the root, readable by pylance at the returned location."""
    base = tmp_path_factory.mktemp("h")
    root = base / "root"
    ns = lns.DirectoryNamespace(root=str(root))
    try:
        r = ns.create_table(id=[name], request_data=table(0, 1))
    except lns.InvalidInputError:
        assert not os.path.exists(root)
        return
    assert os.listdir(base) == ["root"]
    loc = os.path.realpath(r.location)
    assert loc.startswith(os.path.realpath(root) + os.sep)
    assert lance.dataset(r.location).count_rows() == 1
    assert ns.list_tables(id=[]).tables == [name]
