//! From SQL text to a typed [`Expr`] tree checked against a schema.

use std::sync::Arc;

use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch,
    RecordBatchOptions, StringArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use sqlparser::ast::{self, BinaryOperator, UnaryOperator, Value};
use sqlparser::dialect::Dialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Span, Token};

use super::coerce::{self, cast_literal};
use super::eval;
use super::functions;
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
    Column { name: String, path: Vec<String> },
    /// A constant: an array of one value.
    Literal(ArrayRef),
    Cast(Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull(Box<Expr>),
    IsNotNull(Box<Expr>),
    Test(BoolTest, Box<Expr>),
    Like { expr: Box<Expr>, pattern: Box<Expr>, negated: bool, case_insensitive: bool },
    Func(Func, Box<Expr>),
    /// A function of [`super::functions`] (or `CASE`).
    Call(Box<super::functions::Call>),
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

    /// Top-level columns read, in first-use order.
    pub fn columns(&self, out: &mut Vec<String>) {
        match &self.kind {
            Kind::Column { name, .. } => {
                if !out.contains(name) {
                    out.push(name.clone())
                }
            }
            Kind::Literal(_) => {}
            Kind::Cast(e) | Kind::Neg(e) | Kind::Not(e) | Kind::IsNull(e) | Kind::IsNotNull(e) | Kind::Test(_, e) | Kind::Func(_, e) => {
                e.columns(out)
            }
            Kind::Cmp(_, a, b) | Kind::Arith(_, a, b) | Kind::And(a, b) | Kind::Or(a, b) => {
                a.columns(out);
                b.columns(out);
            }
            Kind::Like { expr, pattern, .. } => {
                expr.columns(out);
                pattern.columns(out);
            }
            Kind::Call(c) => c.args.iter().for_each(|a| a.columns(out)),
        }
    }

    /// Every column reference as (top-level column, struct path below it).
    pub fn column_paths(&self, out: &mut Vec<(String, Vec<String>)>) {
        match &self.kind {
            Kind::Call(c) => c.args.iter().for_each(|a| a.column_paths(out)),
            Kind::Column { name, path } => {
                let c = (name.clone(), path.clone());
                if !out.contains(&c) {
                    out.push(c);
                }
            }
            Kind::Literal(_) => {}
            Kind::Cast(e) | Kind::Neg(e) | Kind::Not(e) | Kind::IsNull(e) | Kind::IsNotNull(e) | Kind::Test(_, e) | Kind::Func(_, e) => {
                e.column_paths(out)
            }
            Kind::Cmp(_, a, b) | Kind::Arith(_, a, b) | Kind::And(a, b) | Kind::Or(a, b) => {
                a.column_paths(out);
                b.column_paths(out);
            }
            Kind::Like { expr, pattern, .. } => {
                expr.column_paths(out);
                pattern.column_paths(out);
            }
        }
    }

    fn children_literal(&self) -> bool {
        match &self.kind {
            Kind::Column { .. } | Kind::Literal(_) => false,
            Kind::Cast(e) | Kind::Neg(e) | Kind::Not(e) | Kind::IsNull(e) | Kind::IsNotNull(e) | Kind::Test(_, e) | Kind::Func(_, e) => {
                e.is_literal()
            }
            Kind::Cmp(_, a, b) | Kind::Arith(_, a, b) | Kind::And(a, b) | Kind::Or(a, b) => a.is_literal() && b.is_literal(),
            Kind::Like { expr, pattern, .. } => expr.is_literal() && pattern.is_literal(),
            Kind::Call(c) => c.args.iter().all(Expr::is_literal),
        }
    }
}

/// pylance's dialect: backticks quote names, double quotes are strings.
#[derive(Debug)]
struct FilterDialect;

impl Dialect for FilterDialect {
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`'
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_alphabetic() || ch == '_'
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_alphabetic() || ch.is_ascii_digit() || ch == '_' || ch == '$'
    }
}

fn at(span: Span) -> String {
    if span.start.line == 0 {
        String::new()
    } else {
        format!(" at line {}, column {}", span.start.line, span.start.column)
    }
}

/// Parse and plan a filter against a schema.
pub fn plan_filter(sql: &str, schema: &Schema) -> Result<Expr> {
    let expr = plan_expr(sql, schema, "filter")?;
    match expr.data_type {
        DataType::Boolean => Ok(expr),
        ref t => Err(Error::invalid_input(format!("filter `{sql}`: the filter must be a boolean expression, but it is of type {t}"))),
    }
}

/// Parse and plan any expression against a schema (`what` names it in
/// errors: "filter", "expression").
pub(crate) fn plan_expr(sql: &str, schema: &Schema, what: &str) -> Result<Expr> {
    let bad = |msg: String| Error::invalid_input(format!("{what} `{sql}`: {msg}"));
    if sql.trim().is_empty() {
        return Err(bad(format!("empty {what}")));
    }
    let dialect = FilterDialect;
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(200)
        .try_with_sql(sql)
        .map_err(|e| bad(format!("syntax error: {e}")))?;
    let ast = parser.parse_expr().map_err(|e| bad(format!("syntax error: {e}")))?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(bad(format!("syntax error: unexpected `{}`{} after the expression", next.token, at(next.span))));
    }
    let planner = Planner { schema };
    planner.plan(&ast).map_err(|e| match e {
        Error::InvalidInput { what } => bad(what),
        other => other,
    })
}

struct Planner<'a> {
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

impl Planner<'_> {
    fn column(&self, idents: &[ast::Ident]) -> Result<Expr> {
        let first = &idents[0];
        let fields = self.schema.fields();
        let Some(top) = find(fields, first) else {
            return Err(invalid(format!(
                "no column named `{}`{}; available columns: {}",
                first.value,
                at(first.span),
                names(fields)
            )));
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
                    at(id.span),
                    names(children)
                )));
            };
            shown = format!("{shown}.{}", child.name());
            path.push(child.name().clone());
            dt = child.data_type().clone();
        }
        Ok(Expr { kind: Kind::Column { name: top.name().clone(), path }, data_type: dt })
    }

    fn plan(&self, e: &ast::Expr) -> Result<Expr> {
        let out = self.plan_inner(e)?;
        fold(out)
    }

    fn plan_inner(&self, e: &ast::Expr) -> Result<Expr> {
        use ast::Expr as E;
        match e {
            E::Identifier(id) => self.column(std::slice::from_ref(id)),
            E::CompoundIdentifier(ids) => self.column(ids),
            E::CompoundFieldAccess { root, access_chain } => {
                let mut ids = match root.as_ref() {
                    E::Identifier(id) => vec![id.clone()],
                    E::CompoundIdentifier(ids) => ids.clone(),
                    _ => return Err(unsupported_expr(e)),
                };
                for a in access_chain {
                    match a {
                        ast::AccessExpr::Dot(E::Identifier(id)) => ids.push(id.clone()),
                        ast::AccessExpr::Subscript(ast::Subscript::Index {
                            index: E::Value(ast::ValueWithSpan { value: Value::SingleQuotedString(s), span }),
                        }) => ids.push(ast::Ident { value: s.clone(), quote_style: Some('\''), span: *span }),
                        _ => return Err(unsupported_expr(e)),
                    }
                }
                self.column(&ids)
            }
            E::Nested(inner) => self.plan(inner),
            E::Value(v) => literal(&v.value),
            E::TypedString(ts) => {
                let s = match &ts.value.value {
                    Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                    other => return Err(invalid(format!("expected a quoted string after {}, found {other}", ts.data_type))),
                };
                let dt = sql_type(&ts.data_type)?;
                let lit = Expr::literal(Arc::new(StringArray::from(vec![s.clone()])));
                cast_literal(&lit, &dt).map_err(|_| invalid(format!("`{s}` is not a valid {} literal", ts.data_type)))
            }
            E::Cast { expr, data_type, format: None, .. } => {
                let inner = self.plan(expr)?;
                let dt = sql_type(data_type)?;
                coerce::cast_to(inner, &dt, true)
            }
            E::BinaryOp { left, op, right } => self.binary(left, op, right, e),
            E::UnaryOp { op, expr } => {
                let inner = self.plan(expr)?;
                match op {
                    UnaryOperator::Not => Ok(Expr { kind: Kind::Not(Box::new(boolean(inner, "NOT")?)), data_type: DataType::Boolean }),
                    UnaryOperator::Plus => {
                        numeric(&inner, "unary +")?;
                        Ok(inner)
                    }
                    UnaryOperator::Minus => {
                        if !coerce::is_numeric(&inner.data_type) && !matches!(inner.data_type, DataType::Null) {
                            return Err(invalid(format!("cannot negate a value of type {}", inner.data_type)));
                        }
                        let dt = inner.data_type.clone();
                        Ok(Expr { kind: Kind::Neg(Box::new(inner)), data_type: dt })
                    }
                    _ => Err(unsupported_expr(e)),
                }
            }
            E::IsNull(x) => Ok(Expr { kind: Kind::IsNull(Box::new(self.plan(x)?)), data_type: DataType::Boolean }),
            E::IsNotNull(x) => Ok(Expr { kind: Kind::IsNotNull(Box::new(self.plan(x)?)), data_type: DataType::Boolean }),
            E::IsTrue(x) => self.test(BoolTest::True, x),
            E::IsNotTrue(x) => self.test(BoolTest::NotTrue, x),
            E::IsFalse(x) => self.test(BoolTest::False, x),
            E::IsNotFalse(x) => self.test(BoolTest::NotFalse, x),
            E::IsDistinctFrom(a, b) => self.compare(CmpOp::Distinct, self.plan(a)?, self.plan(b)?),
            E::IsNotDistinctFrom(a, b) => self.compare(CmpOp::NotDistinct, self.plan(a)?, self.plan(b)?),
            E::InList { expr, list, negated } => {
                let x = self.plan(expr)?;
                if list.is_empty() {
                    return Err(invalid("IN needs at least one value"));
                }
                let mut acc: Option<Expr> = None;
                for item in list {
                    let eq = self.compare(CmpOp::Eq, x.clone(), self.plan(item)?)?;
                    acc = Some(match acc {
                        None => eq,
                        Some(a) => Expr { kind: Kind::Or(Box::new(a), Box::new(eq)), data_type: DataType::Boolean },
                    });
                }
                let acc = acc.expect("non-empty list");
                Ok(if *negated { Expr { kind: Kind::Not(Box::new(acc)), data_type: DataType::Boolean } } else { acc })
            }
            E::Between { expr, negated, low, high } => {
                let x = self.plan(expr)?;
                let lo = self.compare(CmpOp::GtEq, x.clone(), self.plan(low)?)?;
                let hi = self.compare(CmpOp::LtEq, x, self.plan(high)?)?;
                let both = Expr { kind: Kind::And(Box::new(lo), Box::new(hi)), data_type: DataType::Boolean };
                Ok(if *negated { Expr { kind: Kind::Not(Box::new(both)), data_type: DataType::Boolean } } else { both })
            }
            E::Like { negated, any, expr, pattern, escape_char } | E::ILike { negated, any, expr, pattern, escape_char } => {
                let ci = matches!(e, E::ILike { .. });
                if *any {
                    return Err(unsupported_expr(e));
                }
                if let Some(esc) = escape_char {
                    let ok = matches!(esc.as_ref(), E::Value(v) if matches!(&v.value, Value::SingleQuotedString(s) if s == "\\"));
                    if !ok {
                        return Err(invalid(format!("LIKE supports only the backslash as escape character, not {esc}")));
                    }
                }
                self.like(self.plan(expr)?, self.plan(pattern)?, *negated, ci)
            }
            E::Function(f) => self.function(f, e),
            E::Case { operand, conditions, else_result, .. } => {
                let mut args = Vec::with_capacity(conditions.len() * 2 + 1);
                let operand = operand.as_ref().map(|o| self.plan(o)).transpose()?;
                for w in conditions {
                    args.push(match &operand {
                        Some(o) => self.compare(CmpOp::Eq, o.clone(), self.plan(&w.condition)?)?,
                        None => self.plan(&w.condition)?,
                    });
                    args.push(self.plan(&w.result)?);
                }
                if let Some(x) = else_result {
                    args.push(self.plan(x)?);
                }
                functions::plan(functions::Builtin::Case { has_else: else_result.is_some() }, "CASE", args)
            }
            E::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![self.plan(expr)?];
                args.push(match substring_from {
                    Some(f) => self.plan(f)?,
                    None => Expr::literal(Arc::new(Int64Array::from(vec![1]))),
                });
                if let Some(f) = substring_for {
                    args.push(self.plan(f)?);
                }
                functions::plan(functions::Builtin::Substr, "substring", args)
            }
            E::Trim { trim_where, trim_what, expr, trim_characters } => {
                let func = match trim_where {
                    Some(ast::TrimWhereField::Leading) => functions::Builtin::Ltrim,
                    Some(ast::TrimWhereField::Trailing) => functions::Builtin::Rtrim,
                    _ => functions::Builtin::Trim,
                };
                let mut args = vec![self.plan(expr)?];
                match (trim_what, trim_characters.as_deref()) {
                    (Some(w), _) => args.push(self.plan(w)?),
                    (None, Some([c])) => args.push(self.plan(c)?),
                    (None, None) => {}
                    _ => return Err(unsupported_expr(e)),
                }
                functions::plan(func, "trim", args)
            }
            E::Position { expr, r#in } => functions::plan(functions::Builtin::Strpos, "position", vec![self.plan(r#in)?, self.plan(expr)?]),
            E::Extract { field, expr, .. } => {
                let part = functions::date_part_named(&field.to_string())?;
                functions::plan(functions::Builtin::DatePart(part), "extract", vec![self.plan(expr)?])
            }
            E::Ceil { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) }
            | E::Floor { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) } => {
                let func = if matches!(e, E::Ceil { .. }) { functions::Builtin::Ceil } else { functions::Builtin::Floor };
                functions::plan(func, "floor/ceil", vec![self.plan(expr)?])
            }
            _ => Err(unsupported_expr(e)),
        }
    }

    fn test(&self, t: BoolTest, x: &ast::Expr) -> Result<Expr> {
        let x = boolean(self.plan(x)?, "IS TRUE/FALSE")?;
        Ok(Expr { kind: Kind::Test(t, Box::new(x)), data_type: DataType::Boolean })
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

    fn compare(&self, op: CmpOp, l: Expr, r: Expr) -> Result<Expr> {
        let (l, r) = coerce::coerce_comparison(l, r)?;
        eval::check_cmp(op, &l.data_type, &r.data_type)?;
        Ok(Expr { kind: Kind::Cmp(op, Box::new(l), Box::new(r)), data_type: DataType::Boolean })
    }

    fn binary(&self, left: &ast::Expr, op: &BinaryOperator, right: &ast::Expr, whole: &ast::Expr) -> Result<Expr> {
        let cmp = match op {
            BinaryOperator::Eq => Some(CmpOp::Eq),
            BinaryOperator::NotEq => Some(CmpOp::NotEq),
            BinaryOperator::Lt => Some(CmpOp::Lt),
            BinaryOperator::LtEq => Some(CmpOp::LtEq),
            BinaryOperator::Gt => Some(CmpOp::Gt),
            BinaryOperator::GtEq => Some(CmpOp::GtEq),
            _ => None,
        };
        if let Some(c) = cmp {
            return self.compare(c, self.plan(left)?, self.plan(right)?);
        }
        let arith = match op {
            BinaryOperator::Plus => Some(ArithOp::Add),
            BinaryOperator::Minus => Some(ArithOp::Sub),
            BinaryOperator::Multiply => Some(ArithOp::Mul),
            BinaryOperator::Divide => Some(ArithOp::Div),
            BinaryOperator::Modulo => Some(ArithOp::Rem),
            _ => None,
        };
        if let Some(a) = arith {
            let (l, r) = coerce::coerce_arithmetic(self.plan(left)?, self.plan(right)?)?;
            let dt = eval::arith_type(a, &l.data_type, &r.data_type)?;
            return Ok(Expr { kind: Kind::Arith(a, Box::new(l), Box::new(r)), data_type: dt });
        }
        if *op == BinaryOperator::StringConcat {
            return functions::plan(functions::Builtin::ConcatOp, "||", vec![self.plan(left)?, self.plan(right)?]);
        }
        match op {
            BinaryOperator::And | BinaryOperator::Or => {
                let name = if *op == BinaryOperator::And { "AND" } else { "OR" };
                let l = boolean(self.plan(left)?, name)?;
                let r = boolean(self.plan(right)?, name)?;
                let kind = if *op == BinaryOperator::And { Kind::And(Box::new(l), Box::new(r)) } else { Kind::Or(Box::new(l), Box::new(r)) };
                Ok(Expr { kind, data_type: DataType::Boolean })
            }
            _ => Err(unsupported_expr(whole)),
        }
    }

    fn function(&self, f: &ast::Function, whole: &ast::Expr) -> Result<Expr> {
        let name = f.name.to_string().to_ascii_lowercase();
        let args = match &f.args {
            ast::FunctionArguments::List(l) if l.duplicate_treatment.is_none() && l.clauses.is_empty() => &l.args,
            _ => return Err(unsupported_expr(whole)),
        };
        let func = match name.as_str() {
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "length" | "char_length" | "character_length" => Func::Length,
            "abs" => Func::Abs,
            _ => return self.call(&name, f, args, whole),
        };
        let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = args.as_slice() else {
            return Err(invalid(format!("function `{}` takes one argument", f.name)));
        };
        if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
            return Err(unsupported_expr(whole));
        }
        let x = self.plan(arg)?;
        let x = if matches!(x.data_type, DataType::Null) {
            cast_literal(&x, if func == Func::Abs { &DataType::Int64 } else { &DataType::Utf8 })?
        } else {
            x
        };
        let dt = match func {
            Func::Lower | Func::Upper | Func::Length if !coerce::is_string(&x.data_type) => {
                return Err(invalid(format!("{name}() needs a string, not a value of type {}", x.data_type)))
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
    fn call(&self, name: &str, f: &ast::Function, args: &[ast::FunctionArg], whole: &ast::Expr) -> Result<Expr> {
        if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
            return Err(unsupported_expr(whole));
        }
        let exprs = args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Ok(x),
                _ => Err(unsupported_expr(whole)),
            })
            .collect::<Result<Vec<_>>>()?;
        if name == "date_part" || name == "datepart" {
            let [part, x] = exprs.as_slice() else { return Err(invalid(format!("{name}() takes 2 arguments"))) };
            let part = match part {
                ast::Expr::Value(v) => match &v.value {
                    Value::SingleQuotedString(p) | Value::DoubleQuotedString(p) => functions::date_part_named(p)?,
                    _ => return Err(invalid(format!("{name}() needs the part as a string, like 'year'"))),
                },
                _ => return Err(invalid(format!("{name}() needs the part as a string, like 'year'"))),
            };
            return functions::plan(functions::Builtin::DatePart(part), name, vec![self.plan(x)?]);
        }
        let Some(func) = functions::lookup(name) else {
            return Err(invalid(format!(
                "unsupported function `{}` in `{whole}` (supported: lower, upper, length, abs, {})",
                f.name,
                functions::NAMES
            )));
        };
        let planned = exprs.into_iter().map(|x| self.plan(x)).collect::<Result<Vec<_>>>()?;
        functions::plan(func, name, planned)
    }
}

fn unsupported_expr(e: &ast::Expr) -> Error {
    invalid(format!("unsupported expression `{e}`"))
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

fn literal(v: &Value) -> Result<Expr> {
    let a: ArrayRef = match v {
        Value::Number(s, _) => {
            if let Ok(i) = s.parse::<i64>() {
                Arc::new(Int64Array::from(vec![i]))
            } else if let Ok(u) = s.parse::<u64>() {
                Arc::new(UInt64Array::from(vec![u]))
            } else if let Ok(f) = s.parse::<f64>() {
                Arc::new(Float64Array::from(vec![f]))
            } else {
                return Err(invalid(format!("bad number `{s}`")));
            }
        }
        Value::SingleQuotedString(s)
        | Value::DoubleQuotedString(s)
        | Value::EscapedStringLiteral(s)
        | Value::UnicodeStringLiteral(s)
        | Value::NationalStringLiteral(s)
        | Value::TripleSingleQuotedString(s)
        | Value::TripleDoubleQuotedString(s) => Arc::new(StringArray::from(vec![s.clone()])),
        Value::Boolean(b) => Arc::new(BooleanArray::from(vec![*b])),
        Value::Null => new_null_array(&DataType::Null, 1),
        other => return Err(invalid(format!("unsupported literal {other}"))),
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
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &RecordBatchOptions::new().with_row_count(Some(1)))?;
    let v = eval::eval(&e, &batch)?.into_array(1)?;
    debug_assert_eq!(v.len(), 1);
    Ok(Expr::literal(v))
}
