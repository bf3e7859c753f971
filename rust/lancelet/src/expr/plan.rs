//! From SQL text to a typed [`Expr`] tree checked against a schema.
//!
//! The syntax tree comes from [`super::parse`], whose depth is bounded, so
//! the recursive passes here (planning, folding, collecting columns) stay
//! shallow; long `AND`/`OR` chains are n-ary nodes walked in loops and an
//! `IN` list is one set ([`super::inlist`]).

use std::sync::Arc;

use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, RecordBatchOptions, StringArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use sqlparser::ast;

use super::array::{self, ArrayFunc};
use super::coerce::{self, cast_literal};
use super::eval;
use super::functions;
use super::inlist::{self, InSet};
use super::parse::{self, at, BinOp, IsTest, Node, Syn};
use crate::error::{Error, Result};

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    Distinct,
    NotDistinct,
}

/// Arithmetic operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// Boolean tests: `IS [NOT] TRUE|FALSE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolTest {
    True,
    NotTrue,
    False,
    NotFalse,
}

/// Scalar functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Lower,
    Upper,
    Length,
    Abs,
}

/// A node of a planned expression.
#[derive(Debug, Clone)]
pub enum Kind {
    /// A top-level column, then struct children.
    Column {
        name: String,
        path: Vec<String>,
    },
    /// A constant: an array of one value.
    Literal(ArrayRef),
    Cast(Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    /// Two or more terms, all true (a chain `a AND b AND ...` is one node).
    And(Vec<Expr>),
    /// Two or more terms, any true.
    Or(Vec<Expr>),
    /// `expr IN (values)` as one set lookup (`NOT IN` is `Not(InList)`).
    InList {
        expr: Box<Expr>,
        set: Arc<InSet>,
    },
    Not(Box<Expr>),
    IsNull(Box<Expr>),
    IsNotNull(Box<Expr>),
    Test(BoolTest, Box<Expr>),
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    Func(Func, Box<Expr>),
    /// A function of [`super::functions`] (or `CASE`).
    Call(Box<super::functions::Call>),
    /// `array_has_any/all(list, [values])`, `array_has(list, value)`:
    /// constant values of the list's element type (see [`super::array`]).
    ArrayHas {
        func: ArrayFunc,
        list: Box<Expr>,
        values: ArrayRef,
    },
}

/// A typed expression.
#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: Kind,
    pub data_type: DataType,
}

impl Expr {
    pub(crate) fn literal(a: ArrayRef) -> Expr {
        Expr { data_type: a.data_type().clone(), kind: Kind::Literal(a) }
    }

    pub(crate) fn is_literal(&self) -> bool {
        matches!(self.kind, Kind::Literal(_))
    }

    /// The direct sub-expressions, in order.
    fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            Kind::Column { .. } | Kind::Literal(_) => Vec::new(),
            Kind::Cast(e)
            | Kind::Neg(e)
            | Kind::Not(e)
            | Kind::IsNull(e)
            | Kind::IsNotNull(e)
            | Kind::Test(_, e)
            | Kind::Func(_, e)
            | Kind::InList { expr: e, .. }
            | Kind::ArrayHas { list: e, .. } => vec![e],
            Kind::Cmp(_, a, b) | Kind::Arith(_, a, b) | Kind::Like { expr: a, pattern: b, .. } => vec![a, b],
            Kind::And(terms) | Kind::Or(terms) => terms.iter().collect(),
            Kind::Call(c) => c.args.iter().collect(),
        }
    }

    /// Top-level columns read, in first-use order.
    pub fn columns(&self, out: &mut Vec<String>) {
        match &self.kind {
            Kind::Column { name, .. } => {
                if !out.contains(name) {
                    out.push(name.clone())
                }
            }
            _ => self.children().into_iter().for_each(|c| c.columns(out)),
        }
    }

    /// Every column reference as (top-level column, struct path below it).
    pub fn column_paths(&self, out: &mut Vec<(String, Vec<String>)>) {
        match &self.kind {
            Kind::Column { name, path } => {
                let c = (name.clone(), path.clone());
                if !out.contains(&c) {
                    out.push(c);
                }
            }
            _ => self.children().into_iter().for_each(|c| c.column_paths(out)),
        }
    }

    fn children_literal(&self) -> bool {
        match &self.kind {
            Kind::Column { .. } | Kind::Literal(_) => false,
            _ => self.children().into_iter().all(Expr::is_literal),
        }
    }
}

/// Stack of the thread that parses and plans a filter (reserved, not
/// committed: only what the recursion touches is used).
const PLAN_STACK: usize = 64 << 20;

/// Parse and plan a filter against a schema.
///
/// Runs on a thread of its own with a [`PLAN_STACK`] stack: the recursion
/// is bounded ([`parse::MAX_DEPTH`] levels), but a level's frames are large
/// in unoptimized builds and the caller's thread may have a small stack (a
/// Python thread, a Spark worker).
pub fn plan_filter(sql: &str, schema: &Schema) -> Result<Expr> {
    let expr = plan_expr(sql, schema, "filter")?;
    match expr.data_type {
        DataType::Boolean => Ok(expr),
        ref t => Err(Error::invalid_input(format!("filter `{}`: the filter must be a boolean expression, but it is of type {t}", shorten(sql)))),
    }
}

/// A parse-and-plan request for the planning thread.
type PlanJob = Box<dyn FnOnce() + Send>;

thread_local! {
    /// True on the planning thread (a plan made there runs in place).
    static ON_PLANNER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The planning thread, started on first use with a [`PLAN_STACK`] stack
/// and kept for the life of the process (`None` if it cannot start); a
/// forked child starts its own (see [`crate::process`]). A
/// thread started per filter cost a clone, a 64 MiB stack map and
/// thread-local set-up on every query: about a tenth of the CPU of an
/// indexed one-row lookup.
fn planner() -> Option<&'static std::sync::mpsc::Sender<PlanJob>> {
    static PLANNER: crate::process::PerProcess<Option<std::sync::mpsc::Sender<PlanJob>>> = crate::process::PerProcess::new();
    PLANNER
        .get(|| {
            let (tx, rx) = std::sync::mpsc::channel::<PlanJob>();
            std::thread::Builder::new()
                .name("lancelet-filter".into())
                .stack_size(PLAN_STACK)
                .spawn(move || {
                    ON_PLANNER.with(|c| c.set(true));
                    for job in rx {
                        job();
                    }
                })
                .ok()?;
            Some(tx)
        })
        .as_ref()
}

/// Parse and plan an expression of any type (`what` names it in errors:
/// "filter", "expression", "update value of column ..."), on the planning
/// thread (a [`PLAN_STACK`] stack) as [`plan_filter`]. Requests from
/// several threads queue there; planning takes microseconds.
pub(crate) fn plan_expr(sql: &str, schema: &Schema, what: &str) -> Result<Expr> {
    if ON_PLANNER.with(|c| c.get()) {
        return plan_expr_here(sql, schema, what);
    }
    let Some(tx) = planner() else {
        return Err(Error::Internal { what: "cannot start the filter planning thread".into() });
    };
    let (sql, schema, what) = (sql.to_string(), schema.clone(), what.to_string());
    let (back, answer) = std::sync::mpsc::sync_channel(1);
    let job: PlanJob = Box::new(move || {
        // A panic goes back to the caller, as a joined thread's would.
        let _ = back.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| plan_expr_here(&sql, &schema, &what))));
    });
    tx.send(job).map_err(|_| Error::Internal { what: "the filter planning thread has stopped".into() })?;
    match answer.recv() {
        Ok(Ok(r)) => r,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => Err(Error::Internal { what: "the filter planning thread has stopped".into() }),
    }
}

fn plan_expr_here(sql: &str, schema: &Schema, what: &str) -> Result<Expr> {
    let shown = shorten(sql);
    let bad = |msg: String| Error::invalid_input(format!("{what} `{shown}`: {msg}"));
    if sql.trim().is_empty() {
        return Err(bad(format!("empty {what}")));
    }
    let strip = |e: Error| match e {
        Error::InvalidInput { what, source: Some(source) } => bad(what).with_source(source),
        Error::InvalidInput { what, source: None } => bad(what),
        other => other,
    };
    let tree = parse::parse(sql).map_err(strip)?;
    let planner = Planner { schema };
    let expr = planner.plan(&tree).map_err(strip)?;
    drop(tree);
    Ok(expr)
}

/// The filter text as error messages show it: long filters (an `IN` list
/// of 100,000 values) are cut in the middle.
pub fn shorten(sql: &str) -> String {
    const KEEP: usize = 120;
    let chars = sql.chars().count();
    if chars <= 2 * KEEP + 20 {
        return sql.to_string();
    }
    let head: String = sql.chars().take(KEEP).collect();
    let tail: String = sql.chars().skip(chars - KEEP).collect();
    format!("{head} ... ({} characters) ... {tail}", chars - 2 * KEEP)
}

pub(crate) struct Planner<'a> {
    schema: &'a Schema,
}

fn invalid(what: impl Into<String>) -> Error {
    Error::invalid_input(what)
}

fn names(fields: &Fields) -> String {
    fields.iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
}

/// Find a field: exact name first, then (unquoted only) a unique
/// case-insensitive match.
fn find<'f>(fields: &'f Fields, ident: &ast::Ident) -> Option<&'f Arc<Field>> {
    if let Some(f) = fields.iter().find(|f| f.name() == &ident.value) {
        return Some(f);
    }
    if ident.quote_style.is_some() {
        return None;
    }
    let mut it = fields.iter().filter(|f| f.name().eq_ignore_ascii_case(&ident.value));
    match (it.next(), it.next()) {
        (Some(f), None) => Some(f),
        _ => None,
    }
}

fn logic(and: bool, terms: Vec<Expr>) -> Expr {
    let kind = if and { Kind::And(terms) } else { Kind::Or(terms) };
    Expr { kind, data_type: DataType::Boolean }
}

fn not(x: Expr) -> Expr {
    Expr { kind: Kind::Not(Box::new(x)), data_type: DataType::Boolean }
}

impl Planner<'_> {
    fn column(&self, idents: &[ast::Ident]) -> Result<Expr> {
        let first = &idents[0];
        let fields = self.schema.fields();
        let Some(top) = find(fields, first) else {
            return Err(invalid(format!("no column named `{}`{}; available columns: {}", first.value, at(first.span.start), names(fields))));
        };
        let mut dt = top.data_type().clone();
        let mut path = Vec::new();
        let mut shown = top.name().clone();
        for id in &idents[1..] {
            let DataType::Struct(children) = &dt else {
                return Err(invalid(format!("`{shown}` is of type {dt}, not a struct, so it has no field `{}`", id.value)));
            };
            let Some(child) = find(children, id) else {
                return Err(invalid(format!(
                    "struct column `{shown}` has no field `{}`{}; its fields: {}",
                    id.value,
                    at(id.span.start),
                    names(children)
                )));
            };
            shown = format!("{shown}.{}", child.name());
            path.push(child.name().clone());
            dt = child.data_type().clone();
        }
        Ok(Expr { kind: Kind::Column { name: top.name().clone(), path }, data_type: dt })
    }

    /// Plan a node and fold it if it is constant. Recursion follows the
    /// syntax tree, whose depth the parser bounds.
    pub(crate) fn plan(&self, n: &Node) -> Result<Expr> {
        let out = self.plan_inner(n)?;
        fold(out)
    }

    fn plan_inner(&self, n: &Node) -> Result<Expr> {
        match &n.syn {
            Syn::Column(ids) => self.column(ids),
            Syn::Number(s) => number(s),
            Syn::Str(s) => Ok(Expr::literal(Arc::new(StringArray::from(vec![s.clone()])))),
            Syn::Bool(b) => Ok(Expr::literal(Arc::new(BooleanArray::from(vec![*b])))),
            Syn::Null => Ok(Expr::literal(new_null_array(&DataType::Null, 1))),
            Syn::Typed { ty, text } => {
                let dt = sql_type(ty)?;
                let lit = Expr::literal(Arc::new(StringArray::from(vec![text.clone()])));
                cast_literal(&lit, &dt).map_err(|_| invalid(format!("`{text}` is not a valid {ty} literal")))
            }
            Syn::Cast { expr, ty } => {
                let inner = self.plan(expr)?;
                let dt = sql_type(ty)?;
                coerce::cast_to(inner, &dt, true)
            }
            Syn::Not(x) => Ok(not(boolean(self.plan(x)?, "NOT")?)),
            Syn::Plus(x) => {
                let inner = self.plan(x)?;
                numeric(&inner, "unary +")?;
                Ok(inner)
            }
            Syn::Neg(x) => {
                let inner = self.plan(x)?;
                if !coerce::is_numeric(&inner.data_type) && !matches!(inner.data_type, DataType::Null) {
                    return Err(invalid(format!("cannot negate a value of type {}", inner.data_type)));
                }
                let dt = inner.data_type.clone();
                Ok(Expr { kind: Kind::Neg(Box::new(inner)), data_type: dt })
            }
            Syn::Binary { op: BinOp::Cmp(op), left, right } => self.compare(*op, self.plan(left)?, self.plan(right)?),
            Syn::Binary { op: BinOp::Concat, left, right } => {
                functions::plan(functions::Builtin::ConcatOp, "||", vec![self.plan(left)?, self.plan(right)?])
            }
            Syn::Case { operand, whens, otherwise } => {
                let operand = operand.as_ref().map(|o| self.plan(o)).transpose()?;
                let mut args = Vec::with_capacity(whens.len() * 2 + 1);
                for (w, v) in whens {
                    args.push(match &operand {
                        Some(o) => self.compare(CmpOp::Eq, o.clone(), self.plan(w)?)?,
                        None => self.plan(w)?,
                    });
                    args.push(self.plan(v)?);
                }
                if let Some(x) = otherwise {
                    args.push(self.plan(x)?);
                }
                functions::plan(functions::Builtin::Case { has_else: otherwise.is_some() }, "CASE", args)
            }
            Syn::Binary { op: BinOp::Arith(op), left, right } => {
                let (l, r) = coerce::coerce_arithmetic(self.plan(left)?, self.plan(right)?)?;
                let dt = eval::arith_type(*op, &l.data_type, &r.data_type)?;
                Ok(Expr { kind: Kind::Arith(*op, Box::new(l), Box::new(r)), data_type: dt })
            }
            Syn::Logic { and, terms } => {
                let name = if *and { "AND" } else { "OR" };
                let mut out = Vec::with_capacity(terms.len());
                for t in terms {
                    match boolean(self.plan(t)?, name)? {
                        // `(a AND b) AND c`: one chain
                        Expr { kind: Kind::And(inner), .. } if *and => out.extend(inner),
                        Expr { kind: Kind::Or(inner), .. } if !*and => out.extend(inner),
                        e => out.push(e),
                    }
                }
                Ok(logic(*and, out))
            }
            Syn::In { expr, list, negated } => {
                let x = self.plan(expr)?;
                let any = inlist::plan_in(self, x, list)?;
                Ok(if *negated { not(any) } else { any })
            }
            Syn::Between { expr, low, high, negated } => {
                let x = self.plan(expr)?;
                let lo = self.compare(CmpOp::GtEq, x.clone(), self.plan(low)?)?;
                let hi = self.compare(CmpOp::LtEq, x, self.plan(high)?)?;
                let both = logic(true, vec![lo, hi]);
                Ok(if *negated { not(both) } else { both })
            }
            Syn::Like { expr, pattern, negated, case_insensitive } => self.like(self.plan(expr)?, self.plan(pattern)?, *negated, *case_insensitive),
            Syn::Is { expr, test } => {
                let x = self.plan(expr)?;
                let t = match test {
                    IsTest::Null => return Ok(Expr { kind: Kind::IsNull(Box::new(x)), data_type: DataType::Boolean }),
                    IsTest::NotNull => return Ok(Expr { kind: Kind::IsNotNull(Box::new(x)), data_type: DataType::Boolean }),
                    IsTest::True => BoolTest::True,
                    IsTest::NotTrue => BoolTest::NotTrue,
                    IsTest::False => BoolTest::False,
                    IsTest::NotFalse => BoolTest::NotFalse,
                };
                let x = boolean(x, "IS TRUE/FALSE")?;
                Ok(Expr { kind: Kind::Test(t, Box::new(x)), data_type: DataType::Boolean })
            }
            Syn::Distinct { left, right, negated } => {
                let op = if *negated { CmpOp::NotDistinct } else { CmpOp::Distinct };
                self.compare(op, self.plan(left)?, self.plan(right)?)
            }
            Syn::Func { name, args } => self.function(name, args, n),
            Syn::Array(_) => Err(invalid(format!("a list literal{} is only supported as the values of array_has_any / array_has_all", at(n.at)))),
        }
    }

    fn like(&self, x: Expr, p: Expr, negated: bool, ci: bool) -> Result<Expr> {
        let x = if matches!(x.data_type, DataType::Null) { cast_literal(&x, &DataType::Utf8)? } else { x };
        if !coerce::is_string(&x.data_type) {
            return Err(invalid(format!("LIKE needs a string, not a value of type {}", x.data_type)));
        }
        let p = if matches!(p.data_type, DataType::Null) || coerce::is_string(&p.data_type) {
            coerce::cast_to(p, &x.data_type, false)?
        } else {
            return Err(invalid(format!("a LIKE pattern must be a string, not a value of type {}", p.data_type)));
        };
        Ok(Expr { kind: Kind::Like { expr: Box::new(x), pattern: Box::new(p), negated, case_insensitive: ci }, data_type: DataType::Boolean })
    }

    pub(crate) fn compare(&self, op: CmpOp, l: Expr, r: Expr) -> Result<Expr> {
        let (l, r) = coerce::coerce_comparison(l, r)?;
        eval::check_cmp(op, &l.data_type, &r.data_type)?;
        Ok(Expr { kind: Kind::Cmp(op, Box::new(l), Box::new(r)), data_type: DataType::Boolean })
    }

    fn function(&self, name: &str, args: &[Node], n: &Node) -> Result<Expr> {
        let lower = name.to_ascii_lowercase();
        if let Some(af) = ArrayFunc::from_name(&lower) {
            return self.array_function(af, name, args, n);
        }
        let func = match lower.as_str() {
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "length" | "char_length" | "character_length" => Func::Length,
            "abs" => Func::Abs,
            _ => return self.call(name, &lower, args, n),
        };
        let [arg] = args else {
            return Err(invalid(format!("function `{name}` takes one argument")));
        };
        let x = self.plan(arg)?;
        let x = if matches!(x.data_type, DataType::Null) {
            cast_literal(&x, if func == Func::Abs { &DataType::Int64 } else { &DataType::Utf8 })?
        } else {
            x
        };
        let dt = match func {
            Func::Lower | Func::Upper | Func::Length if !coerce::is_string(&x.data_type) => {
                return Err(invalid(format!("{lower}() needs a string, not a value of type {}", x.data_type)))
            }
            Func::Lower | Func::Upper => match x.data_type {
                DataType::LargeUtf8 => DataType::LargeUtf8,
                _ => DataType::Utf8,
            },
            Func::Length => match x.data_type {
                DataType::LargeUtf8 => DataType::Int64,
                _ => DataType::Int32,
            },
            Func::Abs => {
                numeric(&x, "abs()")?;
                x.data_type.clone()
            }
        };
        Ok(Expr { kind: Kind::Func(func, Box::new(x)), data_type: dt })
    }
}

impl Planner<'_> {
    /// A function of [`functions`] (`date_part('f', x)` takes its part by name).
    fn call(&self, name: &str, lower: &str, args: &[Node], n: &Node) -> Result<Expr> {
        if lower == "date_part" || lower == "datepart" {
            let [part, x] = args else { return Err(invalid(format!("{lower}() takes 2 arguments"))) };
            let Syn::Str(p) = &part.syn else {
                return Err(invalid(format!("{lower}() needs the part as a string, like 'year'")));
            };
            let part = functions::date_part_named(p)?;
            return functions::plan(functions::Builtin::DatePart(part), lower, vec![self.plan(x)?]);
        }
        let Some(func) = functions::lookup(lower) else {
            return Err(invalid(format!(
                "unsupported function `{name}`{} (supported: lower, upper, length, abs, array_has_any, array_has_all, \
                 array_has/array_contains, {})",
                at(n.at),
                functions::NAMES
            )));
        };
        let planned = args.iter().map(|x| self.plan(x)).collect::<Result<Vec<_>>>()?;
        functions::plan(func, lower, planned)
    }

    /// `array_has_any(list, [..])`, `array_has_all(list, [..])`,
    /// `array_has(list, v)`: the values must be constants.
    fn array_function(&self, func: ArrayFunc, name: &str, args: &[Node], n: &Node) -> Result<Expr> {
        let [list, vals] = args else {
            return Err(invalid(format!(
                "function `{name}`{} takes two arguments: a list and {}",
                at(n.at),
                if func == ArrayFunc::Has { "a value" } else { "a list of values" }
            )));
        };
        let list = self.plan(list)?;
        let Some(element) = array::element_type(&list.data_type).cloned() else {
            return Err(invalid(format!("the first argument of `{name}` must be a list, not a value of type {}", list.data_type)));
        };
        let constant = |e: &Node| -> Result<ArrayRef> {
            match self.plan(e)?.kind {
                Kind::Literal(a) => Ok(a),
                _ => Err(invalid(format!("the values of `{name}` must be constants{}", at(e.at)))),
            }
        };
        let values: ArrayRef = match (func, &vals.syn) {
            (ArrayFunc::Has, _) => cast_literal(&Expr::literal(constant(vals)?), &element)
                .and_then(|e| match e.kind {
                    Kind::Literal(a) => Ok(a),
                    _ => Err(Error::Internal { what: "cast literal".into() }),
                })
                .map_err(|e| invalid(format!("`{name}`: {e}")).with_source(e))?,
            (_, Syn::Array(elems)) => {
                let items = elems.iter().map(|e| constant(e).and_then(|a| array::check_values(func, &element, a))).collect::<Result<Vec<_>>>()?;
                if items.is_empty() {
                    arrow_array::new_empty_array(&element)
                } else {
                    let refs: Vec<&dyn Array> = items.iter().map(|a| a.as_ref()).collect();
                    arrow_select::concat::concat(&refs).map_err(Error::invalid_arrow)?
                }
            }
            _ => return Err(invalid(format!("the second argument of `{name}` must be a list of constants like ['a', 'b']"))),
        };
        Ok(Expr { kind: Kind::ArrayHas { func, list: Box::new(list), values }, data_type: DataType::Boolean })
    }
}

fn boolean(x: Expr, what: &str) -> Result<Expr> {
    match x.data_type {
        DataType::Boolean => Ok(x),
        DataType::Null => cast_literal(&x, &DataType::Boolean),
        ref t => Err(invalid(format!("{what} needs boolean operands, not a value of type {t}"))),
    }
}

fn numeric(x: &Expr, what: &str) -> Result<()> {
    if coerce::is_numeric(&x.data_type) {
        Ok(())
    } else {
        Err(invalid(format!("{what} needs a number, not a value of type {}", x.data_type)))
    }
}

fn number(s: &str) -> Result<Expr> {
    let a: ArrayRef = if let Ok(i) = s.parse::<i64>() {
        Arc::new(Int64Array::from(vec![i]))
    } else if let Ok(u) = s.parse::<u64>() {
        Arc::new(UInt64Array::from(vec![u]))
    } else if let Ok(f) = s.parse::<f64>() {
        Arc::new(Float64Array::from(vec![f]))
    } else {
        return Err(invalid(format!("bad number `{s}`")));
    };
    Ok(Expr::literal(a))
}

fn unit(precision: Option<u64>) -> Result<TimeUnit> {
    Ok(match precision {
        None | Some(9) => TimeUnit::Nanosecond,
        Some(0) => TimeUnit::Second,
        Some(3) => TimeUnit::Millisecond,
        Some(6) => TimeUnit::Microsecond,
        Some(p) => return Err(invalid(format!("timestamp precision must be 0, 3, 6 or 9, not {p}"))),
    })
}

/// The Arrow type of a SQL type name.
pub(crate) fn sql_type(t: &ast::DataType) -> Result<DataType> {
    use ast::DataType as T;
    Ok(match t {
        T::Boolean | T::Bool => DataType::Boolean,
        T::TinyInt(_) => DataType::Int8,
        T::SmallInt(_) | T::Int2(_) | T::Int16 => DataType::Int16,
        T::Int(_) | T::Integer(_) | T::Int4(_) | T::Int32 | T::MediumInt(_) | T::Signed | T::SignedInteger => DataType::Int32,
        T::BigInt(_) | T::Int8(_) | T::Int64 => DataType::Int64,
        T::TinyIntUnsigned(_) | T::UTinyInt | T::UInt8 => DataType::UInt8,
        T::SmallIntUnsigned(_) | T::Int2Unsigned(_) | T::USmallInt | T::UInt16 => DataType::UInt16,
        T::IntUnsigned(_) | T::IntegerUnsigned(_) | T::Int4Unsigned(_) | T::MediumIntUnsigned(_) | T::UInt32 | T::Unsigned | T::UnsignedInteger => {
            DataType::UInt32
        }
        T::BigIntUnsigned(_) | T::Int8Unsigned(_) | T::UBigInt | T::UInt64 => DataType::UInt64,
        T::Float(_) | T::Real | T::Float4 | T::Float32 => DataType::Float32,
        T::Double(_) | T::DoublePrecision | T::Float8 | T::Float64 => DataType::Float64,
        T::String(_)
        | T::Text
        | T::Varchar(_)
        | T::Char(_)
        | T::Character(_)
        | T::CharacterVarying(_)
        | T::CharVarying(_)
        | T::Nvarchar(_)
        | T::TinyText
        | T::MediumText
        | T::LongText => DataType::Utf8,
        T::Binary(_) | T::Varbinary(_) | T::Bytea | T::Blob(_) | T::Bytes(_) => DataType::Binary,
        T::Date | T::Date32 => DataType::Date32,
        T::Timestamp(p, tz) => {
            let tz = match tz {
                ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => Some("+00:00".into()),
                _ => None,
            };
            DataType::Timestamp(unit(*p)?, tz)
        }
        T::Datetime(p) | T::TimestampNtz(p) => DataType::Timestamp(unit(*p)?, None),
        T::Decimal(info) | T::Numeric(info) | T::Dec(info) | T::BigDecimal(info) | T::BigNumeric(info) => {
            let (p, s) = match info {
                ast::ExactNumberInfo::None => (38, 10),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
            };
            if p == 0 || p > 76 || s.unsigned_abs() > p {
                return Err(invalid(format!("bad decimal precision/scale ({p}, {s})")));
            }
            if p <= 38 {
                DataType::Decimal128(p as u8, s as i8)
            } else {
                DataType::Decimal256(p as u8, s as i8)
            }
        }
        other => return Err(invalid(format!("unsupported type {other} (supported: boolean, tinyint, smallint, int, bigint and their unsigned forms, float, double, decimal(p,s), string/varchar, binary, date, timestamp(p))"))),
    })
}

/// Evaluate a node whose children are all literals.
fn fold(e: Expr) -> Result<Expr> {
    if !e.children_literal() {
        return Ok(e);
    }
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &RecordBatchOptions::new().with_row_count(Some(1)))
        .map_err(Error::internal_arrow)?;
    let v = eval::eval(&e, &batch)?.into_array(1)?;
    debug_assert_eq!(v.len(), 1);
    Ok(Expr::literal(v))
}

#[cfg(test)]
mod planner_tests {
    use super::*;

    /// A plan asked for on the planning thread itself runs in place (a
    /// request queued behind the one running would wait forever).
    #[test]
    fn planning_on_the_planner_thread_runs_in_place() {
        let schema = Schema::new(vec![Field::new("id", DataType::Int64, true)]);
        let (back, answer) = std::sync::mpsc::channel();
        let job: PlanJob = Box::new(move || {
            let on_planner = ON_PLANNER.with(|c| c.get());
            let _ = back.send((on_planner, plan_filter("id > 3", &schema).map(|e| e.data_type.clone())));
        });
        planner().expect("planning thread").send(job).unwrap();
        let (on_planner, planned) = answer.recv_timeout(std::time::Duration::from_secs(60)).expect("no deadlock");
        assert!(on_planner);
        assert_eq!(planned.unwrap(), DataType::Boolean);
    }
}
