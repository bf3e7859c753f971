"""Reproduce the TileDB 2.30.0 race that the test-suite works around.

    python scripts/tiledb_oracle_race.py [--reads N] [--workers W] [--merge on|off]

Builds small sparse arrays with tiledb-py alone (four one-dimensional
fragments, some merged by ``tiledb.consolidate(fragment_uris=...)``, with and
without duplicates: the shapes of tests/test_tiledb_consolidate_sets.py), then
reads them in W child processes, N reads each, through tiledb-py's Arrow path
at random open timestamps. With TileDB's "preprocess tile merge" on (its
default) a child dies with SIGSEGV now and then (seen once in about 150,000
reads on the 2-core CI machine, so give it time: --workers 2 --reads 200000);
the crash is in ``tiledb::algorithm::MergeUnit``'s destructor on a
thread-pool worker. tests/conftest.py turns the step off
(``TILEDB_SM_QUERY_SPARSE_GLOBAL_ORDER_PREPROCESS_TILE_MERGE=0``); run this
with ``--merge on`` after upgrading tiledb to see whether the workaround is
still needed. Exit status 1 when a child crashed.
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile

ENV_KEY = "TILEDB_SM_QUERY_SPARSE_GLOBAL_ORDER_PREPROCESS_TILE_MERGE"
OPENS = [None, 1, 2, 3, (2, 3), (3, 4), (2, 4), 4]
PICKS = [(0, 1), (1, 3), (0, 1, 2, 3), (0, 3), (0, 2)]


def build(root: str) -> list[str]:
    import numpy as np
    import tiledb

    uris = []
    for dups in (False, True):
        for k, pick in enumerate(PICKS):
            uri = os.path.join(root, f"a{int(dups)}{k}")
            dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 99), tile=10, dtype=np.int64))
            tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, allows_duplicates=dups,
                                                        attrs=[tiledb.Attr(name="a", dtype=np.int64)]))
            for t in (1, 2, 3, 4):
                with tiledb.open(uri, "w", timestamp=t) as A:
                    A[np.array([1, 2, t + 3] if t != 3 else [40, 41, 42])] = {"a": np.array([t, t, t]) * 100}
            names = sorted(f.uri.rsplit("/", 1)[-1] for f in tiledb.FragmentInfoList(uri))
            tiledb.consolidate(uri, fragment_uris=[names[i] for i in pick])
            uris.append(uri)
    return uris


def read_loop(uris: list[str], reads: int, seed: int) -> None:
    import tiledb

    rng = random.Random(seed)
    for _ in range(reads):
        with tiledb.open(rng.choice(uris), timestamp=rng.choice(OPENS)) as A:
            A.query(return_arrow=True, coords=True, attrs=["a"]).df[:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reads", type=int, default=20000, help="reads per child")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--merge", choices=["on", "off"], default="on")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        read_loop(sorted(os.path.join(args.child[0], d) for d in os.listdir(args.child[0])), args.reads, int(args.child[1]))
        return 0
    env = dict(os.environ)
    env.pop(ENV_KEY, None)
    if args.merge == "off":
        env[ENV_KEY] = "0"
    with tempfile.TemporaryDirectory() as root:
        build(root)
        children = [subprocess.Popen([sys.executable, __file__, "--reads", str(args.reads), "--child", root, str(seed)], env=env)
                    for seed in range(args.workers)]
        codes = [c.wait() for c in children]
    crashed = [c for c in codes if c != 0]
    print(f"merge {args.merge}: {args.workers} children x {args.reads} reads, exit codes {codes}")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
