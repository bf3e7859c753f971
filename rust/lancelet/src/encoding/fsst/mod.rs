//! FSST string compression (`Fsst` compressive encoding) as Lance stores it.
//!
//! FSST replaces substrings of up to 8 bytes by one-byte codes. Code `c <
//! n_symbols` stands for symbol `c`; code 255 is an escape and the next byte
//! is copied literally. Each string is compressed on its own, so offsets stay
//! per value, and the compressed strings then go through the inner `values`
//! encoding (mini-block: `Variable` chunks).
//!
//! # Serialized symbol table (always 2312 bytes)
//! ```text
//! bytes 0..8       u64 LE header:
//!                    bits  0..8   n_symbols (≤ 255)
//!                    bits  8..16  terminator (compressor detail)
//!                    bits 16..24  suffix_lim (compressor detail)
//!                    bit  24      switch: 1 = data is FSST-compressed,
//!                                 0 = data is stored uncompressed
//!                    bits 32..64  0x46535354 ("FSST"; bytes read `54 53 53 46`)
//! 8 + 8·i          symbol i as a u64 LE word (bytes beyond its length 0),
//!                  for i < n_symbols — packed, not at fixed slots
//! 8 + 8·n + i      length of symbol i (1..=8), for i < n_symbols
//! rest             zero up to 2312 bytes
//! ```
//! Lance's decoder reads only the magic, the switch, `n_symbols`, the
//! symbols and their lengths; `terminator` and `suffix_lim` only matter to
//! the C-style compressor that produced the table, so any values are
//! accepted. Our trainer writes the least frequent sample byte as
//! terminator (as FSST does) and 0 as `suffix_lim`.
//!
//! # When Lance turns the switch on
//! Lance picks FSST automatically for a string page only when its string
//! data is ≥ 32 KiB ([`MIN_INPUT_BYTES`]) and the longest value is ≥ 5 bytes
//! ([`MIN_MAX_LENGTH`]); then the switch is on. If FSST is forced through
//! field metadata (`lance-encoding:compression=fsst`) on a page with less than
//! 32 KiB of string data, Lance writes a table with the switch off (header =
//! just the magic, everything else zero) and stores the strings verbatim.
//! The decision uses the whole page's data, not a chunk's.
//!
//! # Where things are
//! `table` (the symbol table and its bytes), `decode` (codes to strings),
//! `compress` (strings to codes), `train` (choosing a table; `rank` sorts
//! its candidates); this file holds the format's constants and the offset
//! checks both directions share.

mod compress;
mod decode;
mod rank;
mod table;
mod train;

#[cfg(test)]
mod tests;

pub use compress::{compress, compress_split};
pub use decode::{decompress, decompress_strings_into};
pub use table::SymbolTable;
pub use train::{train, train_forced};

use crate::corrupt;
use crate::error::Result;

/// Size of a serialized symbol table.
pub const SYMBOL_TABLE_SIZE: usize = 8 + 256 * 8 + 256;
/// Lance compresses only when a page has at least this much string data.
pub const MIN_INPUT_BYTES: usize = 32 * 1024;
/// Lance picks FSST only when the longest value has at least this many bytes.
pub const MIN_MAX_LENGTH: usize = 5;

const MAGIC: u64 = 0x4653_5354;
const ESCAPE: u8 = 255;
const MAX_SYMBOLS: usize = 255;
const MAX_SYMBOL_LEN: usize = 8;

/// An offset type of a variable-width array (i32/i64 Arrow offsets, or the
/// u32/u64 offsets of Lance buffers).
pub trait Offset: Copy + Default + Eq + std::fmt::Debug {
    /// The offset as a position, if it is one.
    fn to_usize(self) -> Option<usize>;
    /// A position as an offset, if representable.
    fn from_usize(v: usize) -> Option<Self>;
    /// A position as an offset, truncated when it is not representable
    /// (for callers that check the largest position once).
    fn wrapping(v: usize) -> Self;
}

macro_rules! impl_offset {
    ($($t:ty),*) => {$(
        impl Offset for $t {
            #[inline(always)]
            fn to_usize(self) -> Option<usize> { usize::try_from(self).ok() }
            #[inline(always)]
            fn from_usize(v: usize) -> Option<Self> { <$t>::try_from(v).ok() }
            #[inline(always)]
            fn wrapping(v: usize) -> Self { v as $t }
        }
    )*};
}
impl_offset!(i32, i64, u32, u64);

/// Checks offsets (non-decreasing, within `data`) and returns `(first, last)`.
fn check_offsets<O: Offset>(offsets: &[O], data_len: usize, what: &str) -> Result<(usize, usize)> {
    let mut prev = match offsets.first() {
        None => return Ok((0, 0)),
        Some(o) => o.to_usize().ok_or_else(|| corrupt!("{what}: negative offset {o:?}"))?,
    };
    let first = prev;
    for o in &offsets[1..] {
        let cur = o.to_usize().ok_or_else(|| corrupt!("{what}: negative offset {o:?}"))?;
        if cur < prev {
            return Err(corrupt!("{what}: offsets decrease ({prev} then {cur})"));
        }
        prev = cur;
    }
    if prev > data_len {
        return Err(corrupt!("{what}: offset {prev} beyond {data_len} data bytes"));
    }
    Ok((first, prev))
}

fn offset<O: Offset>(v: usize) -> Result<O> {
    O::from_usize(v).ok_or_else(|| corrupt!("fsst: {v} bytes do not fit the offset type"))
}

/// Copies the strings between `offsets[0]` and the last offset, rebasing the
/// offsets to start at 0 (what both directions do when the switch is off).
fn passthrough<O: Offset>(offsets: &[O], data: &[u8], what: &str) -> Result<(Vec<O>, Vec<u8>)> {
    let (first, last) = check_offsets(offsets, data.len(), what)?;
    if offsets.is_empty() {
        return Ok((vec![O::default()], Vec::new()));
    }
    let new_offsets = offsets.iter().map(|o| offset(o.to_usize().expect("checked") - first)).collect::<Result<Vec<O>>>()?;
    Ok((new_offsets, data[first..last].to_vec()))
}
