"""lancelet inside Spark (PySpark 4.x).

* ``register(spark)`` makes ``format("lancelet")`` available (it is also
  found automatically through the ``pyspark_lancelet`` package), see
  :mod:`lancelet.spark.source`; likewise ``format("lancelet_tiledb")``
  for TileDB arrays (:mod:`lancelet.spark.tiledb_source`, found
  automatically through ``pyspark_lancelet_tiledb``).
* Arrow-level helpers for ``mapInArrow`` / ``pandas_udf`` pipelines::

      tasks = lancelet.spark.fragments(uri)                     # one row per task
      df = tasks.mapInArrow(lancelet.spark.read_fragments(uri),
                            lancelet.spark.read_schema(uri))
      take = lancelet.spark.take_udf(uri, ["vec"])            # row id -> struct
      fw = lancelet.spark.write_fragments(uri, df.schema, mode="append")
      staged = df.mapInArrow(fw, fw.output_schema)
      lancelet.spark.commit(fw, staged)                       # one new version

* ``add_columns(uri, func, schema)``: new columns computed by a task per
  fragment, one ``Merge`` commit (:mod:`lancelet.spark.evolve`).
* ``merge_insert(df, uri, on, ...)`` / ``delete(uri, keys_df, on)``:
  upserts and deletes from a DataFrame, one commit
  (:mod:`lancelet.spark.merge`); ``df.writeStream.format("lancelet")``:
  one commit per micro-batch, exactly once (:mod:`lancelet.spark.stream`).
* ``compact_files(uri, **options)``: compaction with one Spark task per
  compaction task and one commit (:mod:`lancelet.spark.compact`).
* ``knn_join(df, uri, column, k, ...)``: every query row of a DataFrame
  with its k nearest dataset rows (:mod:`lancelet.spark.knn`).
"""

# No `from __future__ import annotations` here: pandas_udf reads the type
# hints of the function it wraps.

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

import lancelet
from lancelet.distributed import WritePlan, plan_write
from lancelet.exceptions import InvalidInputError, NotFoundError
from lancelet.spark.compact import compact_files
from lancelet.spark.evolve import add_columns
from lancelet.spark.jvm import configure as configure  # the JVM connector (lancelet.spark.jvm)
from lancelet.spark.knn import knn_join
from lancelet.spark.merge import delete, merge_insert
from lancelet.spark.source import (
    DEFAULT_ROWS_PER_PARTITION,
    FragmentSlice,
    LanceletDataSource,
    LanceOptions,
    plan_slices,
    read_slice,
    stage_batches,
)
from lancelet.spark.tiledb_source import LanceletTileDBDataSource
from lancelet.spark.types import cast_batch, lance_schema_for, spark_arrow_schema, spark_schema, spark_type

__all__ = [
    "register",
    "LanceletDataSource",
    "LanceletTileDBDataSource",
    "fragments",
    "read_fragments",
    "read_schema",
    "take_udf",
    "write_fragments",
    "commit",
    "compact_files",
    "FragmentWriter",
    "FRAGMENT_TASK_SCHEMA",
    "add_columns",
    "merge_insert",
    "delete",
    "knn_join",
]

#: Columns of the DataFrame :func:`fragments` returns.
FRAGMENT_TASK_SCHEMA = StructType([
    StructField("version", LongType(), False),
    StructField("fragment_id", LongType(), False),
    StructField("row_start", LongType(), False),
    StructField("row_end", LongType(), False),
])


def register(spark: SparkSession) -> None:
    """Register the ``lancelet`` and ``lancelet_tiledb`` data sources with
    this Spark session."""
    spark.dataSource.register(LanceletDataSource)
    spark.dataSource.register(LanceletTileDBDataSource)


def _spark(spark: Optional[SparkSession]) -> SparkSession:
    s = spark or SparkSession.getActiveSession()
    if s is None:
        raise InvalidInputError("no active SparkSession: pass spark=...")
    return s


def _open(uri: str, version: Any, storage_options: Optional[Dict[str, str]]) -> lancelet.Dataset:
    return lancelet.dataset(uri, version=version, storage_options=storage_options)


def read_schema(uri: str, version: Any = None, columns: Optional[Sequence[str]] = None,
                storage_options: Optional[Dict[str, str]] = None) -> StructType:
    """The Spark schema of the dataset (projected to ``columns``): the
    schema to give ``mapInArrow`` together with :func:`read_fragments`."""
    schema = _open(uri, version, storage_options).schema
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    return spark_schema(schema)


def fragments(uri: str, version: Any = None, spark: Optional[SparkSession] = None,
              rows_per_task: int = DEFAULT_ROWS_PER_PARTITION,
              storage_options: Optional[Dict[str, str]] = None) -> DataFrame:
    """A small DataFrame with one row per read task (a fragment, or a slice
    of a large one) of one version, resolved now: ``version``,
    ``fragment_id``, ``row_start``, ``row_end``. One Spark partition per row."""
    ds = _open(uri, version, storage_options)
    rows = [(s.version, s.fragment_id, s.start, s.end) for s in plan_slices(ds, int(rows_per_task))]
    # one slice per task row, without a shuffle to get there
    rdd = _spark(spark).sparkContext.parallelize(rows, max(len(rows), 1))
    return _spark(spark).createDataFrame(rdd, FRAGMENT_TASK_SCHEMA)


def read_fragments(uri: str, version: Any = None, columns: Optional[Sequence[str]] = None,
                   filter: Optional[str] = None, batch_size: Optional[int] = None,
                   storage_options: Optional[Dict[str, str]] = None
                   ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function: for every task row of :func:`fragments` it
    yields that slice's rows (``columns``, ``filter``) as Arrow batches of
    the schema :func:`read_schema` gives. ``version`` defaults to the one
    in each task row."""
    cols = list(columns) if columns is not None else None
    target = spark_arrow_schema(read_schema(uri, version, cols, storage_options))
    opts = LanceOptions(uri=uri, version=version, filter=filter, batch_size=batch_size,
                        storage_options=storage_options)

    def read(tasks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for t in tasks:
            for row in t.to_pylist():
                part = FragmentSlice(version if isinstance(version, int) else row["version"], row["fragment_id"],
                                     row["row_start"], row["row_end"])
                yield from read_slice(opts, part, cols or target.names, target, None)

    return read


def take_udf(uri: str, columns: Sequence[str], version: Any = None,
             storage_options: Optional[Dict[str, str]] = None):
    """A pandas UDF ``row_id -> struct<columns>`` that looks rows up by row
    id (``_rowid``: stable ids, else row addresses) in one version, pinned
    now. Null ids, and ids of rows that are deleted (or, with stable row
    ids, unknown) give a struct of nulls; a row address outside the
    dataset is an error, as in ``Dataset.take_row_ids``."""
    ds = _open(uri, version, storage_options)
    pinned = ds.version
    cols = list(columns)
    st = spark_type(pa.struct([ds.schema.field(c) for c in cols]))
    target = spark_arrow_schema(st)

    @pandas_udf(st)
    def take(row_ids: pd.Series) -> pd.DataFrame:
        from lancelet.spark.source import _open_cached

        d = _open_cached(uri, pinned, storage_options)
        ids = pa.array(row_ids, type=pa.int64(), from_pandas=True)
        valid = pc.fill_null(pc.greater_equal(ids, 0), False).to_numpy(zero_copy_only=False)
        want = pc.fill_null(ids, 0).to_numpy(zero_copy_only=False)[valid]
        stream, found = d._native.take_row_ids_found(want.tolist(), cols)
        table = pa.RecordBatchReader.from_stream(stream).read_all()
        hit = np.zeros(len(valid), dtype=bool)
        hit[valid] = np.asarray(found, dtype=bool)
        # row i of the result is the k-th found row, or null
        positions = pa.array(np.cumsum(hit) - 1, mask=~hit)
        aligned = table.take(positions).combine_chunks()
        batches = aligned.to_batches() or [pa.RecordBatch.from_pylist([], schema=aligned.schema)]
        out = pa.Table.from_batches([cast_batch(b, target) for b in batches], schema=target)
        return out.to_pandas()

    return take


class FragmentWriter:
    """A ``mapInArrow`` function that writes each task's rows as staged
    fragments of one :class:`~lancelet.distributed.WritePlan` and yields one
    row per fragment (column ``fragment``, binary). Commit them with
    :func:`commit`."""

    output_schema = StructType([StructField("fragment", BinaryType(), False)])

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        staged = stage_batches(self.plan, batches)
        if staged:
            yield pa.RecordBatch.from_arrays([pa.array(staged, pa.binary())], names=["fragment"])


def write_fragments(uri: str, schema: StructType, mode: str = "append", max_rows_per_file: int = 1024 * 1024,
                    data_storage_version: Optional[str] = None, vector_columns: Optional[Dict[str, int]] = None,
                    enable_stable_row_ids: bool = False,
                    storage_options: Optional[Dict[str, str]] = None) -> FragmentWriter:
    """Plan a distributed write of rows of Spark schema ``schema`` (checked
    against the dataset now) and return the ``mapInArrow`` function that
    writes them; see :class:`FragmentWriter`."""
    try:
        existing: Optional[pa.Schema] = lancelet.dataset(uri, storage_options=storage_options).schema
    except NotFoundError:
        existing = None
    target = lance_schema_for(schema, existing, vector_columns, append=(mode == "append"))
    return FragmentWriter(plan_write(uri, target, mode=mode, data_storage_version=data_storage_version,
                                     max_rows_per_file=max_rows_per_file,
                                     enable_stable_row_ids=enable_stable_row_ids, storage_options=storage_options))


def commit(writer: FragmentWriter, staged: DataFrame) -> lancelet.Dataset:
    """Collect the staged fragments (the ``mapInArrow`` output of
    ``writer``) and commit them as one new version. If collecting fails,
    the job's files are removed and nothing is committed."""
    plan = writer.plan if isinstance(writer, FragmentWriter) else writer
    try:
        frags: List[bytes] = [bytes(r["fragment"]) for r in staged.select("fragment").collect()]
    except BaseException:
        plan.abort()
        raise
    return plan.commit(frags)
