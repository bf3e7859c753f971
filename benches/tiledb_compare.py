"""lancelet.tiledb vs tiledb-py 0.36.1 (its Arrow read), side by side in one run.

Shapes (the issue's): a 4000x4000 float64 dense array (zstd), a 5M-cell
sparse array in two fragments with an int64 key, a float and a string
attribute, and a subarray read of each. Prints wall seconds (best of 3)
and the ratio lancelet / tiledb-py (target <= 1.0), and the CPU seconds
(user + system of the process, best of 3) of each, which on a loaded
machine say more than wall time. Run on a quiet machine:

    python benches/tiledb_compare.py [--scale 0.1] [--dir /tmp/tiledb-bench] [--keep]

`--keep` leaves the arrays in `--dir` and reuses them on the next run;
`--cases dense` runs only the cases whose name contains "dense".
"""
from __future__ import annotations

import argparse
import os
import shutil
import time

import numpy as np
import tiledb

import lancelet.tiledb as lt


def best_of(fn, n=3):
    """(best wall seconds, best CPU seconds) over n runs."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(n):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best, best_cpu


def make_dense(uri, side):
    dom = tiledb.Domain(
        tiledb.Dim(name="r", domain=(0, side - 1), tile=min(1000, side), dtype=np.int32),
        tiledb.Dim(name="c", domain=(0, side - 1), tile=min(1000, side), dtype=np.int32),
    )
    attr = tiledb.Attr(name="v", dtype=np.float64, filters=tiledb.FilterList([tiledb.ZstdFilter()]))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[attr]))
    with tiledb.open(uri, "w") as A:
        A[:] = {"v": np.random.default_rng(0).normal(size=(side, side))}


def make_sparse(uri, cells):
    dom = tiledb.Domain(tiledb.Dim(name="k", domain=(0, 2**40), tile=2**20, dtype=np.int64))
    attrs = [
        tiledb.Attr(name="x", dtype=np.float64, filters=tiledb.FilterList([tiledb.ZstdFilter()])),
        tiledb.Attr(name="s", dtype=str, var=True, filters=tiledb.FilterList([tiledb.ZstdFilter()])),
    ]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=attrs, sparse=True, capacity=100_000))
    rng = np.random.default_rng(1)
    for t in (1, 2):
        keys = np.unique(rng.integers(0, 2**30, size=cells // 2))
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[keys] = {"x": rng.normal(size=len(keys)),
                       "s": np.array([f"user-{k % 100000}" for k in keys], dtype=object)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--dir", default="/tmp/lancelet-tiledb-bench")
    ap.add_argument("--keep", action="store_true", help="keep the arrays and reuse them next time")
    ap.add_argument("--cases", default="", help="run only cases whose name contains this")
    a = ap.parse_args()
    side = int(4000 * a.scale**0.5)
    cells = int(5_000_000 * a.scale)
    dense, sparse = os.path.join(a.dir, "dense"), os.path.join(a.dir, "sparse")
    if not (a.keep and os.path.isdir(dense) and os.path.isdir(sparse)):
        shutil.rmtree(a.dir, ignore_errors=True)
        os.makedirs(a.dir)
        make_dense(dense, side)
        make_sparse(sparse, cells)
    q = side // 4
    read = lambda sub, **kw: (lambda arr: arr.read(subarray=sub, **kw))  # noqa: E731
    cases = [
        ("dense full", dense, read(None), lambda A: A.query(return_arrow=True).df[:]),
        ("dense subarray", dense, read([(q, 2 * q), (q, 3 * q)]),
         lambda A: A.query(return_arrow=True).df[q:2 * q + 1, q:3 * q + 1]),
        ("sparse full", sparse, read(None), lambda A: A.query(return_arrow=True).df[:]),
        ("sparse subarray", sparse, read([(0, 2**28)]), lambda A: A.query(return_arrow=True).df[0:2**28 + 1]),
        ("sparse filter", sparse, read(None, filter="x > 2.5"),
         lambda A: A.query(return_arrow=True, cond="x > 2.5").df[:]),
        ("sparse to_batches", sparse, lambda arr: sum(b.num_rows for b in arr.to_batches(batch_size=65536)),
         lambda A: A.query(return_arrow=True).df[:]),
        ("sparse aggregate", sparse, lambda arr: arr.aggregate({"x": ["sum", "min", "max", "count"]}),
         lambda A: A.query().agg({"x": ["sum", "min", "max", "count"]})[:]),
        ("dense aggregate", dense, lambda arr: arr.aggregate({"v": ["sum", "min", "max", "count"]}),
         lambda A: A.query().agg({"v": ["sum", "min", "max", "count"]})[:]),
    ]
    print(f"{'case':18} {'lancelet s':>11} {'tiledb-py s':>12} {'ratio':>6} {'cpu ours':>9} {'cpu theirs':>10} {'cpu ratio':>9}")
    for name, uri, ours, theirs in cases:
        if a.cases not in name:
            continue
        ours_t, ours_c = best_of(lambda: ours(lt.open_array(uri)))

        def run_theirs():
            with tiledb.open(uri) as A:
                theirs(A)

        theirs_t, theirs_c = best_of(run_theirs)
        print(f"{name:18} {ours_t:11.3f} {theirs_t:12.3f} {ours_t / theirs_t:6.2f} "
              f"{ours_c:9.3f} {theirs_c:10.3f} {ours_c / max(theirs_c, 1e-9):9.2f}", flush=True)
    if not a.keep:
        shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
