//! Blob columns (`lance-encoding:blob` on a large_binary field; pylance 14
//! refuses the key on any other type).
//!
//! 2.1/2.2: the bytes of each non-empty valid value are stored out of line
//! in the file (each 64-byte aligned, just before the page's own buffers)
//! and the page is a `BlobLayout` whose `inner_layout` is a mini-block page
//! of one `packed_struct{[64, 64]}` description per level entry:
//! `(position, size)` for a value (`(0, 0)` when empty), `((def << 16) |
//! rep, 0)` for a null. `BlobLayout.layers` are the column's layers.
//!
//! Positions are absolute, so such a page is finished when the file is laid
//! out ([`DeferredBlob::finish`]).

use arrow_schema::{DataType, Field};
use prost::Message;

use crate::error::Result;
use crate::file::write::choose::{Allowed, FieldOptions};
use crate::file::write::miniblock;
use crate::file::write::shred::{LayerKind, LeafPath, PageLevels, Values};
use crate::proto::encodings21 as pb;

/// Field metadata marking a blob column.
pub const BLOB_META_KEY: &str = "lance-encoding:blob";

/// Whether a field is a blob column (the key's presence, as pylance).
pub fn is_blob(field: &Field) -> bool {
    field.metadata().contains_key(BLOB_META_KEY) && matches!(field.data_type(), DataType::LargeBinary)
}

/// One description of a blob page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobEntry {
    /// The `k`-th out-of-line value.
    Value(usize),
    /// A valid empty value.
    Empty,
    /// A null: `(def << 16) | rep`.
    Levels(u64),
}

/// A blob page waiting for its values' file positions.
#[derive(Debug, Clone)]
pub struct DeferredBlob {
    /// Out-of-line values, written before the page buffers.
    pub blobs: Vec<Vec<u8>>,
    /// One description per level entry.
    pub entries: Vec<BlobEntry>,
    /// The column's layers (`BlobLayout.layers`).
    pub layers: Vec<i32>,
    /// 2.2 chunk words.
    pub large_chunk_words: bool,
}

/// Split a blob page into its out-of-line values and descriptions.
pub fn defer(levels: &PageLevels, values: &Values, large_chunk_words: bool) -> Result<DeferredBlob> {
    let Values::Variable { offsets, data } = values else {
        return Err(crate::error::Error::Internal { what: "blob column without variable-width values".into() });
    };
    let entries_n = levels.num_entries().unwrap_or(values.len());
    let mut blobs = Vec::new();
    let mut entries = Vec::with_capacity(entries_n);
    let mut vi = 0usize;
    for e in 0..entries_n {
        let r = levels.rep.as_ref().map_or(0, |r| r[e]);
        let d = levels.def.as_ref().map_or(0, |d| d[e]);
        let visible = d < levels.first_invisible;
        let idx = vi;
        if visible {
            vi += 1;
        }
        if d != 0 {
            entries.push(BlobEntry::Levels(((d as u64) << 16) | r as u64));
            continue;
        }
        let v = &data[offsets[idx] as usize..offsets[idx + 1] as usize];
        if v.is_empty() {
            entries.push(BlobEntry::Empty);
        } else {
            entries.push(BlobEntry::Value(blobs.len()));
            blobs.push(v.to_vec());
        }
    }
    Ok(DeferredBlob { blobs, entries, layers: levels.layers.iter().map(|l| *l as i32).collect(), large_chunk_words })
}

impl DeferredBlob {
    /// The page's buffers and encoding once `positions[k]` (the file offset
    /// of `blobs[k]`) is known.
    pub fn finish(&self, positions: &[u64]) -> Result<(Vec<Vec<u8>>, prost_types::Any)> {
        let mut desc = Vec::with_capacity(16 * self.entries.len());
        for e in &self.entries {
            let (p, s) = match e {
                BlobEntry::Value(k) => (positions[*k], self.blobs[*k].len() as u64),
                BlobEntry::Empty => (0, 0),
                BlobEntry::Levels(x) => (*x, 0),
            };
            desc.extend_from_slice(&p.to_le_bytes());
            desc.extend_from_slice(&s.to_le_bytes());
        }
        let flat = LeafPath { kinds: vec![LayerKind::Item], max_rep: 0 };
        let levels = PageLevels::finish(&flat, None, vec![0; self.entries.len()]);
        let values = Values::Fixed { bytes: 16, data: desc };
        let (buffers, inner) = miniblock::encode(
            &levels,
            &values,
            false,
            Some(&[64, 64]),
            &FieldOptions::default(),
            Allowed { fixed_dict: false, compress_dict: false },
            self.large_chunk_words,
            None,
        )?;
        let layout = pb::PageLayout {
            layout: Some(pb::page_layout::Layout::BlobLayout(Box::new(pb::BlobLayout {
                inner_layout: Some(Box::new(inner)),
                layers: self.layers.clone(),
            }))),
        };
        Ok((buffers, prost_types::Any { type_url: crate::proto::type_url::PAGE_LAYOUT.to_string(), value: layout.encode_to_vec() }))
    }
}
