//! Scalar indices in Lance's (pylance 14's) format: BTREE, BITMAP,
//! LABEL_LIST, ZONEMAP and BLOOMFILTER.
//!
//! An index lives in `_indices/{uuid}/` of the dataset as Lance files of the
//! dataset's data storage version (read and written through [`crate::file`])
//! and is listed in the manifest's index section ([`meta`]). One narrow
//! trait, [`ScalarIndex`], answers an [`IndexQuery`] with the set of rows
//! ([`rowset::RowSet`]) whose value satisfies it, over the fragments the
//! index covers. An index never scans a table: building one is handed the
//! column's values and row ids ([`crate::table::ops::index`] reads them),
//! and using one is decided by the filter planner ([`crate::expr`]).
//!
//! | kind | files | rows |
//! |---|---|---|
//! | BTREE ([`btree`]) | `page_data.lance` (`values`, `ids`), `page_lookup.lance` (`min`, `max`, `null_count`, `page_idx`) | one per indexed row, sorted by value, nulls first; 4096-row pages |
//! | BITMAP ([`bitmap`]) | `bitmap_page_lookup.lance` (`keys`, `bitmaps`) | one per distinct value, sorted, null first |
//! | LABEL_LIST ([`label_list`]) | `bitmap_page_lookup.lance` over list elements, null lists in global buffer 1 | one per distinct element |
//! | ZONEMAP ([`zonemap`]) | `zonemap.lance` (`min`, `max`, `null_count`, `nan_count`, `fragment_id`, `zone_start`, `zone_length`), null rows in global buffer 1 | one per zone of `rows_per_zone` live rows |
//! | BLOOMFILTER ([`bloomfilter`]) | `bloomfilter.lance` (`fragment_id`, `zone_start`, `zone_length`, `has_null`, `bloom_filter_data`), null rows in global buffer 1 | one per zone of `number_of_items` live rows |
//!
//! `ids` / bitmaps hold row addresses (`fragment << 32 | offset`), except
//! BITMAP and LABEL_LIST indices on datasets with stable row ids, which hold
//! stable row ids ([`IndexKind::keyed_by_row_id`]). ZONEMAP and BLOOMFILTER
//! answers are inexact ([`IndexKind::exact_for`]): the rows of the zones
//! that may hold a match, on which the filter is applied again.

pub mod bitmap;
pub mod bloomfilter;
pub mod btree;
pub mod frag_reuse;
pub(crate) mod group;
pub mod inverted;
pub mod label_list;
pub mod meta;
pub mod remap;
pub mod rowset;
pub mod vector;
pub mod zonemap;
pub mod zones;

use std::fmt;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use crate::error::{Error, Result};
use rowset::RowSet;

/// The index kinds lancelet builds and uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// Sorted values with their rows, in pages of 4096.
    BTree,
    /// One row set per distinct value.
    Bitmap,
    /// One row set per distinct list element.
    LabelList,
    /// Minimum, maximum, null and NaN counts per zone of rows.
    ZoneMap,
    /// A split block bloom filter per zone of rows.
    BloomFilter,
}

impl IndexKind {
    /// Every kind.
    pub const ALL: [IndexKind; 5] = [IndexKind::BTree, IndexKind::Bitmap, IndexKind::LabelList, IndexKind::ZoneMap, IndexKind::BloomFilter];

    /// The `index_type` argument naming it (`"BTREE"`, ...).
    pub fn param_name(self) -> &'static str {
        match self {
            IndexKind::BTree => "BTREE",
            IndexKind::Bitmap => "BITMAP",
            IndexKind::LabelList => "LABEL_LIST",
            IndexKind::ZoneMap => "ZONEMAP",
            IndexKind::BloomFilter => "BLOOMFILTER",
        }
    }

    /// The name pylance shows (`list_indices()["type"]`, plans).
    pub fn display_name(self) -> &'static str {
        match self {
            IndexKind::BTree => "BTree",
            IndexKind::Bitmap => "Bitmap",
            IndexKind::LabelList => "LabelList",
            IndexKind::ZoneMap => "ZoneMap",
            IndexKind::BloomFilter => "BloomFilter",
        }
    }

    /// Type URL of its `index_details` (an empty message but for ZONEMAP's,
    /// see [`IndexParams::details`]; BLOOMFILTER's is in `lance.index.pb`).
    pub fn type_url(self) -> &'static str {
        match self {
            IndexKind::BTree => "/lance.table.BTreeIndexDetails",
            IndexKind::Bitmap => "/lance.table.BitmapIndexDetails",
            IndexKind::LabelList => "/lance.table.LabelListIndexDetails",
            IndexKind::ZoneMap => "/lance.table.ZoneMapIndexDetails",
            IndexKind::BloomFilter => "/lance.index.pb.BloomFilterIndexDetails",
        }
    }

    /// The kind of a type URL (`None` for other index types).
    pub fn from_type_url(url: &str) -> Option<IndexKind> {
        IndexKind::ALL.into_iter().find(|k| url == k.type_url() || url.rsplit('/').next() == k.type_url().rsplit('/').next())
    }

    /// Parse an `index_type` argument (case-insensitive, pylance's
    /// spellings); other known types are unsupported, unknown ones invalid.
    pub fn parse(name: &str) -> Result<IndexKind> {
        match name.to_ascii_uppercase().as_str() {
            "BTREE" => Ok(IndexKind::BTree),
            "BITMAP" => Ok(IndexKind::Bitmap),
            "LABEL_LIST" | "LABELLIST" => Ok(IndexKind::LabelList),
            "ZONEMAP" => Ok(IndexKind::ZoneMap),
            "BLOOMFILTER" => Ok(IndexKind::BloomFilter),
            "NGRAM" | "INVERTED" | "FTS" | "JSON" => Err(Error::unsupported(format!(
                "{name} indices are not implemented in lancelet (BTREE, BITMAP, LABEL_LIST, ZONEMAP and BLOOMFILTER are)"
            ))),
            _ => Err(Error::invalid_input(format!("unknown index type {name:?} (expected BTREE, BITMAP, LABEL_LIST, ZONEMAP or BLOOMFILTER)"))),
        }
    }

    /// Whether its row sets hold stable row ids (else row addresses) on a
    /// dataset with (`stable`) or without stable row ids. BTREE always
    /// holds addresses; ZONEMAP and BLOOMFILTER hold zones of addresses.
    pub fn keyed_by_row_id(self, stable: bool) -> bool {
        stable && matches!(self, IndexKind::Bitmap | IndexKind::LabelList)
    }

    /// Whether its answer to `query` is exactly the matching rows (else a
    /// superset the filter is applied to again).
    pub fn exact_for(self, query: &IndexQuery) -> bool {
        match self {
            IndexKind::ZoneMap | IndexKind::BloomFilter => matches!(query, IndexQuery::IsNull),
            _ => true,
        }
    }

    /// Whether plans use it under a `NOT` for `query` (pylance: a zone map
    /// for `IS NOT NULL`, a bloom filter never).
    pub fn negatable(self, query: &IndexQuery) -> bool {
        match self {
            IndexKind::ZoneMap => matches!(query, IndexQuery::IsNull),
            IndexKind::BloomFilter => false,
            _ => true,
        }
    }

    /// Whether a compaction can rewrite it for the new row addresses
    /// (ZONEMAP and BLOOMFILTER zones cannot be: pylance leaves such an
    /// index covering the old fragments, i.e. nothing, until it is rebuilt).
    pub fn remappable(self) -> bool {
        !matches!(self, IndexKind::ZoneMap | IndexKind::BloomFilter)
    }

    /// The `index_version` pylance 14 records for it.
    pub fn index_version(self, stable: bool) -> i32 {
        match self {
            IndexKind::BTree => i32::from(stable),
            IndexKind::Bitmap => 0,
            IndexKind::LabelList => 1,
            IndexKind::ZoneMap | IndexKind::BloomFilter => 0,
        }
    }

    /// Check that a column of type `dt` can take this index.
    pub fn check_type(self, column: &str, dt: &DataType) -> Result<()> {
        let ok = match self {
            IndexKind::BloomFilter if bloomfilter::supports(dt) => true,
            IndexKind::BloomFilter => return Err(bloomfilter::type_error(dt)),
            IndexKind::BTree | IndexKind::Bitmap | IndexKind::ZoneMap => is_scalar_key(dt),
            IndexKind::LabelList => match dt {
                DataType::List(f) | DataType::LargeList(f) => is_scalar_key(f.data_type()),
                _ => false,
            },
        };
        if ok {
            return Ok(());
        }
        let need = match self {
            IndexKind::LabelList => "a list or large list of booleans, numbers, strings, binary, decimals, dates or times",
            _ => "booleans, numbers, strings, binary, decimals, fixed-size binary, dates, times or timestamps",
        };
        Err(Error::invalid_input(format!("cannot build a {} index on column {column:?} of type {dt}: it needs {need}", self.param_name())))
    }
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display_name())
    }
}

/// Types whose values an index can key on.
pub fn is_scalar_key(dt: &DataType) -> bool {
    use DataType as T;
    matches!(
        dt,
        T::Boolean
            | T::Int8
            | T::Int16
            | T::Int32
            | T::Int64
            | T::UInt8
            | T::UInt16
            | T::UInt32
            | T::UInt64
            | T::Float16
            | T::Float32
            | T::Float64
            | T::Utf8
            | T::LargeUtf8
            | T::Binary
            | T::LargeBinary
            | T::FixedSizeBinary(_)
            | T::Decimal128(_, _)
            | T::Decimal256(_, _)
            | T::Date32
            | T::Date64
            | T::Time32(_)
            | T::Time64(_)
            | T::Timestamp(_, _)
            | T::Duration(_)
    )
}

/// One end of a range query: the value and whether it is included.
#[derive(Debug, Clone)]
pub struct RangeEnd {
    /// A one-value array of the column's type.
    pub value: ArrayRef,
    /// `<=`/`>=` rather than `<`/`>`.
    pub inclusive: bool,
}

/// A question one index answers exactly. Values are arrays of the indexed
/// column's type (for label lists: of the element type).
#[derive(Debug, Clone)]
pub enum IndexQuery {
    /// `col = v` (one non-null value).
    Equals(ArrayRef),
    /// `col > / >= lower AND col < / <= upper` (either end may be open).
    Range { lower: Option<RangeEnd>, upper: Option<RangeEnd> },
    /// `col IN (values)` (non-null values).
    In(ArrayRef),
    /// `col IS NULL`.
    IsNull,
    /// `array_has_any(col, values)`: lists holding one of the values (a null
    /// value matches lists with a null element).
    HasAny(ArrayRef),
    /// `array_has_all(col, values)`: lists holding every value (non-empty).
    HasAll(ArrayRef),
}

impl IndexQuery {
    /// The kinds of index that answer it.
    pub fn answered_by(&self, kind: IndexKind) -> bool {
        match self {
            IndexQuery::HasAny(_) | IndexQuery::HasAll(_) => kind == IndexKind::LabelList,
            IndexQuery::Range { .. } => !matches!(kind, IndexKind::LabelList | IndexKind::BloomFilter),
            _ => kind != IndexKind::LabelList,
        }
    }

    /// pylance's rendering in plans: `id = 5`, `id IN [1,2]`,
    /// `id >= 10 && id <= 20`, `id IS NULL`, `array_has_any(tags, List([a, b]))`.
    pub fn display(&self, column: &str) -> String {
        match self {
            IndexQuery::Equals(v) => format!("{column} = {}", show_value(v, 0)),
            IndexQuery::In(v) => format!("{column} IN [{}]", (0..v.len()).map(|i| show_value(v, i)).collect::<Vec<_>>().join(",")),
            IndexQuery::IsNull => format!("{column} IS NULL"),
            IndexQuery::Range { lower, upper } => {
                let lo = lower.as_ref().map(|e| format!("{column} {} {}", if e.inclusive { ">=" } else { ">" }, show_value(&e.value, 0)));
                let hi = upper.as_ref().map(|e| format!("{column} {} {}", if e.inclusive { "<=" } else { "<" }, show_value(&e.value, 0)));
                match (lo, hi) {
                    (Some(a), Some(b)) => format!("{a} && {b}"),
                    (Some(a), None) | (None, Some(a)) => a,
                    (None, None) => format!("{column} IS NOT NULL OR {column} IS NULL"),
                }
            }
            IndexQuery::HasAny(v) | IndexQuery::HasAll(v) => {
                let f = if matches!(self, IndexQuery::HasAny(_)) { "array_has_any" } else { "array_has_all" };
                format!("{f}({column}, List([{}]))", (0..v.len()).map(|i| show_value(v, i)).collect::<Vec<_>>().join(", "))
            }
        }
    }
}

/// A value as DataFusion prints scalars (strings unquoted, nulls empty).
fn show_value(a: &ArrayRef, i: usize) -> String {
    if a.is_null(i) {
        return String::new();
    }
    // DataFusion prints floats as Rust does (`50`, `0.5`, `-0`, `NaN`).
    match a.data_type() {
        DataType::Float32 => return format!("{}", a.as_any().downcast_ref::<arrow_array::Float32Array>().expect("f32").value(i)),
        DataType::Float64 => return format!("{}", a.as_any().downcast_ref::<arrow_array::Float64Array>().expect("f64").value(i)),
        _ => {}
    }
    let opts = arrow_cast::display::FormatOptions::default();
    match arrow_cast::display::ArrayFormatter::try_new(a.as_ref(), &opts) {
        Ok(f) => f.value(i).to_string(),
        Err(_) => "?".into(),
    }
}

/// An opened index: answers queries over the rows it holds.
pub trait ScalarIndex: Send + Sync + fmt::Debug {
    /// Its kind.
    fn kind(&self) -> IndexKind;
    /// The type of its keys (the column's type; a label list's element type).
    fn value_type(&self) -> &DataType;
    /// The rows whose value satisfies `query` (ids or addresses, as stored).
    fn search(&self, query: &IndexQuery) -> Result<RowSet>;
}

/// How many opened indices the process keeps (their lookups and the pages
/// and bitmaps queries loaded), least recently used dropped first.
const CACHED_INDICES: usize = 64;

type Cache = std::sync::Mutex<Vec<(String, Arc<dyn ScalarIndex>)>>;

fn cache() -> &'static Cache {
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// [`open`], kept for later queries: index files never change once
/// written (a new version of an index gets a new uuid), so the cache is
/// keyed by the directory alone.
pub fn open_cached(kind: IndexKind, dir: &crate::io::Storage) -> Result<Arc<dyn ScalarIndex>> {
    let key = format!("{}#{}", dir.display(), kind.param_name());
    {
        let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pos) = c.iter().position(|(k, _)| *k == key) {
            let hit = c.remove(pos);
            let idx = hit.1.clone();
            c.push(hit);
            return Ok(idx);
        }
    }
    let idx = open(kind, dir)?;
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    if !c.iter().any(|(k, _)| *k == key) {
        if c.len() >= CACHED_INDICES {
            c.remove(0);
        }
        c.push((key, idx.clone()));
    }
    Ok(idx)
}

/// Open the index of `kind` stored in directory `dir`.
pub fn open(kind: IndexKind, dir: &crate::io::Storage) -> Result<Arc<dyn ScalarIndex>> {
    let path = dir.display().to_string();
    let r: Result<Arc<dyn ScalarIndex>> = match kind {
        IndexKind::BTree => btree::BTreeIndex::open(dir).map(|i| Arc::new(i) as _),
        IndexKind::Bitmap => bitmap::BitmapIndex::open(dir, false).map(|i| Arc::new(i) as _),
        IndexKind::LabelList => label_list::LabelListIndex::open(dir).map(|i| Arc::new(i) as _),
        IndexKind::ZoneMap => zonemap::ZoneMapIndex::open(dir).map(|i| Arc::new(i) as _),
        IndexKind::BloomFilter => bloomfilter::BloomFilterIndex::open(dir).map(|i| Arc::new(i) as _),
    };
    r.map_err(|e| e.context(format!("{} index in {path}", kind.param_name())))
}

/// The column values an index is built from: `values[i]` is the value of
/// the row with id/address `ids[i]`.
#[derive(Debug, Clone)]
pub struct TrainingData {
    /// The column's values (a list column for label lists).
    pub values: ArrayRef,
    /// Row ids or addresses, as the index will store them.
    pub ids: arrow_array::UInt64Array,
}

/// Build an index of `kind` into `dir` as files of `version` with the
/// default parameters; returns the files written with their sizes.
pub fn build(kind: IndexKind, dir: &crate::io::Storage, version: crate::file::FileVersion, data: &TrainingData) -> Result<Vec<(String, u64)>> {
    build_with(kind, dir, version, data, &IndexParams::default())
}

/// [`build`] with parameters (ZONEMAP's and BLOOMFILTER's).
pub fn build_with(
    kind: IndexKind,
    dir: &crate::io::Storage,
    version: crate::file::FileVersion,
    data: &TrainingData,
    params: &IndexParams,
) -> Result<Vec<(String, u64)>> {
    if data.values.len() != data.ids.len() {
        return Err(Error::Internal { what: format!("{} values for {} row ids", data.values.len(), data.ids.len()) });
    }
    match kind {
        IndexKind::BTree => btree::write(dir, version, data),
        IndexKind::Bitmap => bitmap::write(dir, version, data),
        IndexKind::LabelList => label_list::write(dir, version, data),
        IndexKind::ZoneMap => zonemap::write(dir, version, data, params.rows_per_zone()),
        IndexKind::BloomFilter => bloomfilter::write(dir, version, data, params.number_of_items(), params.probability()),
    }
}

/// The parameters of `create_scalar_index` beyond the type, under
/// pylance's names (`IndexConfig(type, {...})`); unset ones take pylance's
/// defaults, unknown ones are ignored as pylance ignores them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexParams {
    /// ZONEMAP: live rows per zone (8192).
    pub rows_per_zone: Option<u64>,
    /// BLOOMFILTER: values per filter, also the zone size (8192).
    pub number_of_items: Option<u64>,
    /// BLOOMFILTER: false positive probability (0.00057).
    pub probability: Option<f64>,
}

impl IndexParams {
    /// ZONEMAP's zone size.
    pub fn rows_per_zone(&self) -> u64 {
        self.rows_per_zone.unwrap_or(zonemap::DEFAULT_ROWS_PER_ZONE)
    }

    /// BLOOMFILTER's `number_of_items`.
    pub fn number_of_items(&self) -> u64 {
        self.number_of_items.unwrap_or(bloomfilter::DEFAULT_ITEMS)
    }

    /// BLOOMFILTER's `probability`.
    pub fn probability(&self) -> f64 {
        self.probability.unwrap_or(bloomfilter::DEFAULT_PROBABILITY)
    }

    /// Parse an `index_type` argument with optional parameters as a JSON
    /// object after a colon: `"ZONEMAP"`, `"zonemap:{\"rows_per_zone\": 5}"`.
    pub fn parse_spec(spec: &str) -> Result<(IndexKind, IndexParams)> {
        let (name, json) = match spec.split_once(':') {
            Some((n, j)) => (n.trim(), Some(j)),
            None => (spec.trim(), None),
        };
        let kind = IndexKind::parse(name)?;
        let mut p = IndexParams::default();
        let Some(json) = json else { return Ok((kind, p)) };
        let v: serde_json::Value = serde_json::from_str(json).map_err(|e| Error::invalid_input(format!("index parameters {json:?}: {e}")))?;
        let obj = v.as_object().ok_or_else(|| Error::invalid_input(format!("index parameters must be an object, not {v}")))?;
        let uint = |k: &str| -> Result<Option<u64>> {
            match obj.get(k) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(x) => x.as_u64().map(Some).ok_or_else(|| Error::invalid_input(format!("{k} must be a non-negative integer, not {x}"))),
            }
        };
        match kind {
            IndexKind::ZoneMap => p.rows_per_zone = uint("rows_per_zone")?,
            IndexKind::BloomFilter => {
                p.number_of_items = uint("number_of_items")?;
                p.probability = match obj.get("probability") {
                    None | Some(serde_json::Value::Null) => None,
                    Some(x) => Some(x.as_f64().ok_or_else(|| Error::invalid_input(format!("probability must be a number, not {x}")))?),
                };
            }
            _ => {}
        }
        p.validate(kind)?;
        Ok((kind, p))
    }

    /// pylance's checks (before any data is read).
    pub fn validate(&self, kind: IndexKind) -> Result<()> {
        match kind {
            IndexKind::ZoneMap if self.rows_per_zone() == 0 => Err(Error::invalid_input("zone capacity must be greater than zero")),
            IndexKind::BloomFilter if self.number_of_items() == 0 => Err(Error::invalid_input("zone capacity must be greater than zero")),
            IndexKind::BloomFilter => bloomfilter::filter_bytes(self.number_of_items(), self.probability()).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// The `index_details` value pylance writes for an index of `kind` on a
    /// column of type `dt` (empty but for ZONEMAP).
    pub fn details(&self, kind: IndexKind, dt: &DataType) -> Vec<u8> {
        match kind {
            IndexKind::ZoneMap => zonemap::details(self.rows_per_zone(), dt),
            _ => Vec::new(),
        }
    }

    /// The parameters an existing index was built with (to rebuild it
    /// alike).
    pub fn of_index(kind: IndexKind, dir: &crate::io::Storage) -> Result<IndexParams> {
        Ok(match kind {
            IndexKind::ZoneMap => IndexParams { rows_per_zone: Some(zonemap::ZoneMapIndex::open(dir)?.rows_per_zone()), ..Default::default() },
            IndexKind::BloomFilter => {
                let (n, p) = bloomfilter::BloomFilterIndex::open(dir)?.params();
                IndexParams { number_of_items: Some(n), probability: Some(p), ..Default::default() }
            }
            _ => IndexParams::default(),
        })
    }
}

#[cfg(test)]
mod tests;
