"""I/O counts of the wide-table scans (issue 16), no timing: for each
library on the dataset it wrote, the bytes and storage requests of a full
scan, a take of 1,000 rows and every filtered scan of
``wide_table.filters``, each through one dataset handle per library (as
``wide_suite.py`` measures them: the handle has already run a full scan,
so pylance's metadata cache is warm and lancelet's opened files are kept).

Counts do not depend on the machine's load, so this is what to run while
developing on a busy machine; ``--per-column`` also splits each filtered
scan's bytes by output column (the scan with only the filter's columns,
then with one more column each).

lancelet's requests are ranges after merging touching ones (its
process-wide I/O counters); pylance's are the ``iops`` of its scan
statistics. A take's counts are lancelet's only (pylance reports none).

    python benches/wide_counts.py [--rows 150000] [--rows-per-file 50000] [--dir D]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lance  # noqa: E402
import wide_table  # noqa: E402

import lancelet  # noqa: E402


def lancelet_io(fn):
    s0 = lancelet._native._io_stats()
    out = fn()
    s1 = lancelet._native._io_stats()
    return out, s1["requests"] - s0["requests"], s1["bytes"] - s0["bytes"]


def pylance_io(ds, **kw):
    got = []
    t = ds.scanner(scan_stats_callback=got.append, **kw).to_table()
    s = got[-1]
    return t, s.iops, s.bytes_read


def scan(system, ds, **kw):
    if system == "lancelet":
        return lancelet_io(lambda: ds.to_table(**kw))
    return pylance_io(ds, **kw)


def filter_columns(sql: str):
    return [c for c in wide_table.SCHEMA.names if re.search(rf"\b{c}\b", sql)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=150_000)
    ap.add_argument("--rows-per-file", type=int, default=50_000)
    ap.add_argument("--dir", default=None, help="keep the datasets here (reused when present)")
    ap.add_argument("--per-column", action="store_true")
    ap.add_argument("--only", default="", help="regex: only filters whose family/selectivity/SQL matches")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="wide_counts")
    paths = {"lancelet": os.path.join(d, "lancelet"), "pylance": os.path.join(d, "pylance")}
    table = None
    for name, mod in (("lancelet", lancelet), ("pylance", lance)):
        if not os.path.exists(paths[name]):
            if table is None:
                table = wide_table.table(a.rows)
            mod.write_dataset(table, paths[name], max_rows_per_file=a.rows_per_file)
    handles = {"lancelet": lancelet.dataset(paths["lancelet"]), "pylance": lance.dataset(paths["pylance"])}
    out = {}
    for name, ds in handles.items():
        _, req, nb = scan(name, ds)
        out[("full scan", name)] = (req, nb, ds.count_rows())
    rng = np.random.default_rng(7)
    draw = np.sort(rng.choice(a.rows, 1000, replace=False)).astype(np.int64)
    _, req, nb = lancelet_io(lambda: handles["lancelet"].take(draw))
    out[("take 1000", "lancelet")] = (req, nb, 1000)
    only = re.compile(a.only) if a.only else None
    for fam, sel, flt in wide_table.filters(a.rows):
        label = f"{fam} {sel}"
        if only and not (only.search(label) or only.search(flt)):
            continue
        for name, ds in handles.items():
            t, req, nb = scan(name, ds, filter=flt)
            out[(label, name)] = (req, nb, t.num_rows)
            if a.per_column:
                fc = filter_columns(flt)
                _, r0, b0 = scan(name, ds, filter=flt, columns=fc)
                parts = {"(filter)": (r0, b0)}
                for c in wide_table.SCHEMA.names:
                    if c not in fc:
                        _, r1, b1 = scan(name, ds, filter=flt, columns=fc + [c])
                        parts[c] = (r1 - r0, b1 - b0)
                out[(label + " per column", name)] = parts
    print(f"{'figure':28s} {'rows':>7s} {'MB lancelet/pylance':>21s} {'requests l/p':>14s}")
    labels = []
    for (label, _) in out:
        if label not in labels:
            labels.append(label)
    for label in labels:
        l, p = out.get((label, "lancelet")), out.get((label, "pylance"))
        if label.endswith("per column"):
            for c in l:
                pl = p.get(c, (0, 0)) if p else (0, 0)
                print(f"   {c:25s} {'':>7s} {l[c][1] / 1e6:10.2f}/{pl[1] / 1e6:<10.2f} {l[c][0]:>6}/{pl[0]:<7}")
            continue
        pr = f"{p[1] / 1e6:<10.2f}" if p else "-"
        print(f"{label:28s} {l[2]:>7} {l[1] / 1e6:10.2f}/{pr} {l[0]:>6}/{p[0] if p else '-':<7}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({f"{k[0]}|{k[1]}": v for k, v in out.items()}, f, indent=1)


if __name__ == "__main__":
    main()
