"""A k-nearest-neighbour join: for every row of a DataFrame of query
vectors, its ``k`` nearest rows of a lancelet dataset.

>>> joined = lancelet.spark.knn_join(queries, uri, "emb", k=10, columns=["id", "title"])

How it runs: the dataset's version is resolved once on the driver (every
task searches the same version), and the queries go through ``mapInArrow``:
each Arrow batch of query rows is one batch ``nearest=`` search (a 2-D
query) through a dataset handle the Python worker keeps open, so the vector
index (when the column has one and ``use_index``) is opened once per worker
process and version, not once per query or batch. The search takes every
``nearest=`` option (``metric``, ``nprobes``, ``refine_factor``, ``ef``...)
and ``filter``/``prefilter`` as :meth:`lancelet.Dataset.to_table` does,
with the same results row for row.

The output has the query DataFrame's columns, then the dataset's
``columns`` (default: every column but the searched vector column), then
``_distance``; a query with fewer than ``k`` matches (a filter) yields
fewer rows, and a row whose query vector is null yields none (an inner
join). Output column names must not clash: rename the query's columns, or
pass ``columns=``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import FloatType, StructField, StructType

import lancelet
from lancelet._nearest import NEAREST_KEYS
from lancelet.exceptions import InvalidInputError
from lancelet.spark.source import _open_cached
from lancelet.spark.types import spark_arrow_schema, spark_schema

__all__ = ["knn_join"]

#: The distance column of the output.
DISTANCE = "_distance"


def _query_matrix(col: pa.Array, dim: int, where: str) -> tuple:
    """``(float32 rows (n, dim) of the valid queries, their row indices)``."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    valid = np.flatnonzero(col.is_valid().to_numpy(zero_copy_only=False)) if col.null_count else np.arange(len(col))
    vals = col.take(pa.array(valid, pa.int64())) if col.null_count else col
    if len(vals) == 0:
        return np.zeros((0, dim), np.float32), valid
    lens = vals.value_lengths().to_numpy(zero_copy_only=False) if not pa.types.is_fixed_size_list(vals.type) \
        else np.full(len(vals), vals.type.list_size)
    bad = np.flatnonzero(lens != dim)
    if len(bad):
        raise InvalidInputError(f"query column {where!r}: row {int(valid[bad[0]])} of a batch has {int(lens[bad[0]])} "
                                f"values; the dataset's vectors have {dim}")
    flat = vals.flatten()
    if flat.null_count:
        raise InvalidInputError(f"query column {where!r}: a query vector holds a null value")
    return flat.to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(vals), dim), valid


def knn_join(df: DataFrame, uri: str, column: str, k: int, *, query_column: Optional[str] = None,
             columns: Optional[Sequence[str]] = None, filter: Optional[str] = None, prefilter: bool = False,
             version: Any = None, storage_options: Optional[Dict[str, str]] = None,
             **nearest: Any) -> DataFrame:
    """Join every row of ``df`` with its ``k`` nearest rows of the dataset
    at ``uri`` by the vector ``column``.

    ``query_column`` is ``df``'s column of query vectors (an array of
    numbers of the dataset's dimension; default: ``column``). ``columns``
    are the dataset columns to return (default: all but ``column``).
    ``filter``/``prefilter`` and the keyword options of ``nearest=``
    (``metric``, ``nprobes``, ``minimum_nprobes``, ``maximum_nprobes``,
    ``refine_factor``, ``ef``, ``use_index``, ``distance_range``...) mean
    what they mean in :meth:`lancelet.Dataset.to_table`. Bad arguments
    raise :class:`~lancelet.exceptions.InvalidInputError` (or pylance's
    ``nearest=`` errors) on the driver, before any task runs."""
    unknown = sorted(set(nearest) - set(NEAREST_KEYS) - {"column", "q", "k"})
    if unknown or "q" in nearest or "column" in nearest or "k" in nearest:
        bad = unknown[0] if unknown else next(x for x in ("q", "column", "k") if x in nearest)
        raise InvalidInputError(f"knn_join() got an unexpected keyword argument {bad!r}")
    ds = lancelet.dataset(uri, version=version, storage_options=storage_options)
    pinned = ds.version
    schema = ds.schema
    if column not in schema.names:
        raise InvalidInputError(f"knn_join: the dataset at {uri} has no column {column!r} (it has {schema.names})")
    vt = schema.field(column).type
    if not pa.types.is_fixed_size_list(vt):
        raise InvalidInputError(f"knn_join: column {column!r} is {vt}, not a fixed-size list of numbers")
    dim = vt.list_size
    qcol = query_column or column
    if qcol not in df.columns:
        raise InvalidInputError(f"knn_join: the query DataFrame has no column {qcol!r} (it has {df.columns}); "
                                "pass query_column=")
    out_cols: List[str] = list(columns) if columns is not None else [n for n in schema.names if n != column]
    missing = [c for c in out_cols if c not in schema.names]
    if missing:
        raise InvalidInputError(f"knn_join: the dataset has no column {missing[0]!r} (it has {schema.names})")
    clash = [c for c in out_cols + [DISTANCE] if c in df.columns]
    if clash:
        raise InvalidInputError(f"knn_join: output column {clash[0]!r} is both a query column and a dataset column; "
                                "rename it in the query DataFrame or leave it out with columns=")
    if int(k) <= 0:
        raise InvalidInputError(f"knn_join: k must be > 0, got {k}")
    # pylance's own checks of the nearest options, and of the filter, now
    # (on one query of zeros) rather than in a task
    probe = dict(nearest, column=column, q=np.zeros(dim, np.float32), k=int(k))
    ds.scanner(columns=out_cols, nearest=probe, filter=filter, prefilter=prefilter).explain_plan()
    found = spark_schema(pa.schema([schema.field(c) for c in out_cols]))
    out_schema = StructType(list(df.schema.fields) + list(found.fields) + [StructField(DISTANCE, FloatType(), True)])
    target = spark_arrow_schema(out_schema)
    opts = dict(nearest)
    k = int(k)

    def join(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        handle = _open_cached(uri, pinned, storage_options)
        for b in batches:
            q, rows = _query_matrix(b.column(b.schema.get_field_index(qcol)), dim, qcol)
            if len(rows) == 0:
                continue
            # a list of rows is a batch query: one search, `query_index` says whose row
            res = handle.to_table(columns=out_cols + [DISTANCE], nearest=dict(opts, column=column, q=list(q), k=k),
                                  filter=filter, prefilter=prefilter)
            if res.num_rows == 0:
                continue
            left = b.take(pa.array(rows[res.column("query_index").to_numpy()], pa.int64()))
            arrays = list(left.columns) + [res.column(c) for c in out_cols] + [res.column(DISTANCE)]
            out = pa.Table.from_arrays(arrays, names=list(left.schema.names) + out_cols + [DISTANCE])
            yield from out.cast(target, safe=False).to_batches()

    return df.mapInArrow(join, out_schema)
