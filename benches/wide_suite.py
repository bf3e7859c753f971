"""The wide-table benchmark of issue 16: lancelet against pylance 14 on the
table of ``wide_table.py`` (keys, a category string, a timestamp, a
nullable float, an int32, short text and a 64-float vector), written by each
library with default settings except ``max_rows_per_file`` (several
fragments).

Figures, each system on its own dataset, warm page cache:

- write (fresh path each run) and bytes on disk;
- full scan, and scans of ``kind`` and ``emb``;
- take of 1,000 random rows (one draw per run);
- filtered scans at selectivities 0, 0.01 %, 1 %, 10 % and 50 % on a sorted
  key, a string equality, a ``LIKE``, a numeric range and a conjunction
  (all columns), each with the bytes and storage requests it issued
  (lancelet: its process-wide I/O counters, ranges after merging;
  pylance: its scan statistics, ``iops``);
- ``count_rows`` with each of those filters;
- the issue's case of ``columns=["kind", "emb"]`` and a filter matching
  nothing.

Runs alternate between the libraries, one of each per round. Ratios are lancelet / pylance medians of the same run (< 1: lancelet is
faster); the summary gives the geometric mean of the filtered-scan ratios
and the worst one. Output: a table on stdout and JSON under
``benches/results/`` (``wide_suite-*.json``), with the commit measured and
the load average before and after.

    python benches/wide_suite.py [--rows 1500000] [--repeat 5] [--label NAME]
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lance  # noqa: E402
import wide_table  # noqa: E402
from bench_common import git_commit, load_avg  # noqa: E402

import lancelet  # noqa: E402

TAKE_ROWS = 1000


def timed_alternating(fns: Dict[str, Callable[[], object]], repeat: int, warmup: int = 1,
                      setup: Optional[Callable[[str], object]] = None) -> Dict[str, List[float]]:
    """Times each of fns (name -> function) repeat times, round robin: one
    run of each per round, after warmup untimed rounds; ``setup(name)``, if
    given, runs untimed before each run."""
    out: Dict[str, List[float]] = {k: [] for k in fns}
    for i in range(warmup + repeat):
        for k, fn in fns.items():
            if setup is not None:
                setup(k)
            gc.collect()
            t0 = time.perf_counter()
            r = fn()
            dt = time.perf_counter() - t0
            del r
            if i >= warmup:
                out[k].append(dt)
    return out


def med(ts: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(ts), "min": min(ts), "max": max(ts), "n": len(ts)}


def dir_size(p: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(p) for f in fs)


class Lancelet:
    name = "lancelet"
    mod = lancelet

    def io(self, ds, fn):
        """(result, requests, bytes) of fn(): storage requests as ranges
        after merging touching ones (what the local store issues; the
        counterpart of pylance's ``iops``), not read calls (one call may
        fetch many ranges)."""
        s0 = lancelet._native._io_stats()
        out = fn()
        s1 = lancelet._native._io_stats()
        return out, s1["requests"] - s0["requests"], s1["bytes"] - s0["bytes"]

    def scan_io(self, ds, **kw):
        return self.io(ds, lambda: ds.to_table(**kw))


class Pylance(Lancelet):
    name = "pylance"
    mod = lance

    def scan_io(self, ds, **kw):
        got = []
        t = ds.scanner(scan_stats_callback=got.append, **kw).to_table()
        s = got[-1] if got else None
        return t, (s.iops if s else None), (s.bytes_read if s else None)


def run(a) -> dict:
    systems = [s for s in (Lancelet(), Pylance()) if s.name in a.systems.split(",")]
    rows = a.rows
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "rows": rows, "repeat": a.repeat,
        "takes": a.takes, "rows_per_file": a.rows_per_file, "lancelet": lancelet.__version__,
        "pylance": lance.__version__, "pyarrow": pa.__version__, "commit": git_commit(), "cpus": os.cpu_count(),
        "load_avg_before": load_avg(),
    }
    print(f"wide table: {rows:,} rows, {a.rows_per_file:,} per file; commit {meta['commit']}; "
          f"load {meta['load_avg_before']}", flush=True)
    t0 = time.perf_counter()
    table = wide_table.table(rows)
    print(f"generated in {time.perf_counter() - t0:.1f} s: {table.nbytes / 1e6:.0f} MB of Arrow", flush=True)
    filters = wide_table.filters(rows)
    rng = np.random.default_rng(7)
    draws = [np.sort(rng.choice(rows, TAKE_ROWS, replace=False)).astype(np.int64) for _ in range(a.takes)]
    results: List[dict] = []

    def record(system, figure, ts, **extra):
        row = dict(system=system, figure=figure, **med(ts), **extra)
        results.append(row)
        more = "".join(f" {k}={v}" for k, v in extra.items() if v is not None)
        print(f"  {system:9s} {figure:42s} {row['median'] * 1e3:9.1f} ms [{row['min'] * 1e3:.1f}-"
              f"{row['max'] * 1e3:.1f}]{more}", flush=True)

    with tempfile.TemporaryDirectory(dir=a.tmp) as d:
        paths = {s.name: os.path.join(d, s.name) for s in systems}

        def write(s):
            s.mod.write_dataset(table, paths[s.name], max_rows_per_file=a.rows_per_file)

        def fresh(name):
            # Untimed: the previous run's files removed and everything
            # flushed, so a write does not pay the kernel's writeback of
            # the run before it (without this, one library's write times
            # ranged 0.38-1.17 s in one quiet run).
            shutil.rmtree(paths[name], ignore_errors=True)
            os.sync()

        # Every figure alternates the libraries run by run, so a burst of
        # load on this shared machine hits both sides alike.
        ts = timed_alternating({s.name: (lambda s=s: write(s)) for s in systems}, a.write_repeat, warmup=0, setup=fresh)
        for s in systems:
            record(s.name, "write", ts[s.name], bytes=dir_size(paths[s.name]))
        handles = {}
        for s in systems:
            ds = s.mod.dataset(paths[s.name])
            got = ds.to_table()
            if not got.equals(table.cast(got.schema)):
                print(f"  !! {s.name}: full scan differs from the input", flush=True)
            del got
            chk = ds.take(draws[0])
            if not chk.equals(table.take(pa.array(draws[0])).cast(chk.schema)):
                print(f"  !! {s.name}: take differs from the input", flush=True)
            handles[s.name] = ds

        def figure(name, fn, repeat=a.repeat, io_kw=None, **extra):
            """Times fn(system) for every system, alternating; io_kw: scan
            arguments whose requests and bytes are recorded too."""
            ts = timed_alternating({s.name: (lambda s=s: fn(s)) for s in systems}, repeat)
            for s in systems:
                more = dict(extra)
                if io_kw is not None:
                    _, more["requests"], more["bytes_read"] = s.scan_io(handles[s.name], **io_kw)
                record(s.name, name, ts[s.name], **more)

        figure("full scan", lambda s: s.mod.dataset(paths[s.name]).to_table(), io_kw={})
        for c in ("kind", "emb"):
            figure(f"scan {c}", lambda s: s.mod.dataset(paths[s.name]).to_table(columns=[c]))
        its = {s.name: iter(draws * 2) for s in systems}
        figure(f"take {TAKE_ROWS}", lambda s: handles[s.name].take(next(its[s.name])), repeat=a.takes)
        for fam, sel, flt in filters:
            n = {s.name: handles[s.name].count_rows(filter=flt) for s in systems}
            if len(set(n.values())) > 1:
                print(f"  !! filter {flt!r}: row counts differ {n}", flush=True)
            figure(f"filter {fam} {sel}", lambda s: s.mod.dataset(paths[s.name]).to_table(filter=flt),
                   io_kw={"filter": flt}, rows=next(iter(n.values())), sql=flt)
            figure(f"count {fam} {sel}", lambda s: s.mod.dataset(paths[s.name]).count_rows(filter=flt),
                   rows=next(iter(n.values())))
        flt = "kind = 'abc'"
        figure("filter kind,emb 0 rows", lambda s: s.mod.dataset(paths[s.name]).to_table(columns=["kind", "emb"], filter=flt),
               io_kw={"columns": ["kind", "emb"], "filter": flt})
        handles.clear()
        if not a.keep:
            for p in paths.values():
                shutil.rmtree(p, ignore_errors=True)
    meta["load_avg_after"] = load_avg()
    return {"meta": meta, "results": results}


def summarize(out: dict) -> dict:
    res = out["results"]
    base = {r["figure"]: r for r in res if r["system"] == "pylance"}
    ratios = {}
    for r in res:
        if r["system"] == "lancelet" and r["figure"] in base:
            r["vs_pylance"] = r["median"] / base[r["figure"]]["median"]
            ratios[r["figure"]] = r["vs_pylance"]
            if "rows" in r and r["rows"] != base[r["figure"]].get("rows"):
                print(f"  !! {r['figure']}: lancelet {r['rows']} rows, pylance {base[r['figure']].get('rows')}")
    filt = {k: v for k, v in ratios.items() if k.startswith("filter ") and k != "filter kind,emb 0 rows"}
    count = {k: v for k, v in ratios.items() if k.startswith("count ")}
    s = {}
    if filt:
        s["filter_geomean"] = math.exp(sum(math.log(v) for v in filt.values()) / len(filt))
        s["filter_worst"] = max(filt.items(), key=lambda kv: kv[1])
        s["filter_slower_than_pylance"] = sorted(k for k, v in filt.items() if v > 1.0)
    if count:
        s["count_geomean"] = math.exp(sum(math.log(v) for v in count.values()) / len(count))
        s["count_worst"] = max(count.items(), key=lambda kv: kv[1])
    for k in ("write", "full scan", f"take {TAKE_ROWS}", "filter kind,emb 0 rows"):
        if k in ratios:
            s[k] = ratios[k]
    wb = {r["system"]: r.get("bytes") for r in res if r["figure"] == "write"}
    if wb.get("pylance"):
        s["bytes_on_disk"] = wb["lancelet"] / wb["pylance"]
    out["summary"] = s
    return s


def print_table(out: dict) -> None:
    res = out["results"]
    figs = []
    for r in res:
        if r["figure"] not in figs:
            figs.append(r["figure"])
    print(f"\n{'figure':44s} {'lancelet ms':>12s} {'pylance ms':>11s} {'ratio':>6s} {'rows':>8s} "
          f"{'req l/p':>13s} {'MB read l/p':>17s}")
    for f in figs:
        l = next((r for r in res if r["figure"] == f and r["system"] == "lancelet"), None)
        p = next((r for r in res if r["figure"] == f and r["system"] == "pylance"), None)
        ratio = f"{l['vs_pylance']:.2f}" if l and "vs_pylance" in l else "-"
        req = f"{(l or {}).get('requests', '-')}/{(p or {}).get('requests', '-')}"
        mb = "/".join(f"{x['bytes_read'] / 1e6:.1f}" if x and x.get("bytes_read") is not None else "-" for x in (l, p))
        print(f"{f:44s} {l['median'] * 1e3 if l else float('nan'):12.1f} {p['median'] * 1e3 if p else float('nan'):11.1f} "
              f"{ratio:>6s} {str((l or p or {}).get('rows', '')):>8s} {req:>13s} {mb:>17s}")
    s = out.get("summary", {})
    if s:
        print("\nsummary:", json.dumps(s, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_500_000)
    ap.add_argument("--rows-per-file", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write-repeat", type=int, default=5)
    ap.add_argument("--takes", type=int, default=25)
    ap.add_argument("--systems", default="lancelet,pylance")
    ap.add_argument("--label", default="")
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    out = run(a)
    summarize(out)
    print_table(out)
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(a.out_dir, f"wide_suite-{a.label + '-' if a.label else ''}{stamp}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"\nJSON: {path}")


if __name__ == "__main__":
    main()
