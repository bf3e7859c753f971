"""Side-by-side benchmark: lancelet vs pylance on the same dataset, one run.

A dataset is generated (fixed seed) and written by pylance as several
fragments; then each operation runs with both libraries on that dataset:
full scan, projected scan (2 columns), filtered scan (``small < 10``), take of
1000 random rows, ``count_rows(filter)``, append (writes 200k rows) and delete
(``small = 5``). Every cell is repeated (mutating operations on a fresh copy
each time, the copy not timed); the table shows median times, the spread
(min-max) and the ratio lancelet / pylance (< 1 means lancelet is faster).
Results are also checked for equality and saved as JSON.

    python benches/dataset_compare.py [--rows N] [--repeat R] [--takes T] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Callable, Dict, List, Optional

import lance
import numpy as np
import pyarrow as pa

import lancelet


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def make_table(n: int, seed: int = 42, id_start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 61, n)  # 10..60 chars
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-", dtype=np.uint8)
    chars = alphabet[rng.integers(0, len(alphabet), int(offsets[-1]))]
    strs = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(chars.tobytes()))
    nullable = rng.integers(-(10**12), 10**12, n)
    mask = rng.random(n) < 0.10
    return pa.table({
        "id": pa.array(np.arange(id_start, id_start + n, dtype=np.int64)),
        "small": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
        "flt": pa.array(rng.normal(size=n)),
        "str": strs.cast(pa.string()),
        "nullable": pa.array(nullable, mask=mask),
    })


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------
def timed(fn: Callable[[], object], repeat: int, setup: Optional[Callable[[], object]] = None,
          warmup: int = 1) -> List[float]:
    """Wall times of ``repeat`` runs of ``fn`` (``setup`` runs untimed first,
    its result is passed to ``fn`` when it returns something)."""
    times = []
    for i in range(warmup + repeat):
        arg = setup() if setup is not None else None
        t0 = time.perf_counter()
        fn(arg) if setup is not None else fn()
        dt = time.perf_counter() - t0
        if i >= warmup:
            times.append(dt)
    return times


def stats(times: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "n": len(times),
            "stdev": statistics.stdev(times) if len(times) > 1 else 0.0}


def fmt(s: Dict[str, float]) -> str:
    return f"{s['median'] * 1e3:9.2f} ms [{s['min'] * 1e3:8.2f}-{s['max'] * 1e3:8.2f}]"


# ---------------------------------------------------------------------------
# the operations
# ---------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--fragments", type=int, default=8, help="fragments pylance writes the dataset as")
    ap.add_argument("--repeat", type=int, default=7, help="runs per read cell")
    ap.add_argument("--write-repeat", type=int, default=5, help="runs per append/delete cell")
    ap.add_argument("--takes", type=int, default=25, help="random draws of 1000 rows for take")
    ap.add_argument("--append-rows", type=int, default=200_000)
    ap.add_argument("--out", default="bench-results/dataset_compare.json")
    ap.add_argument("--tmp", default=None, help="directory for the datasets (default: a temp dir)")
    a = ap.parse_args()

    t0 = time.perf_counter()
    table = make_table(a.rows)
    extra = make_table(a.append_rows, seed=43, id_start=a.rows)
    print(f"generated {a.rows:,} rows ({table.nbytes / 2**20:.1f} MiB in Arrow) in {time.perf_counter() - t0:.1f} s",
          flush=True)

    results = []
    with tempfile.TemporaryDirectory(dir=a.tmp) as d:
        base = os.path.join(d, "base.lance")
        per_file = max(1, -(-a.rows // a.fragments))
        lance.write_dataset(table, base, max_rows_per_file=per_file)
        pds, lds = lance.dataset(base), lancelet.dataset(base)
        nfrag = len(pds.get_fragments())
        size = sum(os.path.getsize(os.path.join(base, "data", f)) for f in os.listdir(os.path.join(base, "data")))
        print(f"written by pylance {lance.__version__}: {nfrag} fragments, {size / 2**20:.1f} MiB on disk; "
              f"lancelet {lancelet.__version__}", flush=True)
        print(f"{'operation':24s} {'lancelet median [min-max]':>34s} {'pylance median [min-max]':>34s}  ratio  check")

        def cell(name: str, lfn, pfn, check=None, repeat: Optional[int] = None, setup_l=None, setup_p=None,
                 warmup: int = 1) -> None:
            r = repeat or a.repeat
            lt = timed(lfn, r, setup_l, warmup)
            pt = timed(pfn, r, setup_p, warmup)
            ls, ps = stats(lt), stats(pt)
            ok = check() if check is not None else None
            ratio = ls["median"] / ps["median"]
            results.append(dict(operation=name, rows=a.rows, fragments=nfrag, lancelet=ls, pylance=ps, ratio=ratio,
                                check_ok=ok))
            mark = "" if ok is None else ("ok" if ok else "MISMATCH")
            print(f"{name:24s} {fmt(ls):>34s} {fmt(ps):>34s}  {ratio:5.2f}x  {mark}", flush=True)

        # -- reads -----------------------------------------------------------
        cell("full scan", lambda: lds.to_table(), lambda: pds.to_table(),
             check=lambda: lds.to_table().equals(pds.to_table()))
        cols = ["id", "flt"]
        cell("projected scan (2 cols)", lambda: lds.to_table(columns=cols), lambda: pds.to_table(columns=cols),
             check=lambda: lds.to_table(columns=cols).equals(pds.to_table(columns=cols)))
        flt = "small < 10"
        cell("filtered scan", lambda: lds.to_table(filter=flt), lambda: pds.to_table(filter=flt),
             check=lambda: lds.to_table(filter=flt).sort_by("id").equals(pds.to_table(filter=flt).sort_by("id")))

        rng = np.random.default_rng(7)
        draws = [rng.choice(a.rows, 1000, replace=False).astype(np.int64) for _ in range(a.takes)]
        it_l, it_p = iter(draws * 2), iter(draws * 2)
        cell("take 1000 random rows", lambda ix: lds.take(ix.tolist()), lambda ix: pds.take(ix.tolist()),
             repeat=a.takes, warmup=1, setup_l=lambda: next(it_l), setup_p=lambda: next(it_p),
             check=lambda: all(lds.take(ix.tolist()).equals(pds.take(ix.tolist())) for ix in draws[:5]))

        cell("count_rows(small < 10)", lambda: lds.count_rows(filter=flt), lambda: pds.count_rows(filter=flt),
             check=lambda: lds.count_rows(filter=flt) == pds.count_rows(filter=flt))

        # -- writes (each run on a fresh copy of the dataset) ------------------
        copies = iter(range(10**6))

        def fresh() -> str:
            p = os.path.join(d, f"copy{next(copies)}.lance")
            shutil.copytree(base, p)
            return p

        def cleanup_later(p: str) -> str:
            to_remove.append(p)
            return p

        to_remove: List[str] = []

        def setup_open_l():
            for p in to_remove:
                shutil.rmtree(p, ignore_errors=True)
            to_remove.clear()
            return lancelet.dataset(cleanup_later(fresh()))

        def setup_open_p():
            for p in to_remove:
                shutil.rmtree(p, ignore_errors=True)
            to_remove.clear()
            return lance.dataset(cleanup_later(fresh()))

        def append_check() -> bool:
            pl, pp = fresh(), fresh()
            lancelet.dataset(pl).insert(extra)
            lance.dataset(pp).insert(extra)
            ok = (lance.dataset(pl).count_rows() == lance.dataset(pp).count_rows() == a.rows + a.append_rows
                  and lancelet.dataset(pp).count_rows() == a.rows + a.append_rows
                  and lance.dataset(pl).to_table(filter=f"id >= {a.rows}").sort_by("id").equals(
                      extra.cast(lance.dataset(pl).schema)))
            shutil.rmtree(pl), shutil.rmtree(pp)
            return ok

        cell(f"append {a.append_rows // 1000}k rows", lambda ds: ds.insert(extra), lambda ds: ds.insert(extra),
             repeat=a.write_repeat, setup_l=setup_open_l, setup_p=setup_open_p, check=append_check)

        def delete_check() -> bool:
            pl, pp = fresh(), fresh()
            nl = lancelet.dataset(pl).delete("small = 5")["num_deleted_rows"]
            lance.dataset(pp).delete("small = 5")
            want = a.rows - pds.count_rows(filter="small = 5")
            ok = (lance.dataset(pl).count_rows() == lance.dataset(pp).count_rows() == want == a.rows - nl
                  and lancelet.dataset(pp).count_rows() == want
                  and lance.dataset(pl).count_rows(filter="small = 5") == 0)
            shutil.rmtree(pl), shutil.rmtree(pp)
            return ok

        cell("delete (small = 5)", lambda ds: ds.delete("small = 5"), lambda ds: ds.delete("small = 5"),
             repeat=a.write_repeat, setup_l=setup_open_l, setup_p=setup_open_p, check=delete_check)
        for p in to_remove:
            shutil.rmtree(p, ignore_errors=True)

    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"rows": a.rows, "fragments": nfrag, "lance_version": lance.__version__,
                   "lancelet_version": lancelet.__version__, "results": results}, f, indent=1)
    print(f"times: median [min-max] over the runs; ratio = lancelet / pylance median (lower is better); "
          f"JSON in {a.out}")


if __name__ == "__main__":
    main()
