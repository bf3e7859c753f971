//! lancelet: an independent implementation of the Lance columnar formats.
//!
//! Layers, bottom up: [`io`] (object_store access), [`encoding`] (in-memory
//! codecs, no I/O, no format versions), [`file`] (the `.lance` container and
//! each file version's composition of encodings).

pub mod encoding;
pub mod error;
pub mod expr;
pub mod file;
pub mod float_order;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
#[doc(hidden)]
pub mod hashing;
pub mod ids;
pub mod index;
pub mod io;
pub mod namespace;
pub mod process;
pub mod proto;
pub mod system_columns;
pub mod table;
#[cfg(test)]
pub(crate) mod testdata;
pub mod tiledb;

pub use error::{Error, Result};
