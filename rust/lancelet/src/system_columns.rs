//! Names of the columns a scan computes rather than reads (`_rowid`,
//! `_rowaddr`). A leaf module: filters (in `expr`) and scans (in `table`)
//! both name them.

/// Name of the row id column.
pub const ROW_ID: &str = "_rowid";
/// Name of the row address column.
pub const ROW_ADDR: &str = "_rowaddr";
