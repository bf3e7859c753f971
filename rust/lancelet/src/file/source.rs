//! What a version's page reader needs of a file besides its decoders: the
//! file's bytes by range ([`FetchRanges`]) and the plain facts of its column
//! metadata (which pages cover given rows, what encoding a page names).
//!
//! The 2.0 reader (`file/v2_0`) reaches the file only through this module,
//! not through `FileReader`: decoders are handed byte ranges and do no I/O
//! of their own (as arrow-rs parquet's decoders are), so the reader can
//! call into them without the two depending on each other.

use std::ops::Range;

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::proto::file::v2::{column_metadata::Page, encoding::Location};

/// Byte ranges of one file, fetched on request.
///
/// Kept to two questions so that anything holding a file can answer them
/// (the [`crate::file::FileReader`], an in-memory copy in tests): how large
/// the file is, and what lies in these ranges.
pub(crate) trait FetchRanges {
    /// The file's size in bytes; a range past it is corrupt and is not
    /// asked for.
    fn file_size(&self) -> u64;

    /// The bytes of each range, in the order given (ranges may be empty,
    /// overlap, or repeat). An implementation may join nearby ranges into
    /// fewer requests; callers hand over all ranges of a step at once.
    fn fetch_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>>;
}

/// A whole file held in memory.
impl FetchRanges for Bytes {
    fn file_size(&self) -> u64 {
        self.len() as u64
    }

    fn fetch_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        ranges
            .iter()
            .map(|r| {
                let ok = r.start <= r.end && r.end <= self.len() as u64;
                if !ok {
                    return Err(Error::corrupt(format!("range {r:?} outside a file of {} bytes", self.len())));
                }
                Ok(self.slice(r.start as usize..r.end as usize))
            })
            .collect()
    }
}

/// The pages of a column that overlap the sorted `ranges`, as (first row,
/// page index) pairs.
pub(crate) fn pages_overlapping(pages: &[Page], ranges: &[Range<u64>]) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    let mut start = 0u64;
    let mut ri = 0;
    for (i, p) in pages.iter().enumerate() {
        let end = start + p.length;
        while ri < ranges.len() && ranges[ri].end <= start {
            ri += 1;
        }
        let overlaps = ranges[ri..].iter().take_while(|r| r.start < end).any(|r| r.end > start && r.start < r.end);
        if overlaps {
            out.push((start, i));
        }
        start = end;
    }
    out
}

/// The `google.protobuf.Any` holding a page's encoding.
pub(crate) fn page_encoding_any(page: &Page) -> Result<prost_types::Any> {
    let enc = page.encoding.as_ref().and_then(|e| e.location.as_ref()).ok_or_else(|| Error::corrupt("page without encoding"))?;
    match enc {
        Location::Direct(d) => prost_types::Any::decode(d.encoding.as_slice()).map_err(Error::bad_protobuf),
        Location::Indirect(_) => Err(Error::unsupported("deferred (indirect) page encodings")),
        Location::None(_) => Err(Error::corrupt("page with empty encoding")),
    }
}
