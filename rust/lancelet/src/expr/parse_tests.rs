//! The filter parser against `sqlparser`'s own expression parser (which
//! pylance uses): on generated expressions both must accept or refuse the
//! same text, and build the same tree (compared in a canonical form where
//! parentheses are explicit and AND/OR chains are flattened).

use proptest::prelude::*;
use sqlparser::ast::{self, BinaryOperator, Expr as E, UnaryOperator, Value};
use sqlparser::parser::Parser;

use super::parse::{parse, BinOp, FilterDialect, IsTest, Node, Syn};
use super::plan::{ArithOp, CmpOp};

fn sql_value(v: &Value) -> String {
    match v {
        Value::Number(s, _) => s.clone(),
        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => format!("'{s}'"),
        Value::Boolean(b) => b.to_string(),
        Value::Null => "NULL".into(),
        other => format!("?{other}"),
    }
}

fn flatten_sql<'a>(e: &'a E, op: &BinaryOperator, out: &mut Vec<&'a E>) {
    match e {
        E::BinaryOp { left, op: o, right } if o == op => {
            flatten_sql(left, op, out);
            flatten_sql(right, op, out);
        }
        E::Nested(x) if matches!(x.as_ref(), E::BinaryOp { op: o, .. } if o == op) => flatten_sql(x, op, out),
        other => out.push(other),
    }
}

/// Words our parser never takes for a column name where an operand starts.
const OPERATOR_WORDS: [&str; 8] = ["AND", "OR", "NOT", "IS", "IN", "BETWEEN", "LIKE", "ILIKE"];
/// Marks such a word in `sqlparser`'s canonical tree.
const KEYWORD_AS_NAME: &str = "?keyword-as-name:";

/// `sqlparser`'s tree in canonical form.
fn canon_sql(e: &E) -> String {
    match e {
        // sqlparser takes an unquoted operator keyword in an operand's place
        // for a column or function name (`AND = a`, `IN (1) = a`); we refuse
        // it on purpose, with
        // "expected an expression, found `AND`".
        E::Identifier(id) if id.quote_style.is_none() && OPERATOR_WORDS.contains(&id.value.to_uppercase().as_str()) => {
            format!("{KEYWORD_AS_NAME}{}", id.value)
        }
        E::Identifier(id) => id.value.clone(),
        E::CompoundIdentifier(ids) => ids.iter().map(|i| i.value.clone()).collect::<Vec<_>>().join("."),
        E::Value(v) => sql_value(&v.value),
        E::Nested(x) => canon_sql(x),
        E::BinaryOp { op: op @ (BinaryOperator::And | BinaryOperator::Or), .. } => {
            let mut terms = Vec::new();
            flatten_sql(e, op, &mut terms);
            format!("({op} {})", terms.iter().map(|t| canon_sql(t)).collect::<Vec<_>>().join(" "))
        }
        E::BinaryOp { left, op, right } => {
            let op = match op {
                BinaryOperator::Eq => "=",
                BinaryOperator::NotEq => "<>",
                BinaryOperator::Lt => "<",
                BinaryOperator::LtEq => "<=",
                BinaryOperator::Gt => ">",
                BinaryOperator::GtEq => ">=",
                BinaryOperator::Plus => "+",
                BinaryOperator::Minus => "-",
                BinaryOperator::Multiply => "*",
                BinaryOperator::Divide => "/",
                BinaryOperator::Modulo => "%",
                other => return format!("?{other}"),
            };
            format!("({} {op} {})", canon_sql(left), canon_sql(right))
        }
        E::UnaryOp { op: UnaryOperator::Not, expr } => format!("(NOT {})", canon_sql(expr)),
        E::UnaryOp { op: UnaryOperator::Minus, expr } => format!("(- {})", canon_sql(expr)),
        E::UnaryOp { op: UnaryOperator::Plus, expr } => format!("(+ {})", canon_sql(expr)),
        E::IsNull(x) => format!("({} IS NULL)", canon_sql(x)),
        E::IsNotNull(x) => format!("({} IS NOT NULL)", canon_sql(x)),
        E::IsTrue(x) => format!("({} IS TRUE)", canon_sql(x)),
        E::IsNotTrue(x) => format!("({} IS NOT TRUE)", canon_sql(x)),
        E::IsFalse(x) => format!("({} IS FALSE)", canon_sql(x)),
        E::IsNotFalse(x) => format!("({} IS NOT FALSE)", canon_sql(x)),
        E::IsDistinctFrom(a, b) => format!("({} DISTINCT {})", canon_sql(a), canon_sql(b)),
        E::IsNotDistinctFrom(a, b) => format!("({} NOT DISTINCT {})", canon_sql(a), canon_sql(b)),
        E::InList { expr, list, negated } => {
            format!("({} {}IN [{}])", canon_sql(expr), if *negated { "NOT " } else { "" }, list.iter().map(canon_sql).collect::<Vec<_>>().join(", "))
        }
        E::Between { expr, negated, low, high } => {
            format!("({} {}BETWEEN {} AND {})", canon_sql(expr), if *negated { "NOT " } else { "" }, canon_sql(low), canon_sql(high))
        }
        E::Like { negated, expr, pattern, escape_char: None, any: false } => {
            format!("({} {}LIKE {})", canon_sql(expr), if *negated { "NOT " } else { "" }, canon_sql(pattern))
        }
        E::ILike { negated, expr, pattern, escape_char: None, any: false } => {
            format!("({} {}ILIKE {})", canon_sql(expr), if *negated { "NOT " } else { "" }, canon_sql(pattern))
        }
        E::Cast { kind: ast::CastKind::Cast | ast::CastKind::DoubleColon, expr, data_type, format: None } => {
            format!("(CAST {} AS {data_type})", canon_sql(expr))
        }
        E::TypedString(ts) => format!("{} {}", ts.data_type, sql_value(&ts.value.value)),
        E::Function(f) if OPERATOR_WORDS.contains(&f.name.to_string().to_uppercase().as_str()) => {
            format!("{KEYWORD_AS_NAME}{}", f.name)
        }
        // A qualified function name (`st.x()`): no such functions exist, and
        // we refuse it on purpose, like an operator keyword taken for a name.
        E::Function(f) if f.name.0.len() > 1 => format!("{KEYWORD_AS_NAME}{}", f.name),
        E::Function(f) => {
            let args = match &f.args {
                ast::FunctionArguments::List(l) => l
                    .args
                    .iter()
                    .map(|a| match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => canon_sql(x),
                        // `f(*)`, `f(t.*)`, named arguments: we refuse them on
                        // purpose (no aggregate or named-argument functions).
                        other => format!("{KEYWORD_AS_NAME}{other}"),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                other => format!("?{other}"),
            };
            format!("{}({args})", f.name)
        }
        E::Array(a) => format!("[{}]", a.elem.iter().map(canon_sql).collect::<Vec<_>>().join(", ")),
        // A row tuple (`(a, b) = c`): filters compare scalars, so we refuse it
        // on purpose, as we do an operator keyword taken for a name.
        E::Tuple(_) => format!("{KEYWORD_AS_NAME}tuple"),
        other => format!("?{other}"),
    }
}

fn flatten_ours<'a>(n: &'a Node, and: bool, out: &mut Vec<&'a Node>) {
    match &n.syn {
        Syn::Logic { and: a, terms } if *a == and => terms.iter().for_each(|t| flatten_ours(t, and, out)),
        _ => out.push(n),
    }
}

/// Our tree in the same canonical form.
fn canon_ours(n: &Node) -> String {
    let neg = |b: bool| if b { "NOT " } else { "" };
    match &n.syn {
        Syn::Column(ids) => ids.iter().map(|i| i.value.clone()).collect::<Vec<_>>().join("."),
        Syn::Number(s) => s.clone(),
        Syn::Str(s) => format!("'{s}'"),
        Syn::Bool(b) => b.to_string(),
        Syn::Null => "NULL".into(),
        Syn::Typed { ty, text } => format!("{ty} '{text}'"),
        Syn::Cast { expr, ty } => format!("(CAST {} AS {ty})", canon_ours(expr)),
        Syn::Not(x) => format!("(NOT {})", canon_ours(x)),
        Syn::Neg(x) => format!("(- {})", canon_ours(x)),
        Syn::Plus(x) => format!("(+ {})", canon_ours(x)),
        Syn::Binary { op, left, right } => {
            let op = match op {
                BinOp::Cmp(CmpOp::Eq) => "=",
                BinOp::Cmp(CmpOp::NotEq) => "<>",
                BinOp::Cmp(CmpOp::Lt) => "<",
                BinOp::Cmp(CmpOp::LtEq) => "<=",
                BinOp::Cmp(CmpOp::Gt) => ">",
                BinOp::Cmp(CmpOp::GtEq) => ">=",
                BinOp::Cmp(other) => return format!("?{other:?}"),
                BinOp::Arith(ArithOp::Add) => "+",
                BinOp::Arith(ArithOp::Sub) => "-",
                BinOp::Arith(ArithOp::Mul) => "*",
                BinOp::Arith(ArithOp::Div) => "/",
                BinOp::Arith(ArithOp::Rem) => "%",
                BinOp::Concat => "||",
            };
            format!("({} {op} {})", canon_ours(left), canon_ours(right))
        }
        Syn::Logic { and, .. } => {
            let mut terms = Vec::new();
            flatten_ours(n, *and, &mut terms);
            format!("({} {})", if *and { "AND" } else { "OR" }, terms.iter().map(|t| canon_ours(t)).collect::<Vec<_>>().join(" "))
        }
        Syn::In { expr, list, negated } => {
            format!("({} {}IN [{}])", canon_ours(expr), neg(*negated), list.iter().map(canon_ours).collect::<Vec<_>>().join(", "))
        }
        Syn::Between { expr, low, high, negated } => {
            format!("({} {}BETWEEN {} AND {})", canon_ours(expr), neg(*negated), canon_ours(low), canon_ours(high))
        }
        Syn::Like { expr, pattern, negated, case_insensitive } => {
            format!("({} {}{} {})", canon_ours(expr), neg(*negated), if *case_insensitive { "ILIKE" } else { "LIKE" }, canon_ours(pattern))
        }
        Syn::Is { expr, test } => {
            let t = match test {
                IsTest::Null => "IS NULL",
                IsTest::NotNull => "IS NOT NULL",
                IsTest::True => "IS TRUE",
                IsTest::NotTrue => "IS NOT TRUE",
                IsTest::False => "IS FALSE",
                IsTest::NotFalse => "IS NOT FALSE",
            };
            format!("({} {t})", canon_ours(expr))
        }
        Syn::Distinct { left, right, negated } => format!("({} {}DISTINCT {})", canon_ours(left), neg(*negated), canon_ours(right)),
        Syn::Func { name, args } => format!("{name}({})", args.iter().map(canon_ours).collect::<Vec<_>>().join(", ")),
        Syn::Case { operand, whens, otherwise } => {
            let mut out = String::from("(CASE");
            if let Some(o) = operand {
                out += &format!(" {}", canon_ours(o));
            }
            for (w, v) in whens {
                out += &format!(" WHEN {} THEN {}", canon_ours(w), canon_ours(v));
            }
            if let Some(e) = otherwise {
                out += &format!(" ELSE {}", canon_ours(e));
            }
            out + " END)"
        }
        Syn::Array(items) => format!("[{}]", items.iter().map(canon_ours).collect::<Vec<_>>().join(", ")),
    }
}

fn sqlparser_canon(sql: &str) -> Option<String> {
    let dialect = FilterDialect;
    let mut p = Parser::new(&dialect).try_with_sql(sql).ok()?;
    let e = p.parse_expr().ok()?;
    (p.peek_token().token == sqlparser::tokenizer::Token::EOF).then(|| canon_sql(&e))
}

fn ours_canon(sql: &str) -> Option<String> {
    parse(sql).ok().map(|n| canon_ours(&n))
}

#[test]
fn same_trees_as_sqlparser() {
    for sql in [
        "a = 1 AND b = 2 OR c = 3",
        "a OR b AND c",
        "(a OR b) AND c",
        "a AND (b AND c) AND d",
        "NOT a = 1 AND b",
        "NOT NOT a",
        "-a * b",
        "-a + b",
        "a - -b",
        "-a::int",
        "a + b * c - d / e % f",
        "a = b = c",
        "a IS NULL = TRUE",
        "a IS NOT NULL AND b IS TRUE OR c IS NOT FALSE",
        "a IS DISTINCT FROM b AND c",
        "a IS NOT DISTINCT FROM b + 1",
        "a IN (1, 2, 3) AND b NOT IN ('x')",
        "a + 1 IN (1, 2 + 3)",
        "a BETWEEN 1 AND 2 AND b",
        "a NOT BETWEEN b + 1 AND c * 2",
        "a LIKE 'x%' AND b NOT LIKE 'y' OR c ILIKE 'z'",
        "a LIKE 'x' = TRUE",
        "a NOT NULL",
        "CAST(a AS int) > 1",
        "CAST(a AS decimal(10, 2)) = 1.5",
        "a::bigint::double < 2.5",
        "date '2024-01-01' < d",
        "d = timestamp '2024-01-01 10:00:00'",
        "timestamp(3) '2024-01-01' = t",
        "date > '2024-01-01'",
        "st.x > 1 AND `st`.`Weird Name` = 'q'",
        "lower(s) = 'abc' AND abs(i - 3) = 1",
        "length(s) = 3",
        "array_has_any(tags, ['a', 'b']) AND array_contains(tags, 'c')",
        "array_has_all(l, [1, -2, NULL]) OR array_has_any(l, [])",
        "((((a))))",
        "a = 'it''s'",
        "a = \"double\"",
        "TRUE",
        "NULL IS NULL",
        "1e3 < a",
        "a >= .5",
        "a != 1 AND a <> 2",
    ] {
        let theirs = sqlparser_canon(sql);
        assert!(theirs.is_some(), "sqlparser refuses {sql}");
        assert_eq!(ours_canon(sql), theirs, "{sql}");
    }
}

#[test]
fn same_refusals_as_sqlparser() {
    for sql in ["a =", "a AND", "(a", "a)", "a IN", "a IN (1,", "a BETWEEN 1", "a IS", "a NOT", "1 2", "AND a", "a LIKE"] {
        assert!(sqlparser_canon(sql).is_none(), "sqlparser accepts {sql}");
        assert!(parse(sql).is_err(), "we accept {sql}");
    }
}

/// Token sequences of the supported grammar, many of them malformed.
fn token_soup() -> impl Strategy<Value = String> {
    let tokens = prop::sample::select(vec![
        "a",
        "b",
        "st.x",
        "1",
        "2.5",
        "'s'",
        "NULL",
        "TRUE",
        "(",
        ")",
        "(",
        ")",
        "=",
        "<>",
        "<",
        ">=",
        "+",
        "-",
        "*",
        "/",
        "%",
        "AND",
        "OR",
        "NOT",
        "IS NULL",
        "IS NOT NULL",
        "IS TRUE",
        "IS DISTINCT FROM",
        "IN (1, a)",
        "NOT IN (2)",
        "BETWEEN",
        "LIKE",
        "NOT LIKE",
        "::int",
        "lower(a)",
        "CAST(a AS bigint)",
        "date '2024-01-01'",
        ",",
    ]);
    prop::collection::vec(tokens, 1..14).prop_map(|v| v.join(" "))
}

proptest! {
    // A fixed seed keeps the default run deterministic; change it to explore
    // (random seeds found `( AND , a ) = a` and `a ( * )`, now in canon_sql).
    #![proptest_config(ProptestConfig {
        cases: 3000,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x1a2c_e715),
        ..ProptestConfig::default()
    })]

    #[test]
    fn agrees_with_sqlparser(sql in token_soup()) {
        let theirs = sqlparser_canon(&sql);
        let ours = ours_canon(&sql);
        if theirs.as_deref().is_some_and(|t| t.contains(KEYWORD_AS_NAME)) {
            prop_assert!(ours.is_none(), "we accept {} as {:?}", sql, ours);
        } else {
            prop_assert_eq!(ours, theirs, "{}", sql);
        }
    }
}
