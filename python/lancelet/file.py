"""Reading and writing Lance data files (``.lance``).

>>> import pyarrow as pa, lancelet.file as lf
>>> lf.write_table(pa.table({"x": [1, 2, 3]}), "/tmp/x.lance")
>>> lf.LanceFileReader("/tmp/x.lance").read().to_pylist()
[{'x': 1}, {'x': 2}, {'x': 3}]
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Optional, Sequence, Union

import pyarrow as pa

from lancelet import _args, _inputs, _native
from lancelet.exceptions import InvalidInputError

__all__ = ["LanceFileReader", "LanceFileWriter", "read_table", "write_table"]

PathLike = Union[str, "os.PathLike[str]"]


_columns = _args.columns


class LanceFileReader:
    """A Lance data file opened for reading.

    ``path_or_uri`` is a local path, ``file://``, ``s3://`` or ``memory://``
    URI; ``storage_options`` configure the object store (as in pylance:
    ``aws_access_key_id``, ``aws_endpoint``, ``aws_region``, ``allow_http``, ...).
    """

    def __init__(self, path_or_uri: PathLike, storage_options: Optional[Dict[str, str]] = None) -> None:
        self._path = _inputs.uri(path_or_uri)
        self._native = _native.FileReader(self._path, _inputs.storage_options(storage_options))
        self._schema = pa.schema(self._native.schema())

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the file."""
        return self._schema

    @property
    def num_rows(self) -> int:
        """Number of rows in the file."""
        return self._native.num_rows

    @property
    def version(self) -> str:
        """The file format version: ``"0.1"``, ``"2.0"``, ``"2.1"`` or ``"2.2"``."""
        return self._native.version

    @property
    def path(self) -> str:
        return self._path

    def read(
        self,
        columns: Optional[Sequence[str]] = None,
        offset: int = 0,
        limit: Optional[int] = None,
    ) -> pa.Table:
        """Rows ``offset`` to ``offset + limit`` (to the end if ``limit`` is
        None) of the given columns (all if None)."""
        offset = _args.non_negative("offset", offset)
        limit = _args.non_negative("limit", limit)
        stream = self._native.read(_columns(columns), offset, limit)
        return _args.read_all(pa.RecordBatchReader.from_stream(stream))

    def take(self, indices: Iterable[int], columns: Optional[Sequence[str]] = None) -> pa.Table:
        """The rows at ``indices`` (any order, repeats allowed)."""
        idx = _args.int_list(indices, "row indices")
        stream = self._native.take(idx, _columns(columns))
        return _args.read_all(pa.RecordBatchReader.from_stream(stream))

    def to_batches(
        self, columns: Optional[Sequence[str]] = None, batch_size: Optional[int] = None
    ) -> pa.RecordBatchReader:
        """Stream the file as record batches of at most ``batch_size`` rows
        (default 8192), decoding one batch at a time."""
        bs = 8192 if batch_size is None else _args.positive("batch_size", batch_size)
        return _args.typed_reader(self._native_reader(columns, bs))

    def _native_reader(self, columns: Optional[Sequence[str]] = None, batch_size: int = 8192) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_stream(self._native.read(_columns(columns), 0, None, batch_size))

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._native_reader().__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return f"LanceFileReader({self._path!r}, version={self.version}, rows={self.num_rows})"


def _as_reader(data: Any, schema: Optional[pa.Schema] = None) -> pa.RecordBatchReader:
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatchReader.from_batches(data.schema, [data])
    if isinstance(data, pa.Table):
        return pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    if hasattr(data, "__arrow_c_array__"):
        batch = pa.record_batch(data)
        return pa.RecordBatchReader.from_batches(batch.schema, [batch])
    try:
        import pandas as pd

        if isinstance(data, pd.DataFrame):
            with _args.input_errors("the DataFrame does not fit the schema"):
                t = pa.Table.from_pandas(data, schema=schema, preserve_index=False)
            return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(
        f"cannot write {type(data).__name__}: expected a pyarrow Table, RecordBatch, "
        "RecordBatchReader, pandas DataFrame or an object with __arrow_c_stream__"
    )




def read_table(path: PathLike, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """Read a whole Lance data file into a table."""
    return LanceFileReader(path).read(columns=columns)


class LanceFileWriter:
    """Writes a Lance data file.

    ``schema`` may be omitted; it is then taken from the first write. The
    file is written when the writer is closed (or the ``with`` block ends
    without an exception); until then nothing appears at ``path_or_uri``.

    A failed :meth:`write` (data that does not fit the schema, a bad batch
    in the middle of a stream, an encoding or storage error) abandons the
    writer: the rows of that call may be partly written, so the partial
    file is removed at once and every later ``write`` or ``close`` raises
    :class:`~lancelet.exceptions.InvalidInputError` naming the first
    failure (chained as its ``__cause__``). No file is left at the path.
    """

    def __init__(self, path_or_uri: PathLike, schema: Optional[pa.Schema] = None, version: str = "2.2",
                 storage_options: Optional[Dict[str, str]] = None) -> None:
        self._path = _inputs.uri(path_or_uri)
        self._version = _args.string(version, "version")
        self._storage_options = _inputs.storage_options(storage_options)
        self._native = None
        self._closed = False
        self._schema = None
        #: The exception of the first failed call, once the writer was abandoned.
        self._failure: Optional[BaseException] = None
        if schema is not None:
            self._open(schema)

    def _open(self, schema: pa.Schema) -> None:
        _args.schema(schema)
        self._native = _native.FileWriter(self._path, schema, self._version, self._storage_options)
        self._schema = schema

    @property
    def schema(self) -> Optional[pa.Schema]:
        return self._schema

    def _check_usable(self) -> None:
        first = self._failure
        if first is not None:
            raise InvalidInputError(f"the writer of {self._path} failed earlier and was abandoned (its partial file "
                                    f"removed); first failure: {type(first).__name__}: {first}") from first
        if self._closed:
            raise InvalidInputError(f"writer for {self._path} is already closed")

    def _abandon(self, failure: BaseException) -> None:
        """Remember the first failure and drop the partial file."""
        if self._failure is None:
            self._failure = failure
        native, self._native = self._native, None
        if native is not None:
            native.abort(f"{type(failure).__name__}: {failure}")

    def write(self, data: Any) -> None:
        """Append a Table, RecordBatch, RecordBatchReader, pandas DataFrame or
        any object with ``__arrow_c_stream__``. Each batch's schema must equal
        the writer's (names, types, nullability). A failure abandons the
        writer (see the class docs)."""
        self._check_usable()
        try:
            reader = _as_reader(data, self._schema)
            if isinstance(data, pa.RecordBatchReader):
                reader = _inputs.checked_batches(reader)
            if self._native is None:
                self._open(reader.schema)
            self._native.write(reader)
        except BaseException as e:
            self._abandon(e)
            raise

    # pylance's spelling
    write_batch = write

    def close(self) -> Optional[int]:
        """Write the file; returns the number of rows written, as pylance
        14's does (None when already closed). Raises, writing nothing, if a
        write failed before."""
        if self._failure is None and self._closed:
            return None
        self._check_usable()
        if self._native is None:
            raise InvalidInputError(f"nothing written to {self._path} and no schema given")
        rows = self._native.num_rows
        try:
            self._native.close()
        except BaseException as e:
            self._abandon(e)
            raise
        self._closed = True
        return rows

    def __enter__(self) -> "LanceFileWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        elif self._failure is None and not self._closed:
            # Abandon: nothing was stored yet, so the path stays untouched.
            self._abandon(exc)


def write_table(table: Any, path: PathLike, version: str = "2.2") -> int:
    """Write ``table`` (anything :class:`LanceFileWriter.write` accepts) as one
    Lance data file; returns the file size in bytes (0 when not local)."""
    reader = _as_reader(table)
    with LanceFileWriter(path, reader.schema, version=version) as w:
        w.write(reader)
    return os.path.getsize(path) if os.path.exists(_inputs.uri(path)) else 0
