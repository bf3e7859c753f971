//! SQL filter expressions: `filter="x > 3 AND name LIKE 'a%'"`.
//!
//! A filter is parsed ([`parse`]: `sqlparser`'s tokenizer, our own
//! precedence-climbing parser with a bounded depth; one expression, nothing
//! after it), planned against the dataset's Arrow schema ([`plan`]: names resolved,
//! types coerced, literals converted and constant subtrees folded, so every
//! error shows up before any I/O), and evaluated batch by batch with the
//! Arrow compute kernels ([`eval`]). The result plugs into the scan as a
//! [`RowFilter`]; rows where it is null count as false (SQL `WHERE`).
//!
//! Dialect (as pylance's): unquoted names match columns case-insensitively
//! (an exact match wins), `` `backticks` `` quote a name exactly,
//! `'single'` and `"double"` quotes are string literals (`''` escapes a
//! quote; backslashes are kept, and escape `%`/`_` in `LIKE` patterns).
//! `a.b.c` reaches into struct children.
//!
//! Supported: comparisons (`= != <> < <= > >=`), `AND OR NOT`,
//! `IS [NOT] NULL|TRUE|FALSE|DISTINCT FROM`, `[NOT] IN (list)`,
//! `[NOT] BETWEEN`, `[NOT] LIKE|ILIKE`, `+ - * / %` and unary minus,
//! `CAST(x AS type)` / `x::type`, literals (integers, floats, strings,
//! booleans, `NULL`, `date '…'`, `timestamp '…'`, `decimal '…'`), the
//! functions `lower`, `upper`, `length`/`char_length`, `abs`, those of
//! [`functions`] (strings, `||`, `coalesce`/`nullif`, `CASE`, rounding and
//! math, `greatest`/`least`, `extract`/`date_part`), and the list tests
//! `array_has_any`, `array_has_all`, `array_has`/`array_contains`
//! ([`array`]). `_rowid` and
//! `_rowaddr` can be filtered on like UInt64 columns ([`parse_filter`]).
//! The same expressions produce column values ([`SqlValue`]: new columns
//! of `add_columns`, and `update` values cast to the column's type); a
//! `CASE` branch's value is computed only for the rows it takes.
//!
//! Coercion (DataFusion-like, a little more lenient than pylance): a literal
//! compared with a column takes the column's type when that is exact (`u8 >
//! 100`, `f32 = 1.1`, `dec = 1.5`, `d = '2024-01-01'`, `ts <
//! '2024-01-01 10:00'`); otherwise both sides go to a common type (ints
//! widen, int with float → Float64, int with decimal → decimal, date with
//! timestamp → timestamp, strings to their common width).

pub mod array;
mod coerce;
mod eval;
pub mod filter;
pub mod functions;
pub mod inlist;
pub(crate) mod parse;
pub(crate) mod plan;
mod prune;
mod value;

use std::sync::Arc;

use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use crate::error::Result;
use crate::file::stats::{GroupStats, Pruned};
use crate::system_columns::{ROW_ADDR, ROW_ID};
pub use filter::RowFilter;

pub use parse::MAX_DEPTH;
pub use plan::{CmpOp, Expr, Kind};
pub use value::SqlValue;

/// A parsed, type-checked SQL filter.
#[derive(Debug, Clone)]
pub struct SqlFilter {
    sql: String,
    expr: Expr,
    columns: Vec<String>,
}

impl SqlFilter {
    /// Parse `sql` and type-check it against `schema`.
    pub fn new(sql: &str, schema: &Schema) -> Result<Self> {
        let expr = plan::plan_filter(sql, schema)?;
        let mut columns = Vec::new();
        expr.columns(&mut columns);
        Ok(SqlFilter { sql: sql.to_string(), expr, columns })
    }

    /// Every column reference as (top-level column, struct path below it).
    pub fn column_paths(&self) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        self.expr.column_paths(&mut out);
        out
    }

    /// The filter's text.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The planned expression.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }
}

impl RowFilter for SqlFilter {
    fn columns(&self) -> Vec<String> {
        self.columns.clone()
    }

    fn prune(&self, stats: &dyn Fn(&str) -> Option<GroupStats>, rows: u64) -> Pruned {
        prune::prune(&self.expr, stats, rows)
    }

    fn text(&self) -> String {
        self.sql.clone()
    }

    fn planned(&self) -> Option<&Expr> {
        Some(&self.expr)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let mask =
            eval::evaluate_predicate(&self.expr, batch).map_err(|e| e.context(format_args!("evaluating filter `{}`", plan::shorten(&self.sql))))?;
        Ok(if mask.null_count() > 0 { arrow_select::filter::prep_null_mask_filter(&mask) } else { mask })
    }
}

/// Parse a filter (`filter=` of a scan, `count_rows` or `delete`) against a
/// dataset schema, which gains `_rowid` and `_rowaddr` (UInt64) unless it
/// has columns of those names (the scan computes them); errors (syntax,
/// unknown columns, types) are
/// [`Error::InvalidInput`](crate::Error::InvalidInput).
pub fn parse_filter(sql: &str, schema: &Schema) -> Result<Arc<dyn RowFilter>> {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for name in [ROW_ID, ROW_ADDR] {
        if schema.field_with_name(name).is_err() {
            fields.push(Field::new(name, DataType::UInt64, true));
        }
    }
    Ok(Arc::new(SqlFilter::new(sql, &Schema::new(fields))?))
}

#[cfg(test)]
mod parse_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod value_tests;
#[cfg(test)]
mod wide_tests;
