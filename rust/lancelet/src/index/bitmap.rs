//! BITMAP indices: one row set per distinct value.
//!
//! ```text
//! _indices/{uuid}/bitmap_page_lookup.lance
//!     keys:    <column type> (nullable)   distinct values, sorted, null first
//!     bitmaps: binary (nullable)          the rows holding that value, a
//!                                         serialized RowIdTreeMap (rowset.rs)
//!     schema metadata: lance:index_stats = {"num_bitmaps":N}  (N = rows)
//! ```
//!
//! The row sets hold stable row ids on datasets that have them, else row
//! addresses. LABEL_LIST indices ([`super::label_list`]) use the same file
//! over list elements.
//!
//! Opening reads the keys; a key's row set is read (one ranged read for a
//! run of keys) and kept the first time a query needs it. Keys are
//! compared with Arrow's comparator, the order the filter kernels use.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};
use arrow_ord::ord::make_comparator;
use arrow_schema::{DataType, Field, Schema, SortOptions};
use bytes::Bytes;

use super::group::{group, Grouped};
use super::rowset::RowSet;
use super::{IndexKind, IndexQuery, RangeEnd, ScalarIndex, TrainingData};
use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::{FileReader, FileVersion, FileWriter};
use crate::io::Storage;

/// The one file of a bitmap (and label-list) index.
pub const FILE: &str = "bitmap_page_lookup.lance";
/// Schema metadata key of `{"num_bitmaps":N}`.
pub const STATS_KEY: &str = "lance:index_stats";

const SORT: SortOptions = SortOptions { descending: false, nulls_first: true };
/// Bitmap bytes per written batch (a binary array must stay under 2 GiB).
const BATCH_BYTES: usize = 128 << 20;

/// Write the bitmap file for rows grouped by value (`dt` the values'
/// type): `extra_metadata` and `global_buffer` (written first, as global
/// buffer 1) serve label lists.
pub(crate) fn write_keyed(
    dir: &Storage,
    version: FileVersion,
    dt: &DataType,
    groups: &Grouped,
    extra_metadata: &[(&str, &str)],
    global_buffer: Option<Bytes>,
) -> Result<Vec<(String, u64)>> {
    let n_keys = groups.keys.len();
    let mut metadata: HashMap<String, String> = extra_metadata.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    metadata.insert(STATS_KEY.to_string(), format!("{{\"num_bitmaps\":{n_keys}}}"));
    let schema =
        Arc::new(Schema::new(vec![Field::new("keys", dt.clone(), true), Field::new("bitmaps", DataType::Binary, true)]).with_metadata(metadata));
    let mut w = FileWriter::create_with_lance_schema(dir.child(FILE)?, LanceSchema::from_arrow(&schema)?, version)?;
    if let Some(g) = global_buffer {
        w.add_global_buffer(g)?;
    }
    let mut first = 0;
    let mut bytes: Vec<u8> = Vec::new();
    let mut offsets: Vec<i32> = vec![0];
    while first < n_keys {
        bytes.clear();
        offsets.truncate(1);
        let mut last = first;
        while last < n_keys && (bytes.len() < BATCH_BYTES || last == first) {
            RowSet::from_slice(groups.ids_of(last)).write_to(&mut bytes);
            offsets.push(i32::try_from(bytes.len()).map_err(|_| Error::invalid_input("a bitmap index batch exceeds 2 GiB"))?);
            last += 1;
        }
        let keys = groups.keys.slice(first, last - first);
        let bitmaps = BinaryArray::new(
            arrow_buffer::OffsetBuffer::new(arrow_buffer::ScalarBuffer::from(std::mem::replace(&mut offsets, vec![0]))),
            arrow_buffer::Buffer::from_vec(std::mem::take(&mut bytes)),
            None,
        );
        w.write(&RecordBatch::try_new(schema.clone(), vec![keys, Arc::new(bitmaps)]).map_err(Error::internal_arrow)?)?;
        first = last;
    }
    let size = w.finish()?;
    Ok(vec![(FILE.to_string(), size)])
}

/// [`write_keyed`] for `(value, id)` pairs.
pub(crate) fn write_pairs(
    dir: &Storage,
    version: FileVersion,
    data: &TrainingData,
    extra_metadata: &[(&str, &str)],
    global_buffer: Option<Bytes>,
) -> Result<Vec<(String, u64)>> {
    let n = data.values.len();
    let ids = data.ids.values();
    let groups = group(&data.values, (0..n).map(|i| (i, ids[i])))?;
    write_keyed(dir, version, data.values.data_type(), &groups, extra_metadata, global_buffer)
}

/// Write a BITMAP index for `data`.
pub fn write(dir: &Storage, version: FileVersion, data: &TrainingData) -> Result<Vec<(String, u64)>> {
    write_pairs(dir, version, data, &[], None)
}

/// An opened bitmap file (BITMAP index, or the values of a LABEL_LIST one).
#[derive(Debug)]
pub struct BitmapIndex {
    value_type: DataType,
    /// The keys in sorted order (the file's order when it is sorted).
    keys: ArrayRef,
    /// File row of each sorted key.
    rows: Vec<u32>,
    /// Sorted position of the null key.
    null_key: Option<usize>,
    reader: FileReader,
    loaded: Mutex<HashMap<u32, Arc<RowSet>>>,
    label_list: bool,
}

impl BitmapIndex {
    /// Open the file in `dir`.
    pub fn open(dir: &Storage, label_list: bool) -> Result<Self> {
        let reader = FileReader::open_storage(dir.child(FILE)?)?;
        let s = reader.schema().clone();
        if s.fields().len() != 2
            || s.field(0).name() != "keys"
            || s.field(1).name() != "bitmaps"
            || !matches!(s.field(1).data_type(), DataType::Binary | DataType::LargeBinary)
        {
            return Err(Error::corrupt_in(reader.path().to_string(), format!("expected columns keys, bitmaps: binary; found {s}")));
        }
        let value_type = s.field(0).data_type().clone();
        let keys = reader.read_range(&[0], 0..reader.num_rows())?.column(0).clone();
        let sorted = keys.is_empty() || {
            let c = make_comparator(keys.as_ref(), keys.as_ref(), SORT).map_err(Error::corrupt_arrow)?;
            (1..keys.len()).all(|i| c(i - 1, i) == Ordering::Less)
        };
        // Files of older Lance releases list keys in hash order.
        let (keys, rows) = if sorted {
            (keys.clone(), (0..keys.len() as u32).collect())
        } else {
            let order = arrow_ord::sort::sort_to_indices(keys.as_ref(), Some(SORT), None).map_err(Error::corrupt_arrow)?;
            (arrow_select::take::take(keys.as_ref(), &order, None).map_err(Error::internal_arrow)?, order.values().to_vec())
        };
        let null_key = (keys.null_count() > 0).then_some(0);
        if keys.null_count() > 1 {
            return Err(Error::corrupt_in(reader.path().to_string(), format!("{} null keys", keys.null_count())));
        }
        Ok(BitmapIndex { value_type, keys, rows, null_key, reader, loaded: Mutex::new(HashMap::new()), label_list })
    }

    /// The file (label lists read their null set from it).
    pub(crate) fn reader(&self) -> &FileReader {
        &self.reader
    }

    /// The row sets of sorted keys `range`.
    fn bitmaps(&self, range: std::ops::Range<usize>) -> Result<Vec<Arc<RowSet>>> {
        let mut out = Vec::with_capacity(range.len());
        let mut missing = Vec::new();
        {
            let cache = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            for k in range.clone() {
                let row = self.rows[k];
                match cache.get(&row) {
                    Some(b) => out.push(Some(b.clone())),
                    None => {
                        out.push(None);
                        missing.push((k - range.start, row));
                    }
                }
            }
        }
        if !missing.is_empty() {
            let mut rows: Vec<u64> = missing.iter().map(|(_, r)| *r as u64).collect();
            rows.sort_unstable();
            let mut ranges: Vec<std::ops::Range<u64>> = Vec::new();
            for r in &rows {
                match ranges.last_mut() {
                    Some(last) if last.end == *r => last.end += 1,
                    _ => ranges.push(*r..*r + 1),
                }
            }
            let batch = self.reader.read_ranges(&[1], &ranges)?;
            let col = batch.column(0);
            let bytes_of = |i: usize| -> &[u8] {
                match col.data_type() {
                    DataType::LargeBinary => col.as_binary::<i64>().value(i),
                    _ => col.as_binary::<i32>().value(i),
                }
            };
            let mut cache = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            for (pos, row) in missing {
                let i = rows.binary_search(&(row as u64)).expect("requested");
                let set = if col.is_null(i) { RowSet::new() } else { RowSet::from_bytes(bytes_of(i)).map_err(|e| e.in_file(self.reader.path()))? };
                let set = Arc::new(set);
                cache.insert(row, set.clone());
                out[pos] = Some(set);
            }
        }
        Ok(out.into_iter().map(|b| b.expect("filled")).collect())
    }

    /// Sorted position of key `v` (non-null).
    fn find(&self, v: &dyn Array) -> Result<Option<usize>> {
        let c = make_comparator(self.keys.as_ref(), v, SORT).map_err(Error::internal_arrow)?;
        let n = self.keys.len();
        let start = self.null_key.map_or(0, |_| 1);
        let (mut lo, mut hi) = (start, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match c(mid, 0) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(Some(mid)),
            }
        }
        Ok(None)
    }

    /// Sorted positions of the keys within the range.
    fn key_range(&self, lower: Option<&RangeEnd>, upper: Option<&RangeEnd>) -> Result<std::ops::Range<usize>> {
        let n = self.keys.len();
        let first = self.null_key.map_or(0, |_| 1);
        let bound = |e: &RangeEnd, after_equal: bool| -> Result<usize> {
            let c = make_comparator(self.keys.as_ref(), e.value.as_ref(), SORT).map_err(Error::internal_arrow)?;
            let (mut lo, mut hi) = (first, n);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let o = c(mid, 0);
                if o == Ordering::Less || (after_equal && o == Ordering::Equal) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            Ok(lo)
        };
        let s = match lower {
            None => first,
            Some(e) => bound(e, !e.inclusive)?,
        };
        let e = match upper {
            None => n,
            Some(e) => bound(e, e.inclusive)?,
        };
        Ok(s..e.max(s))
    }

    fn check_type(&self, v: &ArrayRef) -> Result<()> {
        if v.data_type() != &self.value_type {
            return Err(Error::Internal { what: format!("a {} value asked of an index on {}", v.data_type(), self.value_type) });
        }
        Ok(())
    }

    /// Rows holding value `v[i]` (a null value: rows whose value is null).
    fn rows_of(&self, v: &ArrayRef, i: usize) -> Result<Arc<RowSet>> {
        let k = if v.is_null(i) { self.null_key } else { self.find(&v.slice(i, 1))? };
        Ok(match k {
            Some(k) => self.bitmaps(k..k + 1)?.pop().expect("one"),
            None => Arc::new(RowSet::new()),
        })
    }

    /// The values' row sets combined: union, or intersection when `all`.
    pub(crate) fn combine(&self, vs: &ArrayRef, all: bool) -> Result<RowSet> {
        self.check_type(vs)?;
        let mut out: Option<RowSet> = None;
        for i in 0..vs.len() {
            let s = self.rows_of(vs, i)?;
            match &mut out {
                None => out = Some((*s).clone()),
                Some(acc) if all => acc.intersect_with(&s),
                Some(acc) => acc.union_with(&s),
            }
            if all && out.as_ref().is_some_and(|o| o.is_empty()) {
                break;
            }
        }
        Ok(out.unwrap_or_default())
    }
}

impl ScalarIndex for BitmapIndex {
    fn kind(&self) -> IndexKind {
        if self.label_list {
            IndexKind::LabelList
        } else {
            IndexKind::Bitmap
        }
    }

    fn value_type(&self) -> &DataType {
        &self.value_type
    }

    fn search(&self, query: &IndexQuery) -> Result<RowSet> {
        match query {
            IndexQuery::Equals(v) => {
                self.check_type(v)?;
                if v.is_null(0) {
                    return Ok(RowSet::new());
                }
                Ok((*self.rows_of(v, 0)?).clone())
            }
            IndexQuery::In(vs) => {
                self.check_type(vs)?;
                let sets = (0..vs.len()).filter(|&i| vs.is_valid(i)).map(|i| self.rows_of(vs, i)).collect::<Result<Vec<_>>>()?;
                Ok(RowSet::union_all(sets.iter().map(|s| s.as_ref())))
            }
            IndexQuery::Range { lower, upper } => {
                for e in lower.iter().chain(upper.iter()) {
                    self.check_type(&e.value)?;
                }
                let keys = self.key_range(lower.as_ref(), upper.as_ref())?;
                let sets = self.bitmaps(keys)?;
                Ok(RowSet::union_all(sets.iter().map(|s| s.as_ref())))
            }
            IndexQuery::IsNull => Ok(match self.null_key {
                Some(k) => (*self.bitmaps(k..k + 1)?.pop().expect("one")).clone(),
                None => RowSet::new(),
            }),
            IndexQuery::HasAny(vs) => self.combine(vs, false),
            IndexQuery::HasAll(vs) => self.combine(vs, true),
            IndexQuery::Substrings { .. } => Err(Error::Internal { what: "a substring query asked of a BITMAP index".into() }),
        }
    }
}
