//! The row predicate a scan evaluates: the trait between the SQL filter
//! engine (this room) and the scans of the table room, which holds a
//! `dyn RowFilter` and never depends on how it is implemented.

use arrow_array::{BooleanArray, RecordBatch};

use super::plan::Expr;
use crate::error::Result;
use crate::file::stats::{GroupStats, Pruned};

/// A row predicate evaluated batch by batch (the SQL filter engine plugs in
/// here).
pub trait RowFilter: Send + Sync + std::fmt::Debug {
    /// Dataset columns the predicate reads.
    fn columns(&self) -> Vec<String>;
    /// True for rows to keep (nulls count as false).
    fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray>;
    /// What the statistics `stats(column)` of a fragment's files tell about
    /// its physical rows `0..rows`: the rows that may match (the scan skips
    /// the rest) and those that surely do (kept without evaluating).
    /// Nothing unless a filter knows better.
    fn prune(&self, stats: &dyn Fn(&str) -> Option<GroupStats>, rows: u64) -> Pruned {
        let _ = stats;
        Pruned::unknown(rows)
    }
    /// The planned SQL expression, for the scan to match against the
    /// dataset's scalar indices (`table::filter_index`); `None` for a
    /// predicate that is no SQL expression (it is then never indexed).
    fn planned(&self) -> Option<&Expr> {
        None
    }
    /// The predicate as text (for plans).
    fn text(&self) -> String {
        format!("{self:?}")
    }
}
