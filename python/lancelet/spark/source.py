"""The PySpark Python Data Source ``lancelet``.

``spark.read.format("lancelet").load(uri)`` plans one Spark partition per
fragment, or per slice of ``rows_per_partition`` physical rows of a larger
fragment; the dataset version is resolved once, when partitions are planned,
and every task reads that version. Each task streams the fragment's Arrow
batches from the Rust scanner and casts them (vectorised) to the Arrow
schema Spark expects; nothing goes row by row through Python.

``df.write.format("lancelet").mode("append"|"overwrite").save(uri)`` plans
a :class:`~lancelet.distributed.WritePlan` on the driver; each task writes
its data files and returns the fragments it staged; the driver commits them
all as one version, then removes the job's unreferenced files. An aborted
job commits nothing and removes every file it wrote.

Read options: ``version`` (number or tag), ``columns`` (comma-separated),
``filter`` (lancelet SQL), ``batch_size``, ``rows_per_partition``,
``pushdown`` (``true`` to let Spark push filters, see below),
``storage_options.<key>``.

Filter pushdown needs ``spark.sql.python.filterPushdown.enabled`` *and* the
option ``pushdown=true``. PySpark 4.3 caches the planned reader of a
loaded DataFrame and reuses the one planned for the last query whose
filters were pushed for a later query without filters, which would then
silently see only the earlier query's rows. So pushdown is opt-in, for
DataFrames loaded per query (``spark.read...load()`` each time); the
``filter`` option is the always-safe way to filter in the scan. Write options: ``max_rows_per_file``,
``data_storage_version``, ``vector_columns`` (``"vec:128,emb:64"``),
``enable_stable_row_ids``, ``storage_options.<key>``.

Instead of a URI, a table of a directory namespace:
``.option("namespace.root", R).option("table_id", "prod.clicks")`` (other
``namespace.<property>`` options are passed to the namespace, e.g.
``namespace.manifest_enabled``, ``namespace.storage.<key>``); writing to an
id that does not exist declares it first (see :mod:`lancelet.spark.catalog`).
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

import lancelet
from lancelet.distributed import WritePlan, plan_write
from lancelet.exceptions import InvalidInputError, NotFoundError
from lancelet.spark import catalog as _catalog
from lancelet.spark import filters as _filters
from lancelet.spark.types import cast_batch, lance_schema_for, spark_arrow_schema, spark_schema

#: Default physical rows per Spark partition (a larger fragment is split).
DEFAULT_ROWS_PER_PARTITION = 1 << 20

_PUSHDOWN_WORKER = "pyspark.sql.worker.data_source_pushdown_filters"


@dataclass(frozen=True)
class LanceOptions:
    """The data source options, parsed once (picklable)."""

    uri: str
    version: Any = None
    columns: Optional[List[str]] = None
    filter: Optional[str] = None
    batch_size: Optional[int] = None
    rows_per_partition: int = DEFAULT_ROWS_PER_PARTITION
    storage_options: Optional[Dict[str, str]] = None
    max_rows_per_file: int = 1024 * 1024
    data_storage_version: Optional[str] = None
    vector_columns: Optional[Dict[str, int]] = None
    enable_stable_row_ids: bool = False
    pushdown: bool = False
    #: ``namespace.<property>`` options (a directory namespace) and
    #: ``table_id``, when the table is named in a catalog instead of by URI;
    #: ``uri`` is then its location ("" while the table does not exist).
    namespace: Optional[Dict[str, str]] = None
    table_id: Optional[List[str]] = None

    @classmethod
    def parse(cls, options: Dict[str, str]) -> "LanceOptions":
        opts = {str(k).lower(): v for k, v in options.items()}
        uri = opts.get("path") or opts.get("uri")
        storage = {k[len("storage_options."):]: v for k, v in opts.items() if k.startswith("storage_options.")}
        namespace, table_id = _catalog.options(opts, uri)
        if namespace is not None:
            uri, storage = _catalog.locate(namespace, table_id, storage or None)
            storage = storage or {}
        elif not uri:
            raise InvalidInputError("the lancelet data source needs a dataset URI (.load(uri) / .save(uri)) "
                                    "or the options namespace.root and table_id")
        version: Any = opts.get("version")
        if version is not None and str(version).isdigit():
            version = int(version)
        cols = opts.get("columns")
        return cls(
            uri=uri,
            version=version,
            columns=[c.strip() for c in cols.split(",") if c.strip()] if cols else None,
            filter=opts.get("filter") or None,
            batch_size=_positive(opts, "batch_size"),
            rows_per_partition=_positive(opts, "rows_per_partition") or DEFAULT_ROWS_PER_PARTITION,
            storage_options=storage or None,
            max_rows_per_file=_positive(opts, "max_rows_per_file") or 1024 * 1024,
            data_storage_version=opts.get("data_storage_version") or None,
            vector_columns=_vector_columns(opts.get("vector_columns")),
            enable_stable_row_ids=_flag(opts, "enable_stable_row_ids"),
            pushdown=_flag(opts, "pushdown"),
            namespace=namespace,
            table_id=table_id,
        )

    def open(self, version: Any = None) -> lancelet.Dataset:
        """The dataset at ``version`` (default: the option, else the latest)."""
        if not self.uri:
            _catalog.missing(self.namespace, self.table_id)
        v = self.version if version is None else version
        return _open_cached(self.uri, v, self.storage_options)


def _flag(opts: Dict[str, str], key: str) -> bool:
    v = str(opts.get(key, "false")).strip().lower()
    if v not in ("true", "false"):
        raise InvalidInputError(f"option {key} must be true or false, got {v!r}")
    return v == "true"


def _positive(opts: Dict[str, str], key: str) -> Optional[int]:
    v = opts.get(key)
    if v is None:
        return None
    try:
        n = int(v)
    except ValueError:
        raise InvalidInputError(f"option {key} must be an integer, got {v!r}") from None
    if n <= 0:
        raise InvalidInputError(f"option {key} must be positive, got {n}")
    return n


def _vector_columns(spec: Optional[str]) -> Optional[Dict[str, int]]:
    if not spec:
        return None
    out = {}
    for part in spec.split(","):
        name, sep, dim = part.strip().rpartition(":")
        if not sep or not name or not dim.strip().isdigit():
            raise InvalidInputError(f"option vector_columns: expected name:dimension pairs, got {part.strip()!r}")
        out[name.strip()] = int(dim)
    return out


# Tasks of one executor process reuse opened versions (manifest parsed once).
_OPEN: Dict[Any, lancelet.Dataset] = {}


def _open_cached(uri: str, version: Any, storage_options: Optional[Dict[str, str]]) -> lancelet.Dataset:
    if version is None:
        return lancelet.dataset(uri, storage_options=storage_options)
    key = (uri, version, tuple(sorted((storage_options or {}).items())))
    ds = _OPEN.get(key)
    if ds is None:
        if len(_OPEN) > 64:
            _OPEN.clear()
        ds = _OPEN[key] = lancelet.dataset(uri, version=version, storage_options=storage_options)
    return ds


@dataclass
class FragmentSlice(InputPartition):
    """One read task: physical rows ``[start, end)`` of one fragment of one
    pinned version."""

    version: int
    fragment_id: int
    start: int
    end: int


def plan_slices(ds: lancelet.Dataset, rows_per_partition: int) -> List[FragmentSlice]:
    """Fragments of ``ds`` cut into slices of at most ``rows_per_partition``
    physical rows."""
    out = []
    for f in ds.get_fragments():
        n = f.physical_rows
        for start in range(0, max(n, 1), rows_per_partition):
            out.append(FragmentSlice(ds.version, f.fragment_id, start, min(start + rows_per_partition, n)))
    return out


def read_slice(opts: LanceOptions, part: FragmentSlice, columns: Sequence[str], target: pa.Schema,
               extra_filter: Optional[str]) -> Iterator[pa.RecordBatch]:
    """Stream one slice as batches of exactly ``target``'s schema."""
    ds = opts.open(part.version)
    filters = [f"({x})" for x in (opts.filter, extra_filter) if x]
    scanner = ds.scanner(columns=list(columns), filter=" AND ".join(filters) or None, batch_size=opts.batch_size,
                         fragments=[part.fragment_id], row_range=(part.start, part.end))
    for batch in scanner.to_batches():
        if batch.num_rows:
            yield cast_batch(batch, target)


class LanceletReader(DataSourceReader):
    """Reads a pinned version, fragment slice by fragment slice."""

    def __init__(self, opts: LanceOptions, schema: StructType) -> None:
        self.opts = opts
        self.columns = schema.fieldNames()
        self.target = spark_arrow_schema(schema)
        self.pushed: Optional[str] = None

    def partitions(self) -> List[InputPartition]:
        return list(plan_slices(self.opts.open(), self.opts.rows_per_partition))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, FragmentSlice):  # an empty dataset
            return iter(())
        return read_slice(self.opts, partition, self.columns, self.target, self.pushed)


class LanceletPushdownReader(LanceletReader):
    """The reader used when ``spark.sql.python.filterPushdown.enabled`` is
    on: filters lancelet evaluates exactly as Spark are read by the scanner."""

    def pushFilters(self, filters):
        schema = self.opts.open().schema
        pushed = []
        for f in filters:
            sql = _filters.to_sql(f, schema)
            if sql is None:
                yield f
            else:
                pushed.append(f"({sql})")
        self.pushed = " AND ".join(pushed) or None


def _pushdown_planning() -> bool:
    # PySpark refuses a reader that overrides pushFilters unless pushdown is
    # enabled, and tells the reader nothing about the setting; it plans
    # pushdown reads in a worker module of its own, so look for that caller.
    return any(fr.frame.f_globals.get("__name__") == _PUSHDOWN_WORKER for fr in inspect.stack(0))


def stage_batches(plan: WritePlan, batches: Iterator[pa.RecordBatch]) -> List[bytes]:
    """Spark's batches, cast to the plan's Lance schema as they stream, written
    as staged fragments."""
    schema = plan.schema
    return plan.write(pa.RecordBatchReader.from_batches(schema, (cast_batch(b, schema) for b in batches)))


@dataclass
class StagedFragments(WriterCommitMessage):
    """What one write task made: encoded, uncommitted fragments."""

    fragments: List[bytes]


class LanceletWriter(DataSourceArrowWriter):
    """Tasks stage fragments; the driver commits them in one transaction."""

    def __init__(self, opts: LanceOptions, schema: StructType, overwrite: bool) -> None:
        self.declared = False
        if not opts.uri:  # a catalog table that does not exist yet: declare it
            uri, storage = _catalog.locate(opts.namespace, opts.table_id, opts.storage_options, create=True)
            opts = dataclasses.replace(opts, uri=uri, storage_options=storage)
            self.declared = True
        self.opts = opts
        try:
            existing: Optional[pa.Schema] = lancelet.dataset(opts.uri, storage_options=opts.storage_options).schema
        except NotFoundError:
            existing = None
        target = lance_schema_for(schema, existing, opts.vector_columns, append=not overwrite)
        self.plan: WritePlan = plan_write(opts.uri, target, mode="overwrite" if overwrite else "append",
                                          data_storage_version=opts.data_storage_version,
                                          max_rows_per_file=opts.max_rows_per_file,
                                          enable_stable_row_ids=opts.enable_stable_row_ids,
                                          storage_options=opts.storage_options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedFragments:
        return StagedFragments(stage_batches(self.plan, iterator))

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        frags = [f for m in messages if isinstance(m, StagedFragments) for f in m.fragments]
        self.plan.commit(frags)

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        self.plan.abort()
        if self.declared:
            _catalog.undeclare(self.opts.namespace, self.opts.table_id)


class LanceletDataSource(DataSource):
    """``format("lancelet")``: Lance datasets through lancelet."""

    @classmethod
    def name(cls) -> str:
        return "lancelet"

    def __init__(self, options: Dict[str, str]) -> None:
        super().__init__(options)
        self.opts = LanceOptions.parse(dict(options))

    def schema(self) -> StructType:
        schema = self.opts.open().schema
        if self.opts.columns:
            missing = [c for c in self.opts.columns if c not in schema.names]
            if missing:
                raise InvalidInputError(f"columns {missing} are not in {self.opts.uri} (has {schema.names})")
            schema = pa.schema([schema.field(c) for c in self.opts.columns])
        return spark_schema(schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        cls = LanceletPushdownReader if self.opts.pushdown and _pushdown_planning() else LanceletReader
        return cls(self.opts, schema)

    def writer(self, schema: StructType, overwrite: bool) -> LanceletWriter:
        return LanceletWriter(self.opts, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool):
        """``df.writeStream.format("lancelet")``: see :mod:`lancelet.spark.stream`."""
        from lancelet.spark.stream import LanceletStreamWriter

        if overwrite:
            raise InvalidInputError("the lancelet streaming sink only appends (outputMode 'append')")
        opts = {str(k).lower(): v for k, v in dict(self.options).items()}
        return LanceletStreamWriter(self.opts, schema, opts.get("checkpointlocation"))
