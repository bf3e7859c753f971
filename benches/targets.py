"""The targets of issue 16 against one benchmark run: reads the JSON files
the suites wrote (perf_suite, wide_suite, memory_suite, s3_suite) and prints
each target, the measured ratio (lancelet / pylance, same run) and whether
it is met; writes the same as ``targets-*.json`` next to them.

    python benches/targets.py FILE.json [FILE.json ...]
    python benches/targets.py --latest [--label NAME]   (newest file of each suite)
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import sys
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import git_commit, load_avg  # noqa: E402

SUITES = ("perf_suite", "wide_suite", "memory_suite", "s3_suite")


def latest(out_dir: str, label: str) -> List[str]:
    out = []
    for s in SUITES:
        files = sorted(glob.glob(os.path.join(out_dir, f"{s}-{label + '-' if label else ''}2*.json")))
        if files:
            out.append(files[-1])
    return out


def _ratio(res: List[dict], table: Optional[str], figure: str) -> Optional[float]:
    def pick(system):
        return next((r for r in res if r.get("system") == system and r.get("figure") == figure
                     and (table is None or r.get("table") == table)), None)
    l, p = pick("lancelet"), pick("pylance")
    return l["median"] / p["median"] if l and p else None


# Each manifest stores its commit time as a protobuf Timestamp whose
# nanoseconds are a varint of 1 to 5 bytes, depending on the clock when it
# was written (pylance's and lancelet's alike). The perf suite's tables
# are one version each, so two datasets with files of equal size can
# differ by up to 4 bytes by chance: that much is not counted against the
# bytes-on-disk target.
CLOCK_SLACK_BYTES = 4


def check(files: List[str]) -> dict:
    rows = []
    meta = {}

    def add(target: str, value: Optional[float], limit: float, detail: str = "", met: Optional[bool] = None):
        if met is None and value is not None:
            met = value <= limit + 1e-12
        rows.append({"target": target, "value": value, "limit": limit, "met": met, "detail": detail})

    for path in files:
        data = json.load(open(path))
        name = os.path.basename(path)
        meta[name] = {k: data.get("meta", {}).get(k) for k in ("commit", "load_avg_before", "load_avg_after", "date")}
        res = data.get("results", [])
        if name.startswith("perf_suite"):
            meta[name]["load_avg_before"] = data["meta"].get("load_avg")
            for t in ("A", "B"):
                for fig, lim in (("full scan", 1 / 3), ("take 1000", 1 / 3), ("write", 0.5)):
                    add(f"{t} {fig} (>= {round(1 / lim)}x faster)", _ratio(res, t, fig), lim)
                l = next((r for r in res if r["table"] == t and r["system"] == "lancelet" and "bytes" in r), None)
                p = next((r for r in res if r["table"] == t and r["system"] == "pylance" and "bytes" in r), None)
                if l and p:
                    extra = l["bytes"] - p["bytes"]
                    add(f"{t} bytes on disk", l["bytes"] / p["bytes"], 1.0, f"{extra:+d} bytes",
                        met=extra <= CLOCK_SLACK_BYTES)
                else:
                    add(f"{t} bytes on disk", None, 1.0)
        elif name.startswith("wide_suite"):
            s = data.get("summary", {})
            filt = {r["figure"]: r["vs_pylance"] for r in res if r.get("system") == "lancelet"
                    and r["figure"].startswith("filter ") and "vs_pylance" in r}
            main = {k: v for k, v in filt.items() if k != "filter kind,emb 0 rows"}
            if main:
                worst = max(main.items(), key=lambda kv: kv[1])
                add("wide: every filtered scan at least as fast", worst[1], 1.0, f"worst: {worst[0]}; "
                    f"{sum(v <= 1 for v in main.values())}/{len(main)} met")
                add("wide: filtered scans geometric mean (>= 2x faster)",
                    math.exp(sum(math.log(v) for v in main.values()) / len(main)), 0.5)
            if "filter kind,emb 0 rows" in filt:
                add("wide: columns=[kind, emb], nothing matches", filt["filter kind,emb 0 rows"], 1.0)
            if "count_geomean" in s:
                add("wide: count_rows(filter) geometric mean", s["count_geomean"], 1.0,
                    f"worst {s['count_worst'][0]} {s['count_worst'][1]:.2f}")
            for fig, lim in (("full scan", 1 / 3), ("take 1000", 1 / 3), ("write", 0.5)):
                add(f"wide {fig} (>= {round(1 / lim)}x faster)", s.get(fig), lim)
            add("wide bytes on disk", s.get("bytes_on_disk"), 1.0)
        elif name.startswith("memory_suite"):
            for k, v in data.get("summary", {}).items():
                add(f"{k} (streaming, fresh process)", v, 1.0)
        elif name.startswith("s3_suite"):
            summ = data.get("summary", {})
            take = next((v for k, v in summ.items() if k.startswith("take")), None)
            if take:
                l, p = take["requests"]
                add("S3 requests per take", l / p if p else None, 1.0, f"{l:.1f} vs {p:.1f} requests")
            full = summ.get("full scan")
            if full:
                l, p = full["requests"]
                add("S3 full scan requests", l / p if p else None, 1.0, f"{l} vs {p} requests")
            lv = next((r.get("requests_per_value") for r in res if r.get("system") == "lancelet"
                       and r["figure"].startswith("take")), None)
            if lv is not None:
                add("S3 requests per value on a take (format: <= 2)", lv, 2.0)
    return {"rows": rows, "files": meta}


def show(out: dict) -> None:
    print(f"\n{'target':58s} {'ratio':>8s} {'limit':>7s}  met")
    for r in out["rows"]:
        v = "-" if r["value"] is None else f"{r['value']:.3f}"
        met = {True: "yes", False: "NO", None: "?"}[r["met"]]
        print(f"{r['target']:58s} {v:>8s} {r['limit']:7.3f}  {met:4s} {r['detail']}")
    for f, m in out["files"].items():
        print(f"  {f}: commit {m.get('commit')}, load {m.get('load_avg_before')} -> {m.get('load_avg_after')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--latest", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    a = ap.parse_args()
    files = a.files or (latest(a.out_dir, a.label) if a.latest else [])
    if not files:
        ap.error("no result files given (or none found with --latest)")
    out = check(files)
    out["commit"] = git_commit()
    out["load_avg"] = load_avg()
    show(out)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(a.out_dir, f"targets-{a.label + '-' if a.label else ''}{stamp}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"JSON: {path}")


if __name__ == "__main__":
    main()
