"""``add_columns`` as a Spark job: one ``mapInArrow`` task per fragment,
one commit on the driver.

>>> ds = lancelet.spark.add_columns(uri, embed, pa.schema([("emb", pa.list_(pa.float32(), 384))]),
...                                 read_columns=["text"])

The driver plans a :class:`~lancelet.distributed.AddColumnsPlan` (checked
before any task runs), every task computes its fragment's new columns with
``func`` and writes them as one data file (named with the job's prefix),
and the driver collects the staged fragments and commits a single
``Merge``. If the job fails, nothing is committed and the job is aborted:
every file it wrote is removed (a task still running then removes its own
files when it finishes).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Optional, Sequence

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

import lancelet
from lancelet.distributed import AddColumnsPlan, plan_add_columns
from lancelet.exceptions import InvalidInputError

__all__ = ["add_columns"]

_TASKS = StructType([StructField("fragment_id", LongType(), False)])
_STAGED = StructType([StructField("fragment", BinaryType(), False)])


def _task(plan: AddColumnsPlan, func: Callable[[pa.RecordBatch], Any]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(tasks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for t in tasks:
            for fid in t.column("fragment_id").to_pylist():
                staged = plan.write(fid, func)
                yield pa.RecordBatch.from_arrays([pa.array([staged], pa.binary())], names=["fragment"])
    return run


def add_columns(uri: str, func: Callable[[pa.RecordBatch], Any], schema: pa.Schema,
                read_columns: Optional[Sequence[str]] = None, *, spark: Optional[SparkSession] = None,
                storage_options: Optional[Dict[str, str]] = None, batch_size: Optional[int] = None) -> lancelet.Dataset:
    """Add the columns of ``schema``, computed by ``func`` (a picklable
    ``fn(pa.RecordBatch) -> pa.RecordBatch | pandas.DataFrame`` of
    ``read_columns`` of the live rows, ``batch_size`` rows at a time), to
    the latest version of the dataset at ``uri`` with one Spark task per
    fragment; returns the new version. A failed job commits nothing and
    leaves no files behind."""
    if not callable(func):
        raise InvalidInputError(f"func must be callable, got {type(func).__name__}")
    s = spark or SparkSession.getActiveSession()
    if s is None:
        raise InvalidInputError("no active SparkSession: pass spark=...")
    plan = plan_add_columns(uri, schema, read_columns, storage_options, batch_size=batch_size)
    ids = list(plan.fragment_ids)
    try:
        rdd = s.sparkContext.parallelize([(i,) for i in ids], max(len(ids), 1))
        staged_df = s.createDataFrame(rdd, _TASKS).mapInArrow(_task(plan, func), _STAGED)
        staged = [bytes(r["fragment"]) for r in staged_df.collect()]
    except BaseException:
        plan.abort()
        raise
    try:
        return plan.commit(staged)
    except BaseException:
        plan.abort()
        raise
