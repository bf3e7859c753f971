"""create_index time, lancelet vs pylance: IVF_PQ (num_partitions=64,
num_sub_vectors=16) and IVF_FLAT (num_partitions=64) on 100k x 128
clustered float32 vectors (a seeded Gaussian mixture of 256 clusters),
alternating rounds on fresh copies of one dataset (the copy not timed).
Also recall@10 of each library's index, both queried by pylance
(nprobes=8, 100 queries), so the speed is compared at known quality.

    python benches/vector_build_compare.py [--rows N] [--dim D] [--rounds R] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import lance
import numpy as np
import pyarrow as pa

import lancelet


def make_vectors(n: int, d: int, seed: int = 42) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((256, d)).astype(np.float32) * 3
    return (centers[rng.integers(0, 256, n)] + rng.standard_normal((n, d)).astype(np.float32)).astype(np.float32)


def recall(path: str, vecs: np.ndarray, queries: np.ndarray) -> float:
    ds = lance.dataset(path)
    hits = 0
    for q in queries:
        truth = set(np.argpartition(((vecs - q) ** 2).sum(1), 10)[:10].tolist())
        got = ds.to_table(nearest={"column": "vec", "q": q, "k": 10, "nprobes": 8}, columns=["id"])
        hits += len(truth & set(got.column("id").to_pylist()))
    return hits / (10 * len(queries))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    vecs = make_vectors(args.rows, args.dim)
    tbl = pa.table({"id": pa.array(np.arange(args.rows, dtype=np.int64)),
                    "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), args.dim)})
    root = tempfile.mkdtemp(prefix="vbuild-")
    base = os.path.join(root, "base")
    lance.write_dataset(tbl, base, max_rows_per_file=50_000)
    rng = np.random.default_rng(7)
    queries = vecs[rng.integers(0, args.rows, 100)] + rng.standard_normal((100, args.dim)).astype(np.float32) * 0.1
    cases = {"IVF_PQ": {"num_partitions": 64, "num_sub_vectors": 16}, "IVF_FLAT": {"num_partitions": 64}}
    libs = {"pylance": lambda p: lance.dataset(p), "lancelet": lambda p: lancelet.dataset(p)}
    results = {"rows": args.rows, "dim": args.dim, "rounds": args.rounds, "cases": {}}
    for index_type, kw in cases.items():
        times = {k: [] for k in libs}
        recalls = {}
        for r in range(args.rounds):
            order = list(libs) if r % 2 == 0 else list(reversed(libs))
            for lib in order:
                p = os.path.join(root, f"{lib}-{index_type}-{r}")
                shutil.copytree(base, p)
                ds = libs[lib](p)
                t0 = time.perf_counter()
                ds.create_index("vec", index_type, **kw)
                times[lib].append(time.perf_counter() - t0)
                if r == 0:
                    recalls[lib] = recall(p, vecs, queries)
                shutil.rmtree(p)
        med = {k: statistics.median(v) for k, v in times.items()}
        results["cases"][index_type] = {"params": kw, "times_s": times, "median_s": med,
                                        "ratio_lancelet_over_pylance": med["lancelet"] / med["pylance"],
                                        "recall_at_10_nprobes8": recalls}
        print(f"{index_type:9s} pylance {med['pylance']:.3f}s  lancelet {med['lancelet']:.3f}s  "
              f"ratio {med['lancelet'] / med['pylance']:.2f}  recall py {recalls['pylance']:.3f} "
              f"ll {recalls['lancelet']:.3f}")
    shutil.rmtree(root, ignore_errors=True)
    out = args.out or os.path.join(os.path.dirname(__file__), "results",
                                   f"vector_build_compare-{time.strftime('%Y%m%d-%H%M%S')}.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main()
