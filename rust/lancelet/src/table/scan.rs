//! Scanning a dataset version: projection, deletion masks, offset/limit,
//! `_rowid`/`_rowaddr`, and point lookups (`take`).
//!
//! A scan is planned per fragment: the deletion file (if any) becomes the
//! sorted ranges of surviving physical rows, offset/limit cut those ranges
//! (counted in surviving rows, fragments in manifest order), and the
//! result is split into *read units*: about [`READ_UNIT_BYTES`] of file data
//! (estimated from the data files' sizes), a whole multiple of `batch_size`
//! rows. The file reader decodes whole pages, so one read per unit costs far
//! less than one read per batch. Units run on the rayon pool a few at a time
//! ahead of the consumer ([`ScanStream`]), so fragments are read in parallel
//! while memory stays bounded by `readahead` units; each unit is handed out
//! as zero-copy slices of `batch_size` rows, in order.
//!
//! Each output batch: the projected dataset columns (missing ones as
//! nulls), then `_rowid` and `_rowaddr` (UInt64) when asked for. A row's
//! address is `fragment_id << 32 | physical offset`; its id is the address,
//! or with stable row ids the fragment's RowIdSequence value at that offset.
//!
//! Filtering slots in as a [`RowFilter`]: it names the columns it needs.
//! A filtered unit first reads those and evaluates the filter, then reads
//! the other output columns for the passing rows only (late
//! materialization, see [`crate::table::select`]). With a filter,
//! offset/limit apply to the filtered stream instead of the plan.
//! A filter may name `_rowid` and `_rowaddr` (as pylance's may) whether or
//! not the output has them: they are computed for the rows read and handed
//! to the filter after the file columns.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::file::pieces::ColumnPieces;
use crate::file::schema::LanceField;
use crate::file::stats::intersect;
use crate::table::dataset::Dataset;
use crate::table::fragment::FragmentReader;
use crate::table::indexed::IndexSelection;
use crate::table::rowids::RowIdSequence;
use crate::table::select::{select, SelectInput};

pub use crate::expr::filter::RowFilter;
pub use crate::system_columns::{ROW_ADDR, ROW_ID};
/// Default rows per batch.
pub const DEFAULT_BATCH_SIZE: usize = 8192;
/// Target size of one read unit, in bytes of the data files.
pub const READ_UNIT_BYTES: u64 = 32 << 20;

/// What to scan.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Top-level columns (all when `None`), in output order.
    pub columns: Option<Vec<String>>,
    /// Keep only rows for which this is true.
    pub filter: Option<Arc<dyn RowFilter>>,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// Skip this many rows first.
    pub offset: u64,
    /// Append `_rowid`.
    pub with_row_id: bool,
    /// Append `_rowaddr`.
    pub with_row_address: bool,
    /// Rows per batch (default 8192).
    pub batch_size: Option<usize>,
    /// Only these fragment ids, in this order (all when `None`).
    pub fragments: Option<Vec<u64>>,
    /// Only physical rows in this range of each fragment (a task of a
    /// distributed scan reads one slice of a large fragment).
    pub row_range: Option<Range<u64>>,
    /// Do not answer the filter from scalar indices (pylance's
    /// `use_scalar_index=False`).
    pub disable_scalar_index: bool,
    /// What blob columns read as (bytes by default here; pylance's
    /// default, the descriptors, is chosen by the Python layer).
    pub blob_handling: crate::table::blobs::BlobHandling,
}

/// One fragment's part of the plan.
#[derive(Debug)]
struct FragPlan {
    index: usize,
    id: u64,
    live: Vec<Range<u64>>,
    /// Rows per read unit.
    unit_rows: u64,
    row_ids: Option<Arc<RowIdSequence>>,
    reader: Mutex<Option<Arc<FragmentReader>>>,
    /// Physical rows statistics prove to match the filter.
    sure: Vec<Range<u64>>,
}

/// A planned scan of one dataset version.
#[derive(Debug)]
pub struct Scanner {
    ds: Arc<Dataset>,
    opts: ScanOptions,
    /// Fields read from files: projection plus filter-only columns.
    read_fields: Vec<LanceField>,
    /// How many leading read fields are output columns.
    num_projected: usize,
    /// The filter reads `_rowid` / `_rowaddr`.
    filter_row_cols: (bool, bool),
    schema: SchemaRef,
    /// The scalar indices answering (part of) the filter.
    index: Option<Arc<dyn IndexSelection>>,
}

fn row_col_fields() -> (Field, Field) {
    (Field::new(ROW_ID, DataType::UInt64, true), Field::new(ROW_ADDR, DataType::UInt64, true))
}

/// Cut sorted ranges to rows `skip .. skip + take` (counted within them).
fn cut(ranges: &[Range<u64>], mut skip: u64, mut take: u64) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    for r in ranges {
        if take == 0 {
            break;
        }
        let n = r.end - r.start;
        if skip >= n {
            skip -= n;
            continue;
        }
        let s = r.start + skip;
        let e = s.saturating_add(take).min(r.end);
        take -= e - s;
        skip = 0;
        out.push(s..e);
    }
    out
}

/// Split sorted ranges into groups of at most `size` rows.
pub(crate) fn split(ranges: &[Range<u64>], size: u64) -> Vec<Vec<Range<u64>>> {
    let mut out = Vec::new();
    let mut cur: Vec<Range<u64>> = Vec::new();
    let mut n = 0;
    for r in ranges {
        let mut s = r.start;
        while s < r.end {
            let e = (s + (size - n)).min(r.end);
            cur.push(s..e);
            n += e - s;
            s = e;
            if n == size {
                out.push(std::mem::take(&mut cur));
                n = 0;
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn rows_in(ranges: &[Range<u64>]) -> u64 {
    ranges.iter().map(|r| r.end - r.start).sum()
}

impl Scanner {
    /// Plan a scan.
    pub fn new(ds: Arc<Dataset>, opts: ScanOptions) -> Result<Self> {
        if opts.batch_size == Some(0) {
            return Err(Error::invalid_input("batch_size must be positive"));
        }
        let mut read_fields = crate::table::blobs::read_fields(&ds.project(opts.columns.as_deref())?, opts.blob_handling);
        let num_projected = read_fields.len();
        let mut filter_row_cols = (false, false);
        if let Some(f) = &opts.filter {
            let in_schema = |n: &str| ds.schema().field_with_name(n).is_ok();
            for name in f.columns() {
                if name == ROW_ID && !in_schema(ROW_ID) {
                    filter_row_cols.0 = true;
                } else if name == ROW_ADDR && !in_schema(ROW_ADDR) {
                    filter_row_cols.1 = true;
                } else if !read_fields.iter().any(|x| x.arrow.name() == &name) {
                    read_fields.extend(crate::table::blobs::read_fields(&ds.project(Some(&[name]))?, opts.blob_handling));
                }
            }
        }
        let mut fields: Vec<Field> = read_fields[..num_projected].iter().map(|f| f.arrow.clone()).collect();
        let (rid, raddr) = row_col_fields();
        if opts.with_row_id {
            fields.push(rid);
        }
        if opts.with_row_address {
            fields.push(raddr);
        }
        let schema = Arc::new(Schema::new(fields).with_metadata(ds.lance_schema().metadata.clone()));
        let index = match &opts.filter {
            Some(f) if !opts.disable_scalar_index => crate::table::filter_index::index_selection(&ds, f.as_ref())?,
            _ => None,
        };
        Ok(Scanner { ds, opts, read_fields, num_projected, filter_row_cols, schema, index })
    }

    /// The output schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The scalar indices this scan's filter uses, if any.
    pub fn index_selection(&self) -> Option<&Arc<dyn IndexSelection>> {
        self.index.as_ref()
    }

    /// The dataset version scanned.
    pub fn dataset(&self) -> &Arc<Dataset> {
        &self.ds
    }

    /// The options planned.
    pub fn options(&self) -> &ScanOptions {
        &self.opts
    }

    fn fragment_indices(&self) -> Result<Vec<usize>> {
        match &self.opts.fragments {
            None => Ok((0..self.ds.fragments().len()).collect()),
            Some(ids) => ids
                .iter()
                .map(|id| {
                    self.ds
                        .fragment_index(*id)
                        .ok_or_else(|| Error::invalid_input(format!("no fragment {id} in version {} of {}", self.ds.version(), self.ds.uri())))
                })
                .collect(),
        }
    }

    /// Surviving physical rows of fragment `i` within `row_range`.
    fn live_ranges(&self, i: usize) -> Result<Vec<Range<u64>>> {
        let live = self.ds.live_ranges(i)?;
        Ok(match &self.opts.row_range {
            None => live,
            Some(r) => live
                .into_iter()
                .filter_map(|l| {
                    let (s, e) = (l.start.max(r.start), l.end.min(r.end));
                    (s < e).then_some(s..e)
                })
                .collect(),
        })
    }

    fn live_rows(&self, i: usize) -> Result<u64> {
        match self.opts.row_range {
            None => self.ds.live_rows(i),
            Some(_) => Ok(rows_in(&self.live_ranges(i)?)),
        }
    }

    /// Rows the scan returns.
    pub fn count_rows(&self) -> Result<u64> {
        if self.opts.filter.is_some() {
            let mut n = 0;
            for b in self.stream()? {
                n += b?.num_rows() as u64;
            }
            return Ok(n);
        }
        let idx = self.fragment_indices()?;
        let total: u64 = crate::process::install(|| idx.par_iter().map(|&i| self.live_rows(i)).collect::<Result<Vec<_>>>())?.into_iter().sum();
        let after = total.saturating_sub(self.opts.offset);
        Ok(self.opts.limit.map_or(after, |l| l.min(after)))
    }

    /// Start streaming the result.
    pub fn stream(&self) -> Result<ScanStream> {
        let indices = self.fragment_indices()?;
        let want_ids = (self.opts.with_row_id || self.filter_row_cols.0) && self.ds.has_stable_row_ids();
        let ds = &self.ds;
        let plan = |&i: &usize| -> Result<FragPlan> {
            let live = self.live_ranges(i)?;
            let row_ids = if want_ids { ds.row_id_sequence(i)?.map(Arc::new) } else { None };
            let f = &ds.fragments()[i];
            let rows = ds.physical_rows(i)?.max(1);
            let bytes: u64 = f.files.iter().map(|d| d.file_size_bytes).sum();
            let per_row = if bytes == 0 { 16 } else { bytes.div_ceil(rows) };
            let batch = self.opts.batch_size.unwrap_or(DEFAULT_BATCH_SIZE) as u64;
            // Units of about READ_UNIT_BYTES, balanced over the
            // fragment: a small remainder unit would decode the pages it
            // shares with its neighbour a second time (a 40 MB fragment
            // made units of 32 + 8 MB that decoded every page twice).
            let target = (READ_UNIT_BYTES / per_row).max(1);
            let units = ((rows as f64 / target as f64).round() as u64).max(1);
            let unit_rows = rows.div_ceil(units).max(batch).div_ceil(batch) * batch;
            // Indices answer for the fragments they cover: only rows
            // they allow are read, rows they prove are kept unfiltered.
            let (live, index_sure) = match self.index.as_ref().map(|x| x.select(ds, i)).transpose()?.flatten() {
                Some(p) => (intersect(&live, &p.maybe), p.sure),
                None => (live, Vec::new()),
            };
            let (live, sure, reader) = self.prune(i, live)?;
            let sure = if index_sure.is_empty() { sure } else { crate::file::stats::union(&sure, &index_sure) };
            Ok(FragPlan { index: i, id: f.id, live, unit_rows, row_ids, reader: Mutex::new(reader), sure })
        };
        // With an index the plans are cheap (its search runs once, for the
        // first fragment) and usually select few rows: planning on this
        // thread spares the switches to the pool and back.
        let mut plans = if self.index.is_some() {
            indices.iter().map(plan).collect::<Result<Vec<_>>>()?
        } else {
            crate::process::install(|| indices.par_iter().map(plan).collect::<Result<Vec<_>>>())?
        };
        let filtered = self.opts.filter.is_some();
        if !filtered {
            let mut skip = self.opts.offset;
            let mut take = self.opts.limit.unwrap_or(u64::MAX);
            for p in &mut plans {
                let n = rows_in(&p.live);
                let keep = cut(&p.live, skip, take);
                skip = skip.saturating_sub(n);
                take -= rows_in(&keep);
                p.live = keep;
            }
        }
        let batch = self.opts.batch_size.unwrap_or(DEFAULT_BATCH_SIZE) as u64;
        let plans: Vec<Arc<FragPlan>> = plans.into_iter().filter(|p| !p.live.is_empty()).map(Arc::new).collect();
        let mut tasks = VecDeque::new();
        for p in &plans {
            for ranges in split(&p.live, p.unit_rows) {
                tasks.push_back((p.clone(), ranges));
            }
        }
        let ctx = Arc::new(TaskContext {
            ds: self.ds.clone(),
            read_fields: self.read_fields.clone(),
            num_projected: self.num_projected,
            schema: self.schema.clone(),
            with_row_id: self.opts.with_row_id,
            with_row_address: self.opts.with_row_address,
            filter: self.opts.filter.clone(),
            filter_row_cols: self.filter_row_cols,
            filter_fields: match &self.opts.filter {
                Some(f) => {
                    let names = f.columns();
                    (0..self.read_fields.len()).filter(|&i| names.iter().any(|n| n == self.read_fields[i].arrow.name())).collect()
                }
                None => Vec::new(),
            },
            batch_size: batch as usize,
        });
        Ok(ScanStream {
            ctx,
            tasks,
            in_flight: VecDeque::new(),
            ready: VecDeque::new(),
            readahead: crate::process::pool().current_num_threads().clamp(2, 4),
            post: filtered.then_some((self.opts.offset, self.opts.limit.unwrap_or(u64::MAX))),
            failed: false,
        })
    }

    /// Drop the rows of fragment `i` that its files' statistics rule out
    /// for the filter, and find those they prove to match. Only legacy
    /// (v0.1) files carry statistics, so only fragments with such files are
    /// looked at; their reader, opened here, is kept for the scan.
    /// Unreadable statistics prove nothing.
    #[allow(clippy::type_complexity)]
    fn prune(&self, i: usize, live: Vec<Range<u64>>) -> Result<(Vec<Range<u64>>, Vec<Range<u64>>, Option<Arc<FragmentReader>>)> {
        let Some(filter) = &self.opts.filter else { return Ok((live, Vec::new(), None)) };
        if live.is_empty() || !self.ds.fragments()[i].files.iter().any(|d| d.file_major_version == 0) {
            return Ok((live, Vec::new(), None));
        }
        let reader = Arc::new(self.ds.fragment_reader(i, &self.read_fields)?);
        let rows = self.ds.physical_rows(i)?;
        let p = filter.prune(&|name| reader.column_stats(name).ok().flatten(), rows);
        Ok((intersect(&live, &p.maybe), p.sure, Some(reader)))
    }

    /// Read everything into batches.
    pub fn collect(&self) -> Result<Vec<RecordBatch>> {
        self.stream()?.collect()
    }
}

/// What every task of one scan shares.
#[derive(Debug)]
struct TaskContext {
    ds: Arc<Dataset>,
    read_fields: Vec<LanceField>,
    num_projected: usize,
    schema: SchemaRef,
    with_row_id: bool,
    with_row_address: bool,
    filter: Option<Arc<dyn RowFilter>>,
    filter_row_cols: (bool, bool),
    /// Positions in `read_fields` of the dataset columns the filter reads.
    filter_fields: Vec<usize>,
    batch_size: usize,
}

impl TaskContext {
    /// The fragment's reader of all read fields, opened on first use (or
    /// by statistics pruning) and shared by the fragment's units.
    fn reader(&self, p: &FragPlan) -> Result<Arc<FragmentReader>> {
        let mut slot = p.reader.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = slot.as_ref() {
            return Ok(r.clone());
        }
        let r = Arc::new(self.ds.fragment_reader(p.index, &self.read_fields)?);
        *slot = Some(r.clone());
        Ok(r)
    }

    /// Read one unit and cut it into batches.
    fn run(&self, p: &FragPlan, ranges: &[Range<u64>]) -> Result<Vec<RecordBatch>> {
        self.read_unit(p, ranges)?.batches(self.schema.clone(), self.batch_size)
    }

    /// A filtered unit runs in two stages (late materialization, see
    /// [`crate::table::select`]): the filter's columns are read and
    /// evaluated for all the unit's rows, then the other output columns are
    /// read for the passing rows only; output columns the filter read are
    /// cut from its decoded values. A unit where nothing passes reads no
    /// other column.
    fn read_unit(&self, p: &FragPlan, ranges: &[Range<u64>]) -> Result<ColumnPieces> {
        let Some(f) = &self.filter else { return self.read_rows(p, ranges) };
        // Rows the indices or statistics proved need no filter columns.
        if rows_in(&intersect(ranges, &p.sure)) == rows_in(ranges) {
            return self.read_rows(p, ranges);
        }
        let reader = self.reader(p)?;
        let (filter_ids, filter_addrs) = self.filter_row_cols;
        let (ids, addrs) = self.row_cols(p, ranges, filter_ids, filter_addrs);
        let (rid, raddr) = row_col_fields();
        let mut row_columns = Vec::new();
        if filter_ids {
            row_columns.push((rid, ids.expect("row ids computed")));
        }
        if filter_addrs {
            row_columns.push((raddr, addrs.expect("row addresses computed")));
        }
        let input = SelectInput { filter: f.as_ref(), reader: &reader, filter_fields: &self.filter_fields, row_columns, sure: &p.sure };
        let sel = select(input, ranges)?;
        let n = sel.num_rows() as usize;
        // Output columns the filter did not read, for the passing rows only.
        let payload: Vec<usize> = (0..self.num_projected).filter(|i| !self.filter_fields.contains(i)).collect();
        let read = if payload.is_empty() || n == 0 { None } else { Some(reader.read_columns(&payload, &sel.rows)?) };
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for i in 0..self.num_projected {
            let col = match (self.filter_fields.iter().position(|&x| x == i), &read) {
                (Some(k), _) => vec![sel.passing(k)?],
                (None, Some(read)) => read.column(payload.iter().position(|&x| x == i).expect("payload column")).to_vec(),
                (None, None) => vec![arrow_array::new_empty_array(self.schema.field(i).data_type())],
            };
            columns.push(col);
        }
        let (ids, addrs) = self.row_cols(p, &sel.rows, self.with_row_id, self.with_row_address);
        // (Addresses may be computed only to derive ids.)
        columns.extend(ids.into_iter().chain(addrs.filter(|_| self.with_row_address)).map(|a| vec![a]));
        ColumnPieces::new(columns, n)
    }

    /// `(_rowid, _rowaddr)` of the rows in `ranges`, as asked for.
    fn row_cols(&self, p: &FragPlan, ranges: &[Range<u64>], want_ids: bool, want_addrs: bool) -> (Option<ArrayRef>, Option<ArrayRef>) {
        let addrs: Option<ArrayRef> = (want_addrs || (p.row_ids.is_none() && want_ids))
            .then(|| Arc::new(ranges.iter().flat_map(|r| r.clone()).map(|o| (p.id << 32) | o).collect::<UInt64Array>()) as ArrayRef);
        let ids: Option<ArrayRef> = want_ids.then(|| match &p.row_ids {
            Some(seq) => Arc::new(UInt64Array::from(seq.select(ranges))) as ArrayRef,
            None => addrs.clone().expect("addresses computed"),
        });
        (ids, addrs)
    }

    /// The output columns of the rows in `ranges` (an unfiltered unit).
    fn read_rows(&self, p: &FragPlan, ranges: &[Range<u64>]) -> Result<ColumnPieces> {
        let n = rows_in(ranges) as usize;
        let cols = if self.num_projected == 0 {
            // Nothing to read (count_rows, row ids only).
            ColumnPieces::new(Vec::new(), n)?
        } else {
            // Only the output columns: the filter's own columns follow them
            // in `read_fields` and are not needed where every row is proven
            // (an exact index answer on a column not projected, such as
            // `array_has_any(tags, ..)`, would otherwise decode the lists).
            let output: Vec<usize> = (0..self.num_projected).collect();
            self.reader(p)?.read_columns(&output, ranges)?
        };
        let (ids, addrs) = self.row_cols(p, ranges, self.with_row_id, self.with_row_address);
        // (Addresses may be computed only to derive ids.)
        cols.truncate_and_extend(self.num_projected, ids.into_iter().chain(addrs.filter(|_| self.with_row_address)))
    }
}

/// Read units of at most this many rows run on the thread consuming the
/// stream when their turn comes (an indexed lookup's few rows decode in
/// microseconds; handing them to the pool would cost thread switches, each
/// of which may wait for a scheduler tick on a busy machine).
const INLINE_TASK_ROWS: u64 = 256;

/// A unit handed to the pool (its result arrives on the channel), or a
/// small one to run when its turn comes.
enum Pending {
    Spawned(mpsc::Receiver<Result<Vec<RecordBatch>>>),
    Inline(Arc<FragPlan>, Vec<Range<u64>>),
}

/// Run one unit, turning a panic into an error.
fn run_caught(ctx: &TaskContext, plan: &FragPlan, ranges: &[Range<u64>]) -> Result<Vec<RecordBatch>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.run(plan, ranges)))
        .unwrap_or_else(|_| Err(Error::Internal { what: "panic while scanning a fragment".into() }))
}

/// The batches of a scan, in order, decoded a few tasks ahead on the rayon
/// pool.
pub struct ScanStream {
    ctx: Arc<TaskContext>,
    tasks: VecDeque<(Arc<FragPlan>, Vec<Range<u64>>)>,
    in_flight: VecDeque<Pending>,
    /// Batches of the oldest finished unit not handed out yet.
    ready: VecDeque<RecordBatch>,
    readahead: usize,
    /// (offset, limit) still to apply to the output (filtered scans).
    post: Option<(u64, u64)>,
    failed: bool,
}

impl std::fmt::Debug for ScanStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanStream").field("tasks_left", &self.tasks.len()).finish()
    }
}

impl ScanStream {
    /// The output schema.
    pub fn schema(&self) -> SchemaRef {
        self.ctx.schema.clone()
    }

    fn fill(&mut self) {
        while self.in_flight.len() < self.readahead {
            let Some((plan, ranges)) = self.tasks.pop_front() else { break };
            if rows_in(&ranges) <= INLINE_TASK_ROWS {
                self.in_flight.push_back(Pending::Inline(plan, ranges));
                continue;
            }
            let (tx, rx) = mpsc::sync_channel(1);
            let ctx = self.ctx.clone();
            crate::process::pool().spawn(move || {
                let _ = tx.send(run_caught(&ctx, &plan, &ranges));
            });
            self.in_flight.push_back(Pending::Spawned(rx));
        }
    }
}

impl Iterator for ScanStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.failed || self.post.is_some_and(|(_, l)| l == 0) {
                return None;
            }
            self.fill();
            let batch = match self.ready.pop_front() {
                Some(b) => b,
                None => {
                    let got = match self.in_flight.pop_front()? {
                        Pending::Spawned(rx) => rx.recv(),
                        Pending::Inline(plan, ranges) => Ok(run_caught(&self.ctx, &plan, &ranges)),
                    };
                    match got {
                        Ok(Ok(batches)) => {
                            self.ready.extend(batches);
                            continue;
                        }
                        Ok(Err(e)) => {
                            self.failed = true;
                            return Some(Err(e));
                        }
                        Err(_) => {
                            self.failed = true;
                            return Some(Err(Error::Internal { what: "scan task vanished".into() }));
                        }
                    }
                }
            };
            let Some((skip, limit)) = &mut self.post else { return Some(Ok(batch)) };
            let n = batch.num_rows() as u64;
            if *skip >= n {
                *skip -= n;
                continue;
            }
            let len = (n - *skip).min(*limit);
            let out = batch.slice(*skip as usize, len as usize);
            *skip = 0;
            *limit -= len;
            if len > 0 {
                return Some(Ok(out));
            }
        }
    }
}

impl Dataset {
    /// Rows at dataset positions `indices` (counted over surviving rows in
    /// fragment order; any order, repeats allowed).
    pub fn take(self: &Arc<Self>, indices: &[u64], columns: Option<&[String]>) -> Result<RecordBatch> {
        let addrs = self.addresses_of_indices(indices)?;
        self.take_addresses(&addrs, columns)
    }

    /// The row addresses of dataset positions `indices` (counted over
    /// surviving rows in fragment order).
    pub fn addresses_of_indices(self: &Arc<Self>, indices: &[u64]) -> Result<Vec<u64>> {
        let n = self.fragments().len();
        let counts = crate::process::install(|| (0..n).into_par_iter().map(|i| self.live_rows(i)).collect::<Result<Vec<_>>>())?;
        let mut starts = Vec::with_capacity(n + 1);
        let mut acc = 0u64;
        for c in &counts {
            starts.push(acc);
            acc += c;
        }
        let total = acc;
        let mut live: Vec<Option<Vec<Range<u64>>>> = vec![None; n];
        let mut addrs = Vec::with_capacity(indices.len());
        for &ix in indices {
            if ix >= total {
                return Err(Error::invalid_input(format!(
                    "row index {ix} out of bounds: version {} of {} has {total} rows",
                    self.version(),
                    self.uri()
                )));
            }
            let fi = starts.partition_point(|&s| s <= ix) - 1;
            if live[fi].is_none() {
                live[fi] = Some(self.live_ranges(fi)?);
            }
            let ranges = live[fi].as_ref().expect("set");
            let mut k = ix - starts[fi];
            let mut off = None;
            for r in ranges {
                let len = r.end - r.start;
                if k < len {
                    off = Some(r.start + k);
                    break;
                }
                k -= len;
            }
            let off =
                off.ok_or_else(|| Error::corrupt(format!("fragment {} has fewer live rows than its deletion count says", self.fragments()[fi].id)))?;
            addrs.push((self.fragments()[fi].id << 32) | off);
        }
        Ok(addrs)
    }

    /// Rows with these row ids (stable ids, or addresses without them), in
    /// the given order; ids of deleted rows are left out.
    pub fn take_row_ids(self: &Arc<Self>, ids: &[u64], columns: Option<&[String]>) -> Result<RecordBatch> {
        Ok(self.take_row_ids_found(ids, columns)?.0)
    }

    /// Like [`Self::take_row_ids`], and also tells for each id whether its
    /// row was found (not deleted): the batch holds the found rows, in order.
    pub fn take_row_ids_found(self: &Arc<Self>, ids: &[u64], columns: Option<&[String]>) -> Result<(RecordBatch, Vec<bool>)> {
        let (addrs, found) = self.addresses_of_row_ids(ids)?;
        Ok((self.take_addresses(&addrs, columns)?, found))
    }

    /// The addresses of the live rows with these row ids (stable ids, or
    /// addresses without them), and for each id whether its row is live.
    pub fn addresses_of_row_ids(self: &Arc<Self>, ids: &[u64]) -> Result<(Vec<u64>, Vec<bool>)> {
        let mut found = Vec::with_capacity(ids.len());
        let mut addrs = Vec::with_capacity(ids.len());
        if self.has_stable_row_ids() {
            let index = self.row_id_index()?;
            for &id in ids {
                let a = index.get(id);
                found.push(a.is_some());
                addrs.extend(a);
            }
        } else {
            let mut dels: Vec<Option<Option<roaring::RoaringBitmap>>> = vec![None; self.fragments().len()];
            for &a in ids {
                let (fid, off) = (a >> 32, a & 0xffff_ffff);
                let fi = self.fragment_index(fid).ok_or_else(|| {
                    Error::invalid_input(format!("row address {a} names fragment {fid}, which version {} does not have", self.version()))
                })?;
                if off >= self.physical_rows(fi)? {
                    return Err(Error::invalid_input(format!("row address {a}: fragment {fid} has only {} rows", self.physical_rows(fi)?)));
                }
                if dels[fi].is_none() {
                    dels[fi] = Some(self.deletions(fi)?);
                }
                let deleted = dels[fi].as_ref().expect("set").as_ref().is_some_and(|d| d.contains(off as u32));
                found.push(!deleted);
                if !deleted {
                    addrs.push(a);
                }
            }
        }
        Ok((addrs, found))
    }

    /// Rows at these (valid, live) row addresses, in order.
    pub fn take_addresses(self: &Arc<Self>, addrs: &[u64], columns: Option<&[String]>) -> Result<RecordBatch> {
        self.take_addresses_with(addrs, columns, crate::table::blobs::BlobHandling::AllBinary)
    }

    /// Like [`Self::take_addresses`], blob columns read as `blob_handling` says.
    pub fn take_addresses_with(
        self: &Arc<Self>,
        addrs: &[u64],
        columns: Option<&[String]>,
        blob_handling: crate::table::blobs::BlobHandling,
    ) -> Result<RecordBatch> {
        let fields = crate::table::blobs::read_fields(&self.project(columns)?, blob_handling);
        let schema = crate::table::fragment::schema_of(&fields, &self.lance_schema().metadata);
        // Group by fragment, keeping for every input where its row lands.
        let mut groups: Vec<(usize, Vec<u64>)> = Vec::new();
        let mut group_of = std::collections::HashMap::new();
        let mut place = Vec::with_capacity(addrs.len());
        for &a in addrs {
            let fid = a >> 32;
            let g = match group_of.get(&fid) {
                Some(&g) => g,
                None => {
                    let fi = self.fragment_index(fid).ok_or_else(|| {
                        Error::invalid_input(format!("row address {a} names fragment {fid}, which version {} does not have", self.version()))
                    })?;
                    groups.push((fi, Vec::new()));
                    group_of.insert(fid, groups.len() - 1);
                    groups.len() - 1
                }
            };
            place.push((g, groups[g].1.len()));
            groups[g].1.push(a & 0xffff_ffff);
        }
        let batches = crate::process::install(|| {
            groups.par_iter().map(|(fi, offs)| self.fragment_reader(*fi, &fields)?.take(offs)).collect::<Result<Vec<_>>>()
        })?;
        if batches.len() == 1 {
            return Ok(batches.into_iter().next().expect("one"));
        }
        if batches.is_empty() {
            return Ok(RecordBatch::new_empty(schema));
        }
        let cols = (0..fields.len())
            .map(|c| {
                let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
                arrow_select::interleave::interleave(&arrays, &place)
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(Error::internal_arrow)?;
        RecordBatch::try_new_with_options(schema, cols, &RecordBatchOptions::new().with_row_count(Some(addrs.len()))).map_err(Error::internal_arrow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_and_splitting() {
        let r = vec![0..3, 5..10, 12..13];
        assert_eq!(cut(&r, 0, u64::MAX), r);
        assert_eq!(cut(&r, 2, 3), vec![2..3, 5..7]);
        assert_eq!(cut(&r, 8, 5), vec![12..13]);
        assert_eq!(cut(&r, 9, 5), Vec::<Range<u64>>::new());
        assert_eq!(cut(&r, 0, 0), Vec::<Range<u64>>::new());
        assert_eq!(split(&r, 4), vec![vec![0..3, 5..6], vec![6..10], vec![12..13]]);
        assert_eq!(split(&[0..8], 4), vec![vec![0..4], vec![4..8]]);
    }
}
