//! Scalar functions and `CASE` for value expressions (`add_columns`,
//! filters): planned from already planned arguments, evaluated with Arrow
//! kernels where Arrow has one and row by row otherwise.
//!
//! Semantics follow PostgreSQL/DataFusion (what pylance users know):
//!
//! | function | result |
//! |---|---|
//! | `concat(a, …)` | strings joined, NULLs skipped (NULL only if all are) |
//! | `a \|\| b` | joined; NULL if either is |
//! | `substr(s, start[, len])`, `substring(s FROM start FOR len)` | 1-based characters |
//! | `trim`/`btrim`/`ltrim`/`rtrim(s[, chars])`, `TRIM([BOTH\|LEADING\|TRAILING] [c FROM] s)` | spaces (or `chars`) removed |
//! | `replace(s, from, to)`, `reverse(s)`, `repeat(s, n)`, `initcap(s)` | |
//! | `left(s, n)`, `right(s, n)` | first/last `n` characters (negative: all but) |
//! | `lpad`/`rpad(s, n[, fill])` | padded or cut to `n` characters |
//! | `starts_with(s, p)`, `ends_with(s, p)`, `contains(s, sub)` | boolean (case-sensitive) |
//! | `strpos(s, sub)`, `POSITION(sub IN s)` | 1-based index, 0 if absent (int32) |
//! | `split_part(s, delim, n)` | `n`-th piece (negative: from the end) |
//! | `coalesce(a, …)`, `nullif(a, b)`, `CASE … END` | |
//! | `round(x[, d])`, `trunc(x[, d])`, `floor(x)`, `ceil(x)` | float32 stays float32, else float64 |
//! | `sqrt`, `exp`, `ln`, `log10`, `log2`, `power`/`pow(x, y)` | float64 (NaN outside the domain) |
//! | `greatest(a, …)`, `least(a, …)` | NULLs skipped |
//! | `extract(f FROM t)`, `date_part('f', t)` | int32; f: year, quarter, month, week, day, dow, doy, hour, minute, second, millisecond, microsecond, nanosecond |

use std::sync::Arc;

use arrow_arith::temporal::{date_part, DatePart};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int64Type};
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, Float64Array, Int32Array, LargeStringArray, StringArray};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;

use super::coerce;
use super::plan::{Expr, Kind};
use crate::error::{Error, Result};

const STRICT: CastOptions<'static> = CastOptions { safe: false, format_options: arrow_cast::display::FormatOptions::new() };

/// A function (or `CASE`) over planned arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Concat,
    ConcatOp,
    Substr,
    Trim,
    Ltrim,
    Rtrim,
    Replace,
    Left,
    Right,
    Reverse,
    Lpad,
    Rpad,
    StartsWith,
    EndsWith,
    Contains,
    Strpos,
    SplitPart,
    Repeat,
    Initcap,
    Coalesce,
    Nullif,
    /// `[cond, value]*` then an optional else value.
    Case {
        has_else: bool,
    },
    Round,
    Trunc,
    Floor,
    Ceil,
    Sqrt,
    Exp,
    Ln,
    Log10,
    Log2,
    Power,
    Greatest,
    Least,
    DatePart(DatePart),
}

/// A call: the function and its planned arguments.
#[derive(Debug, Clone)]
pub struct Call {
    pub func: Builtin,
    pub args: Vec<Expr>,
}

fn invalid(what: impl Into<String>) -> Error {
    Error::invalid_input(what)
}

/// The builtin named `name` (lower case), if it is one of ours.
pub fn lookup(name: &str) -> Option<Builtin> {
    use Builtin as B;
    Some(match name {
        "concat" => B::Concat,
        "substr" | "substring" => B::Substr,
        "trim" | "btrim" => B::Trim,
        "ltrim" => B::Ltrim,
        "rtrim" => B::Rtrim,
        "replace" => B::Replace,
        "left" => B::Left,
        "right" => B::Right,
        "reverse" => B::Reverse,
        "lpad" => B::Lpad,
        "rpad" => B::Rpad,
        "starts_with" => B::StartsWith,
        "ends_with" => B::EndsWith,
        "contains" => B::Contains,
        "strpos" | "instr" => B::Strpos,
        "split_part" => B::SplitPart,
        "repeat" => B::Repeat,
        "initcap" => B::Initcap,
        "coalesce" => B::Coalesce,
        "nullif" => B::Nullif,
        "round" => B::Round,
        "trunc" => B::Trunc,
        "floor" => B::Floor,
        "ceil" | "ceiling" => B::Ceil,
        "sqrt" => B::Sqrt,
        "exp" => B::Exp,
        "ln" => B::Ln,
        "log10" => B::Log10,
        "log2" => B::Log2,
        "power" | "pow" => B::Power,
        "greatest" => B::Greatest,
        "least" => B::Least,
        _ => return None,
    })
}

/// The names [`lookup`] knows, for error messages.
pub const NAMES: &str = "concat, substr/substring, trim/btrim/ltrim/rtrim, replace, left, right, reverse, lpad, rpad, \
starts_with, ends_with, strpos, split_part, repeat, initcap, coalesce, nullif, round, trunc, floor, ceil, sqrt, exp, ln, \
log10, log2, power, greatest, least, date_part";

/// A date part by name (`extract`'s field, `date_part`'s first argument).
pub fn date_part_named(name: &str) -> Result<DatePart> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "year" | "years" => DatePart::Year,
        "quarter" => DatePart::Quarter,
        "month" | "months" => DatePart::Month,
        "week" | "weeks" => DatePart::Week,
        "day" | "days" => DatePart::Day,
        "dow" | "dayofweek" => DatePart::DayOfWeekSunday0,
        "doy" | "dayofyear" => DatePart::DayOfYear,
        "hour" | "hours" => DatePart::Hour,
        "minute" | "minutes" => DatePart::Minute,
        "second" | "seconds" => DatePart::Second,
        "millisecond" | "milliseconds" => DatePart::Millisecond,
        "microsecond" | "microseconds" => DatePart::Microsecond,
        "nanosecond" | "nanoseconds" => DatePart::Nanosecond,
        other => {
            return Err(invalid(format!(
                "unknown date part {other:?} (year, quarter, month, week, day, dow, doy, hour, minute, second, millisecond, microsecond, nanosecond)"
            )))
        }
    })
}

fn is_large(args: &[Expr]) -> bool {
    args.iter().any(|a| matches!(a.data_type, DataType::LargeUtf8))
}

/// A string argument (NULL literals become strings).
fn string_arg(e: Expr, what: &str) -> Result<Expr> {
    match &e.data_type {
        DataType::Null => coerce::cast_to(e, &DataType::Utf8, false),
        t if coerce::is_string(t) => Ok(e),
        t => Err(invalid(format!("{what} needs a string, not a value of type {t}"))),
    }
}

/// An integer argument, as Int64.
fn int_arg(e: Expr, what: &str) -> Result<Expr> {
    match &e.data_type {
        DataType::Null => coerce::cast_to(e, &DataType::Int64, false),
        t if t.is_integer() => coerce::cast_to(e, &DataType::Int64, false),
        t => Err(invalid(format!("{what} needs an integer, not a value of type {t}"))),
    }
}

/// A numeric argument, as Float64 (Float32 kept when `keep32`).
fn float_arg(e: Expr, what: &str, keep32: bool) -> Result<Expr> {
    match &e.data_type {
        DataType::Float32 if keep32 => Ok(e),
        DataType::Null => coerce::cast_to(e, &DataType::Float64, false),
        t if coerce::is_numeric(t) => coerce::cast_to(e, &DataType::Float64, false),
        t => Err(invalid(format!("{what} needs a number, not a value of type {t}"))),
    }
}

fn arity(name: &str, args: &[Expr], min: usize, max: usize) -> Result<()> {
    if args.len() < min || args.len() > max {
        let want = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(invalid(format!("{name}() takes {want} argument(s), got {}", args.len())));
    }
    Ok(())
}

/// The type all of `args` convert to (for coalesce, CASE results,
/// greatest/least), NULLs taking the others' type.
fn common(args: &[Expr], what: &str) -> Result<DataType> {
    let mut t = DataType::Null;
    for a in args {
        if matches!(a.data_type, DataType::Null) || a.data_type == t {
            continue;
        }
        if matches!(t, DataType::Null) {
            t = a.data_type.clone();
            continue;
        }
        let probe_l = Expr::literal(new_null_array(&t, 1));
        let probe_r = Expr::literal(new_null_array(&a.data_type, 1));
        let (l, _) = coerce::coerce_comparison(probe_l, probe_r)
            .map_err(|_| invalid(format!("{what}: values of types {t} and {} do not mix", a.data_type)))?;
        t = l.data_type;
    }
    Ok(t)
}

fn all_to(args: Vec<Expr>, t: &DataType) -> Result<Vec<Expr>> {
    args.into_iter().map(|a| coerce::cast_to(a, t, false)).collect()
}

/// Plan a call of `func` with `args` (already planned): check and convert
/// the arguments, find the result type.
pub fn plan(func: Builtin, name: &str, args: Vec<Expr>) -> Result<Expr> {
    use Builtin as B;
    let (args, data_type) = match func {
        B::Concat => {
            arity(name, &args, 1, usize::MAX)?;
            let large = is_large(&args);
            let args = args
                .into_iter()
                .map(|a| {
                    if coerce::is_string(&a.data_type) || matches!(a.data_type, DataType::Null) {
                        string_arg(a, name)
                    } else {
                        coerce::cast_to(a, &DataType::Utf8, true)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            (args, if large { DataType::LargeUtf8 } else { DataType::Utf8 })
        }
        B::ConcatOp => {
            let large = is_large(&args);
            let t = if large { DataType::LargeUtf8 } else { DataType::Utf8 };
            let args = args.into_iter().map(|a| coerce::cast_to(a, &t, true)).collect::<Result<Vec<_>>>()?;
            (args, t)
        }
        B::Substr | B::Left | B::Right | B::Repeat => {
            let (min, max) = if func == B::Substr { (2, 3) } else { (2, 2) };
            arity(name, &args, min, max)?;
            let mut it = args.into_iter();
            let s = string_arg(it.next().expect("arity"), name)?;
            let t = if matches!(s.data_type, DataType::LargeUtf8) { DataType::LargeUtf8 } else { DataType::Utf8 };
            let mut out = vec![s];
            for a in it {
                out.push(int_arg(a, name)?);
            }
            (out, t)
        }
        B::Trim | B::Ltrim | B::Rtrim | B::Reverse | B::Initcap => {
            let max = if matches!(func, B::Reverse | B::Initcap) { 1 } else { 2 };
            arity(name, &args, 1, max)?;
            let args = args.into_iter().map(|a| string_arg(a, name)).collect::<Result<Vec<_>>>()?;
            let t = if matches!(args[0].data_type, DataType::LargeUtf8) { DataType::LargeUtf8 } else { DataType::Utf8 };
            (args, t)
        }
        B::Replace => {
            arity(name, &args, 3, 3)?;
            let args = args.into_iter().map(|a| string_arg(a, name)).collect::<Result<Vec<_>>>()?;
            let t = if matches!(args[0].data_type, DataType::LargeUtf8) { DataType::LargeUtf8 } else { DataType::Utf8 };
            (args, t)
        }
        B::Lpad | B::Rpad => {
            arity(name, &args, 2, 3)?;
            let mut it = args.into_iter();
            let s = string_arg(it.next().expect("arity"), name)?;
            let n = int_arg(it.next().expect("arity"), name)?;
            let t = if matches!(s.data_type, DataType::LargeUtf8) { DataType::LargeUtf8 } else { DataType::Utf8 };
            let mut out = vec![s, n];
            if let Some(f) = it.next() {
                out.push(string_arg(f, name)?);
            }
            (out, t)
        }
        B::StartsWith | B::EndsWith | B::Strpos | B::Contains => {
            arity(name, &args, 2, 2)?;
            let args = args.into_iter().map(|a| string_arg(a, name)).collect::<Result<Vec<_>>>()?;
            (args, if func == B::Strpos { DataType::Int32 } else { DataType::Boolean })
        }
        B::SplitPart => {
            arity(name, &args, 3, 3)?;
            let mut it = args.into_iter();
            let s = string_arg(it.next().expect("arity"), name)?;
            let d = string_arg(it.next().expect("arity"), name)?;
            let n = int_arg(it.next().expect("arity"), name)?;
            (vec![s, d, n], DataType::Utf8)
        }
        B::Coalesce | B::Greatest | B::Least => {
            arity(name, &args, 1, usize::MAX)?;
            let t = common(&args, name)?;
            (all_to(args, &t)?, t)
        }
        B::Nullif => {
            arity(name, &args, 2, 2)?;
            let mut it = args.into_iter();
            let (a, b) = coerce::coerce_comparison(it.next().expect("arity"), it.next().expect("arity"))?;
            let t = a.data_type.clone();
            (vec![a, b], t)
        }
        B::Case { has_else } => {
            let pairs = (args.len() - usize::from(has_else)) / 2;
            let mut conds = Vec::with_capacity(pairs);
            let mut values = Vec::with_capacity(pairs + 1);
            for (i, a) in args.into_iter().enumerate() {
                if i < 2 * pairs && i % 2 == 0 {
                    conds.push(match a.data_type {
                        DataType::Boolean => a,
                        DataType::Null => coerce::cast_to(a, &DataType::Boolean, false)?,
                        ref t => return Err(invalid(format!("a CASE condition must be boolean, not {t}"))),
                    });
                } else {
                    values.push(a);
                }
            }
            let t = common(&values, "CASE")?;
            let mut values = all_to(values, &t)?.into_iter();
            let mut out = Vec::new();
            for c in conds {
                out.push(c);
                out.push(values.next().expect("paired"));
            }
            out.extend(values);
            (out, t)
        }
        B::Round | B::Trunc => {
            arity(name, &args, 1, 2)?;
            let mut it = args.into_iter();
            let x = float_arg(it.next().expect("arity"), name, true)?;
            let t = x.data_type.clone();
            let mut out = vec![x];
            if let Some(d) = it.next() {
                out.push(int_arg(d, name)?);
            }
            (out, t)
        }
        B::Floor | B::Ceil => {
            arity(name, &args, 1, 1)?;
            let x = float_arg(args.into_iter().next().expect("arity"), name, true)?;
            let t = x.data_type.clone();
            (vec![x], t)
        }
        B::Sqrt | B::Exp | B::Ln | B::Log10 | B::Log2 => {
            arity(name, &args, 1, 1)?;
            (vec![float_arg(args.into_iter().next().expect("arity"), name, false)?], DataType::Float64)
        }
        B::Power => {
            arity(name, &args, 2, 2)?;
            let args = args.into_iter().map(|a| float_arg(a, name, false)).collect::<Result<Vec<_>>>()?;
            (args, DataType::Float64)
        }
        B::DatePart(_) => {
            arity(name, &args, 1, 1)?;
            let a = args.into_iter().next().expect("arity");
            if !a.data_type.is_temporal() && !matches!(a.data_type, DataType::Null) {
                return Err(invalid(format!("{name} needs a date or time, not a value of type {}", a.data_type)));
            }
            (vec![a], DataType::Int32)
        }
    };
    Ok(Expr { kind: Kind::Call(Box::new(Call { func, args })), data_type })
}

/// Whether the call can return NULL, given which arguments can.
pub fn nullable(call: &Call, arg_nullable: &[bool]) -> bool {
    use Builtin as B;
    match call.func {
        B::Coalesce => arg_nullable.iter().all(|n| *n),
        // DataFusion rewrites starts_with into LIKE and types strpos by its arguments
        B::ConcatOp | B::StartsWith | B::Strpos => arg_nullable.iter().any(|n| *n),
        B::Case { has_else } => {
            let pairs = (arg_nullable.len() - usize::from(has_else)) / 2;
            !has_else || (0..pairs).any(|i| arg_nullable[2 * i + 1]) || arg_nullable[arg_nullable.len() - 1]
        }
        _ => true,
    }
}

fn strs(a: &ArrayRef) -> Result<Vec<Option<String>>> {
    let u = cast_with_options(a, &DataType::LargeUtf8, &STRICT).map_err(Error::invalid_arrow)?;
    Ok(u.as_string::<i64>().iter().map(|o| o.map(str::to_string)).collect())
}

fn ints(a: &ArrayRef) -> Result<Vec<Option<i64>>> {
    Ok(cast_with_options(a, &DataType::Int64, &STRICT).map_err(Error::invalid_arrow)?.as_primitive::<Int64Type>().iter().collect())
}

fn string_array(values: Vec<Option<String>>, t: &DataType) -> ArrayRef {
    match t {
        DataType::LargeUtf8 => Arc::new(values.into_iter().collect::<LargeStringArray>()),
        _ => Arc::new(values.into_iter().collect::<StringArray>()),
    }
}

fn substr(s: &str, start: i64, len: Option<i64>) -> Result<String> {
    if let Some(l) = len {
        if l < 0 {
            return Err(invalid(format!("substring length must not be negative, got {l}")));
        }
    }
    let end = len.map(|l| start.saturating_add(l));
    Ok(s.chars()
        .enumerate()
        .filter(|(i, _)| {
            let p = *i as i64 + 1;
            p >= start && end.is_none_or(|e| p < e)
        })
        .map(|(_, c)| c)
        .collect())
}

fn pad(s: &str, n: i64, fill: &str, left: bool) -> String {
    let n = n.max(0) as usize;
    let chars: Vec<char> = s.chars().collect();
    if chars.len() >= n || fill.is_empty() {
        return chars.into_iter().take(n).collect();
    }
    let padding: String = fill.chars().cycle().take(n - chars.len()).collect();
    if left {
        padding + s
    } else {
        format!("{s}{padding}")
    }
}

fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut start = true;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if start {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
            start = false;
        } else {
            out.push(c);
            start = true;
        }
    }
    out
}

fn split_part(s: &str, d: &str, n: i64) -> Result<String> {
    if n == 0 {
        return Err(invalid("split_part: the field position must not be 0"));
    }
    let parts: Vec<&str> = if d.is_empty() { vec![s] } else { s.split(d).collect() };
    let i = if n > 0 { n - 1 } else { parts.len() as i64 + n };
    Ok(if i >= 0 && (i as usize) < parts.len() { parts[i as usize].to_string() } else { String::new() })
}

fn floats(a: &ArrayRef, f: impl Fn(f64) -> f64) -> ArrayRef {
    match a.data_type() {
        DataType::Float32 => Arc::new(a.as_primitive::<Float32Type>().unary::<_, Float32Type>(|x| f(x as f64) as f32)) as ArrayRef,
        _ => Arc::new(a.as_primitive::<Float64Type>().unary::<_, Float64Type>(f)),
    }
}

fn round_to(x: f64, d: i64, trunc: bool) -> f64 {
    let m = 10f64.powi(d.clamp(-300, 300) as i32);
    let y = x * m;
    (if trunc { y.trunc() } else { y.round() }) / m
}

/// True where `b` is true (nulls count as false).
fn is_true(b: &BooleanArray) -> BooleanArray {
    if b.null_count() > 0 {
        arrow_select::filter::prep_null_mask_filter(b)
    } else {
        b.clone()
    }
}

/// Keep `a` where it is not null, else `b` (same type).
fn fill(a: &ArrayRef, b: &ArrayRef) -> Result<ArrayRef> {
    let keep = arrow_arith::boolean::is_not_null(a).map_err(Error::invalid_arrow)?;
    arrow_select::zip::zip(&keep, a, b).map_err(Error::invalid_arrow)
}

/// Evaluate a call on its argument arrays (each of `n` rows).
pub fn eval(call: &Call, t: &DataType, args: &[ArrayRef], n: usize) -> Result<ArrayRef> {
    use Builtin as B;
    let row_strings = |f: &dyn Fn(usize, &[Vec<Option<String>>]) -> Result<Option<String>>| -> Result<ArrayRef> {
        let cols = args.iter().map(strs).collect::<Result<Vec<_>>>()?;
        let vals = (0..n).map(|i| f(i, &cols)).collect::<Result<Vec<_>>>()?;
        Ok(string_array(vals, t))
    };
    Ok(match call.func {
        B::Concat => row_strings(&|i, c| {
            let parts: Vec<&str> = c.iter().filter_map(|col| col[i].as_deref()).collect();
            Ok(if parts.is_empty() { None } else { Some(parts.concat()) })
        })?,
        B::ConcatOp => {
            let mut acc = args[0].clone();
            for a in &args[1..] {
                acc = arrow_string::concat_elements::concat_elements_dyn(acc.as_ref(), a.as_ref()).map_err(Error::invalid_arrow)?;
            }
            acc
        }
        B::Substr | B::Left | B::Right | B::Repeat | B::Lpad | B::Rpad => {
            let s = strs(&args[0])?;
            let k = ints(&args[1])?;
            let third = match args.get(2) {
                Some(a) if call.func == B::Substr => Some((Some(ints(a)?), None)),
                Some(a) => Some((None, Some(strs(a)?))),
                None => None,
            };
            let vals = (0..n)
                .map(|i| -> Result<Option<String>> {
                    let (Some(s), Some(k)) = (&s[i], k[i]) else { return Ok(None) };
                    Ok(Some(match call.func {
                        B::Substr => {
                            let len = match &third {
                                Some((Some(l), _)) => match l[i] {
                                    Some(l) => Some(l),
                                    None => return Ok(None),
                                },
                                _ => None,
                            };
                            substr(s, k, len)?
                        }
                        B::Left => {
                            let c = s.chars().count() as i64;
                            s.chars().take(if k >= 0 { k } else { (c + k).max(0) } as usize).collect()
                        }
                        B::Right => {
                            let c = s.chars().count() as i64;
                            s.chars().skip(if k >= 0 { (c - k).max(0) } else { (-k).min(c) } as usize).collect()
                        }
                        B::Repeat => s.repeat(k.clamp(0, 1 << 20) as usize),
                        _ => {
                            let fill = match &third {
                                Some((_, Some(f))) => match &f[i] {
                                    Some(f) => f.clone(),
                                    None => return Ok(None),
                                },
                                _ => " ".to_string(),
                            };
                            pad(s, k, &fill, call.func == B::Lpad)
                        }
                    }))
                })
                .collect::<Result<Vec<_>>>()?;
            string_array(vals, t)
        }
        B::Trim | B::Ltrim | B::Rtrim => row_strings(&|i, c| {
            let Some(s) = &c[0][i] else { return Ok(None) };
            let chars: Vec<char> = match c.get(1) {
                Some(col) => match &col[i] {
                    Some(x) => x.chars().collect(),
                    None => return Ok(None),
                },
                None => vec![' '],
            };
            let m = |ch: char| chars.contains(&ch);
            Ok(Some(match call.func {
                B::Ltrim => s.trim_start_matches(m).to_string(),
                B::Rtrim => s.trim_end_matches(m).to_string(),
                _ => s.trim_matches(m).to_string(),
            }))
        })?,
        B::Reverse => row_strings(&|i, c| Ok(c[0][i].as_ref().map(|s| s.chars().rev().collect())))?,
        B::Initcap => row_strings(&|i, c| Ok(c[0][i].as_deref().map(initcap)))?,
        B::Replace => row_strings(&|i, c| {
            Ok(match (&c[0][i], &c[1][i], &c[2][i]) {
                (Some(s), Some(f), Some(to)) => Some(if f.is_empty() { s.clone() } else { s.replace(f.as_str(), to) }),
                _ => None,
            })
        })?,
        B::SplitPart => {
            let s = strs(&args[0])?;
            let d = strs(&args[1])?;
            let k = ints(&args[2])?;
            let vals = (0..n)
                .map(|i| match (&s[i], &d[i], k[i]) {
                    (Some(s), Some(d), Some(k)) => split_part(s, d, k).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<Vec<_>>>()?;
            string_array(vals, t)
        }
        B::Contains => {
            // Arrow's kernel (what DataFusion's contains runs): both sides
            // of one string type; a null on either side gives null.
            let t = args[0].data_type();
            let needle =
                if args[1].data_type() == t { args[1].clone() } else { cast_with_options(&args[1], t, &STRICT).map_err(Error::invalid_arrow)? };
            Arc::new(arrow_string::like::contains(&args[0], &needle).map_err(Error::invalid_arrow)?)
        }
        B::StartsWith | B::EndsWith => {
            let (s, p) = (strs(&args[0])?, strs(&args[1])?);
            Arc::new(
                (0..n)
                    .map(|i| match (&s[i], &p[i]) {
                        (Some(s), Some(p)) => Some(if call.func == B::StartsWith { s.starts_with(p.as_str()) } else { s.ends_with(p.as_str()) }),
                        _ => None,
                    })
                    .collect::<BooleanArray>(),
            )
        }
        B::Strpos => {
            let (s, p) = (strs(&args[0])?, strs(&args[1])?);
            Arc::new(
                (0..n)
                    .map(|i| match (&s[i], &p[i]) {
                        (Some(s), Some(p)) => Some(s.find(p.as_str()).map_or(0, |b| s[..b].chars().count() as i32 + 1)),
                        _ => None,
                    })
                    .collect::<Int32Array>(),
            )
        }
        B::Coalesce => {
            let mut acc = args[0].clone();
            for a in &args[1..] {
                acc = fill(&acc, a)?;
            }
            acc
        }
        B::Nullif => {
            let eq = arrow_ord::cmp::eq(&args[0], &args[1]).map_err(Error::invalid_arrow)?;
            arrow_select::nullif::nullif(&args[0], &eq).map_err(Error::invalid_arrow)?
        }
        B::Case { has_else } => {
            let pairs = (args.len() - usize::from(has_else)) / 2;
            let mut acc = if has_else { args[args.len() - 1].clone() } else { new_null_array(t, n) };
            for p in (0..pairs).rev() {
                let cond = is_true(args[2 * p].as_boolean());
                acc = arrow_select::zip::zip(&cond, &args[2 * p + 1], &acc).map_err(Error::invalid_arrow)?;
            }
            acc
        }
        B::Greatest | B::Least => {
            let mut acc = args[0].clone();
            for a in &args[1..] {
                let better = if call.func == B::Greatest { arrow_ord::cmp::gt(a, &acc) } else { arrow_ord::cmp::lt(a, &acc) };
                let better = better.map_err(Error::invalid_arrow)?;
                let better = is_true(&better);
                let take_new = arrow_arith::boolean::or(&better, &arrow_arith::boolean::is_null(&acc).map_err(Error::invalid_arrow)?)
                    .map_err(Error::invalid_arrow)?;
                acc = arrow_select::zip::zip(&take_new, a, &acc).map_err(Error::invalid_arrow)?;
            }
            acc
        }
        B::Round | B::Trunc => {
            let trunc = call.func == B::Trunc;
            match args.get(1) {
                None => floats(&args[0], |x| round_to(x, 0, trunc)),
                Some(d) => {
                    let d = ints(d)?;
                    let x = cast_with_options(&args[0], &DataType::Float64, &STRICT).map_err(Error::invalid_arrow)?;
                    let out: Float64Array = x.as_primitive::<Float64Type>().iter().zip(d).map(|(x, d)| Some(round_to(x?, d?, trunc))).collect();
                    cast_with_options(&(Arc::new(out) as ArrayRef), t, &STRICT).map_err(Error::invalid_arrow)?
                }
            }
        }
        B::Floor => floats(&args[0], f64::floor),
        B::Ceil => floats(&args[0], f64::ceil),
        B::Sqrt => floats(&args[0], f64::sqrt),
        B::Exp => floats(&args[0], f64::exp),
        B::Ln => floats(&args[0], f64::ln),
        B::Log10 => floats(&args[0], f64::log10),
        B::Log2 => floats(&args[0], f64::log2),
        B::Power => {
            let (a, b) = (args[0].as_primitive::<Float64Type>(), args[1].as_primitive::<Float64Type>());
            Arc::new(a.iter().zip(b.iter()).map(|(x, y)| Some(x?.powf(y?))).collect::<Float64Array>())
        }
        B::DatePart(part) => {
            if matches!(args[0].data_type(), DataType::Null) {
                new_null_array(&DataType::Int32, n)
            } else {
                date_part(args[0].as_ref(), part).map_err(Error::invalid_arrow)?
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_helpers() {
        assert_eq!(substr("hello", 2, None).unwrap(), "ello");
        assert_eq!(substr("hello", 0, Some(3)).unwrap(), "he");
        assert_eq!(substr("héllo", 2, Some(2)).unwrap(), "él");
        assert!(substr("x", 1, Some(-1)).is_err());
        assert_eq!(pad("ab", 5, "xy", true), "xyxab");
        assert_eq!(pad("abcdef", 3, "*", false), "abc");
        assert_eq!(initcap("hello wORLD-foo"), "Hello World-Foo");
        assert_eq!(split_part("a,b,c", ",", 2).unwrap(), "b");
        assert_eq!(split_part("a,b,c", ",", -1).unwrap(), "c");
        assert_eq!(split_part("a,b,c", ",", 9).unwrap(), "");
        assert_eq!(round_to(2.345, 2, false), 2.35);
        assert_eq!(round_to(-2.345, 1, true), -2.3);
    }
}
