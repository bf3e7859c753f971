//! Delete predicates. [`parse_predicate`] uses the crate's SQL filter
//! engine (`crate::expr::parse_filter`). [`parse_simple`] is the small
//! stand-alone parser `delete` used before that engine existed; it stays
//! as a dependency-free reference (tested below) for the subset:
//!
//! Grammar: `or := and (OR and)*`, `and := not (AND not)*`,
//! `not := NOT not | atom`, `atom := ( or ) | TRUE | FALSE |
//! col cmp literal | literal cmp col | col IS [NOT] NULL | col [NOT] IN (lit, …)`
//! with `cmp` one of `= == != <> < <= > >=`, literals integers, floats,
//! `'strings'` (`''` escapes a quote), TRUE/FALSE, and top-level columns of
//! integer, float, boolean and string types. Anything else is
//! `Error::Unsupported`. Rows where the predicate is NULL do not match.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::{DataType, Schema};

use crate::error::{Error, Result};
use crate::table::scan::RowFilter;

#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Int(i128),
    Float(f64),
    Str(String),
    Bool(bool),
    Null,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone)]
enum Node {
    Const(bool),
    Cmp(String, Cmp, Lit),
    IsNull(String, bool),
    In(String, Vec<Lit>, bool),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Lit(Lit),
    Op(String),
    LParen,
    RParen,
    Comma,
}

fn unsupported(sql: &str, why: impl std::fmt::Display) -> Error {
    Error::unsupported(format!(
        "predicate {sql:?}: {why} (lancelet's delete understands comparisons of a column with a literal, \
         IS [NOT] NULL, [NOT] IN (...), AND/OR/NOT and parentheses)"
    ))
}

fn lex(sql: &str) -> Result<Vec<Tok>> {
    let c: Vec<char> = sql.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '(' {
            out.push(Tok::LParen);
            i += 1;
        } else if ch == ')' {
            out.push(Tok::RParen);
            i += 1;
        } else if ch == ',' {
            out.push(Tok::Comma);
            i += 1;
        } else if ch == '\'' {
            let mut s = String::new();
            i += 1;
            loop {
                if i >= c.len() {
                    return Err(Error::invalid_input(format!("predicate {sql:?}: unterminated string")));
                }
                if c[i] == '\'' {
                    if i + 1 < c.len() && c[i + 1] == '\'' {
                        s.push('\'');
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                s.push(c[i]);
                i += 1;
            }
            out.push(Tok::Lit(Lit::Str(s)));
        } else if ch == '`' {
            let end = c[i + 1..].iter().position(|&x| x == '`').ok_or_else(|| Error::invalid_input(format!("predicate {sql:?}: unterminated `name`")))?;
            out.push(Tok::Ident(c[i + 1..i + 1 + end].iter().collect()));
            i += end + 2;
        } else if ch.is_ascii_digit() || (ch == '-' && i + 1 < c.len() && c[i + 1].is_ascii_digit() && !matches!(out.last(), Some(Tok::Ident(_) | Tok::Lit(_) | Tok::RParen))) {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_ascii_digit() || c[i] == '.' || c[i] == 'e' || c[i] == 'E') {
                i += 1;
            }
            let t: String = c[start..i].iter().collect();
            let lit = if let Ok(v) = t.parse::<i128>() {
                Lit::Int(v)
            } else {
                Lit::Float(t.parse::<f64>().map_err(|_| Error::invalid_input(format!("predicate {sql:?}: bad number {t}")))?)
            };
            out.push(Tok::Lit(lit));
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let w: String = c[start..i].iter().collect();
            match w.to_ascii_uppercase().as_str() {
                "TRUE" => out.push(Tok::Lit(Lit::Bool(true))),
                "FALSE" => out.push(Tok::Lit(Lit::Bool(false))),
                "NULL" => out.push(Tok::Lit(Lit::Null)),
                "AND" | "OR" | "NOT" | "IS" | "IN" => out.push(Tok::Op(w.to_ascii_uppercase())),
                _ => out.push(Tok::Ident(w)),
            }
        } else {
            let two: String = c[i..(i + 2).min(c.len())].iter().collect();
            if ["<=", ">=", "!=", "<>", "=="].contains(&two.as_str()) {
                out.push(Tok::Op(two));
                i += 2;
            } else if ['<', '>', '='].contains(&ch) {
                out.push(Tok::Op(ch.to_string()));
                i += 1;
            } else {
                return Err(unsupported(sql, format!("unexpected character {ch:?}")));
            }
        }
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    sql: &'a str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if o == op)
    }
    fn or(&mut self) -> Result<Node> {
        let mut l = self.and()?;
        while self.is_op("OR") {
            self.pos += 1;
            l = Node::Or(Box::new(l), Box::new(self.and()?));
        }
        Ok(l)
    }
    fn and(&mut self) -> Result<Node> {
        let mut l = self.not()?;
        while self.is_op("AND") {
            self.pos += 1;
            l = Node::And(Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }
    fn not(&mut self) -> Result<Node> {
        if self.is_op("NOT") {
            self.pos += 1;
            return Ok(Node::Not(Box::new(self.not()?)));
        }
        self.atom()
    }
    fn cmp(&mut self) -> Option<Cmp> {
        let c = match self.peek() {
            Some(Tok::Op(o)) => match o.as_str() {
                "=" | "==" => Cmp::Eq,
                "!=" | "<>" => Cmp::Ne,
                "<" => Cmp::Lt,
                "<=" => Cmp::Le,
                ">" => Cmp::Gt,
                ">=" => Cmp::Ge,
                _ => return None,
            },
            _ => return None,
        };
        self.pos += 1;
        Some(c)
    }
    fn lit(&mut self) -> Result<Lit> {
        match self.next() {
            Some(Tok::Lit(l)) => Ok(l),
            other => Err(unsupported(self.sql, format!("expected a literal, found {other:?}"))),
        }
    }
    fn atom(&mut self) -> Result<Node> {
        match self.next() {
            Some(Tok::LParen) => {
                let n = self.or()?;
                match self.next() {
                    Some(Tok::RParen) => Ok(n),
                    _ => Err(Error::invalid_input(format!("predicate {:?}: missing ')'", self.sql))),
                }
            }
            Some(Tok::Lit(Lit::Bool(b))) if !matches!(self.peek(), Some(Tok::Op(_))) || self.is_op("AND") || self.is_op("OR") => Ok(Node::Const(b)),
            Some(Tok::Lit(l)) => {
                let c = self.cmp().ok_or_else(|| unsupported(self.sql, "expected a comparison after a literal"))?;
                let col = match self.next() {
                    Some(Tok::Ident(n)) => n,
                    other => return Err(unsupported(self.sql, format!("expected a column, found {other:?}"))),
                };
                let flipped = match c {
                    Cmp::Lt => Cmp::Gt,
                    Cmp::Le => Cmp::Ge,
                    Cmp::Gt => Cmp::Lt,
                    Cmp::Ge => Cmp::Le,
                    c => c,
                };
                Ok(Node::Cmp(col, flipped, l))
            }
            Some(Tok::Ident(col)) => {
                if let Some(c) = self.cmp() {
                    return Ok(Node::Cmp(col, c, self.lit()?));
                }
                if self.is_op("IS") {
                    self.pos += 1;
                    let neg = self.is_op("NOT");
                    if neg {
                        self.pos += 1;
                    }
                    return match self.next() {
                        Some(Tok::Lit(Lit::Null)) => Ok(Node::IsNull(col, neg)),
                        other => Err(unsupported(self.sql, format!("IS followed by {other:?}"))),
                    };
                }
                let neg = self.is_op("NOT");
                if neg {
                    self.pos += 1;
                }
                if self.is_op("IN") {
                    self.pos += 1;
                    if self.next() != Some(Tok::LParen) {
                        return Err(Error::invalid_input(format!("predicate {:?}: IN needs a list in parentheses", self.sql)));
                    }
                    let mut items = vec![self.lit()?];
                    loop {
                        match self.next() {
                            Some(Tok::Comma) => items.push(self.lit()?),
                            Some(Tok::RParen) => break,
                            other => return Err(Error::invalid_input(format!("predicate {:?}: bad IN list at {other:?}", self.sql))),
                        }
                    }
                    return Ok(Node::In(col, items, neg));
                }
                Err(unsupported(self.sql, format!("cannot use column {col:?} this way")))
            }
            other => Err(unsupported(self.sql, format!("unexpected {other:?}"))),
        }
    }
}

fn cols(n: &Node, out: &mut Vec<String>) {
    match n {
        Node::Const(_) => {}
        Node::Cmp(c, ..) | Node::IsNull(c, _) | Node::In(c, ..) => {
            if !out.contains(c) {
                out.push(c.clone())
            }
        }
        Node::Not(a) => cols(a, out),
        Node::And(a, b) | Node::Or(a, b) => {
            cols(a, out);
            cols(b, out)
        }
    }
}

/// A parsed predicate (see the module docs).
#[derive(Debug)]
pub struct SimplePredicate {
    sql: String,
    node: Node,
    columns: Vec<String>,
}

/// Parse a predicate against a schema (column names resolved exactly, or
/// case-insensitively when that is unambiguous).
pub fn parse_simple(sql: &str, schema: &Schema) -> Result<SimplePredicate> {
    let toks = lex(sql)?;
    if toks.is_empty() {
        return Err(Error::invalid_input("empty predicate"));
    }
    let mut p = Parser { toks, pos: 0, sql };
    let mut node = p.or()?;
    if p.pos < p.toks.len() {
        return Err(unsupported(sql, format!("unexpected {:?}", p.toks[p.pos])));
    }
    let mut names = Vec::new();
    cols(&node, &mut names);
    let mut resolved = Vec::new();
    for n in &names {
        let f = schema.fields().iter().find(|f| f.name() == n).or_else(|| {
            let m: Vec<_> = schema.fields().iter().filter(|f| f.name().eq_ignore_ascii_case(n)).collect();
            (m.len() == 1).then(|| m[0])
        });
        let Some(f) = f else {
            return Err(Error::invalid_input(format!("predicate {sql:?}: no column {n:?}")));
        };
        match f.data_type() {
            dt if dt.is_integer() || dt.is_floating() => {}
            DataType::Boolean | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {}
            dt => return Err(unsupported(sql, format!("column {n:?} has type {dt}"))),
        }
        resolved.push((n.clone(), f.name().clone()));
    }
    fn rename(n: &mut Node, map: &[(String, String)]) {
        match n {
            Node::Cmp(c, ..) | Node::IsNull(c, _) | Node::In(c, ..) => {
                if let Some((_, to)) = map.iter().find(|(from, _)| from == c) {
                    *c = to.clone();
                }
            }
            Node::Not(a) => rename(a, map),
            Node::And(a, b) | Node::Or(a, b) => {
                rename(a, map);
                rename(b, map)
            }
            Node::Const(_) => {}
        }
    }
    rename(&mut node, &resolved);
    let mut columns = Vec::new();
    cols(&node, &mut columns);
    Ok(SimplePredicate { sql: sql.to_string(), node, columns })
}

/// Parse a `delete` predicate into a row filter.
pub fn parse_predicate(sql: &str, schema: &Schema) -> Result<Arc<dyn RowFilter>> {
    crate::expr::parse_filter(sql, schema)
}

fn value(a: &ArrayRef, i: usize) -> Lit {
    if a.is_null(i) {
        return Lit::Null;
    }
    macro_rules! int {
        ($t:ty) => {
            Lit::Int(a.as_primitive::<$t>().value(i) as i128)
        };
    }
    match a.data_type() {
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Float16 => Lit::Float(a.as_primitive::<Float16Type>().value(i).to_f64()),
        DataType::Float32 => Lit::Float(a.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Float64 => Lit::Float(a.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => Lit::Bool(a.as_boolean().value(i)),
        DataType::Utf8 => Lit::Str(a.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Lit::Str(a.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Lit::Str(a.as_string_view().value(i).to_string()),
        _ => Lit::Null,
    }
}

fn compare(a: &Lit, b: &Lit) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Lit::Int(x), Lit::Int(y)) => Some(x.cmp(y)),
        (Lit::Int(x), Lit::Float(y)) => (*x as f64).partial_cmp(y),
        (Lit::Float(x), Lit::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Lit::Float(x), Lit::Float(y)) => x.partial_cmp(y),
        (Lit::Str(x), Lit::Str(y)) => Some(x.cmp(y)),
        (Lit::Bool(x), Lit::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

fn eval(n: &Node, batch: &RecordBatch, i: usize) -> Option<bool> {
    let col = |c: &str| batch.column_by_name(c).expect("projected column");
    match n {
        Node::Const(b) => Some(*b),
        Node::Cmp(c, op, lit) => {
            let o = compare(&value(col(c), i), lit)?;
            Some(match op {
                Cmp::Eq => o.is_eq(),
                Cmp::Ne => o.is_ne(),
                Cmp::Lt => o.is_lt(),
                Cmp::Le => o.is_le(),
                Cmp::Gt => o.is_gt(),
                Cmp::Ge => o.is_ge(),
            })
        }
        Node::IsNull(c, neg) => Some(col(c).is_null(i) != *neg),
        Node::In(c, items, neg) => {
            let v = value(col(c), i);
            if v == Lit::Null {
                return None;
            }
            let hit = items.iter().any(|x| compare(&v, x).is_some_and(|o| o.is_eq()));
            if hit {
                Some(!neg)
            } else if items.contains(&Lit::Null) {
                None
            } else {
                Some(*neg)
            }
        }
        Node::Not(a) => eval(a, batch, i).map(|b| !b),
        Node::And(a, b) => match (eval(a, batch, i), eval(b, batch, i)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Node::Or(a, b) => match (eval(a, batch, i), eval(b, batch, i)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
    }
}

impl RowFilter for SimplePredicate {
    fn columns(&self) -> Vec<String> {
        self.columns.clone()
    }
    fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        for c in &self.columns {
            if batch.column_by_name(c).is_none() {
                return Err(Error::Internal { what: format!("predicate {:?}: column {c:?} not in the batch", self.sql) });
            }
        }
        Ok((0..batch.num_rows()).map(|i| Some(eval(&self.node, batch, i) == Some(true))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::Field;

    #[test]
    fn evaluate() {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true), Field::new("s", DataType::Utf8, true)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(50), Some(-3)])),
                Arc::new(StringArray::from(vec![Some("a"), Some("it's"), Some("c"), None, Some("e")])),
            ],
        )
        .unwrap();
        let run = |sql: &str| -> Vec<bool> {
            let p = parse_simple(sql, &schema).unwrap();
            let full = parse_predicate(sql, &schema).unwrap();
            assert_eq!(p.evaluate(&batch).unwrap(), full.evaluate(&batch).unwrap(), "{sql}");
            p.evaluate(&batch).unwrap().iter().map(|b| b.unwrap()).collect()
        };
        assert_eq!(run("x < 3 or x = 50"), vec![true, true, false, true, true]);
        assert_eq!(run("X >= 2 AND NOT (x = 50)"), vec![false, true, false, false, false]);
        assert_eq!(run("x is null"), vec![false, false, true, false, false]);
        assert_eq!(run("s in ('a', 'it''s')"), vec![true, true, false, false, false]);
        assert_eq!(run("x not in (1, 2)"), vec![false, false, false, true, true]);
        assert_eq!(run("x = -3"), vec![false, false, false, false, true]);
        assert_eq!(run("3 > x"), vec![true, true, false, false, true]);
        assert_eq!(run("true"), vec![true; 5]);
        assert!(matches!(parse_simple("x LIKE 'a%'", &schema), Err(Error::Unsupported { .. })));
        assert!(matches!(parse_simple("nope = 1", &schema), Err(Error::InvalidInput { .. })));
        assert!(parse_predicate("s LIKE 'a%'", &schema).is_ok());
        assert!(matches!(parse_predicate("nope = 1", &schema), Err(Error::InvalidInput { .. })));
    }
}
