//! Blob pages (`BlobLayout`): large binary values stored out of line.
//!
//! The inner page holds one description per level entry, a packed struct of
//! `(position: u64, size: u64)`. A description with `size > 0`, or with
//! both zero, is a value at `file[position .. position + size]` (empty when
//! both are zero). A description with `size == 0` and `position != 0`
//! carries levels instead: repetition in bits 0–15, definition in 16–31.

use crate::error::{Error, Result};
use crate::file::structural::datablock::{DataBlock, Offsets};
use crate::file::structural::levels::{Layers, LevelStream};
use crate::file::structural::pages::{decode_page, PageInput};
use crate::io::Storage;
use crate::proto::encodings21::BlobLayout;

/// Decode a blob page, fetching the blob bytes it points at.
pub fn decode_blob_page(b: &BlobLayout, input: &PageInput<'_>, storage: &Storage, file_size: u64) -> Result<(Layers, LevelStream)> {
    let inner = b.inner_layout.as_deref().ok_or_else(|| Error::corrupt("blob layout without inner layout"))?;
    let layers = Layers::from_proto(&b.layers)?;
    let inner_input = PageInput { fixed_bits: Some(128), fsl_dim: None, wide_offsets: false, wanted: None, ..*input };
    let (_, descriptions, _) = decode_page(inner, &inner_input)?;
    let DataBlock::Fixed { bits: 128, data, len } = descriptions.values else {
        return Err(Error::corrupt("blob descriptions are not 128-bit (position, size) pairs"));
    };
    let mut rep = Vec::with_capacity(len);
    let mut def = Vec::with_capacity(len);
    let mut ranges = Vec::new();
    let mut slots = Vec::with_capacity(len); // per visible entry: Some(range index) or None
    for i in 0..len {
        let pos = u64::from_le_bytes(data[16 * i..16 * i + 8].try_into().unwrap());
        let size = u64::from_le_bytes(data[16 * i + 8..16 * i + 16].try_into().unwrap());
        let (r, d) = if size == 0 && pos != 0 { ((pos & 0xFFFF) as u16, ((pos >> 16) & 0xFFFF) as u16) } else { (0, 0) };
        rep.push(r);
        def.push(d);
        if !layers.is_visible(d) {
            continue;
        }
        if d == 0 && size > 0 {
            match pos.checked_add(size) {
                Some(end) if end <= file_size => {
                    slots.push(Some(ranges.len()));
                    ranges.push(pos..end);
                }
                _ => return Err(Error::corrupt(format!("blob {i} at {pos}+{size} lies outside the file ({file_size} bytes)"))),
            }
        } else {
            slots.push(None);
        }
    }
    let blobs = storage.read_ranges(&ranges)?;
    let mut offsets = Offsets::new(input.wide_offsets);
    let mut bytes = Vec::with_capacity(blobs.iter().map(|b| b.len()).sum());
    for s in slots {
        if let Some(k) = s {
            bytes.extend_from_slice(&blobs[k]);
        }
        offsets.push_end(bytes.len())?;
    }
    let rep = (layers.max_rep > 0).then_some(rep);
    let def = layers.layers.iter().any(|l| l.null_def.is_some() || l.empty_def.is_some()).then_some(def);
    Ok((layers, LevelStream { rep, def, values: DataBlock::variable(offsets, bytes), num_rows: input.num_rows }))
}
