//! Writing new columns into every fragment: the engine behind
//! `add_columns`, `merge` and casts.
//!
//! For each fragment, its live rows are read in batches of `batch_size`
//! (only the columns the transform needs, plus `_rowid`/`_rowaddr` when
//! asked for), the transform turns each batch into the same number of rows
//! of new columns, and those rows are streamed into one new data file of
//! the fragment's `physical_rows` rows. Deleted positions get a copy of the
//! next live row's values (the last one's after the last live row), so the
//! file is valid for non-nullable columns and no reader ever sees them.
//!
//! Transforms that may run anywhere (SQL expressions, casts, joins) process
//! fragments in parallel; a Python UDF or a stream of values runs in scan
//! order, one batch at a time. Nothing is visible until the `Merge` commit;
//! on any failure the files already written are removed.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;

use super::{preserves_nullability, NewFields};
use crate::error::{Error, Result};
use crate::file::schema::LanceField;
use crate::file::{FileVersion, FileWriter};
use crate::io::Storage;
use crate::proto::table as pb;
use crate::table::commit::commit;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::fragment::TOMBSTONE;
use crate::table::hooks::step;
use crate::table::ops::{report, Progress};
use crate::table::properties::CommitProperties;
use crate::table::scan::split as chunks;
use crate::table::scan::{ROW_ADDR, ROW_ID};
use crate::table::transaction::{new_data_file_name, new_transaction};
use crate::table::write::{column_field_ids, dataset_file_version};

use pb::transaction::Operation;

/// The progress stage of writing new columns.
const STAGE: &str = "add_columns";

/// Default rows per transform call.
pub const DEFAULT_BATCH_SIZE: usize = 8192;

/// A function from a batch of read rows to the same number of rows of the
/// new columns.
pub type ParallelFn<'a> = &'a (dyn Fn(RecordBatch) -> Result<RecordBatch> + Sync);
/// The same, called in scan order.
pub type SequentialFn<'a> = &'a mut (dyn FnMut(RecordBatch) -> Result<RecordBatch> + Send);

/// How the new values are computed.
pub enum Transform<'a> {
    /// Any thread, any order: fragments are processed in parallel.
    Parallel(ParallelFn<'a>),
    /// Strictly in scan order (fragments in manifest order, live rows
    /// ascending), one batch at a time.
    Sequential(SequentialFn<'a>),
}

/// What an `add_columns`-like operation reads and writes.
#[derive(Debug, Clone)]
pub struct ColumnsPlan {
    /// The schema change and the new files' schema.
    pub new: NewFields,
    /// What the transform returns: one column per top-level field of
    /// `new.written`, in that order (names, types; nullability of the
    /// dataset decides).
    pub output: SchemaRef,
    /// Dataset columns the transform reads (in this order).
    pub read_fields: Vec<LanceField>,
    /// Append `_rowid` to the transform's input.
    pub with_row_id: bool,
    /// Append `_rowaddr` to the transform's input.
    pub with_row_address: bool,
    /// Live rows per transform call.
    pub batch_size: usize,
}

impl ColumnsPlan {
    /// The Arrow schema of the transform's input batches.
    pub fn input_schema(&self, ds: &Dataset) -> SchemaRef {
        let mut fields: Vec<Field> = self.read_fields.iter().map(|f| f.arrow.clone()).collect();
        if self.with_row_id {
            fields.push(Field::new(ROW_ID, DataType::UInt64, true));
        }
        if self.with_row_address {
            fields.push(Field::new(ROW_ADDR, DataType::UInt64, true));
        }
        Arc::new(Schema::new(fields).with_metadata(ds.lance_schema().metadata.clone()))
    }
}

/// Where and how the new data files are written.
#[derive(Clone, Default)]
pub struct WriteOptions {
    /// Put in front of every new data file name (distributed jobs).
    pub name_prefix: String,
}

/// `array` without any null bitmap, recursively (zeroed values): the
/// filler of a non-nullable column in a fragment with no live row.
fn strip_nulls(data: arrow_data::ArrayData) -> Result<arrow_data::ArrayData> {
    let children = data.child_data().iter().cloned().map(strip_nulls).collect::<Result<Vec<_>>>()?;
    data.into_builder().nulls(None).child_data(children).build().map_err(Error::internal_arrow)
}

/// `n` rows of filler for a fragment without live rows.
fn filler(schema: &SchemaRef, n: usize) -> Result<RecordBatch> {
    let cols = schema
        .fields()
        .iter()
        .map(|f| {
            let a = new_null_array(f.data_type(), n);
            if f.is_nullable() {
                Ok(a)
            } else {
                Ok(arrow_array::make_array(strip_nulls(a.to_data())?))
            }
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    RecordBatch::try_new_with_options(schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(n))).map_err(Error::internal_arrow)
}

/// Check a transform result against the plan and give it the file schema.
fn conform(out: &RecordBatch, plan: &ColumnsPlan, file_schema: &SchemaRef, rows: usize, fragment: u64) -> Result<RecordBatch> {
    if out.num_rows() != rows {
        return Err(Error::invalid_input(format!(
            "the new column values have {} rows for a batch of {rows} rows (fragment {fragment}); each call must return one row per input row",
            out.num_rows()
        )));
    }
    let want = plan.output.fields();
    let got = out.schema();
    if got.fields().len() != want.len() {
        return Err(Error::invalid_input(format!(
            "expected the new columns [{}], got [{}]",
            want.iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", "),
            got.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    let mut cols = Vec::with_capacity(want.len());
    for ((w, g), f) in want.iter().zip(got.fields()).zip(file_schema.fields()) {
        if w.name() != g.name() || !g.data_type().equals_datatype(w.data_type()) {
            return Err(Error::invalid_input(format!(
                "new column {:?} of type {} expected, got {:?} of type {}",
                w.name(),
                w.data_type(),
                g.name(),
                g.data_type()
            )));
        }
        let col = out.column_by_name(g.name()).expect("present").clone();
        if !f.is_nullable() && col.null_count() > 0 {
            return Err(Error::invalid_input(format!("column {:?} is not nullable but its new values contain nulls", f.name())));
        }
        // Same layout; take the file's names and nullability for nested fields.
        let col = if col.data_type() == f.data_type() {
            col
        } else {
            arrow_array::make_array(col.to_data().into_builder().data_type(f.data_type().clone()).build().map_err(Error::invalid_arrow)?)
        };
        cols.push(col);
    }
    RecordBatch::try_new_with_options(file_schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(rows))).map_err(Error::invalid_arrow)
}

/// Streams one fragment's new column values into its new data file.
struct FragmentColumns {
    writer: Option<FileWriter>,
    storage: Storage,
    name: String,
    physical_rows: u64,
    /// Physical rows written so far.
    written: u64,
    /// The last row written (filler for trailing deleted rows).
    last: Option<RecordBatch>,
    file_schema: SchemaRef,
}

impl FragmentColumns {
    /// Write the values of live rows at physical `offsets` (ascending, all
    /// at or after the rows written so far); deleted rows before each live
    /// row take its values.
    fn push(&mut self, values: &RecordBatch, offsets: &[u64]) -> Result<()> {
        let Some(&last) = offsets.last() else { return Ok(()) };
        let mut idx = Vec::with_capacity((last + 1 - self.written) as usize);
        let mut j = 0usize;
        for p in self.written..=last {
            while offsets[j] < p {
                j += 1;
            }
            idx.push(j as u32);
        }
        let batch =
            if idx.len() == values.num_rows() { values.clone() } else { crate::table::fragment::take_batch(values, &UInt32Array::from(idx))? };
        self.writer.as_mut().expect("open").write(&batch)?;
        self.written = last + 1;
        self.last = Some(values.slice(values.num_rows() - 1, 1));
        Ok(())
    }

    /// Fill the rows after the last live one and finish the file.
    fn finish(mut self, version: FileVersion, schema: &crate::file::schema::LanceSchema) -> Result<pb::DataFile> {
        let rest = self.physical_rows - self.written;
        if rest > 0 {
            let fill = match &self.last {
                Some(one) => crate::table::fragment::take_batch(one, &UInt32Array::from(vec![0u32; rest as usize]))?,
                None => filler(&self.file_schema, rest as usize)?,
            };
            self.writer.as_mut().expect("open").write(&fill)?;
        }
        let size = self.writer.take().expect("open").finish()?;
        let ids = column_field_ids(schema, version);
        let (major, minor) = version.data_file_numbers();
        Ok(pb::DataFile {
            path: self.name.clone(),
            column_indices: (0..ids.len() as i32).collect(),
            fields: ids,
            file_major_version: major,
            file_minor_version: minor,
            file_size_bytes: size,
            base_id: None,
        })
    }
}

/// The input batch of the transform for live rows `ranges` of fragment `i`.
fn read_input(
    ds: &Dataset,
    i: usize,
    plan: &ColumnsPlan,
    reader: Option<&crate::table::fragment::FragmentReader>,
    row_ids: Option<&crate::table::rowids::RowIdSequence>,
    ranges: &[Range<u64>],
    input_schema: &SchemaRef,
) -> Result<RecordBatch> {
    let n: u64 = ranges.iter().map(|r| r.end - r.start).sum();
    let mut cols: Vec<ArrayRef> = match reader {
        Some(r) => r.read_ranges(ranges)?.columns().to_vec(),
        None => Vec::new(),
    };
    let fid = ds.fragments()[i].id;
    let addrs = || -> ArrayRef { Arc::new(ranges.iter().flat_map(|r| r.clone()).map(|o| (fid << 32) | o).collect::<UInt64Array>()) };
    if plan.with_row_id {
        cols.push(match row_ids {
            Some(seq) => Arc::new(UInt64Array::from(seq.select(ranges))),
            None => addrs(),
        });
    }
    if plan.with_row_address {
        cols.push(addrs());
    }
    RecordBatch::try_new_with_options(input_schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(n as usize)))
        .map_err(Error::internal_arrow)
}

/// Compute and write the new columns of fragment `i`; returns its new
/// data file. `f` is called once per batch of live rows.
pub(crate) fn write_one(
    ds: &Dataset,
    i: usize,
    plan: &ColumnsPlan,
    opts: &WriteOptions,
    f: &mut dyn FnMut(RecordBatch) -> Result<RecordBatch>,
) -> Result<pb::DataFile> {
    let version = dataset_file_version(ds.manifest())?;
    let frag = &ds.fragments()[i];
    let physical_rows = ds.physical_rows(i)?;
    let live = ds.live_ranges(i)?;
    let reader = if plan.read_fields.is_empty() { None } else { Some(ds.fragment_reader(i, &plan.read_fields)?) };
    let row_ids = if plan.with_row_id { ds.row_id_sequence(i)? } else { None };
    let input_schema = plan.input_schema(ds);
    let file_schema: SchemaRef = Arc::new(plan.new.written.to_arrow());
    let name = format!("{}{}", opts.name_prefix, new_data_file_name());
    let storage = ds.root().child(&format!("data/{name}"))?;
    let writer = FileWriter::create_with_lance_schema(storage.clone(), plan.new.written.clone(), version)?;
    let mut out = FragmentColumns { writer: Some(writer), storage, name, physical_rows, written: 0, last: None, file_schema: file_schema.clone() };
    for ranges in chunks(&live, plan.batch_size.max(1) as u64) {
        let input = read_input(ds, i, plan, reader.as_ref(), row_ids.as_ref(), &ranges, &input_schema)?;
        let rows = input.num_rows();
        let values = f(input)?;
        let values = conform(&values, plan, &file_schema, rows, frag.id)?;
        let offsets: Vec<u64> = ranges.iter().flat_map(|r| r.clone()).collect();
        out.push(&values, &offsets)?;
    }
    step(ds.root(), "data_file")?;
    let storage = out.storage.clone();
    out.finish(version, &plan.new.written).inspect_err(|_e| {
        let _ = storage.delete();
    })
}

/// Batches of one schema as one batch.
pub fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    match batches {
        [one] => Ok(one.clone()),
        _ => arrow_select::concat::concat_batches(schema, batches).map_err(Error::internal_arrow),
    }
}

/// Remove data files written for an operation that failed.
pub(crate) fn remove_files(root: &Storage, files: &[pb::DataFile]) {
    for d in files {
        if let Ok(s) = root.child(&format!("data/{}", d.path)) {
            let _ = s.delete();
        }
    }
}

/// Compute the new columns of every fragment of `ds` and write their data
/// files (not committed). Returns one data file per fragment, in manifest
/// order; on failure every file written is removed. `progress` hears
/// `("add_columns", fragments done, total)`; an error it returns stops the
/// operation like any other failure.
pub fn write_columns(
    ds: &Dataset,
    plan: &ColumnsPlan,
    transform: Transform<'_>,
    opts: &WriteOptions,
    progress: &Option<Progress>,
) -> Result<Vec<pb::DataFile>> {
    let n = ds.fragments().len();
    report(progress, STAGE, 0, n as u64)?;
    let done = std::sync::atomic::AtomicU64::new(0);
    let tick = || -> Result<()> {
        let d = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        report(progress, STAGE, d, n as u64)
    };
    let results: Vec<Result<pb::DataFile>> = match transform {
        Transform::Parallel(f) => crate::process::install(|| {
            (0..n)
                .into_par_iter()
                .map(|i| {
                    let d = write_one(ds, i, plan, opts, &mut |b| f(b))?;
                    if let Err(e) = tick() {
                        remove_files(ds.root(), std::slice::from_ref(&d));
                        return Err(e);
                    }
                    Ok(d)
                })
                .collect()
        }),
        Transform::Sequential(f) => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let r = write_one(ds, i, plan, opts, &mut |b| f(b)).and_then(|d| match tick() {
                    Ok(()) => Ok(d),
                    Err(e) => {
                        remove_files(ds.root(), std::slice::from_ref(&d));
                        Err(e)
                    }
                });
                let failed = r.is_err();
                out.push(r);
                if failed {
                    break;
                }
            }
            out
        }
    };
    let mut files = Vec::with_capacity(n);
    let mut first_err = None;
    for r in results {
        match r {
            Ok(d) => files.push(d),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        remove_files(ds.root(), &files);
        return Err(e);
    }
    Ok(files)
}

/// Fragment `f` with `file` added: ids the new file holds become
/// tombstones in the fragment's older files.
pub fn with_new_file(f: &pb::DataFragment, file: pb::DataFile) -> pb::DataFragment {
    let mut f = f.clone();
    for d in &mut f.files {
        for id in &mut d.fields {
            if file.fields.contains(id) {
                *id = TOMBSTONE;
            }
        }
    }
    f.files.push(file);
    f
}

/// Commit a `Merge` of `ds`'s fragments, each gaining the matching file of
/// `files` (none for metadata-only changes), under the schema `new.merged`.
/// Returns the new version; new files are removed if the commit is refused.
pub fn commit_merge(ds: &Dataset, new: &NewFields, files: Vec<pb::DataFile>, props: &CommitProperties) -> Result<Dataset> {
    let fragments: Vec<pb::DataFragment> = if files.is_empty() {
        ds.fragments().to_vec()
    } else {
        if files.len() != ds.fragments().len() {
            return Err(Error::Internal { what: format!("{} new files for {} fragments", files.len(), ds.fragments().len()) });
        }
        ds.fragments().iter().zip(files.iter().cloned()).map(|(f, d)| with_new_file(f, d)).collect()
    };
    let op = pb::transaction::Merge {
        fragments,
        schema: new.merged.to_pb()?,
        schema_metadata: new.merged.metadata_pb(),
        preserves_nullability: preserves_nullability(ds.lance_schema(), &new.merged),
    };
    commit_or_clean(ds, Operation::Merge(op), &files, props)
}

/// Commit an operation made at `ds`'s version. When the commit fails the
/// `files` it wrote are removed, unless the outcome is unknown: after an
/// I/O error the versions written since are checked for our transaction
/// (found: it did land, and that version is returned).
pub(crate) fn commit_or_clean(ds: &Dataset, op: Operation, files: &[pb::DataFile], props: &CommitProperties) -> Result<Dataset> {
    let txn = new_transaction(ds.version(), op);
    match commit(ds.root(), &txn, &props.commit_options()) {
        Ok(v) => ds.checkout(VersionRef::Number(v)),
        Err(e) => {
            match landed(ds, &txn) {
                Ok(Some(v)) => return ds.checkout(VersionRef::Number(v)),
                Ok(None) => remove_files(ds.root(), files),
                Err(_) => {} // unknown: leave the files (unreferenced files are harmless)
            }
            Err(e)
        }
    }
}

/// The version (after the transaction's read version) whose manifest
/// names `txn`'s transaction file, if any.
fn landed(ds: &Dataset, txn: &pb::Transaction) -> Result<Option<u64>> {
    let name = crate::table::transaction::transaction_file_name(txn);
    for loc in crate::table::manifest::list_versions(ds.root())?.into_iter().filter(|l| l.version > txn.read_version) {
        if crate::table::manifest::read_manifest(ds.root(), &loc.name)?.manifest.transaction_file == name {
            return Ok(Some(loc.version));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunking() {
        assert_eq!(chunks(&[0..3, 5..10], 4), vec![vec![0..3, 5..6], vec![6..10]]);
        assert_eq!(chunks(&[], 4), Vec::<Vec<Range<u64>>>::new());
    }
}
