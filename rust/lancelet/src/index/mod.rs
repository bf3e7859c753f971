//! Scalar indices in Lance's (pylance 14's) format: BTREE, BITMAP and
//! LABEL_LIST.
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
//!
//! `ids` / bitmaps hold row addresses (`fragment << 32 | offset`), except
//! BITMAP and LABEL_LIST indices on datasets with stable row ids, which hold
//! stable row ids ([`IndexKind::keyed_by_row_id`]).

pub mod bitmap;
pub mod btree;
pub mod frag_reuse;
pub(crate) mod group;
pub mod label_list;
pub mod meta;
pub mod remap;
pub mod rowset;
pub mod vector;

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
}

impl IndexKind {
    /// Every kind.
    pub const ALL: [IndexKind; 3] = [IndexKind::BTree, IndexKind::Bitmap, IndexKind::LabelList];

    /// The `index_type` argument naming it (`"BTREE"`, ...).
    pub fn param_name(self) -> &'static str {
        match self {
            IndexKind::BTree => "BTREE",
            IndexKind::Bitmap => "BITMAP",
            IndexKind::LabelList => "LABEL_LIST",
        }
    }

    /// The name pylance shows (`list_indices()["type"]`, plans).
    pub fn display_name(self) -> &'static str {
        match self {
            IndexKind::BTree => "BTree",
            IndexKind::Bitmap => "Bitmap",
            IndexKind::LabelList => "LabelList",
        }
    }

    /// Type URL of its `index_details` (an empty message).
    pub fn type_url(self) -> &'static str {
        match self {
            IndexKind::BTree => "/lance.table.BTreeIndexDetails",
            IndexKind::Bitmap => "/lance.table.BitmapIndexDetails",
            IndexKind::LabelList => "/lance.table.LabelListIndexDetails",
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
            "ZONEMAP" | "NGRAM" | "INVERTED" | "FTS" | "BLOOMFILTER" | "JSON" => {
                Err(Error::unsupported(format!("{name} indices are not implemented in lancelet (BTREE, BITMAP and LABEL_LIST are)")))
            }
            _ => Err(Error::invalid_input(format!("unknown index type {name:?} (expected BTREE, BITMAP or LABEL_LIST)"))),
        }
    }

    /// Whether its row sets hold stable row ids (else row addresses) on a
    /// dataset with (`stable`) or without stable row ids. BTREE always
    /// holds addresses.
    pub fn keyed_by_row_id(self, stable: bool) -> bool {
        stable && self != IndexKind::BTree
    }

    /// The `index_version` pylance 14 records for it.
    pub fn index_version(self, stable: bool) -> i32 {
        match self {
            IndexKind::BTree => i32::from(stable),
            IndexKind::Bitmap => 0,
            IndexKind::LabelList => 1,
        }
    }

    /// Check that a column of type `dt` can take this index.
    pub fn check_type(self, column: &str, dt: &DataType) -> Result<()> {
        let ok = match self {
            IndexKind::BTree | IndexKind::Bitmap => is_scalar_key(dt),
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

/// Build an index of `kind` into `dir` as files of `version`; returns the
/// files written with their sizes.
pub fn build(kind: IndexKind, dir: &crate::io::Storage, version: crate::file::FileVersion, data: &TrainingData) -> Result<Vec<(String, u64)>> {
    if data.values.len() != data.ids.len() {
        return Err(Error::Internal { what: format!("{} values for {} row ids", data.values.len(), data.ids.len()) });
    }
    match kind {
        IndexKind::BTree => btree::write(dir, version, data),
        IndexKind::Bitmap => bitmap::write(dir, version, data),
        IndexKind::LabelList => label_list::write(dir, version, data),
    }
}

#[cfg(test)]
mod tests;
