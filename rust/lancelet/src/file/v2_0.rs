//! Lance 2.0 pages (`lance.encodings.ArrayEncoding`). Placeholder until the
//! 2.0 decoder lands.
use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_schema::Field;

use crate::error::{Error, Result};
use crate::file::reader::FileReader;

/// Read one top-level field of a 2.0 file over the given row ranges.
pub fn read_field(_r: &FileReader, _f: &Field, _cols: Range<usize>, _ranges: &[Range<u64>]) -> Result<ArrayRef> {
    Err(Error::unsupported("2.0 pages"))
}
