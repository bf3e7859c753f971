//! `add_columns` in its four forms: SQL expressions, a function of batches
//! (a Python UDF), a stream of values in scan order, and all-null columns
//! given by schema only.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::{Field, Schema, SchemaRef};

use super::columns::{commit_merge, remove_files, write_columns, ColumnsPlan, SequentialFn, Transform, WriteOptions, DEFAULT_BATCH_SIZE};
use super::{max_field_id, merge_new_fields};
use crate::error::{Error, Result};
use crate::expr::SqlValue;
use crate::file::schema::LanceField;
use crate::table::dataset::Dataset;
use crate::table::properties::{CommitProperties, Committed};
use crate::table::scan::{ROW_ADDR, ROW_ID};
use crate::table::write::dataset_file_version;

/// Options every form shares.
#[derive(Clone, Default)]
pub struct AddOptions {
    /// Live rows per computation (default [`DEFAULT_BATCH_SIZE`]).
    pub batch_size: Option<usize>,
}

fn batch_size(b: Option<usize>) -> Result<usize> {
    match b {
        Some(0) => Err(Error::invalid_input("batch_size must be positive")),
        Some(n) => Ok(n),
        None => Ok(DEFAULT_BATCH_SIZE),
    }
}

/// Resolve columns a function reads (`None`: all of them); `_rowid` and
/// `_rowaddr` ask for row ids / addresses after the columns.
fn read_plan(ds: &Dataset, read_columns: Option<&[String]>) -> Result<(Vec<LanceField>, bool, bool)> {
    let Some(cols) = read_columns else { return Ok((ds.lance_schema().fields.clone(), false, false)) };
    let (mut ids, mut addrs) = (false, false);
    let mut names = Vec::new();
    for c in cols {
        let in_schema = ds.lance_schema().fields.iter().any(|f| f.arrow.name() == c);
        match c.as_str() {
            ROW_ID if !in_schema => ids = true,
            ROW_ADDR if !in_schema => addrs = true,
            _ => names.push(c.clone()),
        }
    }
    let mut seen = HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    Ok((ds.project(Some(&names))?, ids, addrs))
}

/// The plan of a function returning `output` from `read_columns`.
pub fn plan_function(ds: &Dataset, output: &Schema, read_columns: Option<&[String]>, batch: Option<usize>) -> Result<ColumnsPlan> {
    let (read_fields, with_row_id, with_row_address) = read_plan(ds, read_columns)?;
    let version = dataset_file_version(ds.manifest())?;
    let new = merge_new_fields(ds.lance_schema(), output, max_field_id(ds.manifest()), version)?;
    Ok(ColumnsPlan { new, output: Arc::new(output.clone()), read_fields, with_row_id, with_row_address, batch_size: batch_size(batch)? })
}

/// Add the columns `output` computed by `f` (called in scan order with the
/// live rows' `read_columns`, returning as many rows of `output`).
pub fn add_columns_with(
    ds: &Dataset,
    output: &Schema,
    read_columns: Option<&[String]>,
    f: SequentialFn<'_>,
    opts: &AddOptions,
    props: &CommitProperties,
) -> Result<Committed<()>> {
    let plan = plan_function(ds, output, read_columns, opts.batch_size)?;
    let files = write_columns(ds, &plan, Transform::Sequential(f), &WriteOptions::default(), &props.progress)?;
    Ok(Committed::new(commit_merge(ds, &plan.new, files, props)?, ()))
}

/// Add all-null columns: a `Merge` changing only the schema (every field
/// must be nullable; readers give fields no file holds as nulls).
pub fn add_null_columns(ds: &Dataset, schema: &Schema, props: &CommitProperties) -> Result<Committed<()>> {
    if let Some(f) = schema.fields().iter().find(|f| !f.is_nullable()) {
        return Err(Error::invalid_input(format!("all-null column {:?} must be nullable", f.name())));
    }
    let version = dataset_file_version(ds.manifest())?;
    let new = merge_new_fields(ds.lance_schema(), schema, max_field_id(ds.manifest()), version)?;
    Ok(Committed::new(commit_merge(ds, &new, Vec::new(), props)?, ()))
}

/// Add columns defined by SQL expressions over the dataset's columns
/// (`(name, expression)` pairs, computed in parallel). Expressions that are
/// a typed NULL (`CAST(NULL AS int)`) alone make all-null columns without
/// data files, as pylance does.
pub fn add_columns_sql(ds: &Dataset, exprs: &[(String, String)], opts: &AddOptions, props: &CommitProperties) -> Result<Committed<()>> {
    let schema = ds.schema();
    let values = exprs
        .iter()
        .map(|(name, sql)| SqlValue::new(sql, schema).map_err(|e| e.context(format!("new column {name:?}"))))
        .collect::<Result<Vec<_>>>()?;
    let fields: Vec<Field> = exprs.iter().zip(&values).map(|((name, _), v)| Field::new(name, v.data_type().clone(), v.nullable())).collect();
    let output = Schema::new(fields);
    // No expressions, or only typed NULLs: metadata only (an empty dict
    // still commits a version, as in pylance).
    if values.iter().all(|v| v.is_typed_null()) {
        return add_null_columns(ds, &output, props);
    }
    let mut read: Vec<String> = Vec::new();
    for v in &values {
        for c in v.columns() {
            if !read.contains(&c) {
                read.push(c);
            }
        }
    }
    let mut plan = plan_function(ds, &output, Some(&read), opts.batch_size)?;
    plan.output = Arc::new(output);
    let out_schema = plan.output.clone();
    let f = |input: RecordBatch| -> Result<RecordBatch> {
        let n = input.num_rows();
        let cols = values.iter().map(|v| v.evaluate(&input)).collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new_with_options(out_schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(n))).map_err(Error::internal_arrow)
    };
    let files = write_columns(ds, &plan, Transform::Parallel(&f), &WriteOptions::default(), &props.progress)?;
    Ok(Committed::new(commit_merge(ds, &plan.new, files, props)?, ()))
}

/// Pulls exactly the rows asked for from a stream of batches.
struct Taker<I> {
    it: I,
    pending: Option<RecordBatch>,
    schema: SchemaRef,
    taken: u64,
    total: u64,
}

impl<I: Iterator<Item = Result<RecordBatch>>> Taker<I> {
    fn take(&mut self, n: usize) -> Result<RecordBatch> {
        let mut parts = Vec::new();
        let mut need = n;
        while need > 0 {
            let b = match self.pending.take() {
                Some(b) => b,
                None => match self.it.next() {
                    Some(b) => b?,
                    None => {
                        return Err(Error::invalid_input(format!(
                            "the new column values ended after {} rows, but the dataset has {} rows",
                            self.taken + (n - need) as u64,
                            self.total
                        )))
                    }
                },
            };
            if b.num_rows() > need {
                parts.push(b.slice(0, need));
                self.pending = Some(b.slice(need, b.num_rows() - need));
                need = 0;
            } else {
                need -= b.num_rows();
                parts.push(b);
            }
        }
        self.taken += n as u64;
        arrow_select::concat::concat_batches(&self.schema, &parts).map_err(Error::internal_arrow)
    }

    /// True when the stream has no rows left.
    fn exhausted(&mut self) -> Result<bool> {
        if self.pending.as_ref().is_some_and(|b| b.num_rows() > 0) {
            return Ok(false);
        }
        for b in self.it.by_ref() {
            if b?.num_rows() > 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Add columns whose values come from `batches` (schema `schema`): one row
/// per live row of the dataset, in scan order (fragments in order, rows
/// ascending). Too few or too many rows are refused.
pub fn add_columns_from_stream(
    ds: &Dataset,
    schema: SchemaRef,
    batches: impl Iterator<Item = Result<RecordBatch>> + Send,
    opts: &AddOptions,
    props: &CommitProperties,
) -> Result<Committed<()>> {
    let plan = plan_function(ds, &schema, Some(&[]), opts.batch_size)?;
    let total: u64 = (0..ds.fragments().len()).map(|i| ds.live_rows(i)).sum::<Result<u64>>()?;
    let mut taker = Taker { it: batches, pending: None, schema: schema.clone(), taken: 0, total };
    let mut f = |input: RecordBatch| taker.take(input.num_rows());
    let files = write_columns(ds, &plan, Transform::Sequential(&mut f), &WriteOptions::default(), &props.progress)?;
    match taker.exhausted() {
        Ok(true) => {}
        Ok(false) => {
            remove_files(ds.root(), &files);
            return Err(Error::invalid_input(format!("the new column values have more rows than the dataset's {total} rows")));
        }
        Err(e) => {
            remove_files(ds.root(), &files);
            return Err(e);
        }
    }
    Ok(Committed::new(commit_merge(ds, &plan.new, files, props)?, ()))
}
