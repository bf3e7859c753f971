"""Peak memory of streaming writes and scans (issue 16): the peak resident
set (``ru_maxrss``) of a fresh Python process that

- **write**: writes ``--rows`` rows of the wide table (``wide_table.py``,
  generated batch by batch) from a ``pyarrow.RecordBatchReader``, so the
  input is never held whole;
- **scan**: streams that dataset back with ``to_batches()``, dropping each
  batch, and counts the rows;
- **write100k**: the write again from a reader of 100,000-row batches (the
  shape of issue 30: a streaming write of the wide table whose peak was
  1.18x pylance's with these batches while 64k-row batches stayed below).

Each run is its own process (``--child``), so nothing is shared between
systems or runs; the process imports pyarrow, numpy and only the library
under test. The RSS after imports is reported too (``base``); the figure is
the peak. Ratios are lancelet / pylance of the same run.

    python benches/memory_suite.py [--rows 4000000] [--label NAME]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import git_commit, load_avg  # noqa: E402


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# write100k last: the scan reads what "write" wrote.
OPS = ("write", "scan", "write100k")


def child(system: str, op: str, path: str, rows: int) -> None:
    import pyarrow  # noqa: F401
    import wide_table
    mod = __import__("lancelet" if system == "lancelet" else "lance")
    base = _current_rss_mb()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    if op in ("write", "write100k"):
        batch_rows = 100_000 if op == "write100k" else 65536
        mod.write_dataset(wide_table.reader(rows, batch_rows=batch_rows), path)
        n = rows
    else:
        n = 0
        for b in mod.dataset(path).to_batches():
            n += b.num_rows
    dt = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    # minflt/user/sys: of the op alone (the wide table's generation included
    # for the writes), not of the imports.
    print(json.dumps({"peak_mb": _rss_mb(), "base_mb": base, "seconds": dt, "rows": n,
                      "minflt": ru.ru_minflt - ru0.ru_minflt, "majflt": ru.ru_majflt - ru0.ru_majflt,
                      "user_s": ru.ru_utime - ru0.ru_utime, "sys_s": ru.ru_stime - ru0.ru_stime}))


def measure(system: str, op: str, path: str, rows: int) -> dict:
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", system, op, path, str(rows)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{system} {op} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=1, help="runs per figure (the smallest peak is kept)")
    ap.add_argument("--systems", default="lancelet,pylance")
    ap.add_argument("--label", default="")
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--child", nargs=4, metavar=("SYSTEM", "OP", "PATH", "ROWS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        system, op, path, rows = a.child
        child(system, op, path, int(rows))
        return
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "rows": a.rows, "commit": git_commit(),
            "load_avg_before": load_avg()}
    print(f"streaming write + scan of {a.rows:,} rows; commit {meta['commit']}; load {meta['load_avg_before']}",
          flush=True)
    results = []
    with tempfile.TemporaryDirectory(dir=a.tmp) as d:
        for system in a.systems.split(","):
            path = os.path.join(d, system)
            for op in OPS:
                runs = []
                for _ in range(a.repeat):
                    if op.startswith("write"):
                        shutil.rmtree(path, ignore_errors=True)
                    runs.append(measure(system, op, path, a.rows))
                best = min(runs, key=lambda r: r["peak_mb"])
                best.update(system=system, figure=f"peak RSS {op}")
                results.append(best)
                print(f"  {system:9s} {op:6s} peak {best['peak_mb']:8.0f} MB (base {best['base_mb']:.0f} MB) "
                      f"in {best['seconds']:.1f} s, {best['rows']:,} rows", flush=True)
            shutil.rmtree(path, ignore_errors=True)
    meta["load_avg_after"] = load_avg()
    summary = {}
    for op in OPS:
        l = next((r for r in results if r["system"] == "lancelet" and r["figure"] == f"peak RSS {op}"), None)
        p = next((r for r in results if r["system"] == "pylance" and r["figure"] == f"peak RSS {op}"), None)
        if l and p:
            summary[f"peak RSS {op}"] = l["peak_mb"] / p["peak_mb"]
            print(f"peak RSS {op}: lancelet / pylance = {summary[f'peak RSS {op}']:.2f}")
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.join(a.out_dir, f"memory_suite-{a.label + '-' if a.label else ''}{stamp}.json")
    with open(out, "w") as f:
        json.dump({"meta": meta, "results": results, "summary": summary}, f, indent=1)
    print(f"JSON: {out}")


if __name__ == "__main__":
    main()
