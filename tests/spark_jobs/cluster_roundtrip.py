"""Run by test_spark_cluster.py in its own process: lancelet through Spark on
local-cluster[2,1,1024] (two executor JVMs with their own Python workers).
Prints one JSON object of observations on its last line."""

import json
import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql.functions import udf

import lancelet
import lancelet.spark as ls

root = sys.argv[1]
spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("lancelet-cluster-test")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.python.filterPushdown.enabled", "true")
         .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
         .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
out = {}
# executors register asynchronously; the map counts the driver too
deadline = time.time() + 120
while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 3 and time.time() < deadline:
    time.sleep(0.5)
out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1

uri = os.path.join(root, "ds")
df = spark.range(0, 20000, numPartitions=4).selectExpr(
    "id", "cast(id % 100 as int) as small", "concat('s', cast(id % 37 as string)) as name",
    "array(cast(id as float), cast(id * 2 as float), cast(id * 3 as float), 1.0f) as vec")
df.write.format("lancelet").mode("overwrite").option("vector_columns", "vec:4").option("max_rows_per_file", 3000).save(uri)
df.where("id < 1000").selectExpr("id + 20000 as id", "small", "name", "vec").write.format("lancelet").mode("append").save(uri)
ds = lancelet.dataset(uri)
out["versions"] = [v["version"] for v in ds.versions()]
out["rows"] = ds.count_rows()
out["vec_type"] = str(ds.schema.field("vec").type)

read = spark.read.format("lancelet").load(uri)
out["partitions"] = read.rdd.getNumPartitions()
out["fragments"] = len(ds.get_fragments())
out["filtered"] = read.where("small < 10 and name = 's5'").count()
out["filtered_expected"] = sum(1 for i in list(range(20000)) + list(range(20000, 21000))
                               if (i % 100 if i < 20000 else (i - 20000) % 100) < 10
                               and f"s{(i if i < 20000 else i - 20000) % 37}" == "s5")
out["sum_vec0"] = read.selectExpr("sum(vec[0]) as s").collect()[0].s

# mapInArrow read + write helpers
tasks = ls.fragments(uri)
m = tasks.mapInArrow(ls.read_fragments(uri, columns=["id", "vec"]), ls.read_schema(uri, columns=["id", "vec"]))
out["map_in_arrow_rows"] = m.count()
uri2 = os.path.join(root, "ds2")
fw = ls.write_fragments(uri2, m.schema, mode="overwrite")
ls.commit(fw, m.mapInArrow(fw, fw.output_schema))
out["helper_write_rows"] = lancelet.dataset(uri2).count_rows()
out["helper_vec_type"] = str(lancelet.dataset(uri2).schema.field("vec").type)

# take by row id through a pandas_udf
ids = lancelet.dataset(uri).to_table(columns=["id"], with_row_id=True, limit=50)
take = ls.take_udf(uri, ["name"])
q = spark.createDataFrame([(int(r), int(i)) for r, i in zip(ids.column("_rowid").to_pylist(), ids.column("id").to_pylist())],
                          "rid long, id long")
out["take_ok"] = all(r.row.name == f"s{r.id % 37}" for r in q.select("id", take("rid").alias("row")).collect())


# a failing task: no new version, no orphaned files
@udf("long")
def boom(x):
    if x == 777:
        raise ValueError("injected task failure")
    return x


before = sorted(os.listdir(os.path.join(uri, "data")))
try:
    spark.range(0, 4000, numPartitions=4).select(boom("id").alias("id")).selectExpr(
        "id", "cast(id as int) as small", "'x' as name", "array(1.0f, 2.0f, 3.0f, 4.0f) as vec"
    ).write.format("lancelet").mode("append").option("max_rows_per_file", 100).save(uri)
    out["failed_job_raised"] = False
except Exception as e:  # the job must fail
    out["failed_job_raised"] = "injected task failure" in str(e)
deadline = time.time() + 60
while sorted(os.listdir(os.path.join(uri, "data"))) != before and time.time() < deadline:
    time.sleep(0.5)
out["orphans"] = len(set(os.listdir(os.path.join(uri, "data"))) - set(before))
out["version_after_failure"] = lancelet.dataset(uri).version
spark.stop()
print(json.dumps(out))
