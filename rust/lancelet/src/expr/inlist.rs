//! `x IN (v1, v2, ...)` as one set lookup.
//!
//! The list's literals are coerced against `x` one by one exactly as
//! `x = v` would be, then grouped by the type `x` takes in that comparison
//! (usually `x`'s own type; `i IN (1, 2.5)` also needs `CAST(i AS double)`):
//! each group becomes one [`InSet`], and items that are not literals stay
//! `x = item` terms of the same `OR`. A set with up to [`SMALL`] values is
//! tested with the comparison kernels, a larger one by hashing each row's
//! value bytes, so a 100,000-value list costs one hash lookup per row.
//! Equality is the comparison kernels' own: bytes of the value (floats by
//! their bits, as Arrow's total order: `NaN = NaN`), except that `-0.0`
//! and `0.0` are one value, as in pylance (`crate::float_order`).
//!
//! SQL semantics: a row whose `x` is null gives null; a row whose value is
//! not in the list gives null when the list holds a null, else false.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, Scalar};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_ord::ord::make_comparator;
use arrow_schema::{DataType, SortOptions};

use super::coerce;
use super::eval;
use super::parse::Node;
use super::plan::{CmpOp, Expr, Kind, Planner};
use crate::error::{Error, Result};
use crate::float_order::positive_zeros;

/// Sets up to this size are tested value by value with the `=` kernel.
const SMALL: usize = 8;

/// The values of an `IN` list (of one type), ready for lookups.
pub struct InSet {
    /// Distinct non-null values, sorted when the type sorts (then `sorted`).
    values: ArrayRef,
    /// Whether `values` is sorted and distinct (statistics pruning needs it).
    sorted: bool,
    /// Whether the list held a null.
    has_null: bool,
    /// The list's non-null values as written (order and repeats kept), for
    /// showing the list and answering it from an index.
    listed: ArrayRef,
    lookup: Lookup,
}

enum Lookup {
    /// One `=` per value.
    Scan,
    /// Each row's value bytes looked up.
    Hash(HashSet<Box<[u8]>>),
}

impl std::fmt::Debug for InSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InSet({} values of {}{})", self.values.len(), self.values.data_type(), if self.has_null { ", null" } else { "" })
    }
}

/// How to read one value's bytes, for the types hashed.
#[derive(Clone, Copy)]
enum Bytes {
    Fixed(usize),
    Var32,
    Var64,
    View,
}

fn bytes_kind(t: &DataType) -> Option<Bytes> {
    use DataType as D;
    match t {
        D::Utf8 | D::Binary => Some(Bytes::Var32),
        D::LargeUtf8 | D::LargeBinary => Some(Bytes::Var64),
        D::Utf8View | D::BinaryView => Some(Bytes::View),
        D::FixedSizeBinary(w) => Some(Bytes::Fixed(*w as usize)),
        t if t.is_primitive() => t.primitive_width().map(Bytes::Fixed),
        _ => None,
    }
}

/// A function giving value `i` of `a` as bytes (`data` is `a`'s data,
/// held by the caller so the fixed-width bytes can borrow from it).
fn keys<'a>(a: &'a dyn Array, data: &'a ArrayData, kind: Bytes) -> Box<dyn Fn(usize) -> &'a [u8] + 'a> {
    match (kind, a.data_type()) {
        (Bytes::Fixed(_), DataType::FixedSizeBinary(_)) => {
            let a = a.as_fixed_size_binary();
            Box::new(move |i| a.value(i))
        }
        (Bytes::Fixed(w), _) => {
            let values = &data.buffers()[0].as_slice()[data.offset() * w..];
            Box::new(move |i| &values[i * w..(i + 1) * w])
        }
        (Bytes::Var32, DataType::Utf8) => {
            let a = a.as_string::<i32>();
            Box::new(move |i| a.value(i).as_bytes())
        }
        (Bytes::Var32, _) => {
            let a = a.as_binary::<i32>();
            Box::new(move |i| a.value(i))
        }
        (Bytes::Var64, DataType::LargeUtf8) => {
            let a = a.as_string::<i64>();
            Box::new(move |i| a.value(i).as_bytes())
        }
        (Bytes::Var64, _) => {
            let a = a.as_binary::<i64>();
            Box::new(move |i| a.value(i))
        }
        (Bytes::View, DataType::Utf8View) => {
            let a = a.as_string_view();
            Box::new(move |i| a.value(i).as_bytes())
        }
        (Bytes::View, _) => {
            let a = a.as_binary_view();
            Box::new(move |i| a.value(i))
        }
    }
}

impl InSet {
    /// A set of the values of `list` (one type; nulls allowed).
    pub fn new(list: &ArrayRef) -> Result<InSet> {
        let has_null = list.null_count() > 0;
        let non_null = arrow_select::filter::filter(list, &arrow_arith::boolean::is_not_null(list).map_err(Error::invalid_arrow)?)
            .map_err(Error::invalid_arrow)?;
        // -0.0 and 0.0 are one value (crate::float_order)
        let (values, sorted) = match arrow_ord::sort::sort(&positive_zeros(&non_null), None).and_then(|s| dedup_sorted(&s)) {
            Ok(v) => (v, true),
            Err(_) => (positive_zeros(&non_null), false),
        };
        let lookup = match bytes_kind(values.data_type()) {
            Some(kind) if values.len() > SMALL => {
                let data = values.to_data();
                let key = keys(values.as_ref(), &data, kind);
                Lookup::Hash((0..values.len()).map(|i| Box::<[u8]>::from(key(i))).collect())
            }
            _ => Lookup::Scan,
        };
        Ok(InSet { values, sorted, has_null, listed: non_null, lookup })
    }

    /// The distinct non-null values, sorted; `None` for types that do not
    /// sort.
    pub fn sorted_values(&self) -> Option<&ArrayRef> {
        self.sorted.then_some(&self.values)
    }

    /// The non-null values in the order the list gave them.
    pub fn listed(&self) -> &ArrayRef {
        &self.listed
    }

    /// Whether the list held a null (then `x IN list` is null, not false,
    /// where no value matches).
    pub fn has_null(&self) -> bool {
        self.has_null
    }

    /// `x IN set` per row (SQL three-valued: see the module docs).
    pub fn contains(&self, x: &ArrayRef) -> Result<BooleanArray> {
        let x = &positive_zeros(x);
        let n = x.len();
        let found: BooleanBuffer = match &self.lookup {
            Lookup::Scan => {
                let mut acc = BooleanBuffer::new_unset(n);
                for i in 0..self.values.len() {
                    let eq = arrow_ord::cmp::eq(x, &Scalar::new(self.values.slice(i, 1)))
                        .map_err(|e| Error::invalid_input(e.to_string()).with_source(e))?;
                    acc = &acc | eq.values();
                }
                acc
            }
            Lookup::Hash(set) => {
                let kind = bytes_kind(x.data_type()).ok_or_else(|| Error::Internal { what: format!("IN set lookup on {}", x.data_type()) })?;
                let valid = x.logical_nulls();
                let data = x.to_data();
                let key = keys(x.as_ref(), &data, kind);
                BooleanBuffer::collect_bool(n, |i| valid.as_ref().is_none_or(|v| v.is_valid(i)) && set.contains(key(i)))
            }
        };
        // null where x is null, and where not found if the list has a null
        let mut nulls = x.logical_nulls();
        if self.has_null {
            let unknown = NullBuffer::new(found.clone());
            nulls = NullBuffer::union(nulls.as_ref(), Some(&unknown));
        }
        Ok(BooleanArray::new(found, nulls))
    }
}

fn dedup_sorted(sorted: &ArrayRef) -> std::result::Result<ArrayRef, arrow_schema::ArrowError> {
    if sorted.len() < 2 {
        return Ok(sorted.clone());
    }
    let cmp = make_comparator(sorted.as_ref(), sorted.as_ref(), SortOptions::default())?;
    let keep = BooleanArray::from_iter((0..sorted.len()).map(|i| Some(i == 0 || cmp(i - 1, i).is_ne())));
    arrow_select::filter::filter(sorted, &keep)
}

/// Plan `x IN (list)`: one [`InSet`] per comparison type, `OR`ed with
/// `x = item` for items that are not literals.
pub(crate) fn plan_in(planner: &Planner<'_>, x: Expr, list: &[Node]) -> Result<Expr> {
    // (x as compared, the literal values) per comparison type
    let mut groups: Vec<(Expr, Vec<ArrayRef>)> = Vec::new();
    let mut checked: Vec<(DataType, DataType)> = Vec::new();
    let mut others = Vec::new();
    for item in list {
        let item = planner.plan(item)?;
        let (l, r) = coerce::coerce_comparison(x.clone(), item)?;
        let pair = (l.data_type.clone(), r.data_type.clone());
        if !checked.contains(&pair) {
            eval::check_cmp(CmpOp::Eq, &pair.0, &pair.1)?;
            checked.push(pair);
        }
        match &r.kind {
            Kind::Literal(v) if l.data_type == r.data_type => match groups.iter_mut().find(|(g, _)| g.data_type == l.data_type) {
                Some((_, values)) => values.push(v.clone()),
                None => groups.push((l, vec![v.clone()])),
            },
            _ => others.push(Expr { kind: Kind::Cmp(CmpOp::Eq, Box::new(l), Box::new(r)), data_type: DataType::Boolean }),
        }
    }
    let mut terms = Vec::with_capacity(groups.len() + others.len());
    for (l, values) in groups {
        let refs: Vec<&dyn Array> = values.iter().map(|v| v.as_ref()).collect();
        let all = arrow_select::concat::concat(&refs).map_err(Error::invalid_arrow)?;
        terms.push(Expr { kind: Kind::InList { expr: Box::new(l), set: Arc::new(InSet::new(&all)?) }, data_type: DataType::Boolean });
    }
    terms.extend(others);
    Ok(match terms.len() {
        1 => terms.pop().expect("one term"),
        _ => Expr { kind: Kind::Or(terms), data_type: DataType::Boolean },
    })
}
