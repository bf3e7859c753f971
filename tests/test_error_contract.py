"""The error contract of docs/errors.md, checked case by case.

Every case documented in docs/errors.md (the rows whose first cell is a
`case-id`) is triggered here, and the exception's exact class and the words
its message must contain are asserted; the test also checks that the
document and this table list the same cases. A second test runs every
failing write-side call and checks the dataset directory afterwards is
byte for byte what it was (a failed call changes nothing).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import lancelet
import lancelet.distributed
import lancelet.file
from lancelet.exceptions import (
    AlreadyExistsError,
    CommitConflictError,
    CorruptFileError,
    InvalidInputError,
    InvalidReferenceError,
    LanceletError,
    LanceletIOError,
    NotFoundError,
    ReferenceExistsError,
    ReferenceNotFoundError,
    UnsupportedError,
)

DOC = Path(__file__).resolve().parent.parent / "docs" / "errors.md"


def table(n: int = 100, start: int = 0) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "name": pa.array([f"n{i}" for i in range(start, start + n)]),
                     "x": pa.array([i % 7 for i in range(start, start + n)], pa.int32())})


@pytest.fixture(scope="module")
def templates(tmp_path_factory, lance_mod):
    """Datasets built once; each test gets copies."""
    root = tmp_path_factory.mktemp("contract")
    ds = root / "ds"
    d = lancelet.write_dataset(table(), str(ds), max_rows_per_file=50)
    d.insert(table(50, 100))
    d.tags.create("t1", 1)
    d.create_branch("b1", 1)
    legacy = root / "legacy"
    lance_mod.write_dataset(table(10), str(legacy), data_storage_version="legacy")
    v23 = root / "v23"
    lance_mod.write_dataset(table(10), str(v23), data_storage_version="2.3")
    return root


class Env:
    def __init__(self, root: Path, templates: Path):
        self.root = root
        for name in ("ds", "legacy", "v23"):
            shutil.copytree(templates / name, root / name)
        self.uri = str(root / "ds")
        self.legacy = str(root / "legacy")
        self.v23 = str(root / "v23")
        self.new = str(root / "new")

    @property
    def ds(self) -> lancelet.Dataset:
        return lancelet.dataset(self.uri)

    def data_file(self, i: int = 0) -> Path:
        return sorted((self.root / "ds" / "data").glob("*.lance"))[i]

    def latest_manifest(self) -> Path:
        return sorted((self.root / "ds" / "_versions").glob("*.manifest"))[0]  # V2 names sort newest first


@pytest.fixture
def env(tmp_path, templates):
    return Env(tmp_path, templates)


def _struct_dup():
    fields = [pa.field("a", pa.int64()), pa.field("a", pa.int64())]
    return pa.Table.from_arrays([pa.StructArray.from_arrays([pa.array([1]), pa.array([2])], fields=fields)], names=["s"])


def _truncate(p: Path, keep: int) -> None:
    p.write_bytes(p.read_bytes()[:keep])


def _conflict(env: Env):
    old = env.ds
    lancelet.write_dataset(table(5), env.uri, mode="overwrite")
    old.delete("id < 10")


def _bad_stream(n_ok: int = 3):
    def gen():
        for k in range(n_ok):
            yield table(10, 1000 + 10 * k).to_batches()[0]
        raise RuntimeError("the source broke")
    return pa.RecordBatchReader.from_batches(table(1).schema, gen())


def _nul_path(env: Env):
    lancelet.dataset(env.uri + "\x00x")


def _io_not_a_dir(env: Env):
    f = env.root / "plain.txt"
    f.write_text("x")
    lancelet.write_dataset(table(3), str(f / "ds"))


def _corrupt_manifest(env: Env):
    _truncate(env.latest_manifest(), 30)
    lancelet.dataset(env.uri)


def _corrupt_data(env: Env):
    f = env.data_file(0)
    _truncate(f, f.stat().st_size // 2)
    env.ds.to_table()


def _missing_data(env: Env):
    env.data_file(0).unlink()
    env.ds.to_table()


def _corrupt_deletion(env: Env):
    env.ds.delete("id < 3")
    (f,) = (env.root / "ds" / "_deletions").iterdir()
    f.write_bytes(b"not an arrow file at all")
    env.ds.to_table()


def _garbage_file(env: Env):
    p = env.root / "garbage.lance"
    p.write_bytes(b"\x00" * 100)
    lancelet.file.LanceFileReader(str(p))


def _writer_failed_earlier(env: Env):
    w = lancelet.file.LanceFileWriter(str(env.root / "w.lance"), table(1).schema)
    with pytest.raises(InvalidInputError):
        w.write(table(3).set_column(2, "x", pa.array(["a", "b", "c"])))
    w.close()


def _staged_garbage(env: Env):
    plan = lancelet.distributed.plan_write(env.uri, table(1).schema, mode="append")
    plan.commit([b"\xff\x00garbage"])


# case id -> (call, exception class, words the message contains)
CASES = {
    # Python's own conventions
    "type-path": (lambda e: lancelet.dataset(123), TypeError, ["path"]),
    "type-columns": (lambda e: e.ds.to_table(columns="id"), TypeError, ["list of names"]),
    "type-column-name": (lambda e: e.ds.to_table(columns=[1]), TypeError, ["column names"]),
    "type-limit": (lambda e: e.ds.to_table(limit="5"), TypeError, ["limit"]),
    "type-filter": (lambda e: e.ds.to_table(filter=5), TypeError, ["filter"]),
    "type-version": (lambda e: lancelet.dataset(e.uri, version=1.5), TypeError, ["version"]),
    "type-tag-none": (lambda e: e.ds.tags.create(None, 1), TypeError, ["tag", "NoneType"]),
    "type-tag-int": (lambda e: e.ds.tags.create(5, 1), TypeError, ["tag", "int"]),
    "type-data": (lambda e: lancelet.write_dataset(object(), e.new), TypeError, ["cannot write object"]),
    "type-schema": (lambda e: lancelet.write_dataset(table(), e.new, schema="x"), TypeError, ["pyarrow.Schema"]),
    "type-storage-version": (lambda e: lancelet.write_dataset(table(), e.new, data_storage_version=2.1), TypeError,
                             ["data_storage_version"]),
    "type-storage-options": (lambda e: lancelet.dataset(e.uri, storage_options=[1]), TypeError, ["storage_options"]),
    "type-predicate": (lambda e: e.ds.delete(5), TypeError, ["predicate"]),
    "nul-in-path": (_nul_path, ValueError, ["null byte"]),
    "overflow-row-index": (lambda e: e.ds.take([2 ** 64]), OverflowError, []),
    # bad values
    "unknown-mode": (lambda e: lancelet.write_dataset(table(), e.new, mode="upsert"), InvalidInputError,
                     ["unknown mode", "upsert"]),
    "negative-limit": (lambda e: e.ds.to_table(limit=-1), InvalidInputError, ["limit", "non-negative"]),
    "zero-batch-size": (lambda e: e.ds.to_table(batch_size=0), InvalidInputError, ["batch_size"]),
    "bad-row-range": (lambda e: e.ds.to_table(row_range=(5, 2)), InvalidInputError, ["row_range"]),
    "empty-storage-version": (lambda e: lancelet.write_dataset(table(), e.new, data_storage_version=""),
                              InvalidInputError, ['""', "2.0", "2.1", "2.2"]),
    "unknown-storage-version": (lambda e: lancelet.write_dataset(table(), e.new, data_storage_version="2.5"),
                                InvalidInputError, ['"2.5"', "2.2"]),
    "append-v2-to-legacy": (lambda e: lancelet.write_dataset(table(), e.legacy, mode="append",
                                                             data_storage_version="2.2"),
                            InvalidInputError, ["2.2", "0.1", "mixed"]),
    "unknown-column": (lambda e: e.ds.to_table(columns=["nope"]), InvalidInputError, ["nope"]),
    "filter-syntax": (lambda e: e.ds.to_table(filter="id >"), InvalidInputError, ["id >", "syntax error"]),
    "filter-unknown-column": (lambda e: e.ds.count_rows(filter="nope > 1"), InvalidInputError,
                              ["no column named `nope`", "id, name, x"]),
    "filter-types": (lambda e: e.ds.to_table(filter="id LIKE 'a%'"), InvalidInputError, ["LIKE needs a string"]),
    "filter-not-boolean": (lambda e: e.ds.to_table(filter="id + 1"), InvalidInputError, ["must be a boolean"]),
    "filter-too-deep": (lambda e: e.ds.count_rows(filter="(" * 500 + "id > 1" + ")" * 500), InvalidInputError,
                        ["nests more than 128 levels"]),
    "filter-evaluation": (lambda e: e.ds.to_table(filter="x / 0 = 1"), InvalidInputError,
                          ["evaluating filter", "ivide by zero"]),
    "delete-bad-predicate": (lambda e: e.ds.delete("nope = 1"), InvalidInputError, ["nope"]),
    "append-other-schema-names": (lambda e: lancelet.write_dataset(
        table(), e.uri, mode="append", schema=pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.int32())])),
        InvalidInputError, ["only in the data", "'id'", "only in the schema", "'a'"]),
    "append-extra-column": (lambda e: e.ds.insert(table(3).append_column("extra", pa.array([1, 2, 3]))),
                            InvalidInputError, ["extra", "not in the dataset schema"]),
    "append-other-type": (lambda e: e.ds.insert(table(3).set_column(2, "x", pa.array(["a", "b", "c"]))),
                          InvalidInputError, ['"x"', "type"]),
    "duplicate-column": (lambda e: lancelet.write_dataset(
        pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["x", "x"]), e.new), InvalidInputError,
        ['duplicate field name "x"']),
    "duplicate-nested-field": (lambda e: lancelet.write_dataset(_struct_dup(), e.new), InvalidInputError,
                               ['duplicate field name "s.a"']),
    "no-columns": (lambda e: lancelet.write_dataset(pa.table({}), e.new), InvalidInputError, ["no columns"]),
    "tag-name-empty": (lambda e: e.ds.tags.create("", 1), InvalidInputError, ["bad tag name", "empty"]),
    "tag-name-path": (lambda e: e.ds.tags.create("../x", 1), InvalidInputError, ["bad tag name", "../x"]),
    "staged-garbage": (_staged_garbage, InvalidInputError, ["staged fragment #0", "not a DataFragment"]),
    "take-out-of-range": (lambda e: e.ds.take([10 ** 9]), InvalidInputError, ["1000000000", "150"]),
    "file-writer-failed-earlier": (_writer_failed_earlier, InvalidInputError,
                                   ["w.lance", "failed earlier", "first failure", '"x"', "Utf8"]),
    # missing things
    "missing-dataset": (lambda e: lancelet.dataset(e.new), NotFoundError, ["new"]),
    "missing-version": (lambda e: lancelet.dataset(e.uri, version=99), NotFoundError, ["version 99"]),
    "missing-tag": (lambda e: lancelet.dataset(e.uri, version="nope"), NotFoundError, ["nope"]),
    "tag-missing-version": (lambda e: e.ds.tags.create("t9", 99), NotFoundError, ["version 99"]),
    "tag-delete-missing": (lambda e: e.ds.tags.delete("nope"), NotFoundError, ["nope"]),
    "branch-missing": (lambda e: e.ds.checkout_version(("nob", 1)), NotFoundError, ["nob", "b1"]),
    "branch-missing-version": (lambda e: e.ds.create_branch("b9", 99), NotFoundError, ["version 99"]),
    "branch-delete-missing": (lambda e: e.ds.branches.delete("nob"), ReferenceNotFoundError, ["nob"]),
    "branch-name-reserved": (lambda e: e.ds.create_branch("main", 1), InvalidReferenceError,
                             ["bad branch name", "main"]),
    "branch-name-chars": (lambda e: e.ds.create_branch("a b", 1), InvalidReferenceError, ["bad branch name", "a b"]),
    "branch-exists": (lambda e: e.ds.create_branch("b1", 1), ReferenceExistsError, ["b1"]),
    "missing-file": (lambda e: lancelet.file.LanceFileReader(str(e.root / "nope.lance")), NotFoundError,
                     ["nope.lance"]),
    "missing-data-file": (_missing_data, NotFoundError, [".lance"]),
    # things that exist already
    "create-existing": (lambda e: lancelet.write_dataset(table(), e.uri), AlreadyExistsError, ["ds", "overwrite"]),
    "tag-exists": (lambda e: e.ds.tags.create("t1", 2), ReferenceExistsError, ["t1"]),
    # damaged files
    "corrupt-manifest": (_corrupt_manifest, CorruptFileError, ["_versions/"]),
    "corrupt-data-file": (_corrupt_data, CorruptFileError, ["data/"]),
    "corrupt-deletion-file": (_corrupt_deletion, CorruptFileError, ["_deletions/"]),
    "corrupt-lance-file": (_garbage_file, CorruptFileError, ["garbage.lance"]),
    # valid but not handled
    "future-file-version": (lambda e: lancelet.dataset(e.v23).to_table(), UnsupportedError, ["2.3"]),
    "write-legacy": (lambda e: lancelet.write_dataset(table(), e.new, data_storage_version="legacy"),
                     UnsupportedError, ["legacy"]),
    "unsupported-option": (lambda e: e.ds.to_table(order_by=["id"]), UnsupportedError, ["order_by"]),
    # concurrency and storage
    "commit-conflict": (_conflict, CommitConflictError, ["Delete", "Overwrite", "version 3"]),
    "io-error": (_io_not_a_dir, LanceletIOError, ["plain.txt"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_contract(env, case):
    call, cls, words = CASES[case]
    with pytest.raises(BaseException) as info:
        call(env)
    e = info.value
    assert type(e) is cls, f"{case}: expected {cls.__name__}, got {type(e).__name__}: {e}"
    if issubclass(cls, LanceletError):
        assert "internal error" not in str(e)
    for w in words:
        assert w in str(e), f"{case}: {w!r} not in the message: {e}"


def documented_cases() -> set:
    return set(re.findall(r"^\| `([a-z0-9-]+)` \|", DOC.read_text(), flags=re.M))


def test_documentation_lists_every_case():
    doc = documented_cases()
    assert doc == set(CASES), f"only in docs/errors.md: {sorted(doc - set(CASES))}; " \
                              f"only in the test: {sorted(set(CASES) - doc)}"


def snapshot(path: str) -> dict:
    """Every file under a dataset directory -> sha256 of its bytes."""
    out = {}
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, path)] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


FAILING_CALLS = {
    "create-existing": lambda e: lancelet.write_dataset(table(), e.uri),
    "append-other-schema-names": CASES["append-other-schema-names"][0],
    "append-other-type": CASES["append-other-type"][0],
    "append-duplicate-columns": lambda e: lancelet.write_dataset(
        pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array([3])], names=["id", "id", "x"]), e.uri,
        mode="append"),
    "append-stream-fails": lambda e: lancelet.write_dataset(_bad_stream(), e.uri, mode="append", max_rows_per_file=10),
    "insert-stream-fails": lambda e: e.ds.insert(_bad_stream()),
    "overwrite-stream-fails": lambda e: lancelet.write_dataset(_bad_stream(), e.uri, mode="overwrite",
                                                               max_rows_per_file=10),
    "overwrite-bad-version": lambda e: lancelet.write_dataset(table(), e.uri, mode="overwrite",
                                                              data_storage_version="9.9"),
    "delete-bad-predicate": CASES["delete-bad-predicate"][0],
    "delete-too-deep": lambda e: e.ds.delete("NOT " * 1000 + "id > 1"),
    "tag-bad-name": CASES["tag-name-path"][0],
    "tag-exists": CASES["tag-exists"][0],
    "tag-missing-version": CASES["tag-missing-version"][0],
    "tag-delete-missing": CASES["tag-delete-missing"][0],
    "branch-bad-name": CASES["branch-name-chars"][0],
    "branch-exists": CASES["branch-exists"][0],
    "branch-missing-version": CASES["branch-missing-version"][0],
    "branch-delete-missing": CASES["branch-delete-missing"][0],
    "staged-commit-garbage": _staged_garbage,
    "staged-write-stream-fails": lambda e: lancelet.distributed.plan_write(e.uri, table(1).schema).write(_bad_stream()),
}


@pytest.mark.parametrize("case", sorted(FAILING_CALLS))
def test_failed_call_changes_nothing(env, case, lance_mod):
    before = snapshot(env.uri)
    with pytest.raises(Exception) as info:
        FAILING_CALLS[case](env)
    assert isinstance(info.value, (LanceletError, TypeError)), f"{case}: {type(info.value).__name__}: {info.value}"
    assert snapshot(env.uri) == before, f"{case} changed the dataset directory"
    assert lancelet.dataset(env.uri).count_rows() == 150
    assert lance_mod.dataset(env.uri).count_rows() == 150


def test_failed_delete_after_a_conflict_leaves_no_files(env):
    """A delete that loses to a concurrent overwrite removes the deletion
    files it wrote (the overwrite itself is the only change)."""
    old = env.ds
    lancelet.write_dataset(table(5), env.uri, mode="overwrite")
    before = snapshot(env.uri)
    with pytest.raises(CommitConflictError):
        old.delete("id < 10")
    assert snapshot(env.uri) == before
