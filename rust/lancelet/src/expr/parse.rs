//! From filter text to a syntax tree ([`Node`]) whose depth is bounded.
//!
//! Tokens come from `sqlparser`'s tokenizer (with the filter dialect) and
//! SQL type names from its `parse_data_type`; the expression grammar itself
//! is parsed here, by precedence climbing with the precedences `sqlparser`'s
//! generic dialect uses (so a filter means what it means to pylance, which
//! parses filters with `sqlparser` too):
//!
//! | precedence | operators |
//! |---|---|
//! | 5 | `OR` |
//! | 10 | `AND` |
//! | 15 | prefix `NOT` |
//! | 17 | `IS ...` |
//! | 19 | `[NOT] LIKE`, `[NOT] ILIKE` |
//! | 20 | `= <> != < <= > >=`, `[NOT] IN`, `[NOT] BETWEEN` |
//! | 30 | `+ -` |
//! | 40 | `* / %`, prefix `-` / `+` bind their operand at this level |
//! | 50 | `::` |
//!
//! Why not `sqlparser`'s own expression parser: its tree for `a OR b OR ...`
//! or `x + 1 + 1 + ...` is as deep as the chain is long (one boxed binary
//! node per operator), and every pass over such a tree (planning, dropping
//! it, printing it) recurses that deep; 2,000 terms overflowed a thread's
//! stack. Here `AND`/`OR` chains become one n-ary node, an `IN` list is a
//! vector, and everything else that nests (parentheses, `NOT`, unary minus,
//! other binary operators) counts towards [`MAX_DEPTH`]: a deeper filter is
//! refused with `InvalidInput` before any deep structure exists. Every later
//! pass (planning, folding, evaluation, pruning, drop) therefore recurses at
//! most a few times `MAX_DEPTH` deep, however long the filter is.

use sqlparser::ast::{DataType as SqlType, Ident};
use sqlparser::dialect::Dialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan, Tokenizer};

use super::plan::{ArithOp, CmpOp};
use crate::error::{Error, Result};

/// How deep a filter may nest: parentheses, `NOT`, unary signs and binary
/// operators other than `AND`/`OR` each add a level. (pylance's parser
/// refuses about 50 nested parentheses.)
pub const MAX_DEPTH: u32 = 128;

/// Tokens a SQL type name may span at most (`TIMESTAMP(9) WITH TIME ZONE`
/// is 7).
const TYPE_TOKENS: usize = 24;

const OR: u8 = 5;
const AND: u8 = 10;
const NOT: u8 = 15;
const IS: u8 = 17;
const LIKE: u8 = 19;
const CMP: u8 = 20;
const PLUS_MINUS: u8 = 30;
const MUL_DIV: u8 = 40;
const DOUBLE_COLON: u8 = 50;
/// Operators `sqlparser` knows but filters do not support still bind with
/// their own precedence, so the error names them instead of "unexpected".
const OTHER_OPERATOR: u8 = 21;

/// pylance's dialect: backticks quote names, double quotes are strings.
#[derive(Debug)]
pub(crate) struct FilterDialect;

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

/// `IS ...` tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsTest {
    Null,
    NotNull,
    True,
    NotTrue,
    False,
    NotFalse,
}

/// A binary operator other than `AND`/`OR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Cmp(CmpOp),
    Arith(ArithOp),
    /// `a || b` (string concatenation).
    Concat,
}

/// A syntax node.
#[derive(Debug)]
pub enum Syn {
    /// A column, then struct children (`a.b`, `a['b']`).
    Column(Vec<Ident>),
    Number(String),
    Str(String),
    Bool(bool),
    Null,
    /// `date '2024-01-01'` and the like.
    Typed {
        ty: SqlType,
        text: String,
    },
    Cast {
        expr: Box<Node>,
        ty: SqlType,
    },
    Not(Box<Node>),
    Neg(Box<Node>),
    Plus(Box<Node>),
    Binary {
        op: BinOp,
        left: Box<Node>,
        right: Box<Node>,
    },
    /// An `AND` (`and: true`) or `OR` chain of two or more terms.
    Logic {
        and: bool,
        terms: Vec<Node>,
    },
    In {
        expr: Box<Node>,
        list: Vec<Node>,
        negated: bool,
    },
    Between {
        expr: Box<Node>,
        low: Box<Node>,
        high: Box<Node>,
        negated: bool,
    },
    Like {
        expr: Box<Node>,
        pattern: Box<Node>,
        negated: bool,
        case_insensitive: bool,
    },
    Is {
        expr: Box<Node>,
        test: IsTest,
    },
    /// `IS [NOT] DISTINCT FROM`.
    Distinct {
        left: Box<Node>,
        right: Box<Node>,
        negated: bool,
    },
    /// A function call; the SQL forms `SUBSTRING(s FROM a FOR b)`,
    /// `TRIM([LEADING|TRAILING|BOTH] [c FROM] s)`, `EXTRACT(f FROM t)` and
    /// `POSITION(a IN s)` arrive as the calls `substring(s, a, b)`,
    /// `ltrim/rtrim/trim(s, c)`, `date_part('f', t)` and `strpos(s, a)`.
    Func {
        name: String,
        args: Vec<Node>,
    },
    /// `CASE [operand] WHEN w THEN v ... [ELSE e] END`.
    Case {
        operand: Option<Box<Node>>,
        whens: Vec<(Node, Node)>,
        otherwise: Option<Box<Node>>,
    },
    /// `[a, b, ...]`: the values of `array_has_any`/`array_has_all`.
    Array(Vec<Node>),
}

/// A syntax node with where it starts and the height of its subtree.
#[derive(Debug)]
pub struct Node {
    pub syn: Syn,
    pub at: Location,
    pub depth: u32,
}

/// ` at line L, column C` (empty for an unknown location).
pub fn at(loc: Location) -> String {
    if loc.line == 0 {
        String::new()
    } else {
        format!(" at line {}, column {}", loc.line, loc.column)
    }
}

fn syntax(what: impl std::fmt::Display) -> Error {
    Error::invalid_input(format!("syntax error: {what}"))
}

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::invalid_input(format!("unsupported {what}"))
}

fn too_deep(loc: Location) -> Error {
    Error::invalid_input(format!(
        "the filter nests more than {MAX_DEPTH} levels deep{} (parentheses, NOT, signs and operators other than AND/OR \
         each add a level; write long lists of alternatives as `x IN (...)` or chains of AND/OR)",
        at(loc)
    ))
}

/// Parse a whole filter into a syntax tree.
pub fn parse(sql: &str) -> Result<Node> {
    let dialect = FilterDialect;
    let tokens = Tokenizer::new(&dialect, sql).with_unescape(true).tokenize_with_location().map_err(syntax)?;
    let tokens: Vec<TokenWithSpan> = tokens.into_iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let mut p = FilterParser { tokens, pos: 0, nesting: 0 };
    let node = p.parse_sub(0)?;
    let next = p.peek();
    if next.token != Token::EOF {
        return Err(syntax(format!("unexpected `{}`{} after the expression", next.token, at(next.span.start))));
    }
    Ok(node)
}

struct FilterParser {
    tokens: Vec<TokenWithSpan>,
    pos: usize,
    /// Current recursion depth of `parse_sub`.
    nesting: u32,
}

static EOF: TokenWithSpan = TokenWithSpan { token: Token::EOF, span: Span::empty() };

/// A node one level above children at most `child_depth` deep.
fn wrap(syn: Syn, at: Location, child_depth: u32) -> Result<Node> {
    check_depth(Node { syn, at, depth: child_depth + 1 })
}

fn leaf(syn: Syn, at: Location) -> Node {
    Node { syn, at, depth: 1 }
}

impl FilterParser {
    fn peek(&self) -> &TokenWithSpan {
        self.peek_nth(0)
    }

    fn peek_nth(&self, n: usize) -> &TokenWithSpan {
        self.tokens.get(self.pos + n).unwrap_or(&EOF)
    }

    fn advance(&mut self) -> TokenWithSpan {
        let t = self.peek().clone();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    /// The keyword of the token `n` ahead, if it is an unquoted keyword.
    fn keyword(&self, n: usize) -> Option<Keyword> {
        match &self.peek_nth(n).token {
            Token::Word(w) if w.quote_style.is_none() && w.keyword != Keyword::NoKeyword => Some(w.keyword),
            _ => None,
        }
    }

    fn eat_keyword(&mut self, k: Keyword) -> bool {
        if self.keyword(0) == Some(k) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_keywords(&mut self, ks: &[Keyword]) -> bool {
        if ks.iter().enumerate().all(|(i, k)| self.keyword(i) == Some(*k)) {
            self.pos += ks.len();
            true
        } else {
            false
        }
    }

    fn eat(&mut self, t: &Token) -> bool {
        if &self.peek().token == t {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, t: &Token) -> Result<()> {
        if self.eat(t) {
            Ok(())
        } else {
            let found = self.peek();
            Err(syntax(format!("expected `{t}`, found `{}`{}", found.token, at(found.span.start))))
        }
    }

    fn expect_keyword(&mut self, k: Keyword) -> Result<()> {
        if self.eat_keyword(k) {
            Ok(())
        } else {
            let found = self.peek();
            Err(syntax(format!("expected {k:?}, found `{}`{}", found.token, at(found.span.start))))
        }
    }

    /// An expression of operators binding tighter than `prec`.
    fn parse_sub(&mut self, prec: u8) -> Result<Node> {
        let start = self.peek().span.start;
        self.nesting += 1;
        if self.nesting > MAX_DEPTH {
            return Err(too_deep(start));
        }
        let mut left = self.prefix()?;
        loop {
            let next = self.next_precedence();
            if prec >= next {
                break;
            }
            left = self.infix(left, next)?;
        }
        self.nesting -= 1;
        Ok(left)
    }

    fn next_precedence(&self) -> u8 {
        let t = &self.peek().token;
        match t {
            Token::Word(w) if w.quote_style.is_none() => match w.keyword {
                Keyword::OR => OR,
                Keyword::AND => AND,
                Keyword::NOT => match self.keyword(1) {
                    Some(Keyword::IN | Keyword::BETWEEN) => CMP,
                    Some(Keyword::LIKE | Keyword::ILIKE | Keyword::RLIKE | Keyword::REGEXP | Keyword::SIMILAR) => LIKE,
                    Some(Keyword::NULL) => IS,
                    _ => 0,
                },
                Keyword::IS => IS,
                Keyword::IN | Keyword::BETWEEN => CMP,
                Keyword::LIKE | Keyword::ILIKE | Keyword::RLIKE | Keyword::REGEXP | Keyword::SIMILAR | Keyword::GLOB | Keyword::MATCH => LIKE,
                Keyword::XOR | Keyword::DIV | Keyword::OVERLAPS | Keyword::MEMBER => OTHER_OPERATOR,
                Keyword::AT if self.keyword(1) == Some(Keyword::TIME) => OTHER_OPERATOR,
                _ => 0,
            },
            Token::Eq | Token::DoubleEq | Token::Neq | Token::Lt | Token::LtEq | Token::Gt | Token::GtEq => CMP,
            Token::Plus | Token::Minus | Token::StringConcat => PLUS_MINUS,
            Token::Mul | Token::Div | Token::Mod => MUL_DIV,
            Token::DoubleColon => DOUBLE_COLON,
            Token::Spaceship
            | Token::Assignment
            | Token::Tilde
            | Token::TildeAsterisk
            | Token::ExclamationMarkTilde
            | Token::ExclamationMarkTildeAsterisk
            | Token::DoubleTilde
            | Token::DoubleTildeAsterisk
            | Token::ExclamationMarkDoubleTilde
            | Token::ExclamationMarkDoubleTildeAsterisk
            | Token::DuckIntDiv
            | Token::Pipe
            | Token::Caret
            | Token::Ampersand
            | Token::Sharp
            | Token::ShiftLeft
            | Token::ShiftRight
            | Token::Arrow
            | Token::LongArrow
            | Token::HashArrow
            | Token::HashLongArrow
            | Token::AtArrow
            | Token::ArrowAt
            | Token::AtAt
            | Token::LBracket
            | Token::Period
            | Token::ExclamationMark => OTHER_OPERATOR,
            _ => 0,
        }
    }

    fn prefix(&mut self) -> Result<Node> {
        let tok = self.peek().clone();
        let loc = tok.span.start;
        if let Some(typed) = self.typed_string()? {
            return Ok(typed);
        }
        match tok.token {
            Token::Word(w) => {
                if w.quote_style.is_none() {
                    match w.keyword {
                        Keyword::NOT => {
                            self.pos += 1;
                            if self.keyword(0) == Some(Keyword::EXISTS) {
                                return Err(unsupported(format!("`NOT EXISTS`{}", at(loc))));
                            }
                            let x = self.parse_sub(NOT)?;
                            let d = x.depth;
                            return wrap(Syn::Not(Box::new(x)), loc, d);
                        }
                        Keyword::TRUE | Keyword::FALSE => {
                            self.pos += 1;
                            return Ok(leaf(Syn::Bool(w.keyword == Keyword::TRUE), loc));
                        }
                        Keyword::NULL => {
                            self.pos += 1;
                            return Ok(leaf(Syn::Null, loc));
                        }
                        Keyword::CAST if self.peek_nth(1).token == Token::LParen => {
                            self.pos += 2;
                            let x = self.parse_sub(0)?;
                            self.expect_keyword(Keyword::AS)?;
                            let ty = self.data_type()?;
                            self.expect(&Token::RParen)?;
                            let d = x.depth;
                            return wrap(Syn::Cast { ty, expr: Box::new(x) }, loc, d);
                        }
                        Keyword::TRY_CAST | Keyword::SAFE_CAST | Keyword::EXISTS if self.peek_nth(1).token == Token::LParen => {
                            return Err(self.unsupported_construct(&w.value, loc));
                        }
                        Keyword::INTERVAL if matches!(self.peek_nth(1).token, Token::SingleQuotedString(_) | Token::Number(..)) => {
                            return Err(self.unsupported_construct(&w.value, loc));
                        }
                        Keyword::CASE if self.starts_expression(1) => return self.case(loc),
                        Keyword::SELECT => return Err(self.unsupported_construct(&w.value, loc)),
                        Keyword::AND | Keyword::OR | Keyword::IS | Keyword::IN | Keyword::BETWEEN | Keyword::LIKE | Keyword::ILIKE => {
                            return Err(syntax(format!("expected an expression, found `{}`{}", w.value, at(loc))));
                        }
                        _ => {}
                    }
                    if self.peek_nth(1).token == Token::LParen {
                        return self.function(w.value.clone(), loc);
                    }
                }
                self.pos += 1;
                let mut idents = vec![Ident { value: w.value.clone(), quote_style: w.quote_style, span: tok.span }];
                self.access_chain(&mut idents)?;
                Ok(leaf(Syn::Column(idents), loc))
            }
            Token::Number(s, _) => {
                self.pos += 1;
                Ok(leaf(Syn::Number(s), loc))
            }
            Token::SingleQuotedString(s)
            | Token::DoubleQuotedString(s)
            | Token::TripleSingleQuotedString(s)
            | Token::TripleDoubleQuotedString(s)
            | Token::EscapedStringLiteral(s)
            | Token::UnicodeStringLiteral(s)
            | Token::NationalStringLiteral(s) => {
                self.pos += 1;
                Ok(leaf(Syn::Str(s), loc))
            }
            Token::Minus | Token::Plus => {
                self.pos += 1;
                let x = self.parse_sub(MUL_DIV)?;
                let syn = if tok.token == Token::Minus { Syn::Neg } else { Syn::Plus };
                let d = x.depth;
                wrap(syn(Box::new(x)), loc, d)
            }
            Token::LParen => {
                self.pos += 1;
                if matches!(self.keyword(0), Some(Keyword::SELECT | Keyword::WITH)) {
                    return Err(unsupported(format!("subquery{}", at(loc))));
                }
                let x = self.parse_sub(0)?;
                if self.peek().token == Token::Comma {
                    return Err(unsupported(format!("tuple (a parenthesized list){}", at(loc))));
                }
                self.expect(&Token::RParen)?;
                Ok(x)
            }
            Token::LBracket => {
                self.pos += 1;
                let mut items = Vec::new();
                if !self.eat(&Token::RBracket) {
                    loop {
                        items.push(self.parse_sub(0)?);
                        if self.eat(&Token::Comma) {
                            continue;
                        }
                        self.expect(&Token::RBracket)?;
                        break;
                    }
                }
                let d = items.iter().map(|a| a.depth).max().unwrap_or(0);
                wrap(Syn::Array(items), loc, d)
            }
            Token::EOF => Err(syntax("expected an expression, found EOF")),
            other => Err(syntax(format!("expected an expression, found `{other}`{}", at(loc)))),
        }
    }

    fn unsupported_construct(&self, word: &str, loc: Location) -> Error {
        unsupported(format!(
            "expression `{word} ...`{} (supported: comparisons, AND/OR/NOT, IS, IN, BETWEEN, LIKE, arithmetic, CAST and \
             the functions lower, upper, length, abs and those of expr::functions)",
            at(loc)
        ))
    }

    /// Whether the token `n` ahead can start an expression (so a keyword
    /// before it is not a column name).
    fn starts_expression(&self, n: usize) -> bool {
        match &self.peek_nth(n).token {
            Token::Word(w) => {
                !matches!(w.keyword, Keyword::AND | Keyword::OR | Keyword::IS | Keyword::IN | Keyword::BETWEEN | Keyword::LIKE | Keyword::ILIKE)
            }
            Token::Number(..) | Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) | Token::LParen => true,
            _ => false,
        }
    }

    /// `.field` and `['field']` after a column name.
    fn access_chain(&mut self, idents: &mut Vec<Ident>) -> Result<()> {
        loop {
            match (&self.peek().token, &self.peek_nth(1).token) {
                (Token::Period, Token::Word(w)) => {
                    let span = self.peek_nth(1).span;
                    idents.push(Ident { value: w.value.clone(), quote_style: w.quote_style, span });
                    self.pos += 2;
                }
                (Token::LBracket, Token::SingleQuotedString(s)) if self.peek_nth(2).token == Token::RBracket => {
                    let span = self.peek_nth(1).span;
                    idents.push(Ident { value: s.clone(), quote_style: Some('\''), span });
                    self.pos += 3;
                }
                (Token::LBracket, _) => {
                    return Err(unsupported(format!("subscript{}: only ['field'] of a struct column is supported", at(self.peek().span.start))))
                }
                _ => return Ok(()),
            }
        }
    }

    fn function(&mut self, name: String, loc: Location) -> Result<Node> {
        self.pos += 2; // name (
        if let Some(node) = self.special_function(&name, loc)? {
            return Ok(node);
        }
        let mut args = Vec::new();
        if !self.eat(&Token::RParen) {
            if matches!(self.keyword(0), Some(Keyword::DISTINCT | Keyword::ALL)) || self.peek().token == Token::Mul {
                return Err(unsupported(format!("arguments of `{name}`{}", at(loc))));
            }
            loop {
                args.push(self.parse_sub(0)?);
                if self.eat(&Token::Comma) {
                    continue;
                }
                self.expect(&Token::RParen)?;
                break;
            }
        }
        if matches!(self.keyword(0), Some(Keyword::OVER | Keyword::FILTER | Keyword::WITHIN)) {
            return Err(unsupported(format!("window or aggregate function `{name}`{}", at(loc))));
        }
        let d = args.iter().map(|a| a.depth).max().unwrap_or(0);
        wrap(Syn::Func { name, args }, loc, d)
    }

    /// `CASE [operand] WHEN w THEN v ... [ELSE e] END` (at `CASE`).
    fn case(&mut self, loc: Location) -> Result<Node> {
        self.pos += 1; // CASE
        let operand = if self.keyword(0) == Some(Keyword::WHEN) { None } else { Some(Box::new(self.parse_sub(0)?)) };
        let mut whens = Vec::new();
        while self.eat_keyword(Keyword::WHEN) {
            let w = self.parse_sub(0)?;
            self.expect_keyword(Keyword::THEN)?;
            let v = self.parse_sub(0)?;
            whens.push((w, v));
        }
        if whens.is_empty() {
            let found = self.peek();
            return Err(syntax(format!("expected WHEN after CASE, found `{}`{}", found.token, at(found.span.start))));
        }
        let otherwise = if self.eat_keyword(Keyword::ELSE) { Some(Box::new(self.parse_sub(0)?)) } else { None };
        self.expect_keyword(Keyword::END)?;
        let d = whens
            .iter()
            .flat_map(|(w, v)| [w.depth, v.depth])
            .chain(operand.iter().map(|o| o.depth))
            .chain(otherwise.iter().map(|o| o.depth))
            .max()
            .unwrap_or(0);
        wrap(Syn::Case { operand, whens, otherwise }, loc, d)
    }

    /// The keyword forms of `SUBSTRING`, `TRIM`, `EXTRACT` and `POSITION`
    /// (after `name (`), as plain calls; `None` for an ordinary argument list.
    fn special_function(&mut self, name: &str, loc: Location) -> Result<Option<Node>> {
        let lower = name.to_ascii_lowercase();
        let call = |name: &str, args: Vec<Node>| {
            let d = args.iter().map(|a| a.depth).max().unwrap_or(0);
            wrap(Syn::Func { name: name.to_string(), args }, loc, d)
        };
        match lower.as_str() {
            "extract" => {
                let field = match &self.peek().token {
                    Token::Word(w) if self.keyword(1) == Some(Keyword::FROM) => w.value.clone(),
                    Token::SingleQuotedString(s) if self.keyword(1) == Some(Keyword::FROM) => s.clone(),
                    _ => return Ok(None),
                };
                let floc = self.peek().span.start;
                self.pos += 2; // field FROM
                let x = self.parse_sub(0)?;
                self.expect(&Token::RParen)?;
                call("date_part", vec![leaf(Syn::Str(field), floc), x]).map(Some)
            }
            "position" => {
                // POSITION(a IN s): `a` binds tighter than IN.
                let save = self.pos;
                let a = self.parse_sub(CMP)?;
                if !self.eat_keyword(Keyword::IN) {
                    self.pos = save;
                    return Ok(None);
                }
                let s = self.parse_sub(0)?;
                self.expect(&Token::RParen)?;
                call("strpos", vec![s, a]).map(Some)
            }
            "substring" => {
                let save = self.pos;
                let x = self.parse_sub(0)?;
                let from = if self.eat_keyword(Keyword::FROM) { Some(self.parse_sub(0)?) } else { None };
                let len = if self.eat_keyword(Keyword::FOR) { Some(self.parse_sub(0)?) } else { None };
                if from.is_none() && len.is_none() {
                    self.pos = save;
                    return Ok(None);
                }
                self.expect(&Token::RParen)?;
                let from = from.unwrap_or_else(|| leaf(Syn::Number("1".into()), loc));
                let mut args = vec![x, from];
                args.extend(len);
                call("substring", args).map(Some)
            }
            "trim" => {
                let side = match self.keyword(0) {
                    Some(Keyword::LEADING) => Some("ltrim"),
                    Some(Keyword::TRAILING) => Some("rtrim"),
                    Some(Keyword::BOTH) => Some("trim"),
                    _ => None,
                };
                let save = self.pos;
                if side.is_some() {
                    self.pos += 1;
                }
                let func = side.unwrap_or("trim");
                if side.is_some() && self.eat_keyword(Keyword::FROM) {
                    let s = self.parse_sub(0)?;
                    self.expect(&Token::RParen)?;
                    return call(func, vec![s]).map(Some);
                }
                let first = self.parse_sub(0)?;
                if self.eat_keyword(Keyword::FROM) {
                    let s = self.parse_sub(0)?;
                    self.expect(&Token::RParen)?;
                    return call(func, vec![s, first]).map(Some);
                }
                if side.is_some() {
                    self.expect(&Token::RParen)?;
                    return call(func, vec![first]).map(Some);
                }
                self.pos = save;
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// `TYPE 'text'` (a typed literal) at the current position, if it is one.
    fn typed_string(&mut self) -> Result<Option<Node>> {
        let Token::Word(w) = &self.peek().token else { return Ok(None) };
        if w.quote_style.is_some() || matches!(w.keyword, Keyword::NOT | Keyword::NULL | Keyword::TRUE | Keyword::FALSE | Keyword::CAST) {
            return Ok(None);
        }
        // Cheap test first: a quoted string must follow within the few
        // tokens a type name spans (words, parentheses, numbers, commas).
        let string_follows = (1..TYPE_TOKENS)
            .map(|k| &self.peek_nth(k).token)
            .find(|t| !matches!(t, Token::Word(_) | Token::LParen | Token::RParen | Token::Number(..) | Token::Comma))
            .is_some_and(|t| {
                matches!(
                    t,
                    Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) | Token::EscapedStringLiteral(_) | Token::NationalStringLiteral(_)
                )
            });
        if !string_follows {
            return Ok(None);
        }
        let loc = self.peek().span.start;
        let Some((ty, used)) = self.try_data_type() else { return Ok(None) };
        if matches!(ty, SqlType::Custom(..)) {
            return Ok(None);
        }
        let text = match &self.peek_nth(used).token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) | Token::EscapedStringLiteral(s) | Token::NationalStringLiteral(s) => {
                s.clone()
            }
            _ => return Ok(None),
        };
        self.pos += used + 1;
        Ok(Some(leaf(Syn::Typed { ty, text }, loc)))
    }

    /// A SQL type starting at the current token: the type and how many
    /// tokens it spans (the current position is not moved).
    fn try_data_type(&self) -> Option<(SqlType, usize)> {
        let end = (self.pos + TYPE_TOKENS).min(self.tokens.len());
        let slice = self.tokens[self.pos..end].to_vec();
        let dialect = FilterDialect;
        let mut parser = Parser::new(&dialect).with_tokens_with_locations(slice);
        let ty = parser.parse_data_type().ok()?;
        Some((ty, parser.index()))
    }

    fn data_type(&mut self) -> Result<SqlType> {
        match self.try_data_type() {
            Some((ty, used)) => {
                self.pos += used;
                Ok(ty)
            }
            None => {
                let found = self.peek();
                Err(syntax(format!("expected a type name, found `{}`{}", found.token, at(found.span.start))))
            }
        }
    }

    fn infix(&mut self, left: Node, prec: u8) -> Result<Node> {
        let tok = self.advance();
        let loc = tok.span.start;
        let cmp = match &tok.token {
            Token::Eq | Token::DoubleEq => Some(CmpOp::Eq),
            Token::Neq => Some(CmpOp::NotEq),
            Token::Lt => Some(CmpOp::Lt),
            Token::LtEq => Some(CmpOp::LtEq),
            Token::Gt => Some(CmpOp::Gt),
            Token::GtEq => Some(CmpOp::GtEq),
            _ => None,
        };
        let arith = match &tok.token {
            Token::Plus => Some(ArithOp::Add),
            Token::Minus => Some(ArithOp::Sub),
            Token::Mul => Some(ArithOp::Mul),
            Token::Div => Some(ArithOp::Div),
            Token::Mod => Some(ArithOp::Rem),
            _ => None,
        };
        let concat = (tok.token == Token::StringConcat).then_some(BinOp::Concat);
        if let Some(op) = cmp.map(BinOp::Cmp).or(arith.map(BinOp::Arith)).or(concat) {
            if matches!(self.keyword(0), Some(Keyword::ANY | Keyword::ALL | Keyword::SOME)) {
                return Err(unsupported(format!("`{} {:?}`{}", tok.token, self.keyword(0).unwrap(), at(loc))));
            }
            let right = self.parse_sub(prec)?;
            let d = left.depth.max(right.depth);
            return check_depth(Node { at: left.at, syn: Syn::Binary { op, left: Box::new(left), right: Box::new(right) }, depth: d + 1 });
        }
        if tok.token == Token::DoubleColon {
            let ty = self.data_type()?;
            let d = left.depth;
            return check_depth(Node { at: left.at, syn: Syn::Cast { expr: Box::new(left), ty }, depth: d + 1 });
        }
        let Token::Word(w) = &tok.token else {
            return Err(unsupported(format!("operator `{}`{}", tok.token, at(loc))));
        };
        match w.keyword {
            Keyword::AND | Keyword::OR => {
                let and = w.keyword == Keyword::AND;
                let right = self.parse_sub(prec)?;
                logic(and, left, right)
            }
            Keyword::IS => {
                let test = if self.eat_keyword(Keyword::NULL) {
                    IsTest::Null
                } else if self.eat_keywords(&[Keyword::NOT, Keyword::NULL]) {
                    IsTest::NotNull
                } else if self.eat_keyword(Keyword::TRUE) {
                    IsTest::True
                } else if self.eat_keywords(&[Keyword::NOT, Keyword::TRUE]) {
                    IsTest::NotTrue
                } else if self.eat_keyword(Keyword::FALSE) {
                    IsTest::False
                } else if self.eat_keywords(&[Keyword::NOT, Keyword::FALSE]) {
                    IsTest::NotFalse
                } else if self.eat_keywords(&[Keyword::DISTINCT, Keyword::FROM]) {
                    return self.distinct(left, false, prec);
                } else if self.eat_keywords(&[Keyword::NOT, Keyword::DISTINCT, Keyword::FROM]) {
                    return self.distinct(left, true, prec);
                } else {
                    let found = self.peek();
                    return Err(syntax(format!(
                        "expected [NOT] NULL, TRUE, FALSE or DISTINCT FROM after IS, found `{}`{}",
                        found.token,
                        at(found.span.start)
                    )));
                };
                let d = left.depth;
                check_depth(Node { at: left.at, syn: Syn::Is { expr: Box::new(left), test }, depth: d + 1 })
            }
            Keyword::NOT | Keyword::IN | Keyword::BETWEEN | Keyword::LIKE | Keyword::ILIKE => {
                self.pos -= 1;
                let negated = self.eat_keyword(Keyword::NOT);
                if negated && self.eat_keyword(Keyword::NULL) {
                    let d = left.depth;
                    return check_depth(Node { at: left.at, syn: Syn::Is { expr: Box::new(left), test: IsTest::NotNull }, depth: d + 1 });
                }
                if self.eat_keyword(Keyword::IN) {
                    return self.in_list(left, negated, loc);
                }
                if self.eat_keyword(Keyword::BETWEEN) {
                    let low = self.parse_sub(CMP)?;
                    self.expect_keyword(Keyword::AND)?;
                    let high = self.parse_sub(CMP)?;
                    let d = left.depth.max(low.depth).max(high.depth);
                    return check_depth(Node {
                        at: left.at,
                        syn: Syn::Between { expr: Box::new(left), low: Box::new(low), high: Box::new(high), negated },
                        depth: d + 1,
                    });
                }
                let case_insensitive = match self.keyword(0) {
                    Some(Keyword::LIKE) => false,
                    Some(Keyword::ILIKE) => true,
                    Some(k @ (Keyword::RLIKE | Keyword::REGEXP | Keyword::SIMILAR)) => {
                        return Err(unsupported(format!("operator {k:?}{}", at(self.peek().span.start))))
                    }
                    _ => {
                        let found = self.peek();
                        return Err(syntax(format!("expected IN, BETWEEN or LIKE after NOT, found `{}`{}", found.token, at(found.span.start))));
                    }
                };
                self.pos += 1;
                if self.keyword(0) == Some(Keyword::ANY) {
                    return Err(unsupported(format!("LIKE ANY{}", at(loc))));
                }
                let pattern = self.parse_sub(LIKE)?;
                if self.eat_keyword(Keyword::ESCAPE) {
                    let esc = self.parse_sub(LIKE)?;
                    if !matches!(&esc.syn, Syn::Str(s) if s == "\\") {
                        return Err(Error::invalid_input("LIKE supports only the backslash as escape character"));
                    }
                }
                let d = left.depth.max(pattern.depth);
                check_depth(Node {
                    at: left.at,
                    syn: Syn::Like { expr: Box::new(left), pattern: Box::new(pattern), negated, case_insensitive },
                    depth: d + 1,
                })
            }
            _ => Err(unsupported(format!("operator `{}`{}", w.value, at(loc)))),
        }
    }

    /// `left IS [NOT] DISTINCT FROM right` (the right side binds like `IS`).
    fn distinct(&mut self, left: Node, negated: bool, prec: u8) -> Result<Node> {
        let right = self.parse_sub(prec)?;
        let d = left.depth.max(right.depth);
        let at = left.at;
        wrap(Syn::Distinct { left: Box::new(left), right: Box::new(right), negated }, at, d)
    }

    /// `x [NOT] IN (a, b, ...)`: the list is a vector, however long.
    fn in_list(&mut self, expr: Node, negated: bool, loc: Location) -> Result<Node> {
        if self.keyword(0) == Some(Keyword::UNNEST) {
            return Err(unsupported(format!("IN UNNEST{}", at(loc))));
        }
        self.expect(&Token::LParen)?;
        if matches!(self.keyword(0), Some(Keyword::SELECT | Keyword::WITH)) {
            return Err(unsupported(format!("subquery in IN{}", at(loc))));
        }
        if self.peek().token == Token::RParen {
            return Err(Error::invalid_input(format!("IN needs at least one value{}", at(loc))));
        }
        let mut list = Vec::new();
        loop {
            list.push(self.parse_sub(0)?);
            if self.eat(&Token::Comma) {
                continue;
            }
            self.expect(&Token::RParen)?;
            break;
        }
        let d = list.iter().map(|n| n.depth).max().unwrap_or(0).max(expr.depth);
        check_depth(Node { at: expr.at, syn: Syn::In { expr: Box::new(expr), list, negated }, depth: d + 1 })
    }
}

fn check_depth(n: Node) -> Result<Node> {
    if n.depth > MAX_DEPTH {
        Err(too_deep(n.at))
    } else {
        Ok(n)
    }
}

/// Join `left AND/OR right`, extending `left` when it is the same chain.
fn logic(and: bool, left: Node, right: Node) -> Result<Node> {
    match left {
        Node { syn: Syn::Logic { and: a, mut terms }, at, depth } if a == and => {
            let depth = depth.max(right.depth + 1);
            terms.push(right);
            check_depth(Node { syn: Syn::Logic { and, terms }, at, depth })
        }
        left => {
            let depth = left.depth.max(right.depth);
            let at = left.at;
            wrap(Syn::Logic { and, terms: vec![left, right] }, at, depth)
        }
    }
}
