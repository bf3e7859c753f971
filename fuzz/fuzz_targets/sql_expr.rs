//! SQL filters built from a grammar (`arbitrary`), so that most inputs get
//! past the parser into the planner and the evaluation; the text is then
//! run like `sql_filter`'s.
#![no_main]
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

const COLUMNS: &[&str] = &["id", "i", "f", "s", "b", "d", "ts", "dec", "u8", "st.x", "st.y", "ls", "_rowid", "_rowaddr", "`Weird`", "nope"];
const TYPES: &[&str] = &["int", "bigint", "tinyint", "smallint", "float", "double", "string", "varchar", "boolean", "date", "timestamp", "decimal(10,2)", "decimal(38,0)", "int unsigned"];
const FUNCTIONS: &[&str] = &["lower", "upper", "length", "char_length", "abs", "nosuch"];

#[derive(Arbitrary, Debug)]
enum Lit {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Null,
    Date(u16, u8, u8),
    Timestamp(u16, u8, u8, u8),
    Decimal(i64, u8),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Eq, Ne, Lt, Le, Gt, Ge, And, Or, Add, Sub, Mul, Div, Mod, IsDistinct, IsNotDistinct,
}

#[derive(Arbitrary, Debug)]
enum Expr {
    Col(u8),
    Lit(Lit),
    Bin(Op, Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    IsNull(Box<Expr>, bool),
    IsBool(Box<Expr>, bool, bool),
    In(Box<Expr>, Vec<Lit>, bool),
    Between(Box<Expr>, Lit, Lit, bool),
    Like(Box<Expr>, String, bool, bool),
    Cast(Box<Expr>, u8, bool),
    Func(u8, Box<Expr>),
    Paren(Box<Expr>),
}

fn lit(l: &Lit, out: &mut String) {
    use std::fmt::Write;
    let _ = match l {
        Lit::Int(v) => write!(out, "{v}"),
        Lit::Float(v) => write!(out, "{v:?}"),
        Lit::Str(s) => write!(out, "'{}'", s.replace('\'', "''")),
        Lit::Bool(b) => write!(out, "{b}"),
        Lit::Null => write!(out, "NULL"),
        Lit::Date(y, m, d) => write!(out, "date '{y:04}-{m:02}-{d:02}'"),
        Lit::Timestamp(y, m, d, h) => write!(out, "timestamp '{y:04}-{m:02}-{d:02} {h:02}:00:00'"),
        Lit::Decimal(v, s) => write!(out, "decimal '{}e-{}'", v, s % 40),
    };
}

fn render(e: &Expr, out: &mut String) {
    match e {
        Expr::Col(c) => out.push_str(COLUMNS[*c as usize % COLUMNS.len()]),
        Expr::Lit(l) => lit(l, out),
        Expr::Bin(op, a, b) => {
            let op = match op {
                Op::Eq => "=", Op::Ne => "!=", Op::Lt => "<", Op::Le => "<=", Op::Gt => ">", Op::Ge => ">=",
                Op::And => "AND", Op::Or => "OR", Op::Add => "+", Op::Sub => "-", Op::Mul => "*", Op::Div => "/",
                Op::Mod => "%", Op::IsDistinct => "IS DISTINCT FROM", Op::IsNotDistinct => "IS NOT DISTINCT FROM",
            };
            out.push('(');
            render(a, out);
            out.push_str(&format!(" {op} "));
            render(b, out);
            out.push(')');
        }
        Expr::Not(a) => { out.push_str("NOT "); render(a, out) }
        Expr::Neg(a) => { out.push_str("-"); render(a, out) }
        Expr::IsNull(a, not) => { render(a, out); out.push_str(if *not { " IS NOT NULL" } else { " IS NULL" }) }
        Expr::IsBool(a, not, v) => {
            render(a, out);
            out.push_str(&format!(" IS {}{}", if *not { "NOT " } else { "" }, if *v { "TRUE" } else { "FALSE" }));
        }
        Expr::In(a, items, not) => {
            render(a, out);
            out.push_str(if *not { " NOT IN (" } else { " IN (" });
            for (i, l) in items.iter().enumerate() {
                if i > 0 { out.push_str(", ") }
                lit(l, out);
            }
            out.push(')');
        }
        Expr::Between(a, lo, hi, not) => {
            render(a, out);
            out.push_str(if *not { " NOT BETWEEN " } else { " BETWEEN " });
            lit(lo, out);
            out.push_str(" AND ");
            lit(hi, out);
        }
        Expr::Like(a, pat, not, ci) => {
            render(a, out);
            out.push_str(&format!(" {}{} '{}'", if *not { "NOT " } else { "" }, if *ci { "ILIKE" } else { "LIKE" }, pat.replace('\'', "''")));
        }
        Expr::Cast(a, t, colons) => {
            let t = TYPES[*t as usize % TYPES.len()];
            if *colons {
                out.push('(');
                render(a, out);
                out.push_str(&format!(")::{t}"));
            } else {
                out.push_str("CAST(");
                render(a, out);
                out.push_str(&format!(" AS {t})"));
            }
        }
        Expr::Func(f, a) => {
            out.push_str(FUNCTIONS[*f as usize % FUNCTIONS.len()]);
            out.push('(');
            render(a, out);
            out.push(')');
        }
        Expr::Paren(a) => { out.push('('); render(a, out); out.push(')') }
    }
}

fuzz_target!(|e: Expr| {
    let mut sql = String::new();
    render(&e, &mut sql);
    lancelet::fuzzing::sql_filter(sql.as_bytes());
});
