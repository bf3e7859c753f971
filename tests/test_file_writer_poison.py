"""A LanceFileWriter whose write failed is abandoned (issue 29, defect 5).

The failed call may already have sent some of its pages, so the writer
must not go on: the partial file is removed at once, and every later
``write`` or ``close`` raises InvalidInputError naming the first failure;
nothing is left at the path. (pylance 14 lets a writer continue after a
rejected batch: on this point lancelet is stricter on purpose.)
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancelet.file as lf
from lancelet.exceptions import InvalidInputError, LanceletIOError

SCHEMA = pa.schema([("x", pa.int64()), ("s", pa.string())])


def _batch(n: int, seed: int = 0) -> pa.RecordBatch:
    # random values: their pages do not compress below the raw size
    x = np.random.default_rng(seed).integers(-2**62, 2**62, n, dtype=np.int64)
    return pa.record_batch([pa.array(x), pa.array(x % 97).cast(pa.string())], schema=SCHEMA)


BIG = 2_500_000


def _big() -> pa.RecordBatch:
    """20 MB of random integers: pages of them go out during the write, past the
    8 MiB that start a multipart upload, whose staged file sits next to the
    target until the writer finishes."""
    return _batch(BIG)


def _wrong_type() -> pa.Table:
    return pa.table({"x": pa.array(["a", "b"]), "s": pa.array(["c", "d"])})


def _files(d: Path) -> list:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())


def _assert_abandoned(w: lf.LanceFileWriter, first: type, words: list) -> None:
    for call in (lambda: w.write(_batch(3)), w.close, lambda: w.write_batch(_batch(3))):
        with pytest.raises(InvalidInputError, match="failed earlier") as info:
            call()
        msg = str(info.value)
        assert "first failure" in msg and first.__name__ in msg, msg
        for word in words:
            assert word in msg, (word, msg)
        assert isinstance(info.value.__cause__, first)


def test_wrong_schema_after_pages_were_staged(tmp_path):
    path = tmp_path / "f.lance"
    w = lf.LanceFileWriter(str(path), SCHEMA)
    w.write(_big())
    assert _files(tmp_path), "the first write's pages are staged"
    with pytest.raises(InvalidInputError, match="Utf8"):
        w.write(_wrong_type())
    assert _files(tmp_path) == [], "the staged upload is removed when the write fails"
    _assert_abandoned(w, InvalidInputError, [str(path), "Int64", "Utf8"])
    assert _files(tmp_path) == []


@pytest.mark.parametrize("bad", [
    pa.record_batch([pa.array([1.5]), pa.array(["x"])], names=["x", "s"]),
    pa.record_batch([pa.array([1])], names=["x"]),
    pa.record_batch([pa.array([1]), pa.array(["x"]), pa.array([2])], names=["x", "s", "t"]),
], ids=["other-type", "fewer-columns", "more-columns"])
def test_bad_batch_mid_stream(tmp_path, bad):
    """A stream whose second batch does not have the stream's schema (a
    pyarrow reader made from batches does not check them; read as the
    stream's types, a double would be taken for an integer): the first
    batch was written by the same call."""
    def gen():
        yield _big()
        yield bad

    path = tmp_path / "f.lance"
    w = lf.LanceFileWriter(str(path), SCHEMA)
    reader = pa.RecordBatchReader.from_batches(SCHEMA, gen())
    with pytest.raises(InvalidInputError, match="batch 2 of the stream does not have its schema"):
        w.write(reader)
    assert _files(tmp_path) == []
    _assert_abandoned(w, InvalidInputError, ["batch 2 of the stream"])


def test_source_raises_mid_stream(tmp_path):
    def gen():
        yield _big()
        raise RuntimeError("the source broke")

    w = lf.LanceFileWriter(str(tmp_path / "f.lance"), SCHEMA)
    with pytest.raises(InvalidInputError, match="the source broke"):
        w.write(pa.RecordBatchReader.from_batches(SCHEMA, gen()))
    assert _files(tmp_path) == []
    _assert_abandoned(w, InvalidInputError, ["the source broke"])


def test_storage_failure_mid_write(tmp_path):
    """The upload cannot start (the parent is a regular file) once a part
    is due: part of the call's pages are recorded. Even once the path is
    fine again, the writer must not finish a file missing them."""
    parent = tmp_path / "sub"
    parent.write_text("not a directory")
    w = lf.LanceFileWriter(str(parent / "f.lance"), SCHEMA)
    with pytest.raises(LanceletIOError):
        w.write(_big())
    parent.unlink()
    parent.mkdir()
    _assert_abandoned(w, LanceletIOError, ["sub"])
    assert _files(tmp_path) == []


def test_failure_before_the_schema_is_known(tmp_path):
    w = lf.LanceFileWriter(str(tmp_path / "f.lance"))
    with pytest.raises(TypeError):
        w.write(object())
    _assert_abandoned(w, TypeError, ["object"])
    assert _files(tmp_path) == []


def test_with_block(tmp_path):
    path = tmp_path / "f.lance"
    # the failure propagates out of the block; nothing is written
    with pytest.raises(InvalidInputError, match="Utf8"):
        with lf.LanceFileWriter(str(path), SCHEMA) as w:
            w.write(_big())
            w.write(_wrong_type())
    assert _files(tmp_path) == []
    # a failure caught inside the block: leaving it (which closes) raises
    with pytest.raises(InvalidInputError, match="failed earlier"):
        with lf.LanceFileWriter(str(path), SCHEMA) as w:
            w.write(_batch(10))
            try:
                w.write(_wrong_type())
            except InvalidInputError:
                pass
    assert _files(tmp_path) == []


def test_native_writer_is_abandoned_too(tmp_path):
    """The native class (no Python wrapper) follows the same rule."""
    from lancelet import _native

    w = _native.FileWriter(str(tmp_path / "f.lance"), SCHEMA, "2.2")
    w.write(pa.RecordBatchReader.from_batches(SCHEMA, [_big()]))
    with pytest.raises(InvalidInputError):
        w.write(_wrong_type())
    assert w.closed and "Utf8" in w.failure
    for call in (lambda: w.write(pa.RecordBatchReader.from_batches(SCHEMA, [_batch(2)])), w.close):
        with pytest.raises(InvalidInputError, match="failed earlier.*Utf8"):
            call()
    assert _files(tmp_path) == []


def test_a_good_writer_is_unaffected(tmp_path, lance_mod):
    path = tmp_path / "f.lance"
    w = lf.LanceFileWriter(str(path), SCHEMA)
    w.write(_batch(10))
    w.write(_big())
    assert w.close() == BIG + 10
    assert w.close() is None
    with pytest.raises(InvalidInputError, match="already closed"):
        w.write(_batch(1))
    assert lance_mod.file.LanceFileReader(str(path)).read_all().to_table().num_rows == BIG + 10
    assert os.listdir(tmp_path) == ["f.lance"]
