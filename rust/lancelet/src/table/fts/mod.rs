//! Full-text search: `full_text_query=` scans over INVERTED indices, with
//! pylance 14's semantics (docs/research/text-and-skip-indices.md §1.8–§1.10).
//!
//! * [`FtsQuery`]: the query tree (match, phrase, boolean, multi-match,
//!   boost) under pylance's names and defaults;
//! * [`eval`]: evaluating a tree to `row id -> _score` over a column's index
//!   and, for fragments the index does not cover, a flat scan that tokenizes
//!   their text (scored with statistics combined over index and scan, as
//!   pylance does; indexed rows keep the index-only statistics);
//! * [`plan`]: the plan text pylance prints.
//!
//! Evaluation is exhaustive (every posting of every query term is read), so
//! the top `limit` rows are exact; ties are ordered by row id. Deleted rows
//! are never returned. A prefilter restricts candidates before the top-k, a
//! postfilter (the default) runs on the top-k. The result is read late:
//! only the winners' projected columns are taken.

pub mod eval;
pub mod plan;

use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::system_columns::ROW_ID;
use crate::table::dataset::Dataset;
use crate::table::scan::RowFilter;

/// The score column.
pub const SCORE: &str = "_score";

/// How a match query combines its terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// Any term.
    Or,
    /// Every term.
    And,
}

/// A boolean clause's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occur {
    /// Adds to the score; required only without MUST clauses.
    Should,
    /// Required; adds to the score.
    Must,
    /// Excludes.
    MustNot,
}

/// A full-text query (pylance's `lance.query` classes).
#[derive(Debug, Clone, PartialEq)]
pub enum FtsQuery {
    /// `MatchQuery(query, column, boost, fuzziness, max_expansions, operator, prefix_length)`.
    Match {
        /// Query text.
        query: String,
        /// The column (`None`: every INVERTED-indexed column).
        column: Option<String>,
        /// Score multiplier.
        boost: f32,
        /// Maximum edit distance (`None` = pylance's "auto", which 14.0.2 runs as exact).
        fuzziness: Option<u32>,
        /// Cap on fuzzy expansions.
        max_expansions: usize,
        /// Term combination.
        operator: Operator,
        /// Bytes fuzzy expansions must share with the term.
        prefix_length: u32,
    },
    /// `PhraseQuery(query, column, slop)`.
    Phrase {
        /// Query text.
        query: String,
        /// The column.
        column: Option<String>,
        /// Extra positions allowed between consecutive terms.
        slop: u32,
    },
    /// `BooleanQuery([(occur, query), ...])`.
    Boolean(Vec<(Occur, FtsQuery)>),
    /// `MultiMatchQuery(query, columns, boosts, operator)`.
    MultiMatch {
        /// Query text.
        query: String,
        /// The columns (empty: every INVERTED-indexed column).
        columns: Vec<String>,
        /// Per-column boosts.
        boosts: Option<Vec<f32>>,
        /// Term combination.
        operator: Operator,
    },
    /// `BoostQuery(positive, negative, negative_boost)`.
    Boost {
        /// Rows returned.
        positive: Box<FtsQuery>,
        /// Rows also matching this get `score * (1 - negative_boost)`.
        negative: Box<FtsQuery>,
        /// The demotion.
        negative_boost: f32,
    },
}

impl FtsQuery {
    /// A match query with pylance's defaults.
    pub fn matching(query: &str, column: Option<&str>) -> Self {
        FtsQuery::Match {
            query: query.to_string(),
            column: column.map(str::to_string),
            boost: 1.0,
            fuzziness: Some(0),
            max_expansions: 50,
            operator: Operator::Or,
            prefix_length: 0,
        }
    }
}

/// A full-text search with the scan's options.
#[derive(Debug, Clone)]
pub struct FtsScan {
    /// The query.
    pub query: FtsQuery,
    /// Output columns (all when `None`); may name `_score` and `_rowid`.
    pub columns: Option<Vec<String>>,
    /// The SQL filter.
    pub filter: Option<Arc<dyn RowFilter>>,
    /// Filter before the top-k instead of after.
    pub prefilter: bool,
    /// Append `_rowid`.
    pub with_row_id: bool,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// Skip this many rows first.
    pub offset: u64,
}

/// One result row before materialization.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// `_score`.
    pub score: f32,
    /// `_rowid`.
    pub row_id: u64,
    /// Row address.
    pub addr: u64,
}

#[derive(Debug, Clone, PartialEq)]
enum OutCol {
    Data(String),
    Score,
    RowId,
}

impl FtsScan {
    fn out_cols(&self, ds: &Dataset) -> Vec<OutCol> {
        let mut out: Vec<OutCol> = match &self.columns {
            None => ds.schema().fields().iter().map(|f| OutCol::Data(f.name().clone())).collect(),
            Some(c) => c
                .iter()
                .map(|n| match n.as_str() {
                    SCORE => OutCol::Score,
                    ROW_ID if ds.schema().field_with_name(ROW_ID).is_err() => OutCol::RowId,
                    _ => OutCol::Data(n.clone()),
                })
                .collect(),
        };
        if !out.contains(&OutCol::Score) {
            out.push(OutCol::Score);
        }
        if self.with_row_id && !out.contains(&OutCol::RowId) {
            out.push(OutCol::RowId);
        }
        out
    }

    /// The output schema.
    pub fn schema(&self, ds: &Dataset) -> SchemaRef {
        let fields: Vec<Field> = self
            .out_cols(ds)
            .into_iter()
            .map(|c| match c {
                OutCol::Data(n) => ds.schema().field_with_name(&n).cloned().unwrap_or_else(|_| Field::new(n, DataType::Null, true)),
                OutCol::Score => Field::new(SCORE, DataType::Float32, true),
                OutCol::RowId => Field::new(ROW_ID, DataType::UInt64, true),
            })
            .collect();
        Arc::new(Schema::new(fields))
    }

    fn validate(&self, ds: &Dataset) -> Result<()> {
        for c in self.out_cols(ds) {
            if let OutCol::Data(name) = c {
                ds.schema().field_with_name(&name).map_err(|_| Error::invalid_input(format!("No field named {name}")))?;
            }
        }
        Ok(())
    }
}

/// Run a full-text search: the whole result as one batch.
pub fn search(ds: &Arc<Dataset>, s: &FtsScan) -> Result<RecordBatch> {
    s.validate(ds)?;
    let mut hits = eval::run(ds, s)?;
    if let (Some(f), false) = (&s.filter, s.prefilter) {
        let keep = crate::table::nearest::evaluate_on(
            ds,
            f.as_ref(),
            &hits.iter().map(|h| crate::table::nearest::Hit { distance: h.score, row_id: h.row_id, addr: h.addr }).collect::<Vec<_>>(),
        )?;
        hits = hits.into_iter().zip(keep).filter_map(|(h, k)| k.then_some(h)).collect();
    }
    let skip = (s.offset as usize).min(hits.len());
    hits.drain(..skip);
    if let Some(l) = s.limit {
        hits.truncate(l as usize);
    }
    finish(ds, s, &hits)
}

/// Read the projected columns of the hits.
fn finish(ds: &Arc<Dataset>, s: &FtsScan, hits: &[Hit]) -> Result<RecordBatch> {
    let schema = s.schema(ds);
    let out_cols = s.out_cols(ds);
    let data_names: Vec<String> = out_cols.iter().filter_map(|c| if let OutCol::Data(n) = c { Some(n.clone()) } else { None }).collect();
    let addrs: Vec<u64> = hits.iter().map(|h| h.addr).collect();
    let taken = if data_names.is_empty() { None } else { Some(ds.take_addresses(&addrs, Some(&data_names))?) };
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let mut next_data = 0;
    for c in &out_cols {
        cols.push(match c {
            OutCol::Data(_) => {
                let a = taken.as_ref().ok_or_else(|| Error::internal("no taken columns"))?.column(next_data).clone();
                next_data += 1;
                a
            }
            OutCol::Score => Arc::new(Float32Array::from(hits.iter().map(|h| h.score).collect::<Vec<_>>())),
            OutCol::RowId => Arc::new(UInt64Array::from(hits.iter().map(|h| h.row_id).collect::<Vec<_>>())),
        });
    }
    RecordBatch::try_new_with_options(schema, cols, &RecordBatchOptions::new().with_row_count(Some(hits.len()))).map_err(Error::internal_arrow)
}

#[cfg(test)]
mod tests;
