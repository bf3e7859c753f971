//! The plan texts pylance 14 prints for full-text searches
//! (`explain_plan()`; docs/research/text-and-skip-indices.md §1.10),
//! rebuilt from the query with DataFusion's node names and the column
//! positions its schemas give (`_rowid@0`, `_score@1`, read columns from 2).
//!
//! * a single-column match or phrase is a `MatchQuery` / `PhraseQuery` leaf
//!   (the raw query text), with the prefilter's scan as its child; fragments
//!   the index does not cover add a `FlatMatchQuery` branch, the two joined
//!   by a union under a `_score DESC` sort;
//! * multi-column matches (a bare string over several indexed columns,
//!   `MultiMatchQuery`) aggregate per-column branches under a
//!   `_score DESC, _rowid ASC` sort; with a limit each branch is a
//!   `CompoundFtsScorer` (`HybridCompoundFtsScorer` with a scan when some
//!   fragments are unindexed), without one the single-column form;
//! * boolean and boost queries are one `(Hybrid)CompoundFtsScorer` printing
//!   the query's debug form;
//! * the limit is a `GlobalLimitExec` over a leaf, a `TopK` sort otherwise;
//!   a postfilter is a `FilterExec` over the take of the projected columns.

use std::sync::Arc;

use arrow_schema::DataType;

use super::eval::{find, indexed_columns};
use super::{FtsQuery, FtsScan, Occur, Operator, SCORE};
use crate::error::Result;
use crate::system_columns::ROW_ID;
use crate::table::dataset::Dataset;
use crate::table::nearest::plan::{data_uri, logical_filter, physical_filter};
use crate::table::search_output::PlanNode as Node;

/// DataFusion's name of a column type in pylance's messages (`Int64`).
pub fn type_name(dt: &DataType) -> String {
    format!("{dt:?}")
}

fn debug_match(query: &str, column: &str, boost: f32, fuzziness: Option<u32>, max_expansions: usize, op: Operator, prefix_length: u32) -> String {
    format!(
        "MatchQuery {{ column: Some({column:?}), terms: {query:?}, boost: {boost:?}, fuzziness: {}, max_expansions: {max_expansions}, operator: {}, prefix_length: {prefix_length}, document_granularity: Some(Row) }}",
        fuzziness.map_or("None".to_string(), |f| format!("Some({f})")),
        if op == Operator::And { "And" } else { "Or" },
    )
}

/// pylance's debug form of a query (`Match(MatchQuery { … })`).
pub fn debug(q: &FtsQuery) -> String {
    match q {
        FtsQuery::Match { query, column, boost, fuzziness, max_expansions, operator, prefix_length } => {
            format!("Match({})", debug_match(query, column.as_deref().unwrap_or(""), *boost, *fuzziness, *max_expansions, *operator, *prefix_length))
        }
        FtsQuery::Phrase { query, column, slop } => {
            format!(
                "Phrase(PhraseQuery {{ column: Some({:?}), terms: {query:?}, slop: {slop}, document_granularity: Some(Row) }})",
                column.as_deref().unwrap_or("")
            )
        }
        FtsQuery::Boolean(cl) => {
            let part = |o: Occur| cl.iter().filter(|c| c.0 == o).map(|c| debug(&c.1)).collect::<Vec<_>>().join(", ");
            format!("Boolean(must=[{}], should=[{}], must_not=[{}])", part(Occur::Must), part(Occur::Should), part(Occur::MustNot))
        }
        FtsQuery::MultiMatch { query, columns, boosts, operator } => {
            let m: Vec<String> = columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    format!(
                        "Match({})",
                        debug_match(query, c, boosts.as_ref().and_then(|b| b.get(i).copied()).unwrap_or(1.0), Some(0), 50, *operator, 0)
                    )
                })
                .collect();
            format!("MultiMatch([{}])", m.join(", "))
        }
        FtsQuery::Boost { positive, negative, negative_boost } => {
            format!("Boosting(positive={}, negative={}, negative_boost={negative_boost:?})", debug(positive), debug(negative))
        }
    }
}

/// The first column a query names.
fn first_column(q: &FtsQuery) -> Option<String> {
    match q {
        FtsQuery::Match { column, .. } | FtsQuery::Phrase { column, .. } => column.clone(),
        FtsQuery::MultiMatch { columns, .. } => columns.first().cloned(),
        FtsQuery::Boolean(cl) => cl.iter().find_map(|c| first_column(&c.1)),
        FtsQuery::Boost { positive, .. } => first_column(positive),
    }
}

struct Ctx<'a> {
    ds: &'a Arc<Dataset>,
    uri: String,
    /// The prefilter's SQL.
    prefilter: Option<String>,
    /// Filter columns, in dataset order.
    filter_cols: Vec<String>,
}

impl Ctx<'_> {
    fn unindexed(&self, column: &str) -> Result<usize> {
        Ok(find(self.ds, column)?.map_or(0, |c| c.unindexed.len()))
    }

    fn scan(&self, cols: &[String], num_fragments: usize, with_filter: bool) -> Node {
        let f = match (&self.prefilter, with_filter) {
            (Some(sql), true) => logical_filter(self.ds, sql),
            _ => "--".to_string(),
        };
        Node::leaf(format!(
            "LanceRead: uri={}, projection=[{}], num_fragments={num_fragments}, range_before=None, range_after=None, row_id=true, row_addr=false, full_filter={f}, refine_filter={f}",
            self.uri,
            cols.join(", ")
        ))
    }

    /// Columns `c` and the prefilter's, in dataset order.
    fn flat_cols(&self, c: &str) -> Vec<String> {
        let want: Vec<&str> = std::iter::once(c)
            .chain(if self.prefilter.is_some() { self.filter_cols.iter().map(String::as_str).collect() } else { Vec::new() })
            .collect();
        self.ds.schema().fields().iter().map(|f| f.name().clone()).filter(|n| want.contains(&n.as_str())).collect()
    }

    /// A single-column match / phrase: the leaf, or the union with the
    /// flat search under a sort.
    fn single(&self, leaf: String, column: &str, query: &str, topk: Option<u64>) -> Result<(Node, bool)> {
        if find(self.ds, column)?.is_none() {
            // No index: pylance's flat search alone.
            let n = self.ds.fragments().len();
            return Ok((Node::over(format!("FlatMatchQuery: column={column}, query={query}"), self.scan(&self.flat_cols(column), n, true)), false));
        }
        let n = self.unindexed(column)?;
        let mut l = Node::leaf(leaf);
        if self.prefilter.is_some() {
            let covered = self.ds.fragments().len() - n;
            l.push(self.scan(&[], covered, true));
        }
        if n == 0 {
            return Ok((l, false));
        }
        let flat = Node::over(format!("FlatMatchQuery: column={column}, query={query}"), self.scan(&self.flat_cols(column), n, true));
        let union = Node::with_children("UnionExec".into(), vec![l, flat]);
        Ok((Node::over(sort(topk, false), Node::over("CoalescePartitionsExec".into(), union)), true))
    }

    fn compound(&self, q: &FtsQuery) -> Result<Node> {
        let col = first_column(q).unwrap_or_default();
        let n = if col.is_empty() { 0 } else { self.unindexed(&col)? };
        if n == 0 {
            return Ok(Node::leaf(format!("CompoundFtsScorer: query={}", debug(q))));
        }
        Ok(Node::over(format!("HybridCompoundFtsScorer: column={col}, query={}", debug(q)), self.scan(&self.flat_cols(&col), n, true)))
    }
}

fn sort(topk: Option<u64>, by_row_id: bool) -> String {
    let key = if by_row_id { format!("{SCORE}@1 DESC NULLS LAST, {ROW_ID}@0 ASC NULLS LAST") } else { format!("{SCORE}@1 DESC NULLS LAST") };
    match topk {
        Some(k) => format!("SortExec: TopK(fetch={k}), expr=[{key}], preserve_partitioning=[false]"),
        None => format!("SortExec: expr=[{key}], preserve_partitioning=[false]"),
    }
}

/// The plan text of a search.
pub fn explain(ds: &Arc<Dataset>, s: &FtsScan) -> Result<String> {
    let filter_sql = s.filter.as_ref().map(|f| f.text());
    let filter_cols: Vec<String> = s.filter.as_ref().map(|f| f.columns()).unwrap_or_default();
    let filter_cols: Vec<String> = ds.schema().fields().iter().map(|f| f.name().clone()).filter(|n| filter_cols.contains(n)).collect();
    let ctx = Ctx { ds, uri: data_uri(ds), prefilter: filter_sql.clone().filter(|_| s.prefilter), filter_cols: filter_cols.clone() };
    let postfilter = filter_sql.clone().filter(|_| !s.prefilter);
    // The top-k pushed into the search: not below a postfilter.
    let topk = if postfilter.is_some() { None } else { s.limit.map(|l| l + s.offset) };

    // A bare string / dict over the indexed columns.
    let query = match &s.query {
        FtsQuery::MultiMatch { query, columns, boosts, operator } => {
            let cols = if columns.is_empty() { indexed_columns(ds)? } else { columns.clone() };
            if cols.len() == 1 && boosts.is_none() {
                FtsQuery::Match {
                    query: query.clone(),
                    column: Some(cols[0].clone()),
                    boost: 1.0,
                    fuzziness: Some(0),
                    max_expansions: 50,
                    operator: *operator,
                    prefix_length: 0,
                }
            } else {
                FtsQuery::MultiMatch { query: query.clone(), columns: cols, boosts: boosts.clone(), operator: *operator }
            }
        }
        q => q.clone(),
    };
    let (inner, sorted) = match &query {
        FtsQuery::Match { query: text, column: Some(c), .. } => ctx.single(format!("MatchQuery: column={c}, query=[{text}]"), c, text, topk)?,
        FtsQuery::Phrase { query: text, column: Some(c), .. } => ctx.single(format!("PhraseQuery: column={c}, query={text}"), c, text, topk)?,
        FtsQuery::MultiMatch { query: text, columns, boosts, operator } => {
            let mut branches = Vec::new();
            for (i, c) in columns.iter().enumerate() {
                let boost = boosts.as_ref().and_then(|b| b.get(i).copied()).unwrap_or(1.0);
                if s.limit.is_some() {
                    let leaf = FtsQuery::Match {
                        query: text.clone(),
                        column: Some(c.clone()),
                        boost,
                        fuzziness: Some(0),
                        max_expansions: 50,
                        operator: *operator,
                        prefix_length: 0,
                    };
                    branches.push(ctx.compound(&leaf)?);
                } else {
                    branches.push(ctx.single(format!("MatchQuery: column={c}, query=[{text}]"), c, text, None)?.0);
                }
            }
            let union = Node::with_children("UnionExec".into(), branches);
            let agg = Node::over(
                "AggregateExec: mode=Single, gby=[_rowid@0 as _rowid], aggr=[_score]".into(),
                Node::over("CoalescePartitionsExec".into(), union),
            );
            (Node::over(sort(topk, true), agg), true)
        }
        q => (ctx.compound(q)?, false),
    };

    // The take of the projected columns (and a postfilter's).
    let out_names: Vec<String> = match &s.columns {
        Some(c) => c.iter().filter(|n| n.as_str() != SCORE && n.as_str() != ROW_ID).cloned().collect(),
        None => ds.schema().fields().iter().map(|f| f.name().clone()).collect(),
    };
    let mut read = out_names.clone();
    if postfilter.is_some() {
        for c in &filter_cols {
            if !read.contains(c) {
                read.push(c.clone());
            }
        }
    }
    let schema: Vec<String> = [ROW_ID.to_string(), SCORE.to_string()].into_iter().chain(read.iter().cloned()).collect();
    let limit_node = |child: Node| match s.limit {
        Some(l) => Node::over(format!("GlobalLimitExec: skip={}, fetch={l}", s.offset), child),
        None => child,
    };
    let mut node = inner;
    if postfilter.is_none() && (!sorted || s.offset > 0) {
        node = limit_node(node);
    }
    node = Node::over(format!("LanceRead: uri={}, projection=[{}], source=stream(_rowid)", ctx.uri, read.join(", ")), node);
    if let Some(f) = &postfilter {
        node = limit_node(Node::over(format!("FilterExec: {}", physical_filter(f, &schema)), node));
    }
    let mut proj: Vec<String> = Vec::new();
    let named = s.columns.clone().unwrap_or_else(|| out_names.clone());
    for n in &named {
        if n == SCORE {
            proj.push(format!("{SCORE}@1 as {SCORE}"));
        } else if n == ROW_ID && ds.schema().field_with_name(ROW_ID).is_err() {
            proj.push(format!("{ROW_ID}@0 as {ROW_ID}"));
        } else if let Some(i) = schema.iter().position(|x| x == n) {
            proj.push(format!("{n}@{i} as {n}"));
        }
    }
    if !named.iter().any(|n| n == SCORE) {
        proj.push(format!("{SCORE}@1 as {SCORE}"));
    }
    if s.with_row_id && !named.iter().any(|n| n == ROW_ID) {
        proj.push(format!("{ROW_ID}@0 as {ROW_ID}"));
    }
    let root = Node::over(format!("ProjectionExec: expr=[{}]", proj.join(", ")), node);
    let mut out = String::new();
    root.render(0, &mut out);
    Ok(out)
}
