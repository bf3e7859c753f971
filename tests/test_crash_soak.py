"""Crash and soak tests (slow; fixed seeds).

Kill matrix: a writer process (``crash_worker.py kill``) loops over create /
append / insert / overwrite / delete / restore / tag on a 2.0, 2.1 or 2.2
dataset, with and without stable row ids, and is killed with SIGKILL at a
random moment. Afterwards every acknowledged write is present (each acked
version has exactly the acked content, in lancelet and in pylance), nothing
is half-applied (a version past the last ack holds the complete result of
the operation that was running), acknowledged tags point where they
should, and new writers (lancelet, then pylance) commit on top.

Soak: 4 lancelet and 2 pylance processes append and delete on one dataset
at once; every acknowledged commit is a version, and the final content is
exactly what the acknowledged operations add up to.

Counts of the last run are recorded in docs/errors.md ("Crash and soak
tests"). ``LANCELET_KILL_RUNS`` (kills per cell, default 6) and
``LANCELET_SOAK_COMMITS`` (commits per soak worker, default 20) scale them.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crash_worker import digest, rows

import lancelet

WORKER = str(Path(__file__).resolve().parent / "crash_worker.py")
KILL_RUNS = int(os.environ.get("LANCELET_KILL_RUNS", "6"))
SOAK_COMMITS = int(os.environ.get("LANCELET_SOAK_COMMITS", "20"))

pytestmark = pytest.mark.slow


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def ids_of(t) -> list:
    return t.column("id").to_pylist()


def run_until_killed(uri: str, seed: int, version: str, stable: bool, delay: float) -> list:
    p = subprocess.Popen([sys.executable, WORKER, "kill", uri, str(seed), version, "1" if stable else "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    out, err = p.communicate()
    assert p.returncode == -signal.SIGKILL, f"the writer ended by itself ({p.returncode}): {err.decode()[-2000:]}"
    lines = out.decode().split("\n")
    return [json.loads(line) for line in lines[:-1] if line]  # the last piece may be a cut line


def check_after_kill(uri: str, events: list, lance_mod, stable: bool) -> str:
    """Verify the dataset against what the writer acknowledged; returns
    what the kill interrupted (for the counts)."""
    acks = [e for e in events if "ack" in e]
    begins = [e for e in events if "begin" in e]
    versioned = [a for a in acks if a["ack"] != "tag"]
    if not versioned:
        # killed during create: either no dataset, or the complete first version
        if not (Path(uri) / "_versions").is_dir() or not any((Path(uri) / "_versions").glob("*.manifest")):
            return "create (nothing committed)"
        ds = lancelet.dataset(uri)
        assert ds.version == 1 and digest(ids_of(ds.to_table(columns=["id"]))) == begins[0]["digest"]
        return "create (committed)"
    last = versioned[-1]
    ds = lancelet.dataset(uri)
    assert ds.version >= last["version"], f"acknowledged version {last['version']} lost (latest {ds.version})"
    assert ds.version <= last["version"] + 1, f"{ds.version} is more than one version past the last ack"
    ref = lance_mod.dataset(uri)
    assert ref.version == ds.version
    for a in versioned:
        got = digest(ids_of(lancelet.dataset(uri, version=a["version"]).to_table(columns=["id"])))
        assert got == a["digest"], f"version {a['version']} ({a['ack']}) does not hold what was acknowledged"
    for a in versioned[-3:]:
        got = digest(ids_of(lance_mod.dataset(uri, version=a["version"]).to_table(columns=["id"])))
        assert got == a["digest"], f"pylance reads version {a['version']} differently"
    tags = lancelet.dataset(uri).tags.list()
    for a in acks:
        if a["ack"] == "tag":
            assert tags[a["tag"]]["version"] == a["version"]
    interrupted = begins[-1]
    if "ack" in events[-1]:
        state = "between operations"
    elif ds.version == last["version"] + 1:
        # the operation in flight completed: all of it
        assert interrupted["version"] == ds.version
        assert digest(ids_of(ds.to_table(columns=["id"]))) == interrupted["digest"], \
            f"version {ds.version} ({interrupted['begin']}) is half-applied"
        assert digest(ids_of(ref.to_table(columns=["id"]))) == interrupted["digest"]
        state = f"{interrupted['begin']} (committed)"
    elif interrupted["begin"] == "tag" and interrupted["tag"] in tags:
        assert tags[interrupted["tag"]]["version"] == interrupted["version"]
        state = "tag (committed)"
    else:
        state = f"{interrupted['begin']} (not committed)"
    if stable:
        rid = ds.to_table(columns=["id"], with_row_id=True).column("_rowid").to_pylist()
        assert len(set(rid)) == len(rid)
    return state


def commit_on_top(uri: str, lance_mod) -> None:
    before = set(ids_of(lancelet.dataset(uri).to_table(columns=["id"])))
    lancelet.write_dataset(rows(range(-10, 0)), uri, mode="append")
    lance_mod.write_dataset(rows(range(-20, -10)), uri, mode="append")
    want = digest(before | set(range(-20, 0)))
    assert digest(ids_of(lancelet.dataset(uri).to_table(columns=["id"]))) == want
    assert digest(ids_of(lance_mod.dataset(uri).to_table(columns=["id"]))) == want


@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_kill_matrix(tmp_path, version, stable, lance_mod, capsys):
    rng = random.Random(f"{version}-{stable}")
    states = []
    for run in range(KILL_RUNS):
        uri = str(tmp_path / f"run{run}")
        events = run_until_killed(uri, seed=rng.randrange(10 ** 6), version=version, stable=stable,
                                  delay=rng.uniform(0.3, 6.0))
        states.append(check_after_kill(uri, events, lance_mod, stable))
        if lancelet_exists(uri):
            commit_on_top(uri, lance_mod)
    with capsys.disabled():
        print(f"\nkill matrix {version} {'stable' if stable else 'addr'}: {len(states)} kills: "
              + ", ".join(f"{s} x{states.count(s)}" for s in sorted(set(states))))


def lancelet_exists(uri: str) -> bool:
    try:
        lancelet.dataset(uri)
        return True
    except lancelet.NotFoundError:
        return False


def test_soak_lancelet_and_pylance_writers(tmp_path, lance_mod, capsys):
    uri = str(tmp_path / "soak")
    lancelet.write_dataset(rows(range(1000)), uri)
    workers = [("lancelet", w) for w in range(4)] + [("pylance", w) for w in range(4, 6)]
    procs = [subprocess.Popen([sys.executable, WORKER, f"soak-{lib}", uri, "7", str(w), str(SOAK_COMMITS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env()) for lib, w in workers]
    events = []
    for p in procs:
        out, err = p.communicate(timeout=1800)
        assert p.returncode == 0, err.decode()[-3000:]
        events += [json.loads(line) for line in out.decode().splitlines() if line]
    acks = [e for e in events if "ack" in e]
    conflicts = [e for e in events if "conflict" in e]
    assert len(acks) == len(workers) * SOAK_COMMITS
    # the expected content: every worker's appends minus its deletes, in its order
    want = set(range(1000))
    for _lib, w in workers:
        for e in (a for a in acks if a["worker"] == w):
            op = e["ack"]
            if "append" in op:
                want |= set(range(*op["append"]))
            else:
                want -= set(range(*op["delete"]))
    ds = lancelet.dataset(uri)
    kept = ds.version - 1
    assert kept == len(acks), f"{len(acks)} commits acknowledged, {kept} versions after the first"
    assert digest(ids_of(ds.to_table(columns=["id"]))) == digest(want)
    assert digest(ids_of(lance_mod.dataset(uri).to_table(columns=["id"]))) == digest(want)
    with capsys.disabled():
        print(f"\nsoak: {len(acks)} of {len(acks)} acknowledged commits kept "
              f"({sum(1 for a in acks if a['lib'] == 'lancelet')} lancelet, "
              f"{sum(1 for a in acks if a['lib'] == 'pylance')} pylance), {len(conflicts)} conflicts retried, "
              f"{ds.count_rows()} rows")
