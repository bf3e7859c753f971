//! Reading Lance 2.x data files.
//!
//! Opening reads the tail of the file once (footer, column metadata, offset
//! tables, and usually the schema). A read names top-level columns and a
//! sorted set of row ranges; the reader works out which pages of which
//! columns cover them, fetches their buffers (whole pages in one coalesced
//! request; for sparse reads only the chunks or entries holding the rows,
//! see [`crate::file::fetch`]), decodes the columns in parallel and
//! assembles Arrow arrays.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use prost::Message;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::file::fetch::{fetch, FetchedPage, PageCache, PageRequest};
use crate::file::footer::{parse_offset_table, Footer, FOOTER_LEN};
use crate::file::pieces::ColumnPieces;
use crate::file::schema::LanceSchema;
use crate::file::source::{page_encoding_any, pages_overlapping, FetchRanges};
use crate::file::structural::blob::decode_blob_page;
use crate::file::structural::direct::direct_pieces;
use crate::file::structural::levels::{Layers, LevelStream};
use crate::file::structural::pages::{decode_page, PageInput};
use crate::file::structural::to_arrow::{assemble, fixed_width_bits, leaf_count, owns_column};
use crate::file::structural::unravel::{row_multiplier, unravel, Ancestor, Unraveled};
use crate::file::version::{FileVersion, PageFamily};
use crate::io::{Storage, StorageOptions};
use crate::proto::encodings21::page_layout::Layout;
use crate::proto::encodings21::PageLayout;
use crate::proto::file::v2::{column_metadata::Page, ColumnMetadata};
use crate::proto::file::FileDescriptor;
use crate::proto::type_url;

/// How much of the tail to read when opening, in one request.
const TAIL_READ: u64 = 64 * 1024;

/// An open Lance data file.
pub struct FileReader {
    storage: Storage,
    size: u64,
    version: FileVersion,
    schema: LanceSchema,
    arrow_schema: SchemaRef,
    num_rows: u64,
    columns: Vec<ColumnMetadata>,
    /// Columns owned by each top-level field.
    field_columns: Vec<Range<usize>>,
    /// Set for v0.1 files, which have their own layout and reader.
    legacy: Option<crate::file::legacy::LegacyFileReader>,
    /// Byte ranges of the global buffers (0 is the schema).
    global_buffers: Vec<Range<u64>>,
    /// What earlier reads learnt of each page (2.1+ files), by column and
    /// page: parsed layouts, mini-block chunk metadata.
    page_caches: Vec<Vec<PageCache>>,
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader").field("path", &self.storage).field("version", &self.version).finish()
    }
}

/// The 2.0 page reader fetches its pages (and blob values) through this.
impl FetchRanges for FileReader {
    fn file_size(&self) -> u64 {
        self.size
    }

    fn fetch_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.storage.read_ranges(ranges)
    }
}

fn slice_of(tail: &Bytes, tail_start: u64, r: &Range<u64>) -> Option<Bytes> {
    if r.start < tail_start {
        return None;
    }
    let s = (r.start - tail_start) as usize;
    let e = (r.end - tail_start) as usize;
    (e <= tail.len()).then(|| tail.slice(s..e))
}

/// Number of columns a field owns in a file of this page family.
fn columns_of(field: &Field, family: PageFamily) -> usize {
    match family {
        PageFamily::Structural => leaf_count(field),
        // 2.0: every field has a column, parents included (packed structs: one).
        PageFamily::ArrayEncoding => crate::file::v2_0::columns_of(field),
    }
}

impl FileReader {
    /// Open a file by URI or local path.
    pub fn open(uri: &str) -> Result<Self> {
        Self::open_with(uri, &StorageOptions::new())
    }

    /// Open a file by URI with storage options (see [`crate::io::s3`]).
    pub fn open_with(uri: &str, options: &StorageOptions) -> Result<Self> {
        Self::open_storage(Storage::open_with(uri, options)?)
    }

    /// Open a file through an existing storage handle.
    pub fn open_storage(storage: Storage) -> Result<Self> {
        let path = storage.display().to_string();
        Self::open_inner(storage, None).map_err(|e| e.in_file(&path))
    }

    /// Like [`FileReader::open_storage`], given the file's size when it is
    /// known (a manifest records it), which saves a request to the store.
    /// If the file does not read as that size says, it is opened as if the
    /// size were not known (errors then say what the file really holds).
    pub fn open_storage_sized(storage: Storage, size: Option<u64>) -> Result<Self> {
        let path = storage.display().to_string();
        match size {
            Some(n) => Self::open_inner(storage.clone(), Some(n)).or_else(|_| Self::open_inner(storage, None)),
            None => Self::open_inner(storage, None),
        }
        .map_err(|e| e.in_file(&path))
    }

    fn open_inner(storage: Storage, known_size: Option<u64>) -> Result<Self> {
        let size = match known_size {
            Some(n) => n,
            None => storage.size()?,
        };
        if size < 8 {
            return Err(Error::corrupt(format!("file is {size} bytes, too short to be a Lance file")));
        }
        let tail_start = size.saturating_sub(TAIL_READ);
        let mut tail = storage.read_range(tail_start..size)?;
        let mut tail_start = tail_start;
        let version = crate::file::footer::parse_version_tail(&tail)?;
        if version == FileVersion::Legacy {
            let legacy = crate::file::legacy::LegacyFileReader::open(storage.clone())?;
            return Ok(FileReader {
                storage,
                size,
                version,
                schema: legacy.lance_schema().clone(),
                arrow_schema: legacy.schema().clone(),
                num_rows: legacy.num_rows(),
                columns: Vec::new(),
                field_columns: Vec::new(),
                legacy: Some(legacy),
                global_buffers: Vec::new(),
                page_caches: Vec::new(),
            });
        }
        let footer = Footer::parse(&tail, size)?;
        let meta = footer.metadata_range(size);
        if meta.start < tail_start {
            tail = storage.read_range(meta.start..size)?;
            tail_start = meta.start;
        }
        let body_end = size - FOOTER_LEN;
        let cmo_bytes = slice_of(&tail, tail_start, &(footer.cmo_table_offset..footer.cmo_table_offset + 16 * footer.num_columns as u64))
            .ok_or_else(|| Error::corrupt("column metadata offset table outside the file"))?;
        let col_ranges = parse_offset_table(&cmo_bytes, footer.num_columns as usize, body_end, "column metadata")?;
        let gbo_bytes = slice_of(&tail, tail_start, &(footer.gbo_table_offset..footer.gbo_table_offset + 16 * footer.num_global_buffers as u64))
            .ok_or_else(|| Error::corrupt("global buffer offset table outside the file"))?;
        let gb_ranges = parse_offset_table(&gbo_bytes, footer.num_global_buffers as usize, body_end, "global buffer")?;
        let columns = col_ranges
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let bytes = match slice_of(&tail, tail_start, r) {
                    Some(b) => b,
                    None => storage.read_range(r.clone())?,
                };
                ColumnMetadata::decode(bytes).map_err(|e| Error::corrupt(format!("column metadata {i}: bad protobuf: {e}")).with_source(e))
            })
            .collect::<Result<Vec<_>>>()?;
        let gb0 = &gb_ranges[0];
        let gb0_bytes = match slice_of(&tail, tail_start, gb0) {
            Some(b) => b,
            None => storage.read_range(gb0.clone())?,
        };
        let desc = FileDescriptor::decode(gb0_bytes)
            .map_err(|e| Error::corrupt(format!("file descriptor (global buffer 0): bad protobuf: {e}")).with_source(e))?;
        let pb_schema = desc.schema.ok_or_else(|| Error::corrupt("file descriptor has no schema"))?;
        let schema = LanceSchema::from_pb(&pb_schema.fields, &pb_schema.metadata)?;
        let arrow_schema = Arc::new(schema.to_arrow());
        let family = version.traits().expect("2.x version").family;
        let mut field_columns = Vec::with_capacity(arrow_schema.fields().len());
        let mut next = 0;
        for f in arrow_schema.fields() {
            let n = columns_of(f, family);
            field_columns.push(next..next + n);
            next += n;
        }
        if next != columns.len() {
            return Err(Error::corrupt(format!("schema needs {next} columns but the file has {}", columns.len())));
        }
        let mut multipliers = vec![1u64; columns.len()];
        if family == PageFamily::Structural {
            let mut leaves = Vec::new();
            for (f, cols) in arrow_schema.fields().iter().zip(&field_columns) {
                collect_leaves(f, &mut cols.clone(), &mut Vec::new(), &mut leaves);
            }
            for l in leaves {
                multipliers[l.column] = row_multiplier(&l.ancestors) as u64;
            }
        }
        for (i, c) in columns.iter().enumerate() {
            let mut rows = 0u64;
            for (pi, p) in c.pages.iter().enumerate() {
                if p.buffer_offsets.len() != p.buffer_sizes.len() {
                    return Err(Error::corrupt(format!("column {i} page {pi}: buffer offsets and sizes differ in count")));
                }
                for (o, s) in p.buffer_offsets.iter().zip(&p.buffer_sizes) {
                    if o.checked_add(*s).is_none_or(|e| e > body_end) {
                        return Err(Error::corrupt(format!("column {i} page {pi}: buffer at {o}+{s} lies outside the file ({size} bytes)")));
                    }
                }
                rows = rows.checked_add(p.length).ok_or_else(|| Error::corrupt("page lengths overflow"))?;
            }
            if family == PageFamily::Structural && rows != desc.length.saturating_mul(multipliers[i]) {
                return Err(Error::corrupt(format!("column {i} pages hold {rows} rows, file says {}", desc.length)));
            }
        }
        let page_caches = match family {
            PageFamily::Structural => columns.iter().map(|c| c.pages.iter().map(|_| PageCache::default()).collect()).collect(),
            PageFamily::ArrayEncoding => Vec::new(),
        };
        Ok(FileReader {
            storage,
            size,
            version,
            schema,
            arrow_schema,
            num_rows: desc.length,
            columns,
            field_columns,
            legacy: None,
            global_buffers: gb_ranges,
            page_caches,
        })
    }

    /// Number of global buffers (2.x files; buffer 0 holds the schema).
    pub fn num_global_buffers(&self) -> usize {
        self.global_buffers.len()
    }

    /// The bytes of global buffer `i`.
    pub fn read_global_buffer(&self, i: usize) -> Result<Bytes> {
        let r = self.global_buffers.get(i).ok_or_else(|| {
            Error::corrupt_in(self.storage.display().to_string(), format!("no global buffer {i} (the file has {})", self.global_buffers.len()))
        })?;
        self.storage.read_range(r.clone())
    }

    /// The file's version.
    pub fn version(&self) -> FileVersion {
        self.version
    }
    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }
    /// The Arrow schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.arrow_schema
    }
    /// The Lance schema (with field ids).
    pub fn lance_schema(&self) -> &LanceSchema {
        &self.schema
    }
    /// File size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// Storage requests made so far.
    pub fn read_count(&self) -> u64 {
        self.storage.read_count()
    }
    /// The column metadata of a 2.x file (for tests that drive a page
    /// reader without the `FileReader`).
    #[cfg(test)]
    pub(crate) fn column_metadata(&self) -> &[ColumnMetadata] {
        &self.columns
    }

    /// Where this file lives.
    pub fn path(&self) -> &str {
        self.storage.display()
    }

    /// The layout of every page whose encoding decodes (2.1+ files; none
    /// for others): lets each page-layout fuzz target keep to its files.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn page_kinds(&self) -> Vec<PageKind> {
        if self.version.traits().is_none_or(|t| t.family != PageFamily::Structural) {
            return Vec::new();
        }
        let layouts = self.columns.iter().flat_map(|c| &c.pages).filter_map(|p| page_layout(p).ok());
        layouts
            .filter_map(|l| match l.layout? {
                Layout::MiniBlockLayout(m) if m.dictionary.is_some() => Some(PageKind::Dictionary),
                Layout::MiniBlockLayout(_) => Some(PageKind::MiniBlock),
                Layout::FullZipLayout(_) => Some(PageKind::FullZip),
                Layout::ConstantLayout(_) => Some(PageKind::Constant),
                Layout::BlobLayout(_) => Some(PageKind::Blob),
            })
            .collect()
    }

    /// Indices of top-level fields by name (all fields if `None`).
    pub fn projection(&self, columns: Option<&[String]>) -> Result<Vec<usize>> {
        match columns {
            None => Ok((0..self.arrow_schema.fields().len()).collect()),
            Some(names) => names
                .iter()
                .map(|n| {
                    self.arrow_schema.index_of(n).map_err(|_| {
                        Error::invalid_input(format!(
                            "no column {n:?} in {} (columns: {})",
                            self.path(),
                            self.arrow_schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
                        ))
                    })
                })
                .collect(),
        }
    }

    /// Read rows `range` of the projected columns.
    pub fn read_range(&self, projection: &[usize], range: Range<u64>) -> Result<RecordBatch> {
        if range.start > range.end || range.end > self.num_rows {
            return Err(Error::invalid_input(format!(
                "rows {}..{} out of bounds for {} with {} rows",
                range.start,
                range.end,
                self.path(),
                self.num_rows
            )));
        }
        self.read_ranges(projection, &[range])
    }

    /// Read the rows at `indices` (any order, duplicates allowed).
    pub fn take(&self, projection: &[usize], indices: &[u64]) -> Result<RecordBatch> {
        if let Some(bad) = indices.iter().find(|&&i| i >= self.num_rows) {
            return Err(Error::invalid_input(format!("row index {bad} out of bounds for {} with {} rows", self.path(), self.num_rows)));
        }
        let mut sorted: Vec<u64> = indices.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for &i in &sorted {
            match ranges.last_mut() {
                Some(r) if r.end == i => r.end += 1,
                _ => ranges.push(i..i + 1),
            }
        }
        let batch = self.read_ranges(projection, &ranges)?;
        let already_in_order = sorted.len() == indices.len() && sorted.as_slice() == indices;
        if already_in_order {
            return Ok(batch);
        }
        let positions: UInt32Array = indices.iter().map(|i| sorted.binary_search(i).expect("present") as u32).collect();
        let columns = batch
            .columns()
            .iter()
            .map(|c| arrow_select::take::take(c.as_ref(), &positions, None))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(Error::internal_arrow)?;
        RecordBatch::try_new_with_options(batch.schema(), columns, &RecordBatchOptions::new().with_row_count(Some(indices.len())))
            .map_err(Error::internal_arrow)
    }

    /// Per-row-group statistics of the field with id `field_id`, if the
    /// file keeps any (legacy files do; 2.x files do not).
    pub fn group_stats(&self, field_id: i32) -> Result<Option<crate::file::stats::GroupStats>> {
        match &self.legacy {
            Some(l) => l.group_stats(field_id),
            None => Ok(None),
        }
    }

    /// Read the sorted, non-overlapping row `ranges` of the projected columns.
    pub fn read_ranges(&self, projection: &[usize], ranges: &[Range<u64>]) -> Result<RecordBatch> {
        let pieces = self.read_pieces(projection, ranges)?;
        pieces.into_batch(self.projected_schema(projection))
    }

    /// The schema of the projected columns.
    pub fn projected_schema(&self, projection: &[usize]) -> SchemaRef {
        let fields: Vec<Arc<Field>> = projection.iter().map(|&i| self.arrow_schema.fields()[i].clone()).collect();
        Arc::new(Schema::new(fields).with_metadata(self.arrow_schema.metadata().clone()))
    }

    /// Like [`FileReader::read_ranges`], with each column as the arrays of
    /// its pages (see [`ColumnPieces`]) where that saves a copy.
    pub fn read_pieces(&self, projection: &[usize], ranges: &[Range<u64>]) -> Result<ColumnPieces> {
        self.read_pieces_inner(projection, ranges, false).map_err(|e| e.in_file(self.path()))
    }

    /// Like [`FileReader::read_pieces`], with every blob column (see
    /// [`crate::file::structural::blob::describe_blob_field`]) read as its
    /// `(position, size)` descriptions instead of its bytes: no blob byte
    /// is fetched.
    pub fn read_pieces_described(&self, projection: &[usize], ranges: &[Range<u64>]) -> Result<ColumnPieces> {
        self.read_pieces_inner(projection, ranges, true).map_err(|e| e.in_file(self.path()))
    }

    /// The storage handle of this file (blob readers fetch ranges of it).
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    fn read_pieces_inner(&self, projection: &[usize], ranges: &[Range<u64>], described: bool) -> Result<ColumnPieces> {
        let num_rows: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        if let Some(legacy) = &self.legacy {
            let batch = legacy.read_ranges(projection, ranges)?;
            return ColumnPieces::from_arrays(batch.columns().to_vec(), num_rows as usize);
        }
        let owned: Vec<Field> = projection
            .iter()
            .map(|&i| {
                let f = self.arrow_schema.field(i);
                if described {
                    crate::file::structural::blob::describe_blob_field(f)
                } else {
                    f.clone()
                }
            })
            .collect();
        let fields: Vec<&Field> = owned.iter().collect();
        let family = self.version.traits().expect("2.x version").family;
        let ranges: Vec<Range<u64>> = ranges.iter().filter(|r| r.end > r.start).cloned().collect();
        let ranges = ranges.as_slice();
        let columns: Vec<Vec<ArrayRef>> = match family {
            _ if ranges.is_empty() => fields.iter().map(|f| vec![arrow_array::new_empty_array(f.data_type())]).collect(),
            PageFamily::Structural => self.read_structural(projection, &fields, ranges)?,
            PageFamily::ArrayEncoding => projection
                .iter()
                .zip(&fields)
                .map(|(&fi, f)| {
                    crate::file::v2_0::read_field(self, &self.columns, f, self.field_columns[fi].clone(), ranges)
                        .map(|a| vec![a])
                        .map_err(|e| e.context(format!("column {:?}", self.arrow_schema.field(fi).name())))
                })
                .collect::<Result<Vec<_>>>()?,
        };
        // (Checks every column's row count; the index is into these names.)
        ColumnPieces::new(columns, num_rows as usize)
            .map_err(|e| e.context(format!("reading columns {:?}", fields.iter().map(|f| f.name()).collect::<Vec<_>>())))
    }

    /// The pages of `column` that overlap `ranges`, with their first rows.
    #[cfg(test)]
    pub(crate) fn pages_for(&self, column: usize, ranges: &[Range<u64>]) -> Vec<(u64, &Page)> {
        let pages = &self.columns[column].pages;
        self.page_indices_for(column, ranges).into_iter().map(|(start, i)| (start, &pages[i])).collect()
    }

    /// The pages of `column` that overlap `ranges`: (first row, page index).
    fn page_indices_for(&self, column: usize, ranges: &[Range<u64>]) -> Vec<(u64, usize)> {
        pages_overlapping(&self.columns[column].pages, ranges)
    }

    /// The projected columns, each as one array, or for a top-level column
    /// that owns its leaf as one array per page (no concatenation).
    fn read_structural(&self, projection: &[usize], fields: &[&Field], ranges: &[Range<u64>]) -> Result<Vec<Vec<ArrayRef>>> {
        // (leaf field, column index) for every projected leaf, in order.
        let mut leaves: Vec<LeafPlan> = Vec::new();
        for (&fi, f) in projection.iter().zip(fields) {
            let mut cols = self.field_columns[fi].clone();
            collect_leaves(f, &mut cols, &mut Vec::new(), &mut leaves);
        }
        // Ranges in each column's page units (see `row_multiplier`).
        let scaled: Vec<Vec<Range<u64>>> = leaves
            .iter()
            .map(|l| {
                let m = row_multiplier(&l.ancestors) as u64;
                ranges.iter().map(|r| r.start * m..r.end * m).collect()
            })
            .collect();
        let indices: Vec<Vec<(u64, usize)>> = leaves.iter().zip(&scaled).map(|(l, r)| self.page_indices_for(l.column, r)).collect();
        let plans: Vec<Vec<(u64, &Page)>> =
            leaves.iter().zip(&indices).map(|(l, ix)| ix.iter().map(|&(start, i)| (start, &self.columns[l.column].pages[i])).collect()).collect();
        let mut reqs = Vec::new();
        for ((ix, ranges), leaf) in indices.iter().zip(&scaled).zip(&leaves) {
            for &(first_row, i) in ix {
                let page = &self.columns[leaf.column].pages[i];
                let cache = &self.page_caches[leaf.column][i];
                let layout = cache.layout(|| page_layout(page)).map_err(|e| e.context(format!("column {} page at row {first_row}", leaf.column)))?;
                reqs.push(PageRequest { page, layout, wanted: page_relative(ranges, first_row, page.length), cache });
            }
        }
        let fetched = fetch(&self.storage, &reqs)?;
        let mut per_leaf = Vec::with_capacity(leaves.len());
        let mut at = 0;
        for plan in &plans {
            per_leaf.push(at..at + plan.len());
            at += plan.len();
        }
        // A top-level column stored as plain full-zip values is taken as it
        // was fetched (see `direct`); the others are decoded.
        let parallel = ranges.iter().map(|r| r.end - r.start).sum::<u64>() > SEQUENTIAL_READ_ROWS;
        let decode = |((leaf, plan), span): ((&LeafPlan, &Vec<(u64, &Page)>), &Range<usize>)| {
            let (reqs, got) = (&reqs[span.clone()], &fetched[span.clone()]);
            let direct = if leaf.ancestors.is_empty() { direct_pieces(leaf.field.data_type(), reqs, got) } else { None };
            match direct {
                Some(arrays) => arrays.map(LeafOut::Arrays),
                None => decode_leaf(leaf, plan, reqs, got, &self.storage, self.size, parallel).map(LeafOut::Levels),
            }
            .map_err(|e| e.context(format!("column {} ({:?})", leaf.column, leaf.field.name())))
        };
        let decoded: Vec<Result<LeafOut>> = if parallel {
            crate::process::install(|| leaves.par_iter().zip(plans.par_iter()).zip(per_leaf.par_iter()).map(decode).collect())
        } else {
            leaves.iter().zip(plans.iter()).zip(per_leaf.iter()).map(decode).collect()
        };
        let mut per_leaf = decoded.into_iter();
        let mut out = Vec::with_capacity(projection.len());
        for field in fields.iter().copied() {
            let mut mine = per_leaf.by_ref().take(leaf_count(field)).collect::<Result<Vec<LeafOut>>>()?;
            if let [LeafOut::Arrays(_)] = mine.as_slice() {
                let Some(LeafOut::Arrays(arrays)) = mine.pop() else { unreachable!("matched above") };
                out.push(arrays);
                continue;
            }
            let mut mine: Vec<Vec<Unraveled>> = mine
                .into_iter()
                .map(|l| match l {
                    LeafOut::Levels(u) => Ok(u),
                    LeafOut::Arrays(_) => Err(Error::Internal { what: "a nested leaf taken as arrays".into() }),
                })
                .collect::<Result<_>>()?;
            if mine.len() == 1 && mine[0].len() > 1 {
                // A top-level leaf split at its pages (see `decode_leaf`).
                let pieces = mine.pop().expect("one leaf").into_iter().map(|u| assemble(field, &mut [Some(u)].iter_mut(), 0));
                out.push(pieces.collect::<Result<Vec<_>>>()?);
                continue;
            }
            let mut leaves = mine
                .into_iter()
                .map(|mut u| if u.len() == 1 { Ok(u.pop()) } else { Err(Error::Internal { what: "a nested leaf split at pages".into() }) })
                .collect::<Result<Vec<_>>>()?;
            out.push(vec![assemble(field, &mut leaves.iter_mut(), 0)?]);
        }
        Ok(out)
    }
}

/// Reads of at most this many rows decode their columns and pages on the
/// calling thread: they take microseconds, and handing them to the thread
/// pool would cost thread switches (each of which may wait for a scheduler
/// tick on a busy machine) for nothing.
const SEQUENTIAL_READ_ROWS: u64 = 256;

/// One leaf column read: decoded levels (one per page where the column
/// splits at pages), or arrays taken straight from the fetched bytes.
enum LeafOut {
    Levels(Vec<Unraveled>),
    Arrays(Vec<ArrayRef>),
}

/// A leaf column to decode: its field, column index, and what each
/// ancestor layer is (outermost first).
struct LeafPlan {
    field: Field,
    column: usize,
    ancestors: Vec<Ancestor>,
}

fn collect_leaves(f: &Field, cols: &mut Range<usize>, path: &mut Vec<Ancestor>, out: &mut Vec<LeafPlan>) {
    if owns_column(f) {
        let column = cols.next().expect("column count checked at open");
        out.push(LeafPlan { field: f.clone(), column, ancestors: path.clone() });
        return;
    }
    match f.data_type() {
        DataType::Struct(fs) => {
            path.push(Ancestor::Struct);
            fs.iter().for_each(|c| collect_leaves(c, cols, path, out));
            path.pop();
        }
        DataType::List(c) | DataType::LargeList(c) | DataType::Map(c, _) => {
            path.push(Ancestor::List);
            collect_leaves(c, cols, path, out);
            path.pop();
        }
        DataType::FixedSizeList(c, n) => {
            path.push(Ancestor::FixedSizeList(*n as usize));
            collect_leaves(c, cols, path, out);
            path.pop();
        }
        _ => {}
    }
}

/// Decode one leaf column's pages: one [`Unraveled`] per page where
/// [`splits_at_pages`] allows, else one for all of them.
fn decode_leaf(
    leaf: &LeafPlan,
    plan: &[(u64, &Page)],
    reqs: &[PageRequest<'_>],
    fetched: &[FetchedPage],
    storage: &Storage,
    file_size: u64,
    parallel: bool,
) -> Result<Vec<Unraveled>> {
    let field = &leaf.field;
    let dt = match field.data_type() {
        DataType::Dictionary(_, v) => v.as_ref().clone(),
        dt => dt.clone(),
    };
    let fsl_dim = match &dt {
        DataType::FixedSizeList(_, n) => Some(*n as usize),
        _ => None,
    };
    let fixed_bits = match &dt {
        DataType::Struct(fs) => fs.iter().map(|f| fixed_width_bits(f.data_type())).sum::<Option<u64>>(),
        dt => fixed_width_bits(dt),
    };
    let wide = matches!(dt, DataType::LargeUtf8 | DataType::LargeBinary);
    // Pages decode independently: spread them over the cores too (unless
    // the read is small, see `SEQUENTIAL_READ_ROWS`). Each page yields
    // exactly its requested rows (decoding only the chunks that hold them
    // where the layout allows).
    let decode = |(((first_row, page), req), got): (((&u64, &&Page), &PageRequest<'_>), &FetchedPage)| {
        let wanted = &req.wanted;
        let refs: Vec<&[u8]> = got.bufs.iter().map(|b| b.as_ref()).collect();
        let chunk_refs: Option<Vec<(usize, &[u8])>> = got.chunks.as_ref().map(|c| c.iter().map(|(p, b)| (*p, b.as_ref())).collect());
        // A partly read full-zip page holds exactly the wanted rows.
        let zip_layout = got.zip.as_ref().map(|z| PageLayout { layout: Some(Layout::FullZipLayout(z.clone())) });
        let layout = zip_layout.as_ref().unwrap_or(req.layout);
        let input = PageInput {
            buffers: &refs,
            num_rows: got.zip.as_ref().map_or(page.length as usize, |z| z.num_items as usize),
            wide_offsets: wide,
            fixed_bits,
            fsl_dim,
            wanted: if got.zip.is_some() { None } else { Some(wanted) },
            chunks: chunk_refs.as_deref(),
        };
        let decoded = match &layout.layout {
            Some(Layout::BlobLayout(b)) => {
                decode_blob_page(b, &input, storage, file_size, matches!(dt, DataType::Struct(_))).map(|(l, s)| (l, s, false))
            }
            _ => decode_page(layout, &input).map(|(l, s, sel)| (l, s, sel || got.zip.is_some())),
        };
        let at_page = |e: Error| e.context(format!("page at row {first_row}"));
        let (l, s, selected) = decoded.map_err(at_page)?;
        s.validate(&l).map_err(at_page)?;
        let whole = wanted.len() == 1 && wanted[0] == (0, page.length as usize);
        let s = if selected || whole { s } else { s.select_rows(&l, wanted).map_err(at_page)? };
        Ok((l, s))
    };
    let decoded: Vec<(Layers, LevelStream)> = if parallel {
        crate::process::install(|| {
            plan.par_iter().map(|(r, p)| (r, p)).zip(reqs.par_iter()).zip(fetched.par_iter()).map(decode).collect::<Result<Vec<_>>>()
        })?
    } else {
        plan.iter().map(|(r, p)| (r, p)).zip(reqs.iter()).zip(fetched.iter()).map(decode).collect::<Result<Vec<_>>>()?
    };
    let (page_layers, mut streams): (Vec<Layers>, Vec<LevelStream>) = decoded.into_iter().unzip();
    if streams.is_empty() {
        return Err(Error::corrupt("no pages cover the requested rows"));
    }
    // Pages may each use only the layers their own data needs.
    let layers = Layers::union(&page_layers)?;
    for (s, l) in streams.iter_mut().zip(&page_layers) {
        s.remap_def(l, &layers)?;
    }
    if splits_at_pages(leaf) {
        return streams.into_iter().map(|s| unravel(&layers, s, &leaf.ancestors)).collect();
    }
    let stream = LevelStream::concat(streams)?;
    Ok(vec![unravel(&layers, stream, &leaf.ancestors)?])
}

/// Whether a leaf comes back as one array per page: a top-level column
/// (its rows are its entries) that is not dictionary-encoded in Arrow (each
/// piece would carry a dictionary of its own).
fn splits_at_pages(leaf: &LeafPlan) -> bool {
    leaf.ancestors.is_empty() && !matches!(leaf.field.data_type(), DataType::Dictionary(..))
}

/// The parts of `ranges` inside the page starting at `first_row`, relative
/// to the page.
fn page_relative(ranges: &[Range<u64>], first_row: u64, length: u64) -> Vec<(usize, usize)> {
    let end = first_row + length;
    ranges
        .iter()
        .filter(|r| r.end > first_row && r.start < end)
        .map(|r| ((r.start.max(first_row) - first_row) as usize, (r.end.min(end) - first_row) as usize))
        .collect()
}

fn page_layout(page: &Page) -> Result<PageLayout> {
    let any = page_encoding_any(page)?;
    if any.type_url != type_url::PAGE_LAYOUT {
        return Err(Error::unsupported(format!("page encoding {:?} in a 2.1+ file", any.type_url)));
    }
    crate::proto::encodings21::PageLayout::decode(any.value.as_slice()).map_err(Error::bad_protobuf)
}

/// The layout of a 2.1+ page, as the page-layout fuzz targets pick their
/// files by it (`FileReader::page_kinds`).
#[cfg(any(test, feature = "fuzzing"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// 2.1+ mini-block pages without a dictionary.
    MiniBlock,
    /// 2.1+ mini-block pages with a dictionary.
    Dictionary,
    /// 2.1+ full-zip pages.
    FullZip,
    /// 2.1+ constant (all-null or single-value) pages.
    Constant,
    /// 2.1+ blob pages (values stored out of line).
    Blob,
}
