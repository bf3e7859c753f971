//! List membership functions, with DataFusion's (pylance's) semantics:
//!
//! | function (aliases) | true when | null when |
//! |---|---|---|
//! | `array_has_any(l, [v..])` (`list_has_any`, `arrays_overlap`) | an element of `l` equals one of the values | `l` is null |
//! | `array_has_all(l, [v..])` (`list_has_all`) | every value equals an element of `l`; always for `[]` | `l` is null (and values not empty) |
//! | `array_has(l, v)` (`array_contains`, `list_has`, `list_contains`) | an element of `l` equals `v` | `l` or `v` is null |
//!
//! In `array_has_any`/`array_has_all` a null value equals a null element
//! (rows holding a null element match `[NULL]`); `array_has` with a null
//! value is null. The values are constants, cast to the list's element
//! type when the filter is planned.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer};
use arrow_ord::cmp;
use arrow_schema::DataType;

use crate::error::{Error, Result};

/// Which membership test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayFunc {
    /// `array_has_any`
    Any,
    /// `array_has_all`
    All,
    /// `array_has` / `array_contains`
    Has,
}

impl ArrayFunc {
    /// The function of a (lower-case) SQL name.
    pub fn from_name(name: &str) -> Option<ArrayFunc> {
        match name {
            "array_has_any" | "list_has_any" | "arrays_overlap" => Some(ArrayFunc::Any),
            "array_has_all" | "list_has_all" => Some(ArrayFunc::All),
            "array_has" | "array_contains" | "list_has" | "list_contains" => Some(ArrayFunc::Has),
            _ => None,
        }
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            ArrayFunc::Any => "array_has_any",
            ArrayFunc::All => "array_has_all",
            ArrayFunc::Has => "array_has",
        }
    }
}

/// The element type of a list type.
pub fn element_type(dt: &DataType) -> Option<&DataType> {
    match dt {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => Some(f.data_type()),
        _ => None,
    }
}

/// `(flat elements, offsets)` of a list array.
fn flatten(a: &ArrayRef) -> Result<(ArrayRef, Vec<usize>)> {
    Ok(match a.data_type() {
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            (l.values().clone(), l.value_offsets().iter().map(|&o| o as usize).collect())
        }
        DataType::LargeList(_) => {
            let l = a.as_list::<i64>();
            (l.values().clone(), l.value_offsets().iter().map(|&o| o as usize).collect())
        }
        DataType::FixedSizeList(_, n) => {
            let l = a.as_fixed_size_list();
            let n = *n as usize;
            (l.values().clone(), (0..=l.len()).map(|i| (l.offset() + i) * n).collect())
        }
        other => return Err(Error::invalid_input(format!("list functions need a list, not {other}"))),
    })
}

/// Evaluate `func(lists, values)` per row.
pub fn eval(func: ArrayFunc, lists: &ArrayRef, values: &ArrayRef) -> Result<BooleanArray> {
    let n = lists.len();
    if func == ArrayFunc::All && values.is_empty() {
        return Ok(BooleanArray::from(vec![true; n]));
    }
    if func == ArrayFunc::Has && values.is_null(0) {
        return Ok(BooleanArray::new_null(n));
    }
    let (elements, offsets) = flatten(lists)?;
    // One mask over all elements per value (null == null).
    let masks = (0..values.len())
        .map(|i| {
            let v = values.slice(i, 1);
            let v = arrow_array::Scalar::new(v);
            cmp::not_distinct(&elements, &v).map_err(Error::invalid_arrow)
        })
        .collect::<Result<Vec<BooleanArray>>>()?;
    let any_in = |m: &BooleanArray, r: usize| (offsets[r]..offsets[r + 1]).any(|e| m.value(e));
    let mut out = BooleanBufferBuilder::new(n);
    for r in 0..n {
        let hit = match func {
            ArrayFunc::Any | ArrayFunc::Has => masks.iter().any(|m| any_in(m, r)),
            ArrayFunc::All => masks.iter().all(|m| any_in(m, r)),
        };
        out.append(hit);
    }
    let nulls = lists.logical_nulls();
    Ok(BooleanArray::new(out.finish(), nulls.filter(|x: &NullBuffer| x.null_count() > 0)))
}

/// The constant values of a list literal, cast to `element` (for
/// `array_has_any/all`), or of one value (for `array_has`).
pub fn check_values(func: ArrayFunc, element: &DataType, values: ArrayRef) -> Result<ArrayRef> {
    if func == ArrayFunc::Has && values.len() != 1 {
        return Err(Error::Internal { what: "array_has takes one value".into() });
    }
    if values.data_type() == element {
        return Ok(values);
    }
    let opts = arrow_cast::CastOptions { safe: false, format_options: arrow_cast::display::FormatOptions::new() };
    arrow_cast::cast_with_options(&values, element, &opts).map_err(|e| {
        let what = format!("{}: cannot compare list elements of type {element} with values of type {}: {e}", func.name(), values.data_type());
        Error::invalid_input(what).with_source(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::StringArray;
    use std::sync::Arc;

    fn lists() -> ArrayRef {
        // ["a","b"], ["a",null], [], null, [null], ["b","b"], ["c"]
        let mut b = ListBuilder::new(StringBuilder::new());
        for row in [
            Some(vec![Some("a"), Some("b")]),
            Some(vec![Some("a"), None]),
            Some(vec![]),
            None,
            Some(vec![None]),
            Some(vec![Some("b"), Some("b")]),
            Some(vec![Some("c")]),
        ] {
            match row {
                None => b.append(false),
                Some(items) => {
                    for i in items {
                        b.values().append_option(i);
                    }
                    b.append(true);
                }
            }
        }
        Arc::new(b.finish())
    }

    fn rows(func: ArrayFunc, vals: Vec<Option<&str>>) -> Vec<usize> {
        let v: ArrayRef = Arc::new(StringArray::from(vals));
        let m = eval(func, &lists(), &v).unwrap();
        (0..m.len()).filter(|&i| m.is_valid(i) && m.value(i)).collect()
    }

    /// The answers pylance 14 gives on the same lists.
    #[test]
    fn datafusion_semantics() {
        assert_eq!(rows(ArrayFunc::Any, vec![Some("a")]), vec![0, 1]);
        assert_eq!(rows(ArrayFunc::Any, vec![Some("a"), Some("c")]), vec![0, 1, 6]);
        assert_eq!(rows(ArrayFunc::All, vec![Some("a"), Some("b")]), vec![0]);
        assert_eq!(rows(ArrayFunc::All, vec![Some("b")]), vec![0, 5]);
        assert_eq!(rows(ArrayFunc::Has, vec![Some("b")]), vec![0, 5]);
        assert_eq!(rows(ArrayFunc::Any, vec![None]), vec![1, 4]);
        assert_eq!(rows(ArrayFunc::Has, vec![None]), Vec::<usize>::new());
        assert_eq!(rows(ArrayFunc::All, vec![]), vec![0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(rows(ArrayFunc::Any, vec![]), Vec::<usize>::new());
        assert_eq!(rows(ArrayFunc::All, vec![Some("a"), None]), vec![1]);
        let v: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        let m = eval(ArrayFunc::Any, &lists(), &v).unwrap();
        assert!(m.is_null(3) && m.is_valid(2) && !m.value(2));
    }
}
