"""Spark with lancelet vs Spark with Parquet, on the same data in one run.

Figures (median of --repeat runs, spread = min..max), each lancelet / Parquet
(< 1: lancelet faster):
  write        df.write.format("lancelet") vs df.write.parquet (zstd) of a cached DataFrame
  full scan    an aggregate touching every column
  projected    two columns (lancelet: option columns; Parquet: Spark's pruning)
  filtered     category = 'books' AND quantity >= 4 (lancelet: option filter)
  mapInArrow   lancelet.spark.fragments + read_fragments, same aggregate as full scan
  bytes        data files of the latest version vs the Parquet files
Writes JSON to bench-results/spark_compare.json.

Usage: python benches/spark_compare.py [--rows 1000000] [--repeat 3] [--master local[2]]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from pyspark.sql import SparkSession

import lancelet
import lancelet.spark

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from spark_pipeline import DIM, events

FULL = ["sum(event_id)", "sum(user_id)", "max(ts)", "count(distinct category)", "sum(length(url))",
        "sum(price)", "sum(quantity)", "sum(embedding[0])"]
FILTER = "category = 'books' AND quantity >= 4"


def timed(fn, repeat):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "result": str(result)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(args.master).appName("lancelet-bench")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.parquet.compression.codec", "zstd")
             .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", "")).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    lancelet.spark.register(spark)
    root = tempfile.mkdtemp(prefix="lancelet-spark-bench-")
    lance_uri, parquet_uri = os.path.join(root, "events.lance"), os.path.join(root, "events.parquet")
    src = events(spark, 0, args.rows, seed=1).cache()
    src.count()
    print(f"{args.rows:,} rows cached; Spark {spark.version}, master {args.master}", flush=True)

    res = {}

    def wl():
        src.write.format("lancelet").mode("overwrite").option("vector_columns", f"embedding:{DIM}").save(lance_uri)

    def wp():
        src.write.mode("overwrite").parquet(parquet_uri)

    res["write"] = (timed(wl, args.repeat), timed(wp, args.repeat))

    def lance_df(**opts):
        r = spark.read.format("lancelet")
        for k, v in opts.items():
            r = r.option(k, v)
        return r.load(lance_uri)

    res["full scan"] = (timed(lambda: lance_df().selectExpr(*FULL).collect(), args.repeat),
                        timed(lambda: spark.read.parquet(parquet_uri).selectExpr(*FULL).collect(), args.repeat))
    res["projected"] = (
        timed(lambda: lance_df(columns="user_id,price").selectExpr("sum(user_id)", "sum(price)").collect(), args.repeat),
        timed(lambda: spark.read.parquet(parquet_uri).selectExpr("sum(user_id)", "sum(price)").collect(), args.repeat))
    res["filtered"] = (
        timed(lambda: lance_df(filter=FILTER).selectExpr("count(*)", "sum(price)").collect(), args.repeat),
        timed(lambda: spark.read.parquet(parquet_uri).where(FILTER).selectExpr("count(*)", "sum(price)").collect(),
              args.repeat))

    def map_in_arrow():
        df = lancelet.spark.fragments(lance_uri, rows_per_task=250_000).mapInArrow(
            lancelet.spark.read_fragments(lance_uri), lancelet.spark.read_schema(lance_uri))
        return df.selectExpr(*FULL).collect()

    res["mapInArrow scan"] = (timed(map_in_arrow, args.repeat), res["full scan"][1])
    # the latest version only (earlier overwrites left their files behind)
    latest = lancelet.dataset(lance_uri)
    size = {"lancelet": sum(os.path.getsize(os.path.join(lance_uri, "data", df.path))
                            for f in latest.get_fragments() for df in f.data_files()),
            "parquet": sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(parquet_uri) for f in fs)}
    spark.stop()
    shutil.rmtree(root, ignore_errors=True)

    print(f"\n{'figure':18} {'lancelet s':>12} {'parquet s':>12} {'ratio':>7}   (lancelet spread)")
    out = {"rows": args.rows, "repeat": args.repeat, "master": args.master, "bytes": size, "figures": {}}
    for name, (lt, pt) in res.items():
        ratio = lt["median"] / pt["median"]
        out["figures"][name] = {"lancelet": lt, "parquet": pt, "ratio": ratio}
        print(f"{name:18} {lt['median']:12.2f} {pt['median']:12.2f} {ratio:7.2f}   ({lt['min']:.2f}..{lt['max']:.2f})")
    print(f"{'bytes on disk':18} {size['lancelet']:12,} {size['parquet']:12,} {size['lancelet'] / size['parquet']:7.2f}")
    os.makedirs("bench-results", exist_ok=True)
    with open(os.path.join("bench-results", "spark_compare.json"), "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
