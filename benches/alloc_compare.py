"""The extension's global allocator, compared in one run (issue 30.4).

Each variant is a directory holding a ``lancelet`` package whose
``_native.abi3.so`` was built with one ``alloc-*`` feature of
``rust/lancelet-python`` (``--variant NAME=DIR``); pylance (``lance``) is the
reference. Every round runs every variant and pylance, in an order that
rotates from round to round, each in fresh child processes whose
``PYTHONPATH`` is the variant's directory:

- **memory**: ``memory_suite.py``'s three ops (``write``, ``scan``,
  ``write100k``: ``--rows`` rows of the wide table streamed from a
  ``RecordBatchReader``), one process per op: peak RSS, wall time and the
  op's minor page faults;
- **ops**: one process per variant that builds the wide table of
  ``wide_suite.py`` in memory (``--ops-rows`` rows), then writes it
  ``--writes`` times (500k rows per file, the previous copy removed and
  ``os.sync()`` untimed), scans it whole ``--scans`` times and takes 1,000
  random rows ``--takes`` times: the median wall time and minor faults per
  op (``getrusage`` around each call).

The child checks that it imported the variant's package and reports the
allocator the build says it has (``_native._allocator()``). Output: medians
over rounds per variant and figure, ratios to pylance's medians, and the
raw runs as JSON under ``benches/results/``.

    python benches/alloc_compare.py --variant bigalloc=/work/alloc-variants/bigalloc \\
        --variant mimalloc=... --variant jemalloc=... [--rounds 3] [--label NAME]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import git_commit, load_avg  # noqa: E402

MEMORY_OPS = ("write", "scan", "write100k")
TAKE_ROWS = 1000


def _env(pythonpath: str) -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def _run(args: List[str], pythonpath: str) -> dict:
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=_env(pythonpath))
    if p.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _which(pythonpath: str) -> dict:
    """What a child with this PYTHONPATH imports: the package's file and the
    allocator its build reports."""
    code = ("import json, lancelet, lancelet._native as n; "
            "print(json.dumps({'file': lancelet.__file__, 'allocator': n._allocator()}))")
    return _run(["-c", code], pythonpath)


def ops_child(system: str, path: str, rows: int, writes: int, scans: int, takes: int) -> None:
    import numpy as np
    import wide_table
    mod = __import__("lance" if system == "pylance" else "lancelet")
    table = wide_table.table(rows)
    rng = np.random.default_rng(7)
    draws = [np.sort(rng.choice(rows, TAKE_ROWS, replace=False)).astype(np.int64) for _ in range(takes)]
    out: Dict[str, List[dict]] = {"write": [], "full scan": [], f"take {TAKE_ROWS}": []}

    def timed(figure, fn):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        out[figure].append({"seconds": dt, "minflt": r1.ru_minflt - r0.ru_minflt,
                            "user_s": r1.ru_utime - r0.ru_utime, "sys_s": r1.ru_stime - r0.ru_stime})

    for _ in range(writes):
        shutil.rmtree(path, ignore_errors=True)
        os.sync()
        timed("write", lambda: mod.write_dataset(table, path, max_rows_per_file=500_000))
    ds = mod.dataset(path)
    got = ds.to_table()
    assert got.num_rows == rows
    del got
    for _ in range(scans):
        timed("full scan", lambda: mod.dataset(path).to_table())
    for d in draws:
        timed(f"take {TAKE_ROWS}", lambda d=d: ds.take(d))
    res = {}
    for fig, runs in out.items():
        res[fig] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        res[fig]["n"] = len(runs)
    res["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(res))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=4_000_000, help="rows of the memory ops")
    ap.add_argument("--ops-rows", type=int, default=1_500_000, help="rows of the write/scan/take process")
    ap.add_argument("--writes", type=int, default=3)
    ap.add_argument("--scans", type=int, default=5)
    ap.add_argument("--takes", type=int, default=25)
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: memory,ops")
    ap.add_argument("--label", default="")
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--ops-child", nargs=6, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ops_child:
        system, path, rows, writes, scans, takes = a.ops_child
        ops_child(system, path, int(rows), int(writes), int(scans), int(takes))
        return
    variants = dict(v.split("=", 1) for v in a.variant)
    systems = {name: os.path.abspath(d) for name, d in variants.items()}
    systems["pylance"] = ""
    skip = set(filter(None, a.skip.split(",")))
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": git_commit(),
            "rows": a.rows, "ops_rows": a.ops_rows, "rounds": a.rounds, "writes": a.writes, "scans": a.scans,
            "takes": a.takes, "variants": systems, "load_avg_before": load_avg(), "cpus": os.cpu_count()}
    for name in variants:
        w = _which(systems[name])
        if not w["file"].startswith(systems[name]):
            raise SystemExit(f"{name}: imported {w['file']}, not the variant's package")
        meta.setdefault("allocators", {})[name] = w["allocator"]
        print(f"{name}: {w['allocator']} ({w['file']})", flush=True)
    print(f"commit {meta['commit']}; load {meta['load_avg_before']}", flush=True)
    runs: List[dict] = []
    names = list(systems)
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.join(a.out_dir, f"alloc_compare-{a.label + '-' if a.label else ''}{stamp}.json")

    def save(done: int) -> None:
        """Written after every round, so a run cut short keeps its rounds."""
        meta["load_avg_after"] = load_avg()
        meta["rounds_done"] = done
        with open(out, "w") as fh:
            json.dump({"meta": meta, "runs": runs, "summary": summarize(runs, names)}, fh, indent=1)

    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        for rnd in range(a.rounds):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            print(f"round {rnd + 1}/{a.rounds}: {', '.join(order)}; {time.strftime('%H:%M:%S')}, "
                  f"load {load_avg()}", flush=True)
            for name in order:
                system = "pylance" if name == "pylance" else "lancelet"
                path = os.path.join(tmp, name)
                if "memory" not in skip:
                    for op in MEMORY_OPS:
                        if op.startswith("write"):
                            shutil.rmtree(path, ignore_errors=True)
                        r = _run([os.path.join(HERE, "memory_suite.py"), "--child", system, op, path, str(a.rows)],
                                 systems[name])
                        r.update(variant=name, round=rnd, part="memory", figure=op, load=load_avg())
                        runs.append(r)
                        print(f"  {name:9s} {op:10s} peak {r['peak_mb']:6.0f} MB {r['seconds']:6.2f} s "
                              f"minflt {r['minflt']:8d}", flush=True)
                    shutil.rmtree(path, ignore_errors=True)
                if "ops" not in skip:
                    r = _run([os.path.abspath(__file__), "--ops-child", system, path, str(a.ops_rows), str(a.writes),
                              str(a.scans), str(a.takes)], systems[name])
                    shutil.rmtree(path, ignore_errors=True)
                    for fig in ("write", "full scan", f"take {TAKE_ROWS}"):
                        f = r[fig]
                        runs.append(dict(f, variant=name, round=rnd, part="ops", figure=fig,
                                         peak_mb=r["peak_mb"], load=load_avg()))
                        print(f"  {name:9s} {fig:10s} {f['seconds'] * 1e3:8.1f} ms minflt {f['minflt']:8.0f} "
                              f"(user {f['user_s']:.2f} s, sys {f['sys_s']:.2f} s)", flush=True)
            save(done=rnd + 1)
    save(done=a.rounds)
    show(summarize(runs, names))
    print(f"JSON: {out}")


def summarize(runs: List[dict], names: List[str]) -> List[dict]:
    keys = ("peak_mb", "seconds", "minflt", "user_s", "sys_s")
    figs = []
    for r in runs:
        if (r["part"], r["figure"]) not in figs:
            figs.append((r["part"], r["figure"]))
    rows = []
    for part, fig in figs:
        med = {}
        for name in names:
            rs = [r for r in runs if r["variant"] == name and r["part"] == part and r["figure"] == fig]
            if rs:
                med[name] = {k: statistics.median(r[k] for r in rs) for k in keys}
                med[name]["n"] = len(rs)
        ref = med.get("pylance")
        for name, m in med.items():
            row = dict(part=part, figure=fig, variant=name, **m)
            if ref:
                for k in ("peak_mb", "seconds", "minflt"):
                    row[f"{k}_vs_pylance"] = m[k] / ref[k] if ref[k] else None
            rows.append(row)
    return rows


def show(rows: List[dict]) -> None:
    print(f"\n{'part':6s} {'figure':10s} {'variant':9s} {'peak MB':>8s} {'x':>5s} {'wall s':>8s} {'x':>5s} "
          f"{'minflt':>8s} {'x':>6s} {'sys s':>6s}")
    for r in rows:
        def x(k):
            v = r.get(f"{k}_vs_pylance")
            return "-" if v is None else f"{v:.2f}"
        print(f"{r['part']:6s} {r['figure']:10s} {r['variant']:9s} {r['peak_mb']:8.0f} {x('peak_mb'):>5s} "
              f"{r['seconds']:8.3f} {x('seconds'):>5s} {r['minflt']:8.0f} {x('minflt'):>6s} {r['sys_s']:6.2f}")


if __name__ == "__main__":
    main()
