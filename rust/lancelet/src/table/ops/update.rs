//! `update`: set columns to SQL values in the rows where a predicate
//! holds, committed as pylance 14 does: one `Update` (108) transaction in
//! `REWRITE_ROWS` mode.
//!
//! * The matching rows are scanned in order (all columns, with `_rowaddr`,
//!   and `_rowid` with stable row ids); every new value is computed from the
//!   row as it was (SQL semantics: `SET a = b, b = a` swaps) and cast to
//!   the column's type.
//! * The rewritten rows go, in scan order, into new data files / fragments
//!   (at most 1 Mi rows each, the dataset's file version) placed after the
//!   existing fragments when the manifest is built.
//! * The old rows are marked deleted: each touched fragment gets one new
//!   deletion file with all its deleted offsets (`updated_fragments`); a
//!   fragment with no live row left is listed in `removed_fragment_ids`.
//! * With stable row ids a new fragment lists the moved rows' ids as its
//!   `RowIdSequence` (they keep their ids); the manifest gives them their
//!   original created-at versions and the new version as last-updated.
//! * `fields_for_preserving_frag_bitmap` = the ids of the updated columns
//!   (and of their children, for structs);
//!   `fields_modified` stays empty (rows moved, no column rewritten).
//! * An update matching no row still commits (an empty Update).
//!
//! Concurrent commits re-run it or merge its deletions (see
//! [`crate::table::conflict`], [`super::retry`]).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;

use crate::error::{Error, Result};
use crate::expr::SqlValue;
use crate::table::conflict::AffectedRows;
use crate::table::dataset::Dataset;
use crate::table::ops::retry::{run_with_retries, Prepared};
use crate::table::ops::rewrite::{prepare_update, MovedRows};
use crate::table::ops::{FragmentProgress, Progress};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::scan::{ScanOptions, Scanner, ROW_ADDR, ROW_ID};
use crate::table::write::{dataset_file_version, stage_fragments, StageTarget};

/// Rows per new data file / fragment (pylance's default write size).
pub const MAX_ROWS_PER_FILE: u64 = 1024 * 1024;

/// What to update.
#[derive(Clone, Default)]
pub struct UpdateParams {
    /// `(column, SQL value)` pairs; the value may read any column of the row.
    pub updates: Vec<(String, String)>,
    /// Only rows where this SQL predicate is true (all rows when `None`).
    pub predicate: Option<String>,
}

/// The planned updates against one version's schema.
struct Plan {
    /// (position of the column in the dataset schema, its new value).
    values: Vec<(usize, SqlValue)>,
    filter: Option<Arc<dyn crate::table::scan::RowFilter>>,
    field_ids: Vec<u32>,
}

fn plan(ds: &Dataset, p: &UpdateParams) -> Result<Plan> {
    if p.updates.is_empty() {
        return Err(Error::invalid_input("update needs at least one column to set"));
    }
    let schema = ds.schema();
    let mut values = Vec::with_capacity(p.updates.len());
    let mut field_ids = Vec::with_capacity(p.updates.len());
    for (column, sql) in &p.updates {
        let Ok(i) = schema.index_of(column) else {
            if column.contains('.') {
                return Err(Error::unsupported(format!("update cannot set the nested field {column:?}; set its top-level column")));
            }
            return Err(Error::invalid_input(format!(
                "update: no column {column:?} in the dataset (columns: {})",
                schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
            )));
        };
        if values.iter().any(|(j, _)| *j == i) {
            return Err(Error::invalid_input(format!("update sets column {column:?} twice")));
        }
        let value = SqlValue::with_type(sql, schema, schema.field(i).data_type(), &format!("update value of column {column:?}"))?;
        values.push((i, value));
        // The column's field id and those of its children, as pylance lists them.
        fn walk(f: &crate::file::schema::LanceField, out: &mut Vec<u32>) {
            out.push(f.id as u32);
            f.children.iter().for_each(|c| walk(c, out));
        }
        walk(&ds.lance_schema().fields[i], &mut field_ids);
    }
    let filter = p.predicate.as_deref().map(|w| crate::expr::parse_filter(w, schema)).transpose()?;
    Ok(Plan { values, filter, field_ids })
}

/// Replace the updated columns of `batch` (dataset columns only).
fn apply(batch: &RecordBatch, values: &[(usize, SqlValue)], schema: &SchemaRef) -> Result<RecordBatch> {
    let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
    // Every value sees the row as it was.
    for (i, v) in values {
        cols[*i] = v.evaluate(batch)?;
    }
    RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::invalid_input(format!("update: {e}")).with_source(e))
}

/// Update rows of `ds`. Returns the new version and the number of rows
/// updated (by the run that committed). Progress: stage `"update"`, as the
/// scan passes fragments.
pub fn update(ds: &Arc<Dataset>, params: &UpdateParams, props: &CommitProperties) -> Result<Committed<u64>> {
    // Bad input fails before anything is read (and again per re-run, as the
    // schema may have changed).
    plan(ds, params)?;
    run_with_retries(ds, props, |ds| run_once(ds, params, &props.progress))
}

fn run_once(ds: &Arc<Dataset>, params: &UpdateParams, report: &Option<Progress>) -> Result<Prepared<u64>> {
    let plan = plan(ds, params)?;
    let stable = ds.has_stable_row_ids();
    let opts = ScanOptions { columns: None, filter: plan.filter.clone(), with_row_address: true, with_row_id: stable, ..Default::default() };
    let scanner = Scanner::new(ds.clone(), opts)?;
    let n_cols = ds.schema().fields().len();
    let data_schema: SchemaRef =
        Arc::new(arrow_schema::Schema::new(scanner.schema().fields()[..n_cols].to_vec()).with_metadata(scanner.schema().metadata().clone()));
    let mut affected = AffectedRows::new();
    let mut moved_ids: Vec<u64> = Vec::new();
    let mut progress = FragmentProgress::new("update", ds, report)?;
    let mut rows = 0u64;
    let version = dataset_file_version(ds.manifest())?;
    let target = StageTarget {
        root: ds.root(),
        schema: ds.lance_schema(),
        version,
        max_rows_per_file: MAX_ROWS_PER_FILE,
        name_prefix: "",
        group_bytes: 0,
        place: None,
    };
    let batches = scanner.stream()?.map(|b| {
        let b = b?;
        let addrs =
            b.column_by_name(ROW_ADDR).ok_or_else(|| Error::Internal { what: "scan returned no _rowaddr".into() })?.as_primitive::<UInt64Type>();
        for &a in addrs.values().iter() {
            affected.entry(a >> 32).or_default().insert(a as u32);
        }
        if let (Some(first), Some(last)) = (addrs.values().first(), addrs.values().last()) {
            progress.at(first >> 32, report)?;
            progress.at(last >> 32, report)?;
        }
        if stable {
            let ids =
                b.column_by_name(ROW_ID).ok_or_else(|| Error::Internal { what: "scan returned no _rowid".into() })?.as_primitive::<UInt64Type>();
            moved_ids.extend_from_slice(ids.values());
        }
        rows += b.num_rows() as u64;
        let data = b.project(&(0..n_cols).collect::<Vec<_>>()).map_err(Error::internal_arrow)?;
        apply(&data, &plan.values, &data_schema)
    });
    let new_fragments = stage_fragments(&target, batches)?;
    let moved = MovedRows { new_fragments, moved_ids, affected, preserved_fields: plan.field_ids };
    prepare_update(ds, moved, || progress.finish(report), rows)
}
