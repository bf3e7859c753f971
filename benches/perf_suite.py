"""The performance suite of issue 5: lancelet against pylance 14, Parquet and
Arrow IPC on the same generated data, in one run, warm page cache.

Tables (fixed seeds, so every run sees the same bytes):

- A: ``id`` int64 sequential, ``small`` int32 in [0, 1000), ``flt`` float64,
  ``str`` 10-60 characters drawn from a pool of ~1M distinct word phrases and
  URL-like strings, ``nullable`` int64 with 10 % nulls (5,000,000 rows);
- B: ``id`` int64 and ``vec`` fixed_size_list<float32, 128> (1,000,000 rows).

Systems: lancelet (defaults), pylance (defaults), Parquet through pyarrow
(snappy, zstd) and Arrow IPC (uncompressed). Figures per table: write time,
bytes on disk, full scan to Arrow, one scan per column, filtered scan
(``small < 10``) and ``count_rows`` with that filter (table A), take of 1,000
random rows (all columns, one draw per run, >= 25 draws). The physical floor
of a figure is the time memcpy needs for the Arrow bytes it produces (or
consumes, for writes). For lancelet the storage requests per take are
counted (``lancelet._native._io_stats``) and reported per value read.

Every figure is repeated (``--repeat``; takes ``--takes``) and reported as
median [min-max]; ratios are system / pylance medians (< 1: faster than
pylance) and median / floor. Output: a table on stdout, JSON and a PNG bar
chart of the ratios under ``benches/results/``.

    bash benches/perf.sh [--scale 0.1] [--repeat 5] [--takes 25] [--label NAME]
    python benches/perf_suite.py ...   (the same, without installing anything)
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.parquet as pq

import lancelet
from lancelet import _native

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import git_commit, load_avg

FILTER = "small < 10"
TAKE_ROWS = 1000
HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def _word_pool(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` pronounceable lowercase words of 3-10 letters."""
    cons, vows = np.array(list("bcdfghjklmnprstvwz")), np.array(list("aeiou"))
    out = set()
    while len(out) < n:
        k = rng.integers(2, 6)
        c = cons[rng.integers(0, len(cons), k)]
        v = vows[rng.integers(0, len(vows), k)]
        w = "".join(a + b for a, b in zip(c, v))[: rng.integers(3, 11)]
        out.add(w)
    return np.array(sorted(out))


def string_pool(n: int, seed: int = 11) -> pa.Array:
    """About ``n`` distinct strings of 10-60 characters: half word phrases,
    half URL-like paths with query ids."""
    rng = np.random.default_rng(seed)
    words = _word_pool(rng, 6000)
    tlds = ["com", "org", "net", "io", "de"]
    out = []
    nw = len(words)
    picks = rng.integers(0, nw, (n, 6))
    kinds = rng.random(n) < 0.5
    nums = rng.integers(0, 100000, n)
    lens = rng.integers(10, 61, n)
    for i in range(n):
        p = picks[i]
        if kinds[i]:
            s = " ".join(words[p[: 2 + p[5] % 5]])
        else:
            s = f"https://{words[p[0]]}.{tlds[p[1] % 5]}/{words[p[2]]}/{words[p[3]]}?id={nums[i]}"
        L = lens[i]
        while len(s) < L:
            s = s + " " + words[p[4]]
        out.append(s[:L])
    return pa.array(out, pa.string())


def make_table_a(n: int, seed: int = 42) -> pa.Table:
    rng = np.random.default_rng(seed)
    pool = string_pool(max(1000, n // 5))
    nullable = rng.integers(-(10**12), 10**12, n)
    mask = rng.random(n) < 0.10
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "small": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
        "flt": pa.array(rng.normal(size=n)),
        "str": pool.take(pa.array(rng.integers(0, len(pool), n))),
        "nullable": pa.array(nullable, mask=mask),
    })


def make_table_b(n: int, seed: int = 43) -> pa.Table:
    rng = np.random.default_rng(seed)
    vals = rng.standard_normal(n * 128, dtype=np.float32)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vals), 128),
    })


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------
def timed(fn: Callable[[], object], repeat: int, warmup: int = 1,
          setup: Optional[Callable[[], object]] = None) -> List[float]:
    """Wall times of ``repeat`` runs (after ``warmup`` untimed ones); when
    ``setup`` is given, its (untimed) result is passed to ``fn``."""
    times = []
    for i in range(warmup + repeat):
        arg = setup() if setup is not None else None
        gc.collect()
        t0 = time.perf_counter()
        out = fn(arg) if setup is not None else fn()
        dt = time.perf_counter() - t0
        del out
        if i >= warmup:
            times.append(dt)
    return times


def stats(times: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "n": len(times)}


def memcpy_bandwidth(nbytes: int = 256 << 20, repeat: int = 9) -> float:
    """Bytes per second of one-thread memcpy (numpy copyto) on a buffer of
    ``nbytes``, median of ``repeat`` runs."""
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    ts = timed(lambda: np.copyto(dst, src), repeat)
    return nbytes / statistics.median(ts)


def dir_size(p: str) -> int:
    if os.path.isfile(p):
        return os.path.getsize(p)
    total = 0
    for root, _, files in os.walk(p):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


# ---------------------------------------------------------------------------
# the systems: write(table, path), scan(path, columns, filter), count(path,
# filter), take(path, indices); every function opens what it reads, as a
# fresh process would (metadata caches of the libraries stay warm).
# ---------------------------------------------------------------------------
class System:
    name = ""
    def write(self, t: pa.Table, p: str) -> None: raise NotImplementedError
    def open(self, p: str): raise NotImplementedError
    def scan(self, h, columns=None, filter=None) -> pa.Table: raise NotImplementedError
    def count(self, h, filter) -> int: raise NotImplementedError
    def take(self, h, idx: np.ndarray) -> pa.Table: raise NotImplementedError


class LanceApi(System):
    """lancelet and pylance share one API; only the module differs."""
    module = None
    def write(self, t, p): self.module.write_dataset(t, p)
    def open(self, p): return self.module.dataset(p)
    def scan(self, h, columns=None, filter=None): return h.to_table(columns=columns, filter=filter)
    def count(self, h, filter): return h.count_rows(filter=filter)
    def take(self, h, idx): return h.take(idx)


class Lancelet(LanceApi):
    name = "lancelet"
    module = lancelet


class Pylance(LanceApi):
    name = "pylance"
    module = lance


def _arrow_filter(f: Optional[str]):
    if f is None:
        return None
    assert f == FILTER
    return pc.field("small") < 10


class Parquet(System):
    def __init__(self, codec: str):
        self.codec = codec
        self.name = f"parquet-{codec}"
    def write(self, t, p): pq.write_table(t, p, compression=self.codec)
    def open(self, p): return pds.dataset(p, format="parquet")
    def scan(self, h, columns=None, filter=None): return h.to_table(columns=columns, filter=_arrow_filter(filter))
    def count(self, h, filter): return h.count_rows(filter=_arrow_filter(filter))
    def take(self, h, idx): return h.take(pa.array(idx))


class ArrowIpc(Parquet):
    name = "arrow-ipc"
    def __init__(self):
        pass
    def write(self, t, p):
        with pa.OSFile(p, "wb") as f, pa.ipc.new_file(f, t.schema) as w:
            w.write_table(t, max_chunksize=1 << 17)
    def open(self, p): return pds.dataset(p, format="arrow")


SYSTEMS = {s.name: s for s in [Lancelet(), Pylance(), Parquet("snappy"), Parquet("zstd"), ArrowIpc()]}


# ---------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------
def io_stats() -> Optional[Dict[str, int]]:
    f = getattr(_native, "_io_stats", None)
    return f() if f is not None else None


def run_table(label: str, table: pa.Table, systems: List[System], a, d: str, bw: float,
              results: List[dict]) -> None:
    n = table.num_rows
    rng = np.random.default_rng(7)
    draws = [np.sort(rng.choice(n, TAKE_ROWS, replace=False)).astype(np.int64) for _ in range(a.takes)]
    take_bytes = table.take(pa.array(draws[0])).nbytes
    filtered_bytes = None
    single = [c for c in table.column_names]
    print(f"\n== table {label}: {n:,} rows, {table.nbytes / 1e6:,.1f} MB of Arrow; floor = memcpy at "
          f"{bw / 1e9:.2f} GB/s", flush=True)

    def record(system: str, figure: str, times: List[float], floor_bytes: Optional[int], **extra) -> None:
        s = stats(times)
        row = dict(table=label, system=system, figure=figure, **s, **extra)
        if floor_bytes:
            row["floor_s"] = floor_bytes / bw
        results.append(row)
        spread = f"[{s['min'] * 1e3:.1f}-{s['max'] * 1e3:.1f}]"
        more = "".join(f" {k}={v}" for k, v in extra.items())
        print(f"  {system:15s} {figure:22s} {s['median'] * 1e3:10.1f} ms {spread:>22s}{more}", flush=True)

    for sys_ in systems:
        path = os.path.join(d, f"{label}-{sys_.name}")
        # write: each run into a fresh path, the previous one removed untimed
        def fresh():
            shutil.rmtree(path, ignore_errors=True)
            if os.path.isfile(path):
                os.remove(path)
            os.sync()  # the previous run's writeback is not charged to the next
            return path
        wt = timed(lambda p: sys_.write(table, p), a.write_repeat, warmup=0, setup=fresh)
        record(sys_.name, "write", wt, table.nbytes, bytes=dir_size(path))
        h = sys_.open(path)
        got = sys_.scan(h)
        if not got.sort_by("id").equals(table.cast(got.schema)):
            print(f"  !! {sys_.name}: full scan differs from the input", flush=True)
        del got
        record(sys_.name, "full scan", timed(lambda: sys_.scan(sys_.open(path)), a.repeat), table.nbytes)
        for c in single:
            record(sys_.name, f"scan {c}", timed(lambda: sys_.scan(sys_.open(path), columns=[c]), a.repeat),
                   table.column(c).nbytes)
        if "small" in table.column_names:
            if filtered_bytes is None:
                filtered_bytes = table.filter(pc.field("small") < 10).nbytes
            record(sys_.name, "filtered scan", timed(lambda: sys_.scan(sys_.open(path), filter=FILTER), a.repeat),
                   filtered_bytes)
            want = pc.sum(pc.less(table.column("small"), 10)).as_py()
            got_n = sys_.count(sys_.open(path), FILTER)
            if got_n != want:
                print(f"  !! {sys_.name}: count_rows {got_n} != {want}", flush=True)
            record(sys_.name, "count_rows filtered", timed(lambda: sys_.count(sys_.open(path), FILTER), a.repeat), None)
        # take: one draw per run; the dataset opened once (as a server would)
        h = sys_.open(path)
        chk = sys_.take(h, draws[0])
        if not chk.equals(table.take(pa.array(draws[0])).cast(chk.schema)):
            print(f"  !! {sys_.name}: take differs from the input", flush=True)
        it = iter(draws * 2)
        extra = {}
        if sys_.name == "lancelet" and io_stats() is not None:
            before = io_stats()
            for ix in draws:
                sys_.take(h, ix)
            after = io_stats()
            values = len(draws) * TAKE_ROWS * len(table.column_names)
            extra = {"requests_per_value": round((after["requests"] - before["requests"]) / values, 4),
                     "bytes_read_per_take": (after["bytes"] - before["bytes"]) // len(draws)}
        record(sys_.name, f"take {TAKE_ROWS}", timed(lambda ix, h=h: sys_.take(h, ix), a.takes, setup=lambda: next(it)),
               take_bytes, **extra)
        del h
        if not a.keep:
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.remove(path)


def summarize(results: List[dict]) -> List[dict]:
    """Ratios to pylance and to the floor, one row per (table, figure, system)."""
    base = {(r["table"], r["figure"]): r["median"] for r in results if r["system"] == "pylance"}
    rows = []
    for r in results:
        p = base.get((r["table"], r["figure"]))
        r["vs_pylance"] = r["median"] / p if p else None
        r["vs_floor"] = r["median"] / r["floor_s"] if r.get("floor_s") else None
        rows.append(r)
    return rows


def print_table(rows: List[dict], systems: List[str]) -> None:
    print("\nmedian ms (ratio to pylance; x floor)   [lower is better]")
    head = f"{'table':5s} {'figure':22s}" + "".join(f"{s:>27s}" for s in systems)
    print(head)
    keys = []
    for r in rows:
        k = (r["table"], r["figure"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        line = f"{k[0]:5s} {k[1]:22s}"
        for s in systems:
            r = next((x for x in rows if (x["table"], x["figure"], x["system"]) == (*k, s)), None)
            if r is None:
                line += f"{'-':>27s}"
                continue
            vp = f"{r['vs_pylance']:.2f}" if r["vs_pylance"] else "-"
            vf = f"{r['vs_floor']:.0f}" if r["vs_floor"] else "-"
            line += f"{r['median'] * 1e3:11.1f} ({vp:>5s}; {vf:>4s}x)"
        print(line)
    print(f"\n{'table':5s} {'bytes on disk':22s}" + "".join(f"{s:>27s}" for s in systems))
    for t in sorted({r["table"] for r in rows}):
        line = f"{t:5s} {'':22s}"
        pb = next((r["bytes"] for r in rows if r["table"] == t and r["system"] == "pylance" and "bytes" in r), None)
        for s in systems:
            r = next((x for x in rows if x["table"] == t and x["system"] == s and "bytes" in x), None)
            line += f"{r['bytes'] / 1e6:14.1f} MB ({r['bytes'] / pb:.2f})" if r and pb else f"{'-':>27s}"
        print(line)


def chart(rows: List[dict], systems: List[str], path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = []
    for r in rows:
        k = (r["table"], r["figure"])
        if k not in keys:
            keys.append(k)
    others = [s for s in systems if s != "pylance"]
    fig, ax = plt.subplots(figsize=(max(10, len(keys) * 0.9), 6))
    width = 0.8 / max(1, len(others))
    for j, s in enumerate(others):
        vals = []
        for k in keys:
            r = next((x for x in rows if (x["table"], x["figure"], x["system"]) == (*k, s)), None)
            vals.append(r["vs_pylance"] if r and r["vs_pylance"] else np.nan)
        xs = np.arange(len(keys)) + (j - (len(others) - 1) / 2) * width
        ax.bar(xs, vals, width, label=s)
    ax.axhline(1.0, color="black", lw=1)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(keys)))
    ax.set_xticklabels([f"{t}: {f}" for t, f in keys], rotation=60, ha="right")
    ax.set_ylabel("time / pylance time (log; < 1 is faster)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="row-count factor (0.1 for a quick run)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per scan figure")
    ap.add_argument("--write-repeat", type=int, default=5, help="timed runs per write")
    ap.add_argument("--takes", type=int, default=25, help="random draws of 1000 rows (>= 25 for the issue)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of " + ",".join(SYSTEMS))
    ap.add_argument("--tables", default="A,B")
    ap.add_argument("--label", default="", help="name part of the output files")
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tmp", default=None, help="directory for the written data (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the written data until the end of the table")
    a = ap.parse_args()
    systems = [SYSTEMS[s] for s in a.systems.split(",")]
    names = [s.name for s in systems]

    bw = memcpy_bandwidth()
    results: List[dict] = []
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "scale": a.scale, "repeat": a.repeat,
        "takes": a.takes, "lancelet": lancelet.__version__, "pylance": lance.__version__,
        "pyarrow": pa.__version__, "python": sys.version.split()[0], "machine": platform.machine(),
        "cpus": os.cpu_count(), "load_avg": os.getloadavg(), "memcpy_bytes_per_s": bw,
        "commit": git_commit(), "load_avg_before": load_avg(),
    }
    print(f"lancelet {lancelet.__version__}, pylance {lance.__version__}, pyarrow {pa.__version__}; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus", flush=True)
    with tempfile.TemporaryDirectory(dir=a.tmp) as d:
        for label in a.tables.split(","):
            t0 = time.perf_counter()
            if label == "A":
                table = make_table_a(int(5_000_000 * a.scale))
                distinct = pc.count_distinct(table.column("str")).as_py()
                meta["A_distinct_str"] = distinct
            else:
                table = make_table_b(int(1_000_000 * a.scale))
            print(f"generated table {label} in {time.perf_counter() - t0:.1f} s", flush=True)
            meta[f"{label}_rows"], meta[f"{label}_arrow_bytes"] = table.num_rows, table.nbytes
            run_table(label, table, systems, a, d, bw, results)
            del table
            gc.collect()
    meta["load_avg_after"] = load_avg()
    rows = summarize(results)
    print_table(rows, names)
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(a.out_dir, f"perf_suite-{a.label + '-' if a.label else ''}{stamp}")
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=1)
    try:
        chart(rows, names, base + ".png", f"lancelet {lancelet.__version__} vs pylance {lance.__version__} "
                                          f"(scale {a.scale}, {meta['date']})")
        print(f"\nJSON: {base}.json  chart: {base}.png")
    except ImportError:
        print(f"\nJSON: {base}.json  (no chart: matplotlib is not installed; bash benches/perf.sh installs it)")


if __name__ == "__main__":
    main()
