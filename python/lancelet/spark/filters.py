"""Spark's pushed-down filters as lancelet SQL.

Spark (``pushFilters``) hands over simple predicates: comparisons of one
column with a literal, IN, IS [NOT] NULL, NOT, and string prefix / suffix /
substring tests. A filter is pushed only when lancelet evaluates it exactly
as Spark would; it then disappears from Spark's plan, so anything doubtful
(timestamps whose zone handling differs, binary values, decimals, LIKE
patterns that would need escaping, columns whose Spark type is a widened
Lance type) is handed back to Spark instead.
"""

from __future__ import annotations

import datetime
from typing import Any, Optional

import pyarrow as pa
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

_OPS = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}


def _column(schema: pa.Schema, path: tuple) -> Optional[tuple]:
    """The quoted column reference and its Arrow type, if the path exists."""
    t: Any = None
    fields = schema
    for name in path:
        if t is not None:
            if not pa.types.is_struct(t):
                return None
            fields = t
        idx = fields.get_field_index(name)
        if idx < 0:
            return None
        t = fields.field(idx).type
    ref = ".".join("`" + n.replace("`", "``") + "`" for n in path)
    return ref, t


def _pushable_type(t: pa.DataType) -> bool:
    # Floats are absent on purpose: Spark treats -0.0 = 0.0 and orders NaN
    # its own way; only their null tests are pushed.
    return pa.types.is_signed_integer(t) or pa.types.is_boolean(t) or pa.types.is_string(t) \
        or pa.types.is_large_string(t) or pa.types.is_date32(t)


def _fits(v: int, t: pa.DataType) -> bool:
    bits = t.bit_width
    return -(1 << (bits - 1)) <= v < (1 << (bits - 1))


def _literal(v: Any, t: pa.DataType) -> Optional[str]:
    if isinstance(v, bool):
        return ("TRUE" if v else "FALSE") if pa.types.is_boolean(t) else None
    if isinstance(v, int):
        return str(v) if pa.types.is_signed_integer(t) and _fits(v, t) else None
    if isinstance(v, str):
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            return None
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
        return f"DATE '{v.isoformat()}'" if pa.types.is_date32(t) else None
    return None


def _like(v: Any, t: pa.DataType, pattern: str) -> Optional[str]:
    if not isinstance(v, str) or not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return None
    if any(c in v for c in "%_\\"):
        return None
    return "'" + pattern.replace("{}", v.replace("'", "''")) + "'"


def to_sql(f: Filter, schema: pa.Schema) -> Optional[str]:
    """The SQL text of filter ``f`` over a dataset of ``schema``, or None when
    it must be left to Spark."""
    if isinstance(f, Not):
        inner = to_sql(f.child, schema)
        return None if inner is None else f"NOT ({inner})"
    col = _column(schema, f.attribute)
    if col is None:
        return None
    ref, t = col
    if isinstance(f, IsNull):
        return f"{ref} IS NULL"
    if isinstance(f, IsNotNull):
        return f"{ref} IS NOT NULL"
    if not _pushable_type(t):
        return None
    if type(f) in _OPS:
        lit = _literal(f.value, t)
        return None if lit is None else f"{ref} {_OPS[type(f)]} {lit}"
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return f"{ref} IS NULL"
        lit = _literal(f.value, t)
        return None if lit is None else f"({ref} IS NOT NULL AND {ref} = {lit})"
    if isinstance(f, In):
        # A NULL in the list makes `NOT IN` null for every row: leave to Spark.
        lits = [None if v is None else _literal(v, t) for v in f.value]
        if not lits or any(x is None for x in lits):
            return None
        return f"{ref} IN ({', '.join(lits)})"
    if isinstance(f, StringStartsWith):
        pat = _like(f.value, t, "{}%")
    elif isinstance(f, StringEndsWith):
        pat = _like(f.value, t, "%{}")
    elif isinstance(f, StringContains):
        pat = _like(f.value, t, "%{}%")
    else:
        return None
    return None if pat is None else f"{ref} LIKE {pat}"
