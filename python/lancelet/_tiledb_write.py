"""Writing TileDB arrays (format version 22): ``create_array``, ``write``
and ``delete``, re-exported by :mod:`lancelet.tiledb`.

This module only converts arguments: schema objects become plain dicts
whose domains, tile extents and fill values are already the stored bytes
(numpy does the casting), data becomes an Arrow stream. The Rust core
serializes the schema, orders, tiles, filters and commits the cells.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pyarrow as pa

import lancelet.tiledb as _t
from lancelet import _native
from lancelet.exceptions import InvalidInputError, UnsupportedError

__all__ = ["create_array", "write", "delete"]

_NP_TYPES = {
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "FLOAT32": np.float32, "FLOAT64": np.float64, "BOOL": np.uint8,
    "DATETIME_SEC": np.int64, "DATETIME_MS": np.int64, "DATETIME_US": np.int64, "DATETIME_NS": np.int64,
    "CHAR": np.int8, "STRING_ASCII": np.uint8, "STRING_UTF8": np.uint8, "BLOB": np.uint8,
}
_UNITS = {"s": "DATETIME_SEC", "ms": "DATETIME_MS", "us": "DATETIME_US", "ns": "DATETIME_NS"}
_PA_NAMES = {
    pa.int8(): "INT8", pa.int16(): "INT16", pa.int32(): "INT32", pa.int64(): "INT64",
    pa.uint8(): "UINT8", pa.uint16(): "UINT16", pa.uint32(): "UINT32", pa.uint64(): "UINT64",
    pa.float32(): "FLOAT32", pa.float64(): "FLOAT64", pa.bool_(): "BOOL",
}


def _type_of(dtype: Any) -> tuple:
    """(TileDB type name, values per cell or None for var-sized)."""
    if isinstance(dtype, str):
        if dtype in _NP_TYPES:  # a TileDB type name, as schemas read back carry
            return dtype, (None if dtype in ("STRING_ASCII", "STRING_UTF8", "BLOB") else 1)
        low = dtype.lower()
        if low == "ascii":
            return "STRING_ASCII", None
        if low == "blob":
            return "BLOB", None
        if low in ("str", "string", "utf8", "unicode"):
            return "STRING_UTF8", None
        if low == "bytes":
            return "CHAR", None
    if dtype is str:
        return "STRING_UTF8", None
    if dtype is bytes:
        return "CHAR", None
    if isinstance(dtype, pa.DataType):
        if dtype in _PA_NAMES:
            return _PA_NAMES[dtype], 1
        if pa.types.is_timestamp(dtype):
            return _UNITS[dtype.unit], 1
        if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
            return "STRING_UTF8", None
        if pa.types.is_fixed_size_binary(dtype):
            return "CHAR", dtype.byte_width
        if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
            return "CHAR", None
        if pa.types.is_fixed_size_list(dtype):
            inner, n = _type_of(dtype.value_type)
            if n != 1:
                raise InvalidInputError(f"fixed-size lists of {dtype.value_type} are not a TileDB type")
            return inner, dtype.list_size
        if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            inner, n = _type_of(dtype.value_type)
            if n != 1:
                raise InvalidInputError(f"lists of {dtype.value_type} are not a TileDB type")
            return inner, None
        raise InvalidInputError(f"no TileDB type for {dtype}")
    try:
        nd = np.dtype(dtype)
    except TypeError as e:
        raise InvalidInputError(f"no TileDB type for {dtype!r}") from e
    if nd.kind == "M":
        unit = np.datetime_data(nd)[0]
        if unit not in _UNITS:
            raise UnsupportedError(f"datetime unit {unit!r} (lancelet writes s, ms, us, ns)")
        return _UNITS[unit], 1
    if nd.kind == "U":
        return "STRING_UTF8", None
    if nd.kind == "S":
        return ("CHAR", nd.itemsize) if nd.itemsize > 0 else ("CHAR", None)
    if nd.kind == "O":
        return "STRING_UTF8", None
    if nd.subdtype is not None:
        inner, n = _type_of(nd.subdtype[0])
        return inner, int(np.prod(nd.subdtype[1]))
    if nd.names:
        # tiledb-py's structured dtypes ("i4,i4"): n values of one type.
        kinds = {nd.fields[f][0] for f in nd.names}
        if len(kinds) != 1:
            raise InvalidInputError(f"structured dtype {nd} mixes types; TileDB cells hold one type")
        inner, n = _type_of(kinds.pop())
        return inner, len(nd.names)
    return _type_of(pa.from_numpy_dtype(nd))


def _declared_type(obj: Any, default_name: Optional[str] = None) -> tuple:
    """A Dim's or Attr's type, honouring the TileDB type a schema read back
    from an array carries (so ASCII stays ASCII)."""
    name, n = _type_of(obj.dtype)
    declared = getattr(obj, "tiledb_type", "") or ""
    if declared and declared != name and _t._dtype(declared) == _t._dtype(name):
        name = declared
    return name, n


def _datetime_count(name: str, v: Any) -> int:
    unit = _UNIT_OF[name]
    if isinstance(v, np.timedelta64):
        return int(v.astype(f"timedelta64[{unit}]").astype("int64"))
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.datetime64)):
        return int(v)
    return int(np.datetime64(v, unit).astype("int64"))


def _values(name: str, vals: Any) -> bytes:
    if name.startswith("DATETIME_"):
        return np.array([_datetime_count(name, v) for v in vals], dtype=np.int64).tobytes()
    if name in ("STRING_ASCII", "STRING_UTF8", "CHAR", "BLOB"):
        out = b""
        for v in vals:
            out += v.encode() if isinstance(v, str) else bytes(v)
        return out
    try:
        return np.array(vals, dtype=_NP_TYPES[name]).tobytes()
    except (OverflowError, ValueError, TypeError) as e:
        raise InvalidInputError(f"value {vals!r} does not fit {name}: {e}") from e


_UNIT_OF = {"DATETIME_SEC": "s", "DATETIME_MS": "ms", "DATETIME_US": "us", "DATETIME_NS": "ns"}


def _fill_bytes(name: str, n: Optional[int], fill: Any) -> bytes:
    """An explicit fill value as stored, shaped as tiledb-py shapes it
    (through a numpy array of the attribute's dtype): a byte string is
    padded with zeros or cut to a fixed cell (an empty one of a var cell is
    one zero byte); one number fills every value of a fixed cell."""
    if name in ("STRING_ASCII", "STRING_UTF8", "CHAR", "BLOB"):
        b = _values(name, list(fill) if isinstance(fill, (list, tuple)) else [fill])
        if n is None:
            return b or b"\x00"
        return b[:n].ljust(n, b"\x00")
    vals = list(fill) if isinstance(fill, (list, tuple, np.ndarray)) else [fill]
    if n is not None and n > 1 and len(vals) == 1:
        vals = vals * n
    return _values(name, vals)


def _filter_dict(f: Any) -> dict:
    name = type(f).__name__
    if name not in _t._FILTERS:
        raise UnsupportedError(f"filter {name}")
    d = {"name": name}
    for k in type(f)._fields:
        v = getattr(f, k)
        if k == "reinterp_dtype" and v is not None:
            v = _type_of(v)[0]
        d[k] = v
    return d


def _filters(fs: Any, default: list) -> list:
    if fs is None:
        return [dict(x) for x in default]
    if isinstance(fs, _t.Filter):
        fs = [fs]
    return [_filter_dict(f) for f in fs]


def _schema_dict(schema: Any) -> dict:
    if not isinstance(schema, _t.ArraySchema):
        raise InvalidInputError(f"create_array takes a lancelet.tiledb.ArraySchema, got {type(schema).__name__}")
    dims = []
    coords = schema.coords_filters
    from_array = getattr(schema, "version", None) is not None
    if coords is not None and not from_array:
        # As tiledb-py does: coords_filters become every dimension's filters
        # and the schema's own coords filters stay empty.
        coords = _filters(coords, [])
    for d in schema.domain.dims:
        name, n = _declared_type(d)
        var = n is None
        if var and name not in ("STRING_ASCII",):
            if name == "STRING_UTF8":
                name = "STRING_ASCII"  # string dimensions are ASCII in TileDB
            else:
                raise InvalidInputError(f"dimension {d.name}: var-sized {name} dimensions are not supported")
        domain = None
        tile = None  # None: the whole domain, as TileDB (set in the core)
        if not var:
            if d.domain is None or len(d.domain) != 2 or d.domain[0] is None:
                raise InvalidInputError(f"dimension {d.name} needs a domain (lo, hi)")
            domain = (_values(name, [d.domain[0]]), _values(name, [d.domain[1]]))
            if d.tile is not None:
                tile = _values(name, [d.tile])
        dims.append({"name": d.name, "dtype": name, "var": var, "domain": domain, "tile": tile,
                     "filters": coords if coords is not None and not from_array else _filters(d.filters, [])})
    attrs = []
    for a in schema.attrs:
        name, n = _declared_type(a)
        var = getattr(a, "var", None)
        # tiledb-py's var: True makes any type var-sized; None (the
        # default) leaves strings, "blob" and bytes var-sized; False makes
        # "blob" one byte a cell (strings and bytes stay var-sized).
        if var:
            n = None
        elif name in ("STRING_ASCII", "STRING_UTF8", "BLOB") and n == 1 and not getattr(a, "tiledb_type", ""):
            n = None
        elif var is False and name == "BLOB" and n is None:
            n = 1
        if getattr(a, "tiledb_type", ""):  # read back from an array: as stored
            n = getattr(a, "cell_val_num", 1)
        # None: TileDB's default, set by the core (Attribute::default_fill).
        fill = None if a.fill is None else _fill_bytes(name, n, a.fill)
        attrs.append({"name": a.name, "dtype": name, "cell_val_num": n, "fill": fill,
                      "nullable": bool(a.nullable), "filters": _filters(a.filters, [])})
    return {
        "sparse": bool(schema.sparse),
        "allows_duplicates": bool(schema.allows_duplicates),
        "cell_order": schema.cell_order,
        "tile_order": schema.tile_order,
        "capacity": int(schema.capacity) or 10000,
        "coords_filters": (_filters(schema.coords_filters, []) if from_array
                           else [] if coords is not None else [{"name": "ZstdFilter", "level": -1}]),
        "offsets_filters": _filters(schema.offsets_filters, [{"name": "ZstdFilter", "level": -1}]),
        "validity_filters": _filters(schema.validity_filters, [{"name": "RleFilter", "level": -1}]),
        "dims": dims,
        "attrs": attrs,
    }


def _timestamp(ts: Any) -> Optional[int]:
    if ts is None:
        return None
    if isinstance(ts, bool) or not isinstance(ts, (int, np.integer)) or ts < 0:
        raise InvalidInputError(f"timestamp must be non-negative milliseconds, got {ts!r}")
    return int(ts)


def _opts(storage_options: Optional[dict]) -> dict:
    return {str(k): str(v) for k, v in (storage_options or {}).items()}


def create_array(uri: str, schema: Any, *, timestamp: Optional[int] = None,
                 storage_options: Optional[dict] = None) -> None:
    """Create an empty TileDB array at ``uri`` with ``schema`` (a
    :class:`lancelet.tiledb.ArraySchema`); defaults as tiledb-py's (capacity
    10000, coords and offsets ``ZstdFilter(-1)``, validity ``RleFilter(-1)``,
    TileDB's fill values, a dimension without a tile extent tiled by its
    whole domain). Hilbert order raises ``UnsupportedError``."""
    _native.tiledb_create_array(str(uri), _schema_dict(schema), _timestamp(timestamp), _opts(storage_options))


def _bound(dim: Any, v: Any) -> int:
    if isinstance(v, np.datetime64):
        unit = _UNIT_OF.get(dim.tiledb_type)
        return int(v.astype(f"datetime64[{unit}]").astype("int64")) if unit else int(v.astype("int64"))
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    raise InvalidInputError(f"subarray bound {v!r} of dimension {dim.name} is not an integer")


def _table(data: Any, dense_dims: int) -> pa.Table:
    if isinstance(data, dict):
        cols = {}
        for k, v in data.items():
            if isinstance(v, np.ndarray) and v.ndim > 1 and dense_dims > 1:
                v = v.ravel(order="C")
            if isinstance(v, np.ma.MaskedArray):
                v = pa.array(v.data.ravel(), mask=np.ma.getmaskarray(v).ravel())
            cols[k] = v
        data = cols
    try:
        return data if isinstance(data, pa.Table) else pa.table(data)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
        raise InvalidInputError(f"write data: {e}") from e


def write(uri: str, data: Any, *, subarray: Any = None, timestamp: Optional[int] = None,
          storage_options: Optional[dict] = None) -> "_t.FragmentInfo":
    """Write ``data`` (anything ``pyarrow.table()`` takes) as one fragment
    and return its :class:`FragmentInfo`. Dense arrays: every attribute,
    cells row-major over ``subarray`` (per dimension ``(lo, hi)`` inclusive
    or None for the whole domain). Sparse arrays: every dimension and
    attribute, rows in any order. The commit marker is written last, so a
    failed write leaves the array as it was."""
    arr = open_schema(uri, storage_options)
    dims = arr.schema.dims
    sub = None
    if subarray is not None:
        if arr.schema.sparse:
            raise InvalidInputError("sparse writes take coordinates from the dimension columns, not a subarray")
        if len(dims) == 1 and isinstance(subarray, tuple) and len(subarray) == 2 and not isinstance(subarray[0], (tuple, list)):
            subarray = [subarray]
        if len(subarray) != len(dims):
            raise InvalidInputError(f"subarray has {len(subarray)} entries for {len(dims)} dimensions")
        sub = []
        for d, r in zip(dims, subarray):
            if r is None:
                lo, hi = d.domain
                sub.append((_bound(d, lo), _bound(d, hi)))
            else:
                sub.append((_bound(d, r[0]), _bound(d, r[1])))
    table = _table(data, 0 if arr.schema.sparse else len(dims))
    info = _native.tiledb_write(str(uri), table, sub, _timestamp(timestamp), _opts(storage_options))
    ned = []
    for d, (lo, hi) in zip(dims, info["nonempty"]):
        if d.tiledb_type in ("STRING_ASCII", "STRING_UTF8"):
            ned.append((lo.decode("utf-8", "replace"), hi.decode("utf-8", "replace")))
            continue
        t = _NP_TYPES.get(d.tiledb_type, np.int64)
        r = (np.frombuffer(lo, dtype=t)[0].item(), np.frombuffer(hi, dtype=t)[0].item())
        ned.append(_t.TileDBArray._typed_range(d, r))
    t = info["timestamp"]
    return _t.FragmentInfo(
        name=info["name"], timestamp_range=(t, t), version=22, sparse=bool(arr.schema.sparse),
        cell_num=info["cell_num"], nonempty_domain=tuple(ned), has_timestamps=False, has_delete_meta=False,
    )


def open_schema(uri: str, storage_options: Optional[dict]) -> Any:
    """The array opened at the start of time: its schema without fragments."""
    return _t.open_array(uri, timestamp=(0, 0), storage_options=storage_options)


def delete(uri: str, filter: str, *, timestamp: Optional[int] = None,
           storage_options: Optional[dict] = None) -> None:
    """Delete the cells of a sparse array matching ``filter`` (lancelet SQL:
    comparisons of a dimension or attribute with a constant, ``BETWEEN``,
    ``IN``, combined with AND/OR/NOT) as of ``timestamp`` (default now):
    writes a ``.del`` commit holding the negated condition, as TileDB does;
    readers drop older cells it matches."""
    if not isinstance(filter, str) or not filter.strip():
        raise InvalidInputError("delete needs a filter (lancelet SQL)")
    _native.tiledb_delete(str(uri), filter, _timestamp(timestamp), _opts(storage_options))
