"""The JVM connector (issue 36): ``format("lancelet")`` in a session set up
with ``lancelet.spark.configure`` is the DataSource V2 connector in
``lancelet/jars`` (Java over the Rust core through JNI). Its reads must
equal lancelet's direct reads as the Python source shows them to Spark
(pyarrow's casts to Spark's Arrow types), on pylance- and lancelet-written
data; projections, pushed filters, limits and COUNT(*) must show in the plan.

The suite's shared Spark session has no connector jar (its
``format("lancelet")`` is the Python source), and a JVM takes its classpath
when it starts, so the Spark side runs here as one job in its own process
(this file run as a script) with one session: it writes each check's rows
(Arrow IPC), counts, plans and errors to a directory, and the tests below
compare them with lancelet's own reads of the same versions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytestmark = pytest.mark.spark

_NO_SPARK = {"decimal256", "null"}


# ---------------------------------------------------------------- the job --

def _job(root: Path) -> None:
    """Runs in the child process: every check against the datasets in root."""
    from pyspark.sql import SparkSession

    import lancelet.spark as ls

    out = root / "out"
    out.mkdir()
    spec = json.loads((root / "spec.json").read_text())
    builder = (SparkSession.builder.master("local[2]").appName("lancelet-jvm-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.cbo.planStats.enabled", "true")  # row counts reach the plan's statistics
               .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={root}")
               .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", "")))
    spark = ls.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    results = {}
    try:
        # The Python source registers too; the JVM connector still wins the name.
        ls.register(spark)
        results["registered"] = True
    except Exception as e:
        results["registered"] = repr(e)

    def read(uri, **opts):
        r = spark.read.format("lancelet")
        for k, v in opts.items():
            r = r.option(k, v)
        return r.load(uri)

    def plan(df) -> str:
        return df._jdf.queryExecution().executedPlan().toString()

    def rows(name, make):
        try:
            df = make()
            t = df.toArrow()
            with pa.OSFile(str(out / f"{name}.arrow"), "wb") as f, pa.ipc.new_file(f, t.schema) as w:
                w.write_table(t)
            results[name] = {"plan": plan(df), "partitions": df.rdd.getNumPartitions()}
        except Exception as e:
            results[name] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]}

    def value(name, make):
        try:
            results[name] = {"value": make()}
        except Exception as e:
            results[name] = {"error": f"{type(e).__name__}: {e}"}

    m = spec["main"]
    for key in ("matrix_pylance", "matrix_lancelet", "matrix_lancelet_21"):
        rows(key, lambda k=key: read(spec[k]))
    rows("main_all", lambda: read(m))
    rows("main_proj", lambda: read(m).select("s"))
    rows("main_filter", lambda: read(m).where("id >= 100 and id < 400 and s like 'a%'"))
    rows("main_filter_or", lambda: read(m).where("i32 = 7 or b = true"))
    rows("main_filter_float", lambda: read(m).where("f > 0.5 and 3 < i32"))
    rows("main_filter_in", lambda: read(m).where("s in ('a1', 'b2') or id in (1, 2, 3)"))
    rows("main_filter_date", lambda: read(m).where("d >= date'2020-01-10' and not (i16 <=> 3)"))
    rows("main_filter_null", lambda: read(m).where("s is null"))
    rows("main_filter_struct", lambda: read(m).where("st.x > 5"))
    rows("main_limit", lambda: read(m).limit(7))
    rows("main_limit_filter", lambda: read(m).where("i32 = 2").limit(5))
    rows("main_meta", lambda: read(m).select("id", "_rowid", "_rowaddr", "_fragid"))
    rows("main_rpp", lambda: read(m, rows_per_partition="700", batch_size="100"))
    rows("main_columns_opt", lambda: read(m, columns="id,s", filter="id < 50"))
    rows("main_v1", lambda: read(m, version="1"))
    rows("main_tag", lambda: read(m, version="first"))
    read(m).createOrReplaceTempView("events")
    rows("main_sql", lambda: spark.sql("SELECT s, count(*) AS n FROM events WHERE i32 < 3 GROUP BY s"))
    rows("main_class_name", lambda: spark.read.format("io.lancelet.spark.LanceletDataSource").load(m).select("id"))
    s3 = {f"storage_options.{k}": v for k, v in spec["s3_options"].items()}
    rows("s3", lambda: read(spec["s3"], **s3).where("i32 < 4"))
    value("err_s3_key", lambda: read(spec["s3"], **dict(s3, **{"storage_options.aws_secret_access_key": "wrong",
                                                              "storage_options.client_max_retries": "0"})).collect())
    value("stats", lambda: [str(read(m)._jdf.queryExecution().optimizedPlan()
                                    .stats().rowCount().get()),
                            str(read(m)._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()),
                            str(read(m).select("id")._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())])
    value("count", lambda: read(m).count())
    value("count_plan", lambda: plan(read(m).groupBy().count()))
    value("count_filter", lambda: read(m).where("i32 < 5 and s like 'b%'").count())
    value("count_filter_plan", lambda: plan(read(m).where("i32 < 5").groupBy().count()))
    value("count_unpushed", lambda: read(m).where("f > 0.25").count())
    value("count_v1", lambda: read(m, version="1").count())
    value("empty_partitions", lambda: read(spec["empty"]).rdd.getNumPartitions())
    value("empty_count", lambda: read(spec["empty"]).where("id > 0").count())
    for name, opts in {
        "err_no_path": {},
        "err_batch_size": {"batch_size": "abc"},
        "err_rpp": {"rows_per_partition": "0"},
        "err_columns": {"columns": "id,nope"},
        "err_version": {"version": "99"},
        "err_tag": {"version": "no_such_tag"},
        "err_filter": {"filter": "nope > 3"},
        "err_missing": {"path": str(root / "missing")},
    }.items():
        def make(opts=opts):
            r = spark.read.format("lancelet")
            for k, v in opts.items():
                r = r.option(k, v)
            return r.load(m if "path" not in opts and opts else None).collect()
        value(name, make)
    value("err_unsupported", lambda: read(spec["decimal256"]).collect())
    (root / "results.json").write_text(json.dumps(results, indent=1, default=str))
    spark.stop()


if __name__ == "__main__":
    _job(Path(sys.argv[1]))
    sys.exit(0)


# -------------------------------------------------------------- the tests --

import datagen  # noqa: E402  (tests only; the job above needs none of it)

import lancelet  # noqa: E402
import lancelet.spark.jvm as jvm  # noqa: E402
from lancelet.spark.types import spark_arrow_schema, spark_schema  # noqa: E402


def _main_table(n: int = 3000) -> pa.Table:
    ids = pa.array(range(n), pa.int64())
    return pa.table({
        "id": ids,
        "i32": pa.array([i % 11 for i in range(n)], pa.int32()),
        "i16": pa.array([None if i % 13 == 0 else i % 5 for i in range(n)], pa.int16()),
        "s": pa.array([None if i % 17 == 0 else f"{'abc'[i % 3]}{i % 40}" for i in range(n)]),
        "f": pa.array([((i * 7919) % 1000) / 1000.0 for i in range(n)], pa.float64()),
        "b": pa.array([None if i % 19 == 0 else i % 4 == 0 for i in range(n)]),
        "d": pa.array([18262 + i % 30 for i in range(n)], pa.date32()),
        "ts": pa.array([1_600_000_000_123_456_789 + i * 1_000_001 for i in range(n)], pa.timestamp("ns")),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array([float(i) for i in range(n * 4)], pa.float32()), 4),
        "st": pa.array([{"x": i % 10, "y": str(i)} for i in range(n)]),
    })


@pytest.fixture(scope="module")
def job(tmp_path_factory, lance_mod, s3_server):
    if not jvm.available():
        pytest.fail("the JVM connector is not built (scripts/build_jvm.sh, run by scripts/setup.sh)")
    root = tmp_path_factory.mktemp("jvm")
    matrix = datagen.wide_table("2.2", n=300, seed=3)
    matrix = matrix.select([c for c in matrix.column_names if c not in _NO_SPARK])
    spec = {k: str(root / k) for k in ("matrix_pylance", "matrix_lancelet", "matrix_lancelet_21", "main", "empty",
                                       "decimal256")}
    lance_mod.write_dataset(matrix, spec["matrix_pylance"], max_rows_per_file=120)
    lancelet.write_dataset(matrix, spec["matrix_lancelet"], max_rows_per_file=120)
    narrow = matrix.select([c for c in matrix.column_names
                            if not c.startswith(("fsl_nested", "fsl_struct", "list_fsl", "map_", "list_map"))])
    lancelet.write_dataset(narrow, spec["matrix_lancelet_21"], max_rows_per_file=100, data_storage_version="2.1")
    main = _main_table()
    lance_mod.write_dataset(main.slice(0, 2000), spec["main"], max_rows_per_file=800)   # version 1, pylance
    lancelet.dataset(spec["main"]).tags.create("first", 1)
    lancelet.write_dataset(main.slice(2000), spec["main"], mode="append", max_rows_per_file=800)  # version 2
    lancelet.dataset(spec["main"]).delete("id % 10 = 3 OR id = 2500")  # version 3: deletion files
    lancelet.write_dataset(main.slice(0, 0), spec["empty"])
    spec["s3"], spec["s3_options"] = "s3://lancelet/jvm_main", s3_server.storage_options
    lancelet.write_dataset(main, spec["s3"], max_rows_per_file=1000, storage_options=s3_server.storage_options)
    lance_mod.write_dataset(pa.table({"d": pa.array([1], pa.decimal256(50, 2))}), spec["decimal256"])
    (root / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    p = subprocess.run([sys.executable, __file__, str(root)], capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
    results = json.loads((root / "results.json").read_text())
    return root, spec, results


def _rows(job, name) -> pa.Table:
    root, _, results = job
    r = results[name]
    assert "error" not in r, r.get("trace", r["error"])
    with pa.OSFile(str(root / "out" / f"{name}.arrow")) as f:
        return pa.ipc.open_file(f).read_all()


def _spark_view(t: pa.Table) -> pa.Table:
    """What Spark should see (the Python source's view): pyarrow's cast of
    every column to Spark's Arrow types."""
    target = spark_arrow_schema(spark_schema(t.schema))
    return pa.table([pc.cast(t.column(f.name), f.type, safe=False) for f in target], schema=target)


def _same(got: pa.Table, want: pa.Table, key: str, context: str) -> None:
    got, want = got.sort_by(key), want.sort_by(key)
    datagen.assert_tables_equal(got.cast(want.schema), want, check_metadata=False, context=context)


def _direct(uri, **kw) -> pa.Table:
    return lancelet.dataset(uri, version=kw.pop("version", None)).to_table(**kw)


def test_session_resolves_the_jvm_connector(job):
    _, spec, results = job
    assert results["registered"] is True
    assert "LanceletScan" in results["main_all"]["plan"]
    assert "BatchScan" in results["main_all"]["plan"] and "Python" not in results["main_all"]["plan"]
    assert "LanceletScan" in results["main_class_name"]["plan"]


@pytest.mark.parametrize("name", ["matrix_pylance", "matrix_lancelet", "matrix_lancelet_21"])
def test_type_matrix_equals_direct_reads(job, name):
    _, spec, _ = job
    _same(_rows(job, name), _spark_view(_direct(spec[name])), "row", name)


def test_full_scan_and_partitions(job):
    _, spec, results = job
    want = _spark_view(_direct(spec["main"]))
    _same(_rows(job, "main_all"), want, "id", "main")
    assert want.num_rows == 3000 - 300 - 1
    assert results["main_all"]["partitions"] == len(lancelet.dataset(spec["main"]).get_fragments())


def test_projection_reads_one_column(job):
    _, spec, results = job
    got = _rows(job, "main_proj")
    assert got.column_names == ["s"]
    want = _spark_view(_direct(spec["main"], columns=["s"]))
    assert sorted(got.column("s").to_pylist(), key=str) == sorted(want.column("s").to_pylist(), key=str)
    assert "columns=s " in results["main_proj"]["plan"]


@pytest.mark.parametrize("name,sql,pushed", [
    ("main_filter", "id >= 100 AND id < 400 AND s LIKE 'a%'", True),
    ("main_filter_or", "i32 = 7 OR b = true", True),
    ("main_filter_float", "f > 0.5 AND i32 > 3", False),
    ("main_filter_in", "s IN ('a1', 'b2') OR id IN (1, 2, 3)", True),
    ("main_filter_date", "d >= DATE '2020-01-10' AND NOT (i16 IS NOT NULL AND i16 = 3)", True),
    ("main_filter_null", "s IS NULL", True),
    ("main_filter_struct", "st.x > 5", True),
])
def test_filters_equal_direct_filtered_reads(job, name, sql, pushed):
    _, spec, results = job
    want = _spark_view(_direct(spec["main"], filter=sql))
    assert want.num_rows > 0
    _same(_rows(job, name), want, "id", name)
    plan = results[name]["plan"]
    assert ("filter=" in plan) == pushed or name == "main_filter_float", plan
    if name == "main_filter_float":
        # the integer comparison is pushed, the float one stays in Spark
        assert "(`i32` > 3)" in plan and "Filter (f#" in plan and "`f` >" not in plan, plan
    elif pushed:
        assert "Filter " not in plan.split("BatchScan")[0].split("ColumnarToRow")[-1], plan


def test_limit(job):
    _, spec, results = job
    got = _rows(job, "main_limit")
    assert got.num_rows == 7
    live = set(_direct(spec["main"], columns=["id"]).column("id").to_pylist())
    assert set(got.column("id").to_pylist()) <= live
    assert "limit=7" in results["main_limit"]["plan"]
    assert results["main_limit"]["partitions"] == 1
    got = _rows(job, "main_limit_filter")
    assert got.num_rows == 5 and set(got.column("i32").to_pylist()) == {2}


def test_count_star(job):
    _, spec, results = job
    ds = lancelet.dataset(spec["main"])
    assert results["count"]["value"] == ds.count_rows() == 2699
    # answered on the driver: a local scan of one row, no BatchScan
    assert "LocalTableScan [count(*)" in results["count_plan"]["value"]
    assert "BatchScan" not in results["count_plan"]["value"]
    assert results["count_filter"]["value"] == ds.count_rows(filter="i32 < 5 AND s LIKE 'b%'")
    assert "LocalTableScan [count(*)" in results["count_filter_plan"]["value"]
    assert results["count_unpushed"]["value"] == ds.count_rows(filter="f > 0.25")
    assert results["count_v1"]["value"] == 2000
    assert results["empty_partitions"]["value"] == 0
    assert results["empty_count"]["value"] == 0


def test_statistics_for_the_planner(job):
    _, spec, results = job
    rows, size, size_id = (int(x) for x in results["stats"]["value"])
    frags = lancelet.dataset(spec["main"]).get_fragments()
    assert rows == sum(f.physical_rows for f in frags)  # before deletions and filters
    on_disk = sum(os.path.getsize(os.path.join(spec["main"], "data", d.path)) for f in frags for d in f.data_files())
    assert size == on_disk and 0 < size_id < size


def test_metadata_columns(job):
    _, spec, _ = job
    got = _rows(job, "main_meta").sort_by("id")
    want = lancelet.dataset(spec["main"]).to_table(columns=["id"], with_row_id=True, with_row_address=True).sort_by("id")
    assert got.column("id").to_pylist() == want.column("id").to_pylist()
    assert got.column("_rowid").to_pylist() == want.column("_rowid").to_pylist()
    assert got.column("_rowaddr").to_pylist() == want.column("_rowaddr").to_pylist()
    assert got.column("_fragid").to_pylist() == [a >> 32 for a in want.column("_rowaddr").to_pylist()]


def test_partition_slices_and_batch_size(job):
    _, spec, results = job
    _same(_rows(job, "main_rpp"), _spark_view(_direct(spec["main"])), "id", "slices")
    # 800-row fragments in 700-row slices: two per fragment
    frags = lancelet.dataset(spec["main"]).get_fragments()
    assert results["main_rpp"]["partitions"] == sum(-(-f.physical_rows // 700) for f in frags)


def test_columns_and_filter_options(job):
    _, spec, _ = job
    got = _rows(job, "main_columns_opt")
    assert got.column_names == ["id", "s"]
    _same(got, _spark_view(_direct(spec["main"], columns=["id", "s"], filter="id < 50")), "id", "options")


def test_time_travel_by_version_and_tag(job):
    _, spec, _ = job
    want = _spark_view(_direct(spec["main"], version=1))
    assert want.num_rows == 2000
    _same(_rows(job, "main_v1"), want, "id", "version=1")
    _same(_rows(job, "main_tag"), want, "id", "version=first")


def test_sql_over_the_connector(job):
    _, spec, _ = job
    got = _rows(job, "main_sql")
    t = _direct(spec["main"], columns=["s"], filter="i32 < 3")
    from collections import Counter

    want = Counter(t.column("s").to_pylist())
    assert dict(zip(got.column("s").to_pylist(), got.column("n").to_pylist())) == want


def test_storage_options_reach_the_core(job):
    _, spec, results = job
    want = lancelet.dataset(spec["s3"], storage_options=spec["s3_options"]).to_table(filter="i32 < 4")
    assert want.num_rows > 0
    _same(_rows(job, "s3"), _spark_view(want), "id", "s3 with storage options")
    assert "error" in results["err_s3_key"], results["err_s3_key"]


@pytest.mark.parametrize("name,text", [
    ("err_no_path", "needs a dataset URI"),
    ("err_batch_size", "option batch_size must be an integer, got 'abc'"),
    ("err_rpp", "option rows_per_partition must be positive, got 0"),
    ("err_columns", "columns [nope] are not in"),
    ("err_version", "not found"),
    ("err_tag", "no_such_tag"),
    ("err_filter", "nope"),
    ("err_missing", "not found"),
    ("err_unsupported", "38 digits"),
])
def test_bad_input_is_a_clear_error(job, name, text):
    _, _, results = job
    assert "error" in results[name], results[name]
    assert text in results[name]["error"], results[name]["error"]
