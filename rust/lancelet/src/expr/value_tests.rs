//! Value expressions (`update` values): arithmetic, casts to the column
//! type, CASE, COALESCE, NULLIF, concatenation.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::*;
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::error::Error;

fn batch() -> RecordBatch {
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("i", Arc::new(Int64Array::from(vec![Some(0), Some(2), None, Some(-4)]))),
        ("s", Arc::new(StringArray::from(vec![Some("a"), None, Some("c"), Some("d")]))),
        ("f", Arc::new(Float64Array::from(vec![Some(0.5), Some(1.5), None, Some(2.0)]))),
    ];
    RecordBatch::try_from_iter(cols).unwrap()
}

fn value(sql: &str, to: DataType) -> ArrayRef {
    let b = batch();
    let v = SqlValue::with_type(sql, &b.schema(), &to, "value").unwrap_or_else(|e| panic!("{sql}: {e}"));
    v.evaluate(&b).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn ints(sql: &str) -> Vec<Option<i64>> {
    value(sql, DataType::Int64).as_primitive::<Int64Type>().iter().collect()
}

fn strs(sql: &str) -> Vec<Option<String>> {
    value(sql, DataType::Utf8).as_string::<i32>().iter().map(|s| s.map(String::from)).collect()
}

#[test]
fn arithmetic_and_casts() {
    assert_eq!(ints("i * 10 + 1"), vec![Some(1), Some(21), None, Some(-39)]);
    assert_eq!(ints("7"), vec![Some(7); 4]);
    // float to the int column truncates, as pylance's cast does
    assert_eq!(ints("f"), vec![Some(0), Some(1), None, Some(2)]);
    let f = value("i / 2", DataType::Float64);
    assert_eq!(f.as_primitive::<Float64Type>().iter().collect::<Vec<_>>(), vec![Some(0.0), Some(1.0), None, Some(-2.0)]);
    let n = value("length(s)", DataType::Int32);
    assert_eq!(n.as_primitive::<Int32Type>().iter().collect::<Vec<_>>(), vec![Some(1), None, Some(1), Some(1)]);
    assert_eq!(strs("upper(s)"), vec![Some("A".into()), None, Some("C".into()), Some("D".into())]);
}

#[test]
fn case_coalesce_nullif_concat() {
    // branches are evaluated only for their rows: no division by zero
    assert_eq!(ints("CASE WHEN i = 0 THEN -1 WHEN i > 0 THEN 100 / i ELSE i END"), vec![Some(-1), Some(50), None, Some(-4)]);
    assert_eq!(ints("CASE i WHEN 2 THEN 20 WHEN -4 THEN 40 END"), vec![None, Some(20), None, Some(40)]);
    assert_eq!(strs("CASE WHEN s IS NULL THEN 'none' ELSE s END"), vec![Some("a".into()), Some("none".into()), Some("c".into()), Some("d".into())]);
    assert_eq!(ints("coalesce(i, 99)"), vec![Some(0), Some(2), Some(99), Some(-4)]);
    assert_eq!(strs("coalesce(s, 'x')"), vec![Some("a".into()), Some("x".into()), Some("c".into()), Some("d".into())]);
    assert_eq!(ints("nullif(i, 2)"), vec![Some(0), None, None, Some(-4)]);
    assert_eq!(strs("s || '-' || i"), vec![Some("a-0".into()), None, None, Some("d--4".into())]);
    assert_eq!(strs("concat(s, '-', i)"), vec![Some("a-0".into()), Some("-2".into()), Some("c-".into()), Some("d--4".into())]);
    // constant CASE folds
    assert_eq!(ints("CASE WHEN 1 = 1 THEN 5 ELSE 6 END"), vec![Some(5); 4]);
}

#[test]
fn value_errors() {
    let schema = batch().schema();
    let bad = |sql: &str, to: DataType| match SqlValue::with_type(sql, &schema, &to, "value") {
        Err(Error::InvalidInput { what, .. }) => what,
        other => panic!("{sql}: {other:?}"),
    };
    assert!(bad("'abc'", DataType::Int64).contains("abc"));
    assert!(bad("zz + 1", DataType::Int64).contains("zz"));
    assert!(bad("i +", DataType::Int64).contains("syntax"));
    assert!(bad("CASE WHEN i THEN 1 END", DataType::Int64).contains("boolean"));
    assert!(bad("coalesce(i, true)", DataType::Int64).contains("do not mix"));
    assert!(bad("nosuch(i)", DataType::Int64).contains("unsupported function"));
    let schema = Schema::new(vec![Field::new("t", DataType::Int8, true)]);
    let v = SqlValue::with_type("t * 100", &schema, &DataType::Int8, "value").unwrap();
    let b = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(Int8Array::from(vec![1, 2]))]).unwrap();
    // wrapping integer arithmetic, as DataFusion
    assert_eq!(v.evaluate(&b).unwrap().as_primitive::<arrow_array::types::Int8Type>().values().to_vec(), vec![100, -56]);
}
