//! The `.arrow` deletion file, decoded by its known shape.
//!
//! pylance writes an Arrow IPC **file** holding one non-null integer column
//! (`row_id`, UInt32) in one record batch:
//!
//! ```text
//! "ARROW1" 00 00
//! encapsulated messages: [FF FF FF FF] i32 LE metadata length, flatbuffer
//!                        Message, padding; then the message body
//! Footer flatbuffer (schema + blocks of the record batches)
//! i32 LE footer length   "ARROW1"
//! ```
//!
//! A record batch body holds a validity buffer and a values buffer. With
//! body compression (pylance declares ZSTD) each buffer starts with an i64
//! LE uncompressed length, `-1` meaning "stored raw".
//!
//! Every size in the file is checked before it is used: blocks and buffers
//! must lie inside the file, a batch may not claim more rows than the
//! fragment has, and a compressed buffer is decompressed as a stream into
//! memory that grows with the bytes really produced, never beyond what the
//! batch's row count needs. So a corrupt file can cost at most the memory
//! its fragment's deletions could take, and only when its bytes really
//! decompress to that much. The flatbuffers are read with the verifying
//! accessors of `arrow_ipc`, which reject out-of-range tables.

use std::io::Read;

use arrow_ipc::{CompressionType, Endianness, Type};
use roaring::RoaringBitmap;

use crate::corrupt;
use crate::error::Result;

const MAGIC: &[u8; 6] = b"ARROW1";
/// Leading magic plus padding.
const HEAD: usize = 8;
/// Trailing footer length plus magic.
const TAIL: usize = 10;
const CONTINUATION: [u8; 4] = [0xff; 4];
/// Output is produced in steps of this size while decompressing.
const STEP: usize = 64 * 1024;

/// Decode a `.arrow` deletion file of a fragment with `physical_rows` rows
/// into the set of deleted offsets (each checked to be below
/// `physical_rows`). Errors carry no path.
pub fn decode_arrow(bytes: &[u8], physical_rows: u64) -> Result<RoaringBitmap> {
    let n = bytes.len();
    if n < HEAD + TAIL || &bytes[..6] != MAGIC || &bytes[n - 6..] != MAGIC {
        return Err(corrupt!("deletion file is not an Arrow IPC file (no ARROW1 magic at both ends; {n} bytes)"));
    }
    let footer_len = i32::from_le_bytes(bytes[n - TAIL..n - 6].try_into().expect("4 bytes"));
    let footer_start = usize::try_from(footer_len)
        .ok()
        .and_then(|l| (n - TAIL).checked_sub(l))
        .filter(|&s| s >= HEAD && footer_len > 0)
        .ok_or_else(|| corrupt!("deletion file footer length {footer_len} does not fit in the {n}-byte file"))?;
    let footer = arrow_ipc::root_as_footer(&bytes[footer_start..n - TAIL])
        .map_err(|e| corrupt!("deletion file footer is not a valid flatbuffer: {e}").with_source(e))?;
    let (width, signed) = value_type(footer.schema())?;
    if footer.dictionaries().is_some_and(|d| !d.is_empty()) {
        return Err(corrupt!("deletion file has dictionary batches"));
    }
    // The stream part of the file: record batches must lie in it.
    let stream = &bytes[..footer_start];
    let row_limit = physical_rows.min(1 << 32);
    let mut total = 0u64;
    let mut set = RoaringBitmap::new();
    for block in footer.recordBatches().iter().flatten() {
        let batch = read_block(stream, block.offset(), block.metaDataLength(), block.bodyLength())?;
        total = total.saturating_add(batch.rows);
        if total > row_limit {
            return Err(corrupt!("deletion file lists {total} or more rows, but the fragment has only {physical_rows} rows"));
        }
        let values = batch.values(width)?;
        for chunk in values.chunks_exact(width) {
            let v = match width {
                4 if signed => i64::from(i32::from_le_bytes(chunk.try_into().expect("4 bytes"))),
                4 => i64::from(u32::from_le_bytes(chunk.try_into().expect("4 bytes"))),
                _ if signed => i64::from_le_bytes(chunk.try_into().expect("8 bytes")),
                _ => i64::try_from(u64::from_le_bytes(chunk.try_into().expect("8 bytes"))).unwrap_or(i64::MAX),
            };
            // Offsets are below 2^32 (a row address keeps 32 bits for them).
            if v < 0 || v as u64 >= row_limit {
                return Err(corrupt!("deletion file deletes row {v}, but the fragment has only {physical_rows} rows"));
            }
            set.insert(v as u32);
        }
    }
    Ok(set)
}

/// Byte width and signedness of the one integer column the schema must
/// declare (pylance writes UInt32; other integer widths are accepted).
fn value_type(schema: Option<arrow_ipc::Schema<'_>>) -> Result<(usize, bool)> {
    let schema = schema.ok_or_else(|| corrupt!("deletion file footer has no schema"))?;
    if schema.endianness() != Endianness::Little {
        return Err(corrupt!("deletion file is big-endian"));
    }
    let fields = schema.fields().map(|f| f.len()).unwrap_or(0);
    if fields != 1 {
        return Err(corrupt!("deletion file has {fields} columns, expected one (row_id)"));
    }
    let field = schema.fields().expect("one field").get(0);
    let int = (field.type_type() == Type::Int).then(|| field.type_as_int()).flatten();
    match int.map(|i| (i.bitWidth(), i.is_signed())) {
        Some((32, signed)) => Ok((4, signed)),
        Some((64, signed)) => Ok((8, signed)),
        _ => Err(corrupt!("deletion file column has type {:?}, expected UInt32", field.type_type())),
    }
}

/// One record batch's row count and its values buffer, still encoded.
struct Batch<'a> {
    rows: u64,
    values: &'a [u8],
    codec: Option<CompressionType>,
}

/// Checked `start + len` within `limit`, as a range.
fn span(start: i64, len: i64, limit: usize, what: &str) -> Result<std::ops::Range<usize>> {
    let s = usize::try_from(start).ok();
    let l = usize::try_from(len).ok();
    match (s, l) {
        (Some(s), Some(l)) if s.checked_add(l).is_some_and(|e| e <= limit) => Ok(s..s + l),
        _ => Err(corrupt!("deletion file {what} at {start} ({len} bytes) lies outside its {limit} bytes")),
    }
}

fn read_block(stream: &[u8], offset: i64, meta_len: i32, body_len: i64) -> Result<Batch<'_>> {
    let meta = span(offset, i64::from(meta_len), stream.len(), "record batch metadata")?;
    let body = span((meta.end) as i64, body_len, stream.len(), "record batch body")?;
    let m = &stream[meta];
    // `FF FF FF FF len` (current) or `len` (before Arrow 0.15).
    let (len_at, fb_at) = if m.get(..4) == Some(&CONTINUATION[..]) { (4usize, 8usize) } else { (0, 4) };
    let fb_len = m.get(len_at..len_at + 4).map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")));
    let fb = fb_len
        .and_then(|l| usize::try_from(l).ok())
        .and_then(|l| m.get(fb_at..fb_at.checked_add(l)?))
        .ok_or_else(|| corrupt!("deletion file record batch metadata length {fb_len:?} exceeds its block"))?;
    let message = arrow_ipc::root_as_message(fb).map_err(|e| corrupt!("deletion file message is not a valid flatbuffer: {e}").with_source(e))?;
    let rb = message.header_as_record_batch().ok_or_else(|| corrupt!("deletion file block is not a record batch"))?;
    let rows = u64::try_from(rb.length()).map_err(|_| corrupt!("deletion file batch has {} rows", rb.length()))?;
    let nodes = rb.nodes().ok_or_else(|| corrupt!("deletion file batch has no field nodes"))?;
    if nodes.len() != 1 || nodes.get(0).length() != rb.length() {
        return Err(corrupt!("deletion file batch of {rows} rows does not hold one column of {rows} values"));
    }
    if nodes.get(0).null_count() != 0 {
        return Err(corrupt!("deletion file row_id column has nulls"));
    }
    let buffers = rb.buffers().ok_or_else(|| corrupt!("deletion file batch has no buffers"))?;
    if buffers.len() != 2 {
        return Err(corrupt!("deletion file batch has {} buffers, expected 2 (validity, values)", buffers.len()));
    }
    let body = &stream[body];
    let b = buffers.get(1);
    let values = &body[span(b.offset(), b.length(), body.len(), "values buffer")?];
    span(buffers.get(0).offset(), buffers.get(0).length(), body.len(), "validity buffer")?;
    let codec = rb.compression().map(|c| c.codec());
    Ok(Batch { rows, values, codec })
}

impl Batch<'_> {
    /// The values buffer, decompressed when the body is compressed; exactly
    /// `rows * width` bytes.
    fn values(&self, width: usize) -> Result<Vec<u8>> {
        let want = usize::try_from(self.rows)
            .ok()
            .and_then(|r| r.checked_mul(width))
            .ok_or_else(|| corrupt!("deletion file batch of {} rows is too large", self.rows))?;
        let raw = match self.codec {
            None => self.values,
            Some(codec) => {
                if self.values.is_empty() && want == 0 {
                    return Ok(Vec::new());
                }
                let Some((prefix, data)) = self.values.split_first_chunk::<8>() else {
                    return Err(corrupt!("deletion file compressed buffer of {} bytes has no length prefix", self.values.len()));
                };
                match i64::from_le_bytes(*prefix) {
                    -1 => data,
                    0 if want == 0 => return Ok(Vec::new()),
                    claimed => {
                        // Arrow pads buffers to 64 bytes at most.
                        let limit = want.next_multiple_of(64);
                        if usize::try_from(claimed).map_or(true, |c| c < want || c > limit) {
                            return Err(corrupt!(
                                "deletion file values buffer claims {claimed} bytes uncompressed, but {} rows need {want}",
                                self.rows
                            ));
                        }
                        let out = decompress(codec, data, claimed as usize)?;
                        if out.len() != claimed as usize {
                            return Err(corrupt!("deletion file values buffer decompressed to {} bytes, its prefix says {claimed}", out.len()));
                        }
                        return Ok(out);
                    }
                }
            }
        };
        if raw.len() < want {
            return Err(corrupt!("deletion file values buffer has {} bytes, {} rows need {want}", raw.len(), self.rows));
        }
        Ok(raw[..want].to_vec())
    }
}

/// Decompress `data` as a stream, never producing more than `limit` bytes;
/// memory grows with the output actually produced.
fn decompress(codec: CompressionType, data: &[u8], limit: usize) -> Result<Vec<u8>> {
    let reader: Box<dyn Read + '_> = match codec {
        CompressionType::ZSTD => {
            Box::new(zstd::stream::read::Decoder::with_buffer(data).map_err(|e| corrupt!("deletion file zstd stream: {e}").with_source(e))?)
        }
        CompressionType::LZ4_FRAME => Box::new(lz4_flex::frame::FrameDecoder::new(data)),
        other => return Err(corrupt!("deletion file uses unknown compression codec {}", other.0)),
    };
    let mut out = Vec::new();
    // One byte past the limit tells an over-long stream from an exact one.
    let mut limited = reader.take(limit as u64 + 1);
    loop {
        let start = out.len();
        out.resize(start + STEP.min(limit + 1 - start).max(1), 0);
        let got = limited.read(&mut out[start..]).map_err(|e| corrupt!("deletion file compressed buffer: {e}").with_source(e))?;
        out.truncate(start + got);
        if got == 0 || out.len() > limit {
            break;
        }
    }
    if out.len() > limit {
        return Err(corrupt!("deletion file compressed buffer decompresses to more than {limit} bytes"));
    }
    Ok(out)
}
