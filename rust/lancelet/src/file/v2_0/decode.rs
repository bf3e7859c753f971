//! Decoding 2.0 pages: an `ArrayEncoding` tree and the buffers of one page
//! in, the page's values and validity out. Nothing here does I/O; the
//! buffers were fetched by the caller (`super`), which also picks the
//! requested rows out of the decoded page.

use arrow_array::{make_array, ArrayRef};
use arrow_buffer::{bit_util, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;
use bytes::Bytes;
use prost::Message;

use crate::encoding::{bitpack, fsst, general};
use crate::error::{Error, Result};
use crate::file::source::page_encoding_any;
use crate::file::structural::datablock::{Appender, DataBlock, Offsets};
use crate::file::structural::to_arrow::{fixed_width_bits, leaf_array};
use crate::proto::encodings as pb;
use crate::proto::encodings::array_encoding::ArrayEncoding as Enc;
use crate::proto::encodings::nullable::Nullability;
use crate::proto::file::v2::column_metadata::Page;
use crate::proto::type_url;

/// Largest number of values one page (or one fixed-size-list page's items)
/// may claim. Pages without buffers (all-null, constant) are otherwise
/// unbounded by the file's size.
pub(super) const MAX_PAGE_VALUES: u64 = 1 << 31;

/// The parsed `ArrayEncoding` of a 2.0 page.
pub(super) fn array_encoding(page: &Page) -> Result<pb::ArrayEncoding> {
    let any = page_encoding_any(page)?;
    if any.type_url != type_url::ARRAY_ENCODING {
        return Err(Error::unsupported(format!("page encoding {:?} in a 2.0 file", any.type_url)));
    }
    pb::ArrayEncoding::decode(any.value.as_slice()).map_err(Error::bad_protobuf)
}

pub(super) fn page_len(page: &Page) -> Result<usize> {
    if page.length > MAX_PAGE_VALUES {
        return Err(Error::unsupported(format!("page of {} values (limit {MAX_PAGE_VALUES})", page.length)));
    }
    Ok(page.length as usize)
}

pub(super) fn as_u64s(block: &DataBlock, n: usize) -> Result<Vec<u64>> {
    match block {
        DataBlock::Fixed { bits, data, len } if *len == n && matches!(bits, 8 | 16 | 32 | 64) => {
            let w = (*bits / 8) as usize;
            Ok(data[..n * w]
                .chunks_exact(w)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b[..w].copy_from_slice(c);
                    u64::from_le_bytes(b)
                })
                .collect())
        }
        DataBlock::Fixed { bits, len, .. } => Err(Error::corrupt(format!("{len} offsets/indices of {bits} bits, expected {n} integers"))),
        _ => Err(Error::corrupt("offsets/indices are not fixed-width integers")),
    }
}

/// Values of one page plus their validity.
pub(super) struct Decoded {
    pub(super) values: DataBlock,
    pub(super) validity: Validity,
}

pub(super) enum Validity {
    AllValid,
    AllNull,
    /// LSB-first bitmap, 1 = valid, at least `len` bits.
    Bits(Vec<u8>),
}

impl Validity {
    fn and(self, other: Validity, n: usize) -> Validity {
        match (self, other) {
            (Validity::AllValid, o) | (o, Validity::AllValid) => o,
            (Validity::AllNull, _) | (_, Validity::AllNull) => Validity::AllNull,
            (Validity::Bits(a), Validity::Bits(b)) => {
                let nb = bit_util::ceil(n, 8);
                Validity::Bits(a[..nb].iter().zip(&b[..nb]).map(|(x, y)| x & y).collect())
            }
        }
    }
    fn is_valid(&self, i: usize) -> bool {
        match self {
            Validity::AllValid => true,
            Validity::AllNull => false,
            Validity::Bits(b) => bit_util::get_bit(b, i),
        }
    }
    fn into_bitmap(self, n: usize) -> Option<Vec<u8>> {
        match self {
            Validity::AllValid => None,
            Validity::AllNull => Some(vec![0u8; bit_util::ceil(n, 8)]),
            Validity::Bits(b) => Some(b),
        }
    }
}

fn sub<'a>(e: &'a Option<Box<pb::ArrayEncoding>>, what: &str) -> Result<&'a pb::ArrayEncoding> {
    e.as_deref().ok_or_else(|| Error::corrupt(format!("encoding without {what}")))
}

fn page_buf<'a>(b: &Option<pb::Buffer>, bufs: &'a [Bytes]) -> Result<&'a Bytes> {
    let b = b.as_ref().ok_or_else(|| Error::corrupt("encoding without a buffer"))?;
    if b.buffer_type != pb::buffer::BufferType::Page as i32 {
        return Err(Error::unsupported(format!("2.0 buffers stored outside the page (buffer type {})", b.buffer_type)));
    }
    bufs.get(b.buffer_index as usize)
        .ok_or_else(|| Error::corrupt(format!("buffer index {} but the page has {} buffers", b.buffer_index, bufs.len())))
}

fn bytes_for(n: usize, bits: u64) -> Result<usize> {
    (n as u64)
        .checked_mul(bits)
        .map(|b| b.div_ceil(8))
        .filter(|b| *b <= usize::MAX as u64)
        .map(|b| b as usize)
        .ok_or_else(|| Error::corrupt(format!("{n} values of {bits} bits overflow")))
}

fn value_type(dt: &DataType) -> &DataType {
    match dt {
        DataType::Dictionary(_, v) => v,
        dt => dt,
    }
}

fn is_wide(dt: &DataType) -> bool {
    matches!(value_type(dt), DataType::LargeUtf8 | DataType::LargeBinary)
}

/// Decode `n` values of an encoding tree.
pub(super) fn decode_array(enc: &pb::ArrayEncoding, bufs: &[Bytes], n: usize, dt: &DataType) -> Result<Decoded> {
    let enc = enc.array_encoding.as_ref().ok_or_else(|| Error::corrupt("empty array encoding"))?;
    let valid = |values| Ok(Decoded { values, validity: Validity::AllValid });
    match enc {
        Enc::Nullable(nullable) => match nullable.nullability.as_ref().ok_or_else(|| Error::corrupt("nullable without nullability"))? {
            Nullability::NoNulls(nn) => decode_array(sub(&nn.values, "values")?, bufs, n, dt),
            Nullability::SomeNulls(sn) => {
                let v = decode_array(sub(&sn.validity, "validity")?, bufs, n, &DataType::Boolean)?;
                let bits = match v.values {
                    DataBlock::Fixed { bits: 1, data, len } if len == n => data,
                    _ => return Err(Error::corrupt("validity is not a bitmap of the page's length")),
                };
                let values = decode_array(sub(&sn.values, "values")?, bufs, n, dt)?;
                Ok(Decoded { values: values.values, validity: values.validity.and(Validity::Bits(bits), n) })
            }
            Nullability::AllNulls(_) => Ok(Decoded { values: DataBlock::Nulls { len: n }, validity: Validity::AllNull }),
        },
        Enc::Flat(flat) => {
            let raw = page_buf(&flat.buffer, bufs)?;
            let decompressed;
            let data: &[u8] = match flat.compression.as_ref().map(|c| c.scheme.to_ascii_lowercase()) {
                None => raw,
                Some(s) if s.is_empty() || s == "none" => raw,
                Some(s) => {
                    let scheme = match s.as_str() {
                        "zstd" => general::CompressionScheme::Zstd,
                        "lz4" => general::CompressionScheme::Lz4,
                        other => return Err(Error::unsupported(format!("2.0 buffer compression {other:?}"))),
                    };
                    decompressed = general::decompress(scheme, raw)?;
                    &decompressed
                }
            };
            fixed_from(data, flat.bits_per_value, n)
        }
        Enc::FixedSizeList(fsl) => {
            let dim = fsl.dimension as usize;
            if dim == 0 {
                return Err(Error::unsupported("fixed-size lists of size 0"));
            }
            let item_dt = match value_type(dt) {
                DataType::FixedSizeList(item, _) => item.data_type().clone(),
                other => return Err(Error::corrupt(format!("fixed-size-list page for type {other}"))),
            };
            let n_items =
                n.checked_mul(dim).filter(|&x| x as u64 <= MAX_PAGE_VALUES).ok_or_else(|| Error::unsupported("too many list items in one page"))?;
            let items = decode_array(sub(&fsl.items, "items")?, bufs, n_items, &item_dt)?;
            let item_validity = items.validity.into_bitmap(n_items);
            let items = match items.values {
                // All-null items: materialize zeroes so the block has a shape.
                DataBlock::Nulls { len } if fixed_width_bits(&item_dt).is_some_and(|b| b % 8 == 0 || b == 1) => {
                    let bits = fixed_width_bits(&item_dt).expect("checked");
                    DataBlock::Fixed { bits, data: vec![0u8; bytes_for(len, bits)?], len }
                }
                v => v,
            };
            valid(DataBlock::FixedSizeList { dim, items: Box::new(items), item_validity })
        }
        Enc::Binary(bin) => decode_binary(bin, bufs, n, dt),
        Enc::Fsst(f) => {
            let inner = decode_array(sub(&f.binary, "binary")?, bufs, n, dt)?;
            let table = fsst::SymbolTable::parse(&f.symbol_table)?;
            let values = match inner.values {
                DataBlock::Variable { offsets: Offsets::I32(o), data, .. } => {
                    let (o, d) = fsst::decompress(&table, &o, &data)?;
                    DataBlock::variable(Offsets::I32(o), d)
                }
                DataBlock::Variable { offsets: Offsets::I64(o), data, .. } => {
                    let (o, d) = fsst::decompress(&table, &o, &data)?;
                    DataBlock::variable(Offsets::I64(o), d)
                }
                DataBlock::Nulls { len } => DataBlock::Nulls { len },
                _ => return Err(Error::corrupt("fsst over non-binary values")),
            };
            Ok(Decoded { values, validity: inner.validity })
        }
        Enc::Dictionary(d) => decode_dictionary(d, bufs, n, dt),
        Enc::FixedSizeBinary(fsb) => {
            let w = fsb.byte_width as usize;
            let bytes = decode_array(sub(&fsb.bytes, "bytes")?, bufs, n, &DataType::FixedSizeBinary(fsb.byte_width as i32))?;
            let data = match bytes.values {
                DataBlock::Fixed { bits, data, len } if bits == 8 * w as u64 && len == n => data,
                // Some writers describe the bytes as n·w single bytes.
                DataBlock::Fixed { bits: 8, data, len } if Some(len) == n.checked_mul(w) => data,
                _ => return Err(Error::corrupt("fixed-size-binary bytes do not match the byte width")),
            };
            let mut offsets = Offsets::new(is_wide(dt));
            for i in 1..=n {
                offsets.push_end(i * w)?;
            }
            Ok(Decoded { values: DataBlock::variable(offsets, data), validity: bytes.validity })
        }
        // A 2.0 blob column: (position u64, size u64) per row, resolved by
        // `super::read_leaf`, which fetches them.
        Enc::PackedStruct(ps) if *dt == DataType::LargeBinary => fixed_from(page_buf(&ps.buffer, bufs)?, 128, n),
        Enc::PackedStruct(ps) => {
            let DataType::Struct(fields) = dt else {
                return Err(Error::corrupt(format!("packed struct page for type {dt}")));
            };
            let mut row_bits = 0u64;
            for f in fields.iter() {
                match fixed_width_bits(f.data_type()).or_else(|| fsl_bits(f.data_type())) {
                    Some(b) if b % 8 == 0 => row_bits += b,
                    _ => return Err(Error::unsupported(format!("packed struct child {:?} of type {}", f.name(), f.data_type()))),
                }
            }
            if ps.inner.len() != fields.len() {
                return Err(Error::corrupt(format!("packed struct with {} encodings for {} fields", ps.inner.len(), fields.len())));
            }
            fixed_from(page_buf(&ps.buffer, bufs)?, row_bits, n)
        }
        Enc::Constant(c) => {
            let bits = fixed_width_bits(value_type(dt)).filter(|b| b % 8 == 0);
            match bits {
                Some(bits) if c.value.len() as u64 * 8 == bits && n as u64 * bits / 8 <= MAX_PAGE_VALUES => {
                    let one = DataBlock::Fixed { bits, data: c.value.to_vec(), len: 1 };
                    valid(one.repeat(n)?)
                }
                _ => Err(Error::unsupported(format!("2.0 constant page of {} bytes for type {dt}", c.value.len()))),
            }
        }
        Enc::Bitpacked(bp) => {
            let data = page_buf(&bp.buffer, bufs)?;
            valid(unpack_bits(data, bp.compressed_bits_per_value, bp.uncompressed_bits_per_value, bp.signed, n)?)
        }
        Enc::BitpackedForNonNeg(bp) => {
            let data = page_buf(&bp.buffer, bufs)?;
            let (w, u) = (bp.compressed_bits_per_value, bp.uncompressed_bits_per_value);
            if !matches!(u, 8 | 16 | 32 | 64) || w > u {
                return Err(Error::corrupt(format!("bitpacked_for_non_neg {w} of {u} bits")));
            }
            // FastLanes chunks of 1024 values, the last one padded to full size.
            let padded = n.div_ceil(1024) * 1024;
            let need = bytes_for(padded, w)?;
            if data.len() < need {
                return Err(Error::corrupt(format!("bitpacked buffer of {} bytes, {n} values at {w} bits need {need}", data.len())));
            }
            let mut out = Vec::new();
            bitpack::unpack_out_of_line(u as u32, w as u32, &data[..need], padded, &mut out)?;
            out.truncate(n * (u / 8) as usize);
            valid(DataBlock::Fixed { bits: u, data: out, len: n })
        }
        Enc::List(_) => Err(Error::corrupt("list encoding in a leaf column")),
        Enc::Struct(_) => Err(Error::corrupt("struct encoding in a leaf column")),
        Enc::InlineBitpacking(_)
        | Enc::OutOfLineBitpacking(_)
        | Enc::Variable(_)
        | Enc::PackedStructFixedWidthMiniBlock(_)
        | Enc::Block(_)
        | Enc::Rle(_)
        | Enc::GeneralMiniBlock(_)
        | Enc::ByteStreamSplit(_) => {
            Err(Error::unsupported(format!("{} is a 2.1 mini-block encoding, not valid as a 2.0 page encoding", enc_name(enc))))
        }
    }
}

fn enc_name(e: &Enc) -> &'static str {
    match e {
        Enc::InlineBitpacking(_) => "inline_bitpacking",
        Enc::OutOfLineBitpacking(_) => "out_of_line_bitpacking",
        Enc::Variable(_) => "variable",
        Enc::PackedStructFixedWidthMiniBlock(_) => "packed_struct_fixed_width_mini_block",
        Enc::Block(_) => "block",
        Enc::Rle(_) => "rle",
        Enc::GeneralMiniBlock(_) => "general_mini_block",
        Enc::ByteStreamSplit(_) => "byte_stream_split",
        _ => "encoding",
    }
}

fn fsl_bits(dt: &DataType) -> Option<u64> {
    match dt {
        DataType::FixedSizeList(item, n) => Some(fixed_width_bits(item.data_type())? * (*n).max(0) as u64),
        _ => None,
    }
}

/// `n` fixed-width values of `bits` bits from the front of `data`.
fn fixed_from(data: &[u8], bits: u64, n: usize) -> Result<Decoded> {
    if bits == 0 || (bits != 1 && bits % 8 != 0) {
        return Err(Error::unsupported(format!("flat values of {bits} bits")));
    }
    let need = bytes_for(n, bits)?;
    if data.len() < need {
        return Err(Error::corrupt(format!("buffer of {} bytes, {n} values of {bits} bits need {need}", data.len())));
    }
    Ok(Decoded { values: DataBlock::Fixed { bits, data: data[..need].to_vec(), len: n }, validity: Validity::AllValid })
}

/// The pre-FastLanes bit packing: values back to back, LSB first, at `w`
/// bits each; `signed` values are sign-extended from bit `w - 1`.
fn unpack_bits(data: &[u8], w: u64, u: u64, signed: bool, n: usize) -> Result<DataBlock> {
    if !matches!(u, 8 | 16 | 32 | 64) || w == 0 || w > u {
        return Err(Error::corrupt(format!("bitpacked {w} of {u} bits")));
    }
    let need = bytes_for(n, w)?;
    if data.len() < need {
        return Err(Error::corrupt(format!("bitpacked buffer of {} bytes, {n} values at {w} bits need {need}", data.len())));
    }
    let ub = (u / 8) as usize;
    let mut out = Vec::with_capacity(n * ub);
    for i in 0..n {
        let mut v = 0u64;
        let start = i as u64 * w;
        for k in 0..w {
            let bit = start + k;
            if data[(bit / 8) as usize] >> (bit % 8) & 1 == 1 {
                v |= 1 << k;
            }
        }
        if signed && w < 64 && (v >> (w - 1)) & 1 == 1 {
            v |= u64::MAX << w;
        }
        out.extend_from_slice(&v.to_le_bytes()[..ub]);
    }
    Ok(DataBlock::Fixed { bits: u, data: out, len: n })
}

fn decode_binary(bin: &pb::Binary, bufs: &[Bytes], n: usize, dt: &DataType) -> Result<Decoded> {
    let idx = decode_array(sub(&bin.indices, "indices")?, bufs, n, &DataType::UInt64)?;
    let ends = as_u64s(&idx.values, n)?;
    let adj = bin.null_adjustment;
    let mut valid = vec![0u8; bit_util::ceil(n, 8)];
    let mut any_null = false;
    let mut norm_ends = Vec::with_capacity(n);
    let mut prev = 0u64;
    for (i, &v) in ends.iter().enumerate() {
        let (ok, end) = if adj != 0 && v >= adj { (false, v - adj) } else { (true, v) };
        if end < prev {
            return Err(Error::corrupt(format!("binary value {i} ends at {end}, before the previous end {prev}")));
        }
        if ok {
            bit_util::set_bit(&mut valid, i);
        } else {
            any_null = true;
        }
        norm_ends.push(end);
        prev = end;
    }
    let total = usize::try_from(prev).map_err(|_| Error::corrupt("binary data too large"))?;
    let bytes = decode_array(sub(&bin.bytes, "bytes")?, bufs, total, &DataType::UInt8)?;
    let data = match bytes.values {
        DataBlock::Fixed { bits: 8, data, len } if len == total => data,
        DataBlock::Nulls { len: 0 } => Vec::new(),
        _ => return Err(Error::corrupt("binary bytes are not a byte buffer of the indexed length")),
    };
    let mut offsets = Offsets::new(is_wide(dt));
    for &e in &norm_ends {
        offsets.push_end(e as usize)?;
    }
    let validity = if any_null { Validity::Bits(valid) } else { Validity::AllValid };
    Ok(Decoded { values: DataBlock::variable(offsets, data), validity })
}

fn decode_dictionary(d: &pb::Dictionary, bufs: &[Bytes], n: usize, dt: &DataType) -> Result<Decoded> {
    let n_items = d.num_dictionary_items as usize;
    let (key_dt, val_dt, direct) = match dt {
        DataType::Dictionary(k, v) => (k.as_ref().clone(), v.as_ref().clone(), true),
        // Dictionary chosen by the writer for a plain column: u8 indices,
        // 0 = null, i + 1 = item i.
        other => (DataType::UInt8, other.clone(), false),
    };
    let items = decode_array(sub(&d.items, "items")?, bufs, n_items, &val_dt)?;
    if items.values.len() != n_items {
        return Err(Error::corrupt(format!("dictionary decoded {} items, expected {n_items}", items.values.len())));
    }
    let idx = decode_array(sub(&d.indices, "indices")?, bufs, n, &key_dt)?;
    let keys = if let DataBlock::Nulls { .. } = idx.values { vec![0; n] } else { as_u64s(&idx.values, n)? };
    let signed = key_dt.is_signed_integer();
    let key_bits = fixed_width_bits(&key_dt).unwrap_or(64);
    let mut acc = Appender::new(&items.values);
    let mut valid = vec![0u8; bit_util::ceil(n, 8)];
    let mut any_null = false;
    for (i, &k) in keys.iter().enumerate() {
        let item = if !idx.validity.is_valid(i) {
            None
        } else if direct {
            if signed && key_bits < 64 && (k >> (key_bits - 1)) & 1 == 1 {
                return Err(Error::corrupt(format!("negative dictionary key at row {i}")));
            }
            Some(k)
        } else {
            k.checked_sub(1)
        };
        match item {
            Some(k) => {
                let k = usize::try_from(k)
                    .ok()
                    .filter(|&k| k < n_items)
                    .ok_or_else(|| Error::corrupt(format!("dictionary key {k} out of range ({n_items} items)")))?;
                acc.append_range(&items.values, k, k + 1)?;
                if items.validity.is_valid(k) {
                    bit_util::set_bit(&mut valid, i);
                } else {
                    any_null = true;
                }
            }
            None => {
                acc.append_zeroes(1)?;
                any_null = true;
            }
        }
    }
    let validity = if any_null { Validity::Bits(valid) } else { Validity::AllValid };
    Ok(Decoded { values: acc.finish(), validity })
}

/// Split row-major packed struct values into the struct's children.
pub(super) fn packed_struct_array(values: DataBlock, nulls: Option<NullBuffer>, dt: &DataType) -> Result<ArrayRef> {
    let DataType::Struct(fields) = dt else { unreachable!("caller checked") };
    let len = values.len();
    let (row_bits, data) = match values {
        DataBlock::Fixed { bits, data, .. } => (bits, data),
        // An all-null page: children are zero-filled below.
        DataBlock::Nulls { .. } => (0, Vec::new()),
        _ => return Err(Error::corrupt("packed struct values are not fixed-width rows")),
    };
    let row = (row_bits / 8) as usize;
    let mut children = Vec::with_capacity(fields.len());
    let mut at = 0usize;
    for f in fields.iter() {
        let cdt = f.data_type();
        let bits = fixed_width_bits(cdt)
            .or_else(|| fsl_bits(cdt))
            .filter(|b| b % 8 == 0)
            .ok_or_else(|| Error::unsupported(format!("packed struct child {:?} of type {cdt}", f.name())))?;
        let w = (bits / 8) as usize;
        let mut col = Vec::with_capacity(w * len);
        if row > 0 {
            if at + w > row {
                return Err(Error::corrupt("packed struct rows narrower than their fields"));
            }
            for r in data.chunks_exact(row) {
                col.extend_from_slice(&r[at..at + w]);
            }
        } else {
            col.resize(w * len, 0);
        }
        at += w;
        let block = match cdt {
            DataType::FixedSizeList(item, dim) => {
                let ib = fixed_width_bits(item.data_type()).unwrap_or(8);
                let dim = *dim as usize;
                DataBlock::FixedSizeList { dim, items: Box::new(DataBlock::Fixed { bits: ib, data: col, len: len * dim }), item_validity: None }
            }
            _ => DataBlock::Fixed { bits, data: col, len },
        };
        children.push(leaf_array(block, None, cdt)?.to_data());
    }
    let data = ArrayDataBuilder::new(dt.clone()).len(len).child_data(children).nulls(nulls).build().map_err(Error::corrupt_arrow)?;
    Ok(make_array(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;

    #[test]
    fn old_bitpacking_sign_extends() {
        // 3-bit values 1, -1 (0b111), 3, -4 (0b100), LSB first.
        let vals: [u64; 4] = [0b001, 0b111, 0b011, 0b100];
        let mut bits = 0u64;
        for (i, v) in vals.iter().enumerate() {
            bits |= v << (3 * i);
        }
        let data = bits.to_le_bytes();
        let DataBlock::Fixed { data, .. } = unpack_bits(&data, 3, 16, true, 4).unwrap() else { panic!() };
        let got: Vec<i16> = data.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect();
        assert_eq!(got, vec![1, -1, 3, -4]);
        assert!(unpack_bits(&[0u8; 1], 3, 16, false, 4).is_err());
        assert!(unpack_bits(&[0u8; 8], 17, 16, false, 1).is_err());
    }

    fn flat(bits: u64, index: u32) -> pb::ArrayEncoding {
        pb::ArrayEncoding {
            array_encoding: Some(Enc::Flat(pb::Flat {
                bits_per_value: bits,
                buffer: Some(pb::Buffer { buffer_index: index, buffer_type: 0 }),
                compression: None,
            })),
        }
    }

    #[test]
    fn binary_null_adjustment_and_corrupt_indices() {
        // ["a", "b", None] -> ends 1, 2, 5 with adjustment 3.
        let ends: Vec<u8> = [1u64, 2, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
        let bin = pb::Binary { indices: Some(Box::new(flat(64, 0))), bytes: Some(Box::new(flat(8, 1))), null_adjustment: 3 };
        let bufs = vec![Bytes::from(ends), Bytes::from_static(b"ab")];
        let d = decode_binary(&bin, &bufs, 3, &DataType::Utf8).unwrap();
        assert!(d.validity.is_valid(0) && d.validity.is_valid(1) && !d.validity.is_valid(2));
        let a = leaf_array(d.values, None, &DataType::Utf8).unwrap();
        assert_eq!(a.as_string::<i32>().value(1), "b");
        // Decreasing ends, missing bytes, missing buffers: errors, not panics.
        let bad: Vec<u8> = [2u64, 1, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(decode_binary(&bin, &[Bytes::from(bad), Bytes::from_static(b"ab")], 3, &DataType::Utf8).is_err());
        let big: Vec<u8> = [1u64, 2, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(decode_binary(&bin, &[Bytes::from(big), Bytes::from_static(b"a")], 3, &DataType::Utf8).is_err());
        assert!(decode_binary(&bin, &[], 3, &DataType::Utf8).is_err());
    }
}
