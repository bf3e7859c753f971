//! Datasets and scans as the connector uses them, without JNI types (so
//! they are tested in Rust): opening (cached per pinned version), planning
//! read partitions, counting, and a scan of one partition that yields
//! batches in Spark's layouts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, Int32Array, RecordBatch};
use arrow_schema::{DataType, Schema};
use lancelet::io::StorageOptions;
use lancelet::table::scan::ScanStream;
use lancelet::table::{Dataset, ScanOptions, Scanner, VersionRef};
use lancelet::{Error, Result};

use crate::export::Exported;
use crate::spark_types::{spark_type, to_spark};

/// Versions opened in this JVM, by (uri, version, storage options): the
/// tasks of one query read the version planned on the driver, so each
/// executor parses its manifest once.
static OPENED: Mutex<Option<HashMap<(String, u64, Vec<(String, String)>), Arc<Dataset>>>> = Mutex::new(None);

/// Open `uri` at `version` (latest when `None`); a version given by number
/// is cached.
pub fn open(uri: &str, version: Option<VersionRef>, options: &StorageOptions) -> Result<Arc<Dataset>> {
    let Some(VersionRef::Number(n)) = version else {
        return Ok(Arc::new(Dataset::open_with(uri, version, options)?));
    };
    let mut opts: Vec<(String, String)> = options.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    opts.sort();
    let key = (uri.to_string(), n, opts);
    if let Some(ds) = OPENED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashMap::new).get(&key) {
        return Ok(ds.clone());
    }
    let ds = Arc::new(Dataset::open_with(uri, Some(VersionRef::Number(n)), options)?);
    let mut cache = OPENED.lock().unwrap_or_else(|p| p.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if cache.len() >= 64 {
        cache.clear();
    }
    cache.insert(key, ds.clone());
    Ok(ds)
}

/// One read task: physical rows `start..end` of fragment `fragment`, the
/// rows of it that survive deletions (exact when `exact`, else `end - start`)
/// and its share of the fragment's data file bytes (for Spark's statistics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub fragment: u64,
    pub start: u64,
    pub end: u64,
    pub rows: u64,
    pub bytes: u64,
}

/// Fragments cut into slices of at most `rows_per_partition` physical rows,
/// as the Python source plans them. With `exact`, each slice also gets its
/// live row count (reads deletion files; used to plan a pushed limit).
pub fn plan(ds: &Dataset, rows_per_partition: u64, exact: bool) -> Result<Vec<Slice>> {
    if rows_per_partition == 0 {
        return Err(Error::invalid_input("rows_per_partition must be positive"));
    }
    let mut out = Vec::new();
    for (i, f) in ds.fragments().iter().enumerate() {
        let n = ds.physical_rows(i)?;
        let live = if exact && f.deletion_file.is_some() { Some(ds.live_ranges(i)?) } else { None };
        let file_bytes: u64 = f.files.iter().map(|d| d.file_size_bytes).sum();
        let mut start = 0;
        loop {
            let end = (start + rows_per_partition).min(n);
            let rows = match &live {
                Some(ranges) => ranges.iter().map(|r| r.end.min(end).saturating_sub(r.start.max(start))).sum(),
                None => end - start,
            };
            let bytes = if n == 0 { 0 } else { (file_bytes as u128 * (end - start) as u128 / n as u128) as u64 };
            out.push(Slice { fragment: f.id, start, end, rows, bytes });
            start = end;
            if start >= n {
                break;
            }
        }
    }
    Ok(out)
}

/// Rows matching `filter` (all rows when `None`; then from metadata).
pub fn count_rows(ds: &Arc<Dataset>, filter: Option<&str>) -> Result<u64> {
    let mut opts = ScanOptions { columns: Some(Vec::new()), ..Default::default() };
    if let Some(f) = filter {
        opts.filter = Some(lancelet::expr::parse_filter(f, ds.schema())?);
    }
    Scanner::new(ds.clone(), opts)?.count_rows()
}

/// What one partition reads.
#[derive(Debug, Clone, Default)]
pub struct ScanRequest {
    /// Data columns, in output order (may be empty: rows only).
    pub columns: Vec<String>,
    /// lancelet SQL filter.
    pub filter: Option<String>,
    pub fragment: u64,
    pub start: u64,
    pub end: u64,
    pub batch_size: Option<usize>,
    pub limit: Option<u64>,
    /// Append `_rowid`, `_rowaddr` (as Spark longs) and `_fragid` (int).
    pub row_id: bool,
    pub row_addr: bool,
    pub frag_id: bool,
}

/// A running scan of one partition; holds the batch last handed out.
pub struct PartitionScan {
    stream: ScanStream,
    targets: Vec<DataType>,
    fragment: i32,
    frag_id: bool,
    current: Option<Exported>,
}

impl std::fmt::Debug for PartitionScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionScan").field("targets", &self.targets).finish()
    }
}

impl PartitionScan {
    /// Plan and start the scan.
    pub fn new(ds: &Arc<Dataset>, req: &ScanRequest) -> Result<Self> {
        let mut opts = ScanOptions {
            columns: Some(req.columns.clone()),
            limit: req.limit,
            with_row_id: req.row_id,
            with_row_address: req.row_addr,
            batch_size: req.batch_size,
            fragments: Some(vec![req.fragment]),
            row_range: Some(req.start..req.end),
            ..Default::default()
        };
        if let Some(f) = &req.filter {
            opts.filter = Some(lancelet::expr::parse_filter(f, ds.schema())?);
        }
        let scanner = Scanner::new(ds.clone(), opts)?;
        let schema: &Schema = scanner.schema();
        let mut targets = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            // _rowid / _rowaddr are u64 with a long's layout: Spark longs.
            targets.push(if i >= req.columns.len() { DataType::UInt64 } else { spark_type(f.data_type(), f.name())? });
        }
        let fragment =
            i32::try_from(req.fragment).map_err(|_| Error::unsupported(format!("fragment id {} does not fit _fragid (int)", req.fragment)))?;
        Ok(PartitionScan { stream: scanner.stream()?, targets, fragment, frag_id: req.frag_id, current: None })
    }

    /// The next non-empty batch, described for the JVM (see
    /// [`Exported::to_longs`]); `None` at the end. The batch handed out
    /// before is released.
    pub fn next_batch(&mut self) -> Result<Option<&Exported>> {
        self.current = None;
        loop {
            let Some(batch) = self.stream.next() else { return Ok(None) };
            let batch: RecordBatch = batch?;
            if batch.num_rows() == 0 {
                continue;
            }
            let mut cols = batch.columns().iter().zip(&self.targets).map(|(c, t)| to_spark(c, t)).collect::<Result<Vec<ArrayRef>>>()?;
            if self.frag_id {
                cols.push(Arc::new(Int32Array::from(vec![self.fragment; batch.num_rows()])));
            }
            self.current = Some(Exported::new(cols, batch.num_rows())?);
            return Ok(self.current.as_ref());
        }
    }
}

/// `schema` as an Arrow IPC stream holding only the schema message.
pub fn schema_ipc(schema: &Schema) -> Result<Vec<u8>> {
    let mut w = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), schema).map_err(Error::internal_arrow)?;
    w.finish().map_err(Error::internal_arrow)?;
    w.into_inner().map_err(Error::internal_arrow)
}

/// The filter-relevant kind of every column path (struct fields included):
/// lines of `kind`, then the path's names, separated by `\u{1}`. Kinds:
/// `int8`..`int64`, `bool`, `string`, `date32`, or `other`.
pub fn column_kinds(schema: &Schema) -> String {
    fn walk(out: &mut String, prefix: &mut Vec<String>, fields: &arrow_schema::Fields) {
        for f in fields {
            prefix.push(f.name().clone());
            let kind = match f.data_type() {
                DataType::Int8 => "int8",
                DataType::Int16 => "int16",
                DataType::Int32 => "int32",
                DataType::Int64 => "int64",
                DataType::Boolean => "bool",
                DataType::Utf8 | DataType::LargeUtf8 => "string",
                DataType::Date32 => "date32",
                _ => "other",
            };
            out.push_str(kind);
            for p in prefix.iter() {
                out.push('\u{1}');
                out.push_str(p);
            }
            out.push('\n');
            if let DataType::Struct(children) = f.data_type() {
                walk(out, prefix, children);
            }
            prefix.pop();
        }
    }
    let mut out = String::new();
    walk(&mut out, &mut Vec::new(), schema.fields());
    out
}
