"""A dataset handle keeps the data files it has opened (their footers and
column metadata, see rust/lancelet/src/table/file_cache.rs): a second read
through the same handle skips the file-opening requests, counted with the
handle's I/O statistics; results stay those of the handle's version."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

import lancelet


def _stats(ds, fn):
    r0, b0 = ds._native.io_stats()
    out = fn()
    r1, b1 = ds._native.io_stats()
    return out, r1 - r0, b1 - b0


def test_second_take_skips_opening_files(tmp_path):
    p = str(tmp_path / "d")
    n, per_file = 30_000, 10_000
    t = pa.table({"a": np.arange(n), "s": [f"s{i}" for i in range(n)]})
    lancelet.write_dataset(t, p, max_rows_per_file=per_file)
    ds = lancelet.dataset(p)
    files = len(ds.get_fragments())
    first, req1, _ = _stats(ds, lambda: ds.take([5, 15_000, 25_000]))
    second, req2, _ = _stats(ds, lambda: ds.take([6, 15_001, 25_001]))
    assert first.to_pydict() == {"a": [5, 15_000, 25_000], "s": ["s5", "s15000", "s25000"]}
    assert second.to_pydict() == {"a": [6, 15_001, 25_001], "s": ["s6", "s15001", "s25001"]}
    # two requests per file fewer: its tail (footer + metadata) is not read
    # again, nor the chunk metadata of the pages read (kept by the reader,
    # see file/fetch.rs), so the chunks come in one round trip
    assert req2 == req1 - 2 * files
    # a fresh handle opens them again
    fresh = lancelet.dataset(p)
    _, req3, _ = _stats(fresh, lambda: fresh.take([6, 15_001, 25_001]))
    assert req3 == req1


def test_cached_files_serve_each_version_correctly(tmp_path):
    p = str(tmp_path / "d")
    lancelet.write_dataset(pa.table({"a": np.arange(100)}), p, max_rows_per_file=40)
    ds = lancelet.dataset(p)
    assert ds.to_table()["a"].to_pylist() == list(range(100))
    lancelet.write_dataset(pa.table({"a": np.arange(100, 150)}), p, mode="overwrite")
    # the old handle still reads its version, from the files it opened
    assert ds.to_table()["a"].to_pylist() == list(range(100))
    assert ds.count_rows("a >= 50") == 50
    assert lancelet.dataset(p).to_table()["a"].to_pylist() == list(range(100, 150))
