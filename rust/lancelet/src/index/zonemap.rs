//! ZONEMAP indices: the minimum, maximum, null and NaN counts of each zone
//! of live rows (see [`super::zones`]), as pylance 14 writes them.
//!
//! ```text
//! _indices/{uuid}/zonemap.lance
//!     min:         <column type> (nullable)  smallest non-null value
//!     max:         <column type> (nullable)  largest (NaN when the zone holds one)
//!     null_count:  uint32 not null
//!     nan_count:   uint32 not null           NaNs (float columns)
//!     fragment_id: uint64 not null
//!     zone_start:  uint64 not null           offset of the zone's first live row
//!     zone_length: uint64 not null           span to its last live row
//!     global buffer 1: the null rows (zones.rs)
//!     schema metadata: rows_per_zone = "8192", null_bitmap = "1"
//! ```
//!
//! Values are ordered as Arrow's comparators order them (floats by
//! `total_cmp`, so NaN is the largest); `min` skips NaNs; a zone of nulls
//! only has null `min`/`max` (a zone of NaNs a null `min`). The manifest entry's details are
//! `/lance.table.ZoneMapIndexDetails` with field 1 = rows_per_zone, field 2
//! = 1 for string, binary and decimal columns (0 otherwise), field 3 = 1;
//! `index_version` 0.
//!
//! A search answers with the rows of every zone that may hold a match, so
//! the filter is applied again to them: float zones holding a NaN always
//! may, and float comparisons are made inclusive and blind to the sign of
//! zero (DataFusion orders `-0.0 < 0.0`; a file writer may not), so the
//! answer is a superset whatever the writer's order of zeros. `IS NULL` is
//! answered exactly from the null bitmap.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type, UInt32Type};
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_ord::ord::make_comparator;
use arrow_schema::{DataType, Field, Schema, SortOptions};
use bytes::Bytes;

use super::rowset::RowSet;
use super::zones::{self, Zone, NULL_BITMAP_KEY};
use super::{IndexKind, IndexQuery, RangeEnd, ScalarIndex, TrainingData};
use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::{FileReader, FileVersion, FileWriter};
use crate::io::Storage;

/// The one file of a zone map index.
pub const FILE: &str = "zonemap.lance";
/// Schema metadata key of the zone size.
pub const ROWS_PER_ZONE_KEY: &str = "rows_per_zone";
/// pylance's default zone size.
pub const DEFAULT_ROWS_PER_ZONE: u64 = 8192;

fn is_float(dt: &DataType) -> bool {
    matches!(dt, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

/// Value `i` of a float array as f64 (`None` for other types).
fn float_at(a: &dyn Array, i: usize) -> Option<f64> {
    Some(match a.data_type() {
        DataType::Float16 => a.as_primitive::<Float16Type>().value(i).to_f64(),
        DataType::Float32 => a.as_primitive::<Float32Type>().value(i) as f64,
        DataType::Float64 => a.as_primitive::<Float64Type>().value(i),
        _ => return None,
    })
}

/// The `index_details` value: rows_per_zone, byte-like column, 1.
pub fn details(rows_per_zone: u64, dt: &DataType) -> Vec<u8> {
    let mut out = vec![0x08];
    let mut v = rows_per_zone;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    let bytes_like = matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary | DataType::Decimal128(..) | DataType::Decimal256(..)
    );
    out.extend_from_slice(&[0x10, u8::from(bytes_like), 0x18, 0x01]);
    out
}

/// Write a ZONEMAP index of `data` (row addresses in scan order).
pub fn write(dir: &Storage, version: FileVersion, data: &TrainingData, rows_per_zone: u64) -> Result<Vec<(String, u64)>> {
    let values = &data.values;
    let dt = values.data_type().clone();
    let zs = zones::split(&data.ids, rows_per_zone)?;
    let cmp = make_comparator(values.as_ref(), values.as_ref(), SortOptions::default()).map_err(Error::internal_arrow)?;
    let float = is_float(&dt);
    let (mut mins, mut maxs) = (Vec::with_capacity(zs.len()), Vec::with_capacity(zs.len()));
    let (mut nulls, mut nans) = (Vec::with_capacity(zs.len()), Vec::with_capacity(zs.len()));
    for (_, rows) in &zs {
        let (mut lo, mut hi): (Option<usize>, Option<usize>) = (None, None);
        let (mut n_null, mut n_nan) = (0u32, 0u32);
        for i in rows.clone() {
            if values.is_null(i) {
                n_null += 1;
                continue;
            }
            if float && float_at(values.as_ref(), i).is_some_and(f64::is_nan) {
                // NaN is the largest value but never the minimum (a zone of
                // NaNs has a null min, as pylance writes it).
                n_nan += 1;
                if hi.is_none_or(|h| cmp(i, h) == Ordering::Greater) {
                    hi = Some(i);
                }
                continue;
            }
            if lo.is_none_or(|l| cmp(i, l) == Ordering::Less) {
                lo = Some(i);
            }
            if hi.is_none_or(|h| cmp(i, h) == Ordering::Greater) {
                hi = Some(i);
            }
        }
        mins.push(lo.map(|i| i as u32));
        maxs.push(hi.map(|i| i as u32));
        nulls.push(n_null);
        nans.push(n_nan);
    }
    if values.len() > u32::MAX as usize {
        return Err(Error::invalid_input("a ZONEMAP index build holds at most 2^32 rows"));
    }
    if matches!(dt, DataType::FixedSizeBinary(_)) {
        // pylance 14 keeps no statistics for fixed-size binary columns.
        mins.iter_mut().chain(maxs.iter_mut()).for_each(|m| *m = None);
    }
    let take = |ix: Vec<Option<u32>>| arrow_select::take::take(values.as_ref(), &UInt32Array::from(ix), None).map_err(Error::internal_arrow);
    let metadata: HashMap<String, String> =
        [(ROWS_PER_ZONE_KEY.to_string(), rows_per_zone.to_string()), (NULL_BITMAP_KEY.to_string(), "1".to_string())].into();
    let schema = Arc::new(
        Schema::new(vec![
            Field::new("min", dt.clone(), true),
            Field::new("max", dt.clone(), true),
            Field::new("null_count", DataType::UInt32, false),
            Field::new("nan_count", DataType::UInt32, false),
            Field::new("fragment_id", DataType::UInt64, false),
            Field::new("zone_start", DataType::UInt64, false),
            Field::new("zone_length", DataType::UInt64, false),
        ])
        .with_metadata(metadata),
    );
    let u64s = |f: fn(&Zone) -> u64| Arc::new(UInt64Array::from(zs.iter().map(|(z, _)| f(z)).collect::<Vec<_>>())) as ArrayRef;
    let cols: Vec<ArrayRef> = vec![
        take(mins)?,
        take(maxs)?,
        Arc::new(UInt32Array::from(nulls)),
        Arc::new(UInt32Array::from(nans)),
        u64s(|z| z.fragment),
        u64s(|z| z.start),
        u64s(|z| z.length),
    ];
    let mut w = FileWriter::create_with_lance_schema(dir.child(FILE)?, LanceSchema::from_arrow(&schema)?, version)?;
    w.add_global_buffer(Bytes::from(zones::null_bitmap(values.as_ref(), &data.ids)))?;
    if !zs.is_empty() {
        w.write(&RecordBatch::try_new(schema, cols).map_err(Error::internal_arrow)?)?;
    }
    let size = w.finish()?;
    Ok(vec![(FILE.to_string(), size)])
}

/// An opened ZONEMAP index.
#[derive(Debug)]
pub struct ZoneMapIndex {
    value_type: DataType,
    zones: Vec<Zone>,
    min: ArrayRef,
    max: ArrayRef,
    null_count: Vec<u32>,
    nan_count: Vec<u32>,
    rows_per_zone: u64,
    nulls: Arc<RowSet>,
}

impl ZoneMapIndex {
    /// Open the index in `dir`.
    pub fn open(dir: &Storage) -> Result<Self> {
        let r = FileReader::open_storage(dir.child(FILE)?)?;
        let path = r.path().to_string();
        let min = zones::column(&r, "min", None)?;
        let value_type = r.schema().field(min).data_type().clone();
        let max = zones::column(&r, "max", Some(&value_type))?;
        let nc = zones::column(&r, "null_count", Some(&DataType::UInt32))?;
        let nanc = zones::column(&r, "nan_count", Some(&DataType::UInt32))?;
        let zc = ["fragment_id", "zone_start", "zone_length"].map(|n| zones::column(&r, n, Some(&DataType::UInt64)));
        let [f, s, l] = zc;
        let (f, s, l) = (f?, s?, l?);
        let b = r.read_range(&[min, max, nc, nanc, f, s, l], 0..r.num_rows())?;
        let zones = zones::read_zones(&path, &b, [4, 5, 6])?;
        let counts = |c: usize| -> Result<Vec<u32>> {
            let a = b.column(c).as_primitive::<UInt32Type>();
            if a.null_count() > 0 {
                return Err(Error::corrupt_in(path.clone(), "null counts hold nulls"));
            }
            Ok(a.values().to_vec())
        };
        let rows_per_zone = match r.schema().metadata().get(ROWS_PER_ZONE_KEY) {
            Some(v) => v.parse().map_err(|_| Error::corrupt_in(path.clone(), format!("rows_per_zone {v:?} is not a number")))?,
            None => DEFAULT_ROWS_PER_ZONE,
        };
        let nulls = Arc::new(zones::read_null_bitmap(&r)?);
        Ok(ZoneMapIndex {
            value_type,
            zones,
            min: b.column(0).clone(),
            max: b.column(1).clone(),
            null_count: counts(2)?,
            nan_count: counts(3)?,
            rows_per_zone,
            nulls,
        })
    }

    /// The zones, in file order.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// Nulls per zone.
    pub fn null_counts(&self) -> &[u32] {
        &self.null_count
    }

    /// Its zone size.
    pub fn rows_per_zone(&self) -> u64 {
        self.rows_per_zone
    }

    fn check_type(&self, v: &ArrayRef) -> Result<()> {
        if v.data_type() != &self.value_type {
            return Err(Error::Internal { what: format!("a {} value asked of a zone map on {}", v.data_type(), self.value_type) });
        }
        Ok(())
    }

    /// `-1`, `0`, `1`: stat `a[z]` against `v[0]` (floats by value, zeros
    /// equal); `None` when the answer cannot be trusted (a NaN).
    fn order(&self, a: &ArrayRef, z: usize, v: &ArrayRef) -> Result<Option<Ordering>> {
        if is_float(&self.value_type) {
            let (x, y) = (float_at(a.as_ref(), z).expect("float"), float_at(v.as_ref(), 0).expect("float"));
            return Ok(x.partial_cmp(&y));
        }
        let c = make_comparator(a.as_ref(), v.as_ref(), SortOptions::default()).map_err(Error::internal_arrow)?;
        Ok(Some(c(z, 0)))
    }

    /// Whether zone `z` may hold a value satisfying `lower`/`upper`.
    fn may_match(&self, z: usize, lower: Option<&RangeEnd>, upper: Option<&RangeEnd>) -> Result<bool> {
        if self.nan_count[z] > 0 {
            return Ok(true);
        }
        if self.min.is_null(z) || self.max.is_null(z) {
            // Only nulls, or no statistics (pylance keeps none for
            // fixed-size binary): may.
            return Ok(true);
        }
        let float = is_float(&self.value_type);
        if let Some(e) = lower {
            match self.order(&self.max, z, &e.value)? {
                None => return Ok(true),
                Some(Ordering::Less) => return Ok(false),
                Some(Ordering::Equal) if !e.inclusive && !float => return Ok(false),
                _ => {}
            }
        }
        if let Some(e) = upper {
            match self.order(&self.min, z, &e.value)? {
                None => return Ok(true),
                Some(Ordering::Greater) => return Ok(false),
                Some(Ordering::Equal) if !e.inclusive && !float => return Ok(false),
                _ => {}
            }
        }
        Ok(true)
    }

    fn equals(&self, z: usize, v: &ArrayRef) -> Result<bool> {
        let e = RangeEnd { value: v.clone(), inclusive: true };
        self.may_match(z, Some(&e), Some(&e))
    }
}

impl ScalarIndex for ZoneMapIndex {
    fn kind(&self) -> IndexKind {
        IndexKind::ZoneMap
    }

    fn value_type(&self) -> &DataType {
        &self.value_type
    }

    fn search(&self, query: &IndexQuery) -> Result<RowSet> {
        match query {
            IndexQuery::IsNull => Ok((*self.nulls).clone()),
            IndexQuery::Equals(v) => {
                self.check_type(v)?;
                if v.is_null(0) {
                    return Ok(RowSet::new());
                }
                zones::rows_of(&self.zones, |z| self.equals(z, v))
            }
            IndexQuery::In(vs) => {
                self.check_type(vs)?;
                let vs: Vec<ArrayRef> = (0..vs.len()).filter(|&i| vs.is_valid(i)).map(|i| vs.slice(i, 1)).collect();
                zones::rows_of(&self.zones, |z| {
                    for v in &vs {
                        if self.equals(z, v)? {
                            return Ok(true);
                        }
                    }
                    Ok(false)
                })
            }
            IndexQuery::Range { lower, upper } => {
                for e in lower.iter().chain(upper.iter()) {
                    self.check_type(&e.value)?;
                }
                zones::rows_of(&self.zones, |z| self.may_match(z, lower.as_ref(), upper.as_ref()))
            }
            _ => Err(Error::Internal { what: format!("{query:?} asked of a ZONEMAP index") }),
        }
    }
}
