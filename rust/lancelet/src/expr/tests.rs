use std::sync::Arc;

use arrow_array::*;
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};

use super::*;
use crate::error::Error;

fn batch() -> RecordBatch {
    let st = StructArray::new(
        Fields::from(vec![Field::new("x", DataType::Int64, true), Field::new("y", DataType::Utf8, true)]),
        vec![
            Arc::new(Int64Array::from(vec![Some(1), Some(2), Some(9), None, Some(5)])),
            Arc::new(StringArray::from(vec![Some("p"), Some("q"), Some("z"), Some("r"), None])),
        ],
        Some(vec![true, true, false, true, true].into()),
    );
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("i", Arc::new(Int32Array::from(vec![Some(1), Some(2), None, Some(4), Some(5)]))),
        ("f", Arc::new(Float64Array::from(vec![Some(1.5), None, Some(3.0), Some(-1.0), Some(f64::NAN)]))),
        ("s", Arc::new(StringArray::from(vec![Some("a"), Some("b'c"), None, Some("Abc"), Some("a_c")]))),
        ("b", Arc::new(BooleanArray::from(vec![Some(true), Some(false), None, Some(true), Some(false)]))),
        ("d", Arc::new(Date32Array::from(vec![Some(19723), Some(19754), None, Some(19358), Some(19723)]))),
        (
            "ts",
            Arc::new(
                TimestampMicrosecondArray::from(vec![
                    Some(1_704_103_200_000_000),
                    None,
                    Some(1_704_106_800_000_000),
                    Some(1_704_099_600_000_000),
                    Some(1_704_153_600_000_000),
                ])
                .with_timezone("UTC"),
            ),
        ),
        ("dec", Arc::new(Decimal128Array::from(vec![Some(150), Some(225), None, Some(-300), Some(0)]).with_precision_and_scale(10, 2).unwrap())),
        ("u8", Arc::new(UInt8Array::from(vec![1, 2, 3, 200, 255]))),
        ("Weird Name", Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5]))),
        ("st", Arc::new(st)),
        ("f32", Arc::new(Float32Array::from(vec![1.1, 2.2, 3.3, 4.4, 5.5]))),
        ("ls", Arc::new(LargeStringArray::from(vec!["a", "b", "c", "d", "e"]))),
    ];
    RecordBatch::try_from_iter(cols).unwrap()
}

/// Indices of the rows kept.
fn rows(sql: &str) -> Vec<usize> {
    let b = batch();
    let f = SqlFilter::new(sql, &b.schema()).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let m = f.evaluate(&b).unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(m.null_count(), 0);
    (0..m.len()).filter(|&i| m.value(i)).collect()
}

fn err(sql: &str) -> String {
    let b = batch();
    match SqlFilter::new(sql, &b.schema()) {
        Ok(f) => match f.evaluate(&b) {
            Ok(_) => panic!("{sql}: expected an error"),
            Err(e) => {
                assert!(matches!(e, Error::InvalidInput { .. }), "{sql}: {e:?}");
                e.to_string()
            }
        },
        Err(e) => {
            assert!(matches!(e, Error::InvalidInput { .. }), "{sql}: {e:?}");
            e.to_string()
        }
    }
}

#[test]
fn comparisons() {
    assert_eq!(rows("i > 2"), vec![3, 4]);
    assert_eq!(rows("i >= 2"), vec![1, 3, 4]);
    assert_eq!(rows("i = 2"), vec![1]);
    assert_eq!(rows("i != 2"), vec![0, 3, 4]);
    assert_eq!(rows("i <> 2"), vec![0, 3, 4]);
    assert_eq!(rows("2 < i"), vec![3, 4]);
    assert_eq!(rows("i <= 1"), vec![0]);
    assert_eq!(rows("s = 'b''c'"), vec![1]);
    assert_eq!(rows("s = \"a\""), vec![0]);
    assert_eq!(rows("s < 'b'"), vec![0, 3, 4]);
    assert_eq!(rows("f > 100"), vec![4]); // NaN sorts last
    assert_eq!(rows("1 = 1"), vec![0, 1, 2, 3, 4]);
    assert_eq!(rows("true"), vec![0, 1, 2, 3, 4]);
    assert_eq!(rows("false"), Vec::<usize>::new());
    assert_eq!(rows("i = NULL"), Vec::<usize>::new());
    assert_eq!(rows("s = 'a' = true"), vec![0]);
}

#[test]
fn logic_and_nulls() {
    assert_eq!(rows("i > 2 OR i IS NULL"), vec![2, 3, 4]);
    assert_eq!(rows("i > 1 AND b"), vec![3]);
    assert_eq!(rows("NOT b"), vec![1, 4]);
    assert_eq!(rows("b"), vec![0, 3]);
    assert_eq!(rows("b IS TRUE"), vec![0, 3]);
    assert_eq!(rows("b IS NOT TRUE"), vec![1, 2, 4]);
    assert_eq!(rows("b IS FALSE"), vec![1, 4]);
    assert_eq!(rows("b IS NOT FALSE"), vec![0, 2, 3]);
    assert_eq!(rows("i IS NOT NULL"), vec![0, 1, 3, 4]);
    assert_eq!(rows("NOT (i > 2)"), vec![0, 1]);
    assert_eq!(rows("i IS DISTINCT FROM 2"), vec![0, 2, 3, 4]);
    assert_eq!(rows("i IS NOT DISTINCT FROM NULL"), vec![2]);
    assert_eq!(rows("b OR NULL"), vec![0, 3]);
}

#[test]
fn in_between_like() {
    assert_eq!(rows("i IN (1, 2, NULL)"), vec![0, 1]);
    assert_eq!(rows("i NOT IN (1, 2, NULL)"), Vec::<usize>::new());
    assert_eq!(rows("i NOT IN (1, 2)"), vec![3, 4]);
    assert_eq!(rows("i BETWEEN 2 AND 4"), vec![1, 3]);
    assert_eq!(rows("i NOT BETWEEN 2 AND 4"), vec![0, 4]);
    assert_eq!(rows("s LIKE 'a%'"), vec![0, 4]);
    assert_eq!(rows("s ILIKE 'a%'"), vec![0, 3, 4]);
    assert_eq!(rows("s LIKE 'a_c'"), vec![4]);
    assert_eq!(rows("s LIKE 'a\\_c'"), vec![4]);
    assert_eq!(rows("s NOT LIKE 'a%'"), vec![1, 3]);
    assert_eq!(rows("s NOT ILIKE 'A%'"), vec![1]);
    assert_eq!(rows("ls LIKE 'c%'"), vec![2]);
    assert_eq!(rows("s IN ('a', 'Abc')"), vec![0, 3]);
}

#[test]
fn arithmetic() {
    assert_eq!(rows("i + 1 > 3"), vec![3, 4]);
    assert_eq!(rows("i / 2 = 1"), vec![1]);
    assert_eq!(rows("i % 2 = 1"), vec![0, 4]);
    assert_eq!(rows("i * 1000000000000 > 1"), vec![0, 1, 3, 4]);
    assert_eq!(rows("-i < -3"), vec![3, 4]);
    assert_eq!(rows("i = -2 + 4"), vec![1]);
    assert_eq!(rows("i + 1.5 > 3"), vec![1, 3, 4]);
    assert_eq!(rows("dec + 1 > 2"), vec![0, 1]);
    assert_eq!(rows("f / 0 > 1"), vec![0, 2, 4]);
    assert_eq!(rows("abs(i - 3) = 1"), vec![1, 3]);
    assert!(err("i / 0 = 1").contains("ivide by zero"));
}

#[test]
fn coercion() {
    assert_eq!(rows("u8 > 100"), vec![3, 4]);
    assert_eq!(rows("u8 > -1"), vec![0, 1, 2, 3, 4]);
    assert_eq!(rows("u8 < 300"), vec![0, 1, 2, 3, 4]);
    assert_eq!(rows("u8 = i"), vec![0, 1]);
    assert_eq!(rows("i > 1.5"), vec![1, 3, 4]);
    assert_eq!(rows("i = 2.0"), vec![1]);
    assert_eq!(rows("f > 1"), vec![0, 2, 4]);
    assert_eq!(rows("f32 = 1.1"), vec![0]);
    assert_eq!(rows("dec > 1"), vec![0, 1]);
    assert_eq!(rows("dec = 1.5"), vec![0]);
    assert_eq!(rows("dec > 1.495"), vec![0, 1]);
    assert_eq!(rows("dec > 1.555"), vec![1]);
    assert_eq!(rows("dec < f"), vec![3, 4]); // NaN is the largest float
    assert_eq!(rows("i = '2'"), vec![1]);
    assert_eq!(rows("d = date '2024-01-01'"), vec![0, 4]);
    assert_eq!(rows("d = '2024-01-01'"), vec![0, 4]);
    assert_eq!(rows("d > '2023-06-01'"), vec![0, 1, 4]);
    assert_eq!(rows("d BETWEEN '2023-06-01' AND '2024-01-01'"), vec![0, 4]);
    assert_eq!(rows("d = timestamp '2024-01-01 00:00:00'"), vec![0, 4]);
    assert_eq!(rows("d < timestamp '2024-01-01 10:00:00'"), vec![0, 3, 4]);
    assert_eq!(rows("ts > timestamp '2024-01-01 10:00:00'"), vec![2, 4]);
    assert_eq!(rows("ts > '2024-01-01 10:00:00'"), vec![2, 4]);
    assert_eq!(rows("ts >= '2024-01-01T10:00:00Z'"), vec![0, 2, 4]);
    assert_eq!(rows("ts > d"), vec![0, 3, 4]);
    assert_eq!(rows("ls = s"), vec![0]);
    assert_eq!(rows("ls = 'a'"), vec![0]);
}

#[test]
fn casts_and_functions() {
    assert_eq!(rows("CAST(i AS string) = '1'"), vec![0]);
    assert_eq!(rows("CAST(i AS double) / 2 > 0.6"), vec![1, 3, 4]);
    assert_eq!(rows("CAST(d AS string) = '2024-01-01'"), vec![0, 4]);
    assert_eq!(rows("CAST('2024-01-01' AS date) = d"), vec![0, 4]);
    assert_eq!(rows("CAST(i AS decimal(10, 2)) > 1.5"), vec![1, 3, 4]);
    assert_eq!(rows("CAST(i AS tinyint) > 1"), vec![1, 3, 4]);
    assert_eq!(rows("i::bigint > 1"), vec![1, 3, 4]);
    assert_eq!(rows("CAST(i AS boolean)"), vec![0, 1, 3, 4]);
    assert_eq!(rows("lower(s) = 'abc'"), vec![3]);
    assert_eq!(rows("upper(s) = 'ABC'"), vec![3]);
    assert_eq!(rows("length(s) = 3"), vec![1, 3, 4]);
    assert!(err("CAST(s AS int) = 1").contains("Cannot cast string 'a'"));
}

#[test]
fn names() {
    assert_eq!(rows("st.x > 1"), vec![1, 4]);
    assert_eq!(rows("st.y = 'p'"), vec![0]);
    assert_eq!(rows("st.x IS NULL"), vec![2, 3]);
    assert_eq!(rows("st IS NULL"), vec![2]);
    assert_eq!(rows("st['x'] > 1"), vec![1, 4]);
    assert_eq!(rows("`Weird Name` > 3"), vec![3, 4]);
    assert_eq!(rows("I > 2"), vec![3, 4]);
    assert_eq!(rows("ST.X > 1"), vec![1, 4]);
    assert_eq!(rows("`st`.`x` > 1"), vec![1, 4]);
    let f = SqlFilter::new("st.x > i AND `Weird Name` < 3 OR st.y = 'a'", &batch().schema()).unwrap();
    assert_eq!(f.columns(), vec!["st".to_string(), "i".to_string(), "Weird Name".to_string()]);
}

#[test]
fn errors() {
    let e = err("nope > 1");
    assert!(e.contains("`nope`") && e.contains("available columns: i, f, s,"), "{e}");
    let e = err("st.z = 1");
    assert!(e.contains("no field `z`") && e.contains("x, y"), "{e}");
    let e = err("`weird name` > 1");
    assert!(e.contains("`weird name`"), "{e}");
    let e = err("i >");
    assert!(e.contains("syntax error") && e.contains("EOF"), "{e}");
    let e = err("i > 1 garbage");
    assert!(e.contains("garbage") && e.contains("column 7"), "{e}");
    let e = err("i = 1 AND");
    assert!(e.contains("syntax error"), "{e}");
    assert!(err("i").contains("must be a boolean"));
    assert!(err("NULL").contains("must be a boolean"));
    assert!(err("1").contains("must be a boolean"));
    assert!(err("b = 1").contains("cannot compare"));
    assert!(err("s = 2").contains("cannot compare"));
    assert!(err("i = 'x'").contains("cannot convert the literal"));
    assert!(err("d = 'not a date'").contains("cannot convert"));
    assert!(err("date 'nope' = d").contains("not a valid"));
    assert!(err("i LIKE 'a%'").contains("LIKE needs a string"));
    assert!(err("s REGEXP 'a'").contains("unsupported"));
    assert!(err("foo(i) = 1").contains("unsupported function"));
    assert!(err("i IN (SELECT 1)").contains("unsupported"));
    assert!(err("_rowid > 1").contains("no column named `_rowid`"));
    // parse_filter adds the row columns (the scan computes them)
    let f = parse_filter("_rowid > 1 AND _rowaddr < 5", &batch().schema()).unwrap();
    assert_eq!(f.columns(), vec!["_rowid".to_string(), "_rowaddr".to_string()]);
    assert!(err("s LIKE 'x' ESCAPE '!'").contains("escape"));
    assert!(err("").contains("empty"));
    assert!(err("i AND b").contains("boolean"));
    assert!(err("'abc' = 'abc' + 1").contains("cannot"));
}

#[test]
fn typed_literals() {
    let s = Schema::new(vec![Field::new("t", DataType::Timestamp(TimeUnit::Nanosecond, None), true)]);
    let f = SqlFilter::new("t < timestamp '2024-01-01 10:00:00.5'", &s).unwrap();
    assert_eq!(f.columns(), vec!["t".to_string()]);
    let b = RecordBatch::try_new(
        Arc::new(s.clone()),
        vec![Arc::new(TimestampNanosecondArray::from(vec![Some(1_704_103_200_000_000_000), Some(1_704_103_200_600_000_000), None]))],
    )
    .unwrap();
    let m = f.evaluate(&b).unwrap();
    assert_eq!(m, BooleanArray::from(vec![true, false, false]));
    let f = SqlFilter::new("t = CAST('2024-01-01 10:00:00.6' AS timestamp(3))", &s).unwrap();
    assert_eq!(f.evaluate(&b).unwrap(), BooleanArray::from(vec![false, true, false]));
    let f = SqlFilter::new("t = decimal '1.5' OR t IS NULL", &s);
    assert!(f.is_err());
    let e = SqlFilter::new("t < timestamp(4) '2024-01-01'", &s).unwrap_err().to_string();
    assert!(e.contains("precision"), "{e}");
}

/// A kernel's error on the caller's values is invalid input that keeps the
/// ArrowError as its source.
#[test]
fn evaluation_errors_keep_the_arrow_error() {
    let b = batch();
    let f = SqlFilter::new("i / 0 = 1", &b.schema()).unwrap();
    let e = f.evaluate(&b).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { .. }), "{e:?}");
    let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<arrow_schema::ArrowError>());
    assert!(matches!(source, Some(arrow_schema::ArrowError::DivideByZero)), "{e:?}");
}
