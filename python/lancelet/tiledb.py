"""Read TileDB arrays (format versions 20–22, as tiledb-py 0.36 / TileDB 2.30
write them) without the TileDB library.

``open_array(uri)`` returns a :class:`TileDBArray` whose ``read`` gives a
``pyarrow.Table``; its ``schema`` is an :class:`ArraySchema` with tiledb-py's
names (``Dim``, ``Attr``, ``Domain``, ``ZstdFilter`` ...). The Rust core does
all parsing, decoding and fragment resolution; this module converts
arguments and wraps results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import pyarrow as pa

from lancelet import _inputs
from lancelet._native import TileDBArray as _NativeArray
from lancelet.exceptions import InvalidInputError

__all__ = [
    "open_array",
    "create_array",
    "write",
    "delete",
    "to_lance",
    "consolidate",
    "vacuum",
    "TileDBArray",
    "FragmentInfo",
    "ArraySchema",
    "Domain",
    "Dim",
    "Attr",
    "Filter",
    "GzipFilter",
    "ZstdFilter",
    "LZ4Filter",
    "Bzip2Filter",
    "RleFilter",
    "DictionaryFilter",
    "DeltaFilter",
    "DoubleDeltaFilter",
    "BitWidthReductionFilter",
    "PositiveDeltaFilter",
    "ByteShuffleFilter",
    "BitShuffleFilter",
    "ChecksumMD5Filter",
    "ChecksumSHA256Filter",
    "XORFilter",
    "FloatScaleFilter",
]


# ---------------------------------------------------------------- filters


class Filter:
    """Base class of the filter descriptions (tiledb-py's names)."""

    _fields: tuple = ()

    def __init__(self, **kwargs: Any) -> None:
        for k in self._fields:
            setattr(self, k, kwargs.get(k))

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(
            getattr(self, k) == getattr(other, k) for k in self._fields
        )

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__}({args})"


def _compressor(name: str, default_level: int = -1) -> type:
    def __init__(self, level: int = default_level) -> None:
        self.level = level

    return type(name, (Filter,), {"_fields": ("level",), "__init__": __init__})


GzipFilter = _compressor("GzipFilter")
ZstdFilter = _compressor("ZstdFilter")
LZ4Filter = _compressor("LZ4Filter")
Bzip2Filter = _compressor("Bzip2Filter")
RleFilter = _compressor("RleFilter")
DictionaryFilter = _compressor("DictionaryFilter")


class DeltaFilter(Filter):
    _fields = ("level", "reinterp_dtype")

    def __init__(self, level: int = -1, reinterp_dtype: Optional[str] = None) -> None:
        self.level = level
        self.reinterp_dtype = reinterp_dtype


class DoubleDeltaFilter(DeltaFilter):
    pass


class BitWidthReductionFilter(Filter):
    """``window`` in bytes; TileDB's default 256, as tiledb-py reports it
    (-1 also means the default)."""

    _fields = ("window",)

    def __init__(self, window: int = 256) -> None:
        self.window = window


class PositiveDeltaFilter(BitWidthReductionFilter):
    """``window`` in bytes; TileDB's default 1024 (-1 also means it)."""

    def __init__(self, window: int = 1024) -> None:
        self.window = window


class FloatScaleFilter(Filter):
    _fields = ("factor", "offset", "bytewidth")

    def __init__(self, factor: float = 1.0, offset: float = 0.0, bytewidth: int = 8) -> None:
        self.factor = factor
        self.offset = offset
        self.bytewidth = bytewidth


def _plain(name: str) -> type:
    return type(name, (Filter,), {"_fields": (), "__init__": lambda self: None})


ByteShuffleFilter = _plain("ByteShuffleFilter")
BitShuffleFilter = _plain("BitShuffleFilter")
ChecksumMD5Filter = _plain("ChecksumMD5Filter")
ChecksumSHA256Filter = _plain("ChecksumSHA256Filter")
XORFilter = _plain("XORFilter")

_FILTERS = {
    c.__name__: c
    for c in (
        GzipFilter, ZstdFilter, LZ4Filter, Bzip2Filter, RleFilter, DictionaryFilter,
        DeltaFilter, DoubleDeltaFilter, BitWidthReductionFilter, PositiveDeltaFilter,
        ByteShuffleFilter, BitShuffleFilter, ChecksumMD5Filter, ChecksumSHA256Filter,
        XORFilter, FloatScaleFilter,
    )
}


def _filters(items: list) -> list:
    out = []
    for d in items:
        d = dict(d)
        cls = _FILTERS.get(d.pop("name"))
        if cls is None:  # e.g. WebP: described by name only
            out.append(Filter())
            continue
        out.append(cls(**d))
    return out


# ---------------------------------------------------------------- schema

_ARROW_TYPES = {
    "INT8": pa.int8(), "INT16": pa.int16(), "INT32": pa.int32(), "INT64": pa.int64(),
    "UINT8": pa.uint8(), "UINT16": pa.uint16(), "UINT32": pa.uint32(), "UINT64": pa.uint64(),
    "FLOAT32": pa.float32(), "FLOAT64": pa.float64(), "BOOL": pa.bool_(),
    "DATETIME_SEC": pa.timestamp("s"), "DATETIME_MS": pa.timestamp("ms"),
    "DATETIME_US": pa.timestamp("us"), "DATETIME_NS": pa.timestamp("ns"),
    "STRING_ASCII": pa.string(), "STRING_UTF8": pa.string(), "CHAR": pa.binary(), "BLOB": pa.binary(),
}


def _dtype(name: str) -> pa.DataType:
    return _ARROW_TYPES.get(name, pa.null())


@dataclass
class Dim:
    """A dimension: ``domain`` is ``(lo, hi)`` (None for string dims)."""

    name: str
    domain: Optional[tuple] = None
    tile: Any = None
    filters: list = field(default_factory=list)
    dtype: Any = pa.uint64()
    tiledb_type: str = "UINT64"


@dataclass
class Attr:
    """An attribute. ``fill`` None is TileDB's default fill value; ``var``
    as tiledb-py's: True makes any type var-sized, None (the default)
    leaves strings, bytes and "blob" var-sized, False makes "blob" fixed.
    Read back from an array, ``var`` is whether it is var-sized."""

    name: str
    dtype: Any = pa.float64()
    fill: Any = None
    var: Optional[bool] = None
    nullable: bool = False
    filters: list = field(default_factory=list)
    tiledb_type: str = ""
    cell_val_num: Optional[int] = 1


class Domain:
    """The dimensions of an array."""

    def __init__(self, *dims: Dim) -> None:
        self.dims = list(dims)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def __iter__(self):
        return iter(self.dims)

    def __repr__(self) -> str:
        return f"Domain({', '.join(map(repr, self.dims))})"


@dataclass
class ArraySchema:
    """An array schema (tiledb-py's argument names)."""

    domain: Domain
    attrs: list
    cell_order: str = "row-major"
    tile_order: str = "row-major"
    capacity: int = 0
    coords_filters: Optional[list] = None
    offsets_filters: Optional[list] = None
    validity_filters: Optional[list] = None
    allows_duplicates: bool = False
    sparse: bool = False
    version: Optional[int] = None
    arrow_schema: Optional[pa.Schema] = None

    @property
    def dims(self) -> list:
        return self.domain.dims

    @property
    def ndim(self) -> int:
        return len(self.domain.dims)

    def attr(self, name: str) -> Attr:
        for a in self.attrs:
            if a.name == name:
                return a
        raise InvalidInputError(f"no attribute {name!r}")


def _schema(native: _NativeArray) -> ArraySchema:
    info = native.schema_info()
    dims = [
        Dim(
            name=d["name"],
            domain=d["domain"],
            tile=d["tile"],
            filters=_filters(d["filters"]),
            dtype=pa.string() if d["var"] else _dtype(d["dtype"]),
            tiledb_type=d["dtype"],
        )
        for d in info["dims"]
    ]
    arrow = pa.schema(native.arrow_schema())
    attrs = [
        Attr(
            name=a["name"],
            dtype=arrow.field(a["name"]).type,
            fill=a["fill"],
            var=a["var"],
            nullable=a["nullable"],
            filters=_filters(a["filters"]),
            tiledb_type=a["dtype"],
            cell_val_num=a["cell_val_num"],
        )
        for a in info["attrs"]
    ]
    return ArraySchema(
        domain=Domain(*dims),
        attrs=attrs,
        cell_order=info["cell_order"],
        tile_order=info["tile_order"],
        capacity=info["capacity"],
        coords_filters=_filters(info["coords_filters"]),
        offsets_filters=_filters(info["offsets_filters"]),
        validity_filters=_filters(info["validity_filters"]),
        allows_duplicates=info["allows_duplicates"],
        sparse=info["sparse"],
        version=info["version"],
        arrow_schema=arrow,
    )


# ---------------------------------------------------------------- arrays


@dataclass(frozen=True)
class FragmentInfo:
    """One fragment: dense ``cell_num`` counts whole space tiles."""

    name: str
    timestamp_range: tuple
    version: int
    sparse: bool
    cell_num: int
    nonempty_domain: Optional[tuple]
    has_timestamps: bool
    has_delete_meta: bool


class TileDBArray:
    """A TileDB array opened for reading at a timestamp range."""

    def __init__(self, native: _NativeArray) -> None:
        self._native = native
        self.schema = _schema(native)

    @property
    def uri(self) -> str:
        return self._native.uri

    @property
    def timestamp_range(self) -> tuple:
        return self._native.timestamp_range

    def nonempty_domain(self) -> Optional[tuple]:
        """Per dimension ``(lo, hi)`` over the visible fragments, or None."""
        ned = self._native.nonempty_domain()
        if ned is None:
            return None
        return tuple(self._typed_range(d, r) for d, r in zip(self.schema.dims, ned))

    @staticmethod
    def _typed_range(dim: Dim, r: tuple) -> tuple:
        if dim.tiledb_type.startswith("DATETIME_"):
            import numpy as np

            unit = {"DATETIME_SEC": "s", "DATETIME_MS": "ms", "DATETIME_US": "us", "DATETIME_NS": "ns"}[dim.tiledb_type]
            return tuple(np.datetime64(int(v), unit) for v in r)
        return tuple(r)

    def fragments(self) -> list:
        """The visible fragments, oldest first."""
        out = []
        for f in self._native.fragments():
            ned = f["nonempty_domain"]
            if ned is not None:
                ned = tuple(self._typed_range(d, r) for d, r in zip(self.schema.dims, ned))
            out.append(
                FragmentInfo(
                    name=f["name"],
                    timestamp_range=tuple(f["timestamp_range"]),
                    version=f["version"],
                    sparse=f["sparse"],
                    cell_num=f["cell_num"],
                    nonempty_domain=ned,
                    has_timestamps=f["has_timestamps"],
                    has_delete_meta=f["has_delete_meta"],
                )
            )
        return out

    def _read_args(self, subarray: Any, attrs: Any) -> tuple:
        """(subarray, attrs) as the native reader takes them: one entry per
        dimension; a list of attribute names or None."""
        if isinstance(attrs, str):
            attrs = [attrs]
        return _inputs.tiledb_subarray(subarray, self.schema.ndim), (list(attrs) if attrs is not None else None)

    def read(
        self,
        subarray: Any = None,
        attrs: Optional[Sequence[str]] = None,
        *,
        dims: bool = True,
        order: Optional[str] = None,
        filter: Optional[str] = None,
    ) -> pa.Table:
        """Read cells as a ``pyarrow.Table``: dimensions (if ``dims``), then
        attributes. ``subarray``: per dimension None, ``(lo, hi)`` or a list
        of them. ``order``: dense "C" (default) or "F"; sparse "U"
        (default), "C" or "F". ``filter``: lancelet SQL over dimensions and
        attributes; only matching cells are returned, and tiles whose
        statistics rule the filter out are not read."""
        sub, attrs = self._read_args(subarray, attrs)
        stream = self._native.read(sub, attrs, dims, order, filter)
        return pa.table(pa.RecordBatchReader.from_stream(stream))

    def explain(self, subarray: Any = None, filter: Optional[str] = None) -> dict:
        """What a read of ``subarray`` with ``filter`` involves, from the
        fragment metadata alone: ``{"fragments", "tiles_total",
        "tiles_read"}`` (data tiles; read = left after R-tree, space-tile
        and min/max pruning)."""
        return dict(self._native.explain(_inputs.tiledb_subarray(subarray, self.schema.ndim), filter))

    def to_batches(
        self,
        subarray: Any = None,
        attrs: Optional[Sequence[str]] = None,
        *,
        dims: bool = True,
        order: Optional[str] = None,
        filter: Optional[str] = None,
        batch_size: int = 65536,
    ) -> pa.RecordBatchReader:
        """Stream what ``read`` returns in batches of at most ``batch_size``
        rows: the subarray is cut into slabs along the read's major
        dimension and each slab is resolved and read on its own, so memory
        stays near one slab's tiles plus a batch (see docs/tiledb.md)."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise InvalidInputError(f"batch_size must be a positive integer, not {batch_size!r}")
        sub, attrs = self._read_args(subarray, attrs)
        stream = self._native.to_batches(sub, attrs, dims, order, filter, batch_size)
        from lancelet._args import typed_reader

        return typed_reader(pa.RecordBatchReader.from_stream(stream))

    def aggregate(self, aggs: dict, subarray: Any = None) -> dict:
        """``{attr: [op, ...]}`` (ops: sum, min, max, mean, count,
        null_count; a single op may be a string) -> ``{attr: {op: value}}``
        with tiledb-py's ``.query().agg()`` values. Tiles wholly inside the
        subarray are summarised from fragment metadata, not read."""
        if not isinstance(aggs, dict) or not aggs:
            raise InvalidInputError("aggregate takes a non-empty dict {attribute: [operations]}")
        reqs = []
        for attr, ops in aggs.items():
            if isinstance(ops, str):
                ops = [ops]
            if not isinstance(attr, str) or not all(isinstance(o, str) for o in ops):
                raise InvalidInputError(f"aggregate request {attr!r}: {ops!r} is not attribute -> operation names")
            reqs.append((attr, list(ops)))
        out = dict(self._native.aggregate(reqs, _inputs.tiledb_subarray(subarray, self.schema.ndim)))
        for attr, vals in out.items():
            a = self.schema.attr(attr)
            if a.tiledb_type.startswith("DATETIME_"):
                import numpy as np

                unit = {"DATETIME_SEC": "s", "DATETIME_MS": "ms", "DATETIME_US": "us", "DATETIME_NS": "ns"}[a.tiledb_type]
                for k in ("min", "max"):
                    if isinstance(vals.get(k), int):
                        vals[k] = np.datetime64(vals[k], unit)
        return out

    def __enter__(self) -> "TileDBArray":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __repr__(self) -> str:
        return f"TileDBArray({self.uri!r}, timestamp_range={self.timestamp_range})"


def open_array(uri: str, timestamp: Any = None, *, storage_options: Optional[dict] = None) -> TileDBArray:
    """Open the TileDB array at ``uri``. ``timestamp``: None (everything),
    an end in milliseconds, or ``(start, end)``."""
    start, end = 0, 2**64 - 1
    if timestamp is not None:
        if isinstance(timestamp, (tuple, list)):
            if len(timestamp) != 2:
                raise InvalidInputError("timestamp must be an end or (start, end)")
            start = 0 if timestamp[0] is None else int(timestamp[0])
            end = end if timestamp[1] is None else int(timestamp[1])
        else:
            end = int(timestamp)
        if start < 0 or end < 0:
            raise InvalidInputError("timestamps are non-negative milliseconds")
    opts = {str(k): str(v) for k, v in (storage_options or {}).items()}
    return TileDBArray(_NativeArray(str(uri), start, end, opts))


from lancelet._tiledb_consolidate import consolidate, vacuum  # noqa: E402
from lancelet._tiledb_lance import to_lance  # noqa: E402  (uses this module's helpers)

# Writing (create_array, write, delete) lives in its own module.
from lancelet._tiledb_write import create_array, delete, write  # noqa: E402
