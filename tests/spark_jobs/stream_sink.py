"""Run by test_spark_stream.py in its own process (so it can be killed):
a rate-micro-batch stream into the lancelet sink.

    stream_sink.py URI CHECKPOINT ROWS_PER_BATCH STOP_AT_ROWS [OTHER_URI]

Runs until the table holds STOP_AT_ROWS rows (0: forever, until killed or
the query fails), then stops the query. With OTHER_URI it then starts a
query with the same checkpoint into that table and prints
``OTHER_TABLE: <error>``. Prints ``STARTED`` once the query runs."""

import os
import sys
import time

from pyspark.sql import SparkSession

import lancelet
from lancelet.exceptions import NotFoundError

uri, ckpt, per_batch, stop_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
other = sys.argv[5] if len(sys.argv) > 5 else None
spark = (SparkSession.builder.master("local[2]").appName("lancelet-stream-test")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
         .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={os.environ.get('TMPDIR', '/tmp')}")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")


def stream():
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", per_batch).option("numPartitions", 2)
            .load().selectExpr("value", "timestamp", "cast(value % 7 as int) as bucket"))


q = (stream().writeStream.format("lancelet").option("checkpointLocation", ckpt)
     .trigger(processingTime="300 milliseconds").start(uri))
print("STARTED", flush=True)
try:
    while q.isActive:
        if stop_at:
            try:
                if lancelet.dataset(uri).count_rows() >= stop_at:
                    break
            except NotFoundError:
                pass
        time.sleep(0.2)
    q.stop()
    if q.exception() is not None:
        print("FAILED:", q.exception(), flush=True)
        sys.exit(3)
except Exception as e:
    print("FAILED:", e, flush=True)
    sys.exit(3)
if other:
    q2 = stream().writeStream.format("lancelet").option("checkpointLocation", ckpt).start(other)
    try:
        q2.processAllAvailable()
        print("OTHER_TABLE: no error", flush=True)
    except Exception as e:
        print("OTHER_TABLE:", str(e).replace("\n", " ")[:2000], flush=True)
    finally:
        q2.stop()
spark.stop()
