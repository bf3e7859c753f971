"""Schema evolution behind ``Dataset.add_columns``, ``drop_columns``,
``alter_columns`` and ``merge`` (pylance's names and arguments).

Each call commits one new version (a ``Merge`` or ``Project`` transaction,
as pylance 14 writes them) read at the dataset object's version, and moves
the object to it. See ``docs/architecture.md`` ("Schema evolution").
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional

import pyarrow as pa

from lancelet import _inputs, _native
from lancelet._progress import progress_callback
from lancelet.exceptions import InvalidInputError

__all__ = ["add_columns", "drop_columns", "alter_columns", "merge", "udf_caller"]

_ALTER_KEYS = {"path", "name", "nullable", "data_type"}


def _as_table(result: Any) -> pa.Table:
    """What a UDF returned, as a table (RecordBatch, Table or DataFrame)."""
    if isinstance(result, pa.RecordBatch):
        return pa.Table.from_batches([result])
    if isinstance(result, pa.Table):
        return result
    if _inputs.is_dataframe(result):
        return _inputs.from_pandas(result, pandas_metadata=False)
    raise InvalidInputError(f"the function returned a {type(result).__name__}; expected a pyarrow RecordBatch "
                            "(or Table) or a pandas DataFrame")


def udf_caller(func: Callable[[pa.RecordBatch], Any]) -> Callable[[Any], pa.Table]:
    """Wrap ``func`` for the core: it receives an Arrow stream of one batch
    and returns the function's result as a table."""
    def call(stream: Any) -> pa.Table:
        batch = pa.RecordBatchReader.from_stream(stream).read_next_batch()
        return _as_table(func(batch))
    return call


def _output_schema(ds: Any, func: Any, read_columns: Optional[List[str]]) -> pa.Schema:
    """The schema of the function's result: its ``output_schema`` attribute
    when it has one (pylance's ``batch_udf``), else the result on a
    one-row sample (as pylance does)."""
    declared = getattr(func, "output_schema", None)
    if isinstance(declared, pa.Schema):
        return declared
    cols, with_id, with_addr = None, False, False
    if read_columns is not None:
        cols = [c for c in read_columns if c not in ("_rowid", "_rowaddr") or c in ds.schema.names]
        with_id = "_rowid" in read_columns and "_rowid" not in ds.schema.names
        with_addr = "_rowaddr" in read_columns and "_rowaddr" not in ds.schema.names
    sample = next(iter(ds.to_batches(columns=cols, limit=1, with_row_id=with_id, with_row_address=with_addr)), None)
    if sample is None:
        raise InvalidInputError("cannot learn the new columns' schema from a dataset without rows: "
                                "give the function an `output_schema` attribute (a pyarrow.Schema)")
    return _as_table(func(sample)).schema


def add_columns(ds: Any, transforms: Any, read_columns: Optional[List[str]] = None,
                reader_schema: Optional[pa.Schema] = None, batch_size: Optional[int] = None,
                progress: Any = None) -> Any:
    """See :meth:`lancelet.Dataset.add_columns`; returns the new native dataset."""
    if batch_size is not None and int(batch_size) <= 0:
        raise InvalidInputError(f"batch_size must be positive, got {batch_size}")
    bs = None if batch_size is None else int(batch_size)
    if read_columns is not None:
        if isinstance(read_columns, str):
            raise TypeError("read_columns must be a list of column names, not a string")
        read_columns = [str(c) for c in read_columns]
    commit = _inputs.commit_args(progress=progress_callback(progress))
    if isinstance(transforms, pa.Field):
        transforms = [transforms]
    if isinstance(transforms, list) and transforms and all(isinstance(f, pa.Field) for f in transforms):
        transforms = pa.schema(transforms)
    if isinstance(transforms, pa.Schema):
        return _native.add_null_columns(ds._native, transforms, commit)
    if isinstance(transforms, dict):
        for k, v in transforms.items():
            if not isinstance(k, str):
                raise TypeError(f"column names must be strings, got {type(k).__name__}")
            if not isinstance(v, str):
                raise TypeError(f"column expressions must be SQL strings, got {type(v).__name__} for {k!r}")
        return _native.add_columns_sql(ds._native, list(transforms.items()), bs, commit)
    if callable(transforms) and not hasattr(transforms, "__arrow_c_stream__") and not isinstance(
            transforms, (pa.Table, pa.RecordBatchReader)):
        # pylance's BatchUDF (from lance.batch_udf) wraps the function
        func = transforms.func if type(transforms).__name__ == "BatchUDF" else transforms
        schema = _output_schema(ds, transforms, read_columns)
        return _native.add_columns_udf(ds._native, udf_caller(func), schema, read_columns, bs, commit)
    return _native.add_columns_stream(ds._native, _inputs.stream(transforms, reader_schema, pandas_metadata=False), bs,
                                      commit)


def drop_columns(ds: Any, columns: Any) -> Any:
    """See :meth:`lancelet.Dataset.drop_columns`."""
    if isinstance(columns, str) or not isinstance(columns, Iterable):
        raise TypeError(f"columns must be a list of column names, not {type(columns).__name__}")
    names = list(columns)
    for c in names:
        if not isinstance(c, str):
            raise TypeError(f"column names must be strings, got {type(c).__name__}")
    return _native.drop_columns(ds._native, names, _inputs.commit_args())


def alter_columns(ds: Any, alterations: Iterable[Dict[str, Any]]) -> Any:
    """See :meth:`lancelet.Dataset.alter_columns`."""
    rows = []
    for a in alterations:
        if not isinstance(a, dict):
            raise TypeError(f"each alteration must be a dict, got {type(a).__name__}")
        unknown = set(a) - _ALTER_KEYS
        if unknown:
            raise InvalidInputError(f"unknown alteration key(s) {sorted(unknown)} (allowed: path, name, nullable, data_type)")
        path = a.get("path")
        if not isinstance(path, str):
            raise InvalidInputError(f"each alteration needs a 'path' string, got {path!r}")
        name, nullable, dt = a.get("name"), a.get("nullable"), a.get("data_type")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"'name' of {path!r} must be a string")
        if nullable is not None and not isinstance(nullable, bool):
            raise TypeError(f"'nullable' of {path!r} must be a bool")
        if dt is not None and not isinstance(dt, pa.DataType):
            raise TypeError(f"'data_type' of {path!r} must be a pyarrow.DataType")
        rows.append((path, name, nullable, None if dt is None else pa.schema([pa.field("t", dt)])))
    return _native.alter_columns(ds._native, rows, _inputs.commit_args())


def merge(ds: Any, data: Any, left_on: str, right_on: Optional[str] = None, schema: Optional[pa.Schema] = None) -> Any:
    """See :meth:`lancelet.Dataset.merge`."""
    if not isinstance(left_on, str):
        raise TypeError("left_on must be a column name")
    right_on = left_on if right_on is None else right_on
    if not isinstance(right_on, str):
        raise TypeError("right_on must be a column name")
    return _native.merge(ds._native, _inputs.stream(data, schema, pandas_metadata=False), left_on, right_on,
                         _inputs.commit_args())
