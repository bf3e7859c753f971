//! BLOOMFILTER indices: a split block bloom filter per zone of live rows
//! (see [`super::zones`]), as pylance 14 writes them.
//!
//! ```text
//! _indices/{uuid}/bloomfilter.lance
//!     fragment_id:       uint64 not null
//!     zone_start:        uint64 not null
//!     zone_length:       uint64 not null
//!     has_null:          bool not null     the zone holds a null
//!     bloom_filter_data: binary not null   the zone's filter (below)
//!     global buffer 1: the null rows (zones.rs)
//!     schema metadata: bloomfilter_item = "8192",
//!                      bloomfilter_probability = "0.00057", null_bitmap = "1"
//! ```
//!
//! The zone size is `number_of_items`, which also sizes every filter with
//! `probability`: a Parquet-style split block bloom filter (SBBF) of the
//! smallest power-of-two size (32 B..=128 MiB) whose false positive
//! probability for `number_of_items` values (Putze et al.'s formula) is at
//! most `probability`, stored as blocks of eight little-endian u32 words. A value is inserted by `h = xxHash64(seed 0, bytes)`: block
//! `((h >> 32) · blocks) >> 32`, and in word `i` bit `((h as u32) ·
//! SALT[i]) >> 27`. The bytes hashed are a string's or binary's bytes, or
//! a number's little-endian bytes at its width (dates, times and
//! timestamps by their stored integers). Nulls are not inserted. The
//! manifest entry's details are `/lance.index.pb.BloomFilterIndexDetails`,
//! empty; `index_version` 0.
//!
//! `=` and `IN` keep the zones whose filter may hold a value (the filter is
//! applied again to their rows); `IS NULL` is answered exactly from the
//! null bitmap.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, BooleanArray, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;

use super::rowset::RowSet;
use super::zones::{self, Zone, NULL_BITMAP_KEY};
use super::{IndexKind, IndexQuery, ScalarIndex, TrainingData};
use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::{FileReader, FileVersion, FileWriter};
use crate::io::Storage;

/// The one file of a bloom filter index.
pub const FILE: &str = "bloomfilter.lance";
/// Schema metadata key of `number_of_items`.
pub const ITEMS_KEY: &str = "bloomfilter_item";
/// Schema metadata key of `probability`.
pub const PROBABILITY_KEY: &str = "bloomfilter_probability";
/// pylance's default `number_of_items` (also the zone size).
pub const DEFAULT_ITEMS: u64 = 8192;
/// pylance's default false positive `probability`.
pub const DEFAULT_PROBABILITY: f64 = 0.00057;

const SALT: [u32; 8] = [0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31];
const MIN_BYTES: usize = 32;
const MAX_BYTES: usize = 128 * 1024 * 1024;
/// Zones per written batch (a binary array must stay under 2 GiB).
const BATCH_BYTES: usize = 256 << 20;

/// The column types a bloom filter takes (pylance's list).
pub fn supports(dt: &DataType) -> bool {
    use DataType as T;
    matches!(
        dt,
        T::Int8
            | T::Int16
            | T::Int32
            | T::Int64
            | T::UInt8
            | T::UInt16
            | T::UInt32
            | T::UInt64
            | T::Float32
            | T::Float64
            | T::Utf8
            | T::LargeUtf8
            | T::Binary
            | T::LargeBinary
            | T::Date32
            | T::Date64
            | T::Time32(_)
            | T::Time64(_)
            | T::Timestamp(_, _)
    )
}

/// pylance's error for a column type it does not take.
pub fn type_error(dt: &DataType) -> Error {
    if dt.is_nested() {
        return Error::invalid_input("A bloom filter index can only be created on a non-nested field.");
    }
    Error::invalid_input(format!(
        "Bloom filter index does not support data type: {dt:?}. Supported types: Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, \
         Float32, Float64, Utf8, LargeUtf8, Binary, LargeBinary, Date32, Date64, Time32, Time64, Timestamp"
    ))
}

/// The false positive probability of a filter of `2^log2_bytes` bytes
/// holding `ndv` values (Putze et al., "Cache-, hash- and space-efficient
/// bloom filters", equation 3, as Lance and Arrow compute it).
fn false_positive_probability(ndv: u64, log2_bytes: u8) -> f64 {
    const WORD_BITS: f64 = 32.0;
    const BUCKET_WORDS: f64 = 8.0;
    let bytes = (1u64 << log2_bytes) as f64;
    let ndv = ndv as f64;
    if ndv == 0.0 {
        return 0.0;
    }
    if ndv / (bytes * 8.0) > 2.0 {
        return 1.0;
    }
    let lam = BUCKET_WORDS * WORD_BITS / ((bytes * 8.0) / ndv);
    let loglam = lam.ln();
    let mut result = 0.0f64;
    for i in (0..750i32).rev() {
        let logp = f64::from(i) * loglam - lam - libm::lgamma(f64::from(i + 1));
        let logfinner = BUCKET_WORDS * (1.0 - (1.0 - 1.0 / WORD_BITS).powi(i)).ln();
        result += (logp + logfinner).exp();
    }
    result.min(1.0)
}

/// Filter size in bytes for `items` values at false positive rate `p`:
/// the smallest power of two whose probability is at most `p`, clamped to
/// 32 B..=128 MiB (Lance's `Sbbf::with_ndv_fpp`).
pub fn filter_bytes(items: u64, p: f64) -> Result<usize> {
    if !(0.0..1.0).contains(&p) {
        return Err(Error::invalid_input(format!("Failed to build SBBF: InvalidFpp {{ fpp: {p:?} }}")));
    }
    let (mut low, mut high) = (0u8, 64u8);
    while high > low + 1 {
        let mid = (high + low) / 2;
        if false_positive_probability(items, mid) <= p {
            high = mid;
        } else {
            low = mid;
        }
    }
    Ok(1usize << high.clamp(MIN_BYTES.trailing_zeros() as u8, MAX_BYTES.trailing_zeros() as u8))
}

/// xxHash64 (seed 0) of the bytes of every value of `a` (nulls hash
/// their slot's bytes; callers skip them).
pub fn hash_values(a: &dyn Array) -> Vec<u64> {
    use twox_hash::XxHash64;
    let h = |b: &[u8]| XxHash64::oneshot(0, b);
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().iter().map(|v| h(v.unwrap_or_default().as_bytes())).collect(),
        DataType::LargeUtf8 => a.as_string::<i64>().iter().map(|v| h(v.unwrap_or_default().as_bytes())).collect(),
        DataType::Binary => a.as_binary::<i32>().iter().map(|v| h(v.unwrap_or_default())).collect(),
        DataType::LargeBinary => a.as_binary::<i64>().iter().map(|v| h(v.unwrap_or_default())).collect(),
        dt => {
            let w = dt.primitive_width().unwrap_or(0);
            let data = a.to_data();
            let buf = data.buffers().first().map(|b| b.as_slice()).unwrap_or(&[]);
            (0..a.len())
                .map(|i| {
                    let at = (data.offset() + i) * w;
                    h(buf.get(at..at + w).unwrap_or(&[]))
                })
                .collect()
        }
    }
}

fn mask(h: u32) -> [u32; 8] {
    SALT.map(|s| 1u32 << (h.wrapping_mul(s) >> 27))
}

fn block_of(h: u64, blocks: usize) -> usize {
    (((h >> 32) * blocks as u64) >> 32) as usize
}

/// Add hash `h` to filter `f` (a whole number of 32-byte blocks).
pub fn insert(f: &mut [u8], h: u64) {
    let b = block_of(h, f.len() / 32) * 32;
    for (i, m) in mask(h as u32).into_iter().enumerate() {
        let w = &mut f[b + 4 * i..b + 4 * i + 4];
        let v = u32::from_le_bytes(w.try_into().expect("4 bytes")) | m;
        w.copy_from_slice(&v.to_le_bytes());
    }
}

/// Whether filter `f` may hold hash `h`.
pub fn may_contain(f: &[u8], h: u64) -> bool {
    let blocks = f.len() / 32;
    if blocks == 0 {
        return true;
    }
    let b = block_of(h, blocks) * 32;
    mask(h as u32).into_iter().enumerate().all(|(i, m)| u32::from_le_bytes(f[b + 4 * i..b + 4 * i + 4].try_into().expect("4 bytes")) & m == m)
}

/// Write a BLOOMFILTER index of `data` (row addresses in scan order).
pub fn write(dir: &Storage, version: FileVersion, data: &TrainingData, items: u64, probability: f64) -> Result<Vec<(String, u64)>> {
    let values = &data.values;
    if !supports(values.data_type()) {
        return Err(type_error(values.data_type()));
    }
    let size = filter_bytes(items, probability)?;
    let zs = zones::split(&data.ids, items)?;
    let metadata: HashMap<String, String> = [
        (ITEMS_KEY.to_string(), items.to_string()),
        (PROBABILITY_KEY.to_string(), format_probability(probability)),
        (NULL_BITMAP_KEY.to_string(), "1".to_string()),
    ]
    .into();
    let schema = Arc::new(
        Schema::new(vec![
            Field::new("fragment_id", DataType::UInt64, false),
            Field::new("zone_start", DataType::UInt64, false),
            Field::new("zone_length", DataType::UInt64, false),
            Field::new("has_null", DataType::Boolean, false),
            Field::new("bloom_filter_data", DataType::Binary, false),
        ])
        .with_metadata(metadata),
    );
    let hashes = hash_values(values.as_ref());
    let mut w = FileWriter::create_with_lance_schema(dir.child(FILE)?, LanceSchema::from_arrow(&schema)?, version)?;
    w.add_global_buffer(Bytes::from(zones::null_bitmap(values.as_ref(), &data.ids)))?;
    let per_batch = (BATCH_BYTES / size).max(1);
    for chunk in zs.chunks(per_batch) {
        let mut bytes = vec![0u8; size * chunk.len()];
        let mut has_null = Vec::with_capacity(chunk.len());
        for ((_, rows), f) in chunk.iter().zip(bytes.chunks_mut(size)) {
            let mut nulls = false;
            for i in rows.clone() {
                if values.is_null(i) {
                    nulls = true;
                } else {
                    insert(f, hashes[i]);
                }
            }
            has_null.push(nulls);
        }
        let offsets: Vec<i32> = (0..=chunk.len()).map(|k| (k * size) as i32).collect();
        let filters = BinaryArray::new(arrow_buffer::OffsetBuffer::new(offsets.into()), arrow_buffer::Buffer::from_vec(bytes), None);
        let u64s = |f: fn(&Zone) -> u64| Arc::new(UInt64Array::from(chunk.iter().map(|(z, _)| f(z)).collect::<Vec<_>>())) as ArrayRef;
        let cols: Vec<ArrayRef> =
            vec![u64s(|z| z.fragment), u64s(|z| z.start), u64s(|z| z.length), Arc::new(BooleanArray::from(has_null)), Arc::new(filters)];
        w.write(&RecordBatch::try_new(schema.clone(), cols).map_err(Error::internal_arrow)?)?;
    }
    let size = w.finish()?;
    Ok(vec![(FILE.to_string(), size)])
}

/// `probability` as pylance writes it in the schema metadata (Rust's
/// shortest round-trip form: `0.00057`, `0.01`, `0`).
pub fn format_probability(p: f64) -> String {
    format!("{p}")
}

/// An opened BLOOMFILTER index.
#[derive(Debug)]
pub struct BloomFilterIndex {
    /// `Null`: the file does not record it.
    value_type: DataType,
    zones: Vec<Zone>,
    filters: Vec<Bytes>,
    items: u64,
    probability: f64,
    nulls: Arc<RowSet>,
}

impl BloomFilterIndex {
    /// Open the index in `dir` (the file does not record the column's
    /// type: queries hash their values by their own type, which the
    /// planner makes the column's).
    pub fn open(dir: &Storage) -> Result<Self> {
        let r = FileReader::open_storage(dir.child(FILE)?)?;
        let path = r.path().to_string();
        let [f, s, l] = ["fragment_id", "zone_start", "zone_length"].map(|n| zones::column(&r, n, Some(&DataType::UInt64)));
        let (f, s, l) = (f?, s?, l?);
        let hn = zones::column(&r, "has_null", Some(&DataType::Boolean))?;
        let data = zones::column(&r, "bloom_filter_data", None)?;
        let b = r.read_range(&[f, s, l, hn, data], 0..r.num_rows())?;
        let zones = zones::read_zones(&path, &b, [0, 1, 2])?;
        let col = b.column(4);
        let mut filters = Vec::with_capacity(col.len());
        for i in 0..col.len() {
            let bytes: &[u8] = match col.data_type() {
                DataType::Binary => col.as_binary::<i32>().value(i),
                DataType::LargeBinary => col.as_binary::<i64>().value(i),
                other => return Err(Error::corrupt_in(path, format!("bloom_filter_data is {other}, expected binary"))),
            };
            if col.is_null(i) || bytes.is_empty() || bytes.len() % 32 != 0 {
                return Err(Error::corrupt_in(path, format!("zone {i} has a bloom filter of {} bytes (not whole 32-byte blocks)", bytes.len())));
            }
            filters.push(Bytes::copy_from_slice(bytes));
        }
        let md = r.schema().metadata();
        let items = match md.get(ITEMS_KEY) {
            Some(v) => v.parse().map_err(|_| Error::corrupt_in(path.clone(), format!("{ITEMS_KEY} {v:?} is not a number")))?,
            None => DEFAULT_ITEMS,
        };
        let probability = match md.get(PROBABILITY_KEY) {
            Some(v) => v.parse().map_err(|_| Error::corrupt_in(path.clone(), format!("{PROBABILITY_KEY} {v:?} is not a number")))?,
            None => DEFAULT_PROBABILITY,
        };
        let nulls = Arc::new(zones::read_null_bitmap(&r)?);
        Ok(BloomFilterIndex { value_type: DataType::Null, zones, filters, items, probability, nulls })
    }

    /// The zones, in file order.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// `number_of_items` and `probability`.
    pub fn params(&self) -> (u64, f64) {
        (self.items, self.probability)
    }

    /// The hashes to look for (`None`: every zone may match). Float
    /// filters compare `-0.0 = 0.0` while the filters hash their bits, so
    /// a zero looks for both; a NaN (of any bits) matches every zone.
    fn hashes(&self, vs: &ArrayRef) -> Result<Option<Vec<u64>>> {
        if !supports(vs.data_type()) {
            return Err(Error::Internal { what: format!("a {} value asked of a bloom filter", vs.data_type()) });
        }
        let all = hash_values(vs.as_ref());
        let mut out: Vec<u64> = (0..vs.len()).filter(|&i| vs.is_valid(i)).map(|i| all[i]).collect();
        let h = |b: &[u8]| twox_hash::XxHash64::oneshot(0, b);
        match vs.data_type() {
            DataType::Float32 => {
                for v in vs.as_primitive::<arrow_array::types::Float32Type>().iter().flatten() {
                    if v.is_nan() {
                        return Ok(None);
                    }
                    if v == 0.0 {
                        out.extend([h(&0.0f32.to_le_bytes()), h(&(-0.0f32).to_le_bytes())]);
                    }
                }
            }
            DataType::Float64 => {
                for v in vs.as_primitive::<arrow_array::types::Float64Type>().iter().flatten() {
                    if v.is_nan() {
                        return Ok(None);
                    }
                    if v == 0.0 {
                        out.extend([h(&0.0f64.to_le_bytes()), h(&(-0.0f64).to_le_bytes())]);
                    }
                }
            }
            _ => {}
        }
        Ok(Some(out))
    }
}

impl ScalarIndex for BloomFilterIndex {
    fn kind(&self) -> IndexKind {
        IndexKind::BloomFilter
    }

    fn value_type(&self) -> &DataType {
        &self.value_type
    }

    fn search(&self, query: &IndexQuery) -> Result<RowSet> {
        let hs = match query {
            IndexQuery::IsNull => return Ok((*self.nulls).clone()),
            IndexQuery::Equals(v) | IndexQuery::In(v) => self.hashes(v)?,
            _ => return Err(Error::Internal { what: format!("{query:?} asked of a BLOOMFILTER index") }),
        };
        match hs {
            None => zones::rows_of(&self.zones, |_| Ok(true)),
            Some(hs) => zones::rows_of(&self.zones, |z| Ok(hs.iter().any(|h| may_contain(&self.filters[z], *h)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_parquet() {
        assert_eq!(filter_bytes(8192, 0.00057).unwrap(), 32768);
        assert_eq!(filter_bytes(4, 0.01).unwrap(), 32);
        // pylance 14's sizes
        for (n, p, bytes) in [
            (100, 0.01, 256),
            (65, 0.01, 128),
            (1000, 0.01, 2048),
            (1500, 0.001, 4096),
            (5000, 0.2, 4096),
            (7, 0.5, 32),
            (129, 0.00057, 512),
            (2049, 0.1, 2048),
        ] {
            assert_eq!(filter_bytes(n, p).unwrap(), bytes, "{n} {p}");
        }
        assert!(filter_bytes(3, 1.0).is_err());
        assert!(filter_bytes(3, -0.5).is_err());
        assert_eq!(format_probability(0.00057), "0.00057");
    }

    #[test]
    fn inserted_values_are_found() {
        let a: ArrayRef = Arc::new(arrow_array::Int64Array::from((0..1000).collect::<Vec<i64>>()));
        let mut f = vec![0u8; filter_bytes(1000, 0.01).unwrap()];
        let hs = hash_values(a.as_ref());
        for h in &hs {
            insert(&mut f, *h);
        }
        assert!(hs.iter().all(|h| may_contain(&f, *h)));
        let other: ArrayRef = Arc::new(arrow_array::Int64Array::from((5000..6000).collect::<Vec<i64>>()));
        let fp = hash_values(other.as_ref()).into_iter().filter(|h| may_contain(&f, *h)).count();
        assert!(fp < 100, "{fp} false positives");
    }
}
