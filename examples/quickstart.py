"""The main job for now: write a Lance file with lancelet, read a file that
pylance wrote, and print what was found. (It becomes the Spark pipeline
once the table format and Spark integration land.)"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

import lancelet
import lancelet.file as lf


def make_table(n: int, seed: int = 42) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "category": pa.array(words[rng.integers(0, len(words), n)]),
            "score": pa.array(rng.normal(size=n)),
            "maybe": pa.array(np.where(rng.random(n) < 0.1, None, rng.integers(0, 1000, n)).tolist(), pa.int32()),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
        }
    )


def step(msg: str) -> float:
    print(f"[lancelet] {msg}", flush=True)
    return time.perf_counter()


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    table = make_table(n)
    with tempfile.TemporaryDirectory() as tmp:
        ours = os.path.join(tmp, "lancelet.lance")
        theirs = os.path.join(tmp, "pylance.lance")
        t0 = step(f"writing {n:,} rows with lancelet {lancelet.__version__}")
        if hasattr(lf, "write_table"):
            lf.write_table(table, ours)
            print(f"           {os.path.getsize(ours):,} bytes in {time.perf_counter() - t0:.2f}s")
        else:
            print("           (writer not available in this build)")
            ours = None
        try:
            import lance.file as pyl

            t0 = step("writing the same rows with pylance (the reference)")
            w = pyl.LanceFileWriter(theirs, table.schema)
            w.write_batch(table)
            w.close()
            print(f"           {os.path.getsize(theirs):,} bytes in {time.perf_counter() - t0:.2f}s")
        except ImportError:
            theirs = None
            print("[lancelet] pylance not installed; skipping the cross-check")
        for label, path in (("lancelet", ours), ("pylance", theirs)):
            if path is None:
                continue
            t0 = step(f"reading the {label}-written file with lancelet")
            r = lf.LanceFileReader(path)
            got = r.read()
            dt = time.perf_counter() - t0
            print(f"           version {r.version}, {r.num_rows:,} rows, {len(r.schema)} columns in {dt:.3f}s")
            print(f"           equal to the source table: {got.equals(table)}")
            sample = r.take([0, n // 2, n - 1], columns=["id", "category"])
            print(f"           take([0, n/2, n-1]) -> {sample.to_pylist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
