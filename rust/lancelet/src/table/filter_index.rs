//! Answering a filter's indexable parts from scalar indices.
//!
//! A planned [`Expr`] is matched against the dataset's indices
//! ([`DatasetIndices`]): `col = v`, `col IN (..)`, `<`, `<=`, `>`, `>=`,
//! `BETWEEN` and `col IS NULL` on a BTREE or BITMAP index, and
//! `array_has_any`, `array_has_all`, `array_has`/`array_contains` on a
//! LABEL_LIST index are leaves; `AND`, `OR` and `NOT` combine them. An
//! `AND` keeps its indexable side (the rest is applied on top); an `OR` or
//! `NOT` over something unindexable is not indexed.
//!
//! For each fragment of a scan, every leaf whose index covers the fragment
//! gives the exact set of offsets where it is true; the tree is evaluated
//! in three-valued logic into rows that surely match (no need to evaluate
//! the filter) and rows that may match (the only ones read). Leaves whose
//! index does not cover the fragment are unknown, so an uncovered fragment
//! is scanned in full. `NOT x` is true where `x` is false: the fragment's
//! rows minus where `x` is true minus where `x` is null (the column's nulls
//! from the same index).
//!
//! ZONEMAP and BLOOMFILTER leaves are inexact (but for `IS NULL`): the rows
//! they give may match and are read and filtered, none is proved; `NOT`
//! is only taken over leaves pylance negates
//! ([`crate::index::IndexKind::negatable`]).
//!
//! NGRAM leaves (inexact, never negated, as pylance uses them):
//! `contains(col, 'sub')` with a needle of at least 3 characters anywhere
//! an index leaf may stand, and — only as a top-level `AND` term, where
//! pylance rewrites them into `regexp_like` — `col LIKE 'pattern'` with a
//! wildcard and a literal run that has a trigram, and `starts_with(col,
//! 'prefix')`; a LIKE leaf leaves the whole filter to apply on top (as
//! pylance keeps it in `refine_filter`). A needle without ASCII trigrams
//! narrows nothing: its fragments are read whole.
//!
//! The plan line follows pylance's: `[id = 5]@id_idx(BTree)`,
//! `AND(..,..)`, `OR(..,..)`, `NOT(..)`.

use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef};
use roaring::RoaringBitmap;

use crate::error::Result;
use crate::expr::array::ArrayFunc;
use crate::expr::functions::Builtin;
use crate::expr::inlist::InSet;
use crate::expr::{CmpOp, Expr, Kind, RowFilter};
use crate::file::stats::Pruned;
use crate::index::rowset::RowSet;
use crate::index::{ngram, IndexQuery, RangeEnd};
use crate::table::dataset::Dataset;
use crate::table::indexed::{DatasetIndices, IndexSelection, UsableIndex};

/// IN lists of more than this many values stay one query in plans (as
/// DataFusion rewrites shorter ones into ORs).
const INLINE_IN_LIST: usize = 3;

/// One indexable predicate and the index segments that answer it.
#[derive(Debug)]
struct Leaf {
    column: String,
    query: IndexQuery,
    segments: Vec<Arc<UsableIndex>>,
    /// Per segment: rows where the predicate is true, and where it is null.
    results: Vec<Mutex<(Option<Arc<RowSet>>, Option<Arc<RowSet>>)>>,
}

impl Leaf {
    fn new(column: String, query: IndexQuery, segments: Vec<Arc<UsableIndex>>) -> Self {
        let results = segments.iter().map(|_| Mutex::new((None, None))).collect();
        Leaf { column, query, segments, results }
    }

    /// The segment covering fragment `frag`.
    fn segment(&self, frag: u64) -> Option<usize> {
        let f = u32::try_from(frag).ok()?;
        self.segments.iter().position(|s| s.coverage.contains(f))
    }

    /// Rows where the predicate is true (`nulls`: where it is null) per
    /// segment `k`, searched once.
    fn rows(&self, k: usize, nulls: bool) -> Result<Arc<RowSet>> {
        let mut slot = self.results[k].lock().unwrap_or_else(|e| e.into_inner());
        let cell = if nulls { &mut slot.1 } else { &mut slot.0 };
        if let Some(r) = cell {
            return Ok(r.clone());
        }
        let seg = &self.segments[k];
        let set = if nulls {
            match &self.query {
                // IS NULL is never null.
                IndexQuery::IsNull => RowSet::new(),
                // Null lists (a LABEL_LIST index answers IsNull with them).
                _ => seg.search(&IndexQuery::IsNull)?,
            }
        } else {
            seg.search(&self.query.with_equal_zeros())?
        };
        let set = Arc::new(set);
        *cell = Some(set.clone());
        Ok(set)
    }

    fn display(&self) -> String {
        let s = &self.segments[0];
        format!("[{}]@{}({})", self.query.display(&self.column), s.info.name(), s.kind.display_name())
    }
}

/// The indexable part of a filter.
#[derive(Debug)]
enum Node {
    Leaf(usize),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
}

/// A filter's use of the dataset's indices.
#[derive(Debug)]
pub struct IndexedFilter {
    /// The indexable part (what pylance shows).
    shown: Node,
    /// The filter is exactly `shown` (no AND branch was left to apply on
    /// top), so rows it surely matches need no evaluation.
    exact: bool,
    leaves: Vec<Leaf>,
}

/// Rows of one fragment: those surely matching and those that may
/// (`None`: all).
struct Sel {
    sure: RoaringBitmap,
    maybe: Option<RoaringBitmap>,
}

impl Sel {
    fn unknown() -> Sel {
        Sel { sure: RoaringBitmap::new(), maybe: None }
    }
    fn exact(b: RoaringBitmap) -> Sel {
        Sel { sure: b.clone(), maybe: Some(b) }
    }
    fn and(a: Sel, b: Sel) -> Sel {
        let maybe = match (a.maybe, b.maybe) {
            (None, x) | (x, None) => x,
            (Some(x), Some(y)) => Some(x & y),
        };
        Sel { sure: a.sure & b.sure, maybe }
    }
    fn or(a: Sel, b: Sel) -> Sel {
        let maybe = match (a.maybe, b.maybe) {
            (Some(x), Some(y)) => Some(x | y),
            _ => None,
        };
        Sel { sure: a.sure | b.sure, maybe }
    }
}

/// The ends of a range query.
fn range_leaf(q: &IndexQuery) -> Option<(&Option<RangeEnd>, &Option<RangeEnd>)> {
    match q {
        IndexQuery::Range { lower, upper } => Some((lower, upper)),
        _ => None,
    }
}

/// Builds the node trees, collecting leaves.
struct Builder<'a> {
    indices: &'a DatasetIndices,
    leaves: Vec<Leaf>,
    /// An AND branch was left out.
    dropped: bool,
}

/// `col op literal` (either side) on a top-level column.
fn column_cmp(op: CmpOp, a: &Expr, b: &Expr) -> Option<(String, CmpOp, ArrayRef)> {
    let flip = |op| match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtEq => CmpOp::GtEq,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtEq => CmpOp::LtEq,
        o => o,
    };
    let (name, v, op) = match (&a.kind, &b.kind) {
        (Kind::Column { name, path }, Kind::Literal(v)) if path.is_empty() && &a.data_type == v.data_type() => (name, v, op),
        (Kind::Literal(v), Kind::Column { name, path }) if path.is_empty() && &b.data_type == v.data_type() => (name, v, flip(op)),
        _ => return None,
    };
    (v.len() == 1 && v.is_valid(0)).then(|| (name.clone(), op, v.clone()))
}

/// `col = v1 OR col = v2 OR ...` (also as IN lists): the column and
/// values.
fn eq_chain(e: &Expr, out: &mut Vec<ArrayRef>) -> Option<String> {
    match &e.kind {
        Kind::Or(terms) => {
            let mut col: Option<String> = None;
            for t in terms {
                let c = eq_chain(t, out)?;
                if col.as_ref().is_some_and(|x| *x != c) {
                    return None;
                }
                col = Some(c);
            }
            col
        }
        Kind::Cmp(CmpOp::Eq, a, b) => {
            let (name, _, v) = column_cmp(CmpOp::Eq, a, b)?;
            out.push(v);
            Some(name)
        }
        Kind::InList { expr, set } => {
            let (name, listed) = in_list(expr, set)?;
            out.extend((0..listed.len()).map(|i| listed.slice(i, 1)));
            Some(name)
        }
        _ => None,
    }
}

/// A boolean `true` literal.
fn is_true(e: &Expr) -> bool {
    match &e.kind {
        Kind::Literal(v) => v.len() == 1 && v.is_valid(0) && v.as_any().downcast_ref::<arrow_array::BooleanArray>().is_some_and(|b| b.value(0)),
        _ => false,
    }
}

/// `col` and the string of a `'literal'` (a top-level column, a non-null
/// string of any width).
fn column_and_string(col: &Expr, lit: &Expr) -> Option<(String, String)> {
    let (Kind::Column { name, path }, Kind::Literal(v)) = (&col.kind, &lit.kind) else { return None };
    if !path.is_empty() || v.len() != 1 || v.is_null(0) || !ngram::supports(&col.data_type) {
        return None;
    }
    let v = arrow_cast::cast(v, &arrow_schema::DataType::Utf8).ok()?;
    Some((name.clone(), arrow_array::cast::AsArray::as_string::<i32>(&v).value(0).to_string()))
}

/// Characters the `regex` crate escapes (as pylance's LIKE rewrite shows
/// them).
fn regex_escaped(c: char) -> bool {
    matches!(c, '\\' | '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$' | '#' | '&' | '-' | '~')
}

/// A LIKE pattern as an NGRAM query: the literal runs a match must hold
/// (`\` escapes the next character) and pylance's `regexp_like` text; `None`
/// when pylance does not use the index for it (no wildcard, or no literal
/// run — cut at `%`/`_` as pylance cuts them — with a trigram).
fn like_query(column: &str, pattern: &str) -> Option<IndexQuery> {
    if !pattern.contains(['%', '_']) || !pattern.split(['%', '_']).any(ngram::has_tokens) {
        return None;
    }
    let mut regex = String::new();
    for c in pattern.chars() {
        match c {
            '%' => regex.push_str(".*"),
            '_' => regex.push('.'),
            c if regex_escaped(c) => {
                regex.push('\\');
                regex.push(c);
            }
            c => regex.push(c),
        }
    }
    let (mut parts, mut run, mut chars) = (Vec::new(), String::new(), pattern.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => run.extend(chars.next()),
            '%' | '_' => parts.push(std::mem::take(&mut run)),
            c => run.push(c),
        }
    }
    parts.push(run);
    parts.retain(|p| !p.is_empty());
    Some(IndexQuery::Substrings { parts, shown: format!("regexp_like({column}, Utf8(\"{regex}\"))") })
}

/// `col IN (values)` without a null among the values (a null makes
/// non-matches null, which no index answers): the column and values.
fn in_list<'s>(expr: &Expr, set: &'s InSet) -> Option<(String, &'s ArrayRef)> {
    match &expr.kind {
        Kind::Column { name, path } if path.is_empty() && &expr.data_type == set.listed().data_type() && !set.has_null() => {
            Some((name.clone(), set.listed()))
        }
        _ => None,
    }
}

impl Builder<'_> {
    fn leaf(&mut self, column: String, query: IndexQuery) -> Option<Node> {
        let segments = self.indices.for_query(&column, &query);
        if segments.is_empty() {
            return None;
        }
        self.leaves.push(Leaf::new(column, query, segments));
        Some(Node::Leaf(self.leaves.len() - 1))
    }

    /// One `IN` leaf for more than [`INLINE_IN_LIST`] values.
    fn in_leaf(&mut self, col: String, values: &[ArrayRef]) -> Option<Node> {
        if values.len() <= INLINE_IN_LIST {
            return None;
        }
        let refs: Vec<&dyn Array> = values.iter().map(|v| v.as_ref()).collect();
        let all = arrow_select::concat::concat(&refs).ok()?;
        self.leaf(col, IndexQuery::In(all))
    }

    /// The indexable node for `e`; `partial` allows dropping unindexable
    /// AND branches (they are applied on top).
    fn node(&mut self, e: &Expr, partial: bool) -> Option<Node> {
        match &e.kind {
            Kind::And(terms) => {
                let mut acc: Option<Node> = None;
                for t in terms {
                    match self.node(t, partial) {
                        Some(x) => {
                            acc = Some(match acc {
                                None => x,
                                Some(a) => self.merge_ranges(a, x),
                            })
                        }
                        None if partial => self.dropped = true,
                        None => return None,
                    }
                }
                acc
            }
            Kind::Or(terms) => {
                let mut values = Vec::new();
                if let Some(n) = eq_chain(e, &mut values).and_then(|col| self.in_leaf(col, &values)) {
                    return Some(n);
                }
                let mut acc: Option<Node> = None;
                for t in terms {
                    let x = self.node(t, false)?;
                    acc = Some(match acc {
                        None => x,
                        Some(a) => Node::Or(Box::new(a), Box::new(x)),
                    });
                }
                acc
            }
            Kind::InList { expr, set } => {
                let (col, listed) = in_list(expr, set)?;
                let values: Vec<ArrayRef> = (0..listed.len()).map(|i| listed.slice(i, 1)).collect();
                if let Some(n) = self.in_leaf(col.clone(), &values) {
                    return Some(n);
                }
                // A short list shows as `col = a OR col = b` (as DataFusion
                // rewrites it).
                let mut acc: Option<Node> = None;
                for v in values {
                    let x = self.leaf(col.clone(), IndexQuery::Equals(v))?;
                    acc = Some(match acc {
                        None => x,
                        Some(a) => Node::Or(Box::new(a), Box::new(x)),
                    });
                }
                acc
            }
            Kind::Not(a) => {
                let n = self.node(a, false)?;
                self.not(n)
            }
            Kind::IsNull(x) => match &x.kind {
                Kind::Column { name, path } if path.is_empty() && array_elem(&x.data_type).is_none() => self.leaf(name.clone(), IndexQuery::IsNull),
                _ => None,
            },
            Kind::IsNotNull(x) => {
                let inner = Expr { kind: Kind::IsNull(x.clone()), data_type: e.data_type.clone() };
                let n = self.node(&inner, false)?;
                self.not(n)
            }
            // `pred = true` is `pred` (DataFusion simplifies it so).
            Kind::Cmp(CmpOp::Eq, a, b) if is_true(b) && !matches!(a.kind, Kind::Column { .. }) => self.node(a, partial),
            Kind::Cmp(CmpOp::Eq, a, b) if is_true(a) && !matches!(b.kind, Kind::Column { .. }) => self.node(b, partial),
            Kind::Cmp(op, a, b) => {
                let (col, op, v) = column_cmp(*op, a, b)?;
                let end = |inclusive| Some(RangeEnd { value: v.clone(), inclusive });
                let q = match op {
                    CmpOp::Eq => IndexQuery::Equals(v.clone()),
                    CmpOp::NotEq => {
                        let n = self.leaf(col, IndexQuery::Equals(v.clone()))?;
                        return self.not(n);
                    }
                    CmpOp::Lt => IndexQuery::Range { lower: None, upper: end(false) },
                    CmpOp::LtEq => IndexQuery::Range { lower: None, upper: end(true) },
                    CmpOp::Gt => IndexQuery::Range { lower: end(false), upper: None },
                    CmpOp::GtEq => IndexQuery::Range { lower: end(true), upper: None },
                    CmpOp::Distinct | CmpOp::NotDistinct => return None,
                };
                self.leaf(col, q)
            }
            Kind::Call(call) if call.func == Builtin::Contains => {
                let (col, needle) = column_and_string(&call.args[0], &call.args[1])?;
                if !ngram::usable_needle(&needle) {
                    return None;
                }
                let shown = format!("contains({col}, Utf8(\"{needle}\"))");
                self.leaf(col, IndexQuery::Substrings { parts: vec![needle], shown })
            }
            // pylance turns these into regexp_like only as top-level AND
            // terms, and keeps them to apply on top.
            Kind::Like { expr, pattern, negated: false, case_insensitive: false } if partial => {
                let (col, pattern) = column_and_string(expr, pattern)?;
                let q = like_query(&col, &pattern)?;
                let n = self.leaf(col, q)?;
                self.dropped = true;
                Some(n)
            }
            Kind::Call(call) if partial && call.func == Builtin::StartsWith => {
                let (col, prefix) = column_and_string(&call.args[0], &call.args[1])?;
                if !ngram::has_tokens(&prefix) {
                    return None;
                }
                let regex: String = prefix.chars().flat_map(|c| regex_escaped(c).then_some('\\').into_iter().chain([c])).collect();
                let q = IndexQuery::Substrings { parts: vec![prefix], shown: format!("regexp_like({col}, Utf8(\"{regex}.*\"))") };
                let n = self.leaf(col, q)?;
                self.dropped = true;
                Some(n)
            }
            Kind::ArrayHas { func, list, values } => {
                let Kind::Column { name, path } = &list.kind else { return None };
                if !path.is_empty() {
                    return None;
                }
                let q = match func {
                    ArrayFunc::Any => IndexQuery::HasAny(values.clone()),
                    ArrayFunc::All if values.is_empty() => return None,
                    ArrayFunc::All => IndexQuery::HasAll(values.clone()),
                    // array_has(l, NULL) is null for every row.
                    ArrayFunc::Has if values.is_null(0) => return None,
                    ArrayFunc::Has => IndexQuery::HasAny(values.clone()),
                };
                self.leaf(name.clone(), q)
            }
            _ => None,
        }
    }

    /// `NOT n`, when every index under it answers negations (pylance
    /// negates no zone map or bloom filter answer but a zone map's
    /// `IS NULL`). A refused node's leaves stay collected, unused.
    fn not(&mut self, n: Node) -> Option<Node> {
        fn ok(n: &Node, leaves: &[Leaf]) -> bool {
            match n {
                // The index shown decides (as pylance uses one); evaluation
                // treats a negated inexact answer as unknown anyway.
                Node::Leaf(i) => leaves[*i].segments[0].kind.negatable(&leaves[*i].query),
                Node::And(a, b) | Node::Or(a, b) => ok(a, leaves) && ok(b, leaves),
                Node::Not(a) => ok(a, leaves),
            }
        }
        ok(&n, &self.leaves).then(|| Node::Not(Box::new(n)))
    }

    /// `col > a AND col < b` on the same index is one range query.
    fn merge_ranges(&mut self, x: Node, y: Node) -> Node {
        if let (Node::Leaf(i), Node::Leaf(j)) = (&x, &y) {
            let (a, b) = (&self.leaves[*i], &self.leaves[*j]);
            let same = a.column == b.column && Arc::ptr_eq(&a.segments[0], &b.segments[0]) && a.segments.len() == b.segments.len();
            if let (true, Some((la, ua)), Some((lb, ub))) = (same, range_leaf(&a.query), range_leaf(&b.query)) {
                let (lower, upper) = match (la, ua, lb, ub) {
                    (Some(l), None, None, Some(u)) | (None, Some(u), Some(l), None) => (l.clone(), u.clone()),
                    _ => return Node::And(Box::new(x), Box::new(y)),
                };
                let column = a.column.clone();
                let segments = a.segments.clone();
                let merged = Leaf::new(column, IndexQuery::Range { lower: Some(lower), upper: Some(upper) }, segments);
                // Reuse slot i; slot j stays unused.
                self.leaves[*i] = merged;
                return Node::Leaf(*i);
            }
        }
        Node::And(Box::new(x), Box::new(y))
    }
}

fn array_elem(dt: &arrow_schema::DataType) -> Option<&arrow_schema::DataType> {
    crate::expr::array::element_type(dt)
}

impl IndexedFilter {
    /// How `e` can use `indices`; `None` when no index helps.
    pub fn plan(e: &Expr, indices: &DatasetIndices) -> Option<Self> {
        if indices.indices.is_empty() {
            return None;
        }
        let mut b = Builder { indices, leaves: Vec::new(), dropped: false };
        let shown = b.node(e, true)?;
        Some(IndexedFilter { shown, exact: !b.dropped, leaves: b.leaves })
    }

    /// The `ScalarIndexQuery` text: `[id = 5]@id_idx(BTree)`, `AND(.., ..)`.
    pub fn describe(&self) -> String {
        fn go(n: &Node, leaves: &[Leaf]) -> String {
            match n {
                Node::Leaf(i) => leaves[*i].display(),
                Node::And(a, b) => format!("AND({},{})", go(a, leaves), go(b, leaves)),
                Node::Or(a, b) => format!("OR({},{})", go(a, leaves), go(b, leaves)),
                Node::Not(a) => format!("NOT({})", go(a, leaves)),
            }
        }
        go(&self.shown, &self.leaves)
    }

    /// Names of the indices used, in first-use order.
    pub fn index_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for l in &self.leaves {
            let n = l.segments[0].info.name().to_string();
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }

    /// Whether some index covers fragment `frag`.
    pub fn covers(&self, frag: u64) -> bool {
        self.leaves.iter().any(|l| l.segment(frag).is_some())
    }

    /// What the indices say about fragment `i` of `ds` (physical rows
    /// `0..rows`): `None` when they say nothing.
    pub fn select(&self, ds: &Dataset, i: usize) -> Result<Option<Pruned>> {
        let frag = ds.fragments()[i].id;
        if !self.covers(frag) {
            return Ok(None);
        }
        let rows = ds.physical_rows(i)?;
        let mut sel = self.eval(&self.shown, false, ds, i, frag, rows)?;
        if !self.exact {
            sel.sure = RoaringBitmap::new();
        }
        if sel.maybe.is_none() && sel.sure.is_empty() {
            return Ok(None);
        }
        let maybe = match &sel.maybe {
            Some(m) => ranges(m),
            None => vec![0..rows],
        };
        Ok(Some(Pruned { maybe, sure: ranges(&sel.sure) }))
    }

    fn all(rows: u64) -> RoaringBitmap {
        let mut b = RoaringBitmap::new();
        b.insert_range(0..rows.min(u32::MAX as u64 + 1) as u32);
        b
    }

    /// `negated`: rows where the node is false, else where it is true.
    fn eval(&self, n: &Node, negated: bool, ds: &Dataset, i: usize, frag: u64, rows: u64) -> Result<Sel> {
        Ok(match n {
            Node::Leaf(l) => {
                let leaf = &self.leaves[*l];
                let Some(k) = leaf.segment(frag) else { return Ok(Sel::unknown()) };
                if let IndexQuery::Substrings { parts, .. } = &leaf.query {
                    if parts.iter().all(|p| ngram::query_tokens(p).is_empty()) {
                        // No trigram to look up: every row may match.
                        return Ok(Sel::unknown());
                    }
                }
                let seg = &leaf.segments[k];
                let found = leaf.rows(k, false)?;
                let nulls = if negated { Some(leaf.rows(k, true)?) } else { None };
                if seg.is_stale() {
                    return Ok(Sel::unknown());
                }
                let t = seg.offsets(ds, i, found.as_ref())?;
                if !seg.kind.exact_for(&leaf.query) {
                    // Zones that may match: read them, prove nothing.
                    return Ok(if negated { Sel::unknown() } else { Sel { sure: RoaringBitmap::new(), maybe: Some(t) } });
                }
                match nulls {
                    None => Sel::exact(t),
                    Some(n) => Sel::exact(Self::all(rows) - t - seg.offsets(ds, i, n.as_ref())?),
                }
            }
            Node::And(a, b) => {
                let (x, y) = (self.eval(a, negated, ds, i, frag, rows)?, self.eval(b, negated, ds, i, frag, rows)?);
                if negated {
                    Sel::or(x, y)
                } else {
                    Sel::and(x, y)
                }
            }
            Node::Or(a, b) => {
                let (x, y) = (self.eval(a, negated, ds, i, frag, rows)?, self.eval(b, negated, ds, i, frag, rows)?);
                if negated {
                    Sel::and(x, y)
                } else {
                    Sel::or(x, y)
                }
            }
            Node::Not(a) => self.eval(a, !negated, ds, i, frag, rows)?,
        })
    }
}

/// A bitmap as sorted ranges.
fn ranges(b: &RoaringBitmap) -> Vec<std::ops::Range<u64>> {
    let mut out: Vec<std::ops::Range<u64>> = Vec::new();
    for v in b {
        let v = v as u64;
        match out.last_mut() {
            Some(r) if r.end == v => r.end += 1,
            _ => out.push(v..v + 1),
        }
    }
    out
}

impl IndexSelection for IndexedFilter {
    fn select(&self, ds: &Dataset, i: usize) -> Result<Option<Pruned>> {
        IndexedFilter::select(self, ds, i)
    }
    fn describe(&self) -> String {
        IndexedFilter::describe(self)
    }
    fn exact(&self) -> bool {
        self.exact
    }
    fn covers(&self, id: u64) -> bool {
        IndexedFilter::covers(self, id)
    }
}

/// How the dataset's scalar indices answer (parts of) `filter`, fragment by
/// fragment; `None` when no index helps (or the filter is no SQL
/// expression).
pub fn index_selection(ds: &Dataset, filter: &dyn RowFilter) -> Result<Option<Arc<dyn IndexSelection>>> {
    let Some(expr) = filter.planned() else { return Ok(None) };
    let indices = DatasetIndices::load(ds)?;
    Ok(IndexedFilter::plan(expr, &indices).map(|f| Arc::new(f) as _))
}
