"""Process races on one catalog, lancelet and pylance together, locally
and on S3 (SeaweedFS): of several creators of one id exactly one wins,
lancelet's losers get TableAlreadyExistsError / NamespaceAlreadyExistsError
and leave no directory behind, and concurrent creates of different ids
lose nothing. (pylance 14's losers may raise ConcurrentModificationError
and leave their ``<hash>_<id>`` directories: those are only counted.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import lancelet.namespace as lns

lance = pytest.importorskip("lance")

WORKER = str(Path(__file__).with_name("ns_race_worker.py"))


def race(root, racers, kind, storage_options=None, delay=None):
    """Run ``racers`` = [(lib, [ids...]), ...] at once; returns
    [(lib, outcome dict), ...]."""
    env = dict(os.environ, NS_STORAGE_OPTIONS=json.dumps(storage_options or {}))
    start = time.time() + (delay if delay is not None else 2.0 + 0.8 * len(racers))
    procs = [(lib, subprocess.Popen([sys.executable, WORKER, lib, str(root), str(start), kind, *ids],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
             for lib, ids in racers]
    out = []
    for (lib, p), (_, ids) in zip(procs, racers):
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        assert len(lines) == len(ids), (stdout, stderr)
        out += [(lib, o) for o in lines]
    if time.time() < start:
        pytest.fail("the racers finished before the start time: raise the delay")
    return out


def table_dirs(root):
    return sorted(d for d in os.listdir(root) if d != "__manifest")


def check_one_winner(outcomes, expected_error):
    wins = [(lib, o) for lib, o in outcomes if o["ok"]]
    assert len(wins) == 1, outcomes
    for lib, o in outcomes:
        if not o["ok"] and lib == "lancelet":
            assert o["error"] == expected_error and o["lancelet"], o
    return wins[0][0]


@pytest.mark.parametrize("ident", ["ns.t", "t"], ids=["nested", "root"])
def test_same_table_id_local(tmp_path, ident):
    root = tmp_path / "root"
    ns = lns.DirectoryNamespace(root=str(root))
    ns.create_namespace(id=["ns"])
    racers = [("lancelet", [ident])] * 3 + [("pylance", [ident])] * 2
    outcomes = race(root, racers, "table")
    winner = check_one_winner(outcomes, "TableAlreadyExistsError")
    pylance_losers = sum(1 for lib, o in outcomes if lib == "pylance" and not o["ok"])
    dirs = table_dirs(root)
    assert 1 <= len(dirs) <= 1 + pylance_losers, dirs
    got = lance.dataset(namespace_client=ns, table_id=ident.split(".")).to_table().to_pylist()
    assert [r["who"] for r in got] == [winner] * 3


def test_same_table_id_lancelet_only_leaves_one_directory(tmp_path):
    root = tmp_path / "root"
    lns.DirectoryNamespace(root=str(root)).create_namespace(id=["ns"])
    outcomes = race(root, [("lancelet", ["ns.t", "u"])] * 4, "table")
    for ident in (["ns", "t"], ["u"]):
        mine = [(lib, o) for lib, o in outcomes if o["id"] == ident]
        check_one_winner(mine, "TableAlreadyExistsError")
    dirs = table_dirs(root)
    assert len(dirs) == 2 and "u.lance" in dirs and dirs[0].endswith("_ns$t"), dirs
    assert not os.path.exists(root / "u.lance" / ".lance-reserved")


def test_same_namespace_and_declare(tmp_path):
    root = tmp_path / "root"
    outcomes = race(root, [("lancelet", ["a", "b"])] * 3 + [("pylance", ["a", "b"])] * 2, "namespace")
    for ident in (["a"], ["b"]):
        check_one_winner([(lib, o) for lib, o in outcomes if o["id"] == ident], "NamespaceAlreadyExistsError")
    ns = lns.DirectoryNamespace(root=str(root))
    assert ns.list_namespaces(id=[]).namespaces == ["a", "b"]
    outcomes = race(root, [("lancelet", ["a.d"])] * 4, "declare")
    check_one_winner(outcomes, "TableAlreadyExistsError")
    assert len(table_dirs(root)) == 1
    assert ns.list_tables(id=["a"]).tables == ["d"]


def test_different_ids_lose_nothing(tmp_path):
    root = tmp_path / "root"
    racers = []
    for i in range(2):
        racers.append(("lancelet", [f"l{i}_{j}" for j in range(4)]))
        racers.append(("pylance", [f"p{i}_{j}" for j in range(4)]))
    outcomes = race(root, racers, "namespace")
    assert all(o["ok"] for _, o in outcomes if _ == "lancelet"), outcomes
    created = sorted(o["id"][0] for _, o in outcomes if o["ok"])
    ns = lns.DirectoryNamespace(root=str(root))
    assert ns.list_namespaces(id=[]).namespaces == created
    theirs = lance.namespace.DirectoryNamespace(root=str(root))
    import lance_namespace as ln

    assert theirs.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == created
    assert len(created) >= 8  # every lancelet create landed, and pylance's that did are all there


def test_races_on_s3(s3_server):
    so = s3_server.storage_options
    root = f"s3://lancelet/ns-race-{uuid.uuid4().hex[:8]}"
    ns = lns.DirectoryNamespace(root=root, storage_options=so)
    ns.create_namespace(id=["ns"])
    outcomes = race(root, [("lancelet", ["ns.t"])] * 3 + [("pylance", ["ns.t"])] * 1, "table", storage_options=so)
    winner = check_one_winner(outcomes, "TableAlreadyExistsError")
    got = lancelet_rows(ns, ["ns", "t"])
    assert [r["who"] for r in got] == [winner] * 3
    outcomes = race(root, [("lancelet", ["l0", "l1", "l2"]), ("lancelet", ["m0", "m1", "m2"]),
                           ("pylance", ["p0", "p1"])], "namespace", storage_options=so)
    assert all(o["ok"] for lib, o in outcomes if lib == "lancelet"), outcomes
    created = {o["id"][0] for _, o in outcomes if o["ok"]}
    assert set(ns.list_namespaces(id=[]).namespaces) == created | {"ns"}


def lancelet_rows(ns, ident):
    import lancelet

    return lancelet.dataset(namespace_client=ns, table_id=ident).to_table().to_pylist()
