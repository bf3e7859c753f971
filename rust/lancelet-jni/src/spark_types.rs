//! Lance (Arrow) types as the Arrow types Spark reads without conversion.
//!
//! Spark's `ArrowColumnVector` wraps arrow-vector vectors of a fixed set of
//! classes (no unsigned integers, no fixed-size or 64-bit-offset lists, only
//! microsecond timestamps ...). Every Lance column gets the type that holds
//! all its values, as the Python data source does (`lancelet.spark.types`):
//! unsigned integers widen (`uint64` becomes `decimal(20,0)`), `float16`
//! becomes `float`, fixed-size lists become lists (the top-level dimension
//! kept in field metadata), dictionaries their value type, timestamps
//! microseconds (UTC when zoned). Arrays whose layout already matches are
//! handed over as they are; only the others are converted, per batch.

use std::sync::Arc;

use arrow_array::{cast::AsArray, Array, ArrayRef, ListArray, StructArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use lancelet::{Error, Result};

/// Field metadata key carrying a top-level fixed-size list's dimension
/// (the key lance-spark and the Python data source use).
pub const FSL_SIZE_KEY: &str = "arrow.fixed-size-list.size";

fn unsupported(path: &str, dt: &DataType, why: &str) -> Error {
    Error::unsupported(format!("column {path:?}: Arrow type {dt} has no Spark equivalent{why}; leave it out with the columns option"))
}

/// The Spark-readable type of `dt` (at column path `path`, for errors).
pub fn spark_type(dt: &DataType, path: &str) -> Result<DataType> {
    use DataType::*;
    Ok(match dt {
        Null | Boolean | Int8 | Int16 | Int32 | Int64 | Float32 | Float64 | Utf8 | LargeUtf8 | Binary | LargeBinary | Date32 => dt.clone(),
        UInt8 => Int16,
        UInt16 => Int32,
        UInt32 => Int64,
        UInt64 => Decimal128(20, 0),
        Float16 => Float32,
        Date64 => Date32,
        Utf8View => Utf8,
        BinaryView | FixedSizeBinary(_) => Binary,
        // Spark's TIME is read from nanosecond Arrow times.
        Time32(_) | Time64(_) => Time64(TimeUnit::Nanosecond),
        Decimal32(p, s) | Decimal64(p, s) | Decimal128(p, s) | Decimal256(p, s) => {
            if *p > 38 {
                return Err(unsupported(path, dt, " (Spark decimals hold at most 38 digits)"));
            }
            Decimal128(*p, *s)
        }
        Timestamp(_, tz) => Timestamp(TimeUnit::Microsecond, tz.as_ref().map(|_| "UTC".into())),
        Duration(_) => Duration(TimeUnit::Microsecond),
        Dictionary(_, v) => spark_type(v, path)?,
        List(f) | LargeList(f) | FixedSizeList(f, _) | ListView(f) | LargeListView(f) => {
            List(Arc::new(Field::new("element", spark_type(f.data_type(), &format!("{path}[]"))?, f.is_nullable())))
        }
        Struct(fields) => Struct(spark_fields(fields, path)?),
        Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(unsupported(path, dt, " (map entries are not a struct)"));
            };
            Map(Arc::new(Field::new(entries.name(), Struct(spark_fields(kv, path)?), false)), *sorted)
        }
        _ => return Err(unsupported(path, dt, "")),
    })
}

fn spark_fields(fields: &Fields, path: &str) -> Result<Fields> {
    fields
        .iter()
        .map(|f| Ok(Arc::new(Field::new(f.name(), spark_type(f.data_type(), &format!("{path}.{}", f.name()))?, f.is_nullable()))))
        .collect::<Result<Vec<_>>>()
        .map(Fields::from)
}

/// The Spark-readable schema of a dataset schema: same names and
/// nullability; top-level fixed-size lists keep their dimension in field
/// metadata ([`FSL_SIZE_KEY`]).
pub fn spark_schema(schema: &Schema) -> Result<Schema> {
    let fields = schema
        .fields()
        .iter()
        .map(|f| {
            let mut out = Field::new(f.name(), spark_type(f.data_type(), f.name())?, f.is_nullable());
            if let DataType::FixedSizeList(_, n) = f.data_type() {
                out = out.with_metadata(std::collections::HashMap::from([(FSL_SIZE_KEY.to_string(), n.to_string())]));
            }
            Ok(out)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Schema::new(fields))
}

/// Whether arrays of type `a` already have the buffer layout of `b` (names,
/// nullability and time zones do not change the bytes).
pub fn same_layout(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    match (a, b) {
        (Timestamp(u1, _), Timestamp(u2, _)) => u1 == u2,
        (Time64(u1), Time64(u2)) => u1 == u2,
        (List(f1), List(f2)) => same_layout(f1.data_type(), f2.data_type()),
        (Map(f1, _), Map(f2, _)) => same_layout(f1.data_type(), f2.data_type()),
        (Struct(f1), Struct(f2)) => f1.len() == f2.len() && f1.iter().zip(f2.iter()).all(|(x, y)| same_layout(x.data_type(), y.data_type())),
        _ => a == b,
    }
}

/// `array` with the layout of `target` (a type from [`spark_type`]): the
/// same array when it already has it, else converted; struct and list
/// parents are rebuilt around converted children without copying.
pub fn to_spark(array: &ArrayRef, target: &DataType) -> Result<ArrayRef> {
    if same_layout(array.data_type(), target) {
        return Ok(array.clone());
    }
    match (array.data_type(), target) {
        (DataType::Struct(src), DataType::Struct(dst)) if src.len() == dst.len() => {
            let s = array.as_struct();
            let children = s.columns().iter().zip(dst.iter()).map(|(c, f)| to_spark(c, f.data_type())).collect::<Result<Vec<_>>>()?;
            // Field types follow the children as converted (only their
            // layout matters to the JVM, which takes types from the schema).
            let fields: Fields =
                src.iter().zip(&children).map(|(f, c)| Arc::new(Field::new(f.name(), c.data_type().clone(), f.is_nullable()))).collect();
            Ok(Arc::new(StructArray::try_new(fields, children, s.nulls().cloned()).map_err(Error::internal_arrow)?))
        }
        (DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..), DataType::List(dst)) => {
            let (offsets, values, nullable) = match array.data_type() {
                DataType::List(f) => {
                    let l = array.as_list::<i32>();
                    (l.offsets().clone(), l.values().clone(), f.is_nullable())
                }
                DataType::LargeList(f) => {
                    let l = array.as_list::<i64>();
                    let last = l.offsets().last();
                    if last > i32::MAX as i64 {
                        return Err(Error::unsupported(format!("a list batch of {last} values is too large for Spark's 32-bit list offsets")));
                    }
                    let o: Vec<i32> = l.offsets().iter().map(|&x| x as i32).collect();
                    (OffsetBuffer::new(ScalarBuffer::from(o)), l.values().clone(), f.is_nullable())
                }
                DataType::FixedSizeList(f, n) => {
                    let l = array.as_fixed_size_list();
                    let n = *n as i64;
                    if n * (l.len() as i64) > i32::MAX as i64 {
                        return Err(Error::unsupported("a fixed-size list batch is too large for Spark's 32-bit list offsets"));
                    }
                    let o: Vec<i32> = (0..=l.len() as i64).map(|i| (i * n) as i32).collect();
                    // `values()` starts at the first list of the (sliced) array.
                    (OffsetBuffer::new(ScalarBuffer::from(o)), l.values().slice(0, l.len() * n as usize), f.is_nullable())
                }
                _ => unreachable!("matched above"),
            };
            let values = to_spark(&values, dst.data_type())?;
            let field = Arc::new(Field::new(dst.name(), values.data_type().clone(), nullable));
            Ok(Arc::new(ListArray::try_new(field, offsets, values, array.nulls().cloned()).map_err(Error::internal_arrow)?))
        }
        _ => {
            // Numbers widen, timestamps truncate to microseconds (Spark's
            // unit, as in the Python source), dictionaries decode.
            let opts = CastOptions { safe: false, ..Default::default() };
            cast_with_options(array.as_ref(), target, &opts)
                .map_err(|e| Error::invalid_input(format!("cannot convert {} to {target} for Spark: {e}", array.data_type())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
    use arrow_array::types::UInt64Type;
    use arrow_array::{Int32Array, PrimitiveArray, TimestampNanosecondArray, UInt16Array};

    #[test]
    fn types_widen_like_the_python_source() {
        assert_eq!(spark_type(&DataType::UInt8, "a").unwrap(), DataType::Int16);
        assert_eq!(spark_type(&DataType::UInt64, "a").unwrap(), DataType::Decimal128(20, 0));
        assert_eq!(
            spark_type(&DataType::Timestamp(TimeUnit::Nanosecond, Some("Europe/Paris".into())), "t").unwrap(),
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        assert_eq!(spark_type(&DataType::Timestamp(TimeUnit::Millisecond, None), "t").unwrap(), DataType::Timestamp(TimeUnit::Microsecond, None));
        let fsl = DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 4);
        assert!(matches!(spark_type(&fsl, "v").unwrap(), DataType::List(f) if f.data_type() == &DataType::Float32));
        let err = spark_type(&DataType::Decimal256(60, 2), "big").unwrap_err().to_string();
        assert!(err.contains("\"big\"") && err.contains("38 digits"), "{err}");
        let err = spark_type(&DataType::Struct(vec![Field::new("u", DataType::Interval(arrow_schema::IntervalUnit::DayTime), true)].into()), "s")
            .unwrap_err()
            .to_string();
        assert!(err.contains("s.u"), "{err}");
    }

    #[test]
    fn schema_keeps_vector_dimension() {
        let fsl = DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 8);
        let s = spark_schema(&Schema::new(vec![Field::new("vec", fsl, false)])).unwrap();
        assert_eq!(s.field(0).metadata().get(FSL_SIZE_KEY).map(String::as_str), Some("8"));
        assert!(!s.field(0).is_nullable());
    }

    #[test]
    fn matching_arrays_are_not_copied() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
        let b = to_spark(&a, &DataType::Int32).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn conversions_keep_values() {
        let u: ArrayRef = Arc::new(UInt16Array::from(vec![Some(65535), None]));
        let c = to_spark(&u, &DataType::Int32).unwrap();
        assert_eq!(c.as_primitive::<arrow_array::types::Int32Type>().value(0), 65535);
        assert!(c.is_null(1));
        let big: ArrayRef = Arc::new(PrimitiveArray::<UInt64Type>::from(vec![u64::MAX]));
        let d = to_spark(&big, &DataType::Decimal128(20, 0)).unwrap();
        assert_eq!(d.as_primitive::<arrow_array::types::Decimal128Type>().value(0), u64::MAX as i128);
        let ts: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![1_500_999, -1_500]));
        let t = to_spark(&ts, &DataType::Timestamp(TimeUnit::Microsecond, None)).unwrap();
        assert_eq!(t.as_primitive::<arrow_array::types::TimestampMicrosecondType>().value(0), 1500);
    }

    #[test]
    fn fixed_size_lists_become_lists_of_a_slice() {
        let mut b = FixedSizeListBuilder::new(Float32Builder::new(), 2);
        for i in 0..4 {
            if i == 2 {
                b.values().append_null();
                b.values().append_null();
                b.append(false);
            } else {
                b.values().append_value(i as f32);
                b.values().append_value(i as f32 + 0.5);
                b.append(true);
            }
        }
        let a: ArrayRef = Arc::new(b.finish());
        let sliced = a.slice(1, 3);
        let target = spark_type(a.data_type(), "v").unwrap();
        let l = to_spark(&sliced, &target).unwrap();
        let l = l.as_list::<i32>();
        assert_eq!(l.len(), 3);
        assert!(l.is_null(1));
        let first = l.value(0);
        assert_eq!(first.as_primitive::<arrow_array::types::Float32Type>().values(), &[1.0, 1.5]);
        let last = l.value(2);
        assert_eq!(last.as_primitive::<arrow_array::types::Float32Type>().values(), &[3.0, 3.5]);
    }
}
