"""Object-storage figures (issue 16): lancelet against pylance 14 on a local
S3 server (SeaweedFS ``weed mini``, as the tests start it), on the wide
table of ``wide_table.py``.

Both libraries talk to the server through a small counting proxy on
loopback (``CountingProxy``), which forwards every HTTP request unchanged
(the ``Host`` header included, so request signatures stay valid) and
counts requests (by method) and response body bytes. So both are counted
the same way, whatever each library calls a "request" internally. Figures
per system, each on the dataset it wrote:

- requests and bytes of opening the dataset, a full scan, a take of 1,000
  random rows (per take, and per value read) and each filtered scan of
  ``wide_table.filters`` (all columns);
- wall times of the same operations, measured straight against the server
  (the proxy is Python and would blur them).

The format promises a take at most 2 requests per value; the targets are
requests per take <= pylance's and a full scan with no more requests than
pylance's.

Throughput (issue 33, ``--sections throughput``): on SeaweedFS (S3) and on
fake-gcs-server (GCS, see tests/gcs_server.py), each system reads a dataset
it wrote (pylance writes GCS through its OpenDAL client, the only one the
emulator accepts writes from, and reads through its default client) with
``--concurrency`` threads at once: full scans, and takes of 1,000 random
rows. Rounds alternate which system goes first; reported are the median
wall time of a round, rows (or takes) per second, the lancelet/pylance
ratio, and requests per scan / per take counted through the proxy. The
targets: requests per scan and per take <= pylance's, full-scan time <=
0.5 of pylance's.

    python benches/s3_suite.py [--rows 300000] [--label NAME] [--sections figures,throughput]
"""

from __future__ import annotations

import argparse
import datetime
import gc
import http.client
import http.server
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import gcs_server  # noqa: E402
import lance  # noqa: E402
import s3_server  # noqa: E402
import wide_table  # noqa: E402
from bench_common import git_commit, load_avg  # noqa: E402

import lancelet  # noqa: E402

TAKE_ROWS = 1000


class CountingProxy:
    """A forwarding HTTP/1.1 proxy in front of ``upstream`` (host, port)
    that counts requests by method and response body bytes."""

    def __init__(self, upstream: tuple, rewrite_host: bool = False):
        self.upstream = upstream
        # S3 signs the Host header, so it is forwarded as it is; the GCS
        # emulator routes by it (its -public-host), so it is rewritten.
        self.rewrite_host = rewrite_host
        self.lock = threading.Lock()
        self.requests: Counter = Counter()
        self.bytes = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                conn = getattr(self.server.local, "conn", None)
                if conn is None:
                    conn = http.client.HTTPConnection(*proxy.upstream, timeout=300)
                    self.server.local.conn = conn
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = self._read_chunked()
                headers = {k: v for k, v in self.headers.items() if k.lower() != "transfer-encoding"}
                if proxy.rewrite_host:
                    headers = {k: v for k, v in headers.items() if k.lower() != "host"}
                    headers["Host"] = f"{proxy.upstream[0]}:{proxy.upstream[1]}"
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                except (http.client.HTTPException, OSError):
                    conn.close()
                    conn = http.client.HTTPConnection(*proxy.upstream, timeout=300)
                    self.server.local.conn = conn
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                data = resp.read()
                with proxy.lock:
                    proxy.requests[self.command] += 1
                    proxy.bytes += len(data)
                self.send_response_only(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                elif resp.getheader("Content-Length"):
                    self.send_header("Content-Length", resp.getheader("Content-Length"))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _read_chunked(self) -> bytes:
                out = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.local = threading.local()
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def snapshot(self) -> Dict[str, int]:
        with self.lock:
            return {"requests": sum(self.requests.values()), "gets": self.requests["GET"],
                    "heads": self.requests["HEAD"], "bytes": self.bytes}

    def counted(self, fn):
        """(result, {requests, gets, heads, bytes}) of fn()."""
        before = self.snapshot()
        out = fn()
        after = self.snapshot()
        return out, {k: after[k] - before[k] for k in after}

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def med(ts: List[float]) -> dict:
    return {"median": statistics.median(ts), "min": min(ts), "max": max(ts), "n": len(ts)}


def timed(fn, repeat: int) -> List[float]:
    out = []
    for i in range(repeat + 1):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        if i:
            out.append(time.perf_counter() - t0)
    return out


def concurrently(fns) -> float:
    """Run the callables on threads at once; wall seconds until all end."""
    errors = []

    def run(fn):
        try:
            fn()
        except BaseException as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(fn,)) for fn in fns]
    gc.collect()
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - t0


def throughput(a, table, draws, record) -> None:
    """Full-scan and take throughput with concurrency on S3 and GCS."""
    rows = table.num_rows
    mods = {"lancelet": lancelet, "pylance": lance}
    systems = a.systems.split(",")
    with tempfile.TemporaryDirectory() as d:
        s3 = s3_server.start(Path(d) / "s3")
        gcs = gcs_server.start(Path(d) / "gcs")
        proxies = []
        try:
            gcs.create_bucket("bench")
            p3 = CountingProxy(("127.0.0.1", int(s3.endpoint.rsplit(":", 1)[1])))
            pg = CountingProxy(("127.0.0.1", int(gcs.endpoint.rsplit(":", 1)[1])), rewrite_host=True)
            proxies = [p3, pg]
            stores = {}
            for name in systems:
                uri = f"s3://{s3_server.BUCKET}/tp-{name}"
                mods[name].write_dataset(table, uri, max_rows_per_file=a.rows_per_file, storage_options=s3.storage_options)
                stores.setdefault("s3", {})[name] = (uri, s3.storage_options, dict(s3.storage_options, aws_endpoint=p3.endpoint))
                if name == "lancelet":
                    uri = "gs://bench/tp-lancelet"
                    lancelet.write_dataset(table, uri, max_rows_per_file=a.rows_per_file, storage_options=gcs.storage_options)
                else:
                    lance.write_dataset(table, "gs://bench", max_rows_per_file=a.rows_per_file,
                                        storage_options=gcs.opendal_options(root="/tp-pylance"))
                    uri = "gs://bench/tp-pylance"
                stores.setdefault("gcs", {})[name] = (uri, gcs.storage_options,
                                                      dict(gcs.storage_options, google_base_url=pg.endpoint))
            for store, proxy in (("s3", p3), ("gcs", pg)):
                times = {n: {"scan": [], "take": []} for n in systems}
                counts = {}
                for name in systems:
                    uri, direct, counted = stores[store][name]
                    mod = mods[name]
                    t, c = proxy.counted(lambda: mod.dataset(uri, storage_options=counted).to_table())
                    assert t.num_rows == rows
                    h = mod.dataset(uri, storage_options=counted)
                    h.take(draws[0])
                    _, ct = proxy.counted(lambda: [h.take(ix) for ix in draws])
                    counts[name] = (c, {k: v / len(draws) for k, v in ct.items()})
                handles = {n: mods[n].dataset(stores[store][n][0], storage_options=stores[store][n][1]) for n in systems}
                for h in handles.values():
                    h.take(draws[0])
                for rnd in range(a.rounds):
                    order = systems if rnd % 2 == 0 else systems[::-1]
                    for name in order:
                        uri, direct, _ = stores[store][name]
                        mod = mods[name]
                        times[name]["scan"].append(concurrently(
                            [lambda: mod.dataset(uri, storage_options=direct).to_table()] * a.concurrency))
                        h = handles[name]
                        per = max(1, len(draws) // a.concurrency)
                        times[name]["take"].append(concurrently(
                            [lambda k=k: [h.take(ix) for ix in draws[k * per:(k + 1) * per]] for k in range(a.concurrency)]))
                for name in systems:
                    c, ct = counts[name]
                    ts, tt = times[name]["scan"], times[name]["take"]
                    record(name, f"{store} full scan x{a.concurrency}", ts, requests_per_scan=c["requests"],
                           mb_per_scan=round(c["bytes"] / 1e6, 2),
                           rows_per_s=round(rows * a.concurrency / statistics.median(ts)))
                    ntakes = max(1, len(draws) // a.concurrency) * a.concurrency
                    record(name, f"{store} take {TAKE_ROWS} x{a.concurrency}", tt, requests_per_take=round(ct["requests"], 2),
                           takes_per_s=round(ntakes / statistics.median(tt), 1))
        finally:
            for p in proxies:
                p.stop()
            gcs.stop()
            s3.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--rows-per-file", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--takes", type=int, default=10)
    ap.add_argument("--systems", default="lancelet,pylance")
    ap.add_argument("--label", default="")
    ap.add_argument("--sections", default="figures,throughput")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    a = ap.parse_args()
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "rows": a.rows,
            "rows_per_file": a.rows_per_file, "commit": git_commit(), "load_avg_before": load_avg()}
    print(f"S3 (SeaweedFS) figures, {a.rows:,} rows; commit {meta['commit']}; load {meta['load_avg_before']}",
          flush=True)
    table = wide_table.table(a.rows)
    filters = wide_table.filters(a.rows)
    rng = np.random.default_rng(7)
    draws = [np.sort(rng.choice(a.rows, TAKE_ROWS, replace=False)).astype(np.int64) for _ in range(a.takes)]
    results = []

    def record(system, figure, ts=None, **extra):
        row = dict(system=system, figure=figure, **(med(ts) if ts else {}), **extra)
        results.append(row)
        t = f"{row['median'] * 1e3:9.1f} ms" if ts else " " * 12
        more = "".join(f" {k}={v}" for k, v in extra.items())
        print(f"  {system:9s} {figure:34s} {t}{more}", flush=True)

    sections = a.sections.split(",")
    if "throughput" in sections:
        throughput(a, table, draws, record)
    if "figures" in sections:
        with tempfile.TemporaryDirectory() as d:
            server = s3_server.start(Path(d) / "s3")
            proxy = CountingProxy(("127.0.0.1", int(server.endpoint.rsplit(":", 1)[1])))
            try:
                direct = server.storage_options
                counted = dict(direct, aws_endpoint=proxy.endpoint)
                for name in a.systems.split(","):
                    mod = lancelet if name == "lancelet" else lance
                    uri = f"s3://{s3_server.BUCKET}/wide-{name}"
                    mod.write_dataset(table, uri, max_rows_per_file=a.rows_per_file, storage_options=direct)
                    ds, c = proxy.counted(lambda: mod.dataset(uri, storage_options=counted))
                    record(name, "open", **c)
                    t, c = proxy.counted(lambda: ds.to_table())
                    assert t.num_rows == a.rows
                    record(name, "full scan", timed(lambda: mod.dataset(uri, storage_options=direct).to_table(), a.repeat),
                           **c)
                    h = mod.dataset(uri, storage_options=counted)
                    h.take(draws[0])  # metadata of every file cached, as a server's handle would have it
                    _, c = proxy.counted(lambda: [h.take(ix) for ix in draws])
                    per_take = {k: v / len(draws) for k, v in c.items()}
                    hd = mod.dataset(uri, storage_options=direct)
                    hd.take(draws[0])
                    it = iter(draws * 2)
                    record(name, f"take {TAKE_ROWS}", timed(lambda: hd.take(next(it)), a.takes),
                           requests_per_value=round(per_take["requests"] / (TAKE_ROWS * len(table.column_names)), 6),
                           **per_take)
                    for fam, sel, flt in filters:
                        t, c = proxy.counted(lambda: mod.dataset(uri, storage_options=counted).to_table(filter=flt))
                        record(name, f"filter {fam} {sel}",
                               timed(lambda: mod.dataset(uri, storage_options=direct).to_table(filter=flt), a.repeat),
                               rows=t.num_rows, **c)
            finally:
                proxy.stop()
                server.stop()
    meta["load_avg_after"] = load_avg()
    base = {r["figure"]: r for r in results if r["system"] == "pylance"}
    summary = {}
    for r in results:
        p = base.get(r["figure"])
        if r["system"] != "lancelet" or p is None:
            continue
        if "median" in r:
            r["vs_pylance"] = r["median"] / p["median"]
        if "requests" not in r:  # a throughput figure: requests per scan / take
            key = "requests_per_scan" if "requests_per_scan" in r else "requests_per_take"
            summary[r["figure"]] = {"time": r["vs_pylance"], "requests": (r[key], p[key]),
                                    "bytes": (r.get("mb_per_scan", 0) * 1e6, p.get("mb_per_scan", 0) * 1e6)}
            continue
        r["requests_vs_pylance"] = r["requests"] / p["requests"] if p["requests"] else None
        summary[r["figure"]] = {"time": r.get("vs_pylance"), "requests": (r["requests"], p["requests"]),
                                "bytes": (r["bytes"], p["bytes"])}
    print(f"\n{'figure':36s} {'time l/p':>9s} {'requests l / p':>18s} {'MB l / p':>18s}")
    for k, v in summary.items():
        tr = f"{v['time']:.2f}" if v["time"] else "-"
        print(f"{k:36s} {tr:>9s} {v['requests'][0]:>8.1f} / {v['requests'][1]:<8.1f} "
              f"{v['bytes'][0] / 1e6:>8.2f} / {v['bytes'][1] / 1e6:<8.2f}")
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.join(a.out_dir, f"s3_suite-{a.label + '-' if a.label else ''}{stamp}.json")
    with open(out, "w") as f:
        json.dump({"meta": meta, "results": results, "summary": summary}, f, indent=1)
    print(f"JSON: {out}")


if __name__ == "__main__":
    main()
