//! Type coercion for comparisons and arithmetic.

use arrow_array::Array;
use arrow_cast::{can_cast_types, cast_with_options, CastOptions};
use arrow_schema::{DataType, TimeUnit};

use super::plan::{Expr, Kind};
use crate::error::{Error, Result};

pub fn is_int(t: &DataType) -> bool {
    t.is_integer()
}
pub fn is_float(t: &DataType) -> bool {
    t.is_floating()
}
pub fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal32(..) | DataType::Decimal64(..) | DataType::Decimal128(..) | DataType::Decimal256(..))
}
pub fn is_numeric(t: &DataType) -> bool {
    is_int(t) || is_float(t) || is_decimal(t)
}
pub fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}
pub fn is_binary(t: &DataType) -> bool {
    matches!(t, DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_))
}
fn is_temporal(t: &DataType) -> bool {
    matches!(t, DataType::Date32 | DataType::Date64 | DataType::Timestamp(..))
}

const STRICT: CastOptions<'static> = CastOptions { safe: false, format_options: arrow_cast::display::FormatOptions::new() };

fn lit_text(e: &Expr) -> String {
    match &e.kind {
        Kind::Literal(a) => arrow_cast::display::ArrayFormatter::try_new(a.as_ref(), &Default::default())
            .map(|f| f.value(0).to_string())
            .unwrap_or_else(|_| "?".into()),
        _ => "?".into(),
    }
}

/// Convert a literal to another type (errors if the value does not convert).
pub fn cast_literal(e: &Expr, to: &DataType) -> Result<Expr> {
    let Kind::Literal(a) = &e.kind else {
        return Err(Error::Internal { what: "cast_literal on a non-literal".into() });
    };
    if a.data_type() == to {
        return Ok(e.clone());
    }
    cast_with_options(a.as_ref(), to, &STRICT).map(Expr::literal).map_err(|err| {
        Error::invalid_input(format!("cannot convert the literal {} ({}) to {to}: {err}", lit_text(e), a.data_type())).with_source(err)
    })
}

/// Cast an expression (literals are converted right away).
pub fn cast_to(e: Expr, to: &DataType, explicit: bool) -> Result<Expr> {
    if &e.data_type == to {
        return Ok(e);
    }
    if e.is_literal() {
        return cast_literal(&e, to);
    }
    if !can_cast_types(&e.data_type, to) {
        let how = if explicit { "CAST" } else { "implicitly convert" };
        return Err(Error::invalid_input(format!("cannot {how} a value of type {} to {to}", e.data_type)));
    }
    Ok(Expr { kind: Kind::Cast(Box::new(e)), data_type: to.clone() })
}

/// The literal as a value of `target` when that keeps its value exactly
/// (floats may round), `None` when it does not fit.
fn convert_literal(lit: &Expr, target: &DataType) -> Result<Option<Expr>> {
    let Kind::Literal(a) = &lit.kind else { return Ok(None) };
    let from = a.data_type();
    if matches!(from, DataType::Null) {
        return Ok(Some(Expr::literal(arrow_array::new_null_array(target, 1))));
    }
    if let DataType::Dictionary(_, _) = target {
        return Ok(None);
    }
    let exact = |a: &dyn Array| -> Result<Option<Expr>> {
        let Ok(c) = cast_with_options(a, target, &STRICT) else { return Ok(None) };
        let Ok(back) = cast_with_options(c.as_ref(), from, &STRICT) else { return Ok(None) };
        let same = arrow_ord::cmp::not_distinct(&back, &a).map_err(Error::invalid_arrow)?;
        Ok(same.value(0).then(|| Expr::literal(c)))
    };
    if is_numeric(from) && is_numeric(target) {
        if is_float(target) {
            return Ok(cast_with_options(a.as_ref(), target, &STRICT).ok().map(Expr::literal));
        }
        return exact(a.as_ref());
    }
    if is_string(from) && (is_string(target) || is_temporal(target) || is_numeric(target) || matches!(target, DataType::Boolean)) {
        return cast_literal(lit, target).map(Some);
    }
    if is_binary(target) && (is_string(from) || is_binary(from)) {
        return cast_literal(lit, target).map(Some);
    }
    if is_temporal(from) && is_temporal(target) {
        return exact(a.as_ref());
    }
    Ok(None)
}

fn int_width(t: &DataType) -> u32 {
    match t {
        DataType::Int8 | DataType::UInt8 => 8,
        DataType::Int16 | DataType::UInt16 => 16,
        DataType::Int32 | DataType::UInt32 => 32,
        _ => 64,
    }
}

fn signed(w: u32) -> DataType {
    match w {
        8 => DataType::Int8,
        16 => DataType::Int16,
        32 => DataType::Int32,
        _ => DataType::Int64,
    }
}
fn unsigned(w: u32) -> DataType {
    match w {
        8 => DataType::UInt8,
        16 => DataType::UInt16,
        32 => DataType::UInt32,
        _ => DataType::UInt64,
    }
}

/// Digits before the point: (precision - scale) of a decimal, or what an
/// integer type needs.
fn int_digits(t: &DataType) -> i16 {
    match t {
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => *p as i16 - *s as i16,
        DataType::Int8 | DataType::UInt8 => 3,
        DataType::Int16 | DataType::UInt16 => 5,
        DataType::Int32 | DataType::UInt32 => 10,
        _ => 20,
    }
}
fn scale(t: &DataType) -> i8 {
    match t {
        DataType::Decimal32(_, s) | DataType::Decimal64(_, s) | DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => *s,
        _ => 0,
    }
}

fn numeric_common(l: &DataType, r: &DataType) -> DataType {
    if is_float(l) || is_float(r) {
        let small =
            |t: &DataType| matches!(t, DataType::Float16 | DataType::Float32 | DataType::Int8 | DataType::UInt8 | DataType::Int16 | DataType::UInt16);
        return if small(l) && small(r) && (matches!(l, DataType::Float32) || matches!(r, DataType::Float32)) {
            DataType::Float32
        } else {
            DataType::Float64
        };
    }
    if is_decimal(l) || is_decimal(r) {
        let s = scale(l).max(scale(r));
        let d = int_digits(l).max(int_digits(r));
        let wide = matches!(l, DataType::Decimal256(..)) || matches!(r, DataType::Decimal256(..));
        let max = if wide { 76 } else { 38 };
        let p = (d + s as i16).clamp(1, max) as u8;
        return if wide { DataType::Decimal256(p, s) } else { DataType::Decimal128(p, s) };
    }
    let (lw, rw) = (int_width(l), int_width(r));
    match (l.is_signed_integer(), r.is_signed_integer()) {
        (true, true) => signed(lw.max(rw)),
        (false, false) => unsigned(lw.max(rw)),
        (ls, _) => {
            let (uw, sw) = if ls { (rw, lw) } else { (lw, rw) };
            if uw >= 64 {
                DataType::Decimal128(20, 0)
            } else {
                signed((uw * 2).max(sw))
            }
        }
    }
}

fn unit_rank(u: &TimeUnit) -> u8 {
    match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    }
}

/// A type both sides of a comparison convert to.
pub(crate) fn common_type(l: &DataType, r: &DataType) -> Option<DataType> {
    use DataType as D;
    if l == r {
        return Some(l.clone());
    }
    match (l, r) {
        (D::Null, t) | (t, D::Null) => Some(t.clone()),
        (D::Dictionary(_, v), t) | (t, D::Dictionary(_, v)) => common_type(v, t),
        _ if is_numeric(l) && is_numeric(r) => Some(numeric_common(l, r)),
        _ if is_string(l) && is_string(r) => Some(if matches!(l, D::LargeUtf8) || matches!(r, D::LargeUtf8) { D::LargeUtf8 } else { D::Utf8View }),
        _ if is_binary(l) && is_binary(r) => Some(D::LargeBinary),
        (s, t) | (t, s) if is_string(s) && is_temporal(t) => Some(t.clone()),
        (D::Date32, D::Date64) | (D::Date64, D::Date32) => Some(D::Date64),
        (D::Timestamp(..), D::Date32 | D::Date64) => Some(l.clone()),
        (D::Date32 | D::Date64, D::Timestamp(..)) => Some(r.clone()),
        (D::Timestamp(lu, ltz), D::Timestamp(ru, rtz)) => {
            let u = if unit_rank(lu) >= unit_rank(ru) { *lu } else { *ru };
            Some(D::Timestamp(u, ltz.clone().or_else(|| rtz.clone())))
        }
        _ => None,
    }
}

fn literal_side(l: Expr, r: Expr) -> Result<std::result::Result<(Expr, Expr), (Expr, Expr)>> {
    if r.is_literal() && !l.is_literal() {
        if let Some(v) = convert_literal(&r, &l.data_type)? {
            return Ok(Ok((l, v)));
        }
    }
    if l.is_literal() && !r.is_literal() {
        if let Some(v) = convert_literal(&l, &r.data_type)? {
            return Ok(Ok((v, r)));
        }
    }
    Ok(Err((l, r)))
}

/// Bring both sides of a comparison to one type.
pub fn coerce_comparison(l: Expr, r: Expr) -> Result<(Expr, Expr)> {
    if l.data_type == r.data_type {
        return Ok((l, r));
    }
    let (l, r) = match literal_side(l, r)? {
        Ok(pair) => return Ok(pair),
        Err(pair) => pair,
    };
    let Some(t) = common_type(&l.data_type, &r.data_type) else {
        return Err(Error::invalid_input(format!("cannot compare a value of type {} with one of type {}", l.data_type, r.data_type)));
    };
    Ok((cast_to(l, &t, false)?, cast_to(r, &t, false)?))
}

/// Bring the operands of `+ - * / %` to one type (numbers only; other types
/// go to the kernel as they are).
pub fn coerce_arithmetic(l: Expr, r: Expr) -> Result<(Expr, Expr)> {
    let (lt, rt) = (&l.data_type, &r.data_type);
    if lt == rt && !matches!(lt, DataType::Null) {
        return Ok((l, r));
    }
    let num = |t: &DataType| is_numeric(t) || matches!(t, DataType::Null);
    // A number literal takes the other side's type when it keeps its value
    // there (`i32_col + 1` stays int32, as in DataFusion/pylance).
    if is_numeric(lt) && is_numeric(rt) && l.is_literal() != r.is_literal() {
        if let Ok(pair) = literal_side(l.clone(), r.clone())? {
            return Ok(pair);
        }
    }
    if num(lt) && num(rt) {
        let t = match (lt, rt) {
            (DataType::Null, DataType::Null) => DataType::Int64,
            (DataType::Null, t) | (t, DataType::Null) => t.clone(),
            // decimals of different precision/scale are the kernel's business
            (a, b) if is_decimal(a) && is_decimal(b) => return Ok((l, r)),
            (a, b) if is_decimal(a) && is_int(b) || is_int(a) && is_decimal(b) => {
                let i = if is_decimal(a) { b } else { a };
                let idt = DataType::Decimal128(int_digits(i) as u8, 0);
                return if is_decimal(a) { Ok((l, cast_to(r, &idt, false)?)) } else { Ok((cast_to(l, &idt, false)?, r)) };
            }
            (a, b) => numeric_common(a, b),
        };
        return Ok((cast_to(l, &t, false)?, cast_to(r, &t, false)?));
    }
    Ok((l, r))
}
