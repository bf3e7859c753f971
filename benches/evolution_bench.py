"""Table evolution benchmark (issue 13): lancelet against pylance 14 on the
same dataset, in one run.

Table W (fixed seed): 2,000,000 rows of a wide shape mixing keys, strings,
text and vectors — ``id`` int64 (the key, sequential), ``small`` int32 in
[0, 1000), ``price`` float64, ``name`` 10-60 character strings, ``text``
60-200 character word phrases, ``vec`` fixed_size_list<float32, 16>. Written
once by pylance (format 2.2, 1 Mi rows per file); every timed run works on a
fresh copy of that directory, so both libraries start from the same bytes.

Cases:

- ``update 1%``: ``update({"price": "price * 1.1", "name": "upper(name)"},
  where="small < 10")`` (about 20,000 rows rewritten);
- ``merge_insert 100k``: upsert of 100,000 source rows (all columns) keyed
  on ``id``, half of them existing ids (random), half new —
  ``when_matched_update_all().when_not_matched_insert_all()``.

Each case runs ``--repeat`` times per library, alternating; reported as
median [min-max] seconds and the ratio lancelet / pylance of the medians
(target: <= 0.67). Results: a table on stdout and JSON under
``benches/results/``.

    python benches/evolution_bench.py [--rows 2000000] [--repeat 3] [--label NAME]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import lance
import numpy as np
import pyarrow as pa

import lancelet

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _words(rng: np.random.Generator, n: int) -> np.ndarray:
    cons, vows = np.array(list("bcdfghjklmnprstvwz")), np.array(list("aeiou"))
    out = set()
    while len(out) < n:
        k = rng.integers(2, 6)
        w = "".join(a + b for a, b in zip(cons[rng.integers(0, 18, k)], vows[rng.integers(0, 5, k)]))
        out.add(w[: rng.integers(3, 11)])
    return np.array(sorted(out))


def _phrases(rng: np.random.Generator, words: np.ndarray, n: int, lo: int, hi: int) -> pa.Array:
    """``n`` strings of about lo-hi characters made of random words."""
    per = max(1, (lo + hi) // 14)
    idx = rng.integers(0, len(words), (n, per + 4))
    lens = rng.integers(lo, hi + 1, n)
    out = [" ".join(words[row])[:ln] for row, ln in zip(idx, lens)]
    return pa.array(out, pa.string())


def wide_table(ids: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(ids)
    words = _words(np.random.default_rng(7), 4000)
    chunks = []
    step = 250_000
    for s in range(0, n, step):
        e = min(n, s + step)
        m = e - s
        chunks.append(pa.record_batch({
            "id": pa.array(ids[s:e], pa.int64()),
            "small": pa.array(rng.integers(0, 1000, m, dtype=np.int32)),
            "price": pa.array(rng.gamma(2.0, 20.0, m)),
            "name": _phrases(rng, words, m, 10, 60),
            "text": _phrases(rng, words, m, 60, 200),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(m * 16).astype(np.float32)), 16),
        }))
    return pa.Table.from_batches(chunks)


def cpu_seconds() -> float:
    """User + system CPU time of this process, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn: Callable[[], object]) -> Tuple[float, float]:
    """(wall seconds, CPU seconds) of fn(). CPU time is the figure to trust
    on a loaded machine; wall time is what the targets are stated in."""
    c, t = cpu_seconds(), time.perf_counter()
    fn()
    return time.perf_counter() - t, cpu_seconds() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--source-rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--label", default="")
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    args = ap.parse_args()

    work = args.dir or tempfile.mkdtemp(prefix="lancelet-evolution-")
    base = os.path.join(work, "base.lance")
    print(f"writing W: {args.rows:,} rows -> {base}", flush=True)
    if os.path.exists(base):
        shutil.rmtree(base)
    lance.write_dataset(wide_table(np.arange(args.rows), seed=1), base, data_storage_version="2.2")
    rng = np.random.default_rng(5)
    half = args.source_rows // 2
    existing = rng.choice(args.rows, half, replace=False)
    new = np.arange(args.rows, args.rows + args.source_rows - half)
    src_ids = np.concatenate([existing, new])
    rng.shuffle(src_ids)
    source = wide_table(src_ids, seed=2)

    def fresh() -> str:
        p = os.path.join(work, "run.lance")
        if os.path.exists(p):
            shutil.rmtree(p)
        shutil.copytree(base, p)
        return p

    libs = {"lancelet": lancelet, "pylance": lance}
    cases: Dict[str, Callable[[object, str], Callable[[], object]]] = {
        "update 1%": lambda lib, p: (lambda: lib.dataset(p).update({"price": "price * 1.1", "name": "upper(name)"}, where="small < 10")),
        f"merge_insert {args.source_rows // 1000}k": lambda lib, p: (
            lambda: lib.dataset(p).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(source)),
    }
    results: Dict[str, Dict[str, List[float]]] = {c: {n: [] for n in libs} for c in cases}
    cpu: Dict[str, Dict[str, List[float]]] = {c: {n: [] for n in libs} for c in cases}
    answers: Dict[str, Dict[str, object]] = {c: {} for c in cases}
    for case, make in cases.items():
        for r in range(args.repeat):
            for name in (["lancelet", "pylance"] if r % 2 == 0 else ["pylance", "lancelet"]):
                p = fresh()
                fn = make(libs[name], p)
                out = {}
                t, c = timed(lambda: out.setdefault("r", fn()))
                results[case][name].append(t)
                cpu[case][name].append(c)
                answers[case][name] = out["r"]
                print(f"  {case:<20} {name:<9} {t:7.3f} s (cpu {c:.3f} s)  {out['r']}", flush=True)
        a = answers[case]
        assert a["lancelet"] == a["pylance"], f"{case}: results differ: {a}"

    print()
    print(f"{'case':<20} {'lancelet s':>22} {'pylance s':>22} {'ratio':>7} {'cpu ratio':>9}")
    summary = {}
    for case, per in results.items():
        med = {n: statistics.median(v) for n, v in per.items()}
        ratio = med["lancelet"] / med["pylance"]
        cell = {n: f"{med[n]:.3f} [{min(v):.3f}-{max(v):.3f}]" for n, v in per.items()}
        cmed = {n: statistics.median(v) for n, v in cpu[case].items()}
        cpu_ratio = cmed["lancelet"] / cmed["pylance"]
        print(f"{case:<20} {cell['lancelet']:>22} {cell['pylance']:>22} {ratio:7.2f} {cpu_ratio:9.2f}")
        summary[case] = {"lancelet": per["lancelet"], "pylance": per["pylance"], "ratio": ratio,
                         "cpu": cpu[case], "cpu_ratio": cpu_ratio}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.join(HERE, "results", f"evolution{('-' + args.label) if args.label else ''}-{stamp}.json")
    with open(out, "w") as f:
        json.dump({"rows": args.rows, "source_rows": args.source_rows, "repeat": args.repeat, "machine": platform.platform(),
                   "load": os.getloadavg(), "lancelet": lancelet.__version__, "pylance": lance.__version__,
                   "cases": summary}, f, indent=1)
    print(f"\nwrote {out}")
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
