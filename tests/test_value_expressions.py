"""SQL value expressions (``add_columns({"name": "sql"})``): results,
types and nullability against pylance 14 where it supports the
expression, against known answers where it does not (SUBSTRING, TRIM,
CASE, FLOOR/CEIL, EXTRACT, ...)."""
from __future__ import annotations

import datetime

import lance
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import InvalidInputError

SCHEMA = pa.schema([
    pa.field("i", pa.int32(), False), pa.field("j", pa.int64()), pa.field("f", pa.float64()),
    pa.field("s", pa.string(), False), pa.field("t", pa.string()), pa.field("b", pa.bool_()),
    pa.field("d", pa.date32()), pa.field("ts", pa.timestamp("us")), pa.field("u8", pa.uint8()),
    pa.field("f32", pa.float32()), pa.field("st", pa.struct([pa.field("k", pa.int64())])),
])
TABLE = pa.table({
    "i": [1, 2, -3], "j": [10, None, 30], "f": [1.5, None, -2.25], "s": ["Ab", "cD ", " e"], "t": ["x", None, "z"],
    "b": [True, None, False], "d": [datetime.date(2020, 1, 31)] * 3,
    "ts": [datetime.datetime(2021, 3, 4, 5, 6, 7)] * 3, "u8": [1, 2, 200], "f32": [1.5, 2.5, None],
    "st": [{"k": 1}, None, {"k": 3}],
}, schema=SCHEMA)

# Expressions pylance 14 evaluates: lancelet must give the same values,
# type and nullability.
SAME_AS_PYLANCE = [
    "i + 1", "i * 2", "i + j", "i / 2", "j / i", "i % 2", "f * 2", "i + f", "-i", "abs(i)", "i + u8", "u8 + 1",
    "u8 * 200", "f32 * 2", "CAST(i AS bigint)", "CAST(i AS string)", "CAST(f AS int)", "i::double",
    "concat(s, t)", "concat(s, 'x')", "s || t", "s || 'x'", "upper(s)", "lower(t)", "length(s)", "char_length(t)",
    "ltrim(s)", "rtrim(s)", "btrim(s)", "replace(s, 'A', 'z')", "left(s, 1)", "right(s, 1)", "reverse(s)",
    "lpad(s, 4, '*')", "ends_with(s, 'b')", "split_part(s, 'b', 1)", "initcap(s)", "repeat(s, 2)",
    "coalesce(j, 0)", "coalesce(j, i)", "coalesce(t, 'none')", "i > 1", "i > 1 AND b", "b IS NULL",
    "i IN (1, 2)", "s LIKE 'A%'", "round(f)", "round(f, 1)", "sqrt(f)", "pow(f, 2)", "exp(f)", "ln(f)",
    "log10(f)", "log2(f)", "trunc(f)", "least(i, j)", "1", "'const'", "1.5", "true", "NULL",
    "CAST(NULL AS string)", "date_part('year', d)", "st.k * 2",
]

# Expressions pylance 14 refuses (or types differently): known answers.
KNOWN = {
    "substr(s, 2)": (pa.string(), True, ["b", "D ", "e"]),
    "substring(s, 1, 1)": (pa.string(), True, ["A", "c", " "]),
    "substring(s FROM 2 FOR 1)": (pa.string(), True, ["b", "D", "e"]),
    "trim(s)": (pa.string(), True, ["Ab", "cD", "e"]),
    "trim(LEADING 'A' FROM s)": (pa.string(), True, ["b", "cD ", " e"]),
    "CASE WHEN i > 1 THEN 'big' ELSE 'small' END": (pa.string(), False, ["small", "big", "small"]),
    "CASE WHEN i > 1 THEN 'big' END": (pa.string(), True, [None, "big", None]),
    "CASE i WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'other' END": (pa.string(), False, ["one", "two", "other"]),
    "floor(f)": (pa.float64(), True, [1.0, None, -3.0]),
    "ceil(f)": (pa.float64(), True, [2.0, None, -2.0]),
    "extract(month FROM ts)": (pa.int32(), True, [3, 3, 3]),
    "extract(day FROM d)": (pa.int32(), True, [31, 31, 31]),
    "position('b' IN s)": (pa.int32(), False, [2, 0, 0]),
    "strpos(s, 'D')": (pa.int32(), False, [0, 2, 0]),
    "starts_with(s, 'A')": (pa.bool_(), False, [True, False, False]),
    "greatest(i, j)": (pa.int64(), True, [10, 2, 30]),
    "nullif(i, 1)": (pa.int32(), True, [None, 2, -3]),
    "rpad(s, 3)": (pa.string(), True, ["Ab ", "cD ", " e "]),
    "i + 1.5": (pa.float64(), False, [2.5, 3.5, -1.5]),
    "power(i, 2)": (pa.float64(), True, [1.0, 4.0, 9.0]),
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    u = str(tmp_path_factory.mktemp("vx") / "base")
    lance.write_dataset(TABLE, u)
    return u


def _add(lib, base, tmp_path, expr, name):
    u = str(tmp_path / name)
    lib.write_dataset(TABLE, u)
    ds = lib.dataset(u)
    ds.add_columns({"o": expr})
    ds = lib.dataset(u)
    return ds.schema.field("o"), ds.to_table(columns=["o"])["o"]


@pytest.mark.parametrize("expr", SAME_AS_PYLANCE)
def test_same_as_pylance(base, tmp_path, expr):
    want_field, want = _add(lance, base, tmp_path, expr, "p")
    got_field, got = _add(lancelet, base, tmp_path, expr, "l")
    assert (got_field.type, got_field.nullable) == (want_field.type, want_field.nullable)
    assert got.to_pylist() == want.to_pylist() or all(
        (a is None and b is None) or (a != a and b != b) or a == pytest.approx(b)
        for a, b in zip(got.to_pylist(), want.to_pylist()))


@pytest.mark.parametrize("expr", sorted(KNOWN))
def test_known_answers(tmp_path, expr):
    t, nullable, values = KNOWN[expr]
    field, got = _add(lancelet, None, tmp_path, expr, "l")
    assert (field.type, field.nullable) == (t, nullable)
    assert got.to_pylist() == values


@pytest.mark.parametrize("expr, msg", [
    ("i / 0", "zero"),
    ("nosuch(i)", "nosuch"),
    ("substr(s, 1, -1)", "negative"),
    ("CASE WHEN i THEN 1 END", "boolean"),
    ("extract(fortnight FROM d)", "fortnight"),
    ("split_part(s, 'b', 0)", "0"),
])
def test_bad_expressions(tmp_path, expr, msg):
    u = str(tmp_path / "d")
    lancelet.write_dataset(TABLE, u)
    with pytest.raises(InvalidInputError, match=msg):
        lancelet.dataset(u).add_columns({"o": expr})
    assert lancelet.dataset(u).version == 1


def test_functions_in_filters(tmp_path):
    u = str(tmp_path / "d")
    lancelet.write_dataset(TABLE, u)
    ds = lancelet.dataset(u)
    assert ds.to_table(filter="coalesce(j, 0) > 5", columns=["i"])["i"].to_pylist() == [1, -3]
    assert ds.count_rows(filter="trim(s) = 'cD'") == 1
    assert ds.count_rows(filter="CASE WHEN i > 0 THEN true ELSE false END") == 2
