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
//!
//! This module plans and fetches: which pages, which rows of them, and
//! the page buffers and blob values, all through the file's
//! [`FetchRanges`] (it never sees the `FileReader`, which calls in here).
//! `decode` turns one page's fetched buffers into values without I/O.

use std::collections::HashMap;
use std::ops::Range;

use arrow_array::{make_array, new_empty_array, ArrayRef};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Field};
use bytes::Bytes;

use crate::error::{Error, Result};
use crate::file::source::{pages_overlapping, FetchRanges};
use crate::file::structural::datablock::{Appender, DataBlock, Offsets};
use crate::file::structural::to_arrow::leaf_array;
use crate::proto::encodings::array_encoding::ArrayEncoding as Enc;
use crate::proto::file::v2::column_metadata::Page;
use crate::proto::file::v2::ColumnMetadata;

mod decode;

use decode::{array_encoding, as_u64s, decode_array, packed_struct_array, page_len, Validity};

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
///
/// `columns` is the file's column metadata (the field owns `cols` of
/// them); `bytes` fetches page buffers and blob values from the file.
pub(crate) fn read_field(
    bytes: &dyn FetchRanges,
    columns: &[ColumnMetadata],
    f: &Field,
    cols: Range<usize>,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    let r = Source { bytes, columns };
    if cols.len() != columns_of(f) {
        return Err(Error::corrupt(format!("field {:?} needs {} columns, given {}", f.name(), columns_of(f), cols.len())));
    }
    read_node(r, f, cols, ranges)
}

/// The file a read works on: its column metadata, and its bytes through
/// the narrow fetch trait (this module never sees the `FileReader`).
#[derive(Clone, Copy)]
struct Source<'a> {
    bytes: &'a dyn FetchRanges,
    columns: &'a [ColumnMetadata],
}

impl<'a> Source<'a> {
    /// The pages of `column` that overlap `ranges`, with their first rows.
    fn pages_for(&self, column: usize, ranges: &[Range<u64>]) -> Vec<(u64, &'a Page)> {
        let pages = &self.columns[column].pages;
        pages_overlapping(pages, ranges).into_iter().map(|(start, i)| (start, &pages[i])).collect()
    }

    /// The buffers of the given pages, all fetched in one call (the reader
    /// coalesces them into as few requests as it can).
    fn fetch_pages(&self, pages: &[&Page]) -> Result<Vec<Vec<Bytes>>> {
        let mut ranges = Vec::new();
        for p in pages {
            for (o, s) in p.buffer_offsets.iter().zip(&p.buffer_sizes) {
                ranges.push(*o..*o + *s);
            }
        }
        let mut fetched = self.bytes.fetch_ranges(&ranges)?.into_iter();
        Ok(pages.iter().map(|p| (0..p.buffer_offsets.len()).map(|_| fetched.next().expect("one per range")).collect()).collect())
    }
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
fn read_node(r: Source<'_>, f: &Field, cols: Range<usize>, ranges: &[Range<u64>]) -> Result<ArrayRef> {
    let mut direct = Vec::new();
    direct_columns(f, cols.start, &mut direct);
    let plans: Vec<Vec<(u64, &Page)>> = direct.iter().map(|&c| r.pages_for(c, ranges)).collect();
    let all: Vec<&Page> = plans.iter().flatten().map(|(_, p)| *p).collect();
    let fetched = if all.is_empty() { Vec::new() } else { r.fetch_pages(&all)? };
    let mut it = fetched.into_iter();
    let mut by_col: Fetched = HashMap::new();
    for (&c, plan) in direct.iter().zip(&plans) {
        let pages = plan.iter().map(|&(first_row, page)| PageData { first_row, page, bufs: it.next().unwrap_or_default() }).collect();
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

fn build(r: Source<'_>, f: &Field, col: usize, ranges: &[Range<u64>], by_col: &mut Fetched) -> Result<ArrayRef> {
    let ctx = |e: Error| e.context(format!("column {col} ({:?})", f.name()));
    match f.data_type() {
        DataType::Struct(fs) if !is_packed(f) => {
            let len = total_rows(ranges) as usize;
            let mut next = col + 1;
            let mut children = Vec::with_capacity(fs.len());
            for c in fs.iter() {
                let a = build(r, c, next, ranges, by_col)?;
                if a.len() != len {
                    return Err(ctx(Error::corrupt(format!("child {:?} has {} rows, struct has {len}", c.name(), a.len()))));
                }
                children.push(a.to_data());
                next += columns_of(c);
            }
            let data = ArrayDataBuilder::new(f.data_type().clone()).len(len).child_data(children).build().map_err(Error::corrupt_arrow)?;
            Ok(make_array(data))
        }
        DataType::List(item) | DataType::LargeList(item) => {
            let pages = by_col.remove(&col).unwrap_or_default();
            let list = read_list_offsets(r, col, &pages, ranges).map_err(ctx)?;
            let n_items = list.offsets.last().copied().unwrap_or(0);
            let child = read_node(r, item, col + 1..col + columns_of(f), &list.item_ranges)?;
            if child.len() as u64 != n_items {
                return Err(ctx(Error::corrupt(format!("list items decoded {} values, offsets need {n_items}", child.len()))));
            }
            let offsets_buf = if matches!(f.data_type(), DataType::LargeList(_)) {
                Buffer::from_vec(list.offsets.iter().map(|&o| o as i64).collect::<Vec<_>>())
            } else {
                let o32 = list
                    .offsets
                    .iter()
                    .map(|&o| i32::try_from(o).map_err(|_| Error::corrupt("list offsets overflow i32")))
                    .collect::<Result<Vec<i32>>>()
                    .map_err(ctx)?;
                Buffer::from_vec(o32)
            };
            let data = ArrayDataBuilder::new(f.data_type().clone())
                .len(list.offsets.len() - 1)
                .add_buffer(offsets_buf)
                .add_child_data(child.to_data())
                .nulls(list.validity)
                .build()
                .map_err(Error::corrupt_arrow)?;
            Ok(make_array(data))
        }
        DataType::Map(_, _) => Err(ctx(Error::unsupported("map columns in a 2.0 file"))),
        _ => {
            let pages = by_col.remove(&col).unwrap_or_default();
            read_leaf(r, f, &pages, ranges).map_err(ctx)
        }
    }
}

/// Requested rows within a page starting at `first` with `n` rows, relative
/// to the page.
fn rel_ranges(ranges: &[Range<u64>], first: u64, n: u64) -> Vec<(usize, usize)> {
    let end = first.saturating_add(n);
    ranges
        .iter()
        .filter(|r| r.end > first && r.start < end && r.start < r.end)
        .map(|r| ((r.start.max(first) - first) as usize, (r.end.min(end) - first) as usize))
        .collect()
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

fn read_list_offsets(r: Source<'_>, col: usize, pages: &[PageData], ranges: &[Range<u64>]) -> Result<ListRows> {
    // Items before each page: the sum of `num_items` of all earlier pages.
    let mut base_of: HashMap<*const Page, u64> = HashMap::new();
    let mut base = 0u64;
    for (_, p) in r.pages_for(col, std::slice::from_ref(&(0..u64::MAX))) {
        base_of.insert(p as *const Page, base);
        let n = match array_encoding(p)?.array_encoding {
            Some(Enc::List(l)) => l.num_items,
            _ => return Err(Error::corrupt("list column page is not a list encoding")),
        };
        base = base.checked_add(n).ok_or_else(|| Error::corrupt("list item counts overflow"))?;
    }
    let mut offsets = vec![0u64];
    let mut validity = BooleanBufferBuilder::new(0);
    let mut any_null = false;
    let mut item_ranges: Vec<Range<u64>> = Vec::new();
    for pd in pages {
        let n = page_len(pd.page)?;
        let enc = array_encoding(pd.page)?;
        let Some(Enc::List(list)) = enc.array_encoding else {
            return Err(Error::corrupt(format!("page at row {}: list column page is not a list encoding", pd.first_row)));
        };
        let page_base = *base_of.get(&(pd.page as *const Page)).ok_or_else(|| Error::corrupt("list page not in its column"))?;
        let offs_enc = list.offsets.as_deref().ok_or_else(|| Error::corrupt("list encoding without offsets"))?;
        let dec = decode_array(offs_enc, &pd.bufs, n, &DataType::UInt64).map_err(|e| e.context(format!("page at row {}: offsets", pd.first_row)))?;
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
                    return Err(Error::corrupt(format!("page at row {}: list {i} spans items {start}..{end} of {}", pd.first_row, list.num_items)));
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
    Ok(ListRows { offsets, validity, item_ranges })
}

// ---------------------------------------------------------------------------
// Leaves

fn read_leaf(r: Source<'_>, f: &Field, pages: &[PageData], ranges: &[Range<u64>]) -> Result<ArrayRef> {
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
            return Err(page_ctx(Error::corrupt(format!("decoded {} values, page has {n}", dec.values.len()))));
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
fn blob_array(r: Source<'_>, desc: &[u8], len: usize, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
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
                Some(end) if end <= r.bytes.file_size() => ranges.push(pos..end),
                _ => return Err(Error::corrupt(format!("blob {i} at {pos}+{size} lies outside the file"))),
            }
        } else {
            ranges.push(0..0);
        }
    }
    let wanted: Vec<Range<u64>> = ranges.iter().filter(|r| !r.is_empty()).cloned().collect();
    let mut fetched = r.bytes.fetch_ranges(&wanted)?.into_iter();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::FileReader;
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
        assert_eq!(lst.value(0).as_primitive::<Int64Type>().values().to_vec(), vec![1, 2]);
        assert_eq!(lst.value(1).len(), 0);
        let s = b.column_by_name("s").unwrap().as_string::<i32>();
        assert_eq!(s.value(0), "a");
        // Ranges and take agree with the full read.
        let part = r.read_ranges(&all, &[1..2, 4..6]).unwrap();
        for (c, full) in part.columns().iter().zip(b.columns()) {
            let expect = arrow_select::concat::concat(&[full.slice(1, 1).as_ref(), full.slice(4, 2).as_ref()]).unwrap();
            assert_eq!(c.to_data(), expect.to_data());
        }
    }

    /// The decoder needs nothing of the file but its bytes: the fixture
    /// read from an in-memory copy matches the `FileReader`'s read.
    #[test]
    fn reads_through_any_byte_source() {
        let Some(path) = fixture() else { return };
        let r = FileReader::open(&path).unwrap();
        let file = Bytes::from(std::fs::read(&path).unwrap());
        let all = r.projection(None).unwrap();
        let want = r.read_ranges(&all, &[0..2, 3..6]).unwrap();
        let mut col = 0;
        for (f, expect) in r.schema().fields().iter().zip(want.columns()) {
            let n = columns_of(f);
            let got = read_field(&file, r.column_metadata(), f, col..col + n, &[0..2, 3..6]).unwrap();
            assert_eq!(got.to_data(), expect.to_data(), "{}", f.name());
            col += n;
        }
        // A range past the end is refused, not sliced out of bounds.
        assert!(file.fetch_ranges(&[0..file.len() as u64 + 1]).is_err());
    }
}
