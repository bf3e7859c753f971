"""What users pass as data, made into Arrow streams, and the other private
helpers several modules share (a leaf: it imports only pyarrow,
:mod:`lancelet._args` and :mod:`lancelet.exceptions`, so every module may
import it and it imports none of them)."""

from __future__ import annotations

import datetime
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

import pyarrow as pa

from lancelet import _args
from lancelet.exceptions import InvalidInputError

#: A path or URI, checked (see :func:`lancelet._args.uri`).
uri = _args.uri
#: pylance-style ``storage_options``, checked.
storage_options = _args.storage_options


def retry_args(conflict_retries: Any, retry_timeout: Any) -> Tuple[int, float]:
    """``(conflict_retries, retry_timeout in seconds)`` checked."""
    if isinstance(conflict_retries, bool) or not isinstance(conflict_retries, int) or conflict_retries < 0:
        raise InvalidInputError(f"conflict_retries must be a non-negative integer, got {conflict_retries!r}")
    if isinstance(retry_timeout, datetime.timedelta):
        seconds = retry_timeout.total_seconds()
    elif isinstance(retry_timeout, (int, float)) and not isinstance(retry_timeout, bool):
        seconds = float(retry_timeout)
    else:
        raise InvalidInputError(f"retry_timeout must be a datetime.timedelta, got {type(retry_timeout).__name__}")
    if not seconds >= 0:  # NaN too
        raise InvalidInputError(f"retry_timeout must not be negative, got {retry_timeout!r}")
    return min(conflict_retries, 2**32 - 1), seconds


_THIRTY_SECONDS = datetime.timedelta(seconds=30)


def commit_args(*, conflict_retries: Any = 10, retry_timeout: Any = _THIRTY_SECONDS,
                progress: Optional[Callable[..., Any]] = None, commit_message: Any = None,
                transaction_properties: Any = None) -> Dict[str, Any]:
    """The commit options every table operation takes, checked, in the one
    shape the native layer reads (``commit_args.rs``): re-runs after
    conflicts (``conflict_retries``, ``retry_timeout``), a progress callback
    (already made by :func:`lancelet._progress.progress_callback`), and what
    the transaction records (``transaction_properties``, and
    ``commit_message`` under pylance's ``__lance_commit_message`` key)."""
    retries, seconds = retry_args(conflict_retries, retry_timeout)
    if commit_message is not None and not isinstance(commit_message, str):
        raise InvalidInputError(f"commit_message must be a string, got {type(commit_message).__name__}")
    props: Dict[str, str] = {}
    if transaction_properties is not None:
        if not isinstance(transaction_properties, dict):
            raise InvalidInputError("transaction_properties must be a dict of strings, "
                                    f"got {type(transaction_properties).__name__}")
        for k, v in transaction_properties.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise InvalidInputError(f"transaction_properties must map strings to strings, got {k!r}: {v!r}")
            props[k] = v
    return {"conflict_retries": retries, "retry_timeout": seconds, "progress": progress,
            "commit_message": commit_message, "transaction_properties": props}


def fields_text(schema: pa.Schema) -> str:
    """``name: type, ...`` of a schema, for messages."""
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def checked_batches(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """``reader`` with each batch checked against its schema: a pyarrow
    reader made from batches (``RecordBatchReader.from_batches``) does not
    check them, and the Arrow C stream carries only the stream's schema, so
    a batch of other types would be read as the stream's types (a double
    taken for an integer) or fail in the importer."""
    schema = reader.schema

    def batches():
        for i, b in enumerate(reader, 1):
            if not b.schema.equals(schema):
                raise InvalidInputError(f"batch {i} of the stream does not have its schema: expected "
                                        f"({fields_text(schema)}), got ({fields_text(b.schema)})")
            yield b
    return pa.RecordBatchReader.from_batches(schema, batches())


def is_dataframe(obj: Any) -> bool:
    """Whether ``obj`` is a pandas DataFrame (without importing pandas for
    callers that never pass one)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        return False
    return isinstance(obj, pd.DataFrame)


def from_pandas(df: Any, schema: Optional[pa.Schema] = None, *, pandas_metadata: bool = True) -> pa.Table:
    """A DataFrame as a table (no index column). ``pandas_metadata=False``
    drops pandas' schema metadata (new columns must not bring it into a
    dataset's schema; a written DataFrame keeps it, as pylance's does)."""
    t = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    if pandas_metadata:
        return t
    md = {k: v for k, v in (t.schema.metadata or {}).items() if k != b"pandas"}
    return t.replace_schema_metadata(md or None)


def _is_batch_list(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and all(isinstance(b, pa.RecordBatch) for b in data)


def stream(data: Any, schema: Optional[pa.Schema] = None, convert_schema: Optional[pa.Schema] = None, *,
           pandas_metadata: bool = True) -> Any:
    """Any supported input as an object with ``__arrow_c_stream__`` (streamed,
    not materialized, when it already is a stream): a pyarrow Table,
    RecordBatch or RecordBatchReader, any Arrow stream, a pandas DataFrame,
    a pylance/pyarrow dataset or scanner (``to_table()``), a list of dicts
    (rows), a dict of columns, or an iterable of RecordBatches (which needs
    ``schema`` or ``convert_schema``). With ``schema``, the data is given
    that schema: names must match, types are cast (a mismatch is
    InvalidInputError naming the fields). ``convert_schema`` only guides the
    conversion of pandas / Python data. Anything else is a TypeError."""
    if schema is not None:
        _args.schema(schema)
    guide = schema or convert_schema
    with _args.input_errors("the data does not fit the schema given"):
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        elif is_dataframe(data):
            data = from_pandas(data, guide, pandas_metadata=pandas_metadata)
        elif hasattr(data, "__arrow_c_stream__"):
            pass
        elif hasattr(data, "to_table"):  # a pylance/pyarrow dataset or scanner
            data = data.to_table()
        elif isinstance(data, dict):
            data = pa.table(data, schema=guide)
        elif isinstance(data, list) and not _is_batch_list(data):
            data = pa.Table.from_pylist(data, schema=guide)
        elif isinstance(data, Iterable) and not isinstance(data, (str, bytes)):
            if guide is None:
                raise InvalidInputError("an iterator of batches needs its schema (schema=)")
            data = pa.RecordBatchReader.from_batches(guide, iter(data))
        else:
            raise TypeError(f"cannot write {type(data).__name__}: expected a pyarrow Table/RecordBatchReader, "
                            "a pandas DataFrame or an object with __arrow_c_stream__")
        if schema is None:
            return data
        have = _stream_schema(data)
        if have is None or have == schema:
            return data
        _check_names(have, schema)
        if isinstance(data, (pa.Table, pa.RecordBatchReader)):
            return data.cast(schema)
        return pa.RecordBatchReader.from_stream(data).cast(schema)


def _stream_schema(data: Any) -> Optional[pa.Schema]:
    s = getattr(data, "schema", None)
    return s if isinstance(s, pa.Schema) else None


def _check_names(have: pa.Schema, want: pa.Schema) -> None:
    """The data and ``schema=`` must name the same columns, in order."""
    if have.names == want.names:
        return
    only_data = [n for n in have.names if n not in want.names]
    only_schema = [n for n in want.names if n not in have.names]
    if not only_data and not only_schema:
        raise InvalidInputError(f"the data's columns {have.names} are not in the order of the schema given "
                                f"({want.names})")
    raise InvalidInputError(f"the schema given does not match the data: fields only in the data: {only_data}, "
                            f"fields only in the schema: {only_schema}")


def _tiledb_scalar(v: Any) -> Any:
    """Plain Python value from numpy scalars, datetimes and pyarrow scalars."""
    if isinstance(v, (str, bytes, int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, pa.Scalar):
        v = v.value if isinstance(v, pa.TimestampScalar) else v.as_py()
        return _tiledb_scalar(v)
    try:
        import numpy as np

        if isinstance(v, np.datetime64):
            return int(v.astype("int64"))
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.floating):
            return float(v)
        if isinstance(v, np.bytes_):
            return bytes(v)
        if isinstance(v, np.str_):
            return str(v)
    except ImportError:  # pragma: no cover - numpy ships with pyarrow users
        pass
    raise InvalidInputError(f"subarray bound {v!r} is not a number or string")


def tiledb_subarray(sub: Any, ndim: int) -> Optional[list]:
    """A TileDB read's ``subarray=`` (one ``(lo, hi)`` or list of them, or
    None, per dimension; a bare ``(lo, hi)`` for one dimension) as plain
    values, checked."""
    if sub is None:
        return None
    if not isinstance(sub, (list, tuple)):
        raise InvalidInputError("subarray must be a list with one entry per dimension")
    if ndim == 1 and len(sub) == 2 and not isinstance(sub[0], (list, tuple)) and sub[0] is not None:
        sub = [tuple(sub)]
    if len(sub) != ndim:
        raise InvalidInputError(f"subarray has {len(sub)} entries for {ndim} dimensions")
    out = []
    for entry in sub:
        if entry is None:
            out.append(None)
            continue
        ranges = [entry] if (isinstance(entry, tuple) and len(entry) == 2 and not isinstance(entry[0], (list, tuple))) else entry
        rs = []
        for r in ranges:
            if not isinstance(r, (list, tuple)) or len(r) != 2:
                raise InvalidInputError(f"subarray range {r!r} is not (lo, hi)")
            rs.append((_tiledb_scalar(r[0]), _tiledb_scalar(r[1])))
        out.append(rs)
    return out
