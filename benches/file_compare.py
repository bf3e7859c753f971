"""Side-by-side benchmark: lancelet vs pylance on the same data, one run.

For each column kind (and for the whole table), write a Lance 2.2 file with
lancelet and with pylance, then read each file with both readers. Prints the
median time and size per cell and the ratios lancelet/pylance (< 1 means
lancelet is faster / smaller); also saves JSON.

    python benches/file_compare.py [--rows N] [--repeat R] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import lance.file as pyl
import numpy as np
import pyarrow as pa

import lancelet.file as lf


def make_columns(n: int, seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i:05d}" for i in range(5000)])
    text = [" ".join(words[rng.integers(0, len(words), rng.integers(1, 8))]) for _ in range(n)]
    urls = [f"https://example.com/{words[a]}/{words[b]}?id={c}" for a, b, c in rng.integers(0, 5000, (n, 3))]
    nullable = rng.integers(0, 10**9, n)
    mask = rng.random(n) < 0.1
    return {
        "int64_seq": pa.array(np.arange(n, dtype=np.int64)),
        "int32_small": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
        "float64": pa.array(rng.normal(size=n)),
        "int64_nullable": pa.array(nullable, mask=mask),
        "bool": pa.array(rng.random(n) < 0.3),
        "string_text": pa.array(text),
        "string_url": pa.array(urls),
        "string_lowcard": pa.array(words[rng.integers(0, 20, n)]),
        "vec_f32x128": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(min(n, 100_000) * 128, dtype=np.float32)), 128),
        "list_i32": pa.array([list(range(k)) for k in rng.integers(0, 6, n)], pa.list_(pa.int32())),
    }


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def write_lancelet(t: pa.Table, p: str) -> None:
    lf.write_table(t, p, version="2.2")


def write_pylance(t: pa.Table, p: str) -> None:
    w = pyl.LanceFileWriter(p, t.schema, version="2.2")
    w.write_batch(t)
    w.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="bench-results/file_compare.json")
    a = ap.parse_args()
    cols = make_columns(a.rows)
    tables = {k: pa.table({k: v}) for k, v in cols.items()}
    tables["ALL (same length cols)"] = pa.table({k: v for k, v in cols.items() if len(v) == a.rows})
    results = []
    with tempfile.TemporaryDirectory() as d:
        for name, t in tables.items():
            pl, pp = os.path.join(d, "l.lance"), os.path.join(d, "p.lance")
            wl = timed(lambda: write_lancelet(t, pl), a.repeat)
            wp = timed(lambda: write_pylance(t, pp), a.repeat)
            sl, sp = os.path.getsize(pl), os.path.getsize(pp)
            ok = lf.LanceFileReader(pl).read().equals(t) and pyl.LanceFileReader(pl).read_all().to_table().equals(t)
            rl = timed(lambda: lf.LanceFileReader(pp).read(), a.repeat)
            rp = timed(lambda: pyl.LanceFileReader(pp).read_all().to_table(), a.repeat)
            row = dict(column=name, rows=t.num_rows, arrow_bytes=t.nbytes, size_lancelet=sl, size_pylance=sp,
                       write_lancelet=wl, write_pylance=wp, read_lancelet=rl, read_pylance=rp, roundtrip_ok=ok)
            results.append(row)
            print(f"{name:24s} size {sl/sp:5.2f}x ({sl:>11,} vs {sp:>11,} B)  write {wl/wp:5.2f}x "
                  f"({wl*1e3:8.1f} vs {wp*1e3:8.1f} ms)  read {rl/rp:5.2f}x ({rl*1e3:8.1f} vs {rp*1e3:8.1f} ms)"
                  f"  {'ok' if ok else 'MISMATCH'}", flush=True)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"ratios are lancelet / pylance (lower is better); JSON in {a.out}")


if __name__ == "__main__":
    main()
