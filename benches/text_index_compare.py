"""Text and skip-index benchmark (issue 32): lancelet vs pylance 14, one run.

* **Corpus**: ``--rows`` documents (default 1M) of 5-40 words drawn from a
  50,000-word vocabulary with Zipf frequencies (exponent 1.07, as English
  roughly has), written once by pylance; each system indexes its own copy.
* **INVERTED build**: ``create_scalar_index("text", "INVERTED")`` with
  defaults, each in a fresh process (wall time and the process's peak RSS),
  systems alternating over ``--build-rounds`` rounds; index size on disk.
* **FTS queries** (warm: every case runs once untimed first; rounds
  alternate which system goes first): a single mid-frequency term, 3-term
  OR, 3-term AND (``MatchQuery(operator="AND")``) and a 3-word phrase
  (``PhraseQuery``, on a second index built ``with_position=True``), each
  with limit 10 and 100. Each system searches the index it built; the top
  rows are compared (row ids, and ``_score`` within 1e-4 relative).
* **Zone-map pruning**: a ``--zone-rows`` table (default 10M: a key that
  grows with the row number, plus a payload) with a ZONEMAP index on the
  key, and a range filter selecting 1 % of the rows.

Ratios are lancelet / pylance of medians in the same run.

    python benches/text_index_compare.py [--rows N] [--zone-rows N] [--repeat R] [--label NAME]
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
from typing import Any, Callable, Dict, List

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import git_commit, load_avg  # noqa: E402

VOCAB = 50_000


def words(rng: np.random.Generator, n: int) -> np.ndarray:
    cons, vows = np.array(list("bcdfghjklmnprstvwz")), np.array(list("aeiou"))
    out: set = set()
    while len(out) < n:
        k = int(rng.integers(2, 5))
        out.add("".join(c + v for c, v in zip(cons[rng.integers(0, 18, k)], vows[rng.integers(0, 5, k)])))
    return np.array(sorted(out), dtype=object)


def corpus(n: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    vocab = words(rng, VOCAB)
    rng.shuffle(vocab)  # frequency rank unrelated to spelling
    p = 1.0 / np.arange(1, VOCAB + 1) ** 1.07
    lens = rng.integers(5, 41, n)
    toks = vocab[rng.choice(VOCAB, size=int(lens.sum()), p=p / p.sum())]
    ends = np.cumsum(lens)
    docs = [" ".join(toks[e - ln:e]) for e, ln in zip(ends, lens)]
    return pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "text": pa.array(docs, pa.string())})


def _lib(system: str):
    if system == "lancelet":
        import lancelet
        return lancelet
    import lance
    return lance


def _hwm_mb() -> float:
    """This process's peak RSS (``VmHWM``: unlike ``ru_maxrss``, not
    inherited from the parent that forked it, whose corpus is large)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_build(system: str, path: str, with_position: str) -> None:
    """Build one index in this (fresh) process; print seconds and peak RSS."""
    lib = _lib(system)
    base = _hwm_mb()
    ds = lib.dataset(path)
    t0 = time.perf_counter()
    ds.create_scalar_index("text", "INVERTED", with_position=with_position == "1")
    secs = time.perf_counter() - t0
    print(json.dumps({"seconds": secs, "peak_mb": _hwm_mb(),
                      "base_mb": base}))


def build(system: str, path: str, with_position: bool) -> Dict[str, float]:
    r = subprocess.run([sys.executable, __file__, "--child", system, path, "1" if with_position else "0"],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def index_bytes(path: str) -> int:
    root = os.path.join(path, "_indices")
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)


def timed(fn: Callable[[], Any], repeat: int) -> List[float]:
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--zone-rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per query case and system")
    ap.add_argument("--build-rounds", type=int, default=2)
    ap.add_argument("--label", default="")
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--child", nargs=3, metavar=("SYSTEM", "PATH", "WITH_POSITION"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child_build(*a.child)
        return
    import lance
    from lance.query import FullTextOperator, MatchQuery, PhraseQuery

    import lancelet
    from lancelet.query import FullTextOperator as LOp
    from lancelet.query import MatchQuery as LMatch
    from lancelet.query import PhraseQuery as LPhrase

    systems = ["lancelet", "pylance"]
    meta: Dict[str, Any] = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "rows": a.rows,
                            "zone_rows": a.zone_rows, "commit": git_commit(), "load_avg_before": load_avg(),
                            "pylance": lance.__version__}
    results: List[Dict[str, Any]] = []
    print(f"text index compare: {a.rows:,} documents; load {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(dir=a.tmp) as d:
        t0 = time.perf_counter()
        table = corpus(a.rows)
        base = os.path.join(d, "base")
        lance.write_dataset(table, base, max_rows_per_file=250_000)
        print(f"corpus written in {time.perf_counter() - t0:.1f} s", flush=True)
        # -- builds, each in a fresh process, systems alternating
        builds: Dict[str, List[Dict[str, float]]] = {s: [] for s in systems}
        for rnd in range(a.build_rounds):
            for s in (systems if rnd % 2 == 0 else systems[::-1]):
                p = os.path.join(d, f"build-{s}")
                shutil.rmtree(p, ignore_errors=True)
                shutil.copytree(base, p)
                builds[s].append(build(s, p, False))
        for s in systems:
            secs = statistics.median(b["seconds"] for b in builds[s])
            peak = min(b["peak_mb"] for b in builds[s])
            size = index_bytes(os.path.join(d, f"build-{s}"))
            results.append({"case": "INVERTED build", "system": s, "median_s": secs, "peak_mb": peak, "index_bytes": size})
        # -- the searched copies: each system's own index, plus positions for phrases
        own, pos = {}, {}
        for s in systems:
            own[s] = os.path.join(d, f"build-{s}")
            pos[s] = os.path.join(d, f"pos-{s}")
            shutil.copytree(base, pos[s])
            build(s, pos[s], True)
        vocab_by_freq = [w for w, _ in sorted(_counts(table).items(), key=lambda kv: -kv[1])]
        mid = vocab_by_freq[200]
        three = vocab_by_freq[50], vocab_by_freq[300], vocab_by_freq[1000]
        phrase = _a_phrase(table)
        cases = {
            "term": ({"lancelet": mid, "pylance": mid}, own),
            "3-term OR": ({"lancelet": " ".join(three), "pylance": " ".join(three)}, own),
            "3-term AND": ({"lancelet": LMatch(" ".join(three), "text", operator=LOp.AND),
                            "pylance": MatchQuery(" ".join(three), "text", operator=FullTextOperator.AND)}, own),
            "phrase": ({"lancelet": LPhrase(phrase, "text"), "pylance": PhraseQuery(phrase, "text")}, pos),
        }
        handles = {("own", s): (lancelet if s == "lancelet" else lance).dataset(own[s]) for s in systems}
        handles.update({("pos", s): (lancelet if s == "lancelet" else lance).dataset(pos[s]) for s in systems})
        for name, (queries, paths) in cases.items():
            kind = "pos" if paths is pos else "own"
            for limit in (10, 100):
                runs: Dict[str, List[float]] = {s: [] for s in systems}
                got = {}
                for s in systems:
                    h = handles[(kind, s)]
                    got[s] = h.to_table(columns=["id"], full_text_query=queries[s], limit=limit)
                for rnd in range(a.repeat):
                    for s in (systems if rnd % 2 == 0 else systems[::-1]):
                        h = handles[(kind, s)]
                        runs[s] += timed(lambda h=h, s=s: h.to_table(columns=["id"], full_text_query=queries[s],
                                                                       limit=limit), 1)
                same = got["lancelet"].column("id").to_pylist() == got["pylance"].column("id").to_pylist()
                for s in systems:
                    results.append({"case": f"FTS {name} limit {limit}", "system": s,
                                    "median_s": statistics.median(runs[s]), "rows": got[s].num_rows,
                                    "same_ids_as_pylance": same})
        # -- zone maps
        n = a.zone_rows
        rng = np.random.default_rng(3)
        key = np.arange(n, dtype=np.int64) * 4 + rng.integers(0, 8, n)
        zt = pa.table({"key": key, "payload": rng.normal(size=n)})
        zp = {s: os.path.join(d, f"zone-{s}") for s in systems}
        lance.write_dataset(zt, zp["pylance"], max_rows_per_file=1_000_000)
        shutil.copytree(zp["pylance"], zp["lancelet"])
        del zt
        lancelet.dataset(zp["lancelet"]).create_scalar_index("key", "ZONEMAP")
        lance.dataset(zp["pylance"]).create_scalar_index("key", "ZONEMAP")
        lo = int(key[n // 2])
        hi = int(key[n // 2 + n // 100])
        flt = f"key >= {lo} AND key < {hi}"
        zh = {s: (lancelet if s == "lancelet" else lance).dataset(zp[s]) for s in systems}
        runs = {s: [] for s in systems}
        for rnd in range(a.repeat):
            for s in (systems if rnd % 2 == 0 else systems[::-1]):
                runs[s] += timed(lambda s=s: zh[s].to_table(filter=flt), 1)
        for s in systems:
            results.append({"case": "ZONEMAP range 1%", "system": s, "median_s": statistics.median(runs[s]),
                            "rows": zh[s].count_rows(filter=flt)})
    meta["load_avg_after"] = load_avg()
    pyl = {r["case"]: r for r in results if r["system"] == "pylance"}
    print(f"{'case':28s} {'lancelet':>12s} {'pylance':>12s} {'ratio':>7s}  notes")
    for r in results:
        if r["system"] != "lancelet":
            continue
        p = pyl[r["case"]]
        r["vs_pylance"] = r["median_s"] / p["median_s"]
        notes = ""
        if "peak_mb" in r:
            notes = f"peak {r['peak_mb']:.0f} vs {p['peak_mb']:.0f} MB; index {r['index_bytes']:,} vs {p['index_bytes']:,} B"
        elif "same_ids_as_pylance" in r:
            notes = f"{r['rows']} rows; same ids as pylance: {r['same_ids_as_pylance']}"
        else:
            notes = f"{r['rows']} rows (pylance {p['rows']})"
        print(f"{r['case']:28s} {r['median_s'] * 1e3:10.1f}ms {p['median_s'] * 1e3:10.1f}ms {r['vs_pylance']:7.3f}  {notes}")
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.join(a.out_dir, f"text_index_compare-{a.label or 'run'}-{stamp}.json")
    with open(out, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    print(f"JSON: {out}")


def _counts(table: pa.Table) -> Dict[str, int]:
    import collections
    c: collections.Counter = collections.Counter()
    for doc in table.column("text").to_pylist()[:50_000]:
        c.update(doc.split())
    return c


def _a_phrase(table: pa.Table) -> str:
    """Three consecutive words of a document (so the phrase occurs)."""
    return " ".join(table.column("text")[12345 % table.num_rows].as_py().split()[1:4])


if __name__ == "__main__":
    main()
