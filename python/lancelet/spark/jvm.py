"""lancelet's JVM connector for Spark (a DataSource V2 table provider).

The Python package ships ``lancelet/jars/lancelet-spark.jar`` (``java/``,
compiled at set-up against the jars of the pyspark wheel) and
``lancelet/jars/liblancelet_jni.so`` (the Rust core through JNI, crate
``rust/lancelet-jni``). Put them on a session's classpath before it starts::

    from pyspark.sql import SparkSession
    import lancelet.spark.jvm

    spark = lancelet.spark.jvm.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    df = spark.read.format("lancelet").load(uri)   # now the JVM connector

Spark 4 looks a short name up among the JVM's ``DataSourceRegister``s first
and takes a Python data source of that name only when there is none, so
with the jar on the classpath ``format("lancelet")`` is the JVM connector
(column pruning, filter/limit/COUNT(*) pushdown, columnar Arrow batches, no
Python worker), and without it the Python data source
(:mod:`lancelet.spark.source`). Both take the same read options (``version``
by number or tag, ``columns``, ``filter``, ``batch_size``,
``rows_per_partition``, ``storage_options.<key>``) and give the same rows
and Spark types. The JVM connector also offers the metadata columns
``_rowid``, ``_rowaddr`` (longs) and ``_fragid`` (int). Not yet served by
it: writes and ``namespace.*``/``table_id`` options (use the Python source
for those: a session without :func:`configure`). The class name
``io.lancelet.spark.LanceletDataSource`` always names the JVM connector.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lancelet.exceptions import NotFoundError

#: Directory of the jar and the JNI library inside the installed package.
JARS_DIR = Path(__file__).resolve().parent.parent / "jars"
JAR = JARS_DIR / "lancelet-spark.jar"
LIBRARY = JARS_DIR / "liblancelet_jni.so"
#: Environment variable (and JVM system property ``lancelet.jni.library``)
#: naming the JNI library the connector loads.
LIBRARY_ENV = "LANCELET_JNI_LIBRARY"


def available() -> bool:
    """Whether the jar and the JNI library were built into this installation."""
    return JAR.is_file() and LIBRARY.is_file()


def jar_path() -> str:
    """The connector jar (for ``spark.jars`` / ``--jars``)."""
    if not available():
        raise NotFoundError(f"lancelet's Spark connector is not built into this installation "
                            f"(missing {JAR} or {LIBRARY}); run scripts/setup.sh with pyspark and a JDK present")
    return str(JAR)


def configure(builder: Any) -> Any:
    """Add the JVM connector to a ``SparkSession.Builder`` (before the session
    starts) and return the builder: the jar goes to ``spark.jars`` (kept
    with jars already set), and the JNI library is named for the driver
    (this process's environment, inherited by the JVM PySpark starts) and
    the executors (``spark.executorEnv``)."""
    jar = jar_path()
    existing = builder._options.get("spark.jars", "") if hasattr(builder, "_options") else ""
    jars = [j for j in existing.split(",") if j and j != jar] + [jar]
    os.environ[LIBRARY_ENV] = str(LIBRARY)
    return (builder.config("spark.jars", ",".join(jars))
            .config(f"spark.executorEnv.{LIBRARY_ENV}", str(LIBRARY)))
