"""Commit messages and transaction properties (issue 30, item 2: one shape
for table operations).

pylance 14 records ``write_dataset(commit_message=..., transaction_properties=...)``
in the version's transaction (the message under ``__lance_commit_message``).
lancelet takes the same arguments on ``write_dataset``, ``Dataset.insert`` and
a distributed ``WritePlan.commit``; pylance reads back the same properties
from versions either library wrote. Bad values are refused before anything
is written.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

import lancelet
from lancelet.distributed import plan_write
from lancelet.exceptions import InvalidInputError

pytestmark = pytest.mark.pylance


def _t(start: int = 0, n: int = 5) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "s": [f"s{i}" for i in range(start, start + n)]})


def _props(lance_mod, uri: str, version: int) -> dict:
    return dict(lance_mod.dataset(uri).read_transaction(version).transaction_properties)


@pytest.mark.parametrize("mode", ["create", "append", "overwrite"])
def test_write_dataset_records_what_pylance_records(tmp_path, lance_mod, mode):
    kw = dict(commit_message="nightly load", transaction_properties={"job": "etl-7", "batch": "3"})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    if mode != "create":
        lancelet.write_dataset(_t(), ours)
        lance_mod.write_dataset(_t(), theirs)
    lancelet.write_dataset(_t(10), ours, mode=mode, **kw)
    lance_mod.write_dataset(_t(10), theirs, mode=mode, **kw)
    v = 1 if mode == "create" else 2
    want = _props(lance_mod, theirs, v)
    assert want == {"job": "etl-7", "batch": "3", "__lance_commit_message": "nightly load"}
    assert _props(lance_mod, ours, v) == want
    # The data is what was written, for both readers.
    assert lance_mod.dataset(ours).to_table().equals(lancelet.dataset(theirs).to_table())


def test_message_only_and_nothing(tmp_path, lance_mod):
    uri = str(tmp_path / "d")
    lancelet.write_dataset(_t(), uri)
    assert _props(lance_mod, uri, 1) == {}
    lancelet.write_dataset(_t(5), uri, mode="append", commit_message="just a message")
    assert _props(lance_mod, uri, 2) == {"__lance_commit_message": "just a message"}
    # A commit_message wins over the same key in transaction_properties (as in pylance).
    lancelet.write_dataset(_t(9), uri, mode="append", commit_message="m",
                           transaction_properties={"__lance_commit_message": "x", "k": "v"})
    assert _props(lance_mod, uri, 3) == {"__lance_commit_message": "m", "k": "v"}


def test_insert_and_distributed_commit(tmp_path, lance_mod):
    uri = str(tmp_path / "d")
    lancelet.write_dataset(_t(), uri)
    ds = lancelet.dataset(uri)
    ds.insert(_t(5), commit_message="insert", transaction_properties={"source": "kafka"})
    assert _props(lance_mod, uri, 2) == {"__lance_commit_message": "insert", "source": "kafka"}
    plan = plan_write(uri, _t().schema, mode="append")
    staged = plan.write(_t(20)) + plan.write(_t(30))
    plan.commit(staged, commit_message="spark batch 12", transaction_properties={"query": "q1", "batch": "12"})
    assert _props(lance_mod, uri, 3) == {"__lance_commit_message": "spark batch 12", "query": "q1", "batch": "12"}
    assert lance_mod.dataset(uri).count_rows() == 20


def test_pylance_properties_survive_lancelet_commits(tmp_path, lance_mod):
    """A pylance version with properties, then lancelet commits on top:
    pylance's transaction stays as it was, lancelet's carries its own."""
    uri = str(tmp_path / "d")
    lance_mod.write_dataset(_t(), uri, commit_message="from pylance", transaction_properties={"a": "1"})
    lancelet.dataset(uri).delete("id = 1")
    lancelet.write_dataset(_t(50), uri, mode="append", transaction_properties={"b": "2"})
    assert _props(lance_mod, uri, 1) == {"__lance_commit_message": "from pylance", "a": "1"}
    assert _props(lance_mod, uri, 2) == {}
    assert _props(lance_mod, uri, 3) == {"b": "2"}


@pytest.mark.parametrize("kw, what", [
    ({"commit_message": 5}, "commit_message"),
    ({"transaction_properties": {"a": 1}}, "transaction_properties"),
    ({"transaction_properties": {1: "a"}}, "transaction_properties"),
    ({"transaction_properties": [("a", "b")]}, "transaction_properties"),
])
def test_bad_values_are_refused_before_writing(tmp_path, kw, what):
    uri = tmp_path / "d"
    with pytest.raises(InvalidInputError, match=what):
        lancelet.write_dataset(_t(), str(uri), **kw)
    assert not uri.exists() or not any(uri.rglob("*.lance"))
    lancelet.write_dataset(_t(), str(uri))
    ds = lancelet.dataset(str(uri))
    with pytest.raises(InvalidInputError, match=what):
        ds.insert(_t(5), **kw)
    assert lancelet.dataset(str(uri)).version == 1
