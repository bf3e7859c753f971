//! General-purpose buffer compression (`General` compressive encoding and
//! `BufferCompression`).
//!
//! Byte layouts, as Lance writes them:
//!
//! * **LZ4**: `[u32 LE uncompressed size][LZ4 block]` — the raw LZ4 *block*
//!   format (no frame), size prefixed.
//! * **ZSTD**: `[u64 LE uncompressed size][zstd frame]`. Readers must also
//!   accept a bare zstd frame (older writers), told apart by the first four
//!   bytes: a bare frame starts with the zstd magic `28 B5 2F FD` and its
//!   frame-header descriptor (byte 4) has the reserved bit 0x10 clear. A size
//!   prefix that happens to start with the magic bytes would have to be
//!   ≥ 0xFD2FB528, and then byte 4 is the next size byte; we make the same
//!   call Lance makes. An empty buffer decodes to nothing.
//!
//! Where it applies: in mini-block pages the whole chunk value buffer is
//! compressed (one prefix per chunk); in full-zip pages each value
//! separately; for dictionaries the whole dictionary buffer.
//!
//! Claimed sizes are never trusted for allocation: LZ4 claims are checked
//! against the format's maximum ratio, zstd output is produced by streaming
//! and stops at the claimed size (or [`MAX_UNCOMPRESSED_BYTES`]).

use std::io::Read;

use crate::corrupt;
use crate::error::Result;

/// Largest buffer any decompression here will produce (4 GiB).
pub const MAX_UNCOMPRESSED_BYTES: u64 = 1 << 32;

/// zstd compression level Lance uses when none is configured (0 = zstd's
/// default, currently 3).
pub const DEFAULT_ZSTD_LEVEL: i32 = 0;

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The general compression schemes Lance files use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompressionScheme {
    /// LZ4 block format with a u32 size prefix.
    Lz4,
    /// Zstandard frame with a u64 size prefix.
    Zstd,
}

/// Compresses `data` the way Lance does. `level` applies to zstd only
/// (`None` = [`DEFAULT_ZSTD_LEVEL`]).
pub fn compress(scheme: CompressionScheme, level: Option<i32>, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    compress_into(scheme, level, data, &mut out);
    out
}

/// [`compress`], appending to `out`.
pub fn compress_into(scheme: CompressionScheme, level: Option<i32>, data: &[u8], out: &mut Vec<u8>) {
    match scheme {
        CompressionScheme::Lz4 => {
            // The u32 prefix cannot describe more; callers never hand us
            // buffers that large (pages are cut far below this).
            assert!(data.len() as u64 <= u32::MAX as u64, "lz4: buffer too large for the u32 size prefix");
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            let start = out.len();
            out.resize(start + lz4_flex::block::get_maximum_output_size(data.len()), 0);
            let n = lz4_flex::block::compress_into(data, &mut out[start..]).expect("output sized with get_maximum_output_size");
            out.truncate(start + n);
        }
        CompressionScheme::Zstd => {
            out.extend_from_slice(&(data.len() as u64).to_le_bytes());
            // Streaming (no pledged size) like Lance; writing into a Vec
            // cannot fail.
            let mut enc = zstd::stream::write::Encoder::new(&mut *out, level.unwrap_or(DEFAULT_ZSTD_LEVEL)).expect("zstd encoder");
            std::io::Write::write_all(&mut enc, data).expect("zstd into Vec");
            enc.finish().expect("zstd into Vec");
        }
    }
}

/// Decompresses a buffer written with `scheme`.
pub fn decompress(scheme: CompressionScheme, data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    decompress_into(scheme, data, &mut out)?;
    Ok(out)
}

/// [`decompress`], appending to `out`.
pub fn decompress_into(scheme: CompressionScheme, data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    match scheme {
        CompressionScheme::Lz4 => lz4_decompress(data, out),
        CompressionScheme::Zstd => zstd_decompress(data, out),
    }
}

fn lz4_decompress(data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let Some((prefix, block)) = data.split_first_chunk::<4>() else {
        return Err(corrupt!("lz4: {} bytes, too short for the size prefix", data.len()));
    };
    let claimed = u32::from_le_bytes(*prefix) as u64;
    // One LZ4 sequence of n bytes can expand to at most ~255·n bytes.
    let plausible = (block.len() as u64).saturating_mul(255).saturating_add(16);
    if claimed > plausible {
        return Err(corrupt!("lz4: {} compressed bytes cannot hold the claimed {claimed}", block.len()));
    }
    let start = out.len();
    out.try_reserve(claimed as usize).map_err(|_| corrupt!("lz4: cannot allocate {claimed} bytes"))?;
    out.resize(start + claimed as usize, 0);
    let result = lz4_flex::block::decompress_into(block, &mut out[start..]);
    match result {
        Ok(n) if n as u64 == claimed => Ok(()),
        Ok(n) => {
            out.truncate(start);
            Err(corrupt!("lz4: decoded {n} bytes, prefix claims {claimed}"))
        }
        Err(e) => {
            out.truncate(start);
            Err(corrupt!("lz4: {e}").with_source(e))
        }
    }
}

/// Whether a zstd buffer is a bare frame rather than size-prefixed, by the
/// same test Lance applies.
fn is_bare_zstd_frame(data: &[u8]) -> bool {
    if data.len() < 8 {
        return true;
    }
    data[..4] == ZSTD_MAGIC && data[4] & 0x10 == 0
}

fn zstd_decompress(data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let (frame, limit, exact) = if is_bare_zstd_frame(data) {
        (data, MAX_UNCOMPRESSED_BYTES, false)
    } else {
        let claimed = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        if claimed > MAX_UNCOMPRESSED_BYTES {
            return Err(corrupt!("zstd: claimed size {claimed} exceeds the {MAX_UNCOMPRESSED_BYTES} byte limit"));
        }
        (&data[8..], claimed, true)
    };
    let start = out.len();
    // Pre-size only as far as the compressed size makes plausible; the
    // vector grows with real output beyond that.
    let hint = limit.min((frame.len() as u64).saturating_mul(16).saturating_add(4096));
    out.reserve(hint as usize);
    let decoder = zstd::stream::read::Decoder::new(frame).map_err(|e| corrupt!("zstd: {e}").with_source(e))?;
    let read = decoder.take(limit + 1).read_to_end(out);
    let produced = (out.len() - start) as u64;
    let failure = match read {
        Err(e) => Some(corrupt!("zstd: {e}").with_source(e)),
        Ok(_) if exact && produced != limit => Some(corrupt!("zstd: decoded {produced} bytes, prefix claims {limit}")),
        Ok(_) if produced > limit => Some(corrupt!("zstd: output exceeds {limit} bytes")),
        Ok(_) => None,
    };
    if let Some(e) = failure {
        out.truncate(start);
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        let data = b"hello hello hello hello hello".repeat(10);
        let lz = compress(CompressionScheme::Lz4, None, &data);
        assert_eq!(&lz[..4], &(data.len() as u32).to_le_bytes());
        let zs = compress(CompressionScheme::Zstd, Some(3), &data);
        assert_eq!(&zs[..8], &(data.len() as u64).to_le_bytes());
        assert_eq!(&zs[8..12], &ZSTD_MAGIC);
        assert_eq!(decompress(CompressionScheme::Lz4, &lz).unwrap(), data);
        assert_eq!(decompress(CompressionScheme::Zstd, &zs).unwrap(), data);
        // Bare frame (older writers).
        assert_eq!(decompress(CompressionScheme::Zstd, &zs[8..]).unwrap(), data);
    }

    #[test]
    fn lying_sizes_are_rejected_without_huge_allocations() {
        let mut lz = compress(CompressionScheme::Lz4, None, b"abc");
        lz[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decompress(CompressionScheme::Lz4, &lz).is_err());
        let mut zs = compress(CompressionScheme::Zstd, None, b"abcabc");
        zs[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(decompress(CompressionScheme::Zstd, &zs).is_err());
        zs[..8].copy_from_slice(&7u64.to_le_bytes());
        assert!(decompress(CompressionScheme::Zstd, &zs).is_err());
    }
}
