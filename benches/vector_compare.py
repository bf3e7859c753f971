"""Vector search benchmark: flat (exact) KNN, lancelet vs pylance
(``use_index=False``) on the same dataset, one run.

A wide table (default 200k rows: int64 id, a category string, an int32, a
text column and a 128-dim float32 embedding drawn from a seeded mixture of
200 Gaussian clusters) is written by pylance as fragments of 50k rows. Then,
warm (each case runs once untimed first), in alternating rounds:

* single query, k=10, ``columns=["id"]``;
* the same with a prefilter and with a postfilter;
* a batch of 16 queries (2-D ``q``), k=10;
* single query, k=100, all columns (late materialization of the winners).

Results are checked for equality (ids in order, distances within 1e-4
relative), printed with the ratios lancelet / pylance by wall time and by
CPU time (user + system of all threads), and saved as JSON.

    python benches/vector_compare.py [--rows N] [--dim D] [--repeat R] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable, Dict, Tuple

import lance
import numpy as np
import pyarrow as pa

import lancelet

try:
    from bench_common import git_commit, load_avg
except ImportError:  # run from another directory
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_common import git_commit, load_avg


def make_table(n: int, dim: int, seed: int = 7) -> Tuple[pa.Table, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (200, dim)).astype(np.float32)
    vec = centers[rng.integers(0, 200, n)] + rng.normal(0, 1, (n, dim)).astype(np.float32)
    cats = np.array([f"category-{i:03d}" for i in range(100)], dtype=object)
    tbl = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "category": pa.array(cats[rng.integers(0, 100, n)].tolist()),
        "score": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
        "text": pa.array([f"row {i} of the benchmark table" for i in range(n)]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), dim),
    })
    return tbl, vec


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def timed(fn: Callable[[], Any]) -> Tuple[float, float, Any]:
    c0, t0 = cpu(), time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, cpu() - c0, r


def check(a: pa.Table, b: pa.Table, name: str) -> None:
    assert a.column_names == b.column_names, (name, a.column_names, b.column_names)
    for c in a.column_names:
        if c == "_distance":
            np.testing.assert_allclose(a[c].to_numpy(), b[c].to_numpy(), rtol=1e-4, atol=1e-4)
        else:
            assert a[c].to_pylist() == b[c].to_pylist(), (name, c)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vector_compare-")
    try:
        tbl, vec = make_table(args.rows, args.dim)
        path = os.path.join(tmp, "ds")
        lance.write_dataset(tbl, path, max_rows_per_file=50_000)
        del tbl
        rng = np.random.default_rng(3)
        q = vec[rng.integers(0, args.rows)] + rng.normal(0, 0.5, args.dim).astype(np.float32)
        qs = vec[rng.integers(0, args.rows, 16)] + rng.normal(0, 0.5, (16, args.dim)).astype(np.float32)
        nn = {"column": "vec", "q": q, "k": 10}
        cases: Dict[str, Dict[str, Any]] = {
            "single k=10": dict(nearest=nn, columns=["id"]),
            "prefilter score<500": dict(nearest=nn, columns=["id"], filter="score < 500", prefilter=True),
            "postfilter score<500": dict(nearest=nn, columns=["id"], filter="score < 500"),
            "batch 16 queries": dict(nearest={"column": "vec", "q": qs, "k": 10}, columns=["id"]),
            "k=100 all columns": dict(nearest={"column": "vec", "q": q, "k": 100}),
        }
        theirs = lance.dataset(path)
        ours = lancelet.dataset(path)

        def run_pylance(kw: Dict[str, Any]) -> pa.Table:
            kw = dict(kw)
            kw["nearest"] = {**kw["nearest"], "use_index": False}
            return theirs.to_table(**kw)

        results = []
        for name, kw in cases.items():
            check(ours.to_table(**kw), run_pylance(kw), name)  # warm + equal
            wall = {"lancelet": [], "pylance": []}
            cpus = {"lancelet": [], "pylance": []}
            for r in range(args.repeat):
                order = [("lancelet", lambda: ours.to_table(**kw)), ("pylance", lambda: run_pylance(kw))]
                if r % 2:
                    order.reverse()
                for lib, fn in order:
                    w, c, _ = timed(fn)
                    wall[lib].append(w)
                    cpus[lib].append(c)
            row = {"case": name}
            for lib in ("lancelet", "pylance"):
                row[f"{lib}_ms"] = round(statistics.median(wall[lib]) * 1e3, 2)
                row[f"{lib}_cpu_ms"] = round(statistics.median(cpus[lib]) * 1e3, 2)
            row["ratio"] = round(row["lancelet_ms"] / row["pylance_ms"], 3)
            row["cpu_ratio"] = round(row["lancelet_cpu_ms"] / max(row["pylance_cpu_ms"], 1e-9), 3)
            results.append(row)
            print(f"{name:24s} lancelet {row['lancelet_ms']:9.2f} ms  pylance {row['pylance_ms']:9.2f} ms  "
                  f"ratio {row['ratio']:.3f}  cpu ratio {row['cpu_ratio']:.3f}", flush=True)
        scanned = args.rows * args.dim * 4
        out = {"bench": "vector_compare", "rows": args.rows, "dim": args.dim, "repeat": args.repeat,
               "vector_bytes": scanned, "commit": git_commit(), "load_avg": load_avg(),
               "lance_version": lance.__version__, "results": results}
        path_out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                            f"vector_compare-{time.strftime('%Y%m%d-%H%M%S')}.json")
        with open(path_out, "w") as f:
            json.dump(out, f, indent=1)
        print("wrote", path_out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
