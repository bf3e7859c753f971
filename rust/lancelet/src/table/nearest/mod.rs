//! Vector search: `nearest=` queries (pylance's `Scanner.nearest`), the
//! semantics in docs/research/vector-index.md §9–§11.
//!
//! * [`flat`]: exact KNN over the live rows of a dataset version (no index,
//!   `use_index=False`, or a metric other than the index's): a bounded heap
//!   per query, fed by a scan of the vector column only;
//! * [`ann`]: searching the column's vector index ([`VectorIndex`]) and
//!   merging it with a flat search of the fragments the index does not
//!   cover, re-ranked by exact distance (§11);
//! * [`plan`]: the plan texts pylance prints for these queries.
//!
//! Both paths produce the winners as `(distance, row id, row address)`, per
//! query, ascending by distance then row id. This module then applies the
//! postfilter (pylance's default: the filter runs on the k winners, so
//! fewer than k rows may remain), offset/limit over the concatenated
//! result, and only then reads the projected columns of the rows left
//! (late materialization). Output columns: `query_index` for a 2-D query,
//! the projected columns (with `_distance` / `_rowid` where `columns`
//! names them), then `_distance` and `_rowid` if not named.

pub mod ann;
pub mod flat;
pub mod plan;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int32Array, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::index::vector::{DistanceType, Probes, VectorIndex};
use crate::system_columns::{ROW_ADDR, ROW_ID};
use crate::table::dataset::Dataset;
use crate::table::scan::RowFilter;
use crate::table::search_output::{self, OutCol, Winners};

/// The distance column.
pub const DISTANCE: &str = "_distance";
/// The query number column of a batch (2-D) query.
pub const QUERY_INDEX: &str = "query_index";
/// Rows returned per query unless `k` is given (pylance's default).
pub const DEFAULT_K: usize = 10;

/// The `nearest={...}` parameters.
#[derive(Debug, Clone)]
pub struct Nearest {
    /// The vector column.
    pub column: String,
    /// Query vectors, row-major, `dim` floats each (pylance converts
    /// queries to float32).
    pub queries: Vec<f32>,
    /// Number of query vectors.
    pub num_queries: usize,
    /// The query was 2-D (a batch): the output gets `query_index`.
    pub batch: bool,
    /// Rows per query.
    pub k: usize,
    /// Metric asked for (`None`: the index's, else L2).
    pub metric: Option<DistanceType>,
    /// IVF probes.
    pub probes: Probes,
    /// Re-rank `k * refine_factor` index candidates by exact distance.
    pub refine_factor: Option<u32>,
    /// HNSW search breadth.
    pub ef: Option<usize>,
    /// Use the column's vector index when there is one.
    pub use_index: bool,
    /// Keep `lo <= d < hi`.
    pub distance_range: (Option<f32>, Option<f32>),
}

/// A nearest query with the scan's options.
#[derive(Debug, Clone)]
pub struct NearestScan {
    /// The search.
    pub nearest: Nearest,
    /// Output columns (all when `None`); may name `_distance` and `_rowid`.
    pub columns: Option<Vec<String>>,
    /// The SQL filter.
    pub filter: Option<Arc<dyn RowFilter>>,
    /// Filter before the search (k matching rows) instead of after.
    pub prefilter: bool,
    /// Search the indexed fragments only.
    pub fast_search: bool,
    /// Append `_rowid`.
    pub with_row_id: bool,
    /// At most this many rows (over all queries).
    pub limit: Option<u64>,
    /// Skip this many rows first.
    pub offset: u64,
}

/// One result row before materialization.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// `_distance`.
    pub distance: f32,
    /// `_rowid` (stable id, or the address without stable ids).
    pub row_id: u64,
    /// Row address (`fragment << 32 | offset`).
    pub addr: u64,
}

impl Hit {
    /// pylance's order: distance ascending, then row id.
    pub fn cmp_key(&self, o: &Hit) -> std::cmp::Ordering {
        self.distance.total_cmp(&o.distance).then(self.row_id.cmp(&o.row_id))
    }
}

/// The vector column's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorColumn {
    /// Elements per vector.
    pub dim: usize,
    /// Element type (Float16/32/64 or UInt8).
    pub element: ElementType,
}

/// Element types of vector columns search reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementType {
    /// float16.
    F16,
    /// float32.
    F32,
    /// float64.
    F64,
    /// uint8 (hamming).
    U8,
}

/// The shape of `column`, or pylance's error for a column search cannot use.
pub fn vector_column(ds: &Dataset, column: &str) -> Result<VectorColumn> {
    let field = ds.schema().field_with_name(column).map_err(|_| Error::invalid_input(format!("Embedding column {column} is not in the dataset")))?;
    let DataType::FixedSizeList(item, dim) = field.data_type() else {
        return Err(Error::invalid_input(format!("Query column {column} must be a vector. Got {}.", field.data_type())));
    };
    let element = match item.data_type() {
        DataType::Float16 => ElementType::F16,
        DataType::Float32 => ElementType::F32,
        DataType::Float64 => ElementType::F64,
        DataType::UInt8 => ElementType::U8,
        t => return Err(Error::invalid_input(format!("Query column {column} must be a vector of floats or uint8. Got {t}."))),
    };
    Ok(VectorColumn { dim: *dim as usize, element })
}

impl NearestScan {
    fn out_cols(&self, ds: &Dataset) -> Vec<OutCol> {
        search_output::out_cols(ds, self.columns.as_deref(), DISTANCE, self.with_row_id)
    }

    /// Checks that need no I/O: the column, the query's dimension, k.
    pub fn validate(&self, ds: &Dataset) -> Result<VectorColumn> {
        let n = &self.nearest;
        let vc = vector_column(ds, &n.column)?;
        if n.k == 0 {
            return Err(Error::invalid_input("Nearest-K must be > 0 but got 0"));
        }
        if n.num_queries == 0 || n.queries.len() != n.num_queries * vc.dim {
            let got = n.queries.len().checked_div(n.num_queries).unwrap_or(0);
            return Err(Error::invalid_input(format!("Query vector size {got} does not match index column size {}", vc.dim)));
        }
        if n.metric == Some(DistanceType::Hamming) && vc.element != ElementType::U8 {
            return Err(Error::invalid_input(format!("hamming distance needs a uint8 vector column; {} is not one", n.column)));
        }
        if vc.element == ElementType::U8 && n.metric.is_some_and(|m| m != DistanceType::Hamming) {
            return Err(Error::invalid_input(format!("uint8 vector column {} supports only the hamming metric", n.column)));
        }
        search_output::check_columns(ds, &self.out_cols(ds))?;
        Ok(vc)
    }

    /// The output schema.
    pub fn schema(&self, ds: &Dataset) -> SchemaRef {
        let mut fields = Vec::new();
        if self.nearest.batch {
            fields.push(Field::new(QUERY_INDEX, DataType::Int32, false));
        }
        fields.extend(search_output::out_fields(ds, &self.out_cols(ds), DISTANCE));
        Arc::new(Schema::new(fields))
    }
}

/// The metric a search uses: the one asked for, else the index's, else L2
/// (hamming for uint8 columns).
pub fn effective_metric(asked: Option<DistanceType>, index: Option<DistanceType>, vc: &VectorColumn) -> DistanceType {
    asked.or(index).unwrap_or(if vc.element == ElementType::U8 { DistanceType::Hamming } else { DistanceType::L2 })
}

/// How a query will run (what [`search`] does and [`plan`] prints).
#[derive(Debug)]
pub enum Route {
    /// Exact flat search of every live row.
    Flat {
        /// The metric.
        metric: DistanceType,
    },
    /// The column's vector index (one or more segments).
    Index(ann::IndexRoute),
}

/// Decide between the index and a flat search.
pub fn route(ds: &Arc<Dataset>, s: &NearestScan, vc: &VectorColumn) -> Result<Route> {
    if s.nearest.use_index {
        if let Some(r) = ann::find_index(ds, &s.nearest.column)? {
            if s.nearest.metric.is_none_or(|m| m == r.metric) {
                return Ok(Route::Index(r));
            }
        }
    }
    Ok(Route::Flat { metric: effective_metric(s.nearest.metric, None, vc) })
}

/// Run a nearest query: the whole result as one batch.
pub fn search(ds: &Arc<Dataset>, s: &NearestScan) -> Result<RecordBatch> {
    let vc = s.validate(ds)?;
    let hits = match route(ds, s, &vc)? {
        Route::Flat { metric } => {
            let allowed = if s.prefilter { s.filter.clone() } else { None };
            flat::search(ds, &s.nearest, &vc, metric, allowed, None)?
        }
        Route::Index(r) => {
            let index = r.open(ds)?;
            ann::search(ds, s, &vc, &r, &index)?
        }
    };
    finish(ds, s, hits)
}

/// Search with an already opened index (tests use a fake [`VectorIndex`]).
pub fn search_with_index(ds: &Arc<Dataset>, s: &NearestScan, r: &ann::IndexRoute, index: &[Arc<dyn VectorIndex>]) -> Result<RecordBatch> {
    let vc = s.validate(ds)?;
    let hits = ann::search(ds, s, &vc, r, index)?;
    finish(ds, s, hits)
}

/// Postfilter, offset/limit, then read the projected columns of the rows
/// left.
fn finish(ds: &Arc<Dataset>, s: &NearestScan, per_query: Vec<Vec<Hit>>) -> Result<RecordBatch> {
    let mut rows: Vec<(i32, Hit)> = per_query.into_iter().enumerate().flat_map(|(q, h)| h.into_iter().map(move |h| (q as i32, h))).collect();
    if let (Some(f), false) = (&s.filter, s.prefilter) {
        let keep = evaluate_on(ds, f.as_ref(), &rows.iter().map(|r| r.1).collect::<Vec<_>>())?;
        rows = rows.into_iter().zip(keep).filter_map(|(r, k)| k.then_some(r)).collect();
    }
    let skip = (s.offset as usize).min(rows.len());
    rows.drain(..skip);
    if let Some(l) = s.limit {
        rows.truncate(l as usize);
    }
    let leading: Vec<ArrayRef> =
        if s.nearest.batch { vec![Arc::new(Int32Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>()))] } else { Vec::new() };
    let winners = Winners {
        addrs: rows.iter().map(|r| r.1.addr).collect(),
        scores: rows.iter().map(|r| r.1.distance).collect(),
        row_ids: rows.iter().map(|r| r.1.row_id).collect(),
    };
    search_output::materialize(ds, s.schema(ds), leading, &s.out_cols(ds), winners)
}

/// Evaluate `filter` on the rows at these hits (reading only its columns).
pub(crate) fn evaluate_on(ds: &Arc<Dataset>, filter: &dyn RowFilter, hits: &[Hit]) -> Result<Vec<bool>> {
    if hits.is_empty() {
        return Ok(Vec::new());
    }
    let names = filter.columns();
    let in_schema = |n: &str| ds.schema().field_with_name(n).is_ok();
    let data: Vec<String> = names.iter().filter(|n| in_schema(n) || (n.as_str() != ROW_ID && n.as_str() != ROW_ADDR)).cloned().collect();
    let addrs: Vec<u64> = hits.iter().map(|h| h.addr).collect();
    let taken = ds.take_addresses(&addrs, Some(&data))?;
    let mut fields: Vec<Field> = taken.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut cols: Vec<ArrayRef> = taken.columns().to_vec();
    if names.iter().any(|n| n == ROW_ID) && !in_schema(ROW_ID) {
        fields.push(Field::new(ROW_ID, DataType::UInt64, true));
        cols.push(Arc::new(UInt64Array::from(hits.iter().map(|h| h.row_id).collect::<Vec<_>>())));
    }
    if names.iter().any(|n| n == ROW_ADDR) && !in_schema(ROW_ADDR) {
        fields.push(Field::new(ROW_ADDR, DataType::UInt64, true));
        cols.push(Arc::new(UInt64Array::from(addrs)));
    }
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), cols, &RecordBatchOptions::new().with_row_count(Some(hits.len())))
        .map_err(Error::internal_arrow)?;
    let mask = filter.evaluate(&batch)?;
    Ok((0..mask.len()).map(|i| mask.is_valid(i) && mask.value(i)).collect())
}

#[cfg(test)]
mod tests;
