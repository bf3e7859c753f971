"""Takes of many random rows: the same rows as pylance's, and the way a
local take reads them (no timing).

A multi-fragment wide table (int64 key, a category, a nullable float, a
nullable small int whose mini-block chunks hold more than 1,024 values, so
their definition levels are bit-packed out of line, text and a 16-float
vector), written by each library with stable row ids, then rows deleted
from several fragments. Seeded random takes (unsorted, repeated indices,
column subsets, by row id) must equal pylance's on the same dataset.

How a local take reads is pinned through the process-wide I/O counters
and the page-fault count: a take of many rows makes a few hundred small
requests (about one per value and column), a point lookup a few, all cut
from each file's memory map (`mapped`), none copied; the handle keeps the
maps, so taking rows read before faults no page in again.
"""
from __future__ import annotations

import resource

import numpy as np
import pyarrow as pa
import pytest

import lancelet

lance = pytest.importorskip("lance")
pytestmark = pytest.mark.pylance

N = 24_000
PER_FILE = 6_000
DIM = 16


def _table() -> pa.Table:
    rng = np.random.default_rng(61)
    words = np.array([f"w{i}" for i in range(200)])
    kinds = np.array(["click", "view", "buy"] + [f"k{i}" for i in range(30)])
    text = [" ".join(words[rng.integers(0, 200, k)]) for k in rng.integers(2, 9, N)]
    return pa.table({
        "id": pa.array(np.arange(N) * 7 + rng.integers(0, 6, N), pa.int64()),
        "kind": pa.array(kinds[rng.integers(0, len(kinds), N)]),
        "score": pa.array(rng.exponential(4.0, N), mask=rng.random(N) < 0.1),
        "small": pa.array(rng.integers(0, 4, N).astype(np.int8), mask=rng.random(N) < 0.2),
        "text": pa.array(text),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(N * DIM, dtype=np.float32)), DIM),
    })


@pytest.fixture(scope="module", params=["lancelet", "pylance"])
def path(request, tmp_path_factory):
    p = str(tmp_path_factory.mktemp("take_random") / request.param)
    mod = lancelet if request.param == "lancelet" else lance
    mod.write_dataset(_table(), p, max_rows_per_file=PER_FILE, enable_stable_row_ids=True)
    # deletions in three of the four fragments
    lance.dataset(p).delete("id % 11 = 3 OR (id > 60000 AND id < 61000) OR id >= 166000")
    return p


def test_random_takes_match_pylance(path):
    ours, theirs = lancelet.dataset(path), lance.dataset(path)
    assert ours.has_stable_row_ids
    n = theirs.count_rows()
    assert ours.count_rows() == n < N
    rng = np.random.default_rng(5)
    for k in (1, 7, 300, 1000):
        idx = rng.integers(0, n, k)  # unsorted, with repeats
        assert ours.take(idx).equals(theirs.take(idx))
        cols = ["score", "small", "emb"] if k % 2 else ["text", "id"]
        assert ours.take(idx, columns=cols).equals(theirs.take(idx, columns=cols))
    ids = theirs.to_table(columns=[], with_row_id=True)["_rowid"].to_numpy()
    pick = ids[rng.integers(0, len(ids), 500)].tolist()
    assert ours.take_row_ids(pick).equals(theirs._take_rows(pick))


def _counts(fn):
    s0 = lancelet._native._io_stats()
    out = fn()
    s1 = lancelet._native._io_stats()
    return out, {k: s1[k] - s0[k] for k in s1}


@pytest.fixture(scope="module")
def sparse_path(tmp_path_factory):
    """Two files of 40,000 rows with a 64-float vector: a take of 400 rows
    reads its vectors entry by entry (~50 KB apart), ~200 ranges a file."""
    rng = np.random.default_rng(4)
    n = 80_000
    p = str(tmp_path_factory.mktemp("take_sparse") / "t")
    lancelet.write_dataset(pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "score": pa.array(rng.exponential(4.0, n), mask=rng.random(n) < 0.1),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 64, dtype=np.float32)), 64),
    }), p, max_rows_per_file=40_000)
    return p


def test_takes_are_cut_from_the_files_maps_without_copies_or_new_faults(sparse_path):
    ds = lancelet.dataset(sparse_path)
    n = ds.count_rows()
    idx = np.sort(np.random.default_rng(9).choice(n, 400, replace=False))
    ds.take(idx)  # files opened and mapped, chunk metadata learnt
    t, c = _counts(lambda: ds.take(idx))
    assert t.equals(lance.dataset(sparse_path).take(idx))
    assert 200 <= c["requests"] <= 400 * t.num_columns, c
    assert c["mapped"] == c["requests"], c
    reqs = c["requests"]
    one, c = _counts(lambda: ds.take([n // 2]))
    assert one.num_rows == 1
    assert 0 < c["requests"] <= 2 * one.num_columns, c
    assert c["mapped"] == c["requests"], c
    # The handle keeps each file's map: a take of rows read before faults
    # no pages in again (a map per read faulted about one page per range).
    # (Min of three: the maps drop their pages every 256 MiB served.)
    faults = []
    for _ in range(3):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        ds.take(idx)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    assert min(faults) < reqs // 4, (faults, reqs)
