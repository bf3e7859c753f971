//! The plan texts pylance 14 prints for full-text searches
//! (`explain_plan()`; docs/research/text-and-skip-indices.md §1.10).
//!
//! A single-column match or phrase is a `MatchQuery` / `PhraseQuery` leaf
//! under the limit and the take of the projected columns (`LanceRead …
//! source=stream(_rowid)`); compound queries print `CompoundFtsScorer`
//! with the query's debug form; multi-column matches aggregate the
//! columns' scorers under a `_score DESC, _rowid ASC` sort; fragments the
//! index does not cover add a `FlatMatchQuery` branch to a union.

use std::fmt::Write;
use std::sync::Arc;

use arrow_schema::DataType;

use super::eval::{indexed_columns, find};
use super::{FtsQuery, FtsScan, Occur, Operator, SCORE};
use crate::error::Result;
use crate::system_columns::ROW_ID;
use crate::table::dataset::Dataset;

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
            format!("Phrase(PhraseQuery {{ column: Some({:?}), terms: {query:?}, slop: {slop}, document_granularity: Some(Row) }})", column.as_deref().unwrap_or(""))
        }
        FtsQuery::Boolean(cl) => {
            let part = |o: Occur| cl.iter().filter(|c| c.0 == o).map(|c| debug(&c.1)).collect::<Vec<_>>().join(", ");
            format!("Boolean(should=[{}], must=[{}], must_not=[{}])", part(Occur::Should), part(Occur::Must), part(Occur::MustNot))
        }
        FtsQuery::MultiMatch { query, columns, boosts, operator } => {
            let m: Vec<String> = columns
                .iter()
                .enumerate()
                .map(|(i, c)| debug_match(query, c, boosts.as_ref().map_or(1.0, |b| b[i]), Some(0), 50, *operator, 0))
                .collect();
            format!("MultiMatch(MultiMatchQuery {{ match_queries: [{}] }})", m.join(", "))
        }
        FtsQuery::Boost { positive, negative, negative_boost } => {
            format!("Boosting(positive={}, negative={}, negative_boost={negative_boost:?})", debug(positive), debug(negative))
        }
    }
}

/// The plan text of a search.
pub fn explain(ds: &Arc<Dataset>, s: &FtsScan) -> Result<String> {
    let uri = ds.uri().trim_start_matches("file://").trim_start_matches('/').to_string();
    let out_names: Vec<String> = match &s.columns {
        Some(c) => c.iter().filter(|n| n.as_str() != SCORE && n.as_str() != ROW_ID).cloned().collect(),
        None => ds.schema().fields().iter().map(|f| f.name().clone()).collect(),
    };
    // The leaf (or union of leaves) producing (_rowid, _score).
    let mut lines: Vec<(usize, String)> = Vec::new();
    let (multi, leaf_columns): (bool, Vec<String>) = match &s.query {
        FtsQuery::MultiMatch { columns, .. } => {
            let cols = if columns.is_empty() { indexed_columns(ds)? } else { columns.clone() };
            (cols.len() > 1, cols)
        }
        FtsQuery::Match { column: Some(c), .. } | FtsQuery::Phrase { column: Some(c), .. } => (false, vec![c.clone()]),
        _ => (false, Vec::new()),
    };
    let mut leaves: Vec<String> = Vec::new();
    let mut flat: Vec<(String, String, usize)> = Vec::new();
    match &s.query {
        FtsQuery::Match { query, column: Some(c), .. } => {
            let ci = find(ds, c)?;
            let mut toks = Vec::new();
            if let Some(ci) = &ci {
                ci.index.tokenizer.tokenize(query, &mut toks);
                if !ci.unindexed.is_empty() {
                    flat.push((c.clone(), query.clone(), ci.unindexed.len()));
                }
            }
            leaves.push(format!("MatchQuery: column={c}, query=[{}]", toks.iter().map(|t| t.text.as_str()).collect::<Vec<_>>().join(" ")));
        }
        FtsQuery::Phrase { query, column: Some(c), .. } => {
            if let Some(ci) = find(ds, c)? {
                if !ci.unindexed.is_empty() {
                    flat.push((c.clone(), query.clone(), ci.unindexed.len()));
                }
            }
            leaves.push(format!("PhraseQuery: column={c}, query={query}"));
        }
        FtsQuery::MultiMatch { query, operator, boosts, .. } if multi => {
            for (i, c) in leaf_columns.iter().enumerate() {
                let m = debug_match(query, c, boosts.as_ref().map_or(1.0, |b| b[i]), Some(0), 50, *operator, 0);
                leaves.push(format!("CompoundFtsScorer: query=Match({m})"));
            }
        }
        q => leaves.push(format!("CompoundFtsScorer: query={}", debug(q))),
    }
    let data_at = 2;
    let proj: Vec<String> = out_names.iter().enumerate().map(|(i, n)| format!("{n}@{} as {n}", i + data_at)).collect();
    let mut proj = proj;
    proj.push(format!("{SCORE}@1 as {SCORE}"));
    if s.with_row_id {
        proj.push(format!("{ROW_ID}@0 as {ROW_ID}"));
    }
    lines.push((0, format!("ProjectionExec: expr=[{}]", proj.join(", "))));
    lines.push((1, format!("LanceRead: uri={uri}/data, projection=[{}], source=stream(_rowid)", out_names.join(", "))));
    let mut depth = 2;
    if let Some(l) = s.limit {
        lines.push((depth, format!("GlobalLimitExec: skip={}, fetch={l}", s.offset)));
        depth += 1;
    }
    if multi || !flat.is_empty() {
        let sort = if multi { format!("{SCORE}@1 DESC NULLS LAST, {ROW_ID}@0 ASC NULLS LAST") } else { format!("{SCORE}@1 DESC NULLS LAST") };
        let head = match s.limit {
            Some(l) => format!("SortExec: TopK(fetch={}), expr=[{sort}], preserve_partitioning=[false]", l + s.offset),
            None => format!("SortExec: expr=[{sort}], preserve_partitioning=[false]"),
        };
        lines.push((depth, head));
        depth += 1;
        if multi {
            lines.push((depth, "AggregateExec: mode=Single, gby=[_rowid@0 as _rowid], aggr=[_score]".to_string()));
            depth += 1;
        }
        lines.push((depth, "CoalescePartitionsExec".to_string()));
        lines.push((depth + 1, "UnionExec".to_string()));
        depth += 2;
    }
    for l in leaves {
        lines.push((depth, l));
    }
    for (c, q, n) in flat {
        lines.push((depth, format!("FlatMatchQuery: column={c}, query={q}")));
        lines.push((
            depth + 1,
            format!("LanceRead: uri={uri}/data, projection=[{c}], num_fragments={n}, range_before=None, range_after=None, row_id=true, row_addr=false, full_filter=--, refine_filter=--"),
        ));
    }
    let mut out = String::new();
    for (d, l) in lines {
        let _ = writeln!(out, "{}{}", "  ".repeat(d), l);
    }
    Ok(out)
}
