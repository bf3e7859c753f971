"""Scalar index benchmark: lancelet vs pylance on the same wide dataset, one run.

A wide table (default 5M rows: int64 key, low-cardinality string category,
list of tags, an int32, English-like text, a 32-dim float32 vector) is
written by pylance as fragments of 1M rows; then

* index build time: each library builds BTREE(id), BITMAP(category) and
  LABEL_LIST(tags) on its own copy of the dataset;
* queries, warm (each is run once untimed first): equality, IN (20 values)
  and a 0.1% range on the BTREE and on the BITMAP column, array_has_any on
  the LABEL_LIST column. Each library queries the dataset with the indices
  it built; lancelet's own unindexed filter (``use_scalar_index=False``) is
  timed too.

Results are checked for equality, printed as a table with the ratios
lancelet / pylance (target <= 0.5) and lancelet indexed / unindexed, by
wall time and by CPU time (user + system of all threads; the steadier
figure on a shared machine), and saved as JSON.

    python benches/index_compare.py [--rows N] [--repeat R] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import lance
import numpy as np
import pyarrow as pa

import lancelet

WORDS = ("the of and to in a is that for it as was with be by on not he I this are or his from at which but "
         "have an they you were her she there been one all we their has would when if so no what").split()


def make_table(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    cats = np.array([f"category-{i:04d}" for i in range(1000)], dtype=object)
    tag_names = np.array([f"tag{i:03d}" for i in range(200)], dtype=object)
    ntags = rng.integers(0, 5, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(ntags, out=offsets[1:])
    tag_vals = pa.array(tag_names[rng.integers(0, 200, int(offsets[-1]))].tolist(), pa.string())
    tags = pa.ListArray.from_arrays(pa.array(offsets), tag_vals)
    nwords = rng.integers(4, 12, n)
    words = np.array(WORDS, dtype=object)[rng.integers(0, len(WORDS), int(nwords.sum()))]
    text, pos = [], 0
    for k in nwords.tolist():
        text.append(" ".join(words[pos:pos + k]))
        pos += k
    vec = rng.normal(size=(n, 32)).astype(np.float32)
    return pa.table({
        "id": pa.array(rng.permutation(n).astype(np.int64)),
        "category": pa.array(cats[rng.integers(0, 1000, n)].tolist(), pa.string()),
        "tags": tags,
        "amount": pa.array(rng.integers(0, 1_000_000, n, dtype=np.int32)),
        "text": pa.array(text, pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), 32),
    })


def timed(fn: Callable[[], object], repeat: int) -> Tuple[List[float], List[float]]:
    """Wall and CPU seconds (user + system of every thread of the process,
    the figure to trust on a shared machine) of `repeat` warm runs."""
    fn()  # warm: index structures and file metadata cached
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default="bench-results/index_compare.json")
    ap.add_argument("--tmp", default=None)
    a = ap.parse_args()
    n = a.rows
    t0 = time.perf_counter()
    table = make_table(n)
    print(f"generated {n:,} rows ({table.nbytes / 2**20:.0f} MiB in Arrow) in {time.perf_counter() - t0:.1f} s", flush=True)
    results: Dict[str, Dict] = {"rows": n, "lancelet": lancelet.__version__, "pylance": lance.__version__}
    with tempfile.TemporaryDirectory(dir=a.tmp) as d:
        base = os.path.join(d, "base.lance")
        lance.write_dataset(table, base, max_rows_per_file=1_000_000)
        del table
        lpath, ppath = os.path.join(d, "lancelet.lance"), os.path.join(d, "pylance.lance")
        shutil.copytree(base, lpath)
        shutil.copytree(base, ppath)
        builds = {}
        for col, kind in (("id", "BTREE"), ("category", "BITMAP"), ("tags", "LABEL_LIST")):
            t0, c0 = time.perf_counter(), time.process_time()
            lancelet.dataset(lpath).create_scalar_index(col, kind)
            lt, lc = time.perf_counter() - t0, time.process_time() - c0
            t0, c0 = time.perf_counter(), time.process_time()
            lance.dataset(ppath).create_scalar_index(col, kind)
            pt, pc = time.perf_counter() - t0, time.process_time() - c0
            builds[kind] = {"lancelet": lt, "pylance": pt, "ratio": lt / pt,
                            "lancelet_cpu": lc, "pylance_cpu": pc, "cpu_ratio": lc / pc}
            print(f"build {kind:10s} lancelet {lt:7.2f} s  pylance {pt:7.2f} s  ratio {lt / pt:5.2f}   "
                  f"CPU {lc:7.2f} s / {pc:7.2f} s  ratio {lc / pc:5.2f}", flush=True)
        results["build"] = builds

        rng = np.random.default_rng(3)
        lo = int(rng.integers(0, n - n // 1000))
        queries = {
            "btree equality": f"id = {int(rng.integers(0, n))}",
            "btree IN (20)": f"id IN ({', '.join(str(int(x)) for x in rng.integers(0, n, 20))})",
            "btree 0.1% range": f"id >= {lo} AND id < {lo + n // 1000}",
            "bitmap equality": "category = 'category-0042'",
            "bitmap IN (20)": f"category IN ({', '.join(repr(f'category-{int(x):04d}') for x in rng.integers(0, 1000, 20))})",
            "bitmap 0.1% range": "category > 'category-0499' AND category < 'category-0501'",
            "label_list has_any": "array_has_any(tags, ['tag007', 'tag123'])",
        }
        lds, pds = lancelet.dataset(lpath), lance.dataset(ppath)
        cols = ["id", "category", "amount", "text"]
        print(f"{'query':22s} {'rows':>8s} {'lancelet':>10s} {'pylance':>10s} {'ratio':>6s} {'lancelet scan':>14s} "
              f"{'idx/scan':>8s} | {'CPU lancelet':>12s} {'CPU pylance':>12s} {'ratio':>6s} {'idx/scan':>8s}")
        qres = {}
        for name, flt in queries.items():
            lt, lc = timed(lambda: lds.to_table(columns=cols, filter=flt), a.repeat)
            pt, pc = timed(lambda: pds.to_table(columns=cols, filter=flt), a.repeat)
            st, sc = timed(lambda: lds.to_table(columns=cols, filter=flt, use_scalar_index=False), max(2, a.repeat // 3))
            got = lds.to_table(columns=cols, filter=flt).sort_by("id")
            want = pds.to_table(columns=cols, filter=flt).sort_by("id")
            assert got.equals(want), name
            assert "ScalarIndexQuery" in lds.scanner(filter=flt).explain_plan(), name
            lm, pm, sm = statistics.median(lt), statistics.median(pt), statistics.median(st)
            lcm, pcm, scm = statistics.median(lc), statistics.median(pc), statistics.median(sc)
            qres[name] = {"filter": flt, "rows": got.num_rows, "lancelet_s": lt, "pylance_s": pt, "lancelet_scan_s": st,
                          "ratio": lm / pm, "index_vs_scan": lm / sm,
                          "lancelet_cpu_s": lc, "pylance_cpu_s": pc, "lancelet_scan_cpu_s": sc,
                          "cpu_ratio": lcm / pcm, "cpu_index_vs_scan": lcm / scm}
            print(f"{name:22s} {got.num_rows:8,d} {lm * 1e3:8.2f}ms {pm * 1e3:8.2f}ms {lm / pm:6.2f} {sm * 1e3:12.1f}ms "
                  f"{lm / sm:8.3f} | {lcm * 1e3:10.2f}ms {pcm * 1e3:10.2f}ms {lcm / pcm:6.2f} {lcm / max(scm, 1e-9):8.3f}",
                  flush=True)
        results["queries"] = qres
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=2)
    print(f"saved {a.out}")


if __name__ == "__main__":
    main()
