//! Legacy (v0.1) Lance data files: footer version 0.0–0.2.
//!
//! Layout:
//!
//! * footer (16 bytes): `u64 metadata position | u16 major | u16 minor | "LANC"`;
//! * `Metadata` (`lance.file.Metadata`, u32-length-prefixed protobuf):
//!   `manifest_position` (an embedded, u32-length-prefixed `lance.table.Manifest`
//!   whose `fields` are the schema; 0 = schema kept by the dataset),
//!   `batch_offsets` (`[0, n0, n0 + n1, …]`), `page_table_position`;
//! * page table: for every field id `min..=max` (pre-order, struct parents
//!   and list items included) and every batch, `(i64 position, i64 length)`.
//!
//! Pages, one per field and batch:
//!
//! * fixed-width values (`PLAIN`): `length` values back to back, booleans a
//!   bitmap, fixed-size lists their items, no validity;
//! * strings / binary (`VAR_BINARY`): `length + 1` i64 *absolute file
//!   positions* of the value bytes; for a nullable field an empty value
//!   reads as null (that is how the legacy reader treats it);
//! * lists: `length` (= rows + 1) i32 (list) or i64 (large list) offsets
//!   into the item field's page of the same batch, no validity;
//! * structs: no data; null type: no data;
//! * dictionaries: the pages hold the keys (`PLAIN`, nulls written as 0);
//!   the values are not in any page. The `Field.dictionary` of the schema
//!   (`offset`, `length` = number of values) locates them *in the file that
//!   holds that schema*: the manifest file for the dataset's schema, and
//!   this data file for its embedded copy (pylance writes the values before
//!   the embedded manifest). They are stored like a page of the value type:
//!   plain values, or `length + 1` absolute positions for strings. This
//!   reader uses the embedded copy; pylance refuses appends whose
//!   dictionary differs, so it equals the dataset's.
//!
//! The legacy writer keeps no validity for fixed-width values (nulls are
//! written as zeroes), so this reader, like Lance's, returns none.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{make_array, new_empty_array, new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_buffer::{bit_util, BooleanBuffer, Buffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Schema, SchemaRef};
use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::file::schema::{LanceField, LanceSchema};
use crate::file::stats::GroupStats;
use crate::file::structural::to_arrow::fixed_width_bits;
use crate::io::Storage;
use crate::proto::file as pb;

const FOOTER: u64 = 16;

/// The part of `lance.table.Manifest` a legacy file embeds that we need.
#[derive(Clone, PartialEq, prost::Message)]
struct EmbeddedManifest {
    #[prost(message, repeated, tag = "1")]
    fields: Vec<pb::Field>,
    #[prost(map = "string, bytes", tag = "5")]
    schema_metadata: HashMap<String, Vec<u8>>,
}

/// An open legacy (v0.1) data file.
pub struct LegacyFileReader {
    storage: Storage,
    schema: LanceSchema,
    arrow_schema: SchemaRef,
    /// `[0, end of batch 0, end of batch 1, …]`.
    batch_offsets: Vec<u64>,
    /// (field id, batch) → (position, length).
    pages: HashMap<(i32, usize), (u64, u64)>,
    size: u64,
    /// Decoded dictionary values of dictionary fields, by field id.
    dictionaries: HashMap<i32, ArrayRef>,
    /// Where the statistics are, if the file has any (read on demand).
    stats: Option<Arc<pb::metadata::StatisticsMetadata>>,
}

/// Per-batch column statistics (`Metadata.statistics`): a schema of
/// structs named by data field id, and its one-batch page table.
#[derive(Debug)]
struct StatsTable {
    schema: LanceSchema,
    pages: HashMap<(i32, usize), (u64, u64)>,
}

impl std::fmt::Debug for LegacyFileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyFileReader").field("path", &self.storage).finish()
    }
}

fn read_prefixed(storage: &Storage, pos: u64, size: u64, what: &str) -> Result<Bytes> {
    if pos.checked_add(4).is_none_or(|e| e > size) {
        return Err(Error::corrupt(format!("{what} at {pos} lies outside the file ({size} bytes)")));
    }
    let len = storage.read_range(pos..pos + 4)?;
    let len = u32::from_le_bytes(len[..4].try_into().expect("4 bytes")) as u64;
    let end = pos + 4 + len;
    if end > size {
        return Err(Error::corrupt(format!("{what} of {len} bytes at {pos} runs past the end of the file")));
    }
    storage.read_range(pos + 4..end)
}

impl LegacyFileReader {
    /// Open a legacy file whose schema is embedded (files pylance writes with
    /// `data_storage_version="legacy"` embed it).
    pub fn open(storage: Storage) -> Result<Self> {
        Self::open_with_schema(storage, None)
    }

    /// Open a legacy file; `schema` (from the dataset manifest) overrides the
    /// embedded one and is required when the file embeds none.
    pub fn open_with_schema(storage: Storage, schema: Option<LanceSchema>) -> Result<Self> {
        let path = storage.display().to_string();
        Self::open_inner(storage, schema).map_err(|e| e.in_file(&path))
    }

    fn open_inner(storage: Storage, schema: Option<LanceSchema>) -> Result<Self> {
        let size = storage.size()?;
        if size < FOOTER {
            return Err(Error::corrupt(format!("file is {size} bytes, too short to be a Lance file")));
        }
        let footer = storage.read_range(size - FOOTER..size)?;
        if &footer[12..16] != b"LANC" {
            return Err(Error::corrupt("missing LANC magic"));
        }
        let meta_pos = u64::from_le_bytes(footer[..8].try_into().expect("8 bytes"));
        let meta = pb::Metadata::decode(read_prefixed(&storage, meta_pos, size - FOOTER, "metadata")?).map_err(Error::bad_protobuf)?;
        let mut dictionary_specs = Vec::new();
        let schema = match schema {
            Some(s) => s,
            None => {
                if meta.manifest_position == 0 {
                    return Err(Error::unsupported("legacy data file without an embedded schema (open it through its dataset)"));
                }
                let m = EmbeddedManifest::decode(read_prefixed(&storage, meta.manifest_position, size - FOOTER, "manifest")?)
                    .map_err(Error::bad_protobuf)?;
                dictionary_specs = m.fields.iter().filter_map(|f| f.dictionary.as_ref().map(|d| (f.id, d.offset, d.length))).collect();
                LanceSchema::from_pb(&m.fields, &m.schema_metadata)?
            }
        };
        let mut batch_offsets = Vec::with_capacity(meta.batch_offsets.len());
        for (i, &o) in meta.batch_offsets.iter().enumerate() {
            let o = u64::try_from(o).map_err(|_| Error::corrupt(format!("negative batch offset {o}")))?;
            if batch_offsets.last().is_some_and(|&p| o < p) || (i == 0 && o != 0) {
                return Err(Error::corrupt("batch offsets are not increasing from 0"));
            }
            batch_offsets.push(o);
        }
        if batch_offsets.is_empty() {
            batch_offsets.push(0);
        }
        let num_batches = batch_offsets.len() - 1;
        let ids: Vec<i32> = schema.fields.iter().flat_map(|f| f.preorder()).map(|f| f.id).collect();
        let mut pages = HashMap::new();
        if let (Some(&min), Some(&max)) = (ids.iter().min(), ids.iter().max()) {
            if min < 0 {
                return Err(Error::corrupt(format!("negative field id {min}")));
            }
            let n_cols = (max - min) as u64 + 1;
            let table_len =
                n_cols.checked_mul(num_batches as u64).and_then(|x| x.checked_mul(16)).ok_or_else(|| Error::corrupt("page table size overflows"))?;
            let pt = meta.page_table_position;
            if pt.checked_add(table_len).is_none_or(|e| e > size - FOOTER) {
                return Err(Error::corrupt("page table lies outside the file"));
            }
            let table = if table_len == 0 { Bytes::new() } else { storage.read_range(pt..pt + table_len)? };
            let at = |i: usize| i64::from_le_bytes(table[8 * i..8 * i + 8].try_into().expect("8 bytes"));
            for id in min..=max {
                for b in 0..num_batches {
                    let idx = ((id - min) as usize * num_batches + b) * 2;
                    let (p, l) = (at(idx), at(idx + 1));
                    if p < 0 || l < 0 {
                        return Err(Error::corrupt(format!("field {id} batch {b}: negative page position/length")));
                    }
                    pages.insert((id, b), (p as u64, l as u64));
                }
            }
        }
        let stats = meta.statistics.clone().filter(|st| !st.schema.is_empty()).map(Arc::new);
        let arrow_schema = Arc::new(schema.to_arrow());
        let mut reader = LegacyFileReader { storage, schema, arrow_schema, batch_offsets, pages, size, dictionaries: HashMap::new(), stats };
        for (id, offset, length) in dictionary_specs {
            let values = reader.read_dictionary(id, offset, length).map_err(|e| e.context(format!("dictionary of field id {id}")))?;
            reader.dictionaries.insert(id, values);
        }
        Ok(reader)
    }

    /// Per-batch statistics of data field `field_id` (`None` when the file
    /// keeps none for it).
    pub fn group_stats(&self, field_id: i32) -> Result<Option<GroupStats>> {
        let Some(meta) = &self.stats else { return Ok(None) };
        let path = self.path().to_string();
        let stats = read_stats_table(&self.storage, meta, self.size).map_err(|e| e.in_file(&path))?;
        let name = field_id.to_string();
        let Some(field) = stats.schema.fields.iter().find(|f| f.arrow.name() == &name) else { return Ok(None) };
        let batches = self.batch_offsets.len() - 1;
        let table = LegacyFileReader {
            storage: self.storage.clone(),
            schema: LanceSchema { fields: vec![field.clone()], metadata: HashMap::new() },
            arrow_schema: self.arrow_schema.clone(),
            batch_offsets: vec![0, batches as u64],
            pages: stats.pages,
            size: self.size,
            dictionaries: HashMap::new(),
            stats: None,
        };
        let col = table.read_array(field, 0, 0..batches).map_err(|e| e.in_file(&path).context(format!("statistics of field id {field_id}")))?;
        let Some(st) = col.as_any().downcast_ref::<arrow_array::StructArray>() else { return Ok(None) };
        let (Some(nulls), Some(min), Some(max)) = (st.column_by_name("null_count"), st.column_by_name("min_value"), st.column_by_name("max_value"))
        else {
            return Ok(None);
        };
        let Some(nulls) = nulls.as_any().downcast_ref::<arrow_array::Int64Array>() else { return Ok(None) };
        Ok(Some(GroupStats {
            ranges: self.batch_offsets.windows(2).map(|w| w[0]..w[1]).collect(),
            min: min.clone(),
            max: max.clone(),
            null_count: nulls.values().iter().map(|&n| n.max(0) as u64).collect(),
        }))
    }

    /// Decode the `length` dictionary values of field `id` stored at
    /// `offset` (like a page of the value type).
    fn read_dictionary(&self, id: i32, offset: i64, length: i64) -> Result<ArrayRef> {
        let field = self
            .schema
            .fields
            .iter()
            .flat_map(|f| f.preorder())
            .find(|f| f.id == id)
            .ok_or_else(|| Error::corrupt(format!("dictionary for field id {id}, which the schema lacks")))?;
        let DataType::Dictionary(_, value_type) = field.arrow.data_type() else {
            return Err(Error::corrupt(format!("field {:?} has a dictionary but type {}", field.arrow.name(), field.arrow.data_type())));
        };
        let (Ok(offset), Ok(length)) = (u64::try_from(offset), usize::try_from(length)) else {
            return Err(Error::corrupt(format!("negative dictionary position {offset} / length {length}")));
        };
        // As the field's pages: in a nullable field an empty string value
        // reads as null (pylance's reading).
        let values = LanceField {
            id: -1,
            arrow: arrow_schema::Field::new("values", value_type.as_ref().clone(), field.arrow.is_nullable()),
            children: Vec::new(),
        };
        self.read_leaf(&values, (offset, length as u64), 0..length)
    }

    /// The Arrow schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.arrow_schema
    }
    /// The Lance schema (with field ids).
    pub fn lance_schema(&self) -> &LanceSchema {
        &self.schema
    }
    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        *self.batch_offsets.last().expect("non-empty")
    }
    /// Where this file lives.
    pub fn path(&self) -> &str {
        self.storage.display()
    }
    /// File size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Read the sorted, non-overlapping row `ranges` of the projected
    /// top-level fields.
    pub fn read_ranges(&self, projection: &[usize], ranges: &[Range<u64>]) -> Result<RecordBatch> {
        self.read_ranges_inner(projection, ranges).map_err(|e| e.in_file(self.path()))
    }

    fn read_ranges_inner(&self, projection: &[usize], ranges: &[Range<u64>]) -> Result<RecordBatch> {
        let n = self.num_rows();
        let mut pieces: Vec<(usize, Range<usize>)> = Vec::new();
        for r in ranges {
            if r.start > r.end || r.end > n {
                return Err(Error::invalid_input(format!("rows {}..{} out of bounds ({n} rows)", r.start, r.end)));
            }
            for b in 0..self.batch_offsets.len() - 1 {
                let (bs, be) = (self.batch_offsets[b], self.batch_offsets[b + 1]);
                let (s, e) = (r.start.max(bs), r.end.min(be));
                if s < e {
                    pieces.push((b, (s - bs) as usize..(e - bs) as usize));
                }
            }
        }
        let mut fields = Vec::with_capacity(projection.len());
        let mut columns = Vec::with_capacity(projection.len());
        for &fi in projection {
            let lf = self.schema.fields.get(fi).ok_or_else(|| Error::invalid_input(format!("no field {fi}")))?;
            let parts = pieces
                .iter()
                .map(|(b, r)| self.read_array(lf, *b, r.clone()))
                .collect::<Result<Vec<_>>>()
                .map_err(|e| e.context(format!("column {:?}", lf.arrow.name())))?;
            let col = match parts.len() {
                0 => new_empty_array(lf.arrow.data_type()),
                1 => parts.into_iter().next().expect("one"),
                _ => arrow_select::concat::concat(&parts.iter().map(|a| a.as_ref()).collect::<Vec<_>>()).map_err(Error::internal_arrow)?,
            };
            fields.push(Arc::new(lf.arrow.clone()));
            columns.push(col);
        }
        let rows: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let schema = Arc::new(Schema::new(fields).with_metadata(self.arrow_schema.metadata().clone()));
        RecordBatch::try_new_with_options(schema, columns, &RecordBatchOptions::new().with_row_count(Some(rows as usize)))
            .map_err(Error::corrupt_arrow)
    }

    fn page(&self, f: &LanceField, batch: usize) -> Result<(u64, u64)> {
        self.pages.get(&(f.id, batch)).copied().ok_or_else(|| Error::corrupt(format!("no page for field id {} batch {batch}", f.id)))
    }

    fn read_bytes(&self, range: Range<u64>) -> Result<Bytes> {
        if range.start > range.end || range.end > self.size - FOOTER {
            return Err(Error::corrupt(format!("page bytes {}..{} outside the file", range.start, range.end)));
        }
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        self.storage.read_range(range)
    }

    /// Rows `rows` of field `f` in `batch`.
    fn read_array(&self, f: &LanceField, batch: usize, rows: Range<usize>) -> Result<ArrayRef> {
        let dt = f.arrow.data_type();
        let len = rows.len();
        match dt {
            DataType::Null => Ok(new_null_array(dt, len)),
            DataType::Struct(_) => {
                let children = f.children.iter().map(|c| self.read_array(c, batch, rows.clone()).map(|a| a.to_data())).collect::<Result<Vec<_>>>()?;
                Ok(make_array(ArrayDataBuilder::new(dt.clone()).len(len).child_data(children).build().map_err(Error::corrupt_arrow)?))
            }
            DataType::Dictionary(key, _) => {
                let values = self.dictionaries.get(&f.id).ok_or_else(|| {
                    Error::unsupported("a dictionary column whose values are not in this file (open it through its dataset's embedded schema)")
                })?;
                let (pos, n) = self.page(f, batch)?;
                check_rows(&rows, n)?;
                let keys = read_plain(self, key, pos, rows)?;
                let data = ArrayDataBuilder::new(dt.clone())
                    .len(len)
                    .add_buffer(keys.to_data().buffers()[0].clone())
                    .add_child_data(values.to_data())
                    .build()
                    .map_err(|e| Error::corrupt(format!("dictionary keys: {e}")).with_source(e))?;
                Ok(make_array(data))
            }
            DataType::List(_) | DataType::LargeList(_) => {
                let large = matches!(dt, DataType::LargeList(_));
                let (pos, n) = self.page(f, batch)?;
                // The page holds rows + 1 offsets.
                check_rows(&(rows.start..rows.end + 1), n)?;
                let o = self.read_ints(pos, if large { 8 } else { 4 }, rows.start..rows.end + 1)?;
                if o.windows(2).any(|w| w[1] < w[0]) {
                    return Err(Error::corrupt("list offsets decrease"));
                }
                let item = f.children.first().ok_or_else(|| Error::corrupt("list field without an item field"))?;
                let (s, e) = (usize::try_from(o[0]), usize::try_from(o[len]));
                let (Ok(s), Ok(e)) = (s, e) else {
                    return Err(Error::corrupt("list offsets too large"));
                };
                let child = self.read_array(item, batch, s..e)?;
                let rel: Vec<u64> = o.iter().map(|&x| x - o[0]).collect();
                let offsets = if large {
                    Buffer::from_vec(rel.iter().map(|&x| x as i64).collect::<Vec<_>>())
                } else {
                    Buffer::from_vec(
                        rel.iter()
                            .map(|&x| i32::try_from(x).map_err(|_| Error::corrupt("list offsets overflow i32")))
                            .collect::<Result<Vec<i32>>>()?,
                    )
                };
                Ok(make_array(
                    ArrayDataBuilder::new(dt.clone())
                        .len(len)
                        .add_buffer(offsets)
                        .add_child_data(child.to_data())
                        .build()
                        .map_err(Error::corrupt_arrow)?,
                ))
            }
            _ => {
                let page = self.page(f, batch)?;
                self.read_leaf(f, page, rows)
            }
        }
    }

    /// Rows `rows` of a string/binary or fixed-width field `f` from the
    /// page at `pos` holding `n` values.
    fn read_leaf(&self, f: &LanceField, (pos, n): (u64, u64), rows: Range<usize>) -> Result<ArrayRef> {
        let dt = f.arrow.data_type();
        let len = rows.len();
        match dt {
            DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary => {
                check_rows(&rows, n)?;
                let p = self.read_ints(pos, 8, rows.start..rows.end + 1)?;
                let (first, last) = (p[0], p[len]);
                if p.windows(2).any(|w| w[1] < w[0]) {
                    return Err(Error::corrupt("string positions decrease"));
                }
                let data = self.read_bytes(first..last)?;
                let offs: Vec<i64> = p.iter().map(|&x| (x - first) as i64).collect();
                let nulls = if f.arrow.is_nullable() {
                    let bits: BooleanBuffer = p.windows(2).map(|w| w[1] != w[0]).collect();
                    Some(NullBuffer::new(bits)).filter(|n| n.null_count() > 0)
                } else {
                    None
                };
                let offsets = if matches!(dt, DataType::LargeUtf8 | DataType::LargeBinary) {
                    Buffer::from_vec(offs)
                } else {
                    Buffer::from_vec(
                        offs.iter()
                            .map(|&o| i32::try_from(o).map_err(|_| Error::corrupt("string offsets overflow i32")))
                            .collect::<Result<Vec<i32>>>()?,
                    )
                };
                let data = ArrayDataBuilder::new(dt.clone())
                    .len(len)
                    .add_buffer(offsets)
                    .add_buffer(Buffer::from_slice_ref(&data[..]))
                    .nulls(nulls)
                    .build()
                    .map_err(Error::corrupt_arrow)?;
                Ok(make_array(data))
            }
            _ => {
                check_rows(&rows, n)?;
                read_plain(self, dt, pos, rows)
            }
        }
    }

    /// Unsigned little-endian integers `idx` of width `w` from a page at `pos`.
    fn read_ints(&self, pos: u64, w: u64, idx: Range<usize>) -> Result<Vec<u64>> {
        let start = pos.checked_add(idx.start as u64 * w).ok_or_else(|| Error::corrupt("page position overflows"))?;
        let end = start.checked_add(idx.len() as u64 * w).ok_or_else(|| Error::corrupt("page position overflows"))?;
        let b = self.read_bytes(start..end)?;
        Ok(b.chunks_exact(w as usize)
            .map(|c| {
                let mut x = [0u8; 8];
                x[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(x)
            })
            .collect())
    }
}

/// Read the statistics schema and its page table (`fields.len()` rows of
/// `(i64 position, i64 length)`, one batch).
fn read_stats_table(storage: &Storage, st: &pb::metadata::StatisticsMetadata, size: u64) -> Result<StatsTable> {
    let schema = LanceSchema::from_pb(&st.schema, &HashMap::new()).map_err(|e| e.context("statistics schema"))?;
    let len = (st.fields.len() as u64) * 16;
    let pt = st.page_table_position;
    if pt.checked_add(len).is_none_or(|e| e > size - FOOTER) {
        return Err(Error::corrupt("statistics page table lies outside the file"));
    }
    let table = if len == 0 { Bytes::new() } else { storage.read_range(pt..pt + len)? };
    let at = |i: usize| i64::from_le_bytes(table[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    let mut pages = HashMap::new();
    for (k, &id) in st.fields.iter().enumerate() {
        let (p, l) = (at(2 * k), at(2 * k + 1));
        if p < 0 || l < 0 {
            return Err(Error::corrupt(format!("statistics field {id}: negative page position/length")));
        }
        pages.insert((id, 0), (p as u64, l as u64));
    }
    Ok(StatsTable { schema, pages })
}

fn check_rows(rows: &Range<usize>, page_len: u64) -> Result<()> {
    if rows.end as u64 > page_len {
        return Err(Error::corrupt(format!("rows {}..{} beyond the page's {page_len} values", rows.start, rows.end)));
    }
    Ok(())
}

fn span(pos: u64, s: u64, e: u64) -> Result<Range<u64>> {
    match (pos.checked_add(s), pos.checked_add(e)) {
        (Some(a), Some(b)) => Ok(a..b),
        _ => Err(Error::corrupt("page position overflows")),
    }
}

/// Fixed-width values `rows` of type `dt` stored back to back at `pos`.
fn read_plain(r: &LegacyFileReader, dt: &DataType, pos: u64, rows: Range<usize>) -> Result<ArrayRef> {
    let len = rows.len();
    match dt {
        DataType::Boolean => {
            let (bs, be) = ((rows.start / 8) as u64, bit_util::ceil(rows.end, 8) as u64);
            let b = r.read_bytes(span(pos, bs, be)?)?;
            let bits = BooleanBuffer::new(Buffer::from_slice_ref(&b[..]), rows.start % 8, len);
            Ok(make_array(ArrayDataBuilder::new(DataType::Boolean).len(len).add_buffer(bits.sliced()).build().map_err(Error::corrupt_arrow)?))
        }
        DataType::FixedSizeList(item, dim) => {
            let dim = usize::try_from(*dim).map_err(|_| Error::corrupt("negative list size"))?;
            let (Some(s), Some(e)) = (rows.start.checked_mul(dim), rows.end.checked_mul(dim)) else {
                return Err(Error::corrupt("fixed-size list rows overflow"));
            };
            let child = read_plain(r, item.data_type(), pos, s..e)?;
            Ok(make_array(ArrayDataBuilder::new(dt.clone()).len(len).add_child_data(child.to_data()).build().map_err(Error::corrupt_arrow)?))
        }
        dt => {
            let bits = fixed_width_bits(dt).filter(|b| b % 8 == 0).ok_or_else(|| Error::unsupported(format!("type {dt} in a legacy file")))?;
            let w = bits / 8;
            let b = r.read_bytes(span(pos, rows.start as u64 * w, rows.end as u64 * w)?)?;
            Ok(make_array(
                ArrayDataBuilder::new(dt.clone()).len(len).add_buffer(Buffer::from_slice_ref(&b[..])).build().map_err(Error::corrupt_arrow)?,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;

    /// A compact JSON rendering used to compare with pylance's reading
    /// (`LEGACY_FILE=… cargo test legacy_dump -- --ignored --nocapture`).
    fn json(a: &dyn Array, i: usize) -> String {
        if a.is_null(i) || a.data_type() == &DataType::Null {
            return "null".into();
        }
        macro_rules! prim {
            ($t:ty) => {
                a.as_primitive::<$t>().value(i).to_string()
            };
        }
        match a.data_type() {
            DataType::Int8 => prim!(Int8Type),
            DataType::Int16 => prim!(Int16Type),
            DataType::Int32 | DataType::Date32 => a.to_data().buffer::<i32>(0)[a.offset() + i].to_string(),
            DataType::Int64 | DataType::Timestamp(_, _) | DataType::Date64 => a.to_data().buffer::<i64>(0)[a.offset() + i].to_string(),
            DataType::UInt8 => prim!(UInt8Type),
            DataType::UInt16 => prim!(UInt16Type),
            DataType::UInt32 => prim!(UInt32Type),
            DataType::UInt64 => prim!(UInt64Type),
            DataType::Float32 => format!("{:?}", a.as_primitive::<Float32Type>().value(i) as f64),
            DataType::Float64 => format!("{:?}", a.as_primitive::<Float64Type>().value(i)),
            DataType::Decimal128(_, _) => {
                format!("\"{}\"", a.as_primitive::<Decimal128Type>().value(i))
            }
            DataType::Boolean => a.as_boolean().value(i).to_string(),
            DataType::Utf8 => format!("{:?}", a.as_string::<i32>().value(i)),
            DataType::LargeUtf8 => format!("{:?}", a.as_string::<i64>().value(i)),
            DataType::Binary => hex(a.as_binary::<i32>().value(i)),
            DataType::LargeBinary => hex(a.as_binary::<i64>().value(i)),
            DataType::FixedSizeBinary(_) => hex(a.as_fixed_size_binary().value(i)),
            DataType::List(_) => list(a.as_list::<i32>().value(i).as_ref()),
            DataType::LargeList(_) => list(a.as_list::<i64>().value(i).as_ref()),
            DataType::FixedSizeList(_, _) => list(a.as_fixed_size_list().value(i).as_ref()),
            DataType::Struct(fs) => {
                let s = a.as_struct();
                let parts: Vec<String> = fs.iter().zip(s.columns()).map(|(f, c)| format!("{:?}: {}", f.name(), json(c.as_ref(), i))).collect();
                format!("{{{}}}", parts.join(", "))
            }
            other => format!("\"<{other}>\""),
        }
    }
    fn hex(b: &[u8]) -> String {
        format!("\"{}\"", b.iter().map(|x| format!("{x:02x}")).collect::<String>())
    }
    fn list(a: &dyn Array) -> String {
        format!("[{}]", (0..a.len()).map(|i| json(a, i)).collect::<Vec<_>>().join(", "))
    }
    #[test]
    #[ignore]
    fn legacy_dump() {
        let Ok(path) = std::env::var("LEGACY_FILE") else {
            return;
        };
        let r = LegacyFileReader::open(Storage::open(&path).unwrap()).unwrap();
        let all: Vec<usize> = (0..r.schema().fields().len()).collect();
        let n = r.num_rows();
        let spec = std::env::var("LEGACY_RANGES").unwrap_or_else(|_| format!("0-{n}"));
        let ranges: Vec<Range<u64>> = spec
            .split(',')
            .map(|p| {
                let (a, b) = p.split_once('-').unwrap();
                a.parse().unwrap()..b.parse().unwrap()
            })
            .collect();
        let b = r.read_ranges(&all, &ranges).unwrap();
        println!("BEGIN");
        for (f, c) in b.schema().fields().iter().zip(b.columns()) {
            println!("{:?}: {}", f.name(), list(c.as_ref()));
        }
        println!("END");
    }

    /// Mutates `LEGACY_FILE` at random and checks reads fail with errors, not panics.
    #[test]
    #[ignore]
    fn legacy_fuzz() {
        let Ok(path) = std::env::var("LEGACY_FILE") else {
            return;
        };
        let orig = std::fs::read(&path).unwrap();
        let out = std::env::temp_dir().join(format!("legacy_fuzz_{}.lance", std::process::id()));
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut ok, mut err) = (0, 0);
        for _ in 0..3000 {
            let mut d = orig.clone();
            for _ in 0..1 + next() % 4 {
                let i = if next() % 2 == 0 { next() as usize % d.len() } else { d.len() - 1 - next() as usize % d.len().min(700) };
                d[i] = next() as u8;
            }
            std::fs::write(&out, &d).unwrap();
            let res = std::panic::catch_unwind(|| {
                let r = LegacyFileReader::open(Storage::open(out.to_str().unwrap())?)?;
                let all: Vec<usize> = (0..r.schema().fields().len()).collect();
                let n = r.num_rows();
                r.read_ranges(&all, &[0..n])?;
                r.read_ranges(&all, &[n / 2..n])
            });
            match res {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(_)) => err += 1,
                Err(_) => panic!("panic on mutated input"),
            }
        }
        eprintln!("fuzz: {ok} ok, {err} errors");
    }
}
