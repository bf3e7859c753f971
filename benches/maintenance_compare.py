"""Side-by-side benchmark of table maintenance: lancelet vs pylance 14 on the
same dataset, in one run.

The dataset (fixed seed) is a wide table as users have them: ``id`` int64
key, ``key2`` int32, ``category`` (low-cardinality string), ``str`` (10-60
character phrases and URLs), ``text`` (100-400 characters of prose) and
``vec`` (fixed_size_list<float32, 32>); pylance writes it as 200 fragments of
10,000 rows (2,000,000 rows) and deletes 20 % of the rows (``id % 5 = 0``).

* **compaction**: ``ds.optimize.compact_files()`` with the defaults (every
  fragment is a candidate: 20 % deleted > 10 %; all 1.6 M live rows make one
  bin and one new fragment). Each run compacts a fresh copy (the copy is not
  timed); both results are checked to hold the same rows in the same order.
* **cleanup**: ``cleanup_old_versions(older_than=timedelta(0))`` right after
  the compaction (removes the 202 old versions' manifests and the 200 old
  data and deletion files), on a fresh compacted copy each run.

Reported: median [min-max] seconds and the ratio lancelet / pylance (the
issue's target for compaction: <= 0.67). Results go to JSON.

    python benches/maintenance_compare.py [--rows 2000000] [--fragments 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from typing import Callable, Dict, List, Tuple

import lance
import numpy as np
import pyarrow as pa

import lancelet

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perf_suite import _word_pool, string_pool


def make_table(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    pool = string_pool(max(1000, n // 20))
    words = _word_pool(rng, 4000)
    text_pool = []
    for _ in range(max(1000, n // 50)):
        k = int(rng.integers(20, 70))
        text_pool.append(" ".join(words[rng.integers(0, len(words), k)]).capitalize() + ".")
    text = pa.array(text_pool, pa.string())
    cats = pa.array([f"category-{i:02d}" for i in range(40)])
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "key2": pa.array(rng.integers(0, 1 << 30, n, dtype=np.int32)),
        "category": cats.take(pa.array(rng.integers(0, len(cats), n))),
        "str": pool.take(pa.array(rng.integers(0, len(pool), n))),
        "text": text.take(pa.array(rng.integers(0, len(text), n))),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 32, dtype=np.float32)), 32),
    })


def stats(times: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "n": len(times)}


def cpu_seconds() -> float:
    """User + system CPU time of this process, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(fn: Callable[[str], object], fresh: Callable[[], str], repeat: int) -> Tuple[List[float], List[float]]:
    """Wall and CPU seconds of fn on a fresh copy, repeat times. CPU time is
    the figure to trust on a loaded machine."""
    times, cpu = [], []
    for _ in range(repeat):
        path = fresh()
        c0, t0 = cpu_seconds(), time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t0)
        cpu.append(cpu_seconds() - c0)
        shutil.rmtree(path)
    return times, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--fragments", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tmp", default=None, help="directory for the datasets (default: a temp dir)")
    ap.add_argument("--out", default="benches/results/maintenance_compare.json")
    a = ap.parse_args()

    t0 = time.perf_counter()
    table = make_table(a.rows)
    print(f"generated {a.rows:,} rows x {table.num_columns} columns ({table.nbytes / 2**20:.0f} MiB in Arrow) "
          f"in {time.perf_counter() - t0:.1f} s", flush=True)
    results = {"rows": a.rows, "fragments": a.fragments, "lancelet": lancelet.__version__,
               "pylance": lance.__version__, "figures": {}}
    with tempfile.TemporaryDirectory(dir=a.tmp) as d:
        base = os.path.join(d, "base.lance")
        lance.write_dataset(table, base, max_rows_per_file=-(-a.rows // a.fragments))
        lance.dataset(base).delete("id % 5 = 0")
        del table
        counter = iter(range(10**6))

        def copy_of(src: str) -> Callable[[], str]:
            def fresh() -> str:
                p = os.path.join(d, f"run{next(counter)}.lance")
                shutil.copytree(src, p)
                return p
            return fresh

        # the same compaction by both, checked equal
        check_l, check_p = os.path.join(d, "check_l"), os.path.join(d, "check_p")
        shutil.copytree(base, check_l)
        shutil.copytree(base, check_p)
        ml = lancelet.dataset(check_l).optimize.compact_files()
        mp = lance.dataset(check_p).optimize.compact_files()
        assert (ml.fragments_removed, ml.fragments_added) == (mp.fragments_removed, mp.fragments_added), (ml, mp)
        assert lance.dataset(check_l).to_table().equals(lance.dataset(check_p).to_table())
        print(f"compaction: {ml}", flush=True)

        fig = {}
        fig["compact_files"] = (
            run(lambda p: lancelet.dataset(p).optimize.compact_files(), copy_of(base), a.repeat),
            run(lambda p: lance.dataset(p).optimize.compact_files(), copy_of(base), a.repeat),
        )
        fig["cleanup_old_versions"] = (
            run(lambda p: lancelet.dataset(p).cleanup_old_versions(older_than=timedelta(0)), copy_of(check_l), a.repeat),
            run(lambda p: lance.dataset(p).cleanup_old_versions(older_than=timedelta(0)), copy_of(check_p), a.repeat),
        )
        print(f"{'operation':22s} {'lancelet median [min-max] s':>30s} {'pylance median [min-max] s':>30s}  ratio"
              f"  cpu l/p s     cpu ratio")
        for name, ((lt, lc), (pt, pc)) in fig.items():
            ls, ps = stats(lt), stats(pt)
            ratio = ls["median"] / ps["median"]
            lcm, pcm = statistics.median(lc), statistics.median(pc)
            print(f"{name:22s} {ls['median']:10.3f} [{ls['min']:7.3f}-{ls['max']:7.3f}]      "
                  f"{ps['median']:10.3f} [{ps['min']:7.3f}-{ps['max']:7.3f}]    {ratio:5.2f}"
                  f"  {lcm:6.2f}/{pcm:6.2f}  {lcm / pcm:5.2f}", flush=True)
            results["figures"][name] = {"lancelet": ls, "pylance": ps, "ratio": ratio,
                                        "cpu": {"lancelet": lc, "pylance": pc}, "cpu_ratio": lcm / pcm}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=2)
    print(f"saved {a.out}")


if __name__ == "__main__":
    main()
