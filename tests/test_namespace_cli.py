"""``lancelet ns ...``: listing, describing, creating, registering,
renaming, deregistering and dropping through the command line, on a
catalog pylance wrote; errors are one stderr line, exit 2 for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import lance_namespace as ln
import pytest
from nshelp import both, ipc, table

from lancelet.cli import main

lance = pytest.importorskip("lance")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def catalog(tmp_path):
    _, theirs = both(tmp_path)
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["prod", "eu"]))
    theirs.create_table(ln.CreateTableRequest(id=["prod", "clicks"], properties={"owner": "ads"}), ipc(table()))
    theirs.create_table(ln.CreateTableRequest(id=["top"]), ipc(table()))
    return str(tmp_path)


def test_lists_and_describe(catalog, capsys):
    assert run(capsys, "ns", "namespaces", catalog) == (0, "prod\n", "")
    assert run(capsys, "ns", "namespaces", catalog, "prod", "--json") == (0, '["eu"]\n', "")
    assert run(capsys, "ns", "tables", catalog, "prod") == (0, "clicks\n", "")
    assert run(capsys, "ns", "tables", catalog, "") == (0, "top\n", "")
    assert run(capsys, "ns", "tables", catalog, '["prod"]', "--json") == (0, '["clicks"]\n', "")
    code, out, _ = run(capsys, "ns", "describe", catalog, "prod.clicks", "--json")
    d = json.loads(out)
    assert code == 0 and d["id"] == ["prod", "clicks"] and d["version"] == 1 and d["properties"] == {"owner": "ads"}
    assert os.path.isdir(d["location"])
    code, out, _ = run(capsys, "ns", "describe", catalog, "prod.clicks")
    assert code == 0 and "version     1" in out and '"owner": "ads"' in out


def test_changes(catalog, capsys):
    assert run(capsys, "ns", "create-namespace", catalog, "dev", "-p", "team=x", "-p", "tier=2")[0] == 0
    ours, theirs = both(catalog)
    assert theirs.describe_namespace(ln.DescribeNamespaceRequest(id=["dev"])).properties == {"team": "x", "tier": "2"}
    assert run(capsys, "ns", "rename", catalog, "prod.clicks", "views", "--to", "dev")[0] == 0
    assert theirs.list_tables(ln.ListTablesRequest(id=["dev"])).tables == ["views"]
    assert run(capsys, "ns", "deregister", catalog, "dev.views")[0] == 0
    loc = [d for d in os.listdir(catalog) if d.endswith("_prod$clicks")][0]
    assert run(capsys, "ns", "register", catalog, "dev.again", loc)[0] == 0
    assert run(capsys, "ns", "tables", catalog, "dev")[1] == "again\n"
    assert run(capsys, "ns", "drop", catalog, "dev.again")[0] == 0
    assert not os.path.exists(os.path.join(catalog, loc))
    assert run(capsys, "ns", "drop-namespace", catalog, "dev")[0] == 0
    assert run(capsys, "ns", "namespaces", catalog)[1] == "prod\n"


def test_errors(catalog, capsys, tmp_path):
    code, out, err = run(capsys, "ns", "describe", catalog, "prod.nope")
    assert code == 1 and out == "" and err.count("\n") == 1 and "prod.nope" in err and err.startswith("lancelet ns:")
    code, _, err = run(capsys, "ns", "tables", catalog, "nope")
    assert code == 1 and "namespace not found" in err
    code, _, err = run(capsys, "ns", "drop-namespace", catalog, "prod")
    assert code == 1 and "not empty" in err
    code, _, err = run(capsys, "ns", "describe", catalog, '["a/b"]')
    assert code == 2 and err.count("\n") == 1
    code, _, err = run(capsys, "ns", "register", catalog, "x", "../outside")
    assert code == 2
    code, _, err = run(capsys, "ns", "drop-namespace", catalog, "")
    assert code == 2
    code, _, err = run(capsys, "ns", "tables", catalog, "--manifest-enabled", "maybe")
    assert code == 2
    code, _, err = run(capsys, "ns", "create-namespace", catalog, "x", "--manifest-enabled", "false")
    assert code == 1 and "manifest_enabled" in err  # unsupported in V1
    code, out, err = run(capsys, "ns", "tables", catalog, "--manifest-enabled", "false", "--json")
    assert (code, out) == (0, '["top"]\n')


def test_console_script(catalog):
    out = subprocess.run([sys.executable, "-m", "lancelet", "ns", "tables", catalog, "prod"], capture_output=True,
                         text=True)
    assert out.returncode == 0 and out.stdout == "clicks\n", out.stderr
