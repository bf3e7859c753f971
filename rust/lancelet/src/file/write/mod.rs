//! The pieces of the file writer.
//!
//! * [`shred`]: Arrow arrays → rep/def levels and visible leaf values (2.1+).
//! * [`choose`]: which compressive encoding a mini-block page gets
//!   ([`cardinality`]: distinct-value sketches that spare it hopeless
//!   dictionaries).
//! * [`miniblock`], [`fullzip`], [`constant`]: the 2.1/2.2 page layouts.
//! * [`v2_0`]: 2.0 `ArrayEncoding` pages (a column per field).
//!
//! [`LeafEncoder`] buffers one 2.1+ leaf column and cuts it into pages of
//! about [`PAGE_BYTES`] of value data, like pylance. Cut pages wait in a
//! queue until [`LeafEncoder::encode_queued`], which encodes them in
//! parallel (pages are independent; the file writer also runs columns in
//! parallel), so both cores work on one file.

pub mod blob;
pub mod cardinality;
pub mod choose;
pub mod constant;
pub mod fullzip;
pub mod miniblock;
pub mod plain;
pub mod shred;
pub mod v2_0;
pub mod vectors;

#[cfg(test)]
mod poison_tests;
#[cfg(test)]
mod tests;

use arrow_array::ArrayRef;
use arrow_schema::Field;
use bytes::Bytes;
use prost::Message;

use crate::error::Result;
use crate::file::structural::to_arrow::is_packed_struct;
use crate::file::version::VersionTraits;
use crate::proto::encodings21 as pb;
use choose::{Allowed, FieldOptions};
use plain::PlainKind;
use shred::{LeafPath, PageLevels, Piece, Values};

/// A column flushes a page once it has buffered this much value data.
pub const PAGE_BYTES: usize = 8 * 1024 * 1024;

/// Values wider than this go to full-zip pages (pylance's "narrow" rule).
pub const MINIBLOCK_MAX_VALUE_BYTES: usize = 256;

/// Whether every value of `field` is fixed-width and wide enough for
/// full-zip pages (e.g. float vectors). Readers address such a page's rows
/// by position, so its size costs a read nothing; the file writer keeps a
/// batch of them in one page, as pylance does, instead of one page per
/// [`PAGE_BYTES`] (62 pages of a 1M x 128-float batch cost 5.6 KB of page
/// metadata more than pylance's one).
pub fn is_wide_fixed(field: &Field) -> bool {
    use arrow_schema::DataType;
    if FieldOptions::from_metadata(field.metadata()).structural.as_deref() == Some("miniblock") {
        return false;
    }
    let row_bytes = match field.data_type() {
        DataType::FixedSizeList(item, dim) if !matches!(item.data_type(), DataType::Boolean) => {
            shred::fixed_bytes(item.data_type()).map(|b| b * (*dim).max(0) as usize)
        }
        DataType::FixedSizeBinary(n) => Some((*n).max(0) as usize),
        _ => None,
    };
    row_bytes.is_some_and(|b| b >= MINIBLOCK_MAX_VALUE_BYTES)
}

/// One encoded page, ready to be placed in the file.
#[derive(Debug, Clone)]
pub struct EncodedPage {
    /// The page's buffers, in order (a vector page's may share Arrow
    /// memory: see [`vectors`]).
    pub buffers: Vec<Bytes>,
    /// The page encoding as a `google.protobuf.Any`.
    pub encoding: prost_types::Any,
    /// Rows (2.0 list children: items) in the page.
    pub num_rows: u64,
    /// First row of the page (the `priority`).
    pub first_row: u64,
    /// A blob page: buffers and encoding are made when the file is laid
    /// out (they hold absolute positions).
    pub blob: Option<blob::DeferredBlob>,
}

/// A page cut but not encoded yet.
enum Queued {
    /// Shredded values.
    Piece(Piece),
    /// A plain column's Arrow arrays, copied when the page is encoded
    /// (see [`plain`]).
    Arrays(Vec<ArrayRef>),
    /// A vector column's rows, sharing the Arrow memory (see [`vectors`]).
    Vectors(Bytes, usize),
}

/// Buffers one leaf column of a 2.1+ file and encodes it into pages.
pub struct LeafEncoder {
    path: LeafPath,
    opts: FieldOptions,
    wide: bool,
    blob: bool,
    packed: Option<Vec<u64>>,
    /// A packed struct with variable-width children (full-zip only).
    var_packed: Option<Vec<shred::PackedField>>,
    /// Arrow dictionary column: key width in bytes and how many dictionary
    /// values the key type can index.
    dict: Option<(usize, u64)>,
    traits: VersionTraits,
    /// A top-level leaf of a plain type: takes Arrow arrays
    /// ([`Self::push_array`]) instead of shredded pieces.
    plain: Option<PlainKind>,
    /// A top-level vector column: takes its rows uncopied when an array
    /// fills a page alone ([`Self::push_vectors`]).
    vector: Option<vectors::VectorKind>,
    pieces: Vec<Piece>,
    /// A plain column's page being filled (see [`plain`]).
    filling: Option<Piece>,
    pending_bytes: usize,
    next_row: u64,
    /// Pages cut but not encoded yet: (first row, values).
    queued: Vec<(u64, Queued)>,
    /// Finished pages.
    pub pages: Vec<EncodedPage>,
    /// Page size threshold in bytes (tests lower it).
    pub page_bytes: usize,
}

impl LeafEncoder {
    /// A new encoder for the leaf `field` at `path`.
    pub fn new(field: &Field, path: LeafPath, traits: VersionTraits) -> Self {
        let dt = match field.data_type() {
            arrow_schema::DataType::Dictionary(_, v) => v.as_ref().clone(),
            dt => dt.clone(),
        };
        let wide = matches!(dt, arrow_schema::DataType::LargeUtf8 | arrow_schema::DataType::LargeBinary);
        let packed = if is_packed_struct(field) {
            match field.data_type() {
                arrow_schema::DataType::Struct(fs) => {
                    fs.iter().map(|f| shred::fixed_bytes(f.data_type()).map(|b| 8 * b as u64)).collect::<Option<Vec<_>>>()
                }
                _ => None,
            }
        } else {
            None
        };
        let top_level = path.kinds.len() == 1 && path.max_rep == 0;
        LeafEncoder {
            plain: if top_level { plain::plain_kind(field) } else { None },
            vector: if top_level && !blob::is_blob(field) { vectors::vector_kind(field) } else { None },
            filling: None,
            path,
            opts: FieldOptions::from_metadata(field.metadata()),
            wide,
            blob: blob::is_blob(field),
            packed,
            var_packed: shred::variable_packed_fields(field),
            dict: match field.data_type() {
                arrow_schema::DataType::Dictionary(k, _) => {
                    let w = k.primitive_width().unwrap_or(4);
                    let bits = 8 * w as u32 - u32::from(k.is_signed_integer());
                    Some((w, 1u64.checked_shl(bits).unwrap_or(u64::MAX)))
                }
                _ => None,
            },
            traits,
            pieces: Vec::new(),
            pending_bytes: 0,
            next_row: 0,
            queued: Vec::new(),
            pages: Vec::new(),
            page_bytes: PAGE_BYTES,
        }
    }

    /// Buffer a shredded piece; flush a page when enough data is buffered.
    pub fn push(&mut self, piece: Piece) -> Result<()> {
        // Measured like pylance measures its buffered Arrow arrays: value
        // bytes plus a validity bit per level (two bytes per level made a
        // 1M-row int64 page two pages where pylance writes one).
        self.pending_bytes += piece.values.data_bytes() + piece.def.len().div_ceil(8);
        self.pieces.push(piece);
        if self.pending_bytes >= self.page_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// The plain type of this column when it takes Arrow arrays
    /// ([`Self::push_array`]) rather than shredded pieces.
    pub fn plain(&self) -> Option<PlainKind> {
        self.plain
    }

    /// Buffer an array of a plain column, `bytes` as [`plain::measure`]
    /// found it; flush a page when enough data is buffered. An array that
    /// fills a page alone is queued uncopied (the queue is encoded before
    /// the write call returns); smaller ones are copied into the page
    /// being filled.
    pub fn push_array(&mut self, array: ArrayRef, bytes: usize) -> Result<()> {
        let Some(kind) = self.plain else {
            return Err(crate::error::Error::Internal { what: "an array pushed to a column that is not plain".into() });
        };
        if array.is_empty() {
            return Ok(());
        }
        if self.filling.is_none() && bytes >= self.page_bytes {
            let first_row = self.next_row;
            self.next_row += array.len() as u64;
            self.queued.push((first_row, Queued::Arrays(vec![array])));
            return Ok(());
        }
        let page_bytes = self.page_bytes;
        let filling = self.filling.get_or_insert_with(|| {
            // Room for a page of rows like these, plus one more array: the
            // page is cut only once an array takes it past `page_bytes`, and
            // a buffer sized for the page alone grew (a doubling realloc
            // copying the page, and fresh pages faulted in) at nearly every
            // cut.
            let per_row = (bytes as f64 / array.len() as f64).max(1.0);
            let room = page_bytes + bytes;
            let rows = (room as f64 / per_row) as usize + 1;
            let value_bytes = match kind {
                PlainKind::Fixed(w) => rows * w,
                PlainKind::Var32 | PlainKind::Var64 => room,
            };
            plain::empty(kind, rows, value_bytes)
        });
        plain::append(kind, &self.path, filling, &array)?;
        self.pending_bytes += bytes;
        if self.pending_bytes >= self.page_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// The shape of this column when it takes vector rows uncopied
    /// ([`Self::push_vectors`]).
    pub fn vector(&self) -> Option<vectors::VectorKind> {
        self.vector
    }

    /// Take vector rows as shredded pieces (tests compare both paths).
    #[cfg(test)]
    pub(crate) fn copy_vectors(&mut self) {
        self.vector = None;
    }

    /// Buffer `rows` rows of a vector column ([`vectors::rows_bytes`]).
    /// When nothing is buffered and they fill a page, they become a page of
    /// their own without a copy; otherwise they are buffered as the piece
    /// shredding them would give.
    pub fn push_vectors(&mut self, bytes: Bytes, rows: usize) -> Result<()> {
        let Some(kind) = self.vector else {
            return Err(crate::error::Error::Internal { what: "vector rows pushed to a column that is not a vector column".into() });
        };
        if rows == 0 {
            return Ok(());
        }
        if self.pieces.is_empty() && vectors::measured_bytes(kind, rows) >= self.page_bytes {
            let first_row = self.next_row;
            self.next_row += rows as u64;
            self.queued.push((first_row, Queued::Vectors(bytes, rows)));
            return Ok(());
        }
        self.push(vectors::piece(kind, &bytes, rows))
    }

    /// Cut whatever is buffered into a page (queued; see
    /// [`Self::encode_queued`]).
    pub fn flush(&mut self) -> Result<()> {
        if let Some(piece) = self.filling.take() {
            self.pending_bytes = 0;
            return self.encode_and_push(piece);
        }
        if self.pieces.is_empty() {
            return Ok(());
        }
        let pieces = std::mem::take(&mut self.pieces);
        self.pending_bytes = 0;
        if let Some((_, capacity)) = self.dict.filter(|d| d.1 <= 1 << 16 && pieces.len() > 1) {
            // One page's dictionary must stay indexable by the key type:
            // start a new page before the distinct values would overflow it
            // (one piece came from one Arrow dictionary, so it fits alone).
            let mut group: Vec<Piece> = Vec::new();
            let mut seen: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
            for p in pieces {
                let mut add = seen.clone();
                for v in value_keys(&p.values) {
                    add.insert(v);
                }
                if !group.is_empty() && add.len() as u64 > capacity {
                    self.encode_and_push(Piece::concat(std::mem::take(&mut group)))?;
                    seen = value_keys(&p.values).collect();
                } else {
                    seen = add;
                }
                group.push(p);
            }
            if !group.is_empty() {
                self.encode_and_push(Piece::concat(group))?;
            }
            return Ok(());
        }
        self.encode_and_push(Piece::concat(pieces))
    }

    fn encode_and_push(&mut self, piece: Piece) -> Result<()> {
        if piece.num_rows == 0 {
            return Ok(());
        }
        let first_row = self.next_row;
        self.next_row += piece.num_rows as u64;
        self.queued.push((first_row, Queued::Piece(piece)));
        Ok(())
    }

    /// A whole vector page of `rows` rows sharing the Arrow memory `bytes`.
    fn vector_page(&self, kind: vectors::VectorKind, first_row: u64, bytes: Bytes, rows: usize) -> EncodedPage {
        let (buffers, layout) = vectors::page(kind, &self.path, bytes, rows);
        EncodedPage { buffers, encoding: page_layout_any(&layout), num_rows: rows as u64, first_row, blob: None }
    }

    /// Take the queued pages that need no encoding (whole vector pages,
    /// sharing the Arrow memory), made ready to write; the rest stay
    /// queued for [`Self::encode_queued`].
    pub fn take_ready_pages(&mut self) -> Vec<EncodedPage> {
        let Some(kind) = self.vector else { return Vec::new() };
        if !self.queued.iter().any(|(_, q)| matches!(q, Queued::Vectors(..))) {
            return Vec::new();
        }
        let mut ready = Vec::new();
        let mut rest = Vec::with_capacity(self.queued.len());
        for (first_row, q) in std::mem::take(&mut self.queued) {
            match q {
                Queued::Vectors(bytes, rows) => ready.push(self.vector_page(kind, first_row, bytes, rows)),
                q => rest.push((first_row, q)),
            }
        }
        self.queued = rest;
        ready
    }

    /// Encode the queued pages (in parallel) and append them to
    /// [`Self::pages`] in row order.
    pub fn encode_queued(&mut self) -> Result<()> {
        use rayon::prelude::*;
        let mut queued = std::mem::take(&mut self.queued);
        self.train_fsst_once(&mut queued)?;
        let this = &*self;
        let pages = crate::process::install(|| {
            queued
                .into_par_iter()
                .map(|(first_row, q)| match (q, this.vector) {
                    (Queued::Vectors(bytes, rows), Some(kind)) => Ok(this.vector_page(kind, first_row, bytes, rows)),
                    (q, _) => {
                        let piece = this.materialize(q)?;
                        this.encode_one(first_row, piece)
                    }
                })
                .collect::<Result<Vec<_>>>()
        })?;
        self.pages.extend(pages);
        Ok(())
    }

    /// Train this column's FSST table on its first string page big enough
    /// for FSST; later pages reuse it (see [`FieldOptions::fsst_table`]).
    /// Always the first such page, so files do not depend on scheduling.
    fn train_fsst_once(&mut self, queued: &mut [(u64, Queued)]) -> Result<()> {
        let plain_strings = self.dict.is_none() && self.var_packed.is_none() && self.packed.is_none() && !self.blob;
        if self.opts.fsst_table.is_some() || !plain_strings || self.opts.compression.as_deref() == Some("none") {
            return Ok(());
        }
        for (_, q) in queued.iter_mut() {
            if let Queued::Arrays(_) = q {
                let taken = std::mem::replace(q, Queued::Piece(Piece { rep: None, def: vec![], values: Values::Null(0), num_rows: 0 }));
                *q = Queued::Piece(self.materialize(taken)?);
            }
            let Queued::Piece(piece) = &*q else { continue };
            if let Values::Variable { offsets, data } = &piece.values {
                if choose::fsst_wanted(offsets, data) {
                    let table = crate::encoding::fsst::train(offsets, data)?;
                    if table.is_enabled() {
                        self.opts.fsst_table = Some(std::sync::Arc::new(table));
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    /// The shredded values of a queued page.
    fn materialize(&self, q: Queued) -> Result<Piece> {
        match (q, self.plain) {
            (Queued::Piece(p), _) => Ok(p),
            (Queued::Arrays(arrays), Some(kind)) => plain::shred_many(kind, &self.path, &arrays),
            (Queued::Arrays(_), None) => Err(crate::error::Error::Internal { what: "arrays queued for a column that is not plain".into() }),
            (Queued::Vectors(bytes, rows), _) => match self.vector {
                Some(kind) => Ok(vectors::piece(kind, &bytes, rows)),
                None => Err(crate::error::Error::Internal { what: "vector rows queued for a column that is not a vector column".into() }),
            },
        }
    }

    fn encode_one(&self, first_row: u64, piece: Piece) -> Result<EncodedPage> {
        let num_rows = piece.num_rows as u64;
        if self.blob {
            let levels = PageLevels::finish(&self.path, piece.rep, piece.def);
            let deferred = blob::defer(&levels, &piece.values, self.traits.large_chunk_words)?;
            return Ok(EncodedPage { buffers: vec![], encoding: prost_types::Any::default(), num_rows, first_row, blob: Some(deferred) });
        }
        let (buffers, layout) = self.encode_page(piece)?;
        Ok(EncodedPage {
            buffers: buffers.into_iter().map(Bytes::from).collect(),
            encoding: page_layout_any(&layout),
            num_rows,
            first_row,
            blob: None,
        })
    }

    fn encode_page(&self, piece: Piece) -> Result<(Vec<Vec<u8>>, pb::PageLayout)> {
        let levels = PageLevels::finish(&self.path, piece.rep, piece.def);
        let values = piece.values;
        let valid = levels.visible_validity();
        let any_valid = match &valid {
            Some(v) => v.iter().any(|x| *x),
            None => !values.is_empty(),
        };
        if matches!(values, Values::Null(_)) || !any_valid {
            return Ok(if self.traits.constant_pages { constant::constant_v22(&levels, None, self.wide) } else { constant::all_null_v21(&levels) });
        }
        // pylance 14 aborts on some constant pages that carry levels (a
        // repeated value under a struct with nulls), so a repeated value
        // only becomes a constant page when the page has no levels at all.
        let flat_page = levels.rep.is_none() && levels.def.is_none();
        if let Some(kinds) = &self.var_packed {
            return fullzip::encode(&levels, values, piece.num_rows, &self.opts, self.wide, Some(kinds));
        }
        if self.traits.constant_pages && self.packed.is_none() && self.dict.is_none() && flat_page {
            if let Some(v) = constant::constant_value(&values, valid.as_deref()) {
                let variable = matches!(values, Values::Variable { .. });
                return Ok(constant::constant_v22(&levels, Some((&v, variable)), self.wide));
            }
        }
        let max_bytes = match &values {
            Values::Fixed { bytes, .. } => *bytes,
            Values::Variable { offsets, .. } => offsets.windows(2).map(|w| (w[1] - w[0]) as usize).max().unwrap_or(0),
            Values::Fsl { dims, item_bytes, .. } => dims.iter().product::<usize>() * item_bytes,
            Values::Bool(_) | Values::Null(_) => 0,
        };
        let fullzip_ok = !matches!(values, Values::Bool(_)) && self.packed.is_none() && self.dict.is_none();
        let use_fullzip = fullzip_ok
            && match self.opts.structural.as_deref() {
                Some("fullzip") => true,
                Some("miniblock") => false,
                _ => max_bytes >= MINIBLOCK_MAX_VALUE_BYTES,
            };
        if use_fullzip {
            return fullzip::encode(&levels, values, piece.num_rows, &self.opts, self.wide, None);
        }
        let allowed = Allowed { fixed_dict: self.traits.fixed_width_dictionaries, compress_dict: self.traits.compressed_dictionaries };
        miniblock::encode(&levels, &values, self.wide, self.packed.as_deref(), &self.opts, allowed, self.traits.large_chunk_words, self.dict)
    }
}

/// A 2.1+ page's encoding, as `PageLayout` in a `google.protobuf.Any`.
fn page_layout_any(layout: &pb::PageLayout) -> prost_types::Any {
    prost_types::Any { type_url: crate::proto::type_url::PAGE_LAYOUT.to_string(), value: layout.encode_to_vec() }
}

/// The visible values of a piece as byte strings (null slots included as
/// their zero fill, which can only over-count distinct values).
fn value_keys(values: &Values) -> Box<dyn Iterator<Item = Vec<u8>> + '_> {
    match values {
        Values::Fixed { bytes, data } => Box::new(data.chunks(*bytes.max(&1)).map(|c| c.to_vec())),
        Values::Variable { offsets, data } => Box::new(offsets.windows(2).map(move |w| data[w[0] as usize..w[1] as usize].to_vec())),
        _ => Box::new(std::iter::empty()),
    }
}
