//! In-memory codecs: pure functions from bytes to bytes.
//!
//! Nothing in here does I/O, parses protobuf or knows about file versions;
//! the `file` layer decides which codec applies to which buffer and hands
//! these functions exact slices. Every decoder treats its input as
//! untrusted and reports bad bytes as [`crate::Error::Corrupt`].

pub mod bitpack;
pub mod bss;
pub mod fsst;
pub mod general;
pub mod rle;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod roundtrip;
