//! Evaluating a planned [`Expr`] over a batch with the Arrow kernels.

use std::sync::Arc;

use arrow_arith::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow_arith::numeric;
use arrow_array::cast::AsArray;
use arrow_array::{
    make_array, new_empty_array, new_null_array, Array, ArrayRef, BooleanArray, Datum, Int32Array, Int64Array, LargeStringArray, RecordBatch, Scalar,
    StringArray, UInt32Array,
};
use arrow_buffer::NullBuffer;
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{ArrowError, DataType};

use super::functions::{Builtin, Call};
use super::plan::{ArithOp, BoolTest, CmpOp, Expr, Func, Kind};
use crate::error::{Error, Result};

const STRICT: CastOptions<'static> = CastOptions { safe: false, format_options: arrow_cast::display::FormatOptions::new() };

/// A value: one per row, or one for all rows.
#[derive(Debug, Clone)]
pub enum Val {
    Array(ArrayRef),
    Scalar(ArrayRef),
}

impl Val {
    fn datum(&self) -> Box<dyn Datum> {
        match self {
            Val::Array(a) => Box::new(a.clone()),
            Val::Scalar(a) => Box::new(Scalar::new(a.clone())),
        }
    }

    /// The same value with negative float zeros made positive
    /// ([`crate::float_order`]), for comparisons.
    fn positive_zeros(self) -> Val {
        match self {
            Val::Array(a) => Val::Array(crate::float_order::positive_zeros(&a)),
            Val::Scalar(a) => Val::Scalar(crate::float_order::positive_zeros(&a)),
        }
    }

    fn array(&self) -> &ArrayRef {
        match self {
            Val::Array(a) | Val::Scalar(a) => a,
        }
    }

    fn is_scalar(&self) -> bool {
        matches!(self, Val::Scalar(_))
    }

    /// As an array of `n` values.
    pub fn into_array(self, n: usize) -> Result<ArrayRef> {
        match self {
            Val::Array(a) => Ok(a),
            Val::Scalar(a) if n == 1 => Ok(a),
            Val::Scalar(a) => arrow_select::take::take(&a, &UInt32Array::from(vec![0u32; n]), None).map_err(Error::internal_arrow),
        }
    }

    /// Same shape as the inputs: scalar when all of them were.
    fn like(result: ArrayRef, scalar: bool) -> Val {
        if scalar {
            Val::Scalar(result)
        } else {
            Val::Array(result)
        }
    }
}

type CmpFn = fn(&dyn Datum, &dyn Datum) -> std::result::Result<BooleanArray, ArrowError>;

fn cmp_fn(op: CmpOp) -> CmpFn {
    use arrow_ord::cmp;
    match op {
        CmpOp::Eq => cmp::eq,
        CmpOp::NotEq => cmp::neq,
        CmpOp::Lt => cmp::lt,
        CmpOp::LtEq => cmp::lt_eq,
        CmpOp::Gt => cmp::gt,
        CmpOp::GtEq => cmp::gt_eq,
        CmpOp::Distinct => cmp::distinct,
        CmpOp::NotDistinct => cmp::not_distinct,
    }
}

type ArithFn = fn(&dyn Datum, &dyn Datum) -> std::result::Result<ArrayRef, ArrowError>;

fn arith_fn(op: ArithOp, t: &DataType) -> ArithFn {
    let wrap = t.is_integer();
    match op {
        ArithOp::Add if wrap => numeric::add_wrapping,
        ArithOp::Add => numeric::add,
        ArithOp::Sub if wrap => numeric::sub_wrapping,
        ArithOp::Sub => numeric::sub,
        ArithOp::Mul if wrap => numeric::mul_wrapping,
        ArithOp::Mul => numeric::mul,
        ArithOp::Div => numeric::div,
        ArithOp::Rem => numeric::rem,
    }
}

/// Whether the comparison kernel takes these types.
pub fn check_cmp(op: CmpOp, l: &DataType, r: &DataType) -> Result<()> {
    let (a, b) = (new_empty_array(l), new_empty_array(r));
    cmp_fn(op)(&a, &b)
        .map(|_| ())
        .map_err(|e| Error::invalid_input(format!("cannot compare a value of type {l} with one of type {r}: {e}")).with_source(e))
}

/// The result type of an arithmetic operation (an error if unsupported).
pub fn arith_type(op: ArithOp, l: &DataType, r: &DataType) -> Result<DataType> {
    let (a, b) = (new_empty_array(l), new_empty_array(r));
    arith_fn(op, l)(&a, &b)
        .map(|x| x.data_type().clone())
        .map_err(|e| Error::invalid_input(format!("cannot apply {op:?} to values of types {l} and {r}: {e}")).with_source(e))
}

fn bools(v: &Val, n: usize) -> Result<BooleanArray> {
    let a = v.clone().into_array(n)?;
    Ok(a.as_boolean_opt().ok_or_else(|| Error::Internal { what: format!("expected booleans, got {}", a.data_type()) })?.clone())
}

fn column(batch: &RecordBatch, name: &str, path: &[String]) -> Result<ArrayRef> {
    let mut arr =
        batch.column_by_name(name).ok_or_else(|| Error::Internal { what: format!("filter column `{name}` missing from the batch") })?.clone();
    for p in path {
        let s = arr.as_struct_opt().ok_or_else(|| Error::Internal { what: format!("`{name}` is not a struct") })?;
        let child = s.column_by_name(p).ok_or_else(|| Error::Internal { what: format!("no struct field `{p}`") })?.clone();
        let nulls = NullBuffer::union(s.nulls(), child.logical_nulls().as_ref());
        arr = if nulls.as_ref().map(|n| n.null_count()) == child.nulls().map(|n| n.null_count()) {
            child
        } else {
            make_array(child.to_data().into_builder().nulls(nulls).build().map_err(Error::internal_arrow)?)
        };
    }
    Ok(arr)
}

fn test(t: BoolTest, b: &BooleanArray) -> BooleanArray {
    let vals = b.values().clone();
    let valid = match b.nulls() {
        Some(n) => n.inner().clone(),
        None => arrow_buffer::BooleanBuffer::new_set(b.len()),
    };
    let out = match t {
        BoolTest::True => &vals & &valid,
        BoolTest::NotTrue => !&(&vals & &valid),
        BoolTest::False => &(!&vals) & &valid,
        BoolTest::NotFalse => !&(&(!&vals) & &valid),
    };
    BooleanArray::new(out, None)
}

fn func(f: Func, a: &ArrayRef) -> Result<ArrayRef> {
    Ok(match f {
        Func::Lower | Func::Upper => {
            let up = f == Func::Upper;
            let conv = |s: &str| if up { s.to_uppercase() } else { s.to_lowercase() };
            if let Some(l) = a.as_string_opt::<i64>() {
                Arc::new(l.iter().map(|o| o.map(conv)).collect::<LargeStringArray>())
            } else {
                let u = cast_with_options(a, &DataType::Utf8, &STRICT).map_err(Error::invalid_arrow)?;
                Arc::new(u.as_string::<i32>().iter().map(|o| o.map(conv)).collect::<StringArray>())
            }
        }
        Func::Length => {
            if let Some(l) = a.as_string_opt::<i64>() {
                Arc::new(l.iter().map(|o| o.map(|s| s.chars().count() as i64)).collect::<Int64Array>())
            } else {
                let u = cast_with_options(a, &DataType::Utf8, &STRICT).map_err(Error::invalid_arrow)?;
                Arc::new(u.as_string::<i32>().iter().map(|o| o.map(|s| s.chars().count() as i32)).collect::<Int32Array>())
            }
        }
        Func::Abs => {
            let zero = cast_with_options(&Int64Array::from(vec![0]), a.data_type(), &STRICT).map_err(Error::invalid_arrow)?;
            let negative = arrow_ord::cmp::lt(a, &Scalar::new(zero)).map_err(Error::invalid_arrow)?;
            let negated = numeric::neg_wrapping(a).map_err(Error::invalid_arrow)?;
            arrow_select::zip::zip(&negative, &negated, a).map_err(Error::invalid_arrow)?
        }
    })
}

/// An `AND` (`and`) or `OR` of `terms`, evaluated one term after the other
/// (a loop, however long the chain) with SQL's three-valued logic; stops
/// early once every row is decided (all false for `AND`, all true for `OR`).
fn logic(and: bool, terms: &[Expr], batch: &RecordBatch) -> Result<Val> {
    let mut acc: Option<Val> = None;
    for t in terms {
        let v = eval(t, batch)?;
        let (next, decided) = combine(and, acc.take(), v, batch.num_rows())?;
        acc = Some(next);
        if decided {
            break;
        }
    }
    acc.ok_or_else(|| Error::Internal { what: "AND/OR without terms".into() })
}

/// One more term of an `AND`/`OR` chain: the combined value, and whether
/// every row is decided. Kept out of [`logic`] so that the frame on the
/// recursion path stays small.
#[inline(never)]
fn combine(and: bool, acc: Option<Val>, v: Val, n: usize) -> Result<(Val, bool)> {
    let next = match acc {
        None => v,
        Some(a) => {
            let scalar = a.is_scalar() && v.is_scalar();
            let m = if scalar { 1 } else { n };
            let (x, y) = (bools(&a, m)?, bools(&v, m)?);
            let out = if and { and_kleene(&x, &y) } else { or_kleene(&x, &y) }.map_err(Error::invalid_arrow)?;
            Val::like(Arc::new(out), scalar)
        }
    };
    let b = bools(&next, if next.is_scalar() { 1 } else { n })?;
    let decided = b.null_count() == 0 && if and { b.true_count() == 0 } else { b.false_count() == 0 };
    Ok((next, decided))
}

/// The operands of a node other than `AND`/`OR` (evaluated before it).
fn operands(e: &Expr) -> (Option<&Expr>, Option<&Expr>) {
    match &e.kind {
        Kind::Column { .. } | Kind::Literal(_) | Kind::And(_) | Kind::Or(_) | Kind::Call(_) => (None, None),
        Kind::Cast(x)
        | Kind::Neg(x)
        | Kind::InList { expr: x, .. }
        | Kind::Not(x)
        | Kind::IsNull(x)
        | Kind::IsNotNull(x)
        | Kind::Test(_, x)
        | Kind::Func(_, x)
        | Kind::ArrayHas { list: x, .. } => (Some(x), None),
        Kind::Cmp(_, l, r) | Kind::Arith(_, l, r) | Kind::Like { expr: l, pattern: r, .. } => (Some(l), Some(r)),
    }
}

/// Evaluate an expression over a batch. Recursion follows the planned
/// tree, whose depth the parser bounds (chains and lists are loops); the
/// operands are evaluated here and the node applied to them in [`apply`],
/// so each level of the recursion costs one small frame (the deepest
/// filter accepted runs on a 256 KiB stack even in a debug build).
pub fn eval(e: &Expr, batch: &RecordBatch) -> Result<Val> {
    if let Kind::And(terms) | Kind::Or(terms) = &e.kind {
        return logic(matches!(e.kind, Kind::And(_)), terms, batch);
    }
    if let Kind::Call(c) = &e.kind {
        return call(c, &e.data_type, batch);
    }
    let (a, b) = operands(e);
    let a = match a {
        Some(x) => Some(eval(x, batch)?),
        None => None,
    };
    let b = match b {
        Some(x) => Some(eval(x, batch)?),
        None => None,
    };
    apply(e, a, b, batch)
}

/// A node applied to its evaluated operands (`a`, `b` in [`operands`]
/// order).
#[inline(never)]
fn apply(e: &Expr, a: Option<Val>, b: Option<Val>, batch: &RecordBatch) -> Result<Val> {
    let n = batch.num_rows();
    let missing = || Error::Internal { what: "filter node without its operand".into() };
    let one = |v: Option<Val>| v.ok_or_else(missing);
    Ok(match &e.kind {
        Kind::Column { name, path } => Val::Array(column(batch, name, path)?),
        Kind::Literal(a) => Val::Scalar(a.clone()),
        Kind::And(_) | Kind::Or(_) | Kind::Call(_) => return Err(Error::Internal { what: "AND/OR/call reached apply".into() }),
        Kind::Cast(_) => {
            let v = one(a)?;
            let out = cast_with_options(v.array(), &e.data_type, &STRICT).map_err(Error::invalid_arrow)?;
            Val::like(out, v.is_scalar())
        }
        Kind::Cmp(op, _, _) => {
            let (l, r) = (one(a)?, one(b)?);
            // -0.0 = 0.0 as in pylance (Arrow's kernels order -0.0 first)
            let (l, r) = (l.positive_zeros(), r.positive_zeros());
            let out = cmp_fn(*op)(&*l.datum(), &*r.datum()).map_err(Error::invalid_arrow)?;
            Val::like(Arc::new(out), l.is_scalar() && r.is_scalar())
        }
        Kind::Arith(op, l, _) => {
            let (lv, rv) = (one(a)?, one(b)?);
            let out = arith_fn(*op, &l.data_type)(&*lv.datum(), &*rv.datum()).map_err(Error::invalid_arrow)?;
            Val::like(out, lv.is_scalar() && rv.is_scalar())
        }
        Kind::Neg(x) => {
            let v = one(a)?;
            let out = if matches!(x.data_type, DataType::Null) {
                v.array().clone()
            } else {
                numeric::neg_wrapping(v.array()).map_err(Error::invalid_arrow)?
            };
            Val::like(out, v.is_scalar())
        }
        Kind::InList { set, .. } => {
            let v = one(a)?;
            Val::like(Arc::new(set.contains(v.array())?), v.is_scalar())
        }
        Kind::Not(_) => {
            let v = one(a)?;
            let b = bools(&v, if v.is_scalar() { 1 } else { n })?;
            Val::like(Arc::new(not(&b).map_err(Error::invalid_arrow)?), v.is_scalar())
        }
        Kind::IsNull(_) | Kind::IsNotNull(_) => {
            let v = one(a)?;
            let arr = v.array();
            let out = if matches!(e.kind, Kind::IsNull(_)) { is_null(arr) } else { is_not_null(arr) }.map_err(Error::invalid_arrow)?;
            Val::like(Arc::new(out), v.is_scalar())
        }
        Kind::Test(t, _) => {
            let v = one(a)?;
            let b = bools(&v, if v.is_scalar() { 1 } else { n })?;
            Val::like(Arc::new(test(*t, &b)), v.is_scalar())
        }
        Kind::Like { negated, case_insensitive, .. } => {
            use arrow_string::like;
            let (x, p) = (one(a)?, one(b)?);
            let f = match (negated, case_insensitive) {
                (false, false) => like::like,
                (false, true) => like::ilike,
                (true, false) => like::nlike,
                (true, true) => like::nilike,
            };
            let out = f(&*x.datum(), &*p.datum()).map_err(Error::invalid_arrow)?;
            Val::like(Arc::new(out), x.is_scalar() && p.is_scalar())
        }
        Kind::Func(f, _) => {
            let v = one(a)?;
            let out = func(*f, v.array()).map_err(|e| match e {
                Error::Corrupt { what, .. } => Error::invalid_input(what),
                other => other,
            })?;
            Val::like(out, v.is_scalar())
        }
        Kind::ArrayHas { func, values, .. } => {
            let v = one(a)?;
            Val::like(Arc::new(super::array::eval(*func, v.array(), values)?), v.is_scalar())
        }
    })
}

/// A function of [`super::functions`]: its arguments, then the kernel;
/// `CASE` computes each branch's value only for the rows it takes.
fn call(c: &Call, out_type: &DataType, batch: &RecordBatch) -> Result<Val> {
    if matches!(c.func, Builtin::Case { .. }) {
        return Ok(Val::Array(case(&c.args, out_type, batch)?));
    }
    let n = batch.num_rows();
    let vals = c.args.iter().map(|a| eval(a, batch)).collect::<Result<Vec<_>>>()?;
    let scalar = vals.iter().all(Val::is_scalar);
    let m = if scalar { 1 } else { n };
    let arrays = vals.into_iter().map(|v| v.into_array(m)).collect::<Result<Vec<_>>>()?;
    let out = super::functions::eval(c, out_type, &arrays, m).map_err(|err| match err {
        Error::Corrupt { what, .. } => Error::invalid_input(what),
        other => other,
    })?;
    Ok(Val::like(out, scalar))
}

/// The rows `idx` of `batch` (also for batches without columns).
fn take_rows(batch: &RecordBatch, idx: &UInt32Array) -> Result<RecordBatch> {
    let cols = batch
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c, idx, None))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(Error::internal_arrow)?;
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(idx.len()));
    RecordBatch::try_new_with_options(batch.schema(), cols, &opts).map_err(Error::internal_arrow)
}

/// `CASE` (arguments `[condition, value]*` then an optional `ELSE` value,
/// as planned by [`super::functions`]): each branch's value is computed
/// only for the rows it takes, so `CASE WHEN x = 0 THEN 0 ELSE 1 / x END`
/// never divides by zero (as in DataFusion and PostgreSQL).
fn case(args: &[Expr], out_type: &DataType, batch: &RecordBatch) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let has_else = args.len() % 2 == 1;
    let pairs = args.len() / 2;
    let mut remaining: Vec<u32> = (0..n as u32).collect();
    let mut values: Vec<ArrayRef> = Vec::new();
    let mut pick: Vec<(usize, usize)> = vec![(0, 0); n];
    let mut take_value = |rows: Vec<u32>, value: Option<&Expr>, values: &mut Vec<ArrayRef>| -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let idx = UInt32Array::from(rows);
        let v = match value {
            Some(value) => eval(value, &take_rows(batch, &idx)?)?.into_array(idx.len())?,
            None => new_null_array(out_type, idx.len()),
        };
        for (k, &row) in idx.values().iter().enumerate() {
            pick[row as usize] = (values.len(), k);
        }
        values.push(v);
        Ok(())
    };
    for p in 0..pairs {
        if remaining.is_empty() {
            break;
        }
        let idx = UInt32Array::from(remaining.clone());
        let sub = take_rows(batch, &idx)?;
        let c = bools(&eval(&args[2 * p], &sub)?, idx.len())?;
        let (mut hit, mut miss) = (Vec::new(), Vec::new());
        for (k, &row) in remaining.iter().enumerate() {
            if c.is_valid(k) && c.value(k) {
                hit.push(row);
            } else {
                miss.push(row);
            }
        }
        take_value(hit, Some(&args[2 * p + 1]), &mut values)?;
        remaining = miss;
    }
    take_value(remaining, if has_else { args.last() } else { None }, &mut values)?;
    if values.is_empty() {
        return Ok(new_empty_array(out_type));
    }
    let refs: Vec<&dyn Array> = values.iter().map(|v| v.as_ref()).collect();
    arrow_select::interleave::interleave(&refs, &pick).map_err(Error::internal_arrow)
}

/// Evaluate a boolean expression to one value per row.
pub fn evaluate_predicate(e: &Expr, batch: &RecordBatch) -> Result<BooleanArray> {
    let v = eval(e, batch)?;
    bools(&v, batch.num_rows())
}
