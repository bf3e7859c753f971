//! BTREE indices: the column's values sorted, with their rows, cut into
//! pages of 4096, plus a small lookup of each page's bounds.
//!
//! ```text
//! _indices/{uuid}/page_data.lance    values: <column type> (nullable)
//!                                    ids:    uint64 (not null)
//!     one row per indexed row, sorted by value (Arrow's total order: nulls
//!     first, floats by IEEE total order), ties by row address
//! _indices/{uuid}/page_lookup.lance  min, max: <column type> (nullable)
//!                                    null_count, page_idx: uint32 (not null)
//!     one row per page of `batch_size` rows of page_data: its first and
//!     last value (so `min` is null when the page starts with nulls; an
//!     all-null page has a null `max`), its nulls and its number
//!     schema metadata: batch_size = "4096", range_partitioned = "false"
//! ```
//!
//! `ids` are row addresses (`fragment << 32 | offset`) even on datasets with
//! stable row ids (then the index records `index_version` 1).
//!
//! A search picks the pages whose bounds may hold matches, loads them
//! (cached per index) and binary-searches each: values are compared with
//! Arrow's comparator, the same order the filter kernels use, so an indexed
//! answer equals evaluating the predicate on every row.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_ord::ord::make_comparator;
use arrow_schema::{DataType, Field, Schema, SortOptions};
use std::cmp::Ordering;

use super::rowset::RowSet;
use super::{IndexKind, IndexQuery, RangeEnd, ScalarIndex, TrainingData};
use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::{FileReader, FileVersion, FileWriter};
use crate::io::Storage;

/// Sorted values and rows.
pub const DATA_FILE: &str = "page_data.lance";
/// Page bounds.
pub const LOOKUP_FILE: &str = "page_lookup.lance";
/// Rows per page.
pub const PAGE_ROWS: usize = 4096;

const SORT: SortOptions = SortOptions { descending: false, nulls_first: true };

/// `values` / `ids` columns of page_data.
fn data_schema(dt: &DataType) -> Schema {
    Schema::new(vec![Field::new("values", dt.clone(), true), Field::new("ids", DataType::UInt64, false)])
}

/// Sort `(value, id)` pairs: values in Arrow's order with nulls first, ties
/// by id. Arrow's single-column sort (specialised per type) orders the
/// values; only runs of equal values then have their ids sorted, which is
/// much cheaper than a two-column sort through the dynamic comparator.
pub(crate) fn sorted(data: &TrainingData) -> Result<(ArrayRef, UInt64Array)> {
    let order = arrow_ord::sort::sort_to_indices(data.values.as_ref(), Some(SORT), None).map_err(Error::internal_arrow)?;
    let values = arrow_select::take::take(data.values.as_ref(), &order, None).map_err(Error::internal_arrow)?;
    let src = data.ids.values();
    let mut ids: Vec<u64> = order.values().iter().map(|&i| src[i as usize]).collect();
    let n = values.len();
    if n > 1 {
        // Neighbours that are equal (nulls equal; floats by total order, as
        // the sort) form runs; most columns have few.
        let same = arrow_ord::cmp::not_distinct(&values.slice(0, n - 1), &values.slice(1, n - 1)).map_err(Error::internal_arrow)?;
        let mut run: Option<std::ops::Range<usize>> = None;
        for j in same.values().set_indices() {
            match &mut run {
                Some(r) if r.end == j + 1 => r.end = j + 2,
                _ => {
                    if let Some(r) = run.take() {
                        ids[r].sort_unstable();
                    }
                    run = Some(j..j + 2);
                }
            }
        }
        if let Some(r) = run {
            ids[r].sort_unstable();
        }
    }
    Ok((values, UInt64Array::from(ids)))
}

/// Write `page_data.lance` and `page_lookup.lance` for `data`.
pub fn write(dir: &Storage, version: FileVersion, data: &TrainingData) -> Result<Vec<(String, u64)>> {
    let dt = data.values.data_type().clone();
    let (values, ids) = sorted(data)?;
    let n = values.len();

    let schema = Arc::new(data_schema(&dt));
    let mut w = FileWriter::create_with_lance_schema(dir.child(DATA_FILE)?, LanceSchema::from_arrow(&schema)?, version)?;
    let step = 1 << 20;
    for start in (0..n).step_by(step) {
        let len = step.min(n - start);
        let batch = RecordBatch::try_new(schema.clone(), vec![values.slice(start, len), Arc::new(ids.slice(start, len))]);
        w.write(&batch.map_err(Error::internal_arrow)?)?;
    }
    let data_size = w.finish()?;

    let pages = n.div_ceil(PAGE_ROWS);
    let firsts = UInt32Array::from_iter_values((0..pages).map(|p| (p * PAGE_ROWS) as u32));
    let lasts = UInt32Array::from_iter_values((0..pages).map(|p| (((p + 1) * PAGE_ROWS).min(n) - 1) as u32));
    let mins = arrow_select::take::take(values.as_ref(), &firsts, None).map_err(Error::internal_arrow)?;
    let maxs = arrow_select::take::take(values.as_ref(), &lasts, None).map_err(Error::internal_arrow)?;
    let nulls = UInt32Array::from_iter_values((0..pages).map(|p| {
        let s = p * PAGE_ROWS;
        values.slice(s, PAGE_ROWS.min(n - s)).null_count() as u32
    }));
    let page_idx = UInt32Array::from_iter_values(0..pages as u32);
    let lookup_schema = Arc::new(
        Schema::new(vec![
            Field::new("min", dt.clone(), true),
            Field::new("max", dt, true),
            Field::new("null_count", DataType::UInt32, false),
            Field::new("page_idx", DataType::UInt32, false),
        ])
        .with_metadata(HashMap::from([("batch_size".to_string(), PAGE_ROWS.to_string()), ("range_partitioned".to_string(), "false".to_string())])),
    );
    let mut w = FileWriter::create_with_lance_schema(dir.child(LOOKUP_FILE)?, LanceSchema::from_arrow(&lookup_schema)?, version)?;
    if pages > 0 {
        w.write(&RecordBatch::try_new(lookup_schema.clone(), vec![mins, maxs, Arc::new(nulls), Arc::new(page_idx)]).map_err(Error::internal_arrow)?)?;
    }
    let lookup_size = w.finish()?;
    Ok(vec![(DATA_FILE.to_string(), data_size), (LOOKUP_FILE.to_string(), lookup_size)])
}

/// One loaded page: its sorted values and their rows.
#[derive(Debug)]
struct Page {
    values: ArrayRef,
    ids: UInt64Array,
    nulls: usize,
}

/// An opened BTREE index.
#[derive(Debug)]
pub struct BTreeIndex {
    value_type: DataType,
    batch_size: u64,
    mins: ArrayRef,
    maxs: ArrayRef,
    null_counts: Vec<u32>,
    page_idx: Vec<u32>,
    data: FileReader,
    pages: Mutex<HashMap<u32, Arc<Page>>>,
}

impl BTreeIndex {
    /// Open the index in `dir` (reads the lookup file; pages on demand).
    pub fn open(dir: &Storage) -> Result<Self> {
        let lookup = FileReader::open_storage(dir.child(LOOKUP_FILE)?)?;
        let data = FileReader::open_storage(dir.child(DATA_FILE)?)?;
        let ls = lookup.schema().clone();
        let bad = |what: String| Error::corrupt_in(lookup.path().to_string(), what);
        let names: Vec<&str> = ls.fields().iter().map(|f| f.name().as_str()).collect();
        if names != ["min", "max", "null_count", "page_idx"] {
            return Err(bad(format!("expected columns min, max, null_count, page_idx; found {}", names.join(", "))));
        }
        let batch_size: u64 = match ls.metadata().get("batch_size") {
            Some(s) => s.parse().map_err(|_| bad(format!("batch_size {s:?} is not a number")))?,
            None => PAGE_ROWS as u64,
        };
        if batch_size == 0 {
            return Err(bad("batch_size is 0".into()));
        }
        if ls.metadata().get("range_partitioned").is_some_and(|v| v != "false") {
            return Err(Error::unsupported("range-partitioned BTREE indices are not supported"));
        }
        let value_type = ls.field(0).data_type().clone();
        let ds = data.schema();
        if ds.fields().len() != 2 || ds.field(0).data_type() != &value_type || ds.field(1).data_type() != &DataType::UInt64 {
            return Err(Error::corrupt_in(data.path().to_string(), format!("expected columns values: {value_type}, ids: uint64; found {ds}")));
        }
        let all: Vec<usize> = (0..4).collect();
        let batch = lookup.read_range(&all, 0..lookup.num_rows())?;
        let nc = batch.column(2).as_primitive_opt::<arrow_array::types::UInt32Type>().ok_or_else(|| bad("null_count is not uint32".into()))?;
        let pi = batch.column(3).as_primitive_opt::<arrow_array::types::UInt32Type>().ok_or_else(|| bad("page_idx is not uint32".into()))?;
        let pages = data.num_rows().div_ceil(batch_size);
        for (k, &p) in pi.values().iter().enumerate() {
            if p as u64 >= pages {
                return Err(bad(format!("lookup row {k} names page {p}, but page_data has {pages} pages")));
            }
        }
        Ok(BTreeIndex {
            value_type,
            batch_size,
            mins: batch.column(0).clone(),
            maxs: batch.column(1).clone(),
            null_counts: nc.values().to_vec(),
            page_idx: pi.values().to_vec(),
            data,
            pages: Mutex::new(HashMap::new()),
        })
    }

    fn page(&self, k: usize) -> Result<Arc<Page>> {
        let p = self.page_idx[k];
        if let Some(pg) = self.pages.lock().unwrap_or_else(|e| e.into_inner()).get(&p) {
            return Ok(pg.clone());
        }
        let start = p as u64 * self.batch_size;
        let end = (start + self.batch_size).min(self.data.num_rows());
        let b = self.data.read_range(&[0, 1], start..end)?;
        let ids = b.column(1).as_primitive::<UInt64Type>().clone();
        if ids.null_count() > 0 {
            return Err(Error::corrupt_in(self.data.path().to_string(), format!("page {p} has null row ids")));
        }
        let values = b.column(0).clone();
        let nulls = values.null_count();
        if nulls != self.null_counts[k] as usize || (0..nulls).any(|i| values.is_valid(i)) {
            return Err(Error::corrupt_in(
                self.data.path().to_string(),
                format!("page {p}: its nulls do not lead the page as the lookup says ({} nulls)", self.null_counts[k]),
            ));
        }
        let page = Arc::new(Page { values, ids, nulls });
        self.pages.lock().unwrap_or_else(|e| e.into_inner()).insert(p, page.clone());
        Ok(page)
    }

    /// Compare column `a[i]` with the one value `v` (as the index orders them).
    fn cmp_fn(a: &dyn Array, v: &dyn Array) -> Result<Box<dyn Fn(usize) -> Ordering + Send + Sync>> {
        let c = make_comparator(a, v, SORT).map_err(Error::internal_arrow)?;
        Ok(Box::new(move |i| c(i, 0)))
    }

    /// Pages that may hold values in `[lower, upper]`.
    fn candidate_pages(&self, lower: Option<&RangeEnd>, upper: Option<&RangeEnd>) -> Result<Vec<usize>> {
        let n = self.page_idx.len();
        let mut keep = vec![true; n];
        for k in 0..n {
            // All-null pages (null max) hold no comparable value.
            keep[k] = self.maxs.is_valid(k);
        }
        if let Some(lo) = lower {
            let c = Self::cmp_fn(self.maxs.as_ref(), lo.value.as_ref())?;
            for (k, kp) in keep.iter_mut().enumerate() {
                let o = c(k);
                *kp &= o == Ordering::Greater || (lo.inclusive && o == Ordering::Equal);
            }
        }
        if let Some(hi) = upper {
            // A null min sorts first, so a page starting with nulls stays.
            let c = Self::cmp_fn(self.mins.as_ref(), hi.value.as_ref())?;
            for (k, kp) in keep.iter_mut().enumerate() {
                let o = c(k);
                *kp &= o == Ordering::Less || (hi.inclusive && o == Ordering::Equal);
            }
        }
        Ok((0..n).filter(|&k| keep[k]).collect())
    }

    /// Rows of the pages' values within the range.
    fn search_range(&self, lower: Option<&RangeEnd>, upper: Option<&RangeEnd>, out: &mut Vec<u64>) -> Result<()> {
        for k in self.candidate_pages(lower, upper)? {
            let pg = self.page(k)?;
            let n = pg.values.len();
            let start = match lower {
                None => pg.nulls,
                Some(lo) => {
                    let c = Self::cmp_fn(pg.values.as_ref(), lo.value.as_ref())?;
                    partition_point(pg.nulls, n, |i| {
                        let o = c(i);
                        o == Ordering::Less || (!lo.inclusive && o == Ordering::Equal)
                    })
                }
            };
            let end = match upper {
                None => n,
                Some(hi) => {
                    let c = Self::cmp_fn(pg.values.as_ref(), hi.value.as_ref())?;
                    partition_point(start, n, |i| {
                        let o = c(i);
                        o == Ordering::Less || (hi.inclusive && o == Ordering::Equal)
                    })
                }
            };
            if start < end {
                out.extend_from_slice(&pg.ids.values()[start..end]);
            }
        }
        Ok(())
    }

    fn check_type(&self, v: &ArrayRef) -> Result<()> {
        if v.data_type() != &self.value_type {
            return Err(Error::Internal { what: format!("a {} value asked of a BTREE index on {}", v.data_type(), self.value_type) });
        }
        Ok(())
    }
}

/// First `i` in `lo..hi` for which `before(i)` is false (`before` is true
/// on a prefix).
fn partition_point(mut lo: usize, mut hi: usize, before: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl ScalarIndex for BTreeIndex {
    fn kind(&self) -> IndexKind {
        IndexKind::BTree
    }

    fn value_type(&self) -> &DataType {
        &self.value_type
    }

    fn search(&self, query: &IndexQuery) -> Result<RowSet> {
        let mut ids = Vec::new();
        match query {
            IndexQuery::Equals(v) => {
                self.check_type(v)?;
                let e = RangeEnd { value: v.clone(), inclusive: true };
                self.search_range(Some(&e), Some(&e), &mut ids)?;
            }
            IndexQuery::In(vs) => {
                self.check_type(vs)?;
                for i in 0..vs.len() {
                    if vs.is_null(i) {
                        continue;
                    }
                    let e = RangeEnd { value: vs.slice(i, 1), inclusive: true };
                    self.search_range(Some(&e), Some(&e), &mut ids)?;
                }
            }
            IndexQuery::Range { lower, upper } => {
                for e in lower.iter().chain(upper.iter()) {
                    self.check_type(&e.value)?;
                }
                self.search_range(lower.as_ref(), upper.as_ref(), &mut ids)?;
            }
            IndexQuery::IsNull => {
                for k in (0..self.page_idx.len()).filter(|&k| self.null_counts[k] > 0) {
                    let pg = self.page(k)?;
                    ids.extend_from_slice(&pg.ids.values()[..pg.nulls]);
                }
            }
            IndexQuery::HasAny(_) | IndexQuery::HasAll(_) | IndexQuery::Substrings { .. } => {
                return Err(Error::Internal { what: "a list or substring query asked of a BTREE index".into() })
            }
        }
        Ok(RowSet::from_ids(ids))
    }
}
