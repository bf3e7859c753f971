//! Writing Lance 2.x data files.
//!
//! Pages are streamed to storage as soon as they are encoded (an
//! [`ObjectWriter`]); only their metadata stays in memory until
//! [`FileWriter::finish`] writes the tail. The object becomes visible only
//! when the writer finishes, and a writer dropped before that removes what
//! it staged, so a failed write leaves no file behind. Columns are cut into
//! pages independently once a column has buffered ~8 MiB of data (see
//! [`crate::file::write`]); pages of different columns interleave in the
//! file, in the order they were cut.
//!
//! Container layout written (digest §9):
//!
//! ```text
//! [page buffers]           each starts 64-byte aligned, gaps padded with 0x48
//! [global buffer 0]        FileDescriptor{schema, length}, 64-byte aligned
//! (global buffers 1..)     where they were added: before the pages when
//!                          added first (index files keep e.g. the null
//!                          rows of a label list there, at offset 0)
//! [column metadata 0..C-1] ColumnMetadata protobufs, back to back
//! [CMO table]              C × (u64 position, u64 size)
//! [GBO table]              (1 + added) × (u64 position, u64 size)
//! [footer, 40 bytes]
//! ```
//!
//! Every `ColumnMetadata.encoding` is
//! `Any("/lance.encodings.ColumnEncoding", ColumnEncoding{values: {}})`; each
//! page's encoding is a direct `Any` (`/lance.encodings21.PageLayout` for
//! 2.1/2.2, `/lance.encodings.ArrayEncoding` for 2.0) and its `priority` is
//! its first row.

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use prost::Message;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::file::footer::{Footer, BUFFER_ALIGNMENT, PAD_BYTE};
use crate::file::schema::LanceSchema;
use crate::file::version::{FileVersion, PageFamily, VersionTraits};
use crate::file::write::plain::{self, PlainKind};
use crate::file::write::shred::Piece;
use crate::file::write::shred::{leaf_paths, shred};
use crate::file::write::v2_0::{columns_of, split, ColumnEncoder20};
use crate::file::write::vectors::{self, VectorKind};
use crate::file::write::{EncodedPage, LeafEncoder};
use crate::io::{ObjectWriter, Storage, StorageOptions};
use crate::proto::file::v2::{column_metadata::Page, encoding::Location, ColumnMetadata, DirectEncoding, Encoding};
use crate::proto::file::{FileDescriptor, Schema as PbSchema};
use crate::proto::type_url;

/// One column of a batch slice, ready to buffer.
enum Shredded {
    /// A plain column's array and its measured size.
    Plain(arrow_array::ArrayRef, usize),
    /// One piece per leaf column.
    Pieces(Vec<Piece>),
    /// A vector column's rows without nulls, sharing the Arrow memory
    /// (see [`crate::file::write::vectors`]).
    Vectors(Bytes, usize),
}

enum Columns {
    Structural(Vec<Vec<LeafEncoder>>),
    V20(Vec<Vec<ColumnEncoder20>>),
}

/// Writes one Lance data file (2.0, 2.1 or 2.2).
pub struct FileWriter {
    out: ObjectWriter,
    /// Page metadata per column (leaf columns in order), of the pages
    /// written so far.
    pages: Vec<Vec<Page>>,
    schema: LanceSchema,
    arrow_schema: Schema,
    version: FileVersion,
    columns: Columns,
    num_rows: u64,
    /// `(position, size)` of global buffers 1.. (buffer 0, the schema, is
    /// written at the end).
    extra_globals: Vec<(u64, u64)>,
    /// The first failure of a write, once one failed. A write can fail
    /// after some of its pages went out and into `pages` (an encoder or an
    /// upload failing half way), so a file finished afterwards would not
    /// hold what its metadata says: the writer is poisoned instead, its
    /// upload aborted, and every later call fails naming this failure.
    failed: Option<String>,
}

/// Write finished pages to `out` (`done[c]`: new pages of leaf column `c`)
/// and append their metadata to `meta[c]`.
fn emit_pages(out: &mut ObjectWriter, meta: &mut [Vec<Page>], done: Vec<Vec<EncodedPage>>) -> Result<()> {
    for (col, pages) in done.into_iter().enumerate() {
        for mut p in pages {
            if let Some(b) = p.blob.take() {
                // Out-of-line blob values go just before the page.
                let mut positions = Vec::with_capacity(b.blobs.len());
                for v in &b.blobs {
                    pad_to_alignment(out)?;
                    positions.push(out.position());
                    out.write(v)?;
                }
                let (buffers, encoding) = b.finish(&positions)?;
                (p.buffers, p.encoding) = (buffers.into_iter().map(Bytes::from).collect(), encoding);
            }
            let mut offsets = Vec::with_capacity(p.buffers.len());
            let mut sizes = Vec::with_capacity(p.buffers.len());
            for b in p.buffers {
                pad_to_alignment(out)?;
                offsets.push(out.position());
                sizes.push(b.len() as u64);
                out.put(b)?;
            }
            meta[col].push(Page {
                buffer_offsets: offsets,
                buffer_sizes: sizes,
                length: p.num_rows,
                encoding: Some(direct(&p.encoding)),
                priority: p.first_row,
            });
        }
    }
    Ok(())
}

/// Pad `out` to the buffer alignment.
fn pad_to_alignment(out: &mut ObjectWriter) -> Result<()> {
    static PADDING: [u8; BUFFER_ALIGNMENT as usize] = [PAD_BYTE; BUFFER_ALIGNMENT as usize];
    let rem = (out.position() % BUFFER_ALIGNMENT) as usize;
    if rem != 0 {
        out.put(Bytes::from_static(&PADDING[..BUFFER_ALIGNMENT as usize - rem]))?;
    }
    Ok(())
}

/// Encode the pages queued in `leaves` on the pool and write them with
/// their metadata. Whole vector pages need no encoding: they are written
/// first, by this thread, while another thread has the pool encode the
/// other pages (a wide table's vectors then go to storage during the
/// encoding of its strings instead of after it). The order in the file
/// stays independent of scheduling: the vector pages, then the rest column
/// by column; each column's metadata lists its pages in row order.
fn encode_and_emit(out: &mut ObjectWriter, meta: &mut [Vec<Page>], mut leaves: Vec<&mut LeafEncoder>) -> Result<()> {
    fn encode(leaves: &mut [&mut LeafEncoder]) -> Result<()> {
        crate::process::install(|| leaves.par_iter_mut().try_for_each(|e| e.encode_queued()))
    }
    let ready: Vec<Vec<EncodedPage>> = leaves.iter_mut().map(|e| e.take_ready_pages()).collect();
    let any_ready = ready.iter().any(|p| !p.is_empty());
    let first_new: Vec<usize> = meta.iter().map(Vec::len).collect();
    // On a pool worker (files written per fragment in parallel: merge,
    // alter_columns), a thread that waits for the pool could find every
    // worker waiting like this one: there, and should no thread start,
    // the pages are written in turn.
    let mut ready = Some(ready);
    if any_ready && rayon::current_thread_index().is_none() {
        let side_by_side = std::thread::scope(|s| {
            let encoding = std::thread::Builder::new().name("lancelet-encode".into()).spawn_scoped(s, || encode(&mut leaves)).ok()?;
            let written = emit_pages(out, meta, ready.take().unwrap_or_default());
            Some((written, encoding.join()))
        });
        if let Some((written, encoded)) = side_by_side {
            encoded.map_err(|_| Error::Internal { what: "a page encoder panicked".into() })??;
            written?;
        }
    }
    if let Some(ready) = ready {
        emit_pages(out, meta, ready)?;
        encode(&mut leaves)?;
    }
    let done: Vec<Vec<EncodedPage>> = leaves.iter_mut().map(|c| std::mem::take(&mut c.pages)).collect();
    emit_pages(out, meta, done)?;
    if any_ready {
        for (pages, first) in meta.iter_mut().zip(first_new) {
            pages[first..].sort_by_key(|p| p.priority);
        }
    }
    Ok(())
}

impl std::fmt::Debug for FileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWriter").field("out", &self.out).field("version", &self.version).field("rows", &self.num_rows).finish()
    }
}

fn has_map(dt: &DataType) -> bool {
    match dt {
        DataType::Map(_, _) => true,
        DataType::Struct(fs) => fs.iter().any(|f| has_map(f.data_type())),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => has_map(f.data_type()),
        _ => false,
    }
}

/// Fixed-size lists of non fixed-width items (structs) are stored as a
/// layer, which pylance 14 only supports in 2.2, for struct items, outside
/// lists. Reject what pylance refuses (or writes but cannot read back).
fn check_nested_fsl(f: &Field, version: FileVersion, in_list: bool) -> Result<()> {
    let kids: Vec<&Field> = match f.data_type() {
        DataType::Struct(fs) => fs.iter().map(|c| c.as_ref()).collect(),
        DataType::List(c) | DataType::LargeList(c) | DataType::Map(c, _) => {
            return check_nested_fsl(c, version, true);
        }
        DataType::FixedSizeList(c, _) if !crate::file::schema::fsl_is_leaf(c.data_type()) => {
            let name = f.name();
            let item = c.data_type();
            if !matches!(item, DataType::Struct(_)) {
                return Err(Error::unsupported(format!(
                    "field {name:?}: fixed-size lists of {item} are not supported (pylance 14 cannot write them)"
                )));
            }
            match version.traits().map(|t| t.family) {
                Some(PageFamily::ArrayEncoding) => {
                    return Err(Error::unsupported(format!(
                        "field {name:?}: Lance file version {version} cannot store FixedSizeList<Struct> \
                         (pylance's packed-struct encoder needs fixed-width data and cannot read it back); use 2.2"
                    )))
                }
                // (No version trait names this yet: 2.1 is the structural
                // version without it.)
                _ if version == FileVersion::V2_1 => {
                    return Err(Error::unsupported(format!(
                        "field {name:?}: FixedSizeList<Struct> is not enabled by file version {version}; use 2.2"
                    )))
                }
                _ => {}
            }
            if in_list {
                return Err(Error::unsupported(format!(
                    "field {name:?}: FixedSizeList<Struct> inside a list or map is not supported (pylance 14 cannot write it)"
                )));
            }
            vec![c.as_ref()]
        }
        _ => vec![],
    };
    kids.into_iter().try_for_each(|c| check_nested_fsl(c, version, in_list))
}

/// Packed structs with variable-width children are a 2.2 encoding; pylance
/// 14 refuses them in 2.1 ("Variable packed struct encoding is not
/// enabled"). Children that can be neither fixed- nor variable-width are
/// refused everywhere.
fn check_packed(f: &Field, version: FileVersion) -> Result<()> {
    use crate::file::structural::to_arrow::is_packed_struct;
    let kids: Vec<&Field> = match f.data_type() {
        DataType::Struct(fs) => fs.iter().map(|c| c.as_ref()).collect(),
        DataType::List(c) | DataType::LargeList(c) | DataType::Map(c, _) | DataType::FixedSizeList(c, _) => vec![c.as_ref()],
        _ => vec![],
    };
    let family = version.traits().map(|t| t.family);
    if family == Some(PageFamily::ArrayEncoding) && crate::file::v2_0::is_packed(f) {
        for c in &kids {
            if crate::file::write::v2_0::packed_child(c.data_type()).is_none() {
                return Err(Error::unsupported(format!(
                    "field {:?}: packed struct child {:?} of type {} in a 2.0 file (pylance's packed struct encoder only \
                     handles fixed-width data)",
                    f.name(),
                    c.name(),
                    c.data_type()
                )));
            }
        }
        return Ok(());
    }
    if is_packed_struct(f) && family == Some(PageFamily::Structural) {
        let all_fixed = kids.iter().all(|c| crate::file::write::shred::fixed_bytes(c.data_type()).is_some());
        if !all_fixed {
            if crate::file::write::shred::variable_packed_fields(f).is_none() {
                return Err(Error::unsupported(format!("field {:?}: a packed struct's children must be fixed-width, strings or binaries", f.name())));
            }
            if version == FileVersion::V2_1 {
                return Err(Error::unsupported(format!(
                    "field {:?}: Variable packed struct encoding is not enabled by file version {version}; use 2.2",
                    f.name()
                )));
            }
        }
        return Ok(());
    }
    kids.into_iter().try_for_each(|c| check_packed(c, version))
}

/// Blob columns store rep/def only for nulls, so pylance's blob layout
/// cannot hold them inside lists.
fn check_blob(f: &Field, in_list: bool, version: FileVersion) -> Result<()> {
    use crate::file::write::blob::{is_blob, BLOB_META_KEY};
    if f.metadata().contains_key(BLOB_META_KEY) && !is_blob(f) {
        return Err(Error::invalid_input(format!(
            "Blob encoding is not available for field {:?} with data type {}; blobs must be large_binary",
            f.name(),
            f.data_type()
        )));
    }
    if is_blob(f) && version.traits().is_some_and(|t| t.family == PageFamily::ArrayEncoding) {
        // pylance writes 2.0 blobs as a packed_struct of (position, size)
        // (null = (1, 0)) with the bytes out of line; lancelet's 2.0
        // reader cannot read those yet, so they are not written either.
        return Err(Error::unsupported(format!("field {:?}: blob columns in 2.0 files are not supported; use 2.1 or later", f.name())));
    }
    if in_list && is_blob(f) {
        return Err(Error::unsupported(format!("field {:?}: blob columns inside lists or maps are not supported", f.name())));
    }
    match f.data_type() {
        DataType::Struct(fs) => fs.iter().try_for_each(|c| check_blob(c, in_list, version)),
        DataType::List(c) | DataType::LargeList(c) | DataType::Map(c, _) | DataType::FixedSizeList(c, _) => check_blob(c, true, version),
        _ => Ok(()),
    }
}

/// Compare two fields ignoring metadata; describe the first difference.
fn field_mismatch(path: &str, want: &Field, got: &Field) -> Option<String> {
    let here = if path.is_empty() { want.name().clone() } else { format!("{path}.{}", want.name()) };
    if want.name() != got.name() {
        return Some(format!("expected field {here:?}, got {:?}", got.name()));
    }
    if want.is_nullable() != got.is_nullable() {
        return Some(format!("field {here:?}: expected nullable={}, got nullable={}", want.is_nullable(), got.is_nullable()));
    }
    let kids = |dt: &DataType| -> Option<Vec<Field>> {
        match dt {
            DataType::Struct(fs) => Some(fs.iter().map(|f| f.as_ref().clone()).collect()),
            DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => Some(vec![f.as_ref().clone()]),
            DataType::FixedSizeList(f, _) => Some(vec![f.as_ref().clone()]),
            _ => None,
        }
    };
    let (wd, gd) = (want.data_type(), got.data_type());
    let same_shape = std::mem::discriminant(wd) == std::mem::discriminant(gd)
        && match (wd, gd) {
            (DataType::FixedSizeList(_, a), DataType::FixedSizeList(_, b)) => a == b,
            (DataType::Struct(a), DataType::Struct(b)) => a.len() == b.len(),
            (DataType::List(_), _) | (DataType::LargeList(_), _) | (DataType::Map(_, _), _) => true,
            _ => wd == gd,
        };
    if !same_shape {
        return Some(format!("field {here:?}: expected type {wd}, got {gd}"));
    }
    if let (Some(a), Some(b)) = (kids(wd), kids(gd)) {
        for (x, y) in a.iter().zip(&b) {
            if let Some(m) = field_mismatch(&here, x, y) {
                return Some(m);
            }
        }
    }
    None
}

impl FileWriter {
    /// Create a writer for `uri`; field ids are assigned depth-first from 0.
    pub fn create(uri: &str, schema: &Schema, version: FileVersion) -> Result<Self> {
        Self::create_with(uri, schema, version, &StorageOptions::new())
    }

    /// [`FileWriter::create`] with storage options (see [`crate::io::s3`]).
    pub fn create_with(uri: &str, schema: &Schema, version: FileVersion, options: &StorageOptions) -> Result<Self> {
        let storage = Storage::open_with(uri, options)?;
        Self::create_with_lance_schema(storage, LanceSchema::from_arrow(schema)?, version)
    }

    /// Create a writer with an existing Lance schema (dataset field ids).
    pub fn create_with_lance_schema(storage: Storage, schema: LanceSchema, version: FileVersion) -> Result<Self> {
        let traits: VersionTraits =
            version.traits().ok_or_else(|| Error::invalid_input("writing legacy (v0.1) files is not supported; use 2.0, 2.1 or 2.2"))?;
        let arrow_schema = schema.to_arrow();
        for f in arrow_schema.fields() {
            if !traits.maps && has_map(f.data_type()) {
                return Err(Error::invalid_input(format!(
                    "field {:?}: Lance file version {version} does not support map columns; use 2.2 or later",
                    f.name()
                )));
            }
            crate::file::schema::logical_type(f.data_type())
                .map_err(|e| Error::invalid_input(format!("field {:?}: {e}", f.name())).with_source(e))?;
            check_nested_fsl(f, version, false)?;
            check_packed(f, version)?;
            check_blob(f, false, version)?;
        }
        let columns = match traits.family {
            PageFamily::Structural => Columns::Structural(
                arrow_schema.fields().iter().map(|f| leaf_paths(f).into_iter().map(|(lf, p)| LeafEncoder::new(&lf, p, traits)).collect()).collect(),
            ),
            PageFamily::ArrayEncoding => Columns::V20(
                arrow_schema.fields().iter().map(|f| columns_of(f).into_iter().map(|(cf, k)| ColumnEncoder20::new(cf, k)).collect()).collect(),
            ),
        };
        let num_columns = match &columns {
            Columns::Structural(c) => c.iter().map(Vec::len).sum(),
            Columns::V20(c) => c.iter().map(Vec::len).sum(),
        };
        Ok(FileWriter {
            out: storage.writer(),
            pages: vec![Vec::new(); num_columns],
            schema,
            arrow_schema,
            version,
            columns,
            num_rows: 0,
            extra_globals: Vec::new(),
            failed: None,
        })
    }

    /// Rows written so far.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// Bytes handed to storage so far (pages already encoded; buffered
    /// pages and the metadata tail are not counted yet).
    pub fn bytes_written(&self) -> u64 {
        self.out.position()
    }

    /// Lower the page-size threshold (tests use it to force several pages).
    pub fn set_page_bytes(&mut self, bytes: usize) {
        match &mut self.columns {
            Columns::Structural(cols) => cols.iter_mut().flatten().for_each(|c| c.page_bytes = bytes),
            Columns::V20(cols) => cols.iter_mut().flatten().for_each(|c| c.page_bytes = bytes),
        }
    }

    /// Shred vector columns as any other column (tests compare the files
    /// written both ways).
    #[cfg(test)]
    pub(crate) fn copy_vectors(&mut self) {
        if let Columns::Structural(cols) = &mut self.columns {
            cols.iter_mut().flatten().for_each(|c| c.copy_vectors());
        }
    }

    /// Append a batch; its schema must match the file's (names, types,
    /// nullability; metadata is ignored).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.write_batches(std::slice::from_ref(batch))
    }

    /// Append batches, one after the other, as one unit of work: their
    /// pages shred and encode in parallel together. The file is the same
    /// as with one [`Self::write`] per batch but for the order of pages
    /// in it; a caller holding many small batches (an Arrow table's
    /// chunks) keeps both cores busy this way.
    ///
    /// A failed write (a schema mismatch, a batch that cannot be encoded,
    /// a storage error) poisons the writer: its partial object is removed
    /// at once and every later call fails naming this first failure.
    pub fn write_batches(&mut self, batches: &[RecordBatch]) -> Result<()> {
        self.check_usable()?;
        let result = self.write_batches_unchecked(batches);
        self.poison_on(result)
    }

    /// Why the writer is poisoned (`None` while it is usable).
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// The error of any call on a poisoned writer.
    fn check_usable(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(first) => Err(Error::invalid_input(format!(
                "the writer of {} failed earlier and was abandoned (its partial file removed); first failure: {first}",
                self.out.display()
            ))),
        }
    }

    /// Poison the writer if `result` is an error (see [`FileWriter::write_batches`]).
    fn poison_on<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(e) = &result {
            let why = e.to_string();
            self.out.abort(&why);
            self.failed = Some(why);
            // The buffered pages and their metadata will never be written.
            self.pages = Vec::new();
            self.columns = Columns::V20(Vec::new());
        }
        result
    }

    fn write_batches_unchecked(&mut self, batches: &[RecordBatch]) -> Result<()> {
        let want = self.arrow_schema.fields();
        for batch in batches {
            let got = batch.schema();
            if want.len() != got.fields().len() {
                return Err(Error::invalid_input(format!("batch has {} columns but the file schema has {}", got.fields().len(), want.len())));
            }
            for (w, g) in want.iter().zip(got.fields()) {
                if let Some(m) = field_mismatch("", w, g) {
                    return Err(Error::invalid_input(format!("batch schema does not match the file schema: {m}")));
                }
            }
        }
        let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
        // Shred everything before buffering anything, so a rejected batch
        // leaves the writer unchanged.
        match &mut self.columns {
            Columns::Structural(cols) => {
                // A piece is never split across pages, so a big batch is
                // shredded in slices of about one page of its widest
                // mini-block column. Wide fixed-width columns (full-zip
                // pages, read row by row) do not count: a batch of them
                // makes one page, as in pylance's files.
                let page_bytes = cols.iter().flatten().map(|c| c.page_bytes).min().unwrap_or(crate::file::write::PAGE_BYTES);
                let sliced: Vec<bool> = want.iter().map(|f| !crate::file::write::is_wide_fixed(f)).collect();
                // Plain top-level leaves keep their Arrow arrays until a
                // page is cut (see `write::plain`); only their size is
                // measured (and their buffers checked) here.
                let plain: Vec<Option<PlainKind>> = cols.iter().map(|enc| if enc.len() == 1 { enc[0].plain() } else { None }).collect();
                // Vector columns keep rows without nulls in Arrow memory.
                let vector: Vec<Option<VectorKind>> = cols.iter().map(|enc| if enc.len() == 1 { enc[0].vector() } else { None }).collect();
                // Slices and columns shred independently: spread them all
                // over the pool (one column per slice would leave a core
                // idle while the widest column shreds).
                let all = crate::process::install(|| {
                    batches
                        .iter()
                        .flat_map(|batch| page_slices(batch, page_bytes, &sliced))
                        .collect::<Vec<_>>()
                        .into_par_iter()
                        .map(|slice| {
                            want.iter()
                                .zip(slice.columns())
                                .zip(plain.iter().zip(&vector))
                                .collect::<Vec<_>>()
                                .into_par_iter()
                                .map(|((f, a), (kind, vector))| {
                                    let rows = vector.and_then(|v| vectors::rows_bytes(v, a));
                                    let got = match (kind, rows) {
                                        (Some(k), _) => plain::measure(*k, a).map(|bytes| Shredded::Plain(a.clone(), bytes)),
                                        (None, Some(rows)) => Ok(Shredded::Vectors(rows, a.len())),
                                        (None, None) => shred(f, a).map(Shredded::Pieces),
                                    };
                                    got.map_err(|e| e.context(format!("field {:?}", f.name())))
                                })
                                .collect::<Result<Vec<_>>>()
                        })
                        .collect::<Result<Vec<_>>>()
                })?;
                // Each column takes its slices in order; columns in
                // parallel (buffering copies small arrays into the page
                // being filled, and concatenates shredded pieces).
                let mut per_column: Vec<Vec<Shredded>> = cols.iter().map(|_| Vec::new()).collect();
                for shredded in all {
                    for (col, got) in per_column.iter_mut().zip(shredded) {
                        col.push(got);
                    }
                }
                crate::process::install(|| {
                    cols.par_iter_mut().zip(per_column).try_for_each(|(enc, gots)| -> Result<()> {
                        for got in gots {
                            match got {
                                Shredded::Plain(a, bytes) => enc[0].push_array(a, bytes)?,
                                Shredded::Vectors(rows, n) => enc[0].push_vectors(rows, n)?,
                                Shredded::Pieces(pieces) => {
                                    for (e, p) in enc.iter_mut().zip(pieces) {
                                        e.push(p)?;
                                    }
                                }
                            }
                        }
                        Ok(())
                    })
                })?;
                // Every page cut from this batch, of every column, encodes
                // in parallel.
                let leaves: Vec<&mut LeafEncoder> = cols.iter_mut().flatten().collect();
                encode_and_emit(&mut self.out, &mut self.pages, leaves)?;
                self.num_rows += rows;
                Ok(())
            }
            Columns::V20(cols) => {
                let mut all = Vec::with_capacity(batches.len());
                for batch in batches {
                    let mut split_batch = Vec::with_capacity(cols.len());
                    for (f, a) in want.iter().zip(batch.columns()) {
                        split_batch.push(split(f, a)?);
                    }
                    all.push(split_batch);
                }
                for split_batch in all {
                    for (enc, arrays) in cols.iter_mut().zip(split_batch) {
                        for (e, a) in enc.iter_mut().zip(arrays) {
                            e.push(a)?;
                        }
                    }
                }
                let done: Vec<Vec<EncodedPage>> = cols.iter_mut().flatten().map(|c| std::mem::take(&mut c.pages)).collect();
                self.num_rows += rows;
                self.emit(done)
            }
        }
    }

    /// Write a global buffer now (64-byte aligned) and return its index
    /// (1, 2, ...; buffer 0 is the schema). Added before the first batch,
    /// it lands at offset 0, as pylance writes label-list null sets.
    /// A failure poisons the writer (see [`FileWriter::write_batches`]).
    pub fn add_global_buffer(&mut self, bytes: Bytes) -> Result<u32> {
        self.check_usable()?;
        let result = (|| {
            self.pad()?;
            let pos = self.out.position();
            let len = bytes.len() as u64;
            self.out.put(bytes)?;
            self.extra_globals.push((pos, len));
            Ok(self.extra_globals.len() as u32)
        })();
        self.poison_on(result)
    }

    /// Write finished pages (`done[c]`: new pages of leaf column `c`) and
    /// keep their metadata.
    fn emit(&mut self, done: Vec<Vec<EncodedPage>>) -> Result<()> {
        emit_pages(&mut self.out, &mut self.pages, done)
    }

    /// Pad the file to the buffer alignment.
    fn pad(&mut self) -> Result<()> {
        pad_to_alignment(&mut self.out)
    }

    /// Encode the remaining data, write the metadata tail and make the file
    /// visible. Returns the file size in bytes. A poisoned writer fails
    /// naming its first failure; a failure here leaves no file either
    /// (the upload is aborted as the writer is dropped).
    pub fn finish(mut self) -> Result<u64> {
        self.check_usable()?;
        let columns: Vec<Vec<EncodedPage>> = match &mut self.columns {
            Columns::Structural(cols) => {
                let leaves: Vec<&mut LeafEncoder> = cols.iter_mut().flatten().collect();
                crate::process::install(|| {
                    leaves
                        .into_par_iter()
                        .map(|c| {
                            c.flush()?;
                            c.encode_queued()?;
                            Ok(std::mem::take(&mut c.pages))
                        })
                        .collect::<Result<Vec<_>>>()
                })?
            }
            Columns::V20(cols) => {
                let mut out = Vec::new();
                for c in cols.iter_mut().flatten() {
                    c.finish()?;
                    out.push(std::mem::take(&mut c.pages));
                }
                out
            }
        };
        self.emit(columns)?;
        self.write_tail()?;
        self.out.finish()
    }

    /// Global buffer 0, column metadata, offset tables and footer.
    fn write_tail(&mut self) -> Result<()> {
        let col_enc = prost_types::Any {
            type_url: type_url::COLUMN_ENCODING.to_string(),
            value: crate::proto::encodings::ColumnEncoding {
                column_encoding: Some(crate::proto::encodings::column_encoding::ColumnEncoding::Values(())),
            }
            .encode_to_vec(),
        };
        let metas: Vec<ColumnMetadata> = std::mem::take(&mut self.pages)
            .into_iter()
            .map(|pages| ColumnMetadata { encoding: Some(direct(&col_enc)), pages, buffer_offsets: vec![], buffer_sizes: vec![] })
            .collect();
        self.pad()?;
        let desc =
            FileDescriptor { schema: Some(PbSchema { fields: self.schema.to_pb()?, metadata: self.schema.metadata_pb() }), length: self.num_rows };
        let start = self.out.position();
        let mut tail: Vec<u8> = Vec::new();
        let gb0_pos = start;
        let gb0 = desc.encode_to_vec();
        tail.extend_from_slice(&gb0);
        let column_meta_start = start + tail.len() as u64;
        let mut cmo = Vec::with_capacity(metas.len());
        for m in &metas {
            let b = m.encode_to_vec();
            cmo.push((start + tail.len() as u64, b.len() as u64));
            tail.extend_from_slice(&b);
        }
        let cmo_table_offset = start + tail.len() as u64;
        for (p, s) in &cmo {
            tail.extend_from_slice(&p.to_le_bytes());
            tail.extend_from_slice(&s.to_le_bytes());
        }
        let gbo_table_offset = start + tail.len() as u64;
        tail.extend_from_slice(&gb0_pos.to_le_bytes());
        tail.extend_from_slice(&(gb0.len() as u64).to_le_bytes());
        for (pos, len) in &self.extra_globals {
            tail.extend_from_slice(&pos.to_le_bytes());
            tail.extend_from_slice(&len.to_le_bytes());
        }
        let footer = Footer {
            column_meta_start,
            cmo_table_offset,
            gbo_table_offset,
            num_global_buffers: 1 + self.extra_globals.len() as u32,
            num_columns: metas.len() as u32,
            version: self.version,
        };
        tail.extend_from_slice(&footer.to_bytes());
        self.out.put(Bytes::from(tail))
    }
}

/// `batch` cut into row slices whose widest column of those `counted`
/// holds about `page_bytes` (the whole batch when it is smaller).
fn page_slices(batch: &RecordBatch, page_bytes: usize, counted: &[bool]) -> Vec<RecordBatch> {
    let n = batch.num_rows();
    let widest =
        batch.columns().iter().zip(counted).filter(|(_, &c)| c).map(|(c, _)| c.to_data().get_slice_memory_size().unwrap_or(0)).max().unwrap_or(0);
    if widest <= page_bytes || n <= 1 {
        return vec![batch.clone()];
    }
    let rows = ((n as u128 * page_bytes as u128 / widest as u128) as usize).max(1);
    (0..n).step_by(rows).map(|s| batch.slice(s, rows.min(n - s))).collect()
}

fn direct(any: &prost_types::Any) -> Encoding {
    Encoding { location: Some(Location::Direct(DirectEncoding { encoding: any.encode_to_vec() })) }
}
