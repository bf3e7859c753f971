//! TileDB arrays (format versions 20–22, as TileDB 2.30 / tiledb-py 0.36
//! write them), read without the TileDB library.
//!
//! An array is a directory: `__schema/` (the schema, a generic tile),
//! `__fragments/<__t1_t2_uuid_v>/` (one folder per write: fragment
//! metadata plus one data file per column), `__commits/` (commit markers
//! and consolidation/vacuum lists). Modules, bottom up: [`cursor`] (field
//! reader), [`datatype`], [`codecs`] and [`filters`] (filter pipelines),
//! [`generic_tile`], [`schema`], [`fragment`] (fragment metadata),
//! [`array`] (which fragments a timestamp range sees), [`tiles`] (data
//! tiles of a column), [`read`] (resolving fragments into Arrow; dense
//! fixed-size columns through `dense`, tile by tile).
//!
//! This room is a peer of the Lance format: it shares `io/` and the general
//! compression crates and never imports `file/` or `table/`.

pub mod aggregate;
pub mod array;
pub mod array_meta;
pub mod bitshuffle;
pub mod cells;
pub mod codecs;
pub mod conditions;
pub mod consolidate;
pub mod cursor;
pub mod datatype;
pub(crate) mod dense;
pub mod filters;
pub mod fragment;
pub mod generic_tile;
pub mod hilbert;
pub mod query;
pub mod read;
pub mod regions;
pub mod schema;
pub mod sparse;
pub mod stream;
pub mod string_codecs;
pub mod tiles;
pub mod vacuum;
pub mod write;

pub use array::TileDbArray;

use crate::error::Result;
use crate::io::{Storage, StorageOptions};

/// The directory of the array at `uri`, named as TileDB names it: TileDB
/// takes the path of a `file://` URI literally (`file:///a%20b` is the
/// directory `a%20b`), where Lance, and so [`Storage::open_with`], decodes
/// it as a URL.
pub(crate) fn open_array_root(uri: &str, options: &StorageOptions) -> Result<Storage> {
    Storage::open_with(uri.strip_prefix("file://").unwrap_or(uri), options)
}
pub use cells::{Bound, DimRanges, Order, ReadOptions, TileCounts};
