//! What ZONEMAP and BLOOMFILTER indices share: zones of live rows, the
//! null-row bitmap, and the `(fragment_id, zone_start, zone_length)`
//! columns.
//!
//! A zone is a run of up to `N` **live** rows of one fragment, counted in
//! offset order (deleted rows are skipped, fragments never share a zone):
//! `zone_start` is the offset of its first live row and `zone_length` the
//! span to its last one (`last - first + 1`, deleted rows inside included).
//! Zones are listed fragment by fragment in the dataset's fragment order.
//! Both indices answer with the rows of the zones that may hold a match
//! (the filter is evaluated again on them), never with row ids, so they
//! neither follow stable row ids nor survive a compaction.
//!
//! ```text
//! global buffer 1 (schema metadata null_bitmap = "1"): the addresses of
//!     the rows whose value is null, as a RowIdTreeMap (rowset.rs):
//!     u32 n, n × (u32 fragment id, u32 byte length, portable Roaring
//!     bitmap of offsets); `00000000` when no row is null
//! ```

use std::collections::BTreeMap;
use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, RecordBatch, UInt64Array};
use arrow_schema::DataType;
use roaring::RoaringBitmap;

use super::rowset::RowSet;
use crate::error::{Error, Result};
use crate::file::FileReader;

/// Schema metadata key marking the null bitmap in global buffer 1.
pub const NULL_BITMAP_KEY: &str = "null_bitmap";

/// One zone: rows `start..start + length` of fragment `fragment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    /// Fragment id.
    pub fragment: u64,
    /// Offset of the first live row.
    pub start: u64,
    /// Span from the first to the last live row.
    pub length: u64,
}

/// Split rows (addresses in scan order: by fragment, then offset) into
/// zones of `per_zone` live rows; each zone with the positions (into
/// `ids`) of its rows.
pub fn split(ids: &UInt64Array, per_zone: u64) -> Result<Vec<(Zone, Range<usize>)>> {
    if per_zone == 0 {
        return Err(Error::invalid_input("zone capacity must be greater than zero"));
    }
    let ids = ids.values();
    let mut out: Vec<(Zone, Range<usize>)> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let frag = ids[i] >> 32;
        let first = i;
        let mut n = 0u64;
        while i < ids.len() && ids[i] >> 32 == frag && n < per_zone {
            if i > first && ids[i] <= ids[i - 1] {
                return Err(Error::Internal { what: "zone rows out of address order".into() });
            }
            i += 1;
            n += 1;
        }
        let (a, b) = (ids[first] & 0xFFFF_FFFF, ids[i - 1] & 0xFFFF_FFFF);
        out.push((Zone { fragment: frag, start: a, length: b - a + 1 }, first..i));
    }
    Ok(out)
}

/// Global buffer 1: the addresses of rows whose value is null.
pub fn null_bitmap(values: &dyn Array, ids: &UInt64Array) -> Vec<u8> {
    let ids = ids.values();
    let nulls: Vec<u64> = (0..values.len()).filter(|&i| values.is_null(i)).map(|i| ids[i]).collect();
    RowSet::from_ids(nulls).to_bytes()
}

/// Read the null bitmap of an index file (empty when the file has none).
pub fn read_null_bitmap(r: &FileReader) -> Result<RowSet> {
    if r.schema().metadata().get(NULL_BITMAP_KEY).map(String::as_str) != Some("1") || r.num_global_buffers() < 2 {
        return Ok(RowSet::new());
    }
    let bytes = r.read_global_buffer(1)?;
    RowSet::from_bytes(&bytes).map_err(|e| e.in_file(r.path()).context("null bitmap (global buffer 1)"))
}

/// The position of column `name` of type `dt` (`None`: any type) in the
/// file, or a corrupt-file error.
pub fn column(r: &FileReader, name: &str, dt: Option<&DataType>) -> Result<usize> {
    let s = r.schema();
    match s.fields().iter().position(|f| f.name() == name) {
        Some(i) if dt.is_none_or(|d| s.field(i).data_type() == d) => Ok(i),
        Some(i) => {
            Err(Error::corrupt_in(r.path().to_string(), format!("column {name} is {}, expected {}", s.field(i).data_type(), dt.expect("some"))))
        }
        None => Err(Error::corrupt_in(r.path().to_string(), format!("no column {name} (schema {s})"))),
    }
}

/// The zones of a batch holding `fragment_id`, `zone_start` and
/// `zone_length` (u64, no nulls) at `cols`.
pub fn read_zones(path: &str, b: &RecordBatch, cols: [usize; 3]) -> Result<Vec<Zone>> {
    let [f, s, l] = cols.map(|c| b.column(c).as_primitive::<UInt64Type>().clone());
    if f.null_count() + s.null_count() + l.null_count() > 0 {
        return Err(Error::corrupt_in(path.to_string(), "null fragment_id, zone_start or zone_length"));
    }
    let mut out = Vec::with_capacity(f.len());
    for i in 0..f.len() {
        let z = Zone { fragment: f.value(i), start: s.value(i), length: l.value(i) };
        if z.fragment > u32::MAX as u64 || z.start.checked_add(z.length).is_none_or(|e| e > 1 << 32) {
            return Err(Error::corrupt_in(path.to_string(), format!("zone {i} ({z:?}) lies outside any fragment")));
        }
        out.push(z);
    }
    Ok(out)
}

/// The rows of the zones for which `keep` holds.
pub fn rows_of(zones: &[Zone], mut keep: impl FnMut(usize) -> Result<bool>) -> Result<RowSet> {
    let mut parts: BTreeMap<u32, RoaringBitmap> = BTreeMap::new();
    for (i, z) in zones.iter().enumerate() {
        if z.length > 0 && keep(i)? {
            // read_zones checked the bounds.
            parts.entry(z.fragment as u32).or_default().insert_range(z.start as u32..(z.start + z.length).min(u32::MAX as u64) as u32);
            if z.start + z.length > u32::MAX as u64 {
                parts.entry(z.fragment as u32).or_default().insert(u32::MAX);
            }
        }
    }
    let mut out = RowSet::new();
    for (hi, b) in parts {
        out.insert_bitmap(hi, b);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_count_live_rows() {
        // 10 rows, offsets 0, 1 and 5 deleted, 4 rows per zone (pylance's zm2).
        let ids = UInt64Array::from(vec![2, 3, 4, 6, 7, 8, 9]);
        let z: Vec<Zone> = split(&ids, 4).unwrap().into_iter().map(|(z, _)| z).collect();
        assert_eq!(z, vec![Zone { fragment: 0, start: 2, length: 5 }, Zone { fragment: 0, start: 7, length: 3 }]);
        let ids = UInt64Array::from((0..12u64).chain((1 << 32)..(1 << 32) + 3).collect::<Vec<_>>());
        let z: Vec<(u64, u64, u64)> = split(&ids, 5).unwrap().into_iter().map(|(z, _)| (z.fragment, z.start, z.length)).collect();
        assert_eq!(z, vec![(0, 0, 5), (0, 5, 5), (0, 10, 2), (1, 0, 3)]);
        assert!(split(&ids, 0).is_err());
        let rows = rows_of(&[Zone { fragment: 1, start: 2, length: 2 }], |_| Ok(true)).unwrap();
        assert_eq!(rows.values().unwrap(), vec![(1 << 32) + 2, (1 << 32) + 3]);
    }
}
