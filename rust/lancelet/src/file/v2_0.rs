//! Lance 2.0 pages (`lance.encodings.ArrayEncoding`).
//!
//! In 2.0 every field owns a column, struct and list parents included:
//!
//! * a struct column holds `struct{}` pages without buffers (2.0 has no
//!   struct validity), its children follow in pre-order;
//! * a list column holds `list{offsets, null_offset_adjustment, num_items}`
//!   pages. The offsets are *end* offsets relative to the page's first item
//!   (no leading 0); a null list stores `end + null_offset_adjustment`. The
//!   items live in the next column(s), whose page lengths count items. Page
//!   `k` of the list column owns the items after the `num_items` of pages
//!   `0..k`;
//! * any other field (and a packed struct) is one "leaf" column whose pages
//!   each decode on their own into `page.length` values.
//!
//! A read fetches, per nesting level, the pages of every column whose rows
//! are known (one coalesced request), decodes each page whole, keeps the
//! requested rows, then descends into list items with the item ranges the
//! offsets give.

use std::collections::HashMap;
use std::ops::Range;

use arrow_array::{make_array, new_empty_array, ArrayRef};
use arrow_buffer::{bit_util, BooleanBufferBuilder, Buffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Field};
use bytes::Bytes;
use prost::Message;

use crate::encoding::{bitpack, fsst, general};
use crate::error::{Error, Result};
use crate::file::reader::{page_encoding_any, FileReader};
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
const MAX_PAGE_VALUES: u64 = 1 << 31;

/// Whether a struct field is stored packed (one column, row-major) by the
/// 2.0 writer: metadata `packed` = `true`, or else the presence of
/// `lance-encoding:packed`.
pub fn is_packed(field: &Field) -> bool {
    if !matches!(field.data_type(), DataType::Struct(_)) {
        return false;
    }
    let md = field.metadata();
    match md.get("packed") {
        Some(v) => v == "true",
        None => md.contains_key("lance-encoding:packed"),
    }
}

/// Number of columns a field owns in a 2.0 file.
pub fn columns_of(field: &Field) -> usize {
    1 + match field.data_type() {
        DataType::Struct(fs) if !is_packed(field) => fs.iter().map(|f| columns_of(f)).sum(),
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => columns_of(f),
        _ => 0,
    }
}

/// Read one top-level field of a 2.0 file over the given row ranges.
pub fn read_field(
    r: &FileReader,
    f: &Field,
    cols: Range<usize>,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    if cols.len() != columns_of(f) {
        return Err(Error::corrupt(format!(
            "field {:?} needs {} columns, given {}",
            f.name(),
            columns_of(f),
            cols.len()
        )));
    }
    read_node(r, f, cols, ranges)
}

/// A fetched page of one column.
struct PageData<'a> {
    first_row: u64,
    page: &'a Page,
    bufs: Vec<Bytes>,
}

type Fetched<'a> = HashMap<usize, Vec<PageData<'a>>>;

/// Fetch the pages of every column of this subtree whose rows are `ranges`
/// (everything not below a list), then build the array.
fn read_node(
    r: &FileReader,
    f: &Field,
    cols: Range<usize>,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    let mut direct = Vec::new();
    direct_columns(f, cols.start, &mut direct);
    let plans: Vec<Vec<(u64, &Page)>> = direct.iter().map(|&c| r.pages_for(c, ranges)).collect();
    let all: Vec<&Page> = plans.iter().flatten().map(|(_, p)| *p).collect();
    let fetched = if all.is_empty() {
        Vec::new()
    } else {
        r.fetch_pages(&all)?
    };
    let mut it = fetched.into_iter();
    let mut by_col: Fetched = HashMap::new();
    for (&c, plan) in direct.iter().zip(&plans) {
        let pages = plan
            .iter()
            .map(|&(first_row, page)| PageData {
                first_row,
                page,
                bufs: it.next().unwrap_or_default(),
            })
            .collect();
        by_col.insert(c, pages);
    }
    build(r, f, cols.start, ranges, &mut by_col)
}

/// Columns under `f` (starting at `col`) that hold data and whose rows are
/// the rows of `f`: leaves and list offsets, not list items.
fn direct_columns(f: &Field, col: usize, out: &mut Vec<usize>) {
    match f.data_type() {
        DataType::Struct(fs) if !is_packed(f) => {
            let mut next = col + 1;
            for c in fs.iter() {
                direct_columns(c, next, out);
                next += columns_of(c);
            }
        }
        _ => out.push(col),
    }
}

fn total_rows(ranges: &[Range<u64>]) -> u64 {
    ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum()
}

fn build(
    r: &FileReader,
    f: &Field,
    col: usize,
    ranges: &[Range<u64>],
    by_col: &mut Fetched,
) -> Result<ArrayRef> {
    let ctx = |e: Error| e.context(format!("column {col} ({:?})", f.name()));
    match f.data_type() {
        DataType::Struct(fs) if !is_packed(f) => {
            let len = total_rows(ranges) as usize;
            let mut next = col + 1;
            let mut children = Vec::with_capacity(fs.len());
            for c in fs.iter() {
                let a = build(r, c, next, ranges, by_col)?;
                if a.len() != len {
                    return Err(ctx(Error::corrupt(format!(
                        "child {:?} has {} rows, struct has {len}",
                        c.name(),
                        a.len()
                    ))));
                }
                children.push(a.to_data());
                next += columns_of(c);
            }
            let data = ArrayDataBuilder::new(f.data_type().clone())
                .len(len)
                .child_data(children)
                .build()?;
            Ok(make_array(data))
        }
        DataType::List(item) | DataType::LargeList(item) => {
            let pages = by_col.remove(&col).unwrap_or_default();
            let list = read_list_offsets(r, col, &pages, ranges).map_err(ctx)?;
            let n_items = list.offsets.last().copied().unwrap_or(0);
            let child = read_node(r, item, col + 1..col + columns_of(f), &list.item_ranges)?;
            if child.len() as u64 != n_items {
                return Err(ctx(Error::corrupt(format!(
                    "list items decoded {} values, offsets need {n_items}",
                    child.len()
                ))));
            }
            let offsets_buf = if matches!(f.data_type(), DataType::LargeList(_)) {
                Buffer::from_vec(list.offsets.iter().map(|&o| o as i64).collect::<Vec<_>>())
            } else {
                let o32 = list
                    .offsets
                    .iter()
                    .map(|&o| {
                        i32::try_from(o).map_err(|_| Error::corrupt("list offsets overflow i32"))
                    })
                    .collect::<Result<Vec<i32>>>()
                    .map_err(ctx)?;
                Buffer::from_vec(o32)
            };
            let data = ArrayDataBuilder::new(f.data_type().clone())
                .len(list.offsets.len() - 1)
                .add_buffer(offsets_buf)
                .add_child_data(child.to_data())
                .nulls(list.validity)
                .build()?;
            Ok(make_array(data))
        }
        DataType::Map(_, _) => Err(ctx(Error::unsupported("map columns in a 2.0 file"))),
        _ => {
            let pages = by_col.remove(&col).unwrap_or_default();
            read_leaf(r, f, &pages, ranges).map_err(ctx)
        }
    }
}

/// The parsed `ArrayEncoding` of a 2.0 page.
fn array_encoding(page: &Page) -> Result<pb::ArrayEncoding> {
    let any = page_encoding_any(page)?;
    if any.type_url != type_url::ARRAY_ENCODING {
        return Err(Error::unsupported(format!(
            "page encoding {:?} in a 2.0 file",
            any.type_url
        )));
    }
    Ok(pb::ArrayEncoding::decode(any.value.as_slice())?)
}

/// Requested rows within a page starting at `first` with `n` rows, relative
/// to the page.
fn rel_ranges(ranges: &[Range<u64>], first: u64, n: u64) -> Vec<(usize, usize)> {
    let end = first.saturating_add(n);
    ranges
        .iter()
        .filter(|r| r.end > first && r.start < end && r.start < r.end)
        .map(|r| {
            (
                (r.start.max(first) - first) as usize,
                (r.end.min(end) - first) as usize,
            )
        })
        .collect()
}

fn page_len(page: &Page) -> Result<usize> {
    if page.length > MAX_PAGE_VALUES {
        return Err(Error::unsupported(format!(
            "page of {} values (limit {MAX_PAGE_VALUES})",
            page.length
        )));
    }
    Ok(page.length as usize)
}

// ---------------------------------------------------------------------------
// Lists

struct ListRows {
    /// Output offsets, 0-based, rows + 1 entries.
    offsets: Vec<u64>,
    validity: Option<NullBuffer>,
    /// Item ranges (in item-column rows) the requested lists cover.
    item_ranges: Vec<Range<u64>>,
}

fn read_list_offsets(
    r: &FileReader,
    col: usize,
    pages: &[PageData],
    ranges: &[Range<u64>],
) -> Result<ListRows> {
    // Items before each page: the sum of `num_items` of all earlier pages.
    let mut base_of: HashMap<*const Page, u64> = HashMap::new();
    let mut base = 0u64;
    for (_, p) in r.pages_for(col, std::slice::from_ref(&(0..u64::MAX))) {
        base_of.insert(p as *const Page, base);
        let n = match array_encoding(p)?.array_encoding {
            Some(Enc::List(l)) => l.num_items,
            _ => return Err(Error::corrupt("list column page is not a list encoding")),
        };
        base = base
            .checked_add(n)
            .ok_or_else(|| Error::corrupt("list item counts overflow"))?;
    }
    let mut offsets = vec![0u64];
    let mut validity = BooleanBufferBuilder::new(0);
    let mut any_null = false;
    let mut item_ranges: Vec<Range<u64>> = Vec::new();
    for pd in pages {
        let n = page_len(pd.page)?;
        let enc = array_encoding(pd.page)?;
        let Some(Enc::List(list)) = enc.array_encoding else {
            return Err(Error::corrupt(format!(
                "page at row {}: list column page is not a list encoding",
                pd.first_row
            )));
        };
        let page_base = *base_of
            .get(&(pd.page as *const Page))
            .ok_or_else(|| Error::corrupt("list page not in its column"))?;
        let offs_enc = list
            .offsets
            .as_deref()
            .ok_or_else(|| Error::corrupt("list encoding without offsets"))?;
        let dec = decode_array(offs_enc, &pd.bufs, n, &DataType::UInt64)
            .map_err(|e| e.context(format!("page at row {}: offsets", pd.first_row)))?;
        let ends = as_u64s(&dec.values, n)?;
        let adj = list.null_offset_adjustment;
        let norm = |v: u64| -> (bool, u64) {
            if adj != 0 && v >= adj {
                (false, v % adj)
            } else {
                (true, v)
            }
        };
        for (s, e) in rel_ranges(ranges, pd.first_row, n as u64) {
            for i in s..e {
                let start = if i == 0 { 0 } else { norm(ends[i - 1]).1 };
                let (valid, end) = norm(ends[i]);
                if start > end || end > list.num_items {
                    return Err(Error::corrupt(format!(
                        "page at row {}: list {i} spans items {start}..{end} of {}",
                        pd.first_row, list.num_items
                    )));
                }
                let last = *offsets.last().expect("non-empty");
                offsets.push(last + (end - start));
                validity.append(valid);
                any_null |= !valid;
                if end > start {
                    let (gs, ge) = (page_base + start, page_base + end);
                    match item_ranges.last_mut() {
                        Some(r) if r.end == gs => r.end = ge,
                        _ => item_ranges.push(gs..ge),
                    }
                }
            }
        }
    }
    let validity = any_null.then(|| NullBuffer::new(validity.finish()));
    Ok(ListRows {
        offsets,
        validity,
        item_ranges,
    })
}

fn as_u64s(block: &DataBlock, n: usize) -> Result<Vec<u64>> {
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
        DataBlock::Fixed { bits, len, .. } => Err(Error::corrupt(format!(
            "{len} offsets/indices of {bits} bits, expected {n} integers"
        ))),
        _ => Err(Error::corrupt(
            "offsets/indices are not fixed-width integers",
        )),
    }
}

// ---------------------------------------------------------------------------
// Leaves

fn read_leaf(r: &FileReader, f: &Field, pages: &[PageData], ranges: &[Range<u64>]) -> Result<ArrayRef> {
    let dt = f.data_type();
    let mut acc: Option<Appender> = None;
    let mut validity = BooleanBufferBuilder::new(0);
    let mut any_null = false;
    for pd in pages {
        let n = page_len(pd.page)?;
        let page_ctx = |e: Error| e.context(format!("page at row {}", pd.first_row));
        let enc = array_encoding(pd.page).map_err(page_ctx)?;
        let dec = decode_array(&enc, &pd.bufs, n, dt).map_err(page_ctx)?;
        if dec.values.len() != n {
            return Err(page_ctx(Error::corrupt(format!(
                "decoded {} values, page has {n}",
                dec.values.len()
            ))));
        }
        let acc = acc.get_or_insert_with(|| Appender::new(&dec.values));
        for (s, e) in rel_ranges(ranges, pd.first_row, n as u64) {
            acc.append_range(&dec.values, s, e).map_err(page_ctx)?;
            match &dec.validity {
                Validity::AllValid => validity.append_n(e - s, true),
                Validity::AllNull => {
                    validity.append_n(e - s, false);
                    any_null = true;
                }
                Validity::Bits(b) => {
                    validity.append_packed_range(s..e, b);
                    any_null = true;
                }
            }
        }
    }
    let Some(acc) = acc else {
        return Ok(new_empty_array(dt));
    };
    let values = acc.finish();
    let nulls = any_null.then(|| NullBuffer::new(validity.finish()));
    if let DataType::Struct(_) = dt {
        return packed_struct_array(values, nulls, dt);
    }
    if let (DataType::LargeBinary, DataBlock::Fixed { bits: 128, data, len }) = (dt, &values) {
        return blob_array(r, data, *len, nulls);
    }
    leaf_array(values, nulls, dt)
}

/// Fetch the values of a 2.0 blob column from their (position, size)
/// descriptions; `size == 0` with a non-zero position marks a null.
fn blob_array(r: &FileReader, desc: &[u8], len: usize, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    let mut ranges = Vec::new();
    let mut valid = BooleanBufferBuilder::new(len);
    let mut any_null = false;
    for i in 0..len {
        let pos = u64::from_le_bytes(desc[16 * i..16 * i + 8].try_into().unwrap());
        let size = u64::from_le_bytes(desc[16 * i + 8..16 * i + 16].try_into().unwrap());
        let is_null = (size == 0 && pos != 0) || nulls.as_ref().is_some_and(|n| n.is_null(i));
        valid.append(!is_null);
        any_null |= is_null;
        if !is_null && size > 0 {
            match pos.checked_add(size) {
                Some(end) if end <= r.size() => ranges.push(pos..end),
                _ => return Err(Error::corrupt(format!("blob {i} at {pos}+{size} lies outside the file"))),
            }
        } else {
            ranges.push(0..0);
        }
    }
    let wanted: Vec<Range<u64>> = ranges.iter().filter(|r| !r.is_empty()).cloned().collect();
    let mut fetched = r.storage().read_ranges(&wanted)?.into_iter();
    let mut offsets = Offsets::new(true);
    let mut data = Vec::new();
    for rg in &ranges {
        if !rg.is_empty() {
            data.extend_from_slice(&fetched.next().expect("one per range"));
        }
        offsets.push_end(data.len())?;
    }
    let nulls = any_null.then(|| NullBuffer::new(valid.finish()));
    leaf_array(DataBlock::variable(offsets, data), nulls, &DataType::LargeBinary)
}

/// Values of one page plus their validity.
struct Decoded {
    values: DataBlock,
    validity: Validity,
}

enum Validity {
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
    e.as_deref()
        .ok_or_else(|| Error::corrupt(format!("encoding without {what}")))
}

fn page_buf<'a>(b: &Option<pb::Buffer>, bufs: &'a [Bytes]) -> Result<&'a Bytes> {
    let b = b
        .as_ref()
        .ok_or_else(|| Error::corrupt("encoding without a buffer"))?;
    if b.buffer_type != pb::buffer::BufferType::Page as i32 {
        return Err(Error::unsupported(format!(
            "2.0 buffers stored outside the page (buffer type {})",
            b.buffer_type
        )));
    }
    bufs.get(b.buffer_index as usize).ok_or_else(|| {
        Error::corrupt(format!(
            "buffer index {} but the page has {} buffers",
            b.buffer_index,
            bufs.len()
        ))
    })
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
fn decode_array(
    enc: &pb::ArrayEncoding,
    bufs: &[Bytes],
    n: usize,
    dt: &DataType,
) -> Result<Decoded> {
    let enc = enc
        .array_encoding
        .as_ref()
        .ok_or_else(|| Error::corrupt("empty array encoding"))?;
    let valid = |values| {
        Ok(Decoded {
            values,
            validity: Validity::AllValid,
        })
    };
    match enc {
        Enc::Nullable(nullable) => match nullable
            .nullability
            .as_ref()
            .ok_or_else(|| Error::corrupt("nullable without nullability"))?
        {
            Nullability::NoNulls(nn) => decode_array(sub(&nn.values, "values")?, bufs, n, dt),
            Nullability::SomeNulls(sn) => {
                let v = decode_array(sub(&sn.validity, "validity")?, bufs, n, &DataType::Boolean)?;
                let bits = match v.values {
                    DataBlock::Fixed { bits: 1, data, len } if len == n => data,
                    _ => {
                        return Err(Error::corrupt(
                            "validity is not a bitmap of the page's length",
                        ))
                    }
                };
                let values = decode_array(sub(&sn.values, "values")?, bufs, n, dt)?;
                Ok(Decoded {
                    values: values.values,
                    validity: values.validity.and(Validity::Bits(bits), n),
                })
            }
            Nullability::AllNulls(_) => Ok(Decoded {
                values: DataBlock::Nulls { len: n },
                validity: Validity::AllNull,
            }),
        },
        Enc::Flat(flat) => {
            let raw = page_buf(&flat.buffer, bufs)?;
            let decompressed;
            let data: &[u8] = match flat
                .compression
                .as_ref()
                .map(|c| c.scheme.to_ascii_lowercase())
            {
                None => raw,
                Some(s) if s.is_empty() || s == "none" => raw,
                Some(s) => {
                    let scheme = match s.as_str() {
                        "zstd" => general::CompressionScheme::Zstd,
                        "lz4" => general::CompressionScheme::Lz4,
                        other => {
                            return Err(Error::unsupported(format!(
                                "2.0 buffer compression {other:?}"
                            )))
                        }
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
                other => {
                    return Err(Error::corrupt(format!(
                        "fixed-size-list page for type {other}"
                    )))
                }
            };
            let n_items = n
                .checked_mul(dim)
                .filter(|&x| x as u64 <= MAX_PAGE_VALUES)
                .ok_or_else(|| Error::unsupported("too many list items in one page"))?;
            let items = decode_array(sub(&fsl.items, "items")?, bufs, n_items, &item_dt)?;
            let item_validity = items.validity.into_bitmap(n_items);
            let items = match items.values {
                // All-null items: materialize zeroes so the block has a shape.
                DataBlock::Nulls { len }
                    if fixed_width_bits(&item_dt).is_some_and(|b| b % 8 == 0 || b == 1) =>
                {
                    let bits = fixed_width_bits(&item_dt).expect("checked");
                    DataBlock::Fixed {
                        bits,
                        data: vec![0u8; bytes_for(len, bits)?],
                        len,
                    }
                }
                v => v,
            };
            valid(DataBlock::FixedSizeList {
                dim,
                items: Box::new(items),
                item_validity,
            })
        }
        Enc::Binary(bin) => decode_binary(bin, bufs, n, dt),
        Enc::Fsst(f) => {
            let inner = decode_array(sub(&f.binary, "binary")?, bufs, n, dt)?;
            let table = fsst::SymbolTable::parse(&f.symbol_table)?;
            let values = match inner.values {
                DataBlock::Variable {
                    offsets: Offsets::I32(o),
                    data,
                    ..
                } => {
                    let (o, d) = fsst::decompress(&table, &o, &data)?;
                    DataBlock::variable(Offsets::I32(o), d)
                }
                DataBlock::Variable {
                    offsets: Offsets::I64(o),
                    data,
                    ..
                } => {
                    let (o, d) = fsst::decompress(&table, &o, &data)?;
                    DataBlock::variable(Offsets::I64(o), d)
                }
                DataBlock::Nulls { len } => DataBlock::Nulls { len },
                _ => return Err(Error::corrupt("fsst over non-binary values")),
            };
            Ok(Decoded {
                values,
                validity: inner.validity,
            })
        }
        Enc::Dictionary(d) => decode_dictionary(d, bufs, n, dt),
        Enc::FixedSizeBinary(fsb) => {
            let w = fsb.byte_width as usize;
            let bytes = decode_array(
                sub(&fsb.bytes, "bytes")?,
                bufs,
                n,
                &DataType::FixedSizeBinary(fsb.byte_width as i32),
            )?;
            let data = match bytes.values {
                DataBlock::Fixed { bits, data, len } if bits == 8 * w as u64 && len == n => data,
                // Some writers describe the bytes as n·w single bytes.
                DataBlock::Fixed { bits: 8, data, len } if Some(len) == n.checked_mul(w) => data,
                _ => {
                    return Err(Error::corrupt(
                        "fixed-size-binary bytes do not match the byte width",
                    ))
                }
            };
            let mut offsets = Offsets::new(is_wide(dt));
            for i in 1..=n {
                offsets.push_end(i * w)?;
            }
            Ok(Decoded {
                values: DataBlock::variable(offsets, data),
                validity: bytes.validity,
            })
        }
        // A 2.0 blob column: (position u64, size u64) per row, resolved by
        // `read_leaf`, which can reach the file.
        Enc::PackedStruct(ps) if *dt == DataType::LargeBinary => fixed_from(page_buf(&ps.buffer, bufs)?, 128, n),
        Enc::PackedStruct(ps) => {
            let DataType::Struct(fields) = dt else {
                return Err(Error::corrupt(format!("packed struct page for type {dt}")));
            };
            let mut row_bits = 0u64;
            for f in fields.iter() {
                match fixed_width_bits(f.data_type()).or_else(|| fsl_bits(f.data_type())) {
                    Some(b) if b % 8 == 0 => row_bits += b,
                    _ => {
                        return Err(Error::unsupported(format!(
                            "packed struct child {:?} of type {}",
                            f.name(),
                            f.data_type()
                        )))
                    }
                }
            }
            if ps.inner.len() != fields.len() {
                return Err(Error::corrupt(format!(
                    "packed struct with {} encodings for {} fields",
                    ps.inner.len(),
                    fields.len()
                )));
            }
            fixed_from(page_buf(&ps.buffer, bufs)?, row_bits, n)
        }
        Enc::Constant(c) => {
            let bits = fixed_width_bits(value_type(dt)).filter(|b| b % 8 == 0);
            match bits {
                Some(bits)
                    if c.value.len() as u64 * 8 == bits
                        && n as u64 * bits / 8 <= MAX_PAGE_VALUES =>
                {
                    let one = DataBlock::Fixed {
                        bits,
                        data: c.value.to_vec(),
                        len: 1,
                    };
                    valid(one.repeat(n)?)
                }
                _ => Err(Error::unsupported(format!(
                    "2.0 constant page of {} bytes for type {dt}",
                    c.value.len()
                ))),
            }
        }
        Enc::Bitpacked(bp) => {
            let data = page_buf(&bp.buffer, bufs)?;
            valid(unpack_bits(
                data,
                bp.compressed_bits_per_value,
                bp.uncompressed_bits_per_value,
                bp.signed,
                n,
            )?)
        }
        Enc::BitpackedForNonNeg(bp) => {
            let data = page_buf(&bp.buffer, bufs)?;
            let (w, u) = (bp.compressed_bits_per_value, bp.uncompressed_bits_per_value);
            if !matches!(u, 8 | 16 | 32 | 64) || w > u {
                return Err(Error::corrupt(format!(
                    "bitpacked_for_non_neg {w} of {u} bits"
                )));
            }
            // FastLanes chunks of 1024 values, the last one padded to full size.
            let padded = n.div_ceil(1024) * 1024;
            let need = bytes_for(padded, w)?;
            if data.len() < need {
                return Err(Error::corrupt(format!(
                    "bitpacked buffer of {} bytes, {n} values at {w} bits need {need}",
                    data.len()
                )));
            }
            let mut out = Vec::new();
            bitpack::unpack_out_of_line(u as u32, w as u32, &data[..need], padded, &mut out)?;
            out.truncate(n * (u / 8) as usize);
            valid(DataBlock::Fixed {
                bits: u,
                data: out,
                len: n,
            })
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
        | Enc::ByteStreamSplit(_) => Err(Error::unsupported(format!(
            "{} is a 2.1 mini-block encoding, not valid as a 2.0 page encoding",
            enc_name(enc)
        ))),
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
        DataType::FixedSizeList(item, n) => {
            Some(fixed_width_bits(item.data_type())? * (*n).max(0) as u64)
        }
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
        return Err(Error::corrupt(format!(
            "buffer of {} bytes, {n} values of {bits} bits need {need}",
            data.len()
        )));
    }
    Ok(Decoded {
        values: DataBlock::Fixed {
            bits,
            data: data[..need].to_vec(),
            len: n,
        },
        validity: Validity::AllValid,
    })
}

/// The pre-FastLanes bit packing: values back to back, LSB first, at `w`
/// bits each; `signed` values are sign-extended from bit `w - 1`.
fn unpack_bits(data: &[u8], w: u64, u: u64, signed: bool, n: usize) -> Result<DataBlock> {
    if !matches!(u, 8 | 16 | 32 | 64) || w == 0 || w > u {
        return Err(Error::corrupt(format!("bitpacked {w} of {u} bits")));
    }
    let need = bytes_for(n, w)?;
    if data.len() < need {
        return Err(Error::corrupt(format!(
            "bitpacked buffer of {} bytes, {n} values at {w} bits need {need}",
            data.len()
        )));
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
    Ok(DataBlock::Fixed {
        bits: u,
        data: out,
        len: n,
    })
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
        let (ok, end) = if adj != 0 && v >= adj {
            (false, v - adj)
        } else {
            (true, v)
        };
        if end < prev {
            return Err(Error::corrupt(format!(
                "binary value {i} ends at {end}, before the previous end {prev}"
            )));
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
        _ => {
            return Err(Error::corrupt(
                "binary bytes are not a byte buffer of the indexed length",
            ))
        }
    };
    let mut offsets = Offsets::new(is_wide(dt));
    for &e in &norm_ends {
        offsets.push_end(e as usize)?;
    }
    let validity = if any_null {
        Validity::Bits(valid)
    } else {
        Validity::AllValid
    };
    Ok(Decoded {
        values: DataBlock::variable(offsets, data),
        validity,
    })
}

fn decode_dictionary(
    d: &pb::Dictionary,
    bufs: &[Bytes],
    n: usize,
    dt: &DataType,
) -> Result<Decoded> {
    let n_items = d.num_dictionary_items as usize;
    let (key_dt, val_dt, direct) = match dt {
        DataType::Dictionary(k, v) => (k.as_ref().clone(), v.as_ref().clone(), true),
        // Dictionary chosen by the writer for a plain column: u8 indices,
        // 0 = null, i + 1 = item i.
        other => (DataType::UInt8, other.clone(), false),
    };
    let items = decode_array(sub(&d.items, "items")?, bufs, n_items, &val_dt)?;
    if items.values.len() != n_items {
        return Err(Error::corrupt(format!(
            "dictionary decoded {} items, expected {n_items}",
            items.values.len()
        )));
    }
    let idx = decode_array(sub(&d.indices, "indices")?, bufs, n, &key_dt)?;
    let keys = if let DataBlock::Nulls { .. } = idx.values {
        vec![0; n]
    } else {
        as_u64s(&idx.values, n)?
    };
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
                return Err(Error::corrupt(format!(
                    "negative dictionary key at row {i}"
                )));
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
                    .ok_or_else(|| {
                        Error::corrupt(format!("dictionary key {k} out of range ({n_items} items)"))
                    })?;
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
    let validity = if any_null {
        Validity::Bits(valid)
    } else {
        Validity::AllValid
    };
    Ok(Decoded {
        values: acc.finish(),
        validity,
    })
}

/// Split row-major packed struct values into the struct's children.
fn packed_struct_array(
    values: DataBlock,
    nulls: Option<NullBuffer>,
    dt: &DataType,
) -> Result<ArrayRef> {
    let DataType::Struct(fields) = dt else {
        unreachable!("caller checked")
    };
    let len = values.len();
    let (row_bits, data) = match values {
        DataBlock::Fixed { bits, data, .. } => (bits, data),
        // An all-null page: children are zero-filled below.
        DataBlock::Nulls { .. } => (0, Vec::new()),
        _ => {
            return Err(Error::corrupt(
                "packed struct values are not fixed-width rows",
            ))
        }
    };
    let row = (row_bits / 8) as usize;
    let mut children = Vec::with_capacity(fields.len());
    let mut at = 0usize;
    for f in fields.iter() {
        let cdt = f.data_type();
        let bits = fixed_width_bits(cdt)
            .or_else(|| fsl_bits(cdt))
            .filter(|b| b % 8 == 0)
            .ok_or_else(|| {
                Error::unsupported(format!("packed struct child {:?} of type {cdt}", f.name()))
            })?;
        let w = (bits / 8) as usize;
        let mut col = Vec::with_capacity(w * len);
        if row > 0 {
            if at + w > row {
                return Err(Error::corrupt(
                    "packed struct rows narrower than their fields",
                ));
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
                DataBlock::FixedSizeList {
                    dim,
                    items: Box::new(DataBlock::Fixed {
                        bits: ib,
                        data: col,
                        len: len * dim,
                    }),
                    item_validity: None,
                }
            }
            _ => DataBlock::Fixed {
                bits,
                data: col,
                len,
            },
        };
        children.push(leaf_array(block, None, cdt)?.to_data());
    }
    let data = ArrayDataBuilder::new(dt.clone())
        .len(len)
        .child_data(children)
        .nulls(nulls)
        .build()?;
    Ok(make_array(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type};
    use arrow_array::Array;

    fn fixture() -> Option<String> {
        Some(crate::testdata::pylance14_data_file("v2_0_basic").display().to_string())
    }

    #[test]
    fn reads_pylance_2_0_fixture() {
        let Some(path) = fixture() else { return };
        let r = FileReader::open(&path).unwrap();
        assert_eq!(r.num_rows(), 6);
        let all = r.projection(None).unwrap();
        let b = r.read_range(&all, 0..6).unwrap();
        let i32s = b.column_by_name("i32").unwrap().as_primitive::<Int32Type>();
        assert_eq!(i32s.value(0), 1);
        assert!(i32s.is_null(1));
        let lst = b.column_by_name("lst").unwrap().as_list::<i32>();
        assert_eq!(
            lst.value(0).as_primitive::<Int64Type>().values().to_vec(),
            vec![1, 2]
        );
        assert_eq!(lst.value(1).len(), 0);
        let s = b.column_by_name("s").unwrap().as_string::<i32>();
        assert_eq!(s.value(0), "a");
        // Ranges and take agree with the full read.
        let part = r.read_ranges(&all, &[1..2, 4..6]).unwrap();
        for (c, full) in part.columns().iter().zip(b.columns()) {
            let expect = arrow_select::concat::concat(&[
                full.slice(1, 1).as_ref(),
                full.slice(4, 2).as_ref(),
            ])
            .unwrap();
            assert_eq!(c.to_data(), expect.to_data());
        }
    }

    #[test]
    fn old_bitpacking_sign_extends() {
        // 3-bit values 1, -1 (0b111), 3, -4 (0b100), LSB first.
        let vals: [u64; 4] = [0b001, 0b111, 0b011, 0b100];
        let mut bits = 0u64;
        for (i, v) in vals.iter().enumerate() {
            bits |= v << (3 * i);
        }
        let data = bits.to_le_bytes();
        let DataBlock::Fixed { data, .. } = unpack_bits(&data, 3, 16, true, 4).unwrap() else {
            panic!()
        };
        let got: Vec<i16> = data
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(got, vec![1, -1, 3, -4]);
        assert!(unpack_bits(&[0u8; 1], 3, 16, false, 4).is_err());
        assert!(unpack_bits(&[0u8; 8], 17, 16, false, 1).is_err());
    }

    fn flat(bits: u64, index: u32) -> pb::ArrayEncoding {
        pb::ArrayEncoding {
            array_encoding: Some(Enc::Flat(pb::Flat {
                bits_per_value: bits,
                buffer: Some(pb::Buffer {
                    buffer_index: index,
                    buffer_type: 0,
                }),
                compression: None,
            })),
        }
    }

    #[test]
    fn binary_null_adjustment_and_corrupt_indices() {
        // ["a", "b", None] -> ends 1, 2, 5 with adjustment 3.
        let ends: Vec<u8> = [1u64, 2, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
        let bin = pb::Binary {
            indices: Some(Box::new(flat(64, 0))),
            bytes: Some(Box::new(flat(8, 1))),
            null_adjustment: 3,
        };
        let bufs = vec![Bytes::from(ends), Bytes::from_static(b"ab")];
        let d = decode_binary(&bin, &bufs, 3, &DataType::Utf8).unwrap();
        assert!(d.validity.is_valid(0) && d.validity.is_valid(1) && !d.validity.is_valid(2));
        let a = leaf_array(d.values, None, &DataType::Utf8).unwrap();
        assert_eq!(a.as_string::<i32>().value(1), "b");
        // Decreasing ends, missing bytes, missing buffers: errors, not panics.
        let bad: Vec<u8> = [2u64, 1, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(decode_binary(
            &bin,
            &[Bytes::from(bad), Bytes::from_static(b"ab")],
            3,
            &DataType::Utf8
        )
        .is_err());
        let big: Vec<u8> = [1u64, 2, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(decode_binary(
            &bin,
            &[Bytes::from(big), Bytes::from_static(b"a")],
            3,
            &DataType::Utf8
        )
        .is_err());
        assert!(decode_binary(&bin, &[], 3, &DataType::Utf8).is_err());
    }
}
