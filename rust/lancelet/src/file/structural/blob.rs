//! Blob pages (`BlobLayout`): large binary values stored out of line.
//!
//! The inner page holds one description per level entry, a packed struct of
//! `(position: u64, size: u64)`. A description with `size > 0`, or with
//! both zero, is a value at `file[position .. position + size]` (empty when
//! both are zero). A description with `size == 0` and `position != 0`
//! carries levels instead: repetition in bits 0–15, definition in 16–31.
//!
//! A read may ask for the descriptions themselves (pylance's default
//! `blob_handling`): the column is then read as
//! `struct<position: uint64, size: uint64>` ([`describe_blob_field`]) and
//! no blob byte is fetched.

use arrow_schema::{DataType, Field, Fields};

use crate::error::{Error, Result};
use crate::file::structural::datablock::{DataBlock, Offsets};
use crate::file::structural::levels::{Layers, LevelStream};
use crate::file::structural::pages::{decode_page, PageInput};
use crate::io::Storage;
use crate::proto::encodings21::BlobLayout;

/// The `(position, size)` description type of a v1 blob column.
pub fn blob_description_type() -> DataType {
    DataType::Struct(Fields::from(vec![Field::new("position", DataType::UInt64, true), Field::new("size", DataType::UInt64, true)]))
}

/// `field` with every v1 blob column in it (`large_binary` with
/// `lance-encoding:blob`) replaced by its description struct, marked
/// packed so it reads as the one column the blob owns.
pub fn describe_blob_field(field: &Field) -> Field {
    let is_blob = matches!(field.data_type(), DataType::LargeBinary) && field.metadata().contains_key("lance-encoding:blob");
    if is_blob {
        let mut md = field.metadata().clone();
        md.insert("lance-encoding:packed".to_string(), "true".to_string());
        return Field::new(field.name(), blob_description_type(), field.is_nullable()).with_metadata(md);
    }
    match field.data_type() {
        DataType::Struct(fs) if !crate::file::structural::to_arrow::is_packed_struct(field) => {
            let kids: Vec<Field> = fs.iter().map(|c| describe_blob_field(c)).collect();
            field.clone().with_data_type(DataType::Struct(Fields::from(kids)))
        }
        _ => field.clone(),
    }
}

/// Decode a blob page: the blob bytes it points at (fetched), or with
/// `describe` its `(position, size)` descriptions (128-bit values; nulls
/// keep their levels and read as zeros).
pub fn decode_blob_page(b: &BlobLayout, input: &PageInput<'_>, storage: &Storage, file_size: u64, describe: bool) -> Result<(Layers, LevelStream)> {
    let inner = b.inner_layout.as_deref().ok_or_else(|| Error::corrupt("blob layout without inner layout"))?;
    let layers = Layers::from_proto(&b.layers)?;
    let inner_input = PageInput { fixed_bits: Some(128), fsl_dim: None, wide_offsets: false, wanted: None, ..*input };
    let (_, descriptions, _) = decode_page(inner, &inner_input)?;
    let DataBlock::Fixed { bits: 128, data, len } = descriptions.values else {
        return Err(Error::corrupt("blob descriptions are not 128-bit (position, size) pairs"));
    };
    let mut rep = Vec::with_capacity(len);
    let mut def = Vec::with_capacity(len);
    let mut described: Vec<u8> = Vec::new();
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
        if describe {
            let (p, s) = if d == 0 { (pos, size) } else { (0, 0) };
            described.extend_from_slice(&p.to_le_bytes());
            described.extend_from_slice(&s.to_le_bytes());
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
    let rep = (layers.max_rep > 0).then_some(rep);
    let def = layers.layers.iter().any(|l| l.null_def.is_some() || l.empty_def.is_some()).then_some(def);
    if describe {
        let len = described.len() / 16;
        let values = DataBlock::Fixed { bits: 128, data: described, len };
        return Ok((layers, LevelStream { rep, def, values, num_rows: input.num_rows }));
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
    Ok((layers, LevelStream { rep, def, values: DataBlock::variable(offsets, bytes), num_rows: input.num_rows }))
}
