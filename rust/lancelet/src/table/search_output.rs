//! What the two searches (vector `nearest=` and `full_text_query=`) share:
//! the shape of their output, read late for the winning rows only, and the
//! indented plan tree both print.
//!
//! A search's output is the projected data columns (every column when none
//! is named), its own score column (`_distance` or `_score`; appended when
//! not named) and `_rowid` when asked for, in the order pylance 14 gives.

use std::fmt::Write;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::{DataType, Field, SchemaRef};

use crate::error::{Error, Result};
use crate::system_columns::ROW_ID;
use crate::table::dataset::Dataset;

/// What one output column is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OutCol {
    /// A column of the dataset.
    Data(String),
    /// The search's score (`_distance` or `_score`).
    Score,
    /// `_rowid` (when the dataset has no column of that name).
    RowId,
}

/// The output columns of a search projecting `columns` (all when `None`),
/// whose score column is named `score`.
pub(crate) fn out_cols(ds: &Dataset, columns: Option<&[String]>, score: &str, with_row_id: bool) -> Vec<OutCol> {
    let mut out: Vec<OutCol> = match columns {
        None => ds.schema().fields().iter().map(|f| OutCol::Data(f.name().clone())).collect(),
        Some(c) => c
            .iter()
            .map(|n| {
                if n == score {
                    OutCol::Score
                } else if n == ROW_ID && ds.schema().field_with_name(ROW_ID).is_err() {
                    OutCol::RowId
                } else {
                    OutCol::Data(n.clone())
                }
            })
            .collect(),
    };
    if !out.contains(&OutCol::Score) {
        out.push(OutCol::Score);
    }
    if with_row_id && !out.contains(&OutCol::RowId) {
        out.push(OutCol::RowId);
    }
    out
}

/// pylance's error for a projected column the dataset lacks.
pub(crate) fn check_columns(ds: &Dataset, cols: &[OutCol]) -> Result<()> {
    for c in cols {
        if let OutCol::Data(name) = c {
            ds.schema().field_with_name(name).map_err(|_| Error::invalid_input(format!("No field named {name}")))?;
        }
    }
    Ok(())
}

/// The name an output column has in the result.
pub(crate) fn col_name<'a>(c: &'a OutCol, score: &'a str) -> &'a str {
    match c {
        OutCol::Data(x) => x,
        OutCol::Score => score,
        OutCol::RowId => ROW_ID,
    }
}

/// The output fields (the score a nullable float32, `_rowid` a uint64).
pub(crate) fn out_fields(ds: &Dataset, cols: &[OutCol], score: &str) -> Vec<Field> {
    cols.iter()
        .map(|c| match c {
            OutCol::Data(n) => ds.schema().field_with_name(n).cloned().unwrap_or_else(|_| Field::new(n, DataType::Null, true)),
            OutCol::Score => Field::new(score, DataType::Float32, true),
            OutCol::RowId => Field::new(ROW_ID, DataType::UInt64, true),
        })
        .collect()
}

/// The winning rows, in output order.
pub(crate) struct Winners {
    /// Row addresses (where the data columns are read).
    pub addrs: Vec<u64>,
    /// Scores.
    pub scores: Vec<f32>,
    /// Row ids.
    pub row_ids: Vec<u64>,
}

/// The result batch: `leading` columns (e.g. `query_index`) first, then
/// `cols`, the data columns taken for the winners only.
pub(crate) fn materialize(ds: &Arc<Dataset>, schema: SchemaRef, leading: Vec<ArrayRef>, cols: &[OutCol], w: Winners) -> Result<RecordBatch> {
    let data_names: Vec<String> = cols.iter().filter_map(|c| if let OutCol::Data(n) = c { Some(n.clone()) } else { None }).collect();
    let taken = if data_names.is_empty() { None } else { Some(ds.take_addresses(&w.addrs, Some(&data_names))?) };
    let rows = w.addrs.len();
    let mut out = leading;
    out.reserve(cols.len());
    let (mut scores, mut row_ids) = (Some(w.scores), Some(w.row_ids));
    let mut next_data = 0;
    for c in cols {
        out.push(match c {
            OutCol::Data(_) => {
                let a = taken.as_ref().ok_or_else(|| Error::internal("search output: no data columns taken"))?.column(next_data).clone();
                next_data += 1;
                a
            }
            OutCol::Score => Arc::new(Float32Array::from(scores.take().unwrap_or_default())),
            OutCol::RowId => Arc::new(UInt64Array::from(row_ids.take().unwrap_or_default())),
        });
    }
    RecordBatch::try_new_with_options(schema, out, &RecordBatchOptions::new().with_row_count(Some(rows))).map_err(Error::internal_arrow)
}

/// A node of a printed plan: its text and children, rendered two spaces
/// deeper per level.
pub(crate) struct PlanNode {
    text: String,
    children: Vec<PlanNode>,
}

impl PlanNode {
    /// A node without children.
    pub(crate) fn leaf(text: String) -> PlanNode {
        PlanNode { text, children: Vec::new() }
    }

    /// A node over one child.
    pub(crate) fn over(text: String, child: PlanNode) -> PlanNode {
        PlanNode { text, children: vec![child] }
    }

    /// A node over several children.
    pub(crate) fn with_children(text: String, children: Vec<PlanNode>) -> PlanNode {
        PlanNode { text, children }
    }

    /// Adds a child after the others.
    pub(crate) fn push(&mut self, child: PlanNode) {
        self.children.push(child);
    }

    /// Appends this node and its subtree to `out`, one line each.
    pub(crate) fn render(&self, depth: usize, out: &mut String) {
        let _ = writeln!(out, "{}{}", "  ".repeat(depth), self.text);
        for c in &self.children {
            c.render(depth + 1, out);
        }
    }
}
