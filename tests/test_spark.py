"""lancelet inside Spark (local[2]): the ``lancelet`` data source, pushdown
on and off, one-transaction writes, failure and concurrency, and the
mapInArrow / pandas_udf helpers. pylance is the oracle for what lands on
disk; pyarrow's casts are the oracle for Spark's view of Lance types."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import datagen
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet
import lancelet.spark as ls
from lancelet.spark.source import LanceletDataSource
from lancelet.spark.types import spark_arrow_schema, spark_schema

pytestmark = pytest.mark.spark

# Types with no Spark equivalent (checked separately).
_NO_SPARK = {"decimal256", "null"}


def _matrix_table(n=300, seed=3) -> pa.Table:
    t = datagen.wide_table("2.2", n=n, seed=seed)
    keep = [c for c in t.column_names if c not in _NO_SPARK]
    return t.select(keep)


def _spark_view(t: pa.Table) -> pa.Table:
    """What Spark should see: pyarrow's cast of every column to Spark's
    Arrow types (timestamps etc. truncated to microseconds)."""
    target = spark_arrow_schema(spark_schema(t.schema))
    cols = [pc.cast(t.column(f.name), f.type, safe=False) for f in target]
    return pa.table(cols, schema=target)


def _data_files(uri) -> set:
    d = Path(uri) / "data"
    return set(os.listdir(d)) if d.exists() else set()


def _sorted(t: pa.Table, key="row") -> pa.Table:
    return t.sort_by(key)


def test_type_matrix_read_and_write_back(spark, tmp_path, lance_mod):
    src = _matrix_table()
    uri = str(tmp_path / "matrix")
    lance_mod.write_dataset(src, uri, max_rows_per_file=120)  # 3 fragments, written by pylance
    df = spark.read.format("lancelet").load(uri)
    assert df.rdd.getNumPartitions() == 3
    got = _sorted(df.toArrow())
    want = _spark_view(src)
    datagen.assert_tables_equal(got.cast(want.schema), want, check_metadata=False, context="spark read")
    # Written back by Spark over the same dataset: every Lance type returns
    # (the existing schema says fixed_size_list, uint64, dictionary, zones...).
    df.write.format("lancelet").mode("overwrite").save(uri)
    ds = lance_mod.dataset(uri)
    assert ds.version == 2
    # (pylance 14 cannot read a 2.2 fixed_size_list<struct> column together
    # with others: read column by column)
    back = _sorted(pa.table({c: ds.to_table(columns=[c]).column(c) for c in src.column_names}))
    # Spark keeps microseconds only; compare those columns as Spark saw them.
    exact = [f.name for f in src.schema if not _sub_micro(f.type)]
    datagen.assert_tables_equal(back.select(exact), src.select(exact), check_metadata=False, context="pylance reads")
    lossy = [f.name for f in src.schema if _sub_micro(f.type)]
    datagen.assert_tables_equal(_spark_view(back.select(lossy)), _spark_view(src.select(lossy)), check_metadata=False)


def _sub_micro(t: pa.DataType) -> bool:
    return (pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t)) and t.unit == "ns"


def test_unsupported_type_is_a_clear_error(spark, tmp_path):
    uri = str(tmp_path / "d256")
    lancelet.write_dataset(pa.table({"x": pa.array([1, 2]), "d": pa.array([1, 2], pa.decimal256(50, 2))}), uri)
    with pytest.raises(Exception, match="no Spark equivalent"):
        spark.read.format("lancelet").load(uri).collect()
    # the other columns are readable with the columns option
    assert spark.read.format("lancelet").option("columns", "x").load(uri).count() == 2


def test_history_overwrite_append_overwrite(spark, tmp_path, lance_mod):
    uri = str(tmp_path / "hist")
    spark.range(0, 100).selectExpr("id", "cast(id * 2 as int) as v").write.format("lancelet").mode("overwrite").save(uri)
    spark.range(100, 150).selectExpr("id", "cast(id * 2 as int) as v").write.format("lancelet").mode("append").save(uri)
    spark.range(7).selectExpr("id", "cast(-id as int) as v").write.format("lancelet").mode("overwrite").save(uri)
    ds = lancelet.dataset(uri)
    assert [v["version"] for v in ds.versions()] == [1, 2, 3]
    counts = [spark.read.format("lancelet").option("version", v).load(uri).count() for v in (1, 2, 3)]
    assert counts == [100, 150, 7]
    assert lance_mod.dataset(uri, version=2).to_table().num_rows == 150
    assert sorted(r.v for r in spark.read.format("lancelet").load(uri).collect()) == [-6, -5, -4, -3, -2, -1, 0]
    # the data frame's schema is the dataset's; nullable as Spark wrote it
    assert ds.schema.field("v").type == pa.int32()


def _pushdown_dataset(tmp_path) -> str:
    rng = np.random.default_rng(7)
    n = 5000
    f = rng.normal(size=n)
    f[::97] = np.nan
    f[::101] = -0.0
    t = pa.table({
        "id": pa.array(np.arange(n)),
        "small": pa.array(rng.integers(0, 50, n).astype(np.int32)),
        "name": pa.array([None if i % 13 == 0 else f"n{i % 40}_x'{i % 3}" for i in range(n)]),
        "f": pa.array(f),
        "d": pa.array(np.arange(n) % 400, pa.int32()).cast(pa.date32()),
        "s": pa.array([{"a": i % 9, "b": str(i)} for i in range(n)]),
        "u": pa.array(np.arange(n) % 300, pa.uint16()),
    })
    uri = str(tmp_path / "push")
    lancelet.write_dataset(t, uri, max_rows_per_file=1700)
    return uri


_QUERIES = [
    "small < 10",
    "small = 3 and id >= 1000",
    "name = 'n3_x''0'",
    "name like 'n1%'",
    "name like '%x''1'",
    "name like '%_x%'",
    "name is null",
    "name is not null and small in (1, 2, 3)",
    "not (small in (1, 2, 3))",
    "small <=> 4",
    "f > 0.5",
    "f = 0.0",
    "isnan(f)",
    "d < date'1970-02-01'",
    "s.a = 4",
    "u > 200",
    "small > 10 or id < 5",
    "not (name = 'n5_x''2')",
]


@pytest.mark.parametrize("pushdown", [True, False])
def test_filters_pushdown_on_and_off(spark, tmp_path, pushdown):
    uri = _pushdown_dataset(tmp_path)
    table = lancelet.dataset(uri).to_table()
    spark.conf.set("spark.sql.python.filterPushdown.enabled", str(pushdown).lower())
    try:
        def load():
            return spark.read.format("lancelet").option("pushdown", "true").load(uri)

        local = spark.createDataFrame(_spark_view(table))
        for q in _QUERIES:
            got = sorted(r.id for r in load().filter(q).select("id").collect())
            want = sorted(r.id for r in local.filter(q).select("id").collect())
            assert got == want, f"{q!r} (pushdown={pushdown}): {len(got)} rows vs {len(want)}"
        plan = load().filter("small < 10")._jdf.queryExecution().optimizedPlan().toString()
        assert ("Filter" in plan) != pushdown, plan
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


def test_reused_dataframe_without_pushdown_option_stays_correct(spark, tmp_path):
    # PySpark 4.3 reuses the reader planned for the last pushed query of a
    # DataFrame; without the pushdown option nothing is pushed, so reuse is safe.
    uri = _pushdown_dataset(tmp_path)
    df = spark.read.format("lancelet").load(uri)
    assert df.filter("small < 10").count() < 5000
    assert df.count() == 5000
    assert df.selectExpr("sum(id)").collect()[0][0] == sum(range(5000))


def test_read_options_filter_columns_batch_size_and_slices(spark, tmp_path):
    uri = str(tmp_path / "opts")
    lancelet.write_dataset(pa.table({"id": pa.array(np.arange(10_000)), "x": pa.array(np.arange(10_000) % 7)}), uri,
                           max_rows_per_file=4000)
    lancelet.dataset(uri).delete("id % 10 = 0")
    df = (spark.read.format("lancelet").option("columns", "id").option("filter", "x = 3")
          .option("batch_size", 100).option("rows_per_partition", 1500).load(uri))
    assert df.columns == ["id"]
    assert df.rdd.getNumPartitions() == 3 + 3 + 2  # 4000, 4000, 2000 rows in 1500-row slices
    want = sorted(i for i in range(10_000) if i % 7 == 3 and i % 10 != 0)
    assert sorted(r.id for r in df.collect()) == want
    # a user-given schema projects too
    df2 = spark.read.format("lancelet").schema("x long").load(uri)
    assert df2.count() == 9000 and df2.columns == ["x"]


def test_version_is_pinned_at_planning(tmp_path):
    uri = str(tmp_path / "pin")
    lancelet.write_dataset(pa.table({"id": pa.array(np.arange(10))}), uri)
    source = LanceletDataSource({"path": uri})
    reader = source.reader(source.schema())
    parts = reader.partitions()
    lancelet.dataset(uri).insert(pa.table({"id": pa.array(np.arange(10, 20))}))
    lancelet.dataset(uri).delete("id < 5")
    got = pa.Table.from_batches([b for p in parts for b in reader.read(p)])
    assert sorted(got.column("id").to_pylist()) == list(range(10))
    assert {p.version for p in parts} == {1}


def test_vector_columns_written_as_fixed_size_list(spark, tmp_path, lance_mod):
    uri = str(tmp_path / "vec")
    df = spark.range(50).selectExpr("id", "array(cast(id as float), cast(id + 1 as float), 0.5f) as vec",
                                    "array(id, id) as pair")
    df.write.format("lancelet").mode("overwrite").option("vector_columns", "vec:3").save(uri)
    schema = lance_mod.dataset(uri).schema
    assert schema.field("vec").type == pa.list_(pa.field("element", pa.float32()), 3)
    assert pa.types.is_list(schema.field("pair").type)
    # metadata declares it too (lance-spark's convention), and read-back keeps it
    read = spark.read.format("lancelet").load(uri)
    assert read.schema["vec"].metadata == {"arrow.fixed-size-list.size": 3}
    uri2 = str(tmp_path / "vec2")
    read.write.format("lancelet").mode("append").save(uri2)
    assert pa.types.is_fixed_size_list(lance_mod.dataset(uri2).schema.field("vec").type)
    # a wrong dimension is refused, nothing committed
    bad = spark.range(3).selectExpr("id", "array(1.0f, 2.0f) as vec", "array(id, id) as pair")
    with pytest.raises(Exception, match="vec"):
        bad.write.format("lancelet").mode("append").save(uri)
    assert lance_mod.dataset(uri).version == 1


def test_failed_task_leaves_no_version_and_no_orphans(spark, tmp_path):
    uri = str(tmp_path / "fail")
    spark.range(100).write.format("lancelet").mode("overwrite").save(uri)
    before = _data_files(uri)

    from pyspark.sql.functions import udf

    @udf("long")
    def boom(x):
        if x == 1500:
            raise ValueError("injected task failure")
        return x

    bad = spark.range(0, 2000, numPartitions=4).select(boom("id").alias("id"))
    with pytest.raises(Exception, match="injected task failure"):
        bad.write.format("lancelet").mode("append").option("max_rows_per_file", 100).save(uri)
    ds = lancelet.dataset(uri)
    assert ds.version == 1 and ds.count_rows() == 100
    # Cancelled tasks may still be finishing: each removes its own files
    # once it sees the job closed.
    deadline = time.time() + 60
    while _data_files(uri) != before and time.time() < deadline:
        time.sleep(0.5)
    assert _data_files(uri) == before, "orphaned data files left behind"


def test_schema_mismatch_on_append_is_refused(spark, tmp_path):
    uri = str(tmp_path / "mismatch")
    spark.range(10).write.format("lancelet").mode("overwrite").save(uri)
    with pytest.raises(Exception, match="other|not in the dataset schema"):
        spark.range(10).selectExpr("id", "id as other").write.format("lancelet").mode("append").save(uri)
    assert lancelet.dataset(uri).version == 1


def test_two_jobs_appending_at_once(spark, tmp_path, lance_mod):
    uri = str(tmp_path / "conc")
    spark.range(10).write.format("lancelet").mode("overwrite").save(uri)
    errors = []

    def job(start):
        # py4j runs each Python thread on its own JVM thread, which has no
        # active session (and so no registered data sources) until given one
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        try:
            spark.range(start, start + 1000, numPartitions=3).write.format("lancelet").mode("append").save(uri)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=job, args=(s,)) for s in (1000, 5000)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors, errors
    ds = lance_mod.dataset(uri)
    assert ds.version == 3
    ids = sorted(ds.to_table().column("id").to_pylist())
    assert ids == list(range(10)) + list(range(1000, 2000)) + list(range(5000, 6000))


def test_map_in_arrow_read_and_write_helpers(spark, tmp_path, lance_mod):
    uri = str(tmp_path / "helpers")
    src = pa.table({"id": pa.array(np.arange(3000)),
                    "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(3000 * 4, dtype=np.float32)), 4),
                    "tag": pa.array([f"t{i % 5}" for i in range(3000)]).cast(pa.large_string())})
    lancelet.write_dataset(src, uri, max_rows_per_file=1000)
    tasks = ls.fragments(uri, rows_per_task=600)
    assert tasks.count() == 6 and set(r.version for r in tasks.collect()) == {1}
    df = tasks.mapInArrow(ls.read_fragments(uri, columns=["id", "tag"], filter="id % 2 = 0"),
                          ls.read_schema(uri, columns=["id", "tag"]))
    rows = df.collect()
    assert sorted(r.id for r in rows) == list(range(0, 3000, 2))
    # distributed write with mapInArrow, one commit
    out = str(tmp_path / "helpers_out")
    full = tasks.mapInArrow(ls.read_fragments(uri), ls.read_schema(uri))
    fw = ls.write_fragments(out, full.schema, mode="append", max_rows_per_file=700)
    staged = full.mapInArrow(fw, fw.output_schema)
    ds = ls.commit(fw, staged)
    assert ds.version == 1
    got = lance_mod.dataset(out).to_table().sort_by("id")
    # a new dataset takes Spark's types; the vector keeps its dimension
    # through the fixed-size-list metadata read_schema puts on it
    want = src.set_column(2, "tag", src.column("tag").cast(pa.string()))
    datagen.assert_tables_equal(got, want, check_metadata=False, context="mapInArrow write")


def test_take_udf_by_row_id(spark, tmp_path):
    uri = str(tmp_path / "take")
    src = pa.table({"id": pa.array(np.arange(500)), "name": pa.array([f"r{i}" for i in range(500)]),
                    "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(1000, dtype=np.float32)), 2)})
    lancelet.write_dataset(src, uri, max_rows_per_file=200, enable_stable_row_ids=True)
    lancelet.dataset(uri).delete("id = 7")
    ids = lancelet.dataset(uri).to_table(columns=["id"], with_row_id=True)
    take = ls.take_udf(uri, ["name", "vec"])
    q = spark.createDataFrame([(int(r), int(i)) for r, i in zip(ids.column("_rowid").to_pylist(), ids.column("id").to_pylist())]
                              + [(7, 7), (10**9, -1)], "rid long, id long")
    res = q.select("id", take("rid").alias("row")).collect()
    by_id = {r.id: r.row for r in res}
    assert by_id[3].name == "r3" and list(by_id[3].vec) == [6.0, 7.0]
    assert all(by_id[i].name == f"r{i}" for i in range(500) if i != 7)
    assert by_id[-1].name is None and by_id[-1].vec is None  # unknown id
    assert sum(1 for r in res if r.id == 7 and r.row.name is None) == 1  # deleted row id → nulls


def test_spark_on_s3_with_storage_options(spark, s3_server, lance_mod):
    """format("lancelet") on s3:// with storage_options.* options: the
    distributed write (tasks stage, the driver commits, the job is closed)
    and the read both go through the object store."""
    import uuid

    so = s3_server.storage_options
    uri = f"s3://lancelet/spark-{uuid.uuid4().hex[:8]}"

    def opts(rw):
        for k, v in so.items():
            rw = rw.option(f"storage_options.{k}", v)
        return rw

    df = spark.range(0, 3000, numPartitions=3).selectExpr("id", "concat('v', cast(id as string)) as s")
    opts(df.write.format("lancelet").mode("overwrite").option("max_rows_per_file", 700)).save(uri)
    opts(spark.range(3000, 3100).selectExpr("id", "'x' as s").write.format("lancelet").mode("append")).save(uri)
    back = opts(spark.read.format("lancelet")).option("filter", "id % 100 = 0").load(uri)
    assert sorted(r.id for r in back.collect()) == list(range(0, 3100, 100))
    theirs = lance_mod.dataset(uri, storage_options=so)
    assert theirs.version == 2 and theirs.count_rows() == 3100
    # the staged files of both jobs are all referenced (nothing orphaned)
    files = {d.path for f in lancelet.dataset(uri, storage_options=so).get_fragments() for d in f.data_files()}
    assert len(files) == len(theirs.get_fragments())
