//! How filters compare floating-point values: as pylance 14 does, `-0.0`
//! and `0.0` are equal (IEEE), while `NaN` equals itself and sorts above
//! every number (total order). Arrow's comparison kernels use the total
//! order for both, where `-0.0 < 0.0`, so a filter `x = 0.0` would miss the
//! rows holding `-0.0` (and `x < 0.0` would find them). Comparisons therefore
//! run on values whose negative zeros were made positive; the values a scan
//! returns are never changed. A leaf module: it imports nothing of the crate.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_schema::DataType;
use half::f16;

/// Whether `t` is a floating-point type (whose zeros need making equal).
pub fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

/// `a` with every `-0.0` replaced by `0.0` (nulls, `NaN`s and every other
/// value kept). The same array, not a copy, when `a` is not a float array or
/// holds no negative zero.
pub fn positive_zeros(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Float64 => fix::<Float64Type>(a, |v| v == 0.0 && v.is_sign_negative(), 0.0),
        DataType::Float32 => fix::<Float32Type>(a, |v| v == 0.0 && v.is_sign_negative(), 0.0),
        DataType::Float16 => fix::<Float16Type>(a, |v| v == f16::ZERO && v.is_sign_negative(), f16::ZERO),
        _ => a.clone(),
    }
}

fn fix<T: arrow_array::ArrowPrimitiveType>(a: &ArrayRef, negative_zero: impl Fn(T::Native) -> bool, zero: T::Native) -> ArrayRef {
    let p = a.as_primitive::<T>();
    if !p.values().iter().any(|v| negative_zero(*v)) {
        return a.clone();
    }
    let values: Vec<T::Native> = p.values().iter().map(|v| if negative_zero(*v) { zero } else { *v }).collect();
    let out = PrimitiveArray::<T>::new(values.into(), p.nulls().cloned()).with_data_type(a.data_type().clone());
    Arc::new(out)
}

/// The value that stands for "just below every zero" in the total order
/// (`-0.0` of `a`'s float type), for range bounds: `x >= 0.0` must start
/// at `-0.0` and `x < 0.0` must stop before it. `None` unless `a` is one
/// float value equal to zero.
pub fn negative_zero_like(a: &ArrayRef) -> Option<ArrayRef> {
    if a.len() != 1 || a.is_null(0) {
        return None;
    }
    let out: ArrayRef = match a.data_type() {
        DataType::Float64 if a.as_primitive::<Float64Type>().value(0) == 0.0 => Arc::new(PrimitiveArray::<Float64Type>::from(vec![-0.0])),
        DataType::Float32 if a.as_primitive::<Float32Type>().value(0) == 0.0 => Arc::new(PrimitiveArray::<Float32Type>::from(vec![-0.0f32])),
        DataType::Float16 if a.as_primitive::<Float16Type>().value(0) == f16::ZERO => {
            Arc::new(PrimitiveArray::<Float16Type>::from(vec![f16::NEG_ZERO]))
        }
        _ => return None,
    };
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float16Array, Float32Array, Float64Array, Int32Array};

    #[test]
    fn only_negative_zeros_change() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![Some(-0.0), Some(0.0), None, Some(f64::NAN), Some(-1.5)]));
        let b = positive_zeros(&a);
        let b = b.as_primitive::<Float64Type>();
        assert!(b.value(0) == 0.0 && b.value(0).is_sign_positive());
        assert!(b.is_null(2) && b.value(3).is_nan() && b.value(4) == -1.5);
        let f: ArrayRef = Arc::new(Float32Array::from(vec![-0.0f32]));
        assert!(positive_zeros(&f).as_primitive::<Float32Type>().value(0).is_sign_positive());
        let h: ArrayRef = Arc::new(Float16Array::from(vec![f16::NEG_ZERO]));
        assert!(positive_zeros(&h).as_primitive::<Float16Type>().value(0).is_sign_positive());
        // nothing to change: the same array
        let c: ArrayRef = Arc::new(Float64Array::from(vec![1.0, 0.0]));
        assert!(Arc::ptr_eq(&positive_zeros(&c), &c));
        let i: ArrayRef = Arc::new(Int32Array::from(vec![0]));
        assert!(Arc::ptr_eq(&positive_zeros(&i), &i));
    }

    #[test]
    fn negative_zero_only_for_a_zero() {
        let z: ArrayRef = Arc::new(Float64Array::from(vec![0.0]));
        let n = negative_zero_like(&z).expect("zero");
        assert!(n.as_primitive::<Float64Type>().value(0).is_sign_negative());
        let one: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
        assert!(negative_zero_like(&one).is_none());
    }
}
