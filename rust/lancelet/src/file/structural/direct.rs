//! Full-zip pages whose entries are the Arrow values, taken without a copy.
//!
//! A full-zip page of fixed-width values without repetition and without
//! definition levels has no control words: each entry is just the value's
//! bytes (`bits_per_value / 8` of them), back to back. For a flat
//! fixed-width value, or a fixed-size list of them without item validity
//! (vectors), with no buffer compression, those bytes are exactly the
//! values buffer of the Arrow array. A top-level column made only of such
//! pages is therefore handed out as arrays over the fetched bytes (one per
//! page, as [`crate::file::pieces::ColumnPieces`] expects): no decoding,
//! no copy, no fresh memory. The fetch has already cut a page read for some
//! of its rows down to those rows' entries (`crate::file::fetch`).

use arrow_array::{make_array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_data::ArrayData;
use arrow_schema::DataType;
use bytes::Bytes;

use crate::error::{Error, Result};
use crate::file::fetch::{FetchedPage, PageRequest};
use crate::proto::encodings21::compressive_encoding::Compression as Enc;
use crate::proto::encodings21::full_zip_layout::Details;
use crate::proto::encodings21::page_layout::Layout;
use crate::proto::encodings21::{CompressiveEncoding, FullZipLayout};

/// Bytes per value of `dt` if its values are one fixed-width buffer
/// (primitive, or a fixed-size list of a primitive), with the list's
/// dimension.
fn value_width(dt: &DataType) -> Option<(usize, Option<usize>)> {
    match dt {
        DataType::FixedSizeList(item, n) if *n > 0 => {
            let w = item.data_type().primitive_width()?;
            Some((w * *n as usize, Some(*n as usize)))
        }
        dt if dt.is_primitive() => dt.primitive_width().map(|w| (w, None)),
        _ => None,
    }
}

/// Whether `enc` stores values of `width` bytes (and `dim` items) as they
/// are: flat, uncompressed, no item validity.
fn plain(enc: &CompressiveEncoding, width: usize, dim: Option<usize>) -> bool {
    match (enc.compression.as_ref(), dim) {
        (Some(Enc::Flat(f)), None) => f.data.is_none() && f.bits_per_value == 8 * width as u64,
        (Some(Enc::FixedSizeList(l)), Some(d)) => {
            !l.has_validity && l.items_per_value == d as u64 && l.values.as_deref().is_some_and(|v| plain(v, width / d, None))
        }
        _ => false,
    }
}

/// Whether a full-zip page's entries are the plain values of `dt`.
fn entries_are_values(f: &FullZipLayout, dt: &DataType) -> bool {
    let Some((width, dim)) = value_width(dt) else { return false };
    f.bits_rep == 0
        && f.bits_def == 0
        && f.details == Some(Details::BitsPerValue(8 * width as u32))
        && f.value_compression.as_ref().is_some_and(|e| plain(e, width, dim))
}

/// The arrays of a top-level column of type `dt` straight from its fetched
/// pages, if every page stores its values as plain full-zip entries; `None`
/// sends the column through the general decoder.
pub(crate) fn direct_pieces(dt: &DataType, reqs: &[PageRequest<'_>], fetched: &[FetchedPage]) -> Option<Result<Vec<ArrayRef>>> {
    let all = reqs.iter().zip(fetched).all(|(r, got)| {
        let layout = got.zip.as_ref().or(match &r.layout.layout {
            Some(Layout::FullZipLayout(f)) => Some(f),
            _ => None,
        });
        layout.is_some_and(|f| entries_are_values(f, dt)) && !got.bufs.is_empty()
    });
    if !all || reqs.is_empty() {
        return None;
    }
    let (width, _) = value_width(dt).expect("checked above");
    Some(
        reqs.iter()
            .zip(fetched)
            .map(|(r, got)| {
                let rows = match &got.zip {
                    Some(z) => z.num_items as usize,
                    None => r.page.length as usize,
                };
                array_over(dt, got.bufs[0].clone(), rows, width)
            })
            .collect(),
    )
}

/// An array of `rows` values of `dt` (each `width` bytes) over `bytes`.
fn array_over(dt: &DataType, bytes: Bytes, rows: usize, width: usize) -> Result<ArrayRef> {
    let need = rows.checked_mul(width).ok_or_else(|| Error::corrupt("full-zip page too large"))?;
    if bytes.len() < need {
        return Err(Error::corrupt(format!("full-zip page holds {} bytes, {rows} values need {need}", bytes.len())));
    }
    let bytes = bytes.slice(..need);
    let align = match dt {
        DataType::FixedSizeList(item, _) => item.data_type().primitive_width().unwrap_or(1),
        dt => dt.primitive_width().unwrap_or(1),
    };
    // Arrow wants values aligned to their width; fetched ranges usually
    // are (buffers start at 64-byte boundaries), else copy once.
    let buffer = if (bytes.as_ptr() as usize) % align.min(8) == 0 { Buffer::from(bytes) } else { Buffer::from_slice_ref(&bytes) };
    let data = match dt {
        DataType::FixedSizeList(item, n) => {
            let child =
                ArrayData::builder(item.data_type().clone()).len(rows * *n as usize).add_buffer(buffer).build().map_err(Error::corrupt_arrow)?;
            ArrayData::builder(dt.clone()).len(rows).add_child_data(child).build().map_err(Error::corrupt_arrow)?
        }
        _ => ArrayData::builder(dt.clone()).len(rows).add_buffer(buffer).build().map_err(Error::corrupt_arrow)?,
    };
    Ok(make_array(data))
}
