//! Generic tiles: the self-describing containers TileDB uses for schemas,
//! fragment metadata pieces and delete conditions.
//!
//! Layout: `u32 format version, u64 persisted size, u64 tile size, u8
//! datatype, u64 cell size, u8 encryption type, u32 pipeline size,
//! pipeline` (see `filters.rs`), then `persisted size` bytes of filtered
//! tile (chunks). lancelet reads unencrypted tiles of versions 20–22.

use super::cursor::Cursor;
use super::datatype::Datatype;
use super::filters::{FilterPipeline, TileKind};
use crate::error::{Error, Result};

/// Oldest and newest format versions lancelet reads.
pub const MIN_VERSION: u32 = 20;
/// Newest format version lancelet reads (TileDB 2.30 writes 22).
pub const MAX_VERSION: u32 = 22;

/// Check a format version against what lancelet reads.
pub fn check_version(v: u32, what: &str) -> Result<()> {
    if (MIN_VERSION..=MAX_VERSION).contains(&v) {
        Ok(())
    } else {
        Err(Error::unsupported(format!("{what} has TileDB format version {v}; lancelet reads {MIN_VERSION}–{MAX_VERSION}")))
    }
}

/// Decode the generic tile starting at `offset` of `buf`; returns its bytes
/// and where it ends.
pub fn read_generic_tile(buf: &[u8], offset: usize) -> Result<(Vec<u8>, usize)> {
    if offset > buf.len() {
        return Err(Error::corrupt(format!("generic tile offset {offset} is past the end ({} bytes)", buf.len())));
    }
    let mut c = Cursor::new(&buf[offset..]);
    let version = c.u32("generic tile version")?;
    check_version(version, "generic tile")?;
    let persisted = c.u64("generic tile persisted size")?;
    let tile_size = c.u64("generic tile size")?;
    let datatype = Datatype::from_code(c.u8("generic tile datatype")?)?;
    let cell_size = c.u64("generic tile cell size")?;
    let encryption = c.u8("generic tile encryption type")?;
    if encryption != 0 {
        return Err(Error::unsupported(format!("encrypted TileDB arrays (encryption type {encryption})")));
    }
    let pipeline_bytes = c.take_len_u32("generic tile filter pipeline")?;
    let pipeline = FilterPipeline::parse(&mut Cursor::new(pipeline_bytes))?;
    let persisted = usize::try_from(persisted).map_err(|_| Error::corrupt("generic tile size too large"))?;
    let body = c.take(persisted, "generic tile data")?;
    let max_len = usize::try_from(tile_size).map_err(|_| Error::corrupt("generic tile size too large"))?;
    let kind = TileKind { datatype, cell_size: cell_size.clamp(1, 1 << 20) as usize, version, var_strings: false, max_len };
    let bytes = pipeline.unfilter(body, kind)?;
    if bytes.len() as u64 != tile_size {
        return Err(Error::corrupt(format!("generic tile decodes to {} bytes, header says {tile_size}", bytes.len())));
    }
    Ok((bytes, offset + c.position()))
}
