"""Lance (Arrow) schemas ⇄ Spark schemas, and batches cast between them.

Reading: every Lance column gets the Spark type that holds all its values
(unsigned integers widen, ``uint64`` becomes ``decimal(20,0)``, ``float16``
becomes ``float``, fixed-size lists become arrays, dictionaries their value
type, timestamps with any zone ``timestamp``, without one ``timestamp_ntz``),
keeping nullability. Each batch is then cast to exactly the Arrow schema
Spark expects for that Spark schema (``to_arrow_schema(..., timezone="UTC")``);
PySpark checks the first batch against it strictly.

Writing: Spark hands over batches in its own Arrow types; the target Lance
schema keeps, column by column, the type of the existing dataset when that
type reads back as the same Spark type (so a dataset read through Spark and
written back keeps its ``fixed_size_list`` vectors, ``large_string``s, zones
and unsigned types); otherwise a list column becomes a ``fixed_size_list``
when its dimension is declared (field metadata
``arrow.fixed-size-list.size``, as lance-spark uses, or the writer option
``vector_columns``); everything else is written as Spark delivers it.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, DecimalType, MapType, StructField, StructType

from lancelet.exceptions import InvalidInputError, UnsupportedError

#: Spark field metadata key that declares a fixed-size list's dimension.
FSL_SIZE_KEY = "arrow.fixed-size-list.size"

_WIDEN = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.decimal128(20, 0),
    pa.float16(): pa.float32(),
    pa.date64(): pa.date32(),
    pa.string_view(): pa.string(),
    pa.binary_view(): pa.binary(),
}


def spark_type(t: pa.DataType, where: str = "") -> DataType:
    """The Spark type that holds every value of Arrow type ``t``."""
    if pa.types.is_struct(t):
        return StructType([StructField(f.name, spark_type(f.type, f"{where}.{f.name}"), f.nullable) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) \
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return ArrayType(spark_type(t.value_type, f"{where}[]"), t.value_field.nullable)
    if pa.types.is_map(t):
        return MapType(spark_type(t.key_type, f"{where}.key"), spark_type(t.item_type, f"{where}.value"),
                       t.item_field.nullable)
    if pa.types.is_dictionary(t):
        return spark_type(t.value_type, where)
    if pa.types.is_time32(t):
        t = pa.time64("us")
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedError(f"column {where.lstrip('.')!r}: {t} has no Spark equivalent "
                                   "(Spark decimals hold at most 38 digits); leave it out with the columns option")
        return DecimalType(t.precision, t.scale)
    t = _WIDEN.get(t, t)
    try:
        return from_arrow_type(t)
    except Exception as e:  # PySpark raises its own error types here
        raise UnsupportedError(f"column {where.lstrip('.')!r}: Arrow type {t} has no Spark equivalent ({e})") from None


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of a Lance dataset's Arrow schema. Top-level
    fixed-size lists carry their dimension in field metadata."""
    fields = []
    for f in schema:
        meta = {FSL_SIZE_KEY: f.type.list_size} if pa.types.is_fixed_size_list(f.type) else {}
        fields.append(StructField(f.name, spark_type(f.type, f.name), f.nullable, meta))
    return StructType(fields)


def spark_arrow_schema(st: StructType) -> pa.Schema:
    """The exact Arrow schema Spark uses for ``st``."""
    return to_arrow_schema(st, timezone="UTC")


def _lossy(t: pa.DataType) -> bool:
    # Spark keeps microseconds: finer timestamps/times/durations truncate.
    return pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t)


def _cast(col: pa.Array, t: pa.DataType) -> pa.Array:
    if pa.types.is_dictionary(t) and not pa.types.is_dictionary(col.type):
        # Arrow casts dictionaries only to dictionaries: encode first.
        col = pc.dictionary_encode(pc.cast(col, t.value_type, safe=not _lossy(t.value_type)))
    return pc.cast(col, t, safe=not _lossy(t))


def cast_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with its columns (matched by name) cast to ``target``'s
    types: vectorised, no per-row Python; a no-op for columns that already
    match. A value that does not fit raises :class:`InvalidInputError`."""
    cols = []
    for f in target:
        i = batch.schema.get_field_index(f.name)
        if i < 0:
            raise InvalidInputError(f"column {f.name!r} is missing from the batch (has {batch.schema.names})")
        col = batch.column(i)
        if not col.type.equals(f.type):
            try:
                col = _cast(col, f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise InvalidInputError(f"column {f.name!r}: cannot convert {col.type} to {f.type}: {e}") from None
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=target)


def _declared_dims(st: StructType, vector_columns: Mapping[str, int]) -> Dict[str, int]:
    dims = {}
    for f in st.fields:
        size = (f.metadata or {}).get(FSL_SIZE_KEY)
        if size is not None:
            dims[f.name] = int(size)
    dims.update({k: int(v) for k, v in vector_columns.items()})
    return dims


def lance_schema_for(st: StructType, existing: Optional[pa.Schema] = None,
                     vector_columns: Optional[Mapping[str, int]] = None, append: bool = False) -> pa.Schema:
    """The Lance (Arrow) schema to write Spark rows of ``st`` with (see the
    module docs). An append keeps the existing fields exactly (nullability
    included); an overwrite takes nullability from Spark."""
    delivered = spark_arrow_schema(st)
    dims = _declared_dims(st, vector_columns or {})
    unknown = set(dims) - set(st.fieldNames())
    if unknown:
        raise InvalidInputError(f"vector_columns names columns the data does not have: {sorted(unknown)}")
    fields: List[pa.Field] = []
    for sf, af in zip(st.fields, delivered):
        old = existing.field(sf.name) if existing is not None and sf.name in existing.names else None
        if old is not None and _same_spark_type(old.type, sf.dataType):
            fields.append(old if append else old.with_nullable(sf.nullable))
            continue
        if sf.name in dims:
            if not pa.types.is_list(af.type):
                raise InvalidInputError(f"vector column {sf.name!r} must be an array in Spark, not {sf.dataType.simpleString()}")
            if dims[sf.name] <= 0:
                raise InvalidInputError(f"vector column {sf.name!r}: dimension must be positive, got {dims[sf.name]}")
            af = af.with_type(pa.list_(af.type.value_field, dims[sf.name]))
        fields.append(af)
    return pa.schema(fields)


def _same_spark_type(t: pa.DataType, st: DataType) -> bool:
    try:
        return _strip_nullability(spark_type(t)) == _strip_nullability(st)
    except UnsupportedError:
        return False


def _strip_nullability(t: DataType) -> DataType:
    # Spark marks every column of a DataFrame nullable; compare shapes only.
    if isinstance(t, StructType):
        return StructType([StructField(f.name, _strip_nullability(f.dataType), True) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(_strip_nullability(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(_strip_nullability(t.keyType), _strip_nullability(t.valueType), True)
    return t
