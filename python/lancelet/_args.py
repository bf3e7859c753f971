"""Checking the public API's arguments, and keeping errors typed.

The rules (``docs/errors.md``): an argument of the wrong Python type is a
``TypeError`` (Python's convention), a NUL byte in a path a ``ValueError``
(as ``open()`` does), an integer beyond 64 bits an ``OverflowError``; a
value of the right type that is wrong (negative, unknown, inconsistent with
the data) is :class:`InvalidInputError`. Errors pyarrow raises on our behalf
(casting input data, reading a stream lancelet produced) are turned into
lancelet exceptions here, so no bare pyarrow error reaches the caller.
"""

from __future__ import annotations

import contextlib
import operator
import os
from typing import Any, Dict, Iterator, List, Optional

import pyarrow as pa

from lancelet import _native, exceptions
from lancelet.exceptions import InvalidInputError


def type_name(v: Any) -> str:
    return type(v).__name__


def uri(path: Any) -> str:
    """A path or URI: ``str`` or ``os.PathLike``."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"expected a path or URI string, got {type_name(path)}")
    out = os.fspath(path)
    if not isinstance(out, str):
        raise TypeError(f"expected a str path, got {type_name(out)}")
    if "\x00" in out:
        raise ValueError(f"embedded null byte in path {out!r}")
    return out


def string(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{what} must be a str, got {type_name(v)}")
    return v


def optional_string(v: Any, what: str) -> Optional[str]:
    return None if v is None else string(v, what)


def integer(v: Any, what: str) -> int:
    """An int (or anything with ``__index__``, e.g. numpy integers); bools
    and floats are refused."""
    if isinstance(v, bool):
        raise TypeError(f"{what} must be an integer, got bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type_name(v)}") from None


def non_negative(what: str, v: Any) -> Optional[int]:
    if v is None:
        return None
    n = integer(v, what)
    if n < 0:
        raise InvalidInputError(f"{what} must be non-negative, got {n}")
    return n


def positive(what: str, v: Any) -> int:
    n = integer(v, what)
    if n <= 0:
        raise InvalidInputError(f"{what} must be positive, got {n}")
    return n


def int_list(values: Any, what: str) -> List[int]:
    """Non-negative integers from a list, array or any iterable of ints."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pylist()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{what} must be a sequence of integers, got {type_name(values)}")
    out = [integer(v, what) for v in values]
    bad = next((v for v in out if v < 0), None)
    if bad is not None:
        raise InvalidInputError(f"{what} must be non-negative, got {bad}")
    return out


def columns(cols: Any) -> Optional[List[str]]:
    """Column names: a list (or other iterable) of str, or None for all."""
    if cols is None:
        return None
    if isinstance(cols, (str, bytes)):
        raise TypeError("columns must be a list of names, not a single string")
    if isinstance(cols, dict):
        raise exceptions.UnsupportedError("column expressions (a dict of name -> SQL) are not implemented yet")
    if not hasattr(cols, "__iter__"):
        raise TypeError(f"columns must be a list of names, got {type_name(cols)}")
    out = list(cols)
    for c in out:
        if not isinstance(c, str):
            raise TypeError(f"column names must be str, got {type_name(c)} {c!r}")
    return out


def storage_options(options: Any) -> Optional[Dict[str, str]]:
    """``storage_options``: string keys; values are sent as strings, booleans
    as ``"true"``/``"false"``, as pylance does."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise TypeError(f"storage_options must be a dict of strings, got {type_name(options)}")
    out = {}
    for k, v in options.items():
        if not isinstance(k, str):
            raise TypeError(f"storage_options keys must be strings, got {k!r}")
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def schema(s: Any, what: str = "schema") -> pa.Schema:
    if not isinstance(s, pa.Schema):
        raise TypeError(f"{what} must be a pyarrow.Schema, got {type_name(s)}")
    return s


@contextlib.contextmanager
def input_errors(what: str) -> Iterator[None]:
    """pyarrow's errors while converting the caller's data (a cast to the
    given schema, a DataFrame or list that does not fit it) as
    InvalidInputError naming ``what``."""
    try:
        yield
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, pa.ArrowKeyError) as e:
        raise InvalidInputError(f"{what}: {e}") from e


_PREFIXES = [
    ("not found:", "NotFoundError"),
    ("already exists:", "AlreadyExistsError"),
    ("corrupt ", "CorruptFileError"),
    ("unsupported", "UnsupportedError"),
    ("invalid input:", "InvalidInputError"),
    ("commit conflict:", "CommitConflictError"),
    ("I/O error", "LanceletIOError"),
    ("internal error", "InternalError"),
]


def retyped(e: Exception) -> Exception:
    """A lancelet error that crossed the Arrow C stream (pyarrow wraps it as
    ``External error: <message>``) turned back into its lancelet class, with
    the ``__cause__`` the core kept for it (the stream carries only text);
    any other error while reading a lancelet stream is unexpected, a bug:
    InternalError."""
    if isinstance(e, exceptions.LanceletError):
        return e
    msg = str(e)
    if msg.startswith("External error: "):
        msg = msg[len("External error: "):]
    for prefix, name in _PREFIXES:
        if msg.startswith(prefix):
            err = getattr(exceptions, name)(msg)
            err.__cause__ = _native._stream_error_cause(msg)
            return err
    return exceptions.InternalError(f"internal error (a bug in lancelet, please report it): reading a lancelet stream: {msg}")


def raise_retyped(e: Exception) -> None:
    """Raise ``retyped(e)``: from the cause the core kept, else from the
    stream's own error ``e``."""
    err = retyped(e)
    raise err from (err.__cause__ if err.__cause__ is not None else e)


def typed_batches(reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
    """The reader's batches; errors met while streaming raised as lancelet
    exceptions."""
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowException as e:
            raise_retyped(e)
        yield batch


def typed_reader(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """A reader over the same batches (no copies) whose errors are lancelet
    exceptions (pyarrow re-raises a Python generator's exception as is)."""
    return pa.RecordBatchReader.from_batches(reader.schema, typed_batches(reader))


def read_all(reader: pa.RecordBatchReader) -> pa.Table:
    """Read a lancelet stream into a table, errors typed."""
    try:
        return reader.read_all()
    except pa.ArrowException as e:
        raise_retyped(e)
