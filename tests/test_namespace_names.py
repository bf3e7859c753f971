"""Table and namespace names with spaces, non-ASCII letters, emoji and
the characters object stores like to percent-encode (``%``, ``#``, ``?``,
``[``, ``~``), in both libraries, both ways, on one root.

pylance 14 (the oracle) writes a table's data to ``<8 hex>_<object id>``
(V2) or ``<name>.lance`` (V1) with the name's raw UTF-8 bytes, and
``__manifest.location`` says so; lancelet must read from, and create,
exactly those directories. The 8 hex digits are random in pylance 14 (a
hash of a random number and the object id), so only their form can match.

pylance 14 itself is not consistent for names that object_store
percent-encodes (non-ASCII, ``%``, ``#`` ...): its declared check, its
``.lance-reserved`` marker and its drop use the percent-encoded directory
(``q1 %C3%BC``) while its data goes to the raw one. So pylance calls its
own such tables "only declared". The tests ask pylance only what it
answers consistently, and check that pylance answers the same about a
table lancelet made as about one it made itself."""

from __future__ import annotations

import os
import re
import urllib.parse

import lance_namespace as ln
import pytest
from nshelp import both, ipc, local_path, rows, table

import lancelet

lance = pytest.importorskip("lance")

# Names both libraries accept: a dozen and more, ASCII and not.
NAMES = ["sales 2024-ü", "q1 ü", "plain", "a.b", "a-b", "😀", " lead", "trail ", "x\u00a0y",
         "e\u0301", "日本語", "%41", "a#1", "a?b", "[x]", "~x", "a:b", "..."]
# Names pylance 14 handles consistently everywhere (object_store leaves
# them alone): pylance's describe_table and declared checks work for them.
SAFE = {"plain", "a.b", "a-b", " lead", "trail ", "a:b", "..."}
# Root (V1) names: the nested ones but `a:b` (a root `a:b.lance` reads as a URI).
ROOT_NAMES = [n for n in NAMES if n != "a:b"]


def _data(i: int):
    return table(10 * i, 3)


def _table_locations(root) -> dict:
    return {r["object_id"]: r["location"] for r in rows(root) if r["object_type"] == "table"}


def _pylance_path(uri: str) -> str:
    """A pylance location (a percent-encoded file:// URI) as a local path."""
    return urllib.parse.unquote(urllib.parse.urlparse(uri).path) if uri.startswith("file://") else uri


def _check_v2_dir(location: str, object_id: str):
    # <8 lowercase hex>_<object id, raw UTF-8>: the form pylance writes
    assert re.fullmatch(r"[0-9a-f]{8}_" + re.escape(object_id), location), (location, object_id)
    assert location.encode()[9:] == object_id.encode("utf-8")


def test_v2_pylance_creates_lancelet_lists_describes_reads_drops(tmp_path):
    ours, theirs = both(tmp_path)
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    for i, n in enumerate(NAMES):
        theirs.create_table(ln.CreateTableRequest(id=["prod", n]), ipc(_data(i)))
    theirs.declare_table(ln.DeclareTableRequest(id=["prod", "decl ü"]))
    locs = _table_locations(tmp_path)
    for n in NAMES:  # the oracle's layout: data below the manifest's location
        _check_v2_dir(locs[f"prod${n}"], f"prod${n}")
        assert (tmp_path / locs[f"prod${n}"] / "_versions").is_dir()

    assert ours.list_tables(id=["prod"]).tables == sorted(NAMES + ["decl ü"])
    assert ours.list_tables(id=["prod"], include_declared=False).tables == sorted(NAMES)
    for i, n in enumerate(NAMES):
        d = ours.describe_table(id=["prod", n], check_declared=True)
        assert d.is_only_declared is False, n
        assert d.location == str(tmp_path / locs[f"prod${n}"])
        assert lancelet.dataset(namespace_client=ours, table_id=["prod", n]).to_table() == _data(i)
        # pylance's location is a percent-encoded file:// URI; lancelet decodes it as pylance does
        theirs_loc = theirs.describe_table(ln.DescribeTableRequest(id=["prod", n])).location
        assert _pylance_path(theirs_loc) == d.location
        assert lancelet.dataset(namespace_client=theirs, table_id=["prod", n]).to_table() == _data(i)
        assert lancelet.dataset(theirs_loc).version == 1
    assert ours.describe_table(id=["prod", "decl ü"], check_declared=True).is_only_declared is True
    # lancelet appends to a pylance table; pylance reads it back
    lancelet.write_dataset(_data(99), namespace_client=ours, table_id=["prod", "q1 ü"], mode="append")
    assert lance.dataset(namespace_client=theirs, table_id=["prod", "q1 ü"]).count_rows() == 6
    # dropping removes the data directory the manifest names
    for n in ["sales 2024-ü", "%41", "😀"]:
        ours.drop_table(id=["prod", n])
        assert not (tmp_path / locs[f"prod${n}"]).exists(), n
    assert "sales 2024-ü" not in theirs.list_tables(ln.ListTablesRequest(id=["prod"])).tables


def test_v2_lancelet_creates_pylance_lists_describes_reads(tmp_path):
    root, twin = tmp_path / "ours", tmp_path / "twin"
    ours, theirs = both(root)
    ns = ["sales", "emea", "fr"]
    for k in range(1, 4):
        ours.create_namespace(id=ns[:k])
    for i, n in enumerate(NAMES):
        ours.create_table(id=ns + [n], request_data=_data(i))
    ours.declare_table(id=ns + ["decl ü"])
    locs = _table_locations(root)
    for n in NAMES + ["decl ü"]:
        _check_v2_dir(locs["sales$emea$fr$" + n], "sales$emea$fr$" + n)
    # the directories are exactly the manifest's locations (no percent-encoded twins)
    assert sorted(os.listdir(root)) == sorted(list(locs.values()) + ["__manifest"])
    assert os.listdir(root / locs["sales$emea$fr$decl ü"]) == [".lance-reserved"]
    assert ours.describe_table(id=ns + ["decl ü"], check_declared=True).is_only_declared is True
    assert ours.list_tables(id=ns, include_declared=False).tables == sorted(NAMES)

    assert theirs.list_tables(ln.ListTablesRequest(id=ns)).tables == sorted(NAMES + ["decl ü"])
    for i, n in enumerate(NAMES):
        d = theirs.describe_table(ln.DescribeTableRequest(id=ns + [n]))
        assert _pylance_path(d.location) == str(root / locs["sales$emea$fr$" + n])
        assert lance.dataset(namespace_client=theirs, table_id=ns + [n]).to_table() == _data(i)
        assert lance.dataset(namespace_client=ours, table_id=ns + [n]).to_table() == _data(i)
    # pylance writes the first version of a table lancelet declared
    lance.write_dataset(_data(7), namespace_client=theirs, table_id=ns + ["decl ü"], mode="append")
    assert ours.describe_table(id=ns + ["decl ü"], check_declared=True).is_only_declared is False
    assert lancelet.dataset(namespace_client=ours, table_id=ns + ["decl ü"]).to_table() == _data(7)

    # pylance says the same about lancelet's tables as about its own
    # (including its "only declared" for names it percent-encodes)
    _, twins = both(twin)
    for k in range(1, 4):
        twins.create_namespace(ln.CreateNamespaceRequest(id=ns[:k]))
    for i, n in enumerate(NAMES):
        twins.create_table(ln.CreateTableRequest(id=ns + [n]), ipc(_data(i)))
    for n in NAMES:
        mine = theirs.describe_table(ln.DescribeTableRequest(id=ns + [n], check_declared=True)).is_only_declared
        own = twins.describe_table(ln.DescribeTableRequest(id=ns + [n], check_declared=True)).is_only_declared
        assert mine == own, n
        if n in SAFE:
            assert mine is False, n
    listed = lambda ns_client: ns_client.list_tables(ln.ListTablesRequest(id=ns, include_declared=False)).tables  # noqa: E731
    assert set(listed(theirs)) - {"decl ü"} == set(listed(twins))


def test_v2_directory_names_match_pylances_form(tmp_path):
    """The directory name is `<8 hex>_` + the object id's UTF-8 bytes in
    both libraries; the 8 hex digits are random per create in both."""
    prefixes = {"ours": set(), "theirs": set()}
    for k in range(3):
        ours, theirs = both(tmp_path / f"r{k}")
        ours.create_namespace(id=["n"])
        for i, n in enumerate(NAMES):
            ours.create_table(id=["n", n + " L"], request_data=_data(i))
            theirs.create_table(ln.CreateTableRequest(id=["n", n + " P"]), ipc(_data(i)))
        raw = os.listdir(os.fsencode(tmp_path / f"r{k}"))
        for n in NAMES:
            for lib, name in (("ours", n + " L"), ("theirs", n + " P")):
                want = ("n$" + name).encode("utf-8")
                hits = [d for d in raw if d[9:] == want]
                assert len(hits) == 1 and re.fullmatch(rb"[0-9a-f]{8}_", hits[0][:9]), (name, raw)
                if n == "plain":
                    prefixes[lib].add(hits[0][:8])
    assert len(prefixes["theirs"]) > 1 and len(prefixes["ours"]) > 1, prefixes


def test_v1_names_both_ways(tmp_path):
    ours, theirs = both(tmp_path, manifest_enabled=False)
    pyl = ROOT_NAMES[::2]
    mine = ROOT_NAMES[1::2]
    for i, n in enumerate(pyl):
        theirs.create_table(ln.CreateTableRequest(id=[n]), ipc(_data(i)))
    for i, n in enumerate(mine):
        ours.create_table(id=[n], request_data=_data(100 + i))
    ours.declare_table(id=["decl ü"])
    # the V1 layout: <name>.lance, raw
    assert sorted(os.listdir(tmp_path)) == sorted(n + ".lance" for n in ROOT_NAMES + ["decl ü"])
    assert os.listdir(tmp_path / "decl ü.lance") == [".lance-reserved"]
    everything = sorted(ROOT_NAMES + ["decl ü"])
    assert ours.list_tables(id=[]).tables == everything
    assert ours.list_tables(id=[], include_declared=False).tables == sorted(ROOT_NAMES)
    assert theirs.list_tables(ln.ListTablesRequest(id=[])).tables == everything
    for i, n in enumerate(pyl):
        d = ours.describe_table(id=[n], check_declared=True)
        assert d.location == str(tmp_path / f"{n}.lance") and d.is_only_declared is False
        assert lancelet.dataset(namespace_client=ours, table_id=[n]).to_table() == _data(i)
    for i, n in enumerate(mine):
        assert lance.dataset(str(tmp_path / f"{n}.lance")).to_table() == _data(100 + i)
        assert lance.dataset(namespace_client=ours, table_id=[n]).to_table() == _data(100 + i)
        if n in SAFE:
            assert lance.dataset(namespace_client=theirs, table_id=[n]).to_table() == _data(100 + i)
    ours.drop_table(id=[pyl[0]])
    assert not (tmp_path / f"{pyl[0]}.lance").exists()


def test_compatibility_mode_root_tables(tmp_path):
    ours, theirs = both(tmp_path)
    theirs.create_table(ln.CreateTableRequest(id=["p ü%41"]), ipc(_data(1)))
    theirs.create_table(ln.CreateTableRequest(id=["p q"]), ipc(_data(3)))
    ours.create_table(id=["l ü#1"], request_data=_data(2))
    ours.create_table(id=["l q"], request_data=_data(4))
    ours.declare_table(id=["d ü"])
    assert _table_locations(tmp_path) == {n: f"{n}.lance" for n in ["p ü%41", "p q", "l ü#1", "l q", "d ü"]}
    assert sorted(os.listdir(tmp_path)) == sorted(["__manifest"] + [f"{n}.lance" for n in ["p ü%41", "p q", "l ü#1", "l q", "d ü"]])
    assert os.listdir(tmp_path / "d ü.lance") == [".lance-reserved"]
    assert ours.list_tables(id=[], include_declared=False).tables == sorted(["l q", "l ü#1", "p q", "p ü%41"])
    assert lancelet.dataset(namespace_client=ours, table_id=["p ü%41"]).to_table() == _data(1)
    assert lancelet.dataset(namespace_client=ours, table_id=["p q"]).to_table() == _data(3)
    assert theirs.list_tables(ln.ListTablesRequest(id=[])).tables == sorted(["d ü", "l q", "l ü#1", "p q", "p ü%41"])
    assert lance.dataset(namespace_client=theirs, table_id=["l q"]).to_table() == _data(4)
    assert lance.dataset(str(tmp_path / "l ü#1.lance")).to_table() == _data(2)
    # pylance 14 cannot describe a root table whose name object_store
    # percent-encodes: neither its own nor lancelet's
    for n in ["p ü%41", "l ü#1"]:
        with pytest.raises(ln.TableNotFoundError):
            theirs.describe_table(ln.DescribeTableRequest(id=[n]))


def test_file_uris_are_percent_decoded_like_pylance(tmp_path):
    """`file://` URIs are URLs: `%20`, `%C3%BC` name a space and `ü`, as in pylance."""
    for i, name in enumerate(["a b", "ü", "%41", "x#y"]):
        path = tmp_path / "ds" / f"{name}.lance"
        uri = "file://" + urllib.parse.quote(str(path))
        lancelet.write_dataset(_data(i), uri)
        assert path.is_dir(), sorted(os.listdir(tmp_path / "ds"))
        assert lance.dataset(uri).to_table() == _data(i)
        assert lancelet.dataset(uri).to_table() == _data(i)
        assert lancelet.dataset(str(path)).to_table() == _data(i)
    assert sorted(os.listdir(tmp_path / "ds")) == sorted(f"{n}.lance" for n in ["a b", "ü", "%41", "x#y"])
    # a namespace root given as an encoded file:// URI is the same root
    root = tmp_path / "root ü"
    ours, theirs = both(root)
    theirs.create_table(ln.CreateTableRequest(id=["t"]), ipc(_data(5)))
    import lancelet.namespace as lns

    by_uri = lns.DirectoryNamespace(root="file://" + urllib.parse.quote(str(root)))
    assert by_uri.list_tables(id=[]).tables == ["t"]
    assert local_path(by_uri.describe_table(id=["t"]).location) == root / "t.lance"
    assert lancelet.dataset(namespace_client=by_uri, table_id=["t"]).to_table() == _data(5)
