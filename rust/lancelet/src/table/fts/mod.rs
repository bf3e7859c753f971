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

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use crate::error::Result;
use crate::table::dataset::Dataset;
use crate::table::scan::RowFilter;
use crate::table::search_output::{self, OutCol, Winners};

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

impl FtsScan {
    fn out_cols(&self, ds: &Dataset) -> Vec<OutCol> {
        search_output::out_cols(ds, self.columns.as_deref(), SCORE, self.with_row_id)
    }

    /// The output schema.
    pub fn schema(&self, ds: &Dataset) -> SchemaRef {
        Arc::new(Schema::new(search_output::out_fields(ds, &self.out_cols(ds), SCORE)))
    }

    fn validate(&self, ds: &Dataset) -> Result<()> {
        search_output::check_columns(ds, &self.out_cols(ds))
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
    let winners = Winners {
        addrs: hits.iter().map(|h| h.addr).collect(),
        scores: hits.iter().map(|h| h.score).collect(),
        row_ids: hits.iter().map(|h| h.row_id).collect(),
    };
    search_output::materialize(ds, s.schema(ds), Vec::new(), &s.out_cols(ds), winners)
}

#[cfg(test)]
mod tests;
