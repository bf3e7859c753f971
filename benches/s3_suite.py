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

    python benches/s3_suite.py [--rows 300000] [--label NAME]
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
import lance  # noqa: E402
import s3_server  # noqa: E402
import wide_table  # noqa: E402
from bench_common import git_commit, load_avg  # noqa: E402

import lancelet  # noqa: E402

TAKE_ROWS = 1000


class CountingProxy:
    """A forwarding HTTP/1.1 proxy in front of ``upstream`` (host, port)
    that counts requests by method and response body bytes."""

    def __init__(self, upstream: tuple):
        self.upstream = upstream
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--rows-per-file", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--takes", type=int, default=10)
    ap.add_argument("--systems", default="lancelet,pylance")
    ap.add_argument("--label", default="")
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
