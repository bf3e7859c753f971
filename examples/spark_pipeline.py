"""The main job: a Spark pipeline that keeps its table in Lance through lancelet.

On embedded defaults (local Spark, a directory under ./demo-output) it

1. generates a deterministic click-stream table in Spark (ids, users,
   timestamps, categories, URLs, prices, quantities, a 16-float embedding),
2. writes it as a Lance dataset through ``format("lancelet")``        → v1,
3. appends a second day of events                                     → v2,
4. deletes rows by predicate with lancelet                            → v3,
5. reads it back with a filter through Spark (pushed down into lancelet's
   scan) and through lancelet directly (the counts must agree), and
   through mapInArrow,
6. upserts an hour of changed and new events from a DataFrame
   (``lancelet.spark.merge_insert``: a Spark join, one commit)          → v4,
7. deletes events by key from a DataFrame (``lancelet.spark.delete``)   → v5,
8. ingests a short stream (``writeStream.format("lancelet")``: one
   commit per micro-batch, exactly once)                                → v6...,
   each checked against lancelet reading the dataset directly,
9. time-travels to version 1 (Spark and lancelet),
10. prints a summary with timings.

Usage: python examples/spark_pipeline.py [--rows N] [--out DIR] [--master URL]
"""

import argparse
import os
import shutil
import sys
import time

import pyarrow.compute as pc
from pyspark.sql import SparkSession

import lancelet
import lancelet.spark

CATEGORIES = ["books", "music", "garden", "toys", "grocery", "returns", "electronics", "sports"]
DIM = 16


class Steps:
    """Prints each step as it starts and ends; keeps the timings."""

    def __init__(self):
        self.rows = []

    def run(self, name, fn):
        print(f"==> {name} ...", flush=True)
        t0 = time.perf_counter()
        result = fn()
        dt = time.perf_counter() - t0
        self.rows.append((name, dt, result))
        print(f"    done in {dt:.2f} s: {result}", flush=True)
        return result


def events(spark, start, n, seed):
    """n deterministic events with ids from start (generated inside Spark)."""
    return event_columns(spark.range(start, start + n, numPartitions=max(2, n // 500_000)), seed)


def event_columns(ids, seed):
    """The event columns computed from a DataFrame of ``id``s."""
    cats = ", ".join(f"'{c}'" for c in CATEGORIES)
    vec = ", ".join(f"cast(rand({seed * 100 + i}) as float)" for i in range(DIM))
    return ids.selectExpr(
        "id as event_id",
        f"cast(abs(hash(id, {seed})) % 100000 as long) as user_id",
        f"timestamp_seconds(1767225600 + {seed} * 86400 + id % 86400) as ts",
        f"element_at(array({cats}), cast(abs(hash(id, 7)) % {len(CATEGORIES)} as int) + 1) as category",
        "concat('https://shop.example.com/p/', cast(abs(hash(id, 11)) % 250000 as string), "
        "'?ref=', element_at(array('mail', 'search', 'social', 'direct'), cast(id % 4 as int) + 1)) as url",
        f"round(rand({seed}) * 200, 2) as price",
        "cast(1 + abs(hash(id, 13)) % 5 as int) as quantity",
        f"array({vec}) as embedding",
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=3_000_000, help="rows of the first batch (default 3,000,000)")
    ap.add_argument("--out", default=os.path.join(os.getcwd(), "demo-output"), help="output directory")
    ap.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    args = ap.parse_args(argv)

    uri = os.path.join(os.path.abspath(args.out), "events.lance")
    shutil.rmtree(uri, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    steps = Steps()

    spark = steps.run("start Spark", lambda: (
        SparkSession.builder.master(args.master).appName("lancelet-pipeline")
        .config("spark.ui.showConsoleProgress", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        .getOrCreate()))
    spark.sparkContext.setLogLevel("ERROR")
    lancelet.spark.register(spark)
    print(f"    Spark {spark.version}, master {args.master}, lancelet {lancelet.__version__}; dataset {uri}")

    first, second = args.rows, max(args.rows // 6, 1)

    def write_first():
        (events(spark, 0, first, seed=1).write.format("lancelet").mode("overwrite")
         .option("vector_columns", f"embedding:{DIM}").save(uri))
        ds = lancelet.dataset(uri)
        return f"version {ds.version}, {ds.count_rows():,} rows, {len(ds.get_fragments())} fragments"

    steps.run(f"write {first:,} events through Spark", write_first)

    def append():
        events(spark, first, second, seed=2).write.format("lancelet").mode("append").save(uri)
        ds = lancelet.dataset(uri)
        return f"version {ds.version}, {ds.count_rows():,} rows"

    steps.run(f"append {second:,} events through Spark", append)

    predicate = "category = 'returns' AND price < 50"

    def delete():
        ds = lancelet.dataset(uri)
        n = ds.delete(predicate)["num_deleted_rows"]
        return f"{n:,} rows deleted, version {ds.version}"

    steps.run(f"delete where {predicate}", delete)

    filt = "category = 'books' AND quantity >= 4"

    def spark_filtered():
        # a DataFrame loaded for this query, so Spark may push the filter
        # into lancelet's scan (see README: Spark, filter pushdown)
        df = spark.read.format("lancelet").option("pushdown", "true").load(uri).where(filt)
        return df.groupBy().agg({"price": "sum", "event_id": "count"}).collect()[0].asDict()

    via_spark = steps.run(f"Spark read, filter {filt}", spark_filtered)

    def direct_filtered():
        t = lancelet.dataset(uri).to_table(columns=["price"], filter=filt)
        return {"count(event_id)": t.num_rows, "sum(price)": pc.sum(t.column("price")).as_py()}

    via_lancelet = steps.run("lancelet read, same filter", direct_filtered)
    if via_spark["count(event_id)"] != via_lancelet["count(event_id)"]:
        raise SystemExit(f"row counts differ: Spark {via_spark} vs lancelet {via_lancelet}")

    def map_in_arrow():
        df = lancelet.spark.fragments(uri).mapInArrow(
            lancelet.spark.read_fragments(uri, columns=["user_id", "embedding"], filter="price > 150"),
            lancelet.spark.read_schema(uri, columns=["user_id", "embedding"]))
        return f"{df.count():,} rows with price > 150 over {len(lancelet.dataset(uri).get_fragments())} fragment tasks"

    steps.run("mapInArrow read of two columns", map_in_arrow)

    def upsert():
        # an hour of changes: every 100th event of day one with new values,
        # and new events after the last id
        changed = events(spark, 0, first, seed=3).where("event_id % 100 = 0")
        new_start = first + second
        fresh = events(spark, new_start, max(first // 100, 1), seed=4)
        before = lancelet.dataset(uri)
        live = before.to_table(columns=["event_id"], filter=f"event_id % 100 = 0 AND event_id < {first}").num_rows
        n_changed = (first + 99) // 100
        stats = lancelet.spark.merge_insert(changed.unionByName(fresh), uri, "event_id", spark=spark)
        want = {"num_inserted_rows": n_changed - live + max(first // 100, 1), "num_updated_rows": live,
                "num_deleted_rows": 0}
        if stats != want:
            raise SystemExit(f"merge_insert stats {stats}, expected {want}")
        after = lancelet.dataset(uri)
        if after.count_rows() != before.count_rows() + want["num_inserted_rows"]:
            raise SystemExit(f"after the upsert lancelet counts {after.count_rows()} rows")
        got = after.to_table(columns=["event_id", "price", "quantity"], filter=f"event_id % 100 = 0 AND (event_id < {first} OR event_id >= {new_start})").sort_by("event_id")
        src = changed.unionByName(fresh).where("event_id % 100 = 0").select("event_id", "price", "quantity")
        src = src.toArrow().sort_by("event_id")
        if got.to_pylist() != src.to_pylist():
            raise SystemExit("after the upsert lancelet's rows differ from the DataFrame's")
        return f"{stats}, version {after.version}"

    steps.run("upsert changed events (merge_insert from a DataFrame)", upsert)

    def delete_keys():
        keys = spark.range(0, first, 1000).selectExpr("id as event_id")
        ds = lancelet.dataset(uri)
        live = ds.to_table(columns=["event_id"], filter=f"event_id % 1000 = 0 AND event_id < {first}").num_rows
        stats = lancelet.spark.delete(uri, keys, "event_id", spark=spark)
        after = lancelet.dataset(uri)
        left = after.to_table(columns=["event_id"], filter=f"event_id % 1000 = 0 AND event_id < {first}").num_rows
        if stats["num_deleted_rows"] != live or left or after.count_rows() != ds.count_rows() - live:
            raise SystemExit(f"delete by keys: {stats}, {live} live keys before, {left} after")
        return f"{live:,} rows deleted, version {after.version}"

    steps.run("delete events by key (lancelet.spark.delete)", delete_keys)

    stream_start, per_batch, batches = 10 * (first + second) + 1_000_000, max(first // 150, 100), 4

    def stream():
        ckpt = os.path.join(os.path.abspath(args.out), "stream-checkpoint")
        shutil.rmtree(ckpt, ignore_errors=True)
        before = lancelet.dataset(uri).count_rows()
        src = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", per_batch).load()
        q = (event_columns(src.selectExpr(f"value + {stream_start} as id"), seed=5)
             .writeStream.format("lancelet").option("checkpointLocation", ckpt)
             .trigger(processingTime="500 milliseconds").start(uri))
        try:
            while lancelet.dataset(uri).count_rows() < before + batches * per_batch:
                if not q.isActive:
                    raise SystemExit(f"the stream stopped: {q.exception()}")
                time.sleep(0.2)
        finally:
            q.stop()
        t = lancelet.dataset(uri).to_table(columns=["event_id"], filter=f"event_id >= {stream_start}")
        ids = sorted(t.column("event_id").to_pylist())
        if ids != list(range(stream_start, stream_start + len(ids))) or len(ids) % per_batch:
            raise SystemExit(f"the stream's rows are not whole batches of consecutive ids ({len(ids)} rows)")
        return f"{len(ids):,} rows in {len(ids) // per_batch} micro-batch commits, version {lancelet.dataset(uri).version}"

    steps.run(f"stream {per_batch:,}-row micro-batches into the table", stream)

    def time_travel():
        old = spark.read.format("lancelet").option("version", 1).load(uri).count()
        ds1 = lancelet.dataset(uri, version=1)
        if old != ds1.count_rows():
            raise SystemExit(f"version 1: Spark sees {old} rows, lancelet {ds1.count_rows()}")
        return f"version 1 has {old:,} rows (latest: {lancelet.dataset(uri).count_rows():,})"

    steps.run("time travel to version 1", time_travel)
    spark.stop()

    ds = lancelet.dataset(uri)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(uri) for f in fs)
    print("\nSummary")
    print(f"  dataset   {uri}")
    print(f"  versions  {[v['version'] for v in ds.versions()]}, latest has {ds.count_rows():,} rows, "
          f"{size / 1e6:.1f} MB on disk")
    print(f"  schema    {', '.join(f'{f.name}: {f.type}' for f in ds.schema)}")
    print(f"  filter    {filt}: {via_lancelet['count(event_id)']:,} rows, sum(price) {via_lancelet['sum(price)']:.2f}")
    print("  timings")
    for name, dt, _ in steps.rows:
        print(f"    {dt:8.2f} s  {name}")
    print(f"    {sum(dt for _, dt, _ in steps.rows):8.2f} s  total")


if __name__ == "__main__":
    main()
