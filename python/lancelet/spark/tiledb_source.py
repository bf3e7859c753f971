"""The PySpark Python Data Source ``lancelet_tiledb``: TileDB arrays read by
lancelet's TileDB reader, one Spark partition per region.

``spark.read.format("lancelet_tiledb").load(uri)`` opens the array once,
when partitions are planned, and pins what it sees: the open timestamp
range ends at that moment (or at the ``timestamp`` option's end), so every
task reads the same fragments and deletes even while writers add more. The read
is cut into disjoint regions of about ``rows_per_partition`` cells (dense:
space-tile-aligned slabs; sparse: cut where R-tree data tiles end, by their
cell counts; see :mod:`lancelet._tiledb_lance`). Each task reads its region
with every fragment resolved over it, so newer cells win across partition
boundaries exactly as in one whole read, and casts the Arrow batch to the
schema Spark expects.

Options: ``timestamp`` (an end in ms, or ``start,end``), ``attrs``
(comma-separated), ``dims`` (``true``/``false``), ``subarray`` (JSON, per
dimension ``null``, ``[lo, hi]`` or a list of them, e.g. ``[[1, 5], null]``),
``rows_per_partition`` (cells, default 1,048,576), ``filter`` (lancelet SQL
over dimensions and attributes), ``storage_options.<key>``.

Types as :mod:`lancelet.spark.types` maps them (unsigned integers widen,
timestamps keep microseconds); TileDB's NaT (``INT64_MIN``, the default
datetime fill) arrives as null.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from lancelet.exceptions import InvalidInputError
from lancelet.spark.types import cast_batch, spark_arrow_schema, spark_schema

#: Default cells per Spark partition.
DEFAULT_ROWS_PER_PARTITION = 1 << 20


def _flag(opts: Dict[str, str], key: str, default: bool) -> bool:
    v = str(opts.get(key, str(default))).strip().lower()
    if v not in ("true", "false"):
        raise InvalidInputError(f"option {key} must be true or false, got {v!r}")
    return v == "true"


def _timestamp(spec: Optional[str]) -> Any:
    if spec is None or not str(spec).strip():
        return None
    parts = [p.strip() for p in str(spec).strip().strip("()[]").split(",")]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise InvalidInputError(f"option timestamp must be an end or start,end in milliseconds, got {spec!r}") from None
    if len(values) == 1:
        return values[0]
    if len(values) == 2:
        return tuple(values)
    raise InvalidInputError(f"option timestamp must be an end or start,end in milliseconds, got {spec!r}")


def _subarray(spec: Optional[str]) -> Any:
    if spec is None or not str(spec).strip():
        return None
    try:
        sub = json.loads(spec)
    except json.JSONDecodeError as e:
        raise InvalidInputError(f"option subarray must be JSON such as [[1, 5], null], got {spec!r} ({e})") from None
    if not isinstance(sub, list):
        raise InvalidInputError(f"option subarray must be a JSON list with one entry per dimension, got {spec!r}")

    def ranges(entry: Any) -> Any:
        if entry is None:
            return None
        if isinstance(entry, list) and len(entry) == 2 and not isinstance(entry[0], list):
            return tuple(entry)
        if isinstance(entry, list) and all(isinstance(r, list) and len(r) == 2 for r in entry):
            return [tuple(r) for r in entry]
        raise InvalidInputError(f"option subarray: {entry!r} is not [lo, hi] or a list of them")

    return [ranges(e) for e in sub]


@dataclass(frozen=True)
class TileDBOptions:
    """The data source options, parsed once (picklable)."""

    uri: str
    timestamp: Any = None
    attrs: Optional[List[str]] = None
    dims: bool = True
    subarray: Any = None
    filter: Optional[str] = None
    rows_per_partition: int = DEFAULT_ROWS_PER_PARTITION
    storage_options: Optional[Dict[str, str]] = None

    @classmethod
    def parse(cls, options: Dict[str, str]) -> "TileDBOptions":
        opts = {str(k).lower(): v for k, v in options.items()}
        uri = opts.get("path") or opts.get("uri")
        if not uri:
            raise InvalidInputError("the lancelet_tiledb data source needs an array URI (.load(uri))")
        attrs = opts.get("attrs")
        rows = opts.get("rows_per_partition")
        try:
            rows_n = int(rows) if rows is not None else DEFAULT_ROWS_PER_PARTITION
        except ValueError:
            raise InvalidInputError(f"option rows_per_partition must be an integer, got {rows!r}") from None
        if rows_n <= 0:
            raise InvalidInputError(f"option rows_per_partition must be positive, got {rows_n}")
        storage = {k[len("storage_options."):]: v for k, v in opts.items() if k.startswith("storage_options.")}
        return cls(
            uri=uri,
            timestamp=_timestamp(opts.get("timestamp")),
            attrs=[a.strip() for a in attrs.split(",") if a.strip()] if attrs is not None else None,
            dims=_flag(opts, "dims", True),
            subarray=_subarray(opts.get("subarray")),
            filter=opts.get("filter") or None,
            rows_per_partition=rows_n,
            storage_options=storage or None,
        )

    def open(self, timestamp: Any = None):
        from lancelet.tiledb import open_array

        return open_array(self.uri, self.timestamp if timestamp is None else timestamp,
                          storage_options=self.storage_options)


# Tasks of one executor process reuse opened arrays (metadata parsed once).
_OPEN: Dict[Any, Any] = {}


def _open_cached(opts: TileDBOptions, pinned: Tuple[int, int]):
    key = (opts.uri, pinned, tuple(sorted((opts.storage_options or {}).items())))
    arr = _OPEN.get(key)
    if arr is None:
        if len(_OPEN) > 16:
            _OPEN.clear()
        arr = _OPEN[key] = opts.open(pinned)
    return arr


@dataclass
class TileDBRegion(InputPartition):
    """One read task: a region of the array at a pinned timestamp range."""

    pinned: Tuple[int, int]
    region: list


def _pin(arr, explicit_end: bool) -> Tuple[int, int]:
    """The open range, its open end narrowed to now (or to the newest
    fragment, if that is later): writes and deletes made after planning
    stay out of every task."""
    import time

    start, end = arr.timestamp_range
    if not explicit_end:
        newest = max((f.timestamp_range[1] for f in arr.fragments()), default=0)
        end = min(end, max(int(time.time() * 1000), newest))
    return (start, end)


_NAT = -(2**63)


def _nat_to_null(batch: pa.RecordBatch) -> pa.RecordBatch:
    """TileDB's NaT (INT64_MIN, the default datetime fill) as null: Spark
    holds microseconds and has no NaT."""
    cols = []
    for col in batch.columns:
        if pa.types.is_timestamp(col.type):
            nat = pc.equal(col.cast(pa.int64()), _NAT)
            if pc.any(nat).as_py():
                col = pc.if_else(nat, pa.scalar(None, col.type), col)
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=batch.schema)


class TileDBReader(DataSourceReader):
    """Plans regions on the driver; each task reads one."""

    def __init__(self, opts: TileDBOptions, schema: StructType) -> None:
        self.opts = opts
        self.columns = schema.fieldNames()
        self.target = spark_arrow_schema(schema)

    def partitions(self) -> List[InputPartition]:
        from lancelet._tiledb_lance import check_read_args, plan_regions

        arr = self.opts.open()
        check_read_args(arr, self.opts.attrs, self.opts.dims, self.opts.filter)
        ts = self.opts.timestamp
        pinned = _pin(arr, explicit_end=ts is not None and not (isinstance(ts, tuple) and ts[1] is None))
        return [TileDBRegion(pinned, r) for r in plan_regions(arr, self.opts.subarray, self.opts.rows_per_partition)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from lancelet._tiledb_lance import DEFAULT_BATCH_CELLS, plan_regions, read_region

        if not isinstance(partition, TileDBRegion):  # nothing to read
            return
        arr = _open_cached(self.opts, partition.pinned)
        # the partition's region, again cut into batch-sized regions: one
        # batch of cells in memory at a time
        for region in plan_regions(arr, partition.region, min(DEFAULT_BATCH_CELLS, self.opts.rows_per_partition)):
            batch = read_region(arr, region, self.opts.attrs, self.opts.dims, self.opts.filter)
            if batch.num_rows:
                yield cast_batch(_nat_to_null(batch.select(self.columns)), self.target)


class LanceletTileDBDataSource(DataSource):
    """``format("lancelet_tiledb")``: TileDB arrays through lancelet."""

    @classmethod
    def name(cls) -> str:
        return "lancelet_tiledb"

    def __init__(self, options: Dict[str, str]) -> None:
        super().__init__(options)
        self.opts = TileDBOptions.parse(dict(options))

    def schema(self) -> StructType:
        from lancelet._tiledb_lance import check_read_args

        arr = self.opts.open()
        schema = check_read_args(arr, self.opts.attrs, self.opts.dims, self.opts.filter)
        # datetimes may hold NaT, which Spark gets as null
        return spark_schema(pa.schema([f.with_nullable(True) if pa.types.is_timestamp(f.type) else f for f in schema]))

    def reader(self, schema: StructType) -> DataSourceReader:
        return TileDBReader(self.opts, schema)
